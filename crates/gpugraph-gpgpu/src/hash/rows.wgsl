// The row loop of the hash build and query kernels: shared/row_driver.wgsl over the rows
// below the input's live count. The includer supplies `params.live_offset`, the `live`
// binding under LIVE and `fn visit_row(i: u32)`.
#include "shared/row_driver.wgsl"

// Rows below min(live count, rows); all `rows` without a live count.
fn live_rows(rows: u32) -> u32 {
#ifdef LIVE
    return min(rows, live[params.live_offset]);
#else
    return rows;
#endif
}
