// Radix sort, stage 2 (one dispatch per digit pass): a one-sweep pass. Each workgroup takes a
// tile by ticket, ranks its keys stably by the pass's digit, learns where each digit's run of
// this tile starts in the output through a chained scan with decoupled look-back over the
// tiles' digit counts, and scatters keys (and values) there.
// CPU twin: cpu::radix_pass.
//
// `#ifdef` names (source.rs): LOAD_VALUES (values are read from src_values), SOURCE_ROWS
// (values are the keys' source rows, generated), SUBGROUPS (the subgroup builtins; set when the
// device has subgroups and SUBGROUP_SCANS or MULTISPLIT is asked for), SUBGROUP_SCANS
// (workgroup scans use subgroup operations; radix_common.wgsl), MULTISPLIT (subgroup ranking),
// SPLIT_APART (its counters in their own array) and SH_ATOMIC (they share `sh`, made atomic),
// WIDE_BALLOTS (testing: 128-bit peer masks on every subgroup size),
// INDEPENDENT_LOOKBACK, LOOKBACK_FIRST (look back before ranking), FORCE_FALLBACK and
// REVERSE_TILES (testing).
//
// Steps of one workgroup (tile of TILE_ROWS keys, each invocation holds KPT of them in
// registers: rows t*KPT .. t*KPT+KPT-1, "blocked", or with multisplit striped over the lanes
// of a subgroup's contiguous run of rows; either way the processing order is tile order):
//  1. Count the tile's digits in workgroup memory and publish them at once (state AGGREGATE;
//     tile 0 publishes INCLUSIVE since nothing precedes it).
//  2. Rank stably. MULTISPLIT (rank_split) where the subgroups fit: ballots match digit peers
//     inside a subgroup, per-subgroup digit counters and one scan over subgroups per digit
//     give the rank. Otherwise (rank_tile) two 4-bit counting sorts (low then high half of
//     the digit), each with 16 private counters per invocation, scanned digit-major,
//     invocation-minor, in workgroup memory only (runs on every adapter).
//  3. Look back (invocation d owns digit d): add predecessors' published counts until one
//     publishes its INCLUSIVE prefix, then publish this tile's. With INDEPENDENT_LOOKBACK each
//     invocation walks on its own (no barrier) until done or WALK_SPINS fruitless reads;
//     otherwise every read is a workgroup round. When the workgroup votes that a digit is
//     stuck (after ROUND_SPINS fruitless rounds), it counts the latest stalled predecessor's
//     digits itself from its keys (decoupled fallback; Smith, Levien & Owens 2025) and
//     publishes them. A device that never schedules a predecessor therefore cannot hang this
//     workgroup: at worst it recounts every predecessor back to tile 0.
//  4. Scatter: keys go through workgroup memory into rank order and
//     each invocation writes rows j*WG_SIZE + t (runs of equal digits are contiguous in the
//     output), then values the same way. SCATTER_DIRECT: each invocation stores its own keys
//     (and values) from registers at their digit's base + rank, with no reorder.
// KEY_CODE (radix_common.wgsl): the dispatch may encode keys on load (first pass: the
// caller's keys) and decode on store (last pass). WORKGROUP_TILES: the tile is the workgroup
// id instead of a ticket. OVERLAP_LOOKBACK (only with the reorder scatter and the look-back
// after ranking): keys are staged in rank order and values loaded before the look-back.
// `publish` and the look-back (step 3) are radix_lookback.wgsl, on shared/tile_status.wgsl.
// The header (source.rs) gives KPT = KEYS_PER_THREAD and KPT4 = KPT / 4 (vec4 groups of a
// thread's keys, blocked layout), bounds of `#unroll` loops.
#include "shared/dispatch.wgsl"
#include "sort/radix_common.wgsl"
#include "sort/radix_lookback.wgsl"
// 16 counters per invocation, packed two 16-bit halves per word: digit n and n + 8 share word
// (n, t) = n * WG_SIZE + t. They live in `sh`, whose size SHUFFLE_WORDS (header) is
// max(TILE_ROWS, 8 * WG_SIZE).

