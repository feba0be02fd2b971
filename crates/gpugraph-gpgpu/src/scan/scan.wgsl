// Single-pass chained scan of u32 with decoupled look-back and decoupled fallback.
//
// The CPU twin of this file is `cpu.rs` (the plain loop); the dispatch side is `kernel.rs`,
// the tile planning is `plan.rs`.
//
// This text is assembled by `source.rs`: a generated header defines the tunables
//     WG_SIZE          invocations per workgroup
//     VEC4_PER_THREAD  vec4<u32> slots per invocation per tile (tile = WG_SIZE * VEC4_PER_THREAD * 4)
//     LOOKBACK_WINDOW  predecessor tiles inspected in parallel per look-back step (<= WG_SIZE)
//     SPIN_LIMIT       look-back steps without progress before the workgroup falls back
// and the line preprocessor resolves `#ifdef` on SEGMENTED (segment-start flags are bound),
// SUBGROUPS (subgroup builtins are used), COMPACT and PARTITIONS (the fused stable compaction,
// see "Compaction" below), and two testing switches: FORCE_FALLBACK (the
// look-back ignores the published status of tiles of this chunk, so every predecessor is
// recomputed) and REVERSE_TILES (tickets map to tiles last-first, so workgroups wait on tiles
// that have not started: the schedule of a device without forward-progress guarantees).
//
// Algorithm (Merrill & Garland's chained scan; Smith, Levien & Owens' decoupled fallback):
//  1. A tiny `clear_status` dispatch zeroes the tile counter and every tile status word.
//  2. Each workgroup of `scan_tiles` takes a ticket from the atomic counter. Tickets are handed
//     out in the order workgroups start, so a tile's predecessors were taken by workgroups that
//     started earlier. Ticket - ticket_base is the tile index inside this chunk; tickets past
//     the chunk's tile count (padding of a 2-D dispatch) exit at once.
//  3. The tile (WG_SIZE * VEC4_PER_THREAD vec4 slots, slot s = i * WG_SIZE + thread) is loaded
//     with coalesced vec4 loads, scanned in registers and workgroup memory, and its aggregate is
//     published at once. A tile whose aggregate does not depend on its predecessors (it contains
//     a segment start, or it is the first tile of the logical sequence) publishes it as its
//     inclusive prefix right away.
//  4. Look-back: LOOKBACK_WINDOW invocations each read one predecessor's status; invocation 0
//     folds the window from the nearest predecessor backwards, up to the first tile that has
//     not published (stop there and retry) or that has published its inclusive prefix (done).
//  5. Decoupled fallback: after SPIN_LIMIT consecutive steps without progress the whole
//     workgroup loads the stalled predecessor's input and reduces it itself, publishes that
//     reduction (it helps other waiters), folds it in, and continues further back. So a
//     workgroup never waits forever on a workgroup that the device does not schedule: devices
//     without forward-progress guarantees between workgroups cannot hang (Mesa lavapipe,
//     Apple GPUs, ...). It also bounds the look-back's loop iterations to about
//     (SPIN_LIMIT + 1) per tile walked back, which matters on Mesa 22.x lavapipe: gallivm
//     silently leaves any shader loop after 65,535 iterations in total per invocation, so an
//     unbounded spin there does not hang but returns a wrong carry.
//  6. The tile publishes its inclusive prefix, adds the carry and writes its outputs.
//
// Chunked sequences: chunk k is scanned by its own dispatch whose tiles have global ids after
// chunk k-1's (`tile_base`). All dispatches share the status buffer, so the first tile of chunk
// k looks back into chunk k-1, which has completed (wgpu orders dispatches that write the same
// storage buffer). Its tiles are therefore never recomputed; they could not be (that input is
// not bound here).
//
// Segments: the scan operator works on pairs (f, v) where f != 0 means "a segment starts in this
// run" and v is the sum since the last start of the run (or the whole run when f == 0):
//     (fa, va) . (fb, vb) = (fa | fb, fb != 0 ? vb : va + vb)
// which is associative. A tile containing a segment start therefore has an aggregate that is
// already its inclusive prefix, so it publishes TILE_INCLUSIVE and look-back stops there.
// The exclusive result is always inclusive - value (0 at a segment start).
//
// Compaction (COMPACT; host side in `compact/kernel.rs`): the input stream is a selection-flag
// stream, normalized to 0/1 as it is loaded, and the scan is the plain exclusive sum (never
// segmented). Instead of writing the prefix, the epilogue scatters each selected row's value to
// output[prefix] when prefix < capacity (stable: prefixes increase in source order), and the
// workgroup of tile `count_tile` writes the total (its inclusive prefix) to the count word, the
// overflow flag (total > capacity) and status word 1 (for a later distribution pass). Values
// are read only for vec4 groups holding a selected row. One pass: flags and values read once,
// survivors written once, 8 bytes of tile status.
//
// PARTITIONS (with COMPACT): every chunk is an independent sequence (its first tile never looks
// back), its candidates are only the rows whose global id `id_base + row` lies in the chunk's
// GPU-resident [start, end) row of `ranges`, and the value of a survivor is that global id (no
// values binding). Flags outside the window are never loaded.

