// Shared by the hash kernels: the reserved empty-slot key, the miss row, the hash and the
// probe sequence (hash/policy.rs documents them; hash/cpu.rs is the same arithmetic in Rust).

// A slot holding EMPTY is free. The key EMPTY itself is stored in the extra row slot
// `slot_rows[capacity]`, never in a key slot, so every u32 is a valid key.
const EMPTY: u32 = 0xffffffffu;
// The row of a key that is not in the index.
const MISS: u32 = 0xffffffffu;
const STATS_WORDS: u32 = 8u;

// MurmurHash3's 32-bit finalizer: every key bit reaches every slot bit, so sequential keys
// (order keys, row ids) spread over the table instead of forming one long cluster.
fn hash_u32(key: u32) -> u32 {
    var h = key;
    h = h ^ (h >> 16u);
    h = h * 0x85ebca6bu;
    h = h ^ (h >> 13u);
    h = h * 0xc2b2ae35u;
    h = h ^ (h >> 16u);
    return h;
}

// The slot probed at `step` (>= 1) after `slot` (probed at step - 1). Linear: the next slot.
// Triangular: offsets 0, 1, 3, 6, ... from home. In a power-of-two table both visit every
// slot exactly once in `capacity` steps, so a full scan proves a miss.
fn next_slot(slot: u32, step: u32, mask: u32) -> u32 {
    if PROBE_TRIANGULAR {
        return (slot + step) & mask;
    }
    return (slot + 1u) & mask;
}
