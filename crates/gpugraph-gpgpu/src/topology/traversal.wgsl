// Bounded breadth-first traversal over CSR adjacency (header: WG, BIG_DEGREE, HUGE_DEGREE,
// HUB_CHUNK, STAGE; defines BOTH, LEVELS, SEED_COUNT, DEPTH_VIEW). Node claims are an atomic minimum on a graph-owned,
// node-aligned level array, so a node reached twice (cycles, duplicate edges, self-loops,
// shared descendants, partitions expanding the same frontier) enters the frontier queue once.
// The queue holds every claimed node in level order; state words record where each level ends.
//
// Edge ranges longer than HUGE_DEGREE (power-law hubs) go to a hub list whose concatenated
// edges a second indirect dispatch spreads over HUB_CHUNK-edge workgroups, so one hub does
// not hold a whole level on one workgroup.
//
// state: [0] queue tail (claimed nodes), [1] out-of-range IDs met, [2] effective depth,
//        [3] hub entries this level, [4] hub edges this level,
//        [5 + k] end of level k in the queue (begin of level k is the end of level k - 1).

const UNREACHED: u32 = 0xffffffffu;
const TAIL: u32 = 0u;
const INVALID: u32 = 1u;
const DEPTH: u32 = 2u;
const HUB_COUNT: u32 = 3u;
const HUB_EDGES: u32 = 4u;
const LEVEL_ENDS: u32 = 5u;

struct TraversalParams {
    nodes: u32,
    round: u32,
    max_depth: u32,
    max_dim: u32,
    part_base: u32,
    part_len: u32,
    state_len: u32,
    a_offsets_off: u32,
    a_neighbors_off: u32,
    a_edges: u32,
    b_offsets_off: u32,
    b_neighbors_off: u32,
    b_edges: u32,
    seeds_off: u32,
    seeds_len: u32,
    seed_count_off: u32,
    depth_off: u32,
    mask_off: u32,
    levels_off: u32,
    status_off: u32,
    part_index: u32,
    hub_cap: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: TraversalParams;
@group(0) @binding(1) var<storage, read_write> state: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> queue: array<u32>;
@group(0) @binding(3) var<storage, read_write> level: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read> a_offsets: array<u32>;
@group(0) @binding(5) var<storage, read> a_neighbors: array<u32>;
#ifdef BOTH
@group(0) @binding(6) var<storage, read> b_offsets: array<u32>;
@group(0) @binding(7) var<storage, read> b_neighbors: array<u32>;
#endif
@group(0) @binding(8) var<storage, read> seeds: array<u32>;
#ifdef SEED_COUNT
@group(0) @binding(9) var<storage, read> seed_count: array<u32>;
#endif
#ifdef DEPTH_VIEW
@group(0) @binding(10) var<storage, read> active_depth: array<u32>;
#endif
@group(0) @binding(11) var<storage, read_write> args: array<u32>;
@group(0) @binding(12) var<storage, read_write> mask: array<u32>;
#ifdef LEVELS
@group(0) @binding(13) var<storage, read_write> levels_out: array<u32>;
#endif
@group(0) @binding(14) var<storage, read_write> status: array<u32>;
// Hub entries: [edge base in the concatenation, first edge, edge count, side | partition << 1].
@group(0) @binding(15) var<storage, read_write> hubs: array<u32>;

// Edge ranges of high-degree frontier nodes, expanded by the whole workgroup.
var<workgroup> big_lo: array<u32, 2 * WG>;
var<workgroup> big_hi: array<u32, 2 * WG>;
var<workgroup> big_side: array<u32, 2 * WG>;
var<workgroup> big_n: atomic<u32>;
var<workgroup> big_total: u32;
// Claims staged per workgroup and appended with one global atomic per flush: a single
// queue tail hit once per claim serializes a wide frontier. Past STAGE entries a claim
// appends through the global tail directly.
var<workgroup> staged: array<u32, STAGE>;
var<workgroup> staged_n: atomic<u32>;
var<workgroup> staged_count: u32;
var<workgroup> staged_base: u32;

fn linear_row(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * WG + lid;
}

// Claims node `u` at depth `d`: true for the one claimant (out-of-range IDs are counted).
fn try_claim(u: u32, d: u32) -> bool {
    if (u >= params.nodes) {
        atomicAdd(&state[INVALID], 1u);
        return false;
    }
    // A plain load first: most edges of a dense frontier meet claimed nodes.
    if (atomicLoad(&level[u]) != UNREACHED) {
        return false;
    }
    return atomicMin(&level[u], d) == UNREACHED;
}

// Claims `u` and appends it to the queue through the global tail.
fn claim_global(u: u32, d: u32) {
    if (try_claim(u, d)) {
        queue[atomicAdd(&state[TAIL], 1u)] = u;
    }
}

// Clears the state and marks every node unreached.
@compute @workgroup_size(WG)
fn init(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid);
    if (i < params.nodes) {
        atomicStore(&level[i], UNREACHED);
    }
    if (i < params.state_len) {
        var v = 0u;
        if (i == DEPTH) {
            v = params.max_depth;
#ifdef DEPTH_VIEW
            v = min(active_depth[params.depth_off], params.max_depth);
#endif
        }
        atomicStore(&state[i], v);
    }
}

