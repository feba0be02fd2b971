// Per-workgroup accumulation of an 8-word hash statistics block (hash/table.rs documents the
// words): counts 0, 1, 2 and 6 add, word 3 is a maximum, words 4 (low) and 5 (high) are one
// 64-bit probe sum. One flush per workgroup keeps global atomics off the per-row path.

var<workgroup> wg_stats: array<atomic<u32>, 8>;

fn stats_begin(lid: u32) {
    if lid < STATS_WORDS {
        atomicStore(&wg_stats[lid], 0u);
    }
    workgroupBarrier();
}

fn stats_count(word: u32) {
    atomicAdd(&wg_stats[word], 1u);
}

// One row's probe length: the maximum and the 64-bit sum (a wrapped low word carries).
fn stats_probes(probes: u32) {
    atomicMax(&wg_stats[3], probes);
    let old = atomicAdd(&wg_stats[4], probes);
    if old + probes < old {
        atomicAdd(&wg_stats[5], 1u);
    }
}

// Adds this workgroup's block into `stats` at `base` (after a barrier).
fn stats_flush(lid: u32, base: u32) {
    workgroupBarrier();
    if lid != 0u {
        return;
    }
    for (var w = 0u; w < 3u; w += 1u) {
        let v = atomicLoad(&wg_stats[w]);
        if v != 0u {
            atomicAdd(&stats[base + w], v);
        }
    }
    let rows = atomicLoad(&wg_stats[6]);
    if rows != 0u {
        atomicAdd(&stats[base + 6u], rows);
    }
    let max_probe = atomicLoad(&wg_stats[3]);
    if max_probe != 0u {
        atomicMax(&stats[base + 3u], max_probe);
    }
    let lo = atomicLoad(&wg_stats[4]);
    let hi = atomicLoad(&wg_stats[5]);
    var carry = 0u;
    if lo != 0u {
        let old = atomicAdd(&stats[base + 4u], lo);
        carry = select(0u, 1u, old + lo < old);
    }
    if hi + carry != 0u {
        atomicAdd(&stats[base + 5u], hi + carry);
    }
}
