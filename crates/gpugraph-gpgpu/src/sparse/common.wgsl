// Shared by the sparse kernels: a workgroup sum in a fixed tree order (deterministic for a
// given workgroup size), valid in every invocation. Call it from uniform control flow only.

#include "shared/tree_reduce.wgsl"

var<workgroup> sparse_red: array<f32, WG>;

// The hook of shared/tree_reduce.wgsl.
fn tree_combine(slot: u32, other: u32) {
    sparse_red[slot] = sparse_red[slot] + sparse_red[other];
}

fn workgroup_sum(lid: u32, v: f32) -> f32 {
    sparse_red[lid] = v;
    tree_reduce(lid, WG);
    let r = sparse_red[0];
    workgroupBarrier();
    return r;
}
