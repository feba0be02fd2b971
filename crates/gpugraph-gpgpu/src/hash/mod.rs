//! The hash family (spec tranches 8.1a–8.3a): [`HashIndex`] / [`BatchHashIndex`] build a
//! fixed-capacity open-addressing map from u32 keys to the lowest source row,
//! [`HashIndexQuery`] looks keys up, [`HashJoin`] / [`BatchHashJoin`] turn lookups into
//! bounded many-to-one row pairs through the stable [`crate::Compaction`], and [`RowGather`]
//! moves payload rows by the pairs.
//!
//! Design. A [`HashTable`] is three views: `capacity` slot keys (a power of two; the key
//! `0xffffffff` marks a free slot), `capacity + 1` slot rows (the last one holds the row of
//! the key `0xffffffff` itself, so every u32 is a key) and an 8-word statistics block. The
//! build clears the table, then one invocation per row claims its key's slot with a
//! compare-exchange along the probe sequence ([`HashPolicy`]: MurmurHash3 finalizer home,
//! linear or triangular steps) and lowers the slot's row with an atomic minimum: the stored
//! row of a key is its lowest valid row whatever the thread order. Memory traffic of a build
//! of n unique keys: the clear writes 8 bytes per slot, then each key reads 4 bytes, touches
//! 4 per probed slot (compare-exchange on the slot key) and 4 for the row (atomic minimum);
//! a lookup reads 4 bytes of key, 4 per probed slot and 4 for the row, and writes 4. At load
//! factor 0.5 with linear probing a hit probes 1.5 slots on average. Statistics (counts,
//! maximum and 64-bit sum of probe lengths) accumulate per invocation, reduce per workgroup
//! in shared memory and reach the block with one set of atomics per workgroup.
//!
//! Keys: u32 natively; `Sint32` views are hashed by their bits (equality is all a hash map
//! needs). Wider keys are mapped by the caller ([`keys::KeyMapping`]) or refused by name.
//!
//! Bounds: the build never grows the table; keys that find no slot are counted (`overflow`)
//! and every query and join of that table reports itself incomplete. The join's outputs are
//! bounded by the caller's capacity with the exact required count beside them.

mod batch_index;
mod batch_join;
pub mod cpu;
mod gather;
mod index;
mod join;
pub mod keys;
mod policy;
mod query;
mod source;
mod table;

pub use batch_index::BatchHashIndex;
pub use batch_join::{BatchHashJoin, JoinOutputs};
pub use gather::RowGather;
pub use index::HashIndex;
pub use join::HashJoin;
pub use policy::{HashPolicy, Probing};
pub use query::HashIndexQuery;
pub use table::{HashBuildStats, HashQueryStats, HashTable, EMPTY_KEY, MISS, STATS_WORDS};
