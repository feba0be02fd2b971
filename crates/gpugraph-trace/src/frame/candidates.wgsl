// The frame's candidate path (frame/candidates.rs; oracle cpu::thread_candidates): span
// visibility costs O(threads · log n + candidates), not O(spans). A thread's spans are one
// contiguous, start-sorted ID range (canonical order), and `max_end[i]` is the largest end
// among its spans up to i (built at load), so the window [t0, t1] maps to the candidate range
// [lo, hi): hi = the first span starting after t1, lo = the first whose running max end
// reaches t0. Every span of the window lies in it; the visibility predicate drops the rest.
//   thread_candidates:   per thread, its [lo, hi) by two binary searches;
//   thread_rows:         per thread, its first row and collapse mode under the layout;
//   (gpgpu Scan of the counts: candidate ends, the last one the total)
//   frame_args:          the mode and the three indirect grids: with candidates for at most
//                        half the spans, `unmark` (clear visible/rows of last frame's visible
//                        candidates: its candidate IDs and flags, still in their buffers)
//                        then `span_candidates` (per candidate, its thread by binary search
//                        over the ends); otherwise `span_sweep` over every span slot (no
//                        search, no unmark: it rewrites every slot, and is cheaper per span
//                        when most spans are candidates). Both write visible/rows and the
//                        candidates' IDs and flags; `live_total` is [this frame's candidate
//                        rows (candidates or spans), last frame's]. It also zeroes the visible
//                        count word of the draw record;
//   count_visible:       (frames without the visible-ID compaction) the flags of the live
//                        candidates summed into that word: a fixed grid striding over them, one
//                        atomic per workgroup; in blocks mode the threads' plain counts instead.
// Blocks mode (frame/blocks.rs; TraceFrameConfig::block_lod): where the sweep would run and the
// view is plain (fp.plain: no filter, focus or collapse), no per-span pass runs at all. The
// window alone decides visibility then, so thread_candidates also counts each thread's visible
// spans exactly: the spans starting at or before t1 (the first search) minus those ending
// before t0 (a search over the thread's sorted ends); `live_total` keeps the last other
// frame's rows (their marks stay for the next candidate frame's unmark) and word 2 says
// blocks, which the picks, the edge endpoints and the span LOD read.

@group(0) @binding(21) var<storage, read> thread_spans: array<u32>;
@group(0) @binding(22) var<storage, read> max_end: array<u32>;
// Per thread [lo, count, first row, mode] (THREAD_INFO_WORDS; mode: LANE0_ONLY, ONE_ROW).
@group(0) @binding(23) var<storage, read_write> thread_info: array<u32>;
@group(0) @binding(24) var<storage, read_write> thread_counts: array<u32>;
@group(0) @binding(25) var<storage, read> candidate_ends: array<u32>;
@group(0) @binding(26) var<storage, read_write> candidate_args: array<u32>;
@group(0) @binding(27) var<storage, read_write> candidate_ids: array<u32>;
@group(0) @binding(28) var<storage, read_write> candidate_flags: array<u32>;
// The span draw record [6, visible spans, 0, 0, ...]: word 1 is the visible count.
@group(0) @binding(30) var<storage, read_write> draw_record: array<atomic<u32>>;
@group(0) @binding(31) var<storage, read> thread_info_in: array<u32>;
@group(0) @binding(33) var<storage, read_write> sweep_args: array<u32>;
@group(0) @binding(34) var<storage, read_write> unmark_args: array<u32>;
@group(0) @binding(35) var<storage, read_write> live_total: array<u32>;
@group(0) @binding(36) var<storage, read> sorted_ends: array<u32>;
@group(0) @binding(37) var<storage, read_write> thread_visible: array<u32>;

const THREAD_INFO_WORDS: u32 = 4u;
// Only lane 0 is shown (the thread or its process is collapsed).
const LANE0_ONLY: u32 = 1u;
// Every shown span sits on the thread's first row (its process is collapsed).
const ONE_ROW: u32 = 2u;

// The indirect grid of `rows` rows of WG, split over y past the per-dimension limit as
// `Grid::Rows` does (linear_row reads it back).
fn grid_of(rows: u32) -> vec3<u32> {
    let groups = (rows + WG - 1u) / WG;
    return vec3<u32>(min(groups, 65535u), select(1u, (groups + 65534u) / 65535u, groups > 65535u),
                     1u);
}

// Last frame's candidate rows (`frame_args` moved them to word 1).
fn unmark_rows() -> u32 {
    return min(live_total[1], arrayLength(&candidate_ids));
}