// ---------------------------------------------------------------------------------------------
// Tile status encoding.
//
// WGSL atomics are relaxed only and 32 bits wide, so a (state, 32-bit value) pair cannot be
// published with one atomic store, and a separate flag word could be observed before the value
// it guards. Each tile therefore owns two words, each holding a 16-bit half of the value and a
// copy of the state:
//     word 2t + 0 = state << 16 | (value & 0xffff)
//     word 2t + 1 = state << 16 | (value >> 16)
// A reader loads both words and accepts them only when both carry the same state. Every word
// only ever moves EMPTY -> AGGREGATE -> INCLUSIVE and the value attached to each state is unique
// (it is a function of the input), so two words with equal states hold two halves of the same
// publication: the pair can never be torn. Writers use atomicMax, so a late AGGREGATE
// publication (e.g. from a fallback) can never overwrite an INCLUSIVE one.
// ---------------------------------------------------------------------------------------------

const TILE_EMPTY: u32 = 0u;
const TILE_AGGREGATE: u32 = 1u;
const TILE_INCLUSIVE: u32 = 2u;
const HALF_BITS: u32 = 16u;
const HALF_MASK: u32 = 0xffffu;

// status[0] is the ticket counter; word 1 receives the compaction count (COMPACT); words 2..3
// are reserved; tile t uses words
// STATUS_HEADER_WORDS + 2t and STATUS_HEADER_WORDS + 2t + 1. Keep in sync with plan.rs.
const STATUS_HEADER_WORDS: u32 = 4u;

const TILE_VEC4: u32 = WG_SIZE * VEC4_PER_THREAD;
const TILE_ELEMS: u32 = TILE_VEC4 * 4u;
// Workgroup arrays indexed by slot are padded by one word every 32 so that reading
// VEC4_PER_THREAD consecutive slots per invocation does not hit the same bank.
const PADDED_SLOTS: u32 = TILE_VEC4 + (TILE_VEC4 >> 5u) + 1u;

const MODE_INCLUSIVE: u32 = 1u;

// Look-back step outcomes.
const LB_CONTINUE: u32 = 0u;
const LB_DONE: u32 = 1u;
const LB_STALLED: u32 = 2u;

// One per chunk dispatch; written once when the plan is compiled (plan.rs `ScanParams`).
struct ScanParams {
    len: u32,            // elements in this chunk
    input_offset: u32,   // element offset of the chunk inside the input binding
    output_offset: u32,  // element offset of the chunk inside the output binding
    flags_offset: u32,   // element offset of the chunk inside the flags binding
    tile_base: u32,      // global id of this chunk's first tile
    ticket_base: u32,    // value of the ticket counter when this dispatch starts
    tiles: u32,          // tiles in this chunk
    mode: u32,           // MODE_INCLUSIVE or 0 (exclusive)
    live_offset: u32,    // LIVE_COUNT: element offset of the count word inside live_words
#ifdef COMPACT
    // compact/kernel.rs `CompactParams`.
    value_offset: u32,   // element offset of the chunk's values inside the values binding
    capacity: u32,       // output rows; survivors at positions >= capacity are not written
    count_offset: u32,   // element offset of the count word inside the count binding
    overflow_offset: u32,// element offset of the overflow word inside the overflow binding
    count_tile: u32,     // global id of the tile whose workgroup writes the count
    id_base: u32,        // PARTITIONS: global id of the chunk's first row
    range_offset: u32,   // PARTITIONS: element offset of the chunk's [start, end) in ranges
    has_overflow: u32,   // 1 when the overflow word is bound
#endif
}

@group(0) @binding(0) var<uniform> params: ScanParams;
// Each stream is bound twice over the same bytes: as words (partial tiles, unaligned offsets)
// and as vec4 (full tiles at a 4-element aligned offset).
@group(0) @binding(1) var<storage, read> input_words: array<u32>;
@group(0) @binding(2) var<storage, read> input_vec4: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> output_words: array<u32>;
#ifndef COMPACT
@group(0) @binding(4) var<storage, read_write> output_vec4: array<vec4<u32>>;
#endif
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;
#ifdef SEGMENTED
@group(0) @binding(6) var<storage, read> flag_words: array<u32>;
@group(0) @binding(7) var<storage, read> flag_vec4: array<vec4<u32>>;
#endif
#ifdef COMPACT
// Compaction: input_* are the selection flags, output_words the dense survivors.
@group(0) @binding(4) var<storage, read_write> count_words: array<u32>;
@group(0) @binding(8) var<storage, read_write> overflow_words: array<u32>;
#ifdef PARTITIONS
@group(0) @binding(6) var<storage, read> ranges: array<u32>;
#else
@group(0) @binding(6) var<storage, read> value_words: array<u32>;
@group(0) @binding(7) var<storage, read> value_vec4: array<vec4<u32>>;
#endif
#endif