@group(0) @binding(4) var<storage, read_write> dst_keys: array<u32>;
#ifdef WRITE_VALUES
@group(0) @binding(5) var<storage, read_write> dst_values: array<u32>;
#endif
#ifdef LOAD_VALUES
@group(0) @binding(6) var<storage, read> src_values: array<u32>;
@group(0) @binding(7) var<storage, read> src_values4: array<vec4<u32>>;
#endif
#ifdef SPLIT_DST
// The output rows at or past params.split (a domain larger than one storage binding).
@group(0) @binding(8) var<storage, read_write> dst_keys_hi: array<u32>;
#ifdef WRITE_VALUES
@group(0) @binding(9) var<storage, read_write> dst_values_hi: array<u32>;
#endif
#endif

fn store_key(row: u32, key: u32) {
#ifdef SPLIT_DST
    if row >= params.split {
        dst_keys_hi[params.dst_keys_hi + row] = key;
        return;
    }
#endif
    dst_keys[params.dst_keys + row] = key;
}

#ifdef WRITE_VALUES
fn store_value(row: u32, value: u32) {
#ifdef SPLIT_DST
    if row >= params.split {
        dst_values_hi[params.dst_values_hi + row] = value;
        return;
    }
#endif
    dst_values[params.dst_values + row] = value;
}
#endif

// The ranking counters, then the rank maps, then keys and values in rank order. Atomic with
// MULTISPLIT: the multisplit counters are read-modify-written by whichever lane leads a
// digit's peers, a different lane from one key to the next with no barrier in between.
// With SPLIT_APART the counters have their own atomic array and `sh` stays plain.
#ifdef SH_ATOMIC
var<workgroup> sh: array<atomic<u32>, SHUFFLE_WORDS>;
#else
var<workgroup> sh: array<u32, SHUFFLE_WORDS>;
#endif
#ifdef SPLIT_APART
var<workgroup> sh_split: array<atomic<u32>, SPLIT_WORDS>;
#endif
// The tile's digit counts; reused by the fallback for a predecessor's counts.
var<workgroup> sh_count: array<atomic<u32>, RADIX>;
// Output row of the tile's row 0 of each digit run (may wrap; row i adds i).
var<workgroup> sh_base: array<u32, RADIX>;
var<workgroup> sh_ticket: u32;

#ifdef SH_ATOMIC
fn sh_get(i: u32) -> u32 {
    return atomicLoad(&sh[i]);
}

fn sh_set(i: u32, v: u32) {
    atomicStore(&sh[i], v);
}
#else
fn sh_get(i: u32) -> u32 {
    return sh[i];
}

fn sh_set(i: u32, v: u32) {
    sh[i] = v;
}
#endif

#ifdef MULTISPLIT
#ifdef SPLIT_APART
fn split_add(i: u32, v: u32) -> u32 {
    return atomicAdd(&sh_split[i], v);
}

fn split_get(i: u32) -> u32 {
    return atomicLoad(&sh_split[i]);
}

fn split_set(i: u32, v: u32) {
    atomicStore(&sh_split[i], v);
}
#else
fn split_add(i: u32, v: u32) -> u32 {
    return atomicAdd(&sh[i], v);
}

fn split_get(i: u32) -> u32 {
    return sh_get(i);
}

fn split_set(i: u32, v: u32) {
    sh_set(i, v);
}
#endif
#endif

// Ranks of the invocation's keys by a 4-bit digit in tile order: the number of tile keys with
// a smaller digit, or an equal digit at an earlier row. Begins and ends with `sh` free.
fn rank_nibble(t: u32, nib: ptr<function, array<u32, KPT>>) -> array<u32, KPT> {
    var ranks: array<u32, KPT>;
#unroll
    for (var n = 0u; n < 8u; n += 1u) {
        sh_set(n * WG_SIZE + t, 0u);
    }
    // The counters of column t are private to invocation t: no atomics, no barrier.
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        let d = (*nib)[k];
        let w = (d & 7u) * WG_SIZE + t;
        let half = (d >> 3u) * 16u;
        let c = sh_get(w);
        ranks[k] = (c >> half) & 0xffffu;
        sh_set(w, c + (1u << half));
    }
    workgroupBarrier();
    // Exclusive scan of the counter words in index order (raking: 8 consecutive words per
    // invocation). Halves never carry: a tile has fewer than 2^16 keys.
    var words: array<u32, 8>;
    var sum = 0u;
