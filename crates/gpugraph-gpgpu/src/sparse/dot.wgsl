// Dot products and sums in a fixed order. `dot_partials` (DOT): one partial of a·b per
// workgroup of ROWS_PER_WG rows. `dot_single`: one workgroup sums all n terms (a·b with DOT,
// a alone with SUM, the second level of the hierarchical reduction) into out[off_out].
#include "shared/dispatch.wgsl"
#include "sparse/common.wgsl"

struct DotParams {
    n: u32,
    off_a: u32,
    off_b: u32,
    off_out: u32,
}

@group(0) @binding(0) var<uniform> params: DotParams;
@group(0) @binding(1) var<storage, read> a: array<f32>;
#ifdef DOT
@group(0) @binding(2) var<storage, read> b: array<f32>;
#endif
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn term(i: u32) -> f32 {
#ifdef DOT
    return a[params.off_a + i] * b[params.off_b + i];
#else
    return a[params.off_a + i];
#endif
}

@compute @workgroup_size(WG)
fn dot_partials(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let wg = linear_workgroup(wid, nwg);
    var acc = 0.0;
    for (var k = 0u; k < ROWS_PER_WG / WG; k += 1u) {
        let i = wg * ROWS_PER_WG + k * WG + lid;
        if (i < params.n) {
            acc += term(i);
        }
    }
    let s = workgroup_sum(lid, acc);
    if (lid == 0u) {
        out[params.off_out + wg] = s;
    }
}

@compute @workgroup_size(WG)
fn dot_single(@builtin(local_invocation_index) lid: u32) {
    var acc = 0.0;
    for (var i = lid; i < params.n; i += WG) {
        acc += term(i);
    }
    let s = workgroup_sum(lid, acc);
    if (lid == 0u) {
        out[params.off_out] = s;
    }
}