#ifdef LIVE_COUNT
// The input's live count: rows at or past min(count, len) read as 0 and start no segment.
@group(0) @binding(9) var<storage, read> live_words: array<u32>;
var<private> live_len: u32;
#endif

// Slot pairs (x = segment-start flag, y = value), padded.
var<workgroup> sh_value: array<u32, PADDED_SLOTS>;
#ifdef SEGMENTED
var<workgroup> sh_flag: array<u32, PADDED_SLOTS>;
#endif
// Double-buffered Kogge-Stone scan over one pair per invocation.
var<workgroup> ks_value: array<u32, 2u * WG_SIZE>;
#ifdef SEGMENTED
var<workgroup> ks_flag: array<u32, 2u * WG_SIZE>;
#endif
// Look-back window and state (written by invocation 0 between barriers).
var<workgroup> win_state: array<u32, LOOKBACK_WINDOW>;
var<workgroup> win_value: array<u32, LOOKBACK_WINDOW>;
var<workgroup> lb_next: u32;
var<workgroup> lb_carry: u32;
var<workgroup> lb_spins: u32;
var<workgroup> lb_state: u32;
// Broadcasts.
var<workgroup> sh_ticket: u32;
var<workgroup> sh_tile_aggregate: vec2<u32>;
var<workgroup> sh_first_start: u32;
var<workgroup> sh_need_lookback: u32;
#ifdef PARTITIONS
// The chunk's candidate window [win_lo, win_hi), chunk-relative; set before any load.
var<private> win_lo: u32;
var<private> win_hi: u32;
#endif

// ---------------------------------------------------------------------------------------------
// Pairs and workgroup memory helpers.

fn combine(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x | b.x, select(a.y + b.y, b.y, b.x != 0u));
}

fn pad(slot: u32) -> u32 {
    return slot + (slot >> 5u);
}

// Whether `tile` starts a sequence, so nothing before it is summed: the first tile of the
// logical sequence, or with PARTITIONS the first tile of every chunk.
fn sequence_start(tile: u32) -> bool {
#ifdef PARTITIONS
    return tile == params.tile_base;
#else
    return tile == 0u;
#endif
}

fn store_slot(slot: u32, p: vec2<u32>) {
    sh_value[pad(slot)] = p.y;
#ifdef SEGMENTED
    sh_flag[pad(slot)] = p.x;
#endif
}

fn load_slot(slot: u32) -> vec2<u32> {
    var p = vec2<u32>(0u, sh_value[pad(slot)]);
#ifdef SEGMENTED
    p.x = sh_flag[pad(slot)];
#endif
    return p;
}

fn ks_store(index: u32, p: vec2<u32>) {
    ks_value[index] = p.y;
#ifdef SEGMENTED
    ks_flag[index] = p.x;
#endif
}

fn ks_load(index: u32) -> vec2<u32> {
    var p = vec2<u32>(0u, ks_value[index]);
#ifdef SEGMENTED
    p.x = ks_flag[index];
#endif
    return p;
}

// ---------------------------------------------------------------------------------------------
// Global memory access. `e` is the chunk-relative index of the first of four elements.

fn load_values(e: u32, vector: bool) -> vec4<u32> {
#ifdef PARTITIONS
    if e + 4u <= win_lo || e >= win_hi {
        return vec4<u32>(0u);
    }
#endif
    var v = vec4<u32>(0u);
    if vector {
        v = input_vec4[(params.input_offset + e) >> 2u];
    } else {
#unroll
        for (var c = 0u; c < 4u; c += 1u) {
            if e + c < params.len {
                v[c] = input_words[params.input_offset + e + c];
            }
        }
    }
#ifdef LIVE_COUNT
    v = select(vec4<u32>(0u), v, vec4<u32>(e) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(live_len));
#endif
#ifdef COMPACT
    // Selection flags: any nonzero word selects its row.
    v = select(vec4<u32>(0u), vec4<u32>(1u), v != vec4<u32>(0u));
#ifdef PARTITIONS
    let row = vec4<u32>(e) + vec4<u32>(0u, 1u, 2u, 3u);
    v = select(vec4<u32>(0u), v, (row >= vec4<u32>(win_lo)) & (row < vec4<u32>(win_hi)));
#endif
#endif
    return v;
}