#unroll
    for (var i = 0u; i < 8u; i += 1u) {
        words[i] = sh_get(8u * t + i);
        sum += words[i];
    }
    let s = workgroup_scan(t, sum);
    var run = s.x;
#unroll
    for (var i = 0u; i < 8u; i += 1u) {
        sh_set(8u * t + i, run);
        run += words[i];
    }
    workgroupBarrier();
    // High-half digits (8..15) come after every low-half digit.
    let low_total = s.y & 0xffffu;
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        let d = (*nib)[k];
        let c = sh_get((d & 7u) * WG_SIZE + t);
        ranks[k] += select((c >> 16u) + low_total, c & 0xffffu, d < 8u);
    }
    workgroupBarrier();
    return ranks;
}

// Final ranks (tile order of the stable sort by this pass's digit) of the invocation's keys.
// Digits are recomputed from the keys (a shift and a mask) rather than kept in a second
// per-invocation array, which would cost KPT more registers.
fn rank_tile(t: u32, keys: ptr<function, array<u32, KPT>>) -> array<u32, KPT> {
    var nib: array<u32, KPT>;
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        nib[k] = digit_of((*keys)[k], params.shift) & 15u;
    }
    let low = rank_nibble(t, &nib);
    // Move (digit, source row in tile) into low-digit order, then rank by the high nibble.
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        sh_set(low[k], (digit_of((*keys)[k], params.shift) << 16u) | (t * KPT + k));
    }
    workgroupBarrier();
    var moved: array<u32, KPT>;
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        moved[k] = sh_get(t * KPT + k);
        nib[k] = moved[k] >> 20u;
    }
    workgroupBarrier();
    let high = rank_nibble(t, &nib);
    // Send each final rank back to its source row.
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        sh_set(moved[k] & 0xffffu, high[k]);
    }
    workgroupBarrier();
    var ranks: array<u32, KPT>;
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        ranks[k] = sh_get(t * KPT + k);
    }
    workgroupBarrier();
    return ranks;
}

#ifdef MULTISPLIT
// Multisplit ranking (warp-level, as in Onesweep): subgroup s holds tile rows
// s * sg_size * KPT .. (s + 1) * sg_size * KPT, key k of lane l at row
// s * sg_size * KPT + k * sg_size + l, so taking keys k in order and lanes in order is tile
// order. Set by the entry point when the subgroups fit (full, SPLIT_MIN_SUBGROUP..=
// SPLIT_MAX_SUBGROUP lanes); else the tile is blocked and ranked by rank_tile.
var<private> split: bool;

// Ballot mask (128 bits) of the lanes below `lane`.
fn lanes_below(lane: u32) -> vec4<u32> {
    var m = vec4<u32>(0u);
    for (var i = 0u; i < 4u; i += 1u) {
        let lo = 32u * i;
        if lane >= lo + 32u {
            m[i] = 0xffffffffu;
        } else if lane > lo {
            m[i] = (1u << (lane - lo)) - 1u;
        }
    }
    return m;
}

fn ones(m: vec4<u32>) -> u32 {
    let c = countOneBits(m);
    return c.x + c.y + c.z + c.w;
}

fn lowest_lane(m: vec4<u32>) -> u32 {
    if m.x != 0u {
        return firstTrailingBit(m.x);
    }
    if m.y != 0u {
        return 32u + firstTrailingBit(m.y);
    }
    if m.z != 0u {
        return 64u + firstTrailingBit(m.z);
    }
    return 96u + firstTrailingBit(m.w);
}

