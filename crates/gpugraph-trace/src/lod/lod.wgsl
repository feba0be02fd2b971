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
//   blocks:   (frames in the trace frame's blocks mode, whose candidates are not written) per
//             block record of the frame (frame/blocks.wgsl): nothing when no span of it meets
//             the window; when the summary proves the per-span result (every span in the
//             window, none wide or selected, and per lane its columns [first start, max end]
//             inside the plot with no gap over half a pixel, so the spans' column intervals
//             join up), that lane's columns on its row and its span count; otherwise each span
//             classified as `classify` does, under the plain view's window test and row (the
//             quads' rows written into the frame's `rows`, which blocks mode does not write);
//   args:     the non-instanced draw records: [6 × wide, 1, 0, 0], [2 × edges, 1, 0, 0].

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
// [this frame's candidate rows, last frame's, mode (2: blocks)].
@group(0) @binding(11) var<storage, read> live_total: array<u32>;
@group(0) @binding(12) var<uniform> fp: FrameParams;
@group(0) @binding(13) var<storage, read> blocks: array<u32>;
@group(0) @binding(14) var<storage, read> thread_info: array<u32>;
@group(0) @binding(15) var<storage, read_write> rows_out: array<u32>;
@group(0) @binding(16) var<storage, read_write> block_args: array<u32>;

const MODE_BLOCKS: u32 = 2u;
const BLOCK_WORDS: u32 = 72u;
const BLOCK_LANES: u32 = 8u;
const BLOCK_WG: u32 = 64u;
const THREAD_INFO_WORDS: u32 = 4u;

fn blocks_mode() -> bool {
    return arrayLength(&live_total) > 2u && live_total[2] == MODE_BLOCKS;
}

// The indirect grid of `groups` workgroups, split over y past the per-dimension limit.
fn groups_grid(groups: u32) -> vec3<u32> {
    return vec3<u32>(min(groups, 65535u), select(1u, (groups + 65534u) / 65535u, groups > 65535u),
                     1u);
}

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
    // The grid of `Grid::Rows` over the candidates, or over the blocks in blocks mode.
    let b = blocks_mode();
    let c = groups_grid(select((candidate_rows() + WG - 1u) / WG, 0u, b));
    classify_args[0] = c.x;
    classify_args[1] = c.y;
    classify_args[2] = c.z;
    let k = groups_grid(select(0u, (fp.block_count + BLOCK_WG - 1u) / BLOCK_WG, b));
    block_args[0] = k.x;
    block_args[1] = k.y;
    block_args[2] = k.z;
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
    classify_one(id, rows[id]);
}

fn span_start(i: u32) -> vec2<u32> {
    return vec2<u32>(spans[i * SPAN_WORDS], spans[i * SPAN_WORDS + 1u]);
}
fn span_duration(i: u32) -> vec2<u32> {
    return vec2<u32>(spans[i * SPAN_WORDS + 2u], spans[i * SPAN_WORDS + 3u] & 0xffffu);
}

// Sets columns c0..=c1 (c0 <= c1 < columns) of row slot `slot`, a word at a time.
fn mark_columns(slot: u32, c0: u32, c1: u32) {
    let base = slot * lp.words_per_row;
    for (var w = c0 >> 5u; w <= (c1 >> 5u); w++) {
        var m = 0xffffffffu;
        if w == (c0 >> 5u) {
            m &= 0xffffffffu << (c0 & 31u);
        }
        if w == (c1 >> 5u) {
            m &= 0xffffffffu >> (31u - (c1 & 31u));
        }
        atomicOr(&occupancy[base + w], m);
    }
}

