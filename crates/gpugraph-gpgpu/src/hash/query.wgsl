// GPUHashIndexQuery: `query_clear` zeroes the statistics and records whether the index is
// incomplete (its build overflowed, so a miss may be false); `lookup` writes each key's row
// (or MISS) and accumulates found / missing / invalid counts and probe lengths. With JOIN it
// also writes the 0/1 match flags and the row ids the join's compaction reads.
#include "shared/dispatch.wgsl"
#include "hash/hash.wgsl"

struct Params {
    rows: u32,
    key_offset: u32,
    valid_offset: u32,
    live_offset: u32,
    capacity: u32,
    slot_key_offset: u32,
    slot_row_offset: u32,
    table_stats_offset: u32,
    out_offset: u32,
    stats_offset: u32,
    flags_offset: u32,
    ids_offset: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read> table_stats: array<u32>;
@group(0) @binding(6) var<storage, read_write> stats: array<atomic<u32>>;

#ifdef CLEAR
@compute @workgroup_size(WG_SIZE)
fn query_clear(@builtin(local_invocation_index) lid: u32) {
    if lid < STATS_WORDS - 1u {
        atomicStore(&stats[params.stats_offset + lid], 0u);
    }
    if lid == STATS_WORDS - 1u {
        // Build word 2 counts rows whose key found no slot.
        let overflowed = table_stats[params.table_stats_offset + 2u] != 0u;
        atomicStore(&stats[params.stats_offset + lid], select(0u, 1u, overflowed));
    }
}
#else
#include "hash/stats.wgsl"

@group(0) @binding(1) var<storage, read> slot_keys: array<u32>;
@group(0) @binding(2) var<storage, read> slot_rows: array<u32>;
@group(0) @binding(4) var<storage, read> keys: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<u32>;
#ifdef JOIN
@group(0) @binding(7) var<storage, read_write> flags: array<u32>;
@group(0) @binding(8) var<storage, read_write> ids: array<u32>;
#endif
#ifdef VALID
@group(0) @binding(9) var<storage, read> valid: array<u32>;
#endif
#ifdef LIVE
@group(0) @binding(10) var<storage, read> live: array<u32>;
#endif

// (row or MISS, slots probed).
fn find(key: u32) -> vec2<u32> {
    if key == EMPTY {
        return vec2<u32>(slot_rows[params.slot_row_offset + params.capacity], 1u);
    }
    let mask = params.capacity - 1u;
    var slot = hash_u32(key) & mask;
    var step = 0u;
    while step < params.capacity {
        let k = slot_keys[params.slot_key_offset + slot];
        if k == key {
            return vec2<u32>(slot_rows[params.slot_row_offset + slot], step + 1u);
        }
        if k == EMPTY {
            return vec2<u32>(MISS, step + 1u);
        }
        step += 1u;
        slot = next_slot(slot, step, mask);
    }
    return vec2<u32>(MISS, params.capacity);
}

#include "hash/rows.wgsl"

// Row i of the lookup (shared/row_driver.wgsl).
fn visit_row(i: u32) {
    stats_count(6u);
    var ok = true;
#ifdef VALID
    ok = valid[params.valid_offset + i] != 0u;
#endif
    var row = MISS;
    if !ok {
        stats_count(2u);
    } else {
        let found = find(keys[params.key_offset + i]);
        row = found.x;
        stats_probes(found.y);
        stats_count(select(1u, 0u, row != MISS));
    }
    out[params.out_offset + i] = row;
#ifdef JOIN
    flags[params.flags_offset + i] = select(0u, 1u, row != MISS);
    ids[params.ids_offset + i] = i;
#endif
}

@compute @workgroup_size(WG_SIZE)
fn lookup(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    hash_rows(wid, nwg, lid);
}
#endif
