// TraceFrame (frame/mod.rs; oracle cpu::frame). The per-frame passes between the gpgpu
// primitives, each over its own binding set:
//   heights:   per thread, its rows under the collapse state (lanes; 1 for a collapsed
//              thread; for a collapsed process 1 on its first thread, 0 on the others);
//              the gpgpu Scan turns them into first rows;
//   (span visibility and the visible-span IDs: candidates.wgsl)
//   edges:     per dependency, its endpoints projected to their nearest visible ancestor
//              (cpu::project's bounded walk, for the endpoints alone: a frame projects no
//              span that no dependency touches) and whether the edge is drawn;
//   edge_rows: (blocks mode) the layout rows of the drawn edges' endpoints, which no per-span
//              pass wrote;
//   pick_*:    clear, then the deepest lane among visible spans under the pointer, then the
//              lowest span ID on that lane (two atomic passes: deterministic).
// In blocks mode (candidates.wgsl, frame/blocks.rs) `visible` and `rows` are not written: the
// edges and picks evaluate the plain view's predicate (the window) and row on the fly.

const WG: u32 = 256u;
// `live_total[2]`: which per-span pass the frame ran.
const MODE_CANDIDATES: u32 = 0u;
const MODE_SWEEP: u32 = 1u;
const MODE_BLOCKS: u32 = 2u;


@group(0) @binding(0) var<uniform> fp: FrameParams;
@group(0) @binding(1) var<storage, read> thread_process: array<u32>;
@group(0) @binding(2) var<storage, read> thread_lanes: array<u32>;
@group(0) @binding(3) var<storage, read> process_first: array<u32>;
@group(0) @binding(4) var<storage, read> process_collapsed: array<u32>;
@group(0) @binding(5) var<storage, read> thread_collapsed: array<u32>;
@group(0) @binding(6) var<storage, read_write> heights: array<u32>;
@group(0) @binding(7) var<storage, read> spans: array<u32>;
@group(0) @binding(8) var<storage, read> thread_offsets: array<u32>;
@group(0) @binding(9) var<storage, read> focus_forward: array<u32>;
@group(0) @binding(10) var<storage, read> focus_reverse: array<u32>;
@group(0) @binding(11) var<storage, read_write> visible: array<u32>;
@group(0) @binding(12) var<storage, read_write> rows: array<u32>;
@group(0) @binding(13) var<storage, read> deps: array<u32>;
@group(0) @binding(14) var<storage, read> parents: array<u32>;
@group(0) @binding(15) var<storage, read_write> edge_flags: array<u32>;
@group(0) @binding(16) var<storage, read_write> edge_ends: array<u32>;
@group(0) @binding(17) var<storage, read> visible_in: array<u32>;
@group(0) @binding(18) var<storage, read> rows_in: array<u32>;
@group(0) @binding(19) var<storage, read_write> pick: array<atomic<u32>>;
@group(0) @binding(20) var<storage, read_write> pick_args: array<u32>;
// `live_total`, read: word 2 is the mode.
@group(0) @binding(38) var<storage, read> mode_in: array<u32>;

fn load_span(i: u32) -> Span {
    var w: array<u32, 8>;
    for (var k = 0u; k < 8u; k++) {
        w[k] = spans[i * SPAN_WORDS + k];
    }
    return unpack_span(w);
}

@compute @workgroup_size(WG)
fn thread_heights(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let t = linear_row(wid, nwg, lid, WG);
    if t >= arrayLength(&heights) {
        return;
    }
    var h = 0u;
    if t < fp.thread_count {
        let p = thread_process[t];
        if process_collapsed[p] != 0u {
            h = select(0u, 1u, process_first[p] == t);
        } else if thread_collapsed[t] != 0u {
            h = min(thread_lanes[t], 1u);
        } else {
            h = thread_lanes[t];
        }
    }
    heights[t] = h;
}

fn blocks_mode() -> bool {
    return arrayLength(&mode_in) > 2u && mode_in[2] == MODE_BLOCKS;
}

