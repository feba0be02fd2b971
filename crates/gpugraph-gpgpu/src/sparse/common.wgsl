// Shared by the sparse kernels: a workgroup sum in a fixed tree order (deterministic for a
// given workgroup size), valid in every invocation. Call it from uniform control flow only.

var<workgroup> sparse_red: array<f32, WG>;

fn workgroup_sum(lid: u32, v: f32) -> f32 {
    sparse_red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            sparse_red[lid] = sparse_red[lid] + sparse_red[lid + s];
        }
        workgroupBarrier();
    }
    let r = sparse_red[0];
    workgroupBarrier();
    return r;
}