// 1 where a segment starts. `first_tile` marks the first tile of the logical sequence, whose
// first element always starts a segment.
fn load_starts(e: u32, vector: bool, first_tile: bool) -> vec4<u32> {
#ifdef SEGMENTED
    var f = vec4<u32>(0u);
    if vector {
        f = flag_vec4[(params.flags_offset + e) >> 2u];
    } else {
#unroll
        for (var c = 0u; c < 4u; c += 1u) {
            if e + c < params.len {
                f[c] = flag_words[params.flags_offset + e + c];
            }
        }
    }
#ifdef LIVE_COUNT
    f = select(vec4<u32>(0u), f, vec4<u32>(e) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(live_len));
#endif
    var s = select(vec4<u32>(0u), vec4<u32>(1u), f != vec4<u32>(0u));
    if first_tile && e == 0u {
        s.x = 1u;
    }
    return s;
#else
    return vec4<u32>(0u);
#endif
}

#ifndef COMPACT
fn store_values(e: u32, v: vec4<u32>, vector: bool) {
    if vector {
        output_vec4[(params.output_offset + e) >> 2u] = v;
        return;
    }
#unroll
    for (var c = 0u; c < 4u; c += 1u) {
        if e + c < params.len {
            output_words[params.output_offset + e + c] = v[c];
        }
    }
}
#else
// The values of the selected rows among the four at chunk-relative `e` (others unspecified).
fn load_survivors(e: u32, selected: vec4<u32>, vector: bool) -> vec4<u32> {
#ifdef PARTITIONS
    return vec4<u32>(params.id_base + e) + vec4<u32>(0u, 1u, 2u, 3u);
#else
    if vector {
        return value_vec4[(params.value_offset + e) >> 2u];
    }
    var v = vec4<u32>(0u);
#unroll
    for (var c = 0u; c < 4u; c += 1u) {
        if selected[c] != 0u {
            v[c] = value_words[params.value_offset + e + c];
        }
    }
    return v;
#endif
}
#endif

#ifdef PARTITIONS
// The chunk's candidate rows: global ids [start, end) of its `ranges` row intersected with the
// chunk's own ids [id_base, id_base + len), as chunk-relative rows (empty when end <= start).
fn set_window() {
    let start = ranges[params.range_offset];
    let end = ranges[params.range_offset + 1u];
    let last = params.id_base + params.len;
    win_lo = clamp(start, params.id_base, last) - params.id_base;
    win_hi = max(clamp(end, params.id_base, last) - params.id_base, win_lo);
}
#endif

// Inclusive segmented scan of one vec4 (restarting at starts).
fn scan_vec4(x: vec4<u32>, s: vec4<u32>) -> vec4<u32> {
    var r = x;
    r.y = select(r.x + x.y, x.y, s.y != 0u);
    r.z = select(r.y + x.z, x.z, s.z != 0u);
    r.w = select(r.z + x.w, x.w, s.w != 0u);
    return r;
}

fn vec4_pair(r: vec4<u32>, s: vec4<u32>) -> vec2<u32> {
    return vec2<u32>(select(0u, 1u, any(s != vec4<u32>(0u))), r.w);
}

// Adds `before` (the segmented sum of everything before this vec4) to the lanes that precede
// the vec4's first segment start.
fn add_before(r: vec4<u32>, s: vec4<u32>, before: u32) -> vec4<u32> {
    let open_x = s.x == 0u;
    let open_y = open_x && s.y == 0u;
    let open_z = open_y && s.z == 0u;
    let open_w = open_z && s.w == 0u;
    let open = vec4<bool>(open_x, open_y, open_z, open_w);
    return r + select(vec4<u32>(0u), vec4<u32>(before), open);
}

// ---------------------------------------------------------------------------------------------
// Tile status.

fn publish(tile: u32, state: u32, value: u32) {
    let w = STATUS_HEADER_WORDS + 2u * tile;
    atomicMax(&status[w], (state << HALF_BITS) | (value & HALF_MASK));
    atomicMax(&status[w + 1u], (state << HALF_BITS) | (value >> HALF_BITS));
}

// (state, value); EMPTY when the two halves disagree (a publication is in flight).
fn read_status(tile: u32) -> vec2<u32> {
    let w = STATUS_HEADER_WORDS + 2u * tile;
    let lo = atomicLoad(&status[w]);
    let hi = atomicLoad(&status[w + 1u]);
    let state = lo >> HALF_BITS;
    if state != (hi >> HALF_BITS) {
        return vec2<u32>(TILE_EMPTY, 0u);
    }
    return vec2<u32>(state, (lo & HALF_MASK) | (hi << HALF_BITS));
}

// ---------------------------------------------------------------------------------------------
// Workgroup scans.

struct PairScan {
    exclusive: vec2<u32>,
    total: vec2<u32>,
}

// Exclusive scan of one pair per invocation, in invocation order (Kogge-Stone, one barrier per
// step). Callers separate two calls by at least one barrier.
fn workgroup_scan(tid: u32, p: vec2<u32>) -> PairScan {
    var acc = p;
    var buf = 0u;
    ks_store(tid, acc);
    workgroupBarrier();
    for (var d = 1u; d < WG_SIZE; d <<= 1u) {
        if tid >= d {
            acc = combine(ks_load(buf * WG_SIZE + tid - d), acc);
        }
        buf ^= 1u;
        ks_store(buf * WG_SIZE + tid, acc);
        workgroupBarrier();
    }
    var r: PairScan;
    r.exclusive = vec2<u32>(0u);
    if tid > 0u {
        r.exclusive = ks_load(buf * WG_SIZE + tid - 1u);
    }
    r.total = ks_load(buf * WG_SIZE + WG_SIZE - 1u);
    return r;
}