// Among the lanes of the subgroup holding digit d (its peers, this lane included): how many
// are below this lane, how many there are, and the lowest. The peers are the AND over the
// digit's bits of the ballot of lanes with that bit set, or of its complement. Subgroups of
// at most 32 lanes use one ballot word (a quarter of the mask arithmetic), unless
// WIDE_BALLOTS (testing) forces the 128-bit masks.
fn match_peers(d: u32, below: vec4<u32>, lanes: vec4<u32>) -> vec3<u32> {
#ifndef WIDE_BALLOTS
    if sg_size <= 32u {
        var peers = lanes.x;
#unroll
        for (var b = 0u; b < RADIX_BITS; b += 1u) {
            // All ones where the bit is clear: the complement of the ballot.
            peers &= subgroupBallot(((d >> b) & 1u) != 0u).x ^ (((d >> b) & 1u) - 1u);
        }
        let lowest = firstTrailingBit(peers);
        return vec3<u32>(countOneBits(peers & below.x), countOneBits(peers), lowest);
    }
#endif
    var peers = lanes;
#unroll
    for (var b = 0u; b < RADIX_BITS; b += 1u) {
        peers &= subgroupBallot(((d >> b) & 1u) != 0u) ^ vec4<u32>(((d >> b) & 1u) - 1u);
    }
    return vec3<u32>(ones(peers & below), ones(peers), lowest_lane(peers));
}

// Final ranks of the invocation's keys (striped layout above). `offset`: rows of the tile
// with a digit below t (exclusive scan of the digit counts). Per key: 8 ballots find the lanes
// holding the same digit (peers); the lowest peer adds the peer count to the subgroup's
// counter of that digit (16-bit halves, two digits per word, in `sh` or `sh_split`) and
// shuffles the old count to its peers, which add their rank among the peers. Then invocation
// p < RADIX / 2 turns the counters of digits 2p and 2p + 1 into exclusive prefixes over the
// subgroups in order, starting at the digits' offsets in the tile. Begins with its counters
// zero (as the workgroup starts) and ends with `sh` free; counts fit 16 bits since a tile has
// fewer than 2^16 keys.
// Ordering: the leader of key k + 1 may be another lane than the leader of key k, with no
// barrier in between (WGSL has no subgroup barrier). Both updates are atomic read-modify-
// writes of one word, and the first has returned (its value feeds the shuffle that every lane
// executes) before any lane issues the second, so they apply in key order. This relies on a
// subgroup operation being a point all lanes reach together, as on NVIDIA (shfl.sync), AMD,
// Intel, Apple and lavapipe.
fn rank_split(t: u32, keys: ptr<function, array<u32, KPT>>, offset: u32) -> array<u32, KPT> {
    let row = sg_id * (RADIX / 2u);
    // The counters start at zero without a clearing round and its barrier: a workgroup ranks
    // one tile, and workgroup memory is zero-initialized (WGSL) and untouched before this.
    // sh_base is free until the scatter: it lends the digit offsets to the pair scan (the
    // barrier after the ballots publishes them).
    sh_base[t] = offset;
    let below = lanes_below(sg_lane);
    let lanes = lanes_below(sg_size);
    var ranks: array<u32, KPT>;
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        let d = digit_of((*keys)[k], params.shift);
        let m = match_peers(d, below, lanes);
        let before = m.x;
        let half = (d & 1u) * 16u;
        var old = 0u;
        if before == 0u {
            old = split_add(row + (d >> 1u), m.y << half);
        }
        old = subgroupShuffle(old, m.z);
        ranks[k] = ((old >> half) & 0xffffu) + before;
    }
    workgroupBarrier();
    if t < RADIX / 2u {
        var run = sh_base[2u * t] | (sh_base[2u * t + 1u] << 16u);
        for (var s = 0u; s < sg_count; s += 1u) {
            let i = s * (RADIX / 2u) + t;
            let c = split_get(i);
            split_set(i, run);
            run += c;
        }
    }
    workgroupBarrier();
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        let d = digit_of((*keys)[k], params.shift);
        ranks[k] += (split_get(row + (d >> 1u)) >> ((d & 1u) * 16u)) & 0xffffu;
    }
    workgroupBarrier();
    return ranks;
}
#endif

// Tile row of the invocation's key k: blocked (t * KPT + k), or striped inside the
// subgroup's run with multisplit.
fn key_row(t: u32, k: u32) -> u32 {
#ifdef MULTISPLIT
    if split {
        return (t - sg_lane) * KPT + k * sg_size + sg_lane;
    }
#endif
    return t * KPT + k;
}

