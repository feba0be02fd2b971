// The row loop of the hash build and query kernels: shared/row_driver.wgsl over the rows
// below the input's live count, with the statistics of hash/stats.wgsl. The includer supplies
// `params` (rows, live_offset, stats_offset), the `live` binding under LIVE and
// `fn visit_row(i: u32)`.
#include "shared/row_driver.wgsl"

// Rows below min(live count, rows); all `rows` without a live count.
fn live_rows(rows: u32) -> u32 {
#ifdef LIVE
    return min(rows, live[params.live_offset]);
#else
    return rows;
#endif
}

// The body of both row entry points: this workgroup's rows, then its statistics.
fn hash_rows(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) {
    stats_begin(lid);
    drive_rows(wid, nwg, lid, WG_SIZE, live_rows(params.rows));
    stats_flush(lid, params.stats_offset);
}