// Claims the active seeds at depth 0 (out-of-range seeds are counted, not claimed).
@compute @workgroup_size(WG)
fn seed(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid);
    var count = params.seeds_len;
#ifdef SEED_COUNT
    count = min(seed_count[params.seed_count_off], count);
#endif
    if (i < count) {
        claim_global(seeds[params.seeds_off + i], 0u);
    }
}

// Before round `round`: closes level round - 1 at the current tail and writes the round's
// indirect dispatch (nothing past the effective depth).
@compute @workgroup_size(1)
fn prepare() {
    let k = params.round - 1u;
    var begin = 0u;
    if (k > 0u) {
        begin = atomicLoad(&state[LEVEL_ENDS + k - 1u]);
    }
    let end = atomicLoad(&state[TAIL]);
    atomicStore(&state[LEVEL_ENDS + k], end);
    atomicStore(&state[HUB_COUNT], 0u);
    atomicStore(&state[HUB_EDGES], 0u);
    var count = end - begin;
    if (params.round > atomicLoad(&state[DEPTH])) {
        count = 0u;
    }
    write_args(6u * k, (count + WG - 1u) / WG);
}

// `groups` workgroups as an x·y indirect grid at args[at..at + 3].
fn write_args(at: u32, groups: u32) {
    let x = min(groups, params.max_dim);
    var y = 1u;
    if (x > 0u) {
        y = (groups + x - 1u) / x;
    }
    args[at] = x;
    args[at + 1u] = y;
    args[at + 2u] = 1u;
}

// After round `round`'s expansion: the hub dispatch over the level's hub edges.
@compute @workgroup_size(1)
fn prepare_hubs() {
    let edges = atomicLoad(&state[HUB_EDGES]);
    write_args(6u * (params.round - 1u) + 3u, (edges + HUB_CHUNK - 1u) / HUB_CHUNK);
}

// The clamped edge range [lo, hi) of local node `v` in offsets with `edges` neighbours;
// a malformed range is counted once and clamped into the neighbour array.
fn edge_range(o0: u32, o1: u32, edges: u32) -> vec2<u32> {
    if (o0 > o1 || o1 > edges) {
        atomicAdd(&state[INVALID], 1u);
    }
    let lo = min(o0, edges);
    let hi = clamp(o1, lo, edges);
    return vec2<u32>(lo, hi);
}

fn claim_staged(u: u32, d: u32) {
    if (try_claim(u, d)) {
        let slot = atomicAdd(&staged_n, 1u);
        if (slot < STAGE) {
            staged[slot] = u;
        } else {
            queue[atomicAdd(&state[TAIL], 1u)] = u;
        }
    }
}

// Appends the staged claims to the queue (uniform control flow: every invocation calls it).
fn flush(lid: u32) {
    workgroupBarrier();
    if (lid == 0u) {
        let c = min(atomicLoad(&staged_n), STAGE);
        staged_count = c;
        if (c > 0u) {
            staged_base = atomicAdd(&state[TAIL], c);
        }
        atomicStore(&staged_n, 0u);
    }
    workgroupBarrier();
    let c = staged_count;
    let base = staged_base;
    for (var k = lid; k < c; k += WG) {
        queue[base + k] = staged[k];
    }
    workgroupBarrier();
}

fn claim_side(side: u32, e: u32, d: u32) {
    if (side == 0u) {
        claim_staged(a_neighbors[params.a_neighbors_off + e], d);
    }
#ifdef BOTH
    if (side == 1u) {
        claim_staged(b_neighbors[params.b_neighbors_off + e], d);
    }
#endif
}

// Queues a hub range for the hub dispatch; false when the list is full or its edge count
// would wrap (malformed, overlapping ranges): the workgroup then expands the range itself.
fn push_hub(r: vec2<u32>, side: u32) -> bool {
    let len = r.y - r.x;
    let slot = atomicAdd(&state[HUB_COUNT], 1u);
    if (slot >= params.hub_cap) {
        return false;
    }
    // A compare-exchange loop, not an add: the total must never wrap, or the hub dispatch
    // would not cover the ranges queued before the wrap. Hub pushes are rare (one per range
    // of more than HUGE_DEGREE edges), so the loop meets little contention.
    var base = atomicLoad(&state[HUB_EDGES]);
    loop {
        if (base > 0xffffffffu - len) {
            hubs[4u * slot + 2u] = 0u;
            return false;
        }
        let r = atomicCompareExchangeWeak(&state[HUB_EDGES], base, base + len);
        if (r.exchanged) {
            break;
        }
        base = r.old_value;
    }
    hubs[4u * slot] = base;
    hubs[4u * slot + 1u] = r.x;
    hubs[4u * slot + 2u] = len;
    hubs[4u * slot + 3u] = side | (params.part_index << 1u);
    return true;
}

