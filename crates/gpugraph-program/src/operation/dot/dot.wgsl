// Dot product, pass 1: each workgroup multiplies a tile of WORKGROUP_SIZE * ITEMS_PER_THREAD
// float32 component pairs (coalesced, strided by the workgroup size), reduces the products
// with a workgroup tree, and writes one partial sum. params[0] = components of this chunk,
// params[1] / params[2] = element offsets of a / b, params[3] = first partial slot of this
// chunk, params[4] = tiles of this chunk (extra 2-D grid workgroups exit early; the exit is
// workgroup-uniform, so the barriers below stay in uniform control flow).

#include "shared/dispatch.wgsl"
#include "operation/dot/reduce.wgsl"

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> partials: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn dot_partials(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
                @builtin(local_invocation_index) lane: u32) {
    let tile = linear_workgroup(wg, num_wg);
    if (tile >= params[4]) {
        return;
    }
    let count = params[0];
    let base = tile * WORKGROUP_SIZE * ITEMS_PER_THREAD + lane;
    var acc = 0.0;
    for (var r = 0u; r < ITEMS_PER_THREAD; r++) {
        let i = base + r * WORKGROUP_SIZE;
        if (i < count) {
            acc += a[params[1] + i] * b[params[2] + i];
        }
    }
    let total = workgroup_sum(lane, acc);
    if (lane == 0u) {
        partials[params[3] + tile] = total;
    }
}
