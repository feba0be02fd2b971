// The row driver of 1-D row kernels (hash build and query, the indexed-range and
// distribution helpers of compaction): the host dispatches
// ceil(rows / (wg_size * ROWS_PER_THREAD)) workgroups, split over x and y past 65,535 per
// dimension (kernel::grid_for; linear_workgroup recovers the id). Workgroup w covers the
// wg_size * ROWS_PER_THREAD rows from w * wg_size * ROWS_PER_THREAD; invocation lid visits
// rows lid, lid + wg_size, ... of them below `rows`, in increasing order, so at every step
// the workgroup touches consecutive rows (coalesced).
//
// The includer supplies ROWS_PER_THREAD and `fn visit_row(i: u32)`, called once per visited
// row; `wg_size` is its @workgroup_size.
#include "shared/dispatch.wgsl"

fn drive_rows(wg: vec3<u32>, num_wg: vec3<u32>, lid: u32, wg_size: u32, rows: u32) {
    let base = linear_workgroup(wg, num_wg) * wg_size * ROWS_PER_THREAD + lid;
    for (var r = 0u; r < ROWS_PER_THREAD; r += 1u) {
        let i = base + r * wg_size;
        if i >= rows {
            break;
        }
        visit_row(i);
    }
}
