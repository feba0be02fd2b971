// NameStatistics (stats/mod.rs; oracle cpu::name_stats): per name (the span's group), the
// span count and exact 64-bit sums of duration and self time in ticks. WGSL has no 64-bit
// atomics: a sum is two words, the low word added first and its carry (detected from the
// value atomicAdd returns) added to the high word, so the result is the exact sum modulo
// 2^64 whatever order spans run in. Self time subtracts each span from its parent's name as
// the two's complement.
//   clear:      zero every accumulator;
//   accumulate: one invocation per span.

#include "common.wgsl"

const WG: u32 = 256u;

struct Params {
    spans: u32,
    names: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> spans: array<u32>;
@group(0) @binding(2) var<storage, read> parents: array<u32>;
@group(0) @binding(3) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> totals: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> selfs: array<atomic<u32>>;

fn add_total(g: u32, v: vec2<u32>) {
    let old = atomicAdd(&totals[2u * g], v.x);
    let carry = select(0u, 1u, old + v.x < old);
    if v.y + carry != 0u {
        atomicAdd(&totals[2u * g + 1u], v.y + carry);
    }
}

fn add_self(g: u32, v: vec2<u32>) {
    let old = atomicAdd(&selfs[2u * g], v.x);
    let carry = select(0u, 1u, old + v.x < old);
    if v.y + carry != 0u {
        atomicAdd(&selfs[2u * g + 1u], v.y + carry);
    }
}

@compute @workgroup_size(WG)
fn clear(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let g = linear_row(wid, nwg, lid, WG);
    if g >= params.names {
        return;
    }
    atomicStore(&counts[g], 0u);
    atomicStore(&totals[2u * g], 0u);
    atomicStore(&totals[2u * g + 1u], 0u);
    atomicStore(&selfs[2u * g], 0u);
    atomicStore(&selfs[2u * g + 1u], 0u);
}

@compute @workgroup_size(WG)
fn accumulate(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid, WG);
    if i >= params.spans {
        return;
    }
    let g = spans[i * SPAN_WORDS + 6u];
    if g >= params.names {
        return;
    }
    let d = vec2<u32>(spans[i * SPAN_WORDS + 2u], spans[i * SPAN_WORDS + 3u] & 0xffffu);
    atomicAdd(&counts[g], 1u);
    add_total(g, d);
    add_self(g, d);
    let p = parents[i];
    if p < params.spans {
        let pg = spans[p * SPAN_WORDS + 6u];
        if pg < params.names {
            add_self(pg, neg64(d));
        }
    }
}