@compute @workgroup_size(1)
fn frame_args() {
    let candidates = candidate_ends[arrayLength(&candidate_ends) - 1u];
    let sweep = candidates > fp.span_count / 2u;
    atomicStore(&draw_record[1], 0u);
    if sweep && fp.plain != 0u {
        // Blocks: no per-span pass; the candidate rows of the last other frame stay.
        let z = grid_of(0u);
        candidate_args[0] = z.x;
        candidate_args[1] = z.y;
        candidate_args[2] = z.z;
        sweep_args[0] = z.x;
        sweep_args[1] = z.y;
        sweep_args[2] = z.z;
        unmark_args[0] = z.x;
        unmark_args[1] = z.y;
        unmark_args[2] = z.z;
        live_total[2] = MODE_BLOCKS;
        return;
    }
    live_total[2] = select(MODE_CANDIDATES, MODE_SWEEP, sweep);
    live_total[1] = live_total[0];
    let c = grid_of(select(candidates, 0u, sweep));
    let w = grid_of(select(0u, fp.span_count, sweep));
    // Last frame's candidate rows (at most the span slots; unmark bounds them again).
    let u = grid_of(select(live_total[1], 0u, sweep));
    candidate_args[0] = c.x;
    candidate_args[1] = c.y;
    candidate_args[2] = c.z;
    sweep_args[0] = w.x;
    sweep_args[1] = w.y;
    sweep_args[2] = w.z;
    unmark_args[0] = u.x;
    unmark_args[1] = u.y;
    unmark_args[2] = u.z;
    live_total[0] = select(candidates, fp.span_count, sweep);
}

@compute @workgroup_size(WG)
fn unmark(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let k = linear_row(wid, nwg, lid, WG);
    if k >= unmark_rows() || candidate_flags[k] == 0u {
        return;
    }
    let id = candidate_ids[k];
    if id < arrayLength(&visible) {
        visible[id] = 0u;
        rows[id] = NO_SPAN;
    }
}

fn max_end_at(i: u32) -> vec2<u32> {
    return vec2<u32>(max_end[2u * i], max_end[2u * i + 1u]);
}

@compute @workgroup_size(WG)
fn thread_candidates(@builtin(workgroup_id) wid: vec3<u32>,
                     @builtin(num_workgroups) nwg: vec3<u32>,
                     @builtin(local_invocation_index) lid: u32) {
    let t = linear_row(wid, nwg, lid, WG);
    if t >= arrayLength(&thread_counts) {
        return;
    }
    var lo = 0u;
    var hi = 0u;
    var shown = 0u;
    if t < fp.thread_count {
        let t0 = vec2<u32>(fp.window_start_lo, fp.window_start_hi);
        let t1 = vec2<u32>(fp.window_end_lo, fp.window_end_hi);
        // hi: the first span of [begin, end) starting after t1.
        lo = thread_spans[2u * t];
        hi = thread_spans[2u * t + 1u];
        while lo < hi {
            let mid = lo + (hi - lo) / 2u;
            let start = vec2<u32>(spans[mid * SPAN_WORDS], spans[mid * SPAN_WORDS + 1u]);
            if le64(start, t1) {
                lo = mid + 1u;
            } else {
                hi = mid;
            }
        }
        // The plain count: starts at or before t1 minus ends before t0 (those start before
        // t1 too), by a search over the thread's sorted ends (blocks mode only).
        let begin = thread_spans[2u * t];
        let end = thread_spans[2u * t + 1u];
        if 2u * end <= arrayLength(&sorted_ends) {
            var a = begin;
            var z = end;
            while a < z {
                let mid = a + (z - a) / 2u;
                if lt64(vec2<u32>(sorted_ends[2u * mid], sorted_ends[2u * mid + 1u]), t0) {
                    a = mid + 1u;
                } else {
                    z = mid;
                }
            }
            shown = (lo - begin) - (a - begin);
        }
        // lo: the first of [begin, hi) whose running max end reaches t0.
        let last = hi;
        lo = thread_spans[2u * t];
        while lo < hi {
            let mid = lo + (hi - lo) / 2u;
            if lt64(max_end_at(mid), t0) {
                lo = mid + 1u;
            } else {
                hi = mid;
            }
        }
        hi = last;
    }
    thread_info[THREAD_INFO_WORDS * t] = lo;
    thread_info[THREAD_INFO_WORDS * t + 1u] = hi - lo;
    thread_counts[t] = hi - lo;
    if t < arrayLength(&thread_visible) {
        thread_visible[t] = shown;
    }
}

