// Workgroup tree sum shared by both dot-product passes, on gpgpu's fixed-order tree
// (shared/tree_reduce.wgsl, from gpgpu's registry). The order is fixed, so every run gives the
// same bits. It has barriers: call it from workgroup-uniform control flow.
#include "shared/tree_reduce.wgsl"

var<workgroup> sums: array<f32, WORKGROUP_SIZE>;

// The hook of shared/tree_reduce.wgsl.
fn tree_combine(slot: u32, other: u32) {
    sums[slot] += sums[other];
}

fn workgroup_sum(lane: u32, acc: f32) -> f32 {
    sums[lane] = acc;
    tree_reduce(lane, WORKGROUP_SIZE);
    return sums[0];
}
