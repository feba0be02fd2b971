// SpanLod (lod/mod.rs; oracle lod::cpu::span_lod): splits a frame's visible spans into the
// ones drawn as quads (at least `min_px` wide, or selected) and the narrower ones, which set
// bits of a row × pixel-column occupancy bitmap drawn as one quad. Columns come from one f32
// multiply of an exactly computed f32 tick distance, so no compiler contraction can move a
// span across a column or the width threshold (the oracle repeats the same operations).
//   prepare:  zero the counters; the classification's indirect grid from the frame's
//             candidate rows (no workgroups past them: a zoomed-in frame classifies its few);
//   clear:    zero the bitmap's used words (row slots × words per row of this plot, by a
//             fixed grid striding over them: not the whole compiled bitmap every frame);
//   classify: per visible candidate of the frame (its candidate IDs and flags: no compaction
//             needed), append to `wide_ids` or set its one or two column bits in its row slot;
//   args:     the non-instanced draw records: [6 × wide, 1, 0, 0], [2 × edges, 1, 0, 0].

#include "common.wgsl"
#include "lod/params.wgsl"

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> lp: LodParams;
@group(0) @binding(1) var<storage, read> spans: array<u32>;
@group(0) @binding(2) var<storage, read> rows: array<u32>;
@group(0) @binding(3) var<storage, read> candidate_ids: array<u32>;
// The frame's draw records: word 4 × word 5 is the edge draw's vertex count.
@group(0) @binding(4) var<storage, read> frame_args: array<u32>;
@group(0) @binding(5) var<storage, read_write> wide_ids: array<u32>;
@group(0) @binding(6) var<storage, read_write> occupancy: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> draw_args: array<u32>;
@group(0) @binding(9) var<storage, read_write> classify_args: array<u32>;
@group(0) @binding(10) var<storage, read> candidate_flags: array<u32>;
// [this frame's candidate rows, last frame's].
@group(0) @binding(11) var<storage, read> live_total: array<u32>;

fn candidate_rows() -> u32 {
    return min(live_total[0], min(arrayLength(&candidate_ids), arrayLength(&candidate_flags)));
}

// f32 of a 64-bit tick count: the product by 2^32 is exact, the sum rounds once.
fn f_of(t: vec2<u32>) -> f32 {
    return f32(t.y) * 4294967296.0 + f32(t.x);
}

// Pixel x of tick t relative to the window start (negative before it).
fn px_of(t: vec2<u32>) -> f32 {
    let ws = vec2<u32>(lp.window_start_lo, lp.window_start_hi);
    if lt64(t, ws) {
        return -(f_of(add64(ws, neg64(t))) * lp.px_per_tick);
    }
    return f_of(add64(t, neg64(ws))) * lp.px_per_tick;
}

@compute @workgroup_size(1)
fn prepare() {
    for (var i = 0u; i < arrayLength(&counters); i++) {
        atomicStore(&counters[i], 0u);
    }
    // The grid of `Grid::Rows` over the candidates, split over y past 65,535 groups.
    let groups = (candidate_rows() + WG - 1u) / WG;
    classify_args[0] = min(groups, 65535u);
    classify_args[1] = select(1u, (groups + 65534u) / 65535u, groups > 65535u);
    classify_args[2] = 1u;
}

@compute @workgroup_size(WG)
fn clear(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let used = min(lp.rows * lp.words_per_row, arrayLength(&occupancy));
    for (var i = wid.x * WG + lid; i < used; i += nwg.x * WG) {
        atomicStore(&occupancy[i], 0u);
    }
}

@compute @workgroup_size(WG)
fn classify(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let k = linear_row(wid, nwg, lid, WG);
    if k >= candidate_rows() || candidate_flags[k] == 0u {
        return;
    }
    let id = candidate_ids[k];
    if id >= arrayLength(&rows) {
        return;
    }
    var wide = lp.columns == 0u || id == lp.selected;
    let r = rows[id];
    if !wide && (r < lp.first_row || r - lp.first_row >= lp.rows) {
        // Above or below the plot: neither drawn nor marked.
        return;
    }
    let start = vec2<u32>(spans[id * SPAN_WORDS], spans[id * SPAN_WORDS + 1u]);
    let duration = vec2<u32>(spans[id * SPAN_WORDS + 2u], spans[id * SPAN_WORDS + 3u] & 0xffffu);
    wide = wide || f_of(duration) * lp.px_per_tick >= lp.min_px;
    if wide {
        wide_ids[atomicAdd(&counters[0], 1u)] = id;
        return;
    }
    let x0 = px_of(start);
    let x1 = px_of(add64(start, duration));
    let last = f32(lp.columns);
    if x1 < 0.0 || x0 >= last {
        return;
    }
    let c0 = u32(max(floor(x0), 0.0));
    let c1 = min(u32(max(floor(x1), 0.0)), lp.columns - 1u);
    let base = (r - lp.first_row) * lp.words_per_row;
    for (var c = c0; c <= c1; c++) {
        atomicOr(&occupancy[base + (c >> 5u)], 1u << (c & 31u));
    }
    atomicAdd(&counters[1], 1u);
}

@compute @workgroup_size(1)
fn args() {
    draw_args[0] = 6u * atomicLoad(&counters[0]);
    draw_args[1] = 1u;
    draw_args[2] = 0u;
    draw_args[3] = 0u;
    draw_args[4] = frame_args[4] * frame_args[5];
    draw_args[5] = 1u;
    draw_args[6] = 0u;
    draw_args[7] = 0u;
}
