//! Tunables of the keyed accumulation kernels (group aggregation, grid binning and
//! aggregation, histograms), chosen in one place. The shaders see them as `const`s of a
//! generated header.

use crate::kernel::{power_of_two_in, spec_u32, within, PolicyError, PolicySpec, PolicySpecError};

/// How the keyed accumulate kernel tiles rows and privatizes accumulators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyedPolicy {
    /// Invocations per workgroup: a power of two in `32..=1024`.
    pub workgroup_size: u32,
    /// Rows each invocation loads per tile (all loads issued before any accumulation), in
    /// `1..=32`.
    pub rows_per_thread: u32,
    /// Most workgroups one chunk launches (at least 1); they stride over the chunk's tiles,
    /// so a privatized workgroup amortizes its init and merge over many rows.
    pub max_workgroups: u64,
    /// Most accumulator words one workgroup privatizes; the device's workgroup storage (less
    /// staged edges) bounds it too. Beyond it, rows update global atomics directly.
    pub private_words_max: u32,
    /// Most replicas of the private accumulators (a power of two; the workgroup size bounds
    /// it too): invocation `i` uses replica `i mod copies`, which spreads atomics when there
    /// are few keys (with one replica per invocation, they never contend).
    pub max_copies: u32,
    /// Replicas are doubled only while all of them fit in this many words.
    pub copy_target_words: u32,
    /// Sorted edges up to this count are staged in workgroup memory for the binary search.
    pub shared_edges_max: u32,
    /// Most workgroups of a chunk whose float sums merge by compare-exchange
    /// ([`crate::Summation::Atomic`]); at least 1. Every workgroup merges every key it saw at
    /// about the same moment, so the retries grow with the workgroups in flight: on an H200,
    /// 1,024 groups over 2^24 rows took 9.8 ms with 2,048 workgroups against 0.48 ms for the
    /// integer (deterministic) merge.
    pub float_merge_workgroups: u64,
}

impl KeyedPolicy {
    /// Defaults for discrete GPUs: 256 invocations × 8 rows per tile, at most 2,048
    /// workgroups per chunk, privatization up to the device's workgroup storage, up to 8
    /// replicas within 256 words (more did not help in H200 measurements), edges staged up
    /// to 1,024.
    pub const DEFAULT: Self = Self {
        workgroup_size: 256,
        rows_per_thread: 8,
        max_workgroups: 2048,
        private_words_max: 16384,
        max_copies: 8,
        copy_target_words: 256,
        shared_edges_max: 1024,
        float_merge_workgroups: 256,
    };

    /// Checks the ranges documented on each field.
    pub fn validate(&self) -> Result<(), PolicyError> {
        const P: &str = "keyed";
        let p = self;
        let two = "a power of two in 32..=1024";
        power_of_two_in(P, "workgroup_size", p.workgroup_size, 32..=1024, two)?;
        within(P, "rows_per_thread", p.rows_per_thread, 1..=32, "in 1..=32")?;
        within(
            P,
            "max_workgroups",
            p.max_workgroups,
            1..=u64::MAX,
            "at least 1",
        )?;
        let merge = p.float_merge_workgroups;
        within(
            P,
            "float_merge_workgroups",
            merge,
            1..=u64::MAX,
            "at least 1",
        )?;
        power_of_two_in(
            P,
            "max_copies",
            p.max_copies,
            1..=u32::MAX,
            "a power of two",
        )
    }
}

impl PolicySpec for KeyedPolicy {
    const KEYS: &'static str = "wg, rows, workgroups, private, copies, copy_target, edges, merge";

    fn set(&mut self, key: &str, value: u64) -> Result<bool, PolicySpecError> {
        match key {
            "wg" => self.workgroup_size = spec_u32(key, value)?,
            "rows" => self.rows_per_thread = spec_u32(key, value)?,
            "workgroups" => self.max_workgroups = value,
            "private" => self.private_words_max = spec_u32(key, value)?,
            "copies" => self.max_copies = spec_u32(key, value)?,
            "copy_target" => self.copy_target_words = spec_u32(key, value)?,
            "edges" => self.shared_edges_max = spec_u32(key, value)?,
            "merge" => self.float_merge_workgroups = value,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

crate::kernel::policy_from_str!(KeyedPolicy, PolicyError);
