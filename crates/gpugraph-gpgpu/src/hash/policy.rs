//! [`HashPolicy`]: the load factor, the probe sequence and the workgroup size of the hash
//! kernels, with their ranges and `key=value` syntax (`load=50,probe=0|1,wg=256,rpt=4`).
//!
//! Probing: a key's home slot is MurmurHash3's 32-bit finalizer of the key masked to the
//! power-of-two capacity; collisions continue [`Probing::Linear`] (home + 1, + 2, …) or
//! [`Probing::Triangular`] (home + 1, + 3, + 6, …). Both visit every slot once in `capacity`
//! steps, so a table with a free slot always finds one and a full scan proves a miss. The
//! defaults (load factor 50 %, linear) are the classic choice for open addressing with a
//! strong hash: linear probing touches neighbouring words (one cache line serves several
//! probes) and at load 0.5 expects 1.5 probes per hit and 2.5 per miss. `gpugraph bench`'s
//! `hash` row reports the measured probes per key of both sequences.

use crate::kernel::{power_of_two_in, spec_u32, within, PolicyError, PolicySpec, PolicySpecError};

/// The probe sequence after a collision (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Probing {
    /// Home, home + 1, home + 2, …
    #[default]
    Linear,
    /// Home, home + 1, home + 3, home + 6, … (triangular numbers).
    Triangular,
}

impl Probing {
    /// The slot probed at `step` (≥ 1) after `slot`, in a table of `mask + 1` slots: the
    /// shader's `next_slot`.
    pub fn next(self, slot: u32, step: u32, mask: u32) -> u32 {
        match self {
            Probing::Linear => slot.wrapping_add(1) & mask,
            Probing::Triangular => slot.wrapping_add(step) & mask,
        }
    }
}

/// Tunables of the hash kernels (the shaders see them as `const`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HashPolicy {
    /// Target fill of the table, in percent of the slots: `capacity_for` sizes tables so
    /// that `rows` keys fill at most this much. In `1..=100`.
    pub load_factor_percent: u32,
    /// The probe sequence.
    pub probing: Probing,
    /// Invocations per workgroup: a power of two in `32..=1024`.
    pub workgroup_size: u32,
    /// Rows each invocation inserts or looks up (coalesced: row `r` of a workgroup's tile is
    /// `r × workgroup_size + invocation`), in `1..=16`: fewer workgroups, so fewer statistics
    /// flushes.
    pub rows_per_thread: u32,
}

impl HashPolicy {
    /// Load factor 50 %, linear probing, 256 invocations of 4 rows.
    pub const DEFAULT: Self = Self {
        load_factor_percent: 50,
        probing: Probing::Linear,
        workgroup_size: 256,
        rows_per_thread: 4,
    };

    /// Rows one workgroup covers.
    pub fn rows_per_workgroup(&self) -> u32 {
        self.workgroup_size * self.rows_per_thread
    }

    /// Checks the ranges documented on each field.
    pub fn validate(&self) -> Result<(), PolicyError> {
        const P: &str = "hash";
        within(
            P,
            "load_factor_percent",
            self.load_factor_percent,
            1..=100,
            "in 1..=100",
        )?;
        within(
            P,
            "rows_per_thread",
            self.rows_per_thread,
            1..=16,
            "in 1..=16",
        )?;
        power_of_two_in(
            P,
            "workgroup_size",
            self.workgroup_size,
            32..=1024,
            "a power of two in 32..=1024",
        )
    }

    /// The smallest power-of-two capacity (at least 1) that holds `keys` distinct keys at
    /// the load factor; `None` past 2^31 slots.
    pub fn capacity_for(&self, keys: u64) -> Option<u64> {
        let percent = u64::from(self.load_factor_percent.clamp(1, 100));
        let slots = keys.checked_mul(100)?.div_ceil(percent).max(1);
        let capacity = slots.checked_next_power_of_two()?;
        (capacity <= 1 << 31).then_some(capacity)
    }
}

impl PolicySpec for HashPolicy {
    const KEYS: &'static str = "load (percent), probe (0 linear, 1 triangular), wg, rpt";

    fn set(&mut self, key: &str, value: u64) -> Result<bool, PolicySpecError> {
        match key {
            "load" => self.load_factor_percent = spec_u32(key, value)?,
            "probe" => {
                self.probing = if value == 0 {
                    Probing::Linear
                } else {
                    Probing::Triangular
                }
            }
            "wg" => self.workgroup_size = spec_u32(key, value)?,
            "rpt" => self.rows_per_thread = spec_u32(key, value)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

crate::kernel::policy_from_str!(HashPolicy, PolicyError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_are_powers_of_two_at_the_load_factor() {
        let p = HashPolicy::DEFAULT;
        assert_eq!(p.capacity_for(0), Some(1));
        assert_eq!(p.capacity_for(1), Some(2));
        assert_eq!(p.capacity_for(1 << 26), Some(1 << 27));
        assert_eq!(p.capacity_for((1 << 26) + 1), Some(1 << 28));
        assert_eq!(p.capacity_for(1 << 31), None);
        let full = HashPolicy {
            load_factor_percent: 100,
            ..p
        };
        assert_eq!(full.capacity_for(8), Some(8));
    }

    #[test]
    fn both_sequences_visit_every_slot_once() {
        for probing in [Probing::Linear, Probing::Triangular] {
            for capacity in [1u32, 2, 8, 64] {
                let mask = capacity - 1;
                let mut seen = vec![false; capacity as usize];
                let mut slot = 5 & mask;
                seen[slot as usize] = true;
                for step in 1..capacity {
                    slot = probing.next(slot, step, mask);
                    assert!(!seen[slot as usize], "{probing:?} revisits slot {slot}");
                    seen[slot as usize] = true;
                }
            }
        }
    }

    #[test]
    fn the_spec_syntax_sets_fields_and_rejects_ranges() {
        let p: HashPolicy = "load=25,probe=1,wg=64,rpt=2".parse().unwrap();
        assert_eq!(p.rows_per_thread, 2);
        assert!("rpt=0".parse::<HashPolicy>().is_err());
        assert_eq!(p.load_factor_percent, 25);
        assert_eq!(p.probing, Probing::Triangular);
        assert_eq!(p.workgroup_size, 64);
        assert!("load=0".parse::<HashPolicy>().is_err());
        assert!("wg=100".parse::<HashPolicy>().is_err());
        assert!("bogus=1".parse::<HashPolicy>().is_err());
    }
}