// Visible span `id` on layout row `r`: a quad (appended; returns true), its columns marked,
// or nothing (off the plot).
fn classify_one(id: u32, r: u32) -> bool {
    var wide = lp.columns == 0u || id == lp.selected;
    if !wide && (r < lp.first_row || r - lp.first_row >= lp.rows) {
        // Above or below the plot: neither drawn nor marked.
        return false;
    }
    let start = span_start(id);
    let duration = span_duration(id);
    wide = wide || f_of(duration) * lp.px_per_tick >= lp.min_px;
    if wide {
        wide_ids[atomicAdd(&counters[0], 1u)] = id;
        return true;
    }
    let x0 = px_of(start);
    let x1 = px_of(add64(start, duration));
    let last = f32(lp.columns);
    if x1 < 0.0 || x0 >= last {
        return false;
    }
    let c0 = u32(max(floor(x0), 0.0));
    let c1 = min(u32(max(floor(x1), 0.0)), lp.columns - 1u);
    mark_columns(r - lp.first_row, c0, c1);
    atomicAdd(&counters[1], 1u);
    return false;
}

fn in_plot(r: u32) -> bool {
    return r >= lp.first_row && r - lp.first_row < lp.rows;
}

@compute @workgroup_size(BLOCK_WG)
fn block_pass(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let b = linear_row(wid, nwg, lid, BLOCK_WG);
    let base = b * BLOCK_WORDS;
    if b >= fp.block_count || base + BLOCK_WORDS > arrayLength(&blocks) {
        return;
    }
    let first = blocks[base];
    let end = blocks[base + 1u];
    if first >= end || end > fp.span_count || end * SPAN_WORDS > arrayLength(&spans) {
        return;
    }
    let t0 = vec2<u32>(fp.window_start_lo, fp.window_start_hi);
    let t1 = vec2<u32>(fp.window_end_lo, fp.window_end_hi);
    let first_start = span_start(first);
    if lt64(vec2<u32>(blocks[base + 4u], blocks[base + 5u]), t0) || lt64(t1, first_start) {
        // No span of the block meets the window.
        return;
    }
    let row0 = thread_info[THREAD_INFO_WORDS * blocks[base + 2u] + 2u];
    let lanes = blocks[base + 3u];
    let last = f32(lp.columns);
    var fast = lp.columns != 0u && lanes <= BLOCK_LANES
        && (lp.selected < first || lp.selected >= end)
        && le64(t0, first_start) && le64(span_start(end - 1u), t1)
        && f_of(vec2<u32>(blocks[base + 6u], blocks[base + 7u])) * lp.px_per_tick < lp.min_px;
    for (var k = 0u; fast && k < lanes; k++) {
        let at = base + 8u + 8u * k;
        if !in_plot(row0 + blocks[at]) {
            continue;
        }
        let x0 = px_of(vec2<u32>(blocks[at + 2u], blocks[at + 3u]));
        let x1 = px_of(vec2<u32>(blocks[at + 4u], blocks[at + 5u]));
        let gap = f_of(vec2<u32>(blocks[at + 6u], blocks[at + 7u])) * lp.px_per_tick;
        fast = x0 >= 0.0 && x1 < last && gap <= 0.5;
    }
    if fast {
        var dense = 0u;
        for (var k = 0u; k < lanes; k++) {
            let at = base + 8u + 8u * k;
            let r = row0 + blocks[at];
            if !in_plot(r) {
                continue;
            }
            let c0 = u32(floor(px_of(vec2<u32>(blocks[at + 2u], blocks[at + 3u]))));
            let c1 = u32(floor(px_of(vec2<u32>(blocks[at + 4u], blocks[at + 5u]))));
            mark_columns(r - lp.first_row, c0, c1);
            dense += blocks[at + 1u];
        }
        if dense != 0u {
            atomicAdd(&counters[1], dense);
        }
        return;
    }
    for (var i = first; i < end; i++) {
        let start = span_start(i);
        if lt64(t1, start) || lt64(add64(start, span_duration(i)), t0) {
            continue;
        }
        let r = row0 + (spans[i * SPAN_WORDS + 5u] >> 16u);
        if classify_one(i, r) && i < arrayLength(&rows_out) {
            rows_out[i] = r;
        }
    }
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