fn push_or_expand(r: vec2<u32>, side: u32, d: u32) {
    if (r.y - r.x > HUGE_DEGREE && push_hub(r, side)) {
        return;
    }
    if (r.y - r.x > BIG_DEGREE) {
        let slot = atomicAdd(&big_n, 1u);
        big_lo[slot] = r.x;
        big_hi[slot] = r.y;
        big_side[slot] = side;
        return;
    }
    for (var e = r.x; e < r.y; e += 1u) {
        claim_side(side, e, d);
    }
}

// Round `round`: expands level round - 1 through this partition's adjacency. Low-degree
// nodes are expanded by their own invocation, high-degree ones by the whole workgroup.
@compute @workgroup_size(WG)
fn expand(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let d = params.round;
    let k = d - 1u;
    var begin = 0u;
    if (k > 0u) {
        begin = atomicLoad(&state[LEVEL_ENDS + k - 1u]);
    }
    let count = atomicLoad(&state[LEVEL_ENDS + k]) - begin;
    if (lid == 0u) {
        atomicStore(&big_n, 0u);
        atomicStore(&staged_n, 0u);
    }
    workgroupBarrier();
    let i = linear_row(wid, nwg, lid);
    if (i < count) {
        let v = queue[begin + i];
        if (v >= params.part_base && v - params.part_base < params.part_len) {
            let local = v - params.part_base;
            let ra = edge_range(a_offsets[params.a_offsets_off + local],
                                a_offsets[params.a_offsets_off + local + 1u], params.a_edges);
            push_or_expand(ra, 0u, d);
#ifdef BOTH
            let rb = edge_range(b_offsets[params.b_offsets_off + local],
                                b_offsets[params.b_offsets_off + local + 1u], params.b_edges);
            push_or_expand(rb, 1u, d);
#endif
        }
    }
    flush(lid);
    if (lid == 0u) {
        big_total = atomicLoad(&big_n);
    }
    let total = workgroupUniformLoad(&big_total);
    for (var j = 0u; j < total; j += 1u) {
        let lo = big_lo[j];
        let hi = big_hi[j];
        let side = big_side[j];
        for (var e = lo + lid; e < hi; e += WG) {
            claim_side(side, e, d);
        }
        flush(lid);
    }
}

// Round `round`'s hub edges of this partition: workgroup w claims the targets of edges
// [w·HUB_CHUNK, (w + 1)·HUB_CHUNK) of the concatenated hub ranges. Every range is longer than
// the chunk and the ranges are disjoint in the concatenation, so at most two overlap a
// chunk: the workgroup finds them with one strided pass over the list, then expands them.
var<workgroup> hit: array<u32, 4>;
var<workgroup> hit_n: atomic<u32>;

@compute @workgroup_size(WG)
fn expand_hubs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let d = params.round;
    if (lid == 0u) {
        atomicStore(&staged_n, 0u);
        atomicStore(&hit_n, 0u);
    }
    workgroupBarrier();
    let c0 = (wid.y * nwg.x + wid.x) * HUB_CHUNK;
    let c1 = c0 + HUB_CHUNK;
    let entries = min(atomicLoad(&state[HUB_COUNT]), params.hub_cap);
    for (var j = lid; j < entries; j += WG) {
        let base = hubs[4u * j];
        let len = hubs[4u * j + 2u];
        // len 0: a slot whose range did not fit the total (expanded by its workgroup).
        if (len > 0u && (hubs[4u * j + 3u] >> 1u) == params.part_index && base < c1
            && base + len > c0) {
            let h = atomicAdd(&hit_n, 1u);
            if (h < 4u) {
                hit[h] = j;
            }
        }
    }
    workgroupBarrier();
    let hits = min(atomicLoad(&hit_n), 4u);
    for (var h = 0u; h < hits; h += 1u) {
        let j = hit[h];
        let base = hubs[4u * j];
        let tag = hubs[4u * j + 3u];
        let lo = max(base, c0);
        let hi = min(base + hubs[4u * j + 2u], c1);
        for (var e = lo + lid; e < hi; e += WG) {
            claim_side(tag & 1u, hubs[4u * j + 1u] + (e - base), d);
        }
    }
    flush(lid);
}

// One output partition: the 0/1 reachability mask (and levels) from the claims.
@compute @workgroup_size(WG)
fn finish(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid);
    if (i < params.part_len) {
        let lv = atomicLoad(&level[params.part_base + i]);
        mask[params.mask_off + i] = select(0u, 1u, lv != UNREACHED);
#ifdef LEVELS
        levels_out[params.levels_off + i] = lv;
#endif
    }
}

// [reached nodes, out-of-range IDs and malformed ranges met, effective depth].
@compute @workgroup_size(1)
fn report() {
    status[params.status_off] = atomicLoad(&state[TAIL]);
    status[params.status_off + 1u] = atomicLoad(&state[INVALID]);
    status[params.status_off + 2u] = atomicLoad(&state[DEPTH]);
}