// In: pairs[i] = aggregate of slot i * WG_SIZE + tid. Out: the exclusive prefix of that slot
// within the tile; sh_tile_aggregate = the tile's aggregate. Workgroup memory only: the slots
// are transposed so that each invocation folds VEC4_PER_THREAD consecutive slots, then one
// workgroup scan over invocations.
fn slot_prefixes_shared(tid: u32, pairs: ptr<function, array<vec2<u32>, VEC4_PER_THREAD>>) {
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        store_slot(i * WG_SIZE + tid, (*pairs)[i]);
    }
    workgroupBarrier();
    var run = vec2<u32>(0u);
    var before: array<vec2<u32>, VEC4_PER_THREAD>;
#unroll
    for (var k = 0u; k < VEC4_PER_THREAD; k += 1u) {
        before[k] = run;
        run = combine(run, load_slot(tid * VEC4_PER_THREAD + k));
    }
    let scanned = workgroup_scan(tid, run);
#unroll
    for (var k = 0u; k < VEC4_PER_THREAD; k += 1u) {
        store_slot(tid * VEC4_PER_THREAD + k, combine(scanned.exclusive, before[k]));
    }
    if tid == 0u {
        sh_tile_aggregate = scanned.total;
    }
    workgroupBarrier();
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        (*pairs)[i] = load_slot(i * WG_SIZE + tid);
    }
}

#ifdef SUBGROUPS
// Inclusive segmented scan across the subgroup, any subgroup size: a plain inclusive sum, minus
// the plain sum before the last segment start at or before this lane.
fn subgroup_scan(p: vec2<u32>, lane: u32) -> vec2<u32> {
#ifdef SEGMENTED
    let sum = subgroupInclusiveAdd(p.y);
    // 1 + the highest lane <= this one whose pair holds a segment start (0: none). The ballot
    // is four words wide, enough for any subgroup size WGSL allows (<= 128).
    let ballot = subgroupBallot(p.x != 0u);
    var last = 0u;
#unroll
    for (var w = 0u; w < 4u; w += 1u) {
        let first_lane = 32u * w;
        if first_lane <= lane {
            var bits = ballot[w];
            if lane - first_lane < 31u {
                bits &= (2u << (lane - first_lane)) - 1u;
            }
            if bits != 0u {
                last = first_lane + firstLeadingBit(bits) + 1u;
            }
        }
    }
    let base = subgroupShuffle(sum - p.y, max(last, 1u) - 1u);
    return select(vec2<u32>(0u, sum), vec2<u32>(1u, sum - base), last != 0u);
#else
    return vec2<u32>(0u, subgroupInclusiveAdd(p.y));
#endif
}

// Exclusive counterpart of subgroup_scan, given the lane's own pair `p` and its inclusive `incl`.
fn subgroup_exclusive(p: vec2<u32>, incl: vec2<u32>, lane: u32) -> vec2<u32> {
#ifdef SEGMENTED
    let up = subgroupShuffleUp(incl, 1u);
    return select(up, vec2<u32>(0u), lane == 0u);
#else
    return vec2<u32>(0u, incl.y - p.y);
#endif
}

// Same contract as slot_prefixes_shared, with subgroup scans: one subgroup scan per slot row,
// the subgroup aggregates (VEC4_PER_THREAD * sg_count of them, in tile order) scanned by the
// first subgroup. Requires full subgroups and tid = sg_id * sg_size + lane.
fn slot_prefixes_subgroup(
    lane: u32,
    sg_size: u32,
    sg_id: u32,
    sg_count: u32,
    pairs: ptr<function, array<vec2<u32>, VEC4_PER_THREAD>>,
) {
    var lane_before: array<vec2<u32>, VEC4_PER_THREAD>;
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        let incl = subgroup_scan((*pairs)[i], lane);
        lane_before[i] = subgroup_exclusive((*pairs)[i], incl, lane);
        if lane == sg_size - 1u {
            store_slot(i * sg_count + sg_id, incl);
        }
    }
    workgroupBarrier();
    let parts = VEC4_PER_THREAD * sg_count;
    if sg_id == 0u {
        var carry = vec2<u32>(0u);
        for (var base = 0u; base < parts; base += sg_size) {
            let index = base + lane;
            var p = vec2<u32>(0u);
            if index < parts {
                p = load_slot(index);
            }
            let incl = subgroup_scan(p, lane);
            let ex = subgroup_exclusive(p, incl, lane);
            if index < parts {
                store_slot(index, combine(carry, ex));
            }
            carry = combine(carry, subgroupShuffle(incl, sg_size - 1u));
        }
        if lane == 0u {
            sh_tile_aggregate = carry;
        }
    }
    workgroupBarrier();
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        (*pairs)[i] = combine(load_slot(i * sg_count + sg_id), lane_before[i]);
    }
}
#endif

