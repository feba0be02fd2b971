// Dot product, pass 2: one workgroup sums params[0] partials (strided per lane, then a
// workgroup tree, in a fixed order so every run gives the same bits) into out[params[1]].
// Zero partials (an empty input) write 0.

#include "operation/dot/reduce.wgsl"

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> partials: array<f32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn dot_finish(@builtin(local_invocation_index) lane: u32) {
    let n = params[0];
    var acc = 0.0;
    for (var i = lane; i < n; i += WORKGROUP_SIZE) {
        acc += partials[i];
    }
    let total = workgroup_sum(lane, acc);
    if (lane == 0u) {
        out[params[1]] = total;
    }
}