@compute @workgroup_size(WG)
fn thread_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let t = linear_row(wid, nwg, lid, WG);
    if t >= fp.thread_count || THREAD_INFO_WORDS * t + 3u >= arrayLength(&thread_info) {
        return;
    }
    let p = thread_process[t];
    var row = thread_offsets[t];
    var mode = select(0u, LANE0_ONLY, thread_collapsed[t] != 0u);
    if process_collapsed[p] != 0u {
        row = thread_offsets[process_first[p]];
        mode = LANE0_ONLY | ONE_ROW;
    }
    thread_info[THREAD_INFO_WORDS * t + 2u] = row;
    thread_info[THREAD_INFO_WORDS * t + 3u] = mode;
}

struct SpanView {
    shown: bool,
    row: u32,
}

// The view predicate of span `i` of thread `t` (window, durations, groups, name, shown lane,
// focus) and its layout row (NO_SPAN when hidden): cpu::frame's.
fn span_view(i: u32, t: u32) -> SpanView {
    var v = SpanView(false, NO_SPAN);
    if i >= fp.span_count {
        return v;
    }
    let s = load_span(i);
    let mode = thread_info_in[THREAD_INFO_WORDS * t + 3u];
    let focus_ok = fp.focus == 0u || focus_forward[i] != 0u || focus_reverse[i] != 0u;
    v.shown = le64(s.start, vec2<u32>(fp.window_end_lo, fp.window_end_hi))
        && le64(vec2<u32>(fp.window_start_lo, fp.window_start_hi), span_end(s))
        && le64(vec2<u32>(fp.min_duration_lo, fp.min_duration_hi), s.duration)
        && le64(s.duration, vec2<u32>(fp.max_duration_lo, fp.max_duration_hi))
        && ((fp.groups >> draw_group(s.flags)) & 1u) == 1u
        && (fp.name == NO_SPAN || fp.name == s.group)
        && (s.lane == 0u || (mode & LANE0_ONLY) == 0u)
        && focus_ok;
    if v.shown {
        v.row = thread_info_in[THREAD_INFO_WORDS * t + 2u]
            + select(s.lane, 0u, (mode & ONE_ROW) != 0u);
    }
    return v;
}

@compute @workgroup_size(WG)
fn span_candidates(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let k = linear_row(wid, nwg, lid, WG);
    let threads = arrayLength(&candidate_ends);
    if k >= candidate_ends[threads - 1u] || k >= arrayLength(&candidate_ids) {
        return;
    }
    // The thread: the first whose inclusive candidate end passes k.
    var a = 0u;
    var b = threads - 1u;
    while a < b {
        let mid = a + (b - a) / 2u;
        if candidate_ends[mid] > k {
            b = mid;
        } else {
            a = mid + 1u;
        }
    }
    let lo = thread_info_in[THREAD_INFO_WORDS * a];
    let i = lo + (k - (candidate_ends[a] - thread_info_in[THREAD_INFO_WORDS * a + 1u]));
    mark(k, i, a);
}

// Candidate k is span i of thread t.
fn mark(k: u32, i: u32, t: u32) {
    let v = span_view(i, t);
    visible[i] = select(0u, 1u, v.shown);
    rows[i] = v.row;
    candidate_ids[k] = i;
    candidate_flags[k] = select(0u, 1u, v.shown);
}

@compute @workgroup_size(WG)
fn span_sweep(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid, WG);
    if i < fp.span_count && i < arrayLength(&candidate_ids) {
        mark(i, i, spans[i * SPAN_WORDS + 4u]);
    }
}

var<workgroup> group_visible: atomic<u32>;

@compute @workgroup_size(WG)
fn count_visible(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    if lid == 0u {
        atomicStore(&group_visible, 0u);
    }
    workgroupBarrier();
    var mine = 0u;
    if live_total[2] == MODE_BLOCKS {
        let threads = min(fp.thread_count, arrayLength(&thread_visible));
        for (var t = wid.x * WG + lid; t < threads; t += nwg.x * WG) {
            mine += thread_visible[t];
        }
    } else {
        let live = min(live_total[0], arrayLength(&candidate_flags));
        for (var k = wid.x * WG + lid; k < live; k += nwg.x * WG) {
            mine += candidate_flags[k];
        }
    }
    if mine != 0u {
        atomicAdd(&group_visible, mine);
    }
    workgroupBarrier();
    if lid == 0u {
        let n = atomicLoad(&group_visible);
        if n != 0u {
            atomicAdd(&draw_record[1], n);
        }
    }
}
