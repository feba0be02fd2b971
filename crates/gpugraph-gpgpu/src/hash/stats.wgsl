// Accumulation of an 8-word hash statistics block (hash/table.rs documents the words):
// counts 0, 1, 2 and 6 add, word 3 is a maximum, words 4 (low) and 5 (high) are one 64-bit
// probe sum. Each invocation accumulates its rows privately; `stats_flush` reduces the
// workgroup in shared memory (log2(WG_SIZE) steps, no contended atomics) and adds the result
// to the global block once per workgroup.

var<private> acc_counts: vec4<u32>;
var<private> acc_probes: vec3<u32>;

var<workgroup> red_counts: array<vec4<u32>, WG_SIZE>;
var<workgroup> red_probes: array<vec3<u32>, WG_SIZE>;

#include "shared/tree_reduce.wgsl"

// The hook of shared/tree_reduce.wgsl.
fn tree_combine(slot: u32, other: u32) {
    red_counts[slot] = red_counts[slot] + red_counts[other];
    red_probes[slot] = probes_combine(red_probes[slot], red_probes[other]);
}

fn stats_begin(lid: u32) {
    acc_counts = vec4<u32>(0u);
    acc_probes = vec3<u32>(0u);
}

// Word 0, 1, 2 or 6 plus one.
fn stats_count(word: u32) {
    switch word {
        case 0u: { acc_counts.x += 1u; }
        case 1u: { acc_counts.y += 1u; }
        case 2u: { acc_counts.z += 1u; }
        default: { acc_counts.w += 1u; }
    }
}

// (max, lo, hi) of two probe accumulators: the maximum and the 64-bit sum.
fn probes_combine(a: vec3<u32>, b: vec3<u32>) -> vec3<u32> {
    let lo = a.y + b.y;
    let carry = select(0u, 1u, lo < a.y);
    return vec3<u32>(max(a.x, b.x), lo, a.z + b.z + carry);
}

// One row's probe length.
fn stats_probes(probes: u32) {
    acc_probes = probes_combine(acc_probes, vec3<u32>(probes, probes, 0u));
}

// Reduces the workgroup's accumulators and adds them into `stats` at `base`.
fn stats_flush(lid: u32, base: u32) {
    red_counts[lid] = acc_counts;
    red_probes[lid] = acc_probes;
    tree_reduce(lid, WG_SIZE);
    if lid != 0u {
        return;
    }
    let c = red_counts[0];
    let p = red_probes[0];
    if c.x != 0u {
        atomicAdd(&stats[base], c.x);
    }
    if c.y != 0u {
        atomicAdd(&stats[base + 1u], c.y);
    }
    if c.z != 0u {
        atomicAdd(&stats[base + 2u], c.z);
    }
    if c.w != 0u {
        atomicAdd(&stats[base + 6u], c.w);
    }
    if p.x != 0u {
        atomicMax(&stats[base + 3u], p.x);
    }
    var carry = 0u;
    if p.y != 0u {
        let old = atomicAdd(&stats[base + 4u], p.y);
        carry = select(0u, 1u, old + p.y < old);
    }
    if p.z + carry != 0u {
        atomicAdd(&stats[base + 5u], p.z + carry);
    }
}
