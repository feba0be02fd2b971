// The chained scans' decoupled look-back with decoupled fallback (scan/scan.wgsl,
// compact/compact.wgsl, through shared/chained_scan.wgsl), on the tile status protocol of
// shared/tile_status.wgsl (states, the two-word encoding, the nearest-first fold). The
// including kernel supplies the `status` binding (array<atomic<u32>>), `params.tile_base`
// (global id of the dispatch's first tile), `fn reduce_tile(lid: u32, tile: u32) -> vec2<u32>`
// (a predecessor's aggregate pair, recounted from its input) and
// `fn sequence_start(tile: u32) -> bool`, and the constants LOOKBACK_WINDOW and SPIN_LIMIT;
// FORCE_FALLBACK and SUBGROUP_LOOKBACK select variants. Values are (segment-start flag, sum)
// pairs combined by `combine` (shared/workgroup_scan.wgsl).
#include "shared/tile_status.wgsl"

// status[0] is the ticket counter; word 1 receives a count (the compaction's); words 2..3
// are reserved; tile t uses words
// STATUS_HEADER_WORDS + 2t and STATUS_HEADER_WORDS + 2t + 1. Keep in sync with plan.rs.
const STATUS_HEADER_WORDS: u32 = 4u;

// Look-back window and state (written by invocation 0 between barriers).
var<workgroup> win_state: array<u32, LOOKBACK_WINDOW>;
var<workgroup> win_value: array<u32, LOOKBACK_WINDOW>;
var<workgroup> lb_next: u32;
var<workgroup> lb_carry: u32;
var<workgroup> lb_spins: u32;
var<workgroup> lb_state: u32;

// ---------------------------------------------------------------------------------------------
// Tile status.

// Both words by atomicMax: a late AGGREGATE (a fallback's) never overwrites an INCLUSIVE.
fn publish(tile: u32, state: u32, value: u32) {
    let w = STATUS_HEADER_WORDS + 2u * tile;
    let words = split_status(state, value);
    atomicMax(&status[w], words.x);
    atomicMax(&status[w + 1u], words.y);
}

// (state, value); EMPTY when the two halves disagree (a publication is in flight).
fn read_status(tile: u32) -> vec2<u32> {
    let w = STATUS_HEADER_WORDS + 2u * tile;
    return join_status(atomicLoad(&status[w]), atomicLoad(&status[w + 1u]));
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
                let step = fold_status(vec2<u32>(win_state[k], win_value[k]), &carry);
                if step == LB_STALLED {
                    break;
                }
                consumed += 1u;
                if step == LB_DONE {
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
        publish(stalled, published_state(closed), aggregate.y);
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

