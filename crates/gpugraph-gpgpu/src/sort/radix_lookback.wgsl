// Radix sort, stage 2, the chained scan across tiles (included by radix_pass.wgsl, whose
// workgroup array sh_count it shares): `publish` and the per-digit look-back with its
// decoupled fallback (step 3 of radix_pass.wgsl's list), on the tile status protocol of
// shared/tile_status.wgsl (states, the one-word encoding, the nearest-first fold).
//
// Status word (pass, tile, digit): pack_status(state, count), a 2-bit state above a 30-bit
// count (plan.rs).
#include "shared/tile_status.wgsl"

// The independent walk already spun WALK_SPINS reads without progress before the vote, so a
// vote with a waiting digit falls back even when another digit progressed in the round.
#ifdef INDEPENDENT_LOOKBACK
const RETRY_ON_PROGRESS: bool = false;
#else
const RETRY_ON_PROGRESS: bool = true;
#endif

var<workgroup> lb_pending: atomic<u32>;
var<workgroup> lb_progress: atomic<u32>;
var<workgroup> lb_stalled: atomic<u32>;
var<workgroup> lb_spins: u32;
var<workgroup> lb_decision: u32;
var<workgroup> lb_target: u32;

fn status_index(tile: u32, d: u32) -> u32 {
    return params.status_word + tile * RADIX + d;
}

// atomicMax (shared/tile_status.wgsl): a late fallback publication never overwrites an
// inclusive prefix, and a repeated one is a no-op.
fn publish(tile: u32, d: u32, state: u32, count: u32) {
    atomicMax(&scratch[status_index(tile, d)], pack_status(state, count));
}

// Count of digit t among the keys of tile `tile` (fallback). Uniform control flow.
fn count_tile_digit(t: u32, tile: u32) -> u32 {
    atomicStore(&sh_count[t], 0u);
    workgroupBarrier();
    let start = tile * TILE_ROWS;
    let end = min(start + TILE_ROWS, params.rows);
    for (var e = start + 4u * t; e < end; e += 4u * WG_SIZE) {
        let k = load_key4(e, end);
#unroll
        for (var c = 0u; c < 4u; c += 1u) {
            if e + c < end {
                atomicAdd(&sh_count[digit_of(k[c], params.shift)], 1u);
            }
        }
    }
    workgroupBarrier();
    let n = atomicLoad(&sh_count[t]);
    workgroupBarrier();
    return n;
}

// Rows of digit t in all tiles before `tile`; publishes the tile's INCLUSIVE prefix of digit
// t (prefix + count) the moment it is known, since successors wait on it. Uniform control flow.
//
// The walk over predecessors is what chains tiles together: the inclusive prefix advances one
// dependent load round trip per hop. Each invocation therefore reads LOOKBACK_WINDOW
// predecessors with independent loads per hop, folding them nearest first up to the first
// that has published nothing (stop, retry) or its inclusive prefix (done).
//
// A round: every invocation walks on its own, without barriers, until it is done or has read
// WALK_SPINS windows in a row without progress; then one barrier and a vote. The vote falls
// back (recounts the latest stalled predecessor) after ROUND_SPINS rounds in a row without
// progress. The independent look-back (INDEPENDENT_LOOKBACK) spins in the walk
// (WALK_SPINS = spin_limit, ROUND_SPINS = 1), so a digit never waits on a slower digit's
// barrier; the coupled one makes each read a round (WALK_SPINS = 1, ROUND_SPINS = spin_limit).
fn look_back(t: u32, tile: u32, count: u32) -> u32 {
    var prefix = 0u;
    // The next predecessor to read is next - 1.
    var next = tile;
    var done = tile == 0u;
    loop {
        let was_done = done;
        var progressed = false;
        var idle = 0u;
        loop {
            if done || idle >= WALK_SPINS {
                break;
            }
            // Straight-line under `unroll` (no break), so the window stays in registers.
            var window: array<u32, LOOKBACK_WINDOW>;
            let avail = min(next, LOOKBACK_WINDOW);
#unroll
            for (var i = 0u; i < LOOKBACK_WINDOW; i += 1u) {
                if i < avail {
                    window[i] = atomicLoad(&scratch[status_index(next - 1u - i, t)]);
                }
            }
            var consumed = 0u;
            var walking = true;
#unroll
            for (var i = 0u; i < LOOKBACK_WINDOW; i += 1u) {
                var s = window[i];
#ifdef FORCE_FALLBACK
                s = pack_status(TILE_EMPTY, 0u);
#endif
                // Fold nearest first; stop at the first unpublished or inclusive entry.
                if walking && i < avail {
                    let step = fold_status(unpack_status(s), &prefix);
                    consumed += select(1u, 0u, step == LB_STALLED);
                    done = done || step == LB_DONE;
                    walking = step == LB_CONTINUE;
                }
            }
            next -= consumed;
            done = done || next == 0u;
            if consumed == 0u {
                idle += 1u;
            } else {
                idle = 0u;
                progressed = true;
            }
        }
        if done && !was_done {
            publish(tile, t, TILE_INCLUSIVE, prefix + count);
        }
        if progressed {
            atomicOr(&lb_progress, 1u);
        }
        if !done {
            atomicAdd(&lb_pending, 1u);
            atomicMax(&lb_stalled, next);
        }
        workgroupBarrier();
        if t == 0u {
            let pending = atomicLoad(&lb_pending);
            let progress = atomicLoad(&lb_progress);
            let stalled = atomicLoad(&lb_stalled);
            atomicStore(&lb_pending, 0u);
            atomicStore(&lb_progress, 0u);
            atomicStore(&lb_stalled, 0u);
            if pending == 0u {
                lb_decision = LB_DONE;
            } else if progress != 0u && RETRY_ON_PROGRESS {
                lb_spins = 0u;
                lb_decision = LB_CONTINUE;
            } else {
                lb_spins += 1u;
                if lb_spins >= ROUND_SPINS {
                    lb_spins = 0u;
                    lb_target = stalled - 1u;
                    lb_decision = LB_STALLED;
                } else {
                    lb_decision = LB_CONTINUE;
                }
            }
        }
        let decision = workgroupUniformLoad(&lb_decision);
        if decision == LB_DONE {
            break;
        }
        if decision == LB_STALLED {
            let stalled_tile = workgroupUniformLoad(&lb_target);
            let n = count_tile_digit(t, stalled_tile);
            // Help the other waiters; tile 0's count is its inclusive prefix.
            publish(stalled_tile, t, published_state(stalled_tile == 0u), n);
            if !done && next - 1u == stalled_tile {
                prefix += n;
                next -= 1u;
                if next == 0u {
                    done = true;
                    publish(tile, t, TILE_INCLUSIVE, prefix + count);
                }
            }
        }
    }
    return prefix;
}
