// GPUHashIndex build: `clear` empties the table and zeroes its statistics; `insert_rows`
// claims one slot per distinct key (compare-exchange on the key) and keeps the lowest source
// row of each key (atomicMin on the row), so duplicates resolve the same way whatever the
// thread schedule.
#include "shared/dispatch.wgsl"
#include "hash/hash.wgsl"

struct Params {
    rows: u32,
    key_offset: u32,
    row_base: u32,
    valid_offset: u32,
    live_offset: u32,
    capacity: u32,
    slot_key_offset: u32,
    slot_row_offset: u32,
    stats_offset: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> slot_keys: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> slot_rows: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> stats: array<atomic<u32>>;

#ifdef CLEAR
@compute @workgroup_size(WG_SIZE)
fn clear(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let i = linear_workgroup(wid, nwg) * WG_SIZE + lid;
    if i < params.capacity {
        atomicStore(&slot_keys[params.slot_key_offset + i], EMPTY);
    }
    if i <= params.capacity {
        atomicStore(&slot_rows[params.slot_row_offset + i], MISS);
    }
    if i < STATS_WORDS {
        atomicStore(&stats[params.stats_offset + i], 0u);
    }
}
#else
#include "hash/stats.wgsl"

@group(0) @binding(4) var<storage, read> keys: array<u32>;
#ifdef VALID
@group(0) @binding(5) var<storage, read> valid: array<u32>;
#endif
#ifdef LIVE
@group(0) @binding(6) var<storage, read> live: array<u32>;
#endif

// Inserts (key, row); returns the slots probed, 0 when every slot holds another key.
fn insert(key: u32, row: u32) -> u32 {
    if key == EMPTY {
        let old = atomicMin(&slot_rows[params.slot_row_offset + params.capacity], row);
        if old == MISS {
            stats_count(0u);
        }
        return 1u;
    }
    let mask = params.capacity - 1u;
    var slot = hash_u32(key) & mask;
    var step = 0u;
    while step < params.capacity {
        let r = atomicCompareExchangeWeak(&slot_keys[params.slot_key_offset + slot], EMPTY, key);
        if r.exchanged {
            stats_count(0u);
        }
        if r.exchanged || r.old_value == key {
            atomicMin(&slot_rows[params.slot_row_offset + slot], row);
            return step + 1u;
        }
        // A weak exchange may fail on a free slot: try the same slot again.
        if r.old_value != EMPTY {
            step += 1u;
            slot = next_slot(slot, step, mask);
        }
    }
    return 0u;
}

#include "hash/rows.wgsl"

// Row i of the build (shared/row_driver.wgsl).
fn visit_row(i: u32) {
    stats_count(6u);
    var ok = true;
#ifdef VALID
    ok = valid[params.valid_offset + i] != 0u;
#endif
    if !ok {
        stats_count(1u);
    } else {
        let probes = insert(keys[params.key_offset + i], params.row_base + i);
        if probes == 0u {
            stats_count(2u);
            stats_probes(params.capacity);
        } else {
            stats_probes(probes);
        }
    }
}

@compute @workgroup_size(WG_SIZE)
fn insert_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    hash_rows(wid, nwg, lid);
}
#endif
