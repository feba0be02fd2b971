// The spans the LOD folded into its bitmap (gpugraph_trace::lod): one quad over the plot
// viewport; a fragment shows the bitmap bit of its pixel column and row slot. Columns are the
// LOD's (plot px from the window start); rows follow spans.wgsl's y mapping. `LodParams` comes
// from gpugraph-trace's registry (gpu/draw.rs adds it to the recipe).

#include "lod/params.wgsl"

struct View {
    row_scroll: f32,
    rows_in_view: f32,
    plot_h_px: f32,
    pad: f32,
}

@group(0) @binding(0) var<uniform> lp: LodParams;
@group(0) @binding(1) var<uniform> view: View;
@group(0) @binding(2) var<storage, read> occupancy: array<u32>;

struct VOut {
    @builtin(position) pos: vec4<f32>,
    // Plot coordinates: x in columns, y in rows from the top of the plot.
    @location(0) plot: vec2<f32>,
}

@vertex
fn vs_dense(@builtin(vertex_index) vi: u32) -> VOut {
    let corner = array<u32, 6>(0u, 1u, 2u, 2u, 1u, 3u)[vi % 6u];
    let u = select(0.0, 1.0, (corner & 1u) != 0u);
    let v = select(0.0, 1.0, (corner & 2u) != 0u);
    var out: VOut;
    out.pos = vec4<f32>(-1.0 + 2.0 * u, 1.0 - 2.0 * v, 0.0, 1.0);
    out.plot = vec2<f32>(u * f32(lp.columns), v * view.rows_in_view);
    return out;
}

@fragment
fn fs_dense(in: VOut) -> @location(0) vec4<f32> {
    let row_f = view.row_scroll + in.plot.y;
    // The one-pixel gap under every row, as the span quads leave it.
    let px_rows = view.rows_in_view / max(view.plot_h_px, 1.0);
    if lp.columns == 0u || row_f < f32(lp.first_row) || fract(row_f) > 1.0 - px_rows {
        discard;
    }
    let slot = u32(floor(row_f)) - lp.first_row;
    let c = min(u32(floor(in.plot.x)), lp.columns - 1u);
    if slot >= lp.rows {
        discard;
    }
    let word = occupancy[slot * lp.words_per_row + (c >> 5u)];
    if ((word >> (c & 31u)) & 1u) == 0u {
        discard;
    }
    return vec4<f32>(0.42, 0.49, 0.6, 1.0);
}