// ---------------------------------------------------------------------------------------------
// Decoupled fallback: reduce a predecessor tile of this chunk from its input.

fn reduce_tile(lid: u32, tile: u32) -> vec2<u32> {
    let tile_start = (tile - params.tile_base) * TILE_ELEMS;
    let full = params.len - tile_start >= TILE_ELEMS;
    let vector_in = full && (params.input_offset & 3u) == 0u;
    let vector_flags = full && (params.flags_offset & 3u) == 0u;
    // Blocked: invocation lid folds its VEC4_PER_THREAD consecutive slots in order (this path is
    // rare, so coalescing matters less than reusing the ordered workgroup scan).
    var run = vec2<u32>(0u);
#unroll
    for (var k = 0u; k < VEC4_PER_THREAD; k += 1u) {
        let e = tile_start + 4u * (lid * VEC4_PER_THREAD + k);
        let x = load_values(e, vector_in);
        let s = load_starts(e, vector_flags, sequence_start(tile));
        run = combine(run, vec4_pair(scan_vec4(x, s), s));
    }
    return workgroup_scan(lid, run).total;
}

// ---------------------------------------------------------------------------------------------
// Look-back. Called in uniform control flow after invocation 0 set lb_next = tile - 1,
// lb_carry = 0, lb_spins = 0 and a barrier. Returns the segmented sum of all elements before
// this tile back to the last segment start (the carry), to every invocation.

fn look_back(lid: u32) -> u32 {
    loop {
        if lid < LOOKBACK_WINDOW {
            // lb_next was written by invocation 0 before the barrier that ended the last step.
            let next = lb_next;
            // Nothing precedes tile 0: a window reaching past it reads an empty inclusive prefix.
            var st = vec2<u32>(TILE_INCLUSIVE, 0u);
            if lid <= next {
                let t = next - lid;
                st = read_status(t);
#ifdef FORCE_FALLBACK
                if t >= params.tile_base {
                    st = vec2<u32>(TILE_EMPTY, 0u);
                }
#endif
            }
            win_state[lid] = st.x;
            win_value[lid] = st.y;
        }
        workgroupBarrier();
        if lid == 0u {
            var carry = lb_carry;
            var consumed = 0u;
            var done = false;
            for (var k = 0u; k < LOOKBACK_WINDOW; k += 1u) {
                let state = win_state[k];
                if state == TILE_EMPTY {
                    break;
                }
                carry += win_value[k];
                consumed += 1u;
                if state == TILE_INCLUSIVE {
                    done = true;
                    break;
                }
            }
            lb_carry = carry;
            if done {
                lb_state = LB_DONE;
            } else if consumed > 0u {
                lb_next -= consumed;
                lb_spins = 0u;
                lb_state = LB_CONTINUE;
            } else {
                lb_spins += 1u;
                // Tiles of earlier chunks are complete; they are never recomputed here.
                if lb_spins >= SPIN_LIMIT && lb_next >= params.tile_base {
                    lb_spins = 0u;
                    lb_state = LB_STALLED;
                } else {
                    lb_state = LB_CONTINUE;
                }
            }
        }
        let state = workgroupUniformLoad(&lb_state);
        if state == LB_DONE {
            break;
        }
        if state == LB_STALLED && recount_stalled(lid) {
            break;
        }
    }
    return workgroupUniformLoad(&lb_carry);
}

// The decoupled fallback of both look-backs, in uniform control flow: the whole workgroup
// reduces the stalled predecessor lb_next from its input, publishes that (it helps other
// waiters), folds it into lb_carry and moves lb_next past it. Returns whether the carry is
// complete (the recounted tile closed a segment or started the sequence).
fn recount_stalled(lid: u32) -> bool {
    let stalled = workgroupUniformLoad(&lb_next);
    let aggregate = reduce_tile(lid, stalled);
    if lid == 0u {
        let closed = aggregate.x != 0u || sequence_start(stalled);
        publish(stalled, select(TILE_AGGREGATE, TILE_INCLUSIVE, closed), aggregate.y);
        lb_carry += aggregate.y;
        if closed {
            lb_state = LB_DONE;
        } else {
            lb_next = stalled - 1u;
            lb_state = LB_CONTINUE;
        }
    }
    return workgroupUniformLoad(&lb_state) == LB_DONE;
}

#ifdef SUBGROUP_LOOKBACK
// Index of the lowest set bit of a ballot (128 when none is set).
fn first_lane(ballot: vec4<u32>) -> u32 {
    for (var w = 0u; w < 4u; w += 1u) {
        if ballot[w] != 0u {
            return 32u * w + firstTrailingBit(ballot[w]);
        }
    }
    return 128u;
}

