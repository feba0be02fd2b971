// Row-wise driver of the analysis kernels: each workgroup covers WG * ROWS_PER_THREAD
// consecutive rows of one chunk (coalesced: lane-strided), over a 2-D grid when one dimension
// is too small (`linear_workgroup`). params[0] is the chunk's row count; the kernel's
// `row(i)` does the work of row i.

@compute @workgroup_size(WG)
fn rows_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
             @builtin(local_invocation_index) lane: u32) {
    let count = params[0];
    let base = linear_workgroup(wg, num_wg) * WG * ROWS_PER_THREAD + lane;
    for (var r = 0u; r < ROWS_PER_THREAD; r++) {
        let i = base + r * WG;
        if (i < count) {
            row(i);
        }
    }
}