@compute @workgroup_size(WG_SIZE)
fn radix_pass(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
#ifdef SUBGROUPS
    @builtin(subgroup_invocation_id) subgroup_lane: u32,
    @builtin(subgroup_size) subgroup_width: u32,
    @builtin(subgroup_id) subgroup_index: u32,
    @builtin(num_subgroups) subgroups: u32,
#endif
) {
    // Every use of t is positional (rows, digits, ranks), so any numbering of the invocations
    // works; with full subgroups, the subgroup-major one lets subgroup scans run in t order.
    var t = lid;
#ifdef SUBGROUPS
    sg_full = subgroup_width * subgroups == WG_SIZE;
    sg_lane = subgroup_lane;
    sg_size = subgroup_width;
    sg_id = subgroup_index;
    sg_count = subgroups;
    if sg_full {
        t = subgroup_index * subgroup_width + subgroup_lane;
    }
#endif
#ifdef MULTISPLIT
    split = sg_full && subgroup_width >= SPLIT_MIN_SUBGROUP
        && subgroup_width <= SPLIT_MAX_SUBGROUP;
#endif
#ifdef WORKGROUP_TILES
    // The tile is the workgroup's own id: no ticket round trip before the loads. Devices
    // that launch workgroups in id order (NVIDIA) keep predecessors running first; any other
    // order is still correct through the decoupled fallback, only slower.
    let ticket = params.tile_base + linear_workgroup(wg, num_wg);
#else
    // Only this dispatch's tiles take tickets: a spare workgroup of a 2-D grid must not take
    // one the next key window's dispatch needs (tickets run on across the windows).
    if linear_workgroup(wg, num_wg) >= params.tile_end - params.tile_base {
        return;
    }
    if t == 0u {
        sh_ticket = atomicAdd(&scratch[params.ticket_word], 1u);
    }
    let ticket = workgroupUniformLoad(&sh_ticket);
#endif
    if ticket >= params.tile_end {
        return;
    }
#ifdef REVERSE_TILES
    let tile = params.tiles - 1u - ticket;
#else
    let tile = ticket;
#endif
    let tile_start = tile * TILE_ROWS;
    let valid = min(TILE_ROWS, params.rows - tile_start);
    let first = t * KPT;

    // 1. Load (blocked, or striped for multisplit), count and publish.
    var keys: array<u32, KPT>;
#ifdef MULTISPLIT
    if split {
#unroll
        for (var k = 0u; k < KPT; k += 1u) {
            let r = key_row(t, k);
            var key = PAD_KEY;
            if r < valid {
                key = key_in(src_keys[params.src_keys + tile_start + r]);
            }
            keys[k] = key;
        }
    } else {
#endif
#unroll
    for (var q = 0u; q < KPT4; q += 1u) {
        let e = tile_start + first + 4u * q;
        let k4 = load_key4(e, tile_start + valid);
#unroll
        for (var c = 0u; c < 4u; c += 1u) {
            keys[4u * q + c] = k4[c];
        }
    }
#ifdef MULTISPLIT
    }
#endif
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        if key_row(t, k) < valid {
            atomicAdd(&sh_count[digit_of(keys[k], params.shift)], 1u);
        }
    }
    workgroupBarrier();
    let count = atomicLoad(&sh_count[t]);
    publish(tile, t, published_state(tile == 0u), count);
    let local = workgroup_scan(t, count);

#ifdef LOOKBACK_FIRST
    // 2. Look back (publishing the inclusive prefix) before ranking: successors' walks stop
    // here sooner, but this tile's wait is not hidden behind its ranking.
    let base = atomicLoad(&scratch[params.histogram_word + t]) + look_back(t, tile, count)
        - local.x;
#endif

    // 2. (3. with LOOKBACK_FIRST) Rank.
#ifdef MULTISPLIT
    var ranks: array<u32, KPT>;
    if split {
        ranks = rank_split(t, &keys, local.x);
    } else {
        ranks = rank_tile(t, &keys);
    }