fn ballot_bit(ballot: vec4<u32>, lane: u32) -> bool {
    return ((ballot[lane >> 5u] >> (lane & 31u)) & 1u) != 0u;
}

// Same contract as look_back, walked by subgroup 0 alone: lane i reads predecessor
// lb_next - i, a ballot finds the nearest one that is not a plain aggregate and a subgroup sum
// folds the aggregates before it, so a step costs one status round trip and no workgroup
// barrier (look_back pays two barriers and a serial fold per step, and on an H200 the
// look-back, not memory, bounded the scan). The workgroup joins only to learn the outcome and
// for the decoupled fallback, which is unchanged.
fn look_back_subgroup(lid: u32, lane: u32, sg_id: u32) -> u32 {
    loop {
        if sg_id == 0u {
            var next = lb_next;
            var carry = lb_carry;
            var spins = lb_spins;
            var state = LB_CONTINUE;
            let present = subgroupBallot(true);
            let lanes = countOneBits(present.x) + countOneBits(present.y) + countOneBits(present.z)
                + countOneBits(present.w);
            loop {
                // Nothing precedes tile 0: lanes reaching past it read an empty inclusive prefix.
                var st = vec2<u32>(TILE_INCLUSIVE, 0u);
                if lane <= next {
                    let t = next - lane;
                    st = read_status(t);
#ifdef FORCE_FALLBACK
                    if t >= params.tile_base {
                        st = vec2<u32>(TILE_EMPTY, 0u);
                    }
#endif
                }
                let stops = subgroupBallot(st.x != TILE_AGGREGATE);
                let inclusive = subgroupBallot(st.x == TILE_INCLUSIVE);
                let first = min(first_lane(stops), lanes);
                let closed = first < lanes && ballot_bit(inclusive, first);
                let take = lane < first || (closed && lane == first);
                carry += subgroupAdd(select(0u, st.y, take));
                if closed {
                    state = LB_DONE;
                    break;
                }
                if first > 0u {
                    next -= first;
                    spins = 0u;
                    continue;
                }
                spins += 1u;
                // Tiles of earlier chunks are complete; they are never recomputed here.
                if spins >= SPIN_LIMIT && next >= params.tile_base {
                    spins = 0u;
                    state = LB_STALLED;
                    break;
                }
            }
            if lane == 0u {
                lb_next = next;
                lb_carry = carry;
                lb_spins = spins;
                lb_state = state;
            }
        }
        let state = workgroupUniformLoad(&lb_state);
        if state == LB_DONE {
            break;
        }
        // LB_STALLED: the whole workgroup recounts the stalled predecessor.
        if recount_stalled(lid) {
            break;
        }
    }
    return workgroupUniformLoad(&lb_carry);
}
#endif

// ---------------------------------------------------------------------------------------------
// Entry points.

// Zeroes every word of the status binding (ticket counter and tile states). 1-D grid-stride
// loop, so any dispatch width works.
@compute @workgroup_size(WG_SIZE)
fn clear_status(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let words = arrayLength(&status);
    let stride = groups.x * WG_SIZE;
    for (var i = gid.x; i < words; i += stride) {
        atomicStore(&status[i], 0u);
    }
}

// Scans one chunk. Dispatch at least params.tiles workgroups in any shape (x * y * z); the
// tile comes from the ticket counter, not from the workgroup id.
@compute @workgroup_size(WG_SIZE)
fn scan_tiles(
    @builtin(local_invocation_index) lid: u32,
#ifdef SUBGROUP_BUILTINS
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(num_subgroups) sg_count: u32,
#endif
) {
    if lid == 0u {
        sh_ticket = atomicAdd(&status[0], 1u);
    }
    let ticket = workgroupUniformLoad(&sh_ticket);
    var local_tile = ticket - params.ticket_base;
    if local_tile >= params.tiles {
        return;
    }
#ifdef REVERSE_TILES
    // Testing: tiles start last-first, the schedule that starves a look-back without fallback.
    local_tile = params.tiles - 1u - local_tile;
#endif
    let tile = params.tile_base + local_tile;
    let tile_start = local_tile * TILE_ELEMS;
    let full = params.len - tile_start >= TILE_ELEMS;
    let vector_in = full && (params.input_offset & 3u) == 0u;
    let vector_out = full && (params.output_offset & 3u) == 0u;
    let vector_flags = full && (params.flags_offset & 3u) == 0u;
#ifdef PARTITIONS
    set_window();
#endif
#ifdef LIVE_COUNT
    live_len = min(live_words[params.live_offset], params.len);
#endif

    // The invocation's position in tile order. With full subgroups it follows the subgroup
    // layout, so subgroup scans run in tile order whatever the driver's lane mapping.
    var tid = lid;
    var use_subgroups = false;
#ifdef SUBGROUPS
    if sg_count * sg_size == WG_SIZE {
        use_subgroups = true;
        tid = sg_id * sg_size + sg_lane;
    }
#endif

    var x: array<vec4<u32>, VEC4_PER_THREAD>;
    var s: array<vec4<u32>, VEC4_PER_THREAD>;
    var r: array<vec4<u32>, VEC4_PER_THREAD>;
    var pairs: array<vec2<u32>, VEC4_PER_THREAD>;
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        let e = tile_start + 4u * (i * WG_SIZE + tid);
        x[i] = load_values(e, vector_in);
        s[i] = load_starts(e, vector_flags, sequence_start(tile));
        r[i] = scan_vec4(x[i], s[i]);
        pairs[i] = vec4_pair(r[i], s[i]);
    }
    if tid == 0u {
        sh_first_start = s[0].x;
    }