// Whether span i is visible: its flag, or in blocks mode the plain view's window test.
fn is_visible(i: u32) -> bool {
    if blocks_mode() {
        if i >= fp.span_count {
            return false;
        }
        let s = load_span(i);
        return le64(s.start, vec2<u32>(fp.window_end_lo, fp.window_end_hi))
            && le64(vec2<u32>(fp.window_start_lo, fp.window_start_hi), span_end(s));
    }
    return visible_in[i] != 0u;
}

// The layout row of visible span i: `rows`, or in blocks mode its thread's first row plus its
// lane (a plain view collapses nothing).
fn row_of(i: u32) -> u32 {
    if blocks_mode() {
        return plain_row(i);
    }
    return rows_in[i];
}

fn plain_row(i: u32) -> u32 {
    let s = load_span(i);
    return thread_info_in[THREAD_INFO_WORDS * s.thread + 2u] + s.lane;
}

// Span i if visible, else the first visible span on its parent chain within
// fp.max_ancestor_depth hidden links; NO_SPAN past the span slots, at a missing parent, or
// when the bound runs out (a cycle, an overlong chain): gpgpu's AncestorProjection walk.
fn project(i: u32) -> u32 {
    let n = min(arrayLength(&parents), arrayLength(&visible_in));
    if i >= n {
        return NO_SPAN;
    }
    if is_visible(i) {
        return i;
    }
    var c = i;
    for (var link = 0u; link < fp.max_ancestor_depth; link++) {
        c = parents[c];
        if c >= n {
            return NO_SPAN;
        }
        if is_visible(c) {
            return c;
        }
    }
    return NO_SPAN;
}

@compute @workgroup_size(WG)
fn edge_projection(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let e = linear_row(wid, nwg, lid, WG);
    if e >= arrayLength(&edge_flags) {
        return;
    }
    var a = NO_SPAN;
    var b = NO_SPAN;
    if e < fp.dependency_count {
        a = project(deps[4u * e]);
        b = project(deps[4u * e + 1u]);
    }
    edge_ends[2u * e] = a;
    edge_ends[2u * e + 1u] = b;
    edge_flags[e] = select(0u, 1u, a != NO_SPAN && b != NO_SPAN && a != b);
}

@compute @workgroup_size(WG)
fn edge_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let e = linear_row(wid, nwg, lid, WG);
    if !blocks_mode() || e >= fp.dependency_count || 2u * e + 1u >= arrayLength(&edge_ends) {
        return;
    }
    for (var k = 0u; k < 2u; k++) {
        let x = edge_ends[2u * e + k];
        if x < fp.span_count && x < arrayLength(&rows) {
            rows[x] = plain_row(x);
        }
    }
}

// Whether span `i` is under the pointer (pick mode 1: layout row, 2: thread).
fn pick_candidate(i: u32) -> bool {
    if fp.pick_mode == 0u || i >= fp.span_count || !is_visible(i) {
        return false;
    }
    let s = load_span(i);
    let t = vec2<u32>(fp.pick_time_lo, fp.pick_time_hi);
    if !(le64(s.start, t) && le64(t, span_end(s))) {
        return false;
    }
    if fp.pick_mode == 1u {
        return row_of(i) == fp.pick_target;
    }
    return s.thread == fp.pick_target;
}

@compute @workgroup_size(1)
fn pick_clear() {
    atomicStore(&pick[0], 0u);
    atomicStore(&pick[1], NO_SPAN);
    // The two pick passes' grid: one row per span slot, none without a pick (grid_of:
    // candidates.wgsl).
    let g = grid_of(select(0u, arrayLength(&visible_in), fp.pick_mode != 0u));
    pick_args[0] = g.x;
    pick_args[1] = g.y;
    pick_args[2] = g.z;
}

@compute @workgroup_size(WG)
fn pick_lane(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid, WG);
    if i < arrayLength(&visible_in) && pick_candidate(i) {
        atomicMax(&pick[0], load_span(i).lane + 1u);
    }
}

@compute @workgroup_size(WG)
fn pick_span(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid, WG);
    if i < arrayLength(&visible_in) && pick_candidate(i)
        && load_span(i).lane + 1u == atomicLoad(&pick[0]) {
        atomicMin(&pick[1], i);
    }
}