#else
    let ranks = rank_tile(t, &keys);
#endif

#ifdef OVERLAP_LOOKBACK
    // Stage the keys in rank order (and load the values) before the look-back, so that its
    // wait hides this work; the look-back's vote barrier and the one after sh_base below
    // order the staging before the reads.
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        sh_set(ranks[k], keys[k]);
    }
#ifdef LOAD_VALUES
    var vals: array<u32, KPT>;
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        let r = key_row(t, k);
        vals[k] = 0u;
        if r < valid {
            vals[k] = src_values[params.src_values + tile_start + r];
        }
    }
#endif
#endif
#ifndef LOOKBACK_FIRST
    // 3. Look back, publish the inclusive prefix.
    let base = atomicLoad(&scratch[params.histogram_word + t]) + look_back(t, tile, count)
        - local.x;
#endif
    // After the ranking, which lends sh_base to rank_split; the scatter's first barrier
    // publishes it.
    sh_base[t] = base;

#ifdef SCATTER_DIRECT
    // 4. Scatter straight from registers: key k lands at its digit's base plus its rank.
    workgroupBarrier();
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        if key_row(t, k) < valid {
            let d = digit_of(keys[k], params.shift);
            store_key(sh_base[d] + ranks[k], key_out(keys[k]));
        }
    }
#ifdef WRITE_VALUES
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        let r = key_row(t, k);
        if r < valid {
#ifdef LOAD_VALUES
            let v = src_values[params.src_values + tile_start + r];
#else
            let v = tile_start + r;
#endif
            let d = digit_of(keys[k], params.shift);
            store_value(sh_base[d] + ranks[k], v);
        }
    }
#endif
#else
    // 4. Scatter keys in rank order.
#ifndef OVERLAP_LOOKBACK
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
        sh_set(ranks[k], keys[k]);
    }
#endif
    workgroupBarrier();
    var out_digits: array<u32, KPT>;
#unroll
    for (var j = 0u; j < KPT; j += 1u) {
        let i = j * WG_SIZE + t;
        if i < valid {
            let key = sh_get(i);
            out_digits[j] = digit_of(key, params.shift);
            store_key(sh_base[out_digits[j]] + i, key_out(key));
        }
    }
#ifdef WRITE_VALUES
    workgroupBarrier();
#ifdef OVERLAP_LOOKBACK
#unroll
    for (var k = 0u; k < KPT; k += 1u) {
#ifdef LOAD_VALUES
        sh_set(ranks[k], vals[k]);
#else
        sh_set(ranks[k], tile_start + key_row(t, k));
#endif
    }
#else
#ifdef MULTISPLIT
    if split {
#unroll
        for (var k = 0u; k < KPT; k += 1u) {
            let r = key_row(t, k);
#ifdef LOAD_VALUES
            var v = 0u;
            if r < valid {
                v = src_values[params.src_values + tile_start + r];
            }
#else
            let v = tile_start + r;
#endif
            sh_set(ranks[k], v);
        }
    } else {
#endif
#unroll
    for (var q = 0u; q < KPT4; q += 1u) {
        let e = tile_start + first + 4u * q;
#ifdef LOAD_VALUES
        var v = vec4<u32>(0u);
        if e + 4u <= tile_start + valid && (params.src_values & 3u) == 0u {
            v = src_values4[(params.src_values + e) >> 2u];
        } else {
#unroll
            for (var c = 0u; c < 4u; c += 1u) {
                if e + c < tile_start + valid {
                    v[c] = src_values[params.src_values + e + c];
                }
            }
        }
#else
        let v = vec4<u32>(e, e + 1u, e + 2u, e + 3u);
#endif
#unroll
        for (var c = 0u; c < 4u; c += 1u) {
            sh_set(ranks[4u * q + c], v[c]);
        }
    }
#ifdef MULTISPLIT
    }
#endif
#endif
    workgroupBarrier();
#unroll
    for (var j = 0u; j < KPT; j += 1u) {
        let i = j * WG_SIZE + t;
        if i < valid {
            store_value(sh_base[out_digits[j]] + i, sh_get(i));
        }
    }
#endif
#endif
}
