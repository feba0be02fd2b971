// Workgroup tree sum shared by both dot-product passes. The order is fixed, so every run gives
// the same bits. It has barriers: call it from workgroup-uniform control flow.

var<workgroup> sums: array<f32, WORKGROUP_SIZE>;

fn workgroup_sum(lane: u32, acc: f32) -> f32 {
    sums[lane] = acc;
    workgroupBarrier();
    for (var stride = WORKGROUP_SIZE / 2u; stride > 0u; stride = stride / 2u) {
        if (lane < stride) {
            sums[lane] += sums[lane + stride];
        }
        workgroupBarrier();
    }
    return sums[0];
}
