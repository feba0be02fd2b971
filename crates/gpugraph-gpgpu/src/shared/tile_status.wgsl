// Tile status: the publication protocol of the decoupled look-back (Merrill & Garland's
// single-pass scan, with Smith, Levien & Owens' decoupled fallback), shared by the chained
// scans (shared/chained_lookback.wgsl: scan, compaction) and the radix sort's per-digit
// look-back (sort/radix_lookback.wgsl). No bindings and no requirements: each includer keeps
// the words in its own status binding and walks them its own way (one value per workgroup,
// or one per digit and invocation); what they share is this protocol.
//
// Each tile's entry only ever moves EMPTY -> AGGREGATE (its own sum) -> INCLUSIVE (the sum of
// everything up to and including it), and the value attached to each state is unique (a
// function of the input). Writers therefore publish with atomicMax on words whose state sits
// in the high bits: a late AGGREGATE (a fallback's recount) can never overwrite an INCLUSIVE,
// and a repeated publication is a no-op. Readers walk predecessors nearest first and fold
// them with `fold_status` until one has published nothing (stall: retry, or after a spin
// limit recount it from its input) or its INCLUSIVE prefix (done).

const TILE_EMPTY: u32 = 0u;
const TILE_AGGREGATE: u32 = 1u;
const TILE_INCLUSIVE: u32 = 2u;

// Outcomes of a look-back step (fold_status), and of a workgroup's look-back round.
const LB_CONTINUE: u32 = 0u;
const LB_DONE: u32 = 1u;
const LB_STALLED: u32 = 2u;

// The state a tile publishes its own sum with: INCLUSIVE when nothing before it counts (the
// first tile, a segment start inside the tile), else AGGREGATE. Also the state of a
// fallback's recount of a predecessor.
fn published_state(closed: bool) -> u32 {
    return select(TILE_AGGREGATE, TILE_INCLUSIVE, closed);
}

// Folds predecessor entry `st` = (state, value), walked nearest first, into `carry`:
// LB_STALLED (published nothing; `carry` unchanged, the walk stops and retries here),
// LB_DONE (an inclusive prefix: `carry` is complete) or LB_CONTINUE (an aggregate: go on).
fn fold_status(st: vec2<u32>, carry: ptr<function, u32>) -> u32 {
    if st.x == TILE_EMPTY {
        return LB_STALLED;
    }
    *carry += st.y;
    return select(LB_CONTINUE, LB_DONE, st.x == TILE_INCLUSIVE);
}

// ---------------------------------------------------------------------------------------------
// One-word encoding, for values below 2^30 (the sort's per-digit counts: one atomic per
// entry): state << 30 | value.
const PACKED_STATE_SHIFT: u32 = 30u;
const PACKED_VALUE_MASK: u32 = (1u << PACKED_STATE_SHIFT) - 1u;

fn pack_status(state: u32, value: u32) -> u32 {
    return (state << PACKED_STATE_SHIFT) | value;
}

// (state, value) of a packed word.
fn unpack_status(word: u32) -> vec2<u32> {
    return vec2<u32>(word >> PACKED_STATE_SHIFT, word & PACKED_VALUE_MASK);
}

// ---------------------------------------------------------------------------------------------
// Two-word encoding, for full 32-bit values (the scans' sums).
//
// WGSL atomics are relaxed only and 32 bits wide, so a (state, 32-bit value) pair cannot be
// published with one atomic store, and a separate flag word could be observed before the value
// it guards. Each tile therefore owns two words, each holding a 16-bit half of the value and a
// copy of the state:
//     word 0 = state << 16 | (value & 0xffff)
//     word 1 = state << 16 | (value >> 16)
// A reader loads both words and accepts them only when both carry the same state. Since the
// value of each state is unique, two words with equal states hold two halves of the same
// publication: the pair can never be torn.
const HALF_BITS: u32 = 16u;
const HALF_MASK: u32 = 0xffffu;

// The two words publishing (state, value), each stored by atomicMax.
fn split_status(state: u32, value: u32) -> vec2<u32> {
    let tag = state << HALF_BITS;
    return vec2<u32>(tag | (value & HALF_MASK), tag | (value >> HALF_BITS));
}

// (state, value) of two loaded words; EMPTY when their states disagree (a publication is in
// flight).
fn join_status(lo: u32, hi: u32) -> vec2<u32> {
    let state = lo >> HALF_BITS;
    if state != (hi >> HALF_BITS) {
        return vec2<u32>(TILE_EMPTY, 0u);
    }
    return vec2<u32>(state, (lo & HALF_MASK) | (hi << HALF_BITS));
}
