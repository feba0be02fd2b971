// `LodParams` (lod/mod.rs), shared by the LOD kernels and by any draw that reads the bitmap
// (`#include "lod/params.wgsl"` with `gpugraph_trace::shaders::WGSL` among the recipe's
// registries).

struct LodParams {
    window_start_lo: u32,
    window_start_hi: u32,
    px_per_tick: f32,
    min_px: f32,
    columns: u32,
    first_row: u32,
    rows: u32,
    words_per_row: u32,
    selected: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}
