//! [`HashTable`]: the GPU storage of one hash index (slot keys, slot rows, build statistics),
//! and the decoded statistics blocks of a build ([`HashBuildStats`]) and of a query
//! ([`HashQueryStats`]).

use gpugraph_command::{wgpu, BufferDescriptor, CommandGraph, DataView, VectorFormat, VectorView};

use super::policy::Probing;
use crate::error::AlgorithmError;
use crate::kernel::{require_packed, ViewCheck};

/// The key that marks a free slot. It is still a valid key: it is stored in the extra row
/// slot `rows[capacity]`, never in a key slot.
pub const EMPTY_KEY: u32 = u32::MAX;
/// The row a lookup returns for a key that is not in the index (so at most `u32::MAX` rows,
/// `0..u32::MAX`, can be indexed).
pub const MISS: u32 = u32::MAX;
/// Words of a statistics block (build or query).
pub const STATS_WORDS: u64 = 8;

/// Where one hash index lives: `keys` (capacity packed u32 rows, a power of two, [`EMPTY_KEY`]
/// = free), `rows` (capacity + 1 packed u32 rows: the lowest source row of the key in the
/// same slot, and at `rows[capacity]` the row of the key [`EMPTY_KEY`] itself, [`MISS`] when
/// absent) and `stats` ([`STATS_WORDS`] packed u32 rows, the build's [`HashBuildStats`]).
/// `probing` is part of the layout: a query must probe the way the build inserted.
///
/// The views may be imported (the index outlives the graph, or is read back) or transient
/// ([`HashTable::transient`]); the three may share a buffer only at disjoint bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashTable {
    /// Slot keys: `capacity` rows.
    pub keys: DataView,
    /// Slot rows: `capacity + 1` rows.
    pub rows: DataView,
    /// The build statistics: [`STATS_WORDS`] rows.
    pub stats: DataView,
    /// The probe sequence the build used.
    pub probing: Probing,
}

impl HashTable {
    /// Slots in the table.
    pub fn capacity(&self) -> u64 {
        self.keys.len()
    }

    /// Bytes of the three views of a table with `capacity` slots.
    pub fn bytes(capacity: u64) -> u64 {
        (2 * capacity + 1 + STATS_WORDS) * 4
    }

    /// A table of `capacity` slots (a power of two) in three transient buffers
    /// `{id}/slot-keys`, `{id}/slot-rows`, `{id}/stats` (STORAGE | COPY_SRC).
    pub fn transient(
        graph: &mut CommandGraph,
        id: &str,
        capacity: u64,
        probing: Probing,
    ) -> Result<Self, AlgorithmError> {
        let c = ViewCheck::new("hash table", id);
        if capacity == 0 || !capacity.is_power_of_two() || capacity > 1 << 31 {
            return Err(c.out_of_range("capacity", capacity, "a power of two in 1..=2^31"));
        }
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        let mut view = |name: &str, rows: u64| -> Result<DataView, AlgorithmError> {
            let h = graph.create_buffer(BufferDescriptor::new(
                format!("{id}/{name}"),
                rows * 4,
                usage,
            ))?;
            Ok(graph.create_packed_view(h, VectorFormat::Uint32, rows)?)
        };
        Ok(Self {
            keys: view("slot-keys", capacity)?,
            rows: view("slot-rows", capacity + 1)?,
            stats: view("stats", STATS_WORDS)?,
            probing,
        })
    }

    /// Checks the layout (see the type's contract) and returns the capacity as u32.
    pub(crate) fn check(&self, c: ViewCheck<'_>) -> Result<u32, AlgorithmError> {
        for (what, v) in [
            ("table keys", &self.keys),
            ("table rows", &self.rows),
            ("table stats", &self.stats),
        ] {
            require_packed(c, what, &VectorView::from(*v), VectorFormat::Uint32)?;
        }
        let capacity = self.keys.len();
        if capacity == 0 || !capacity.is_power_of_two() || capacity > 1 << 31 {
            return Err(c.out_of_range(
                "the table capacity (rows of table keys)",
                capacity,
                "a power of two in 1..=2^31",
            ));
        }
        if self.rows.len() != capacity + 1 {
            return Err(c.length(
                "table rows",
                "rows",
                self.rows.len(),
                capacity + 1,
                "capacity + 1",
            ));
        }
        if self.stats.len() != STATS_WORDS {
            return Err(c.length(
                "table stats",
                "rows",
                self.stats.len(),
                STATS_WORDS,
                "the statistics block",
            ));
        }
        Ok(capacity as u32)
    }
}

/// Adds `lo` and `hi` words into one u64.
fn wide(lo: u32, hi: u32) -> u64 {
    u64::from(hi) << 32 | u64::from(lo)
}

/// A build's statistics block, decoded. Words: 0 `keys`, 1 `invalid`, 2 `overflow`,
/// 3 `max_probe`, 4–5 `probe_sum` (low, high), 6 `rows`, 7 unused (0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashBuildStats {
    /// Distinct keys stored (the key [`EMPTY_KEY`] included).
    pub keys: u32,
    /// Rows skipped because their validity flag was 0.
    pub invalid: u32,
    /// Valid rows whose key found no free slot: the index is incomplete when nonzero.
    pub overflow: u32,
    /// The longest probe of one row, in slots (an overflowing row counts `capacity`).
    pub max_probe: u32,
    /// Slots probed by all valid rows.
    pub probe_sum: u64,
    /// Rows read (`min(live count, rows)` per chunk).
    pub rows: u32,
}

impl HashBuildStats {
    /// Decodes a block read back from [`HashTable::stats`].
    pub fn from_words(w: &[u32]) -> Self {
        Self {
            keys: w[0],
            invalid: w[1],
            overflow: w[2],
            max_probe: w[3],
            probe_sum: wide(w[4], w[5]),
            rows: w[6],
        }
    }

    /// Mean slots probed per valid row (0 without valid rows).
    pub fn mean_probe(&self) -> f64 {
        let valid = self.rows - self.invalid;
        if valid == 0 {
            0.0
        } else {
            self.probe_sum as f64 / f64::from(valid)
        }
    }
}

/// A query's statistics block, decoded. Words: 0 `found`, 1 `missing`, 2 `invalid`,
/// 3 `max_probe`, 4–5 `probe_sum`, 6 `rows`, 7 `incomplete` (0 or 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashQueryStats {
    /// Keys found.
    pub found: u32,
    /// Valid keys not found.
    pub missing: u32,
    /// Keys skipped because their validity flag was 0 (their row is [`MISS`]).
    pub invalid: u32,
    /// The longest probe, in slots.
    pub max_probe: u32,
    /// Slots probed by all valid keys.
    pub probe_sum: u64,
    /// Keys read.
    pub rows: u32,
    /// The index overflowed when it was built: a miss may be a key that found no slot, so
    /// the result must not be presented as complete.
    pub incomplete: bool,
}

impl HashQueryStats {
    /// Decodes a block read back from a query's `stats` view.
    pub fn from_words(w: &[u32]) -> Self {
        Self {
            found: w[0],
            missing: w[1],
            invalid: w[2],
            max_probe: w[3],
            probe_sum: wide(w[4], w[5]),
            rows: w[6],
            incomplete: w[7] != 0,
        }
    }

    /// Mean slots probed per valid key (0 without valid keys).
    pub fn mean_probe(&self) -> f64 {
        let valid = self.found + self.missing;
        if valid == 0 {
            0.0
        } else {
            self.probe_sum as f64 / f64::from(valid)
        }
    }
}
