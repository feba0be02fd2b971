//! The hash family's plain-Rust oracles: the map the index must hold, lookups, the
//! many-to-one join, and the shader's probe arithmetic over a table read back from the GPU
//! (so tests check the placement invariant and the exact probe statistics of a query).

use std::collections::HashMap;

use super::policy::Probing;
use super::table::{EMPTY_KEY, MISS};

/// `key → lowest row` over valid rows (`valid[r] == 0` skips row `r`), rows numbered from
/// `row_base`; also the number of invalid rows.
pub fn index(keys: &[u32], valid: Option<&[u32]>, row_base: u32) -> (HashMap<u32, u32>, u32) {
    let mut map = HashMap::new();
    let mut invalid = 0;
    for (r, &k) in keys.iter().enumerate() {
        if valid.is_some_and(|v| v[r] == 0) {
            invalid += 1;
            continue;
        }
        map.entry(k).or_insert(row_base + r as u32);
    }
    (map, invalid)
}

/// Each key's row in `map`, or [`MISS`] (also for invalid keys).
pub fn lookup(map: &HashMap<u32, u32>, keys: &[u32], valid: Option<&[u32]>) -> Vec<u32> {
    keys.iter()
        .enumerate()
        .map(|(i, k)| {
            if valid.is_some_and(|v| v[i] == 0) {
                MISS
            } else {
                map.get(k).copied().unwrap_or(MISS)
            }
        })
        .collect()
}

/// The inner many-to-one join: the first `capacity` (left row, right row) pairs in left
/// order, and the exact match count.
pub fn join(
    map: &HashMap<u32, u32>,
    keys: &[u32],
    valid: Option<&[u32]>,
    capacity: usize,
) -> (Vec<u32>, Vec<u32>, u32) {
    let (mut left, mut right) = (Vec::new(), Vec::new());
    let mut count = 0u32;
    for (i, r) in lookup(map, keys, valid).into_iter().enumerate() {
        if r != MISS {
            if left.len() < capacity {
                left.push(i as u32);
                right.push(r);
            }
            count += 1;
        }
    }
    (left, right, count)
}

/// The home slot of `key` in a table of `mask + 1` slots (the shader's `hash_u32`).
pub fn home(key: u32, mask: u32) -> u32 {
    let mut h = key;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h & mask
}

/// The shader's lookup over a table read back from the GPU (`slot_keys`: capacity rows,
/// `slot_rows`: capacity + 1): `(row or MISS, slots probed)`.
pub fn probe(slot_keys: &[u32], slot_rows: &[u32], probing: Probing, key: u32) -> (u32, u32) {
    let capacity = slot_keys.len() as u32;
    if key == EMPTY_KEY {
        return (slot_rows[capacity as usize], 1);
    }
    let mask = capacity - 1;
    let mut slot = home(key, mask);
    for step in 0..capacity {
        if step > 0 {
            slot = probing.next(slot, step, mask);
        }
        let k = slot_keys[slot as usize];
        if k == key {
            return (slot_rows[slot as usize], step + 1);
        }
        if k == EMPTY_KEY {
            return (MISS, step + 1);
        }
    }
    (MISS, capacity)
}
