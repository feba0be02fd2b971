// TraceFrame (frame/mod.rs; oracle cpu::frame). The per-frame passes between the gpgpu
// primitives, each over its own binding set:
//   heights:   per thread, its rows under the collapse state (lanes; 1 for a collapsed
//              thread; for a collapsed process 1 on its first thread, 0 on the others);
//              the gpgpu Scan turns them into first rows;
//   (span visibility and the visible-span IDs: candidates.wgsl)
//   edges:     per dependency, its endpoints projected to their nearest visible ancestor
//              (cpu::project's bounded walk, for the endpoints alone: a frame projects no
//              span that no dependency touches) and whether the edge is drawn;
//   pick_*:    clear, then the deepest lane among visible spans under the pointer, then the
//              lowest span ID on that lane (two atomic passes: deterministic).

#include "common.wgsl"

const WG: u32 = 256u;

struct FrameParams {
    span_count: u32,
    dependency_count: u32,
    thread_count: u32,
    focus: u32,
    window_start_lo: u32,
    window_start_hi: u32,
    window_end_lo: u32,
    window_end_hi: u32,
    min_duration_lo: u32,
    min_duration_hi: u32,
    max_duration_lo: u32,
    max_duration_hi: u32,
    groups: u32,
    name: u32,
    pick_mode: u32,
    pick_target: u32,
    pick_time_lo: u32,
    pick_time_hi: u32,
    row_first: u32,
    row_count: u32,
    max_ancestor_depth: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

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

// Span i if visible, else the first visible span on its parent chain within
// fp.max_ancestor_depth hidden links; NO_SPAN past the span slots, at a missing parent, or
// when the bound runs out (a cycle, an overlong chain): gpgpu's AncestorProjection walk.
fn project(i: u32) -> u32 {
    let n = min(arrayLength(&parents), arrayLength(&visible_in));
    if i >= n {
        return NO_SPAN;
    }
    if visible_in[i] != 0u {
        return i;
    }
    var c = i;
    for (var link = 0u; link < fp.max_ancestor_depth; link++) {
        c = parents[c];
        if c >= n {
            return NO_SPAN;
        }
        if visible_in[c] != 0u {
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

// Whether span `i` is under the pointer (pick mode 1: layout row, 2: thread).
fn pick_candidate(i: u32) -> bool {
    if fp.pick_mode == 0u || i >= fp.span_count || visible_in[i] == 0u {
        return false;
    }
    let s = load_span(i);
    let t = vec2<u32>(fp.pick_time_lo, fp.pick_time_hi);
    if !(le64(s.start, t) && le64(t, span_end(s))) {
        return false;
    }
    if fp.pick_mode == 1u {
        return rows_in[i] == fp.pick_target;
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