#ifdef SUBGROUPS
    if use_subgroups {
        slot_prefixes_subgroup(sg_lane, sg_size, sg_id, sg_count, &pairs);
    } else {
        slot_prefixes_shared(tid, &pairs);
    }
#else
    slot_prefixes_shared(tid, &pairs);
#endif

    // Publish the aggregate (or the inclusive prefix when it needs no predecessor) and decide
    // whether a look-back is needed: not when the tile's first element starts a segment.
    if lid == 0u {
        let aggregate = sh_tile_aggregate;
        let closed = aggregate.x != 0u || sequence_start(tile);
        publish(tile, select(TILE_AGGREGATE, TILE_INCLUSIVE, closed), aggregate.y);
        let first_start = sh_first_start != 0u || sequence_start(tile);
        sh_need_lookback = select(1u, 0u, first_start);
        lb_next = tile - 1u;
        lb_carry = 0u;
        lb_spins = 0u;
    }
#ifdef GATHER_EARLY
    // Issued before the look-back, so their latency overlaps its reads.
    let vector_values = full && (params.value_offset & 3u) == 0u;
    var sv: array<vec4<u32>, VEC4_PER_THREAD>;
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        if any(x[i] != vec4<u32>(0u)) {
            sv[i] = load_survivors(tile_start + 4u * (i * WG_SIZE + tid), x[i], vector_values);
        }
    }
#endif
    var carry = 0u;
    if workgroupUniformLoad(&sh_need_lookback) != 0u {
#ifdef SUBGROUP_LOOKBACK
        carry = look_back_subgroup(lid, sg_lane, sg_id);
#else
        carry = look_back(lid);
#endif
    }
    if lid == 0u {
        let aggregate = sh_tile_aggregate;
        if aggregate.x == 0u && !sequence_start(tile) {
            publish(tile, TILE_INCLUSIVE, carry + aggregate.y);
        }
    }

#ifdef COMPACT
    // Survivors' values are loaded here, after the look-back, not with the flags: loading them
    // early cost registers and occupancy (H200, 2^28: 1.145 against 0.908 ms at 1 % selected).
    // GATHER_EARLY loads them before the look-back instead. Keep this block's shape: declaring
    // `sv` before the look-back for every variant made the NVIDIA default 20 % slower at 1 %
    // selected (1.02 against 0.855 ms, 2026-12-01).
#ifndef GATHER_EARLY
    let vector_values = full && (params.value_offset & 3u) == 0u;
#ifdef GATHER_FIRST
    var sv: array<vec4<u32>, VEC4_PER_THREAD>;
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        if any(x[i] != vec4<u32>(0u)) {
            sv[i] = load_survivors(tile_start + 4u * (i * WG_SIZE + tid), x[i], vector_values);
        }
    }
#endif
#endif
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        // x[i] holds 0/1 selections; r[i] their inclusive sums within the vec4.
        if any(x[i] != vec4<u32>(0u)) {
            let position = r[i] - x[i] + vec4<u32>(carry + pairs[i].y);
#ifdef GATHER_FIRST
            let v = sv[i];
#else
            let v = load_survivors(tile_start + 4u * (i * WG_SIZE + tid), x[i], vector_values);
#endif
#unroll
            for (var c = 0u; c < 4u; c += 1u) {
                if x[i][c] != 0u && position[c] < params.capacity {
                    output_words[params.output_offset + position[c]] = v[c];
                }
            }
        }
    }
    if lid == 0u && tile == params.count_tile {
        let count = carry + sh_tile_aggregate.y;
        count_words[params.count_offset] = count;
        if params.has_overflow != 0u {
            overflow_words[params.overflow_offset] = select(0u, 1u, count > params.capacity);
        }
        atomicStore(&status[1], count);
    }
#else
    let inclusive = (params.mode & MODE_INCLUSIVE) != 0u;
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        let e = tile_start + 4u * (i * WG_SIZE + tid);
        let prefix = pairs[i];
        let before = select(carry + prefix.y, prefix.y, prefix.x != 0u);
        var out = add_before(r[i], s[i], before);
        if !inclusive {
            out -= x[i];
        }
        store_values(e, out, vector_out);
    }
#endif
}
