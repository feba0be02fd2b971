//! Tunables of the scan kernel, chosen in one place.
//!
//! The shader sees them as `const` declarations of a generated header (`source.rs`), so the
//! driver compiler can unroll the per-thread loops; nothing else in `scan.wgsl` is a tuning
//! literal.

use thiserror::Error;

use crate::kernel::{spec_u32, PolicySpec, PolicySpecError};

/// How one workgroup of the scan kernel processes its tile, and how patient its look-back is.
///
/// A tile holds `workgroup_size * vec4_per_thread * 4` consecutive elements; each invocation
/// loads `vec4_per_thread` `vec4<u32>` slots (slot `i * workgroup_size + invocation`, so a
/// workgroup's loads of one round are contiguous).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScanPolicy {
    /// Invocations per workgroup. A power of two in `8..=1024`.
    pub workgroup_size: u32,
    /// `vec4<u32>` slots per invocation per tile, in `1..=16`.
    pub vec4_per_thread: u32,
    /// Predecessor tiles inspected in parallel per look-back step, in `1..=workgroup_size`.
    pub lookback_window: u32,
    /// Look-back steps without progress before the workgroup stops waiting and reduces the
    /// stalled predecessor itself (decoupled fallback). At least 1.
    pub spin_limit: u32,
    /// Generate the per-invocation slot loops as straight-line code (`#unroll` in scan.wgsl)
    /// so the slot arrays stay in registers.
    pub unroll: bool,
    /// Compaction only: the epilogue loads every selected row's value of the invocation
    /// before its first scattered store. Storage bindings may alias as far as the driver
    /// compiler knows, so a load after a store waits for it: interleaved, each slot costs a
    /// dependent round trip.
    pub gather_first: bool,
    /// Compaction only: like `gather_first`, but the values are loaded right after the tile's
    /// aggregate is published, before the look-back, so their latency overlaps its reads (at
    /// the cost of holding them in registers through it). Not a default: on the H200 (2^28,
    /// 2026-12-01, `--scan-policy gather=2,...`) it gave 0.945 / 1.166 / 1.456 ms at 1 / 50 /
    /// 100 % selected with the default tile, 0.825 / 1.086 / 1.192 ms with 128 × 8 `vec4`,
    /// against 0.855 / 1.139 / 1.337 ms for the NVIDIA default in an earlier call.
    pub gather_early: bool,
}

impl ScanPolicy {
    /// The default for discrete GPUs: 256 invocations × 4 `vec4` = 4096 elements per tile, a
    /// window of 32 predecessors, fallback after 16 steps without progress.
    pub const DEFAULT: Self = Self {
        workgroup_size: 256,
        vec4_per_thread: 4,
        lookback_window: 32,
        spin_limit: 16,
        unroll: true,
        gather_first: false,
        gather_early: false,
    };

    /// Elements per tile: `workgroup_size * vec4_per_thread * 4`.
    pub const fn tile_elements(&self) -> u32 {
        self.workgroup_size * self.vec4_per_thread * 4
    }

    /// Bytes of workgroup memory the kernel declares for this policy (upper bound; the
    /// segmented variant needs about twice the slot arrays).
    pub const fn workgroup_storage_bytes(&self, segmented: bool) -> u32 {
        let slots = self.workgroup_size * self.vec4_per_thread;
        let padded = slots + (slots >> 5) + 1;
        let pair_arrays = padded + 2 * self.workgroup_size;
        let arrays = if segmented {
            2 * pair_arrays
        } else {
            pair_arrays
        };
        let window = 2 * self.lookback_window;
        // Scalars: ticket, aggregate (2), first start, need look-back, look-back state (4).
        4 * (arrays + window + 9)
    }

    /// Checks the ranges documented on each field.
    pub fn validate(&self) -> Result<(), ScanPolicyError> {
        let p = *self;
        if !(8..=1024).contains(&p.workgroup_size) || !p.workgroup_size.is_power_of_two() {
            return Err(ScanPolicyError::WorkgroupSize(p.workgroup_size));
        }
        if !(1..=16).contains(&p.vec4_per_thread) {
            return Err(ScanPolicyError::Vec4PerThread(p.vec4_per_thread));
        }
        if p.lookback_window == 0 || p.lookback_window > p.workgroup_size {
            return Err(ScanPolicyError::LookbackWindow {
                window: p.lookback_window,
                workgroup_size: p.workgroup_size,
            });
        }
        if p.spin_limit == 0 {
            return Err(ScanPolicyError::SpinLimit);
        }
        Ok(())
    }
}

crate::kernel::policy_from_str!(ScanPolicy, ScanPolicyError);

impl PolicySpec for ScanPolicy {
    const KEYS: &'static str = "wg, vec4, window, spin, unroll, gather";

    fn set(&mut self, key: &str, value: u64) -> Result<bool, PolicySpecError> {
        match key {
            "wg" => self.workgroup_size = spec_u32(key, value)?,
            "vec4" => self.vec4_per_thread = spec_u32(key, value)?,
            "window" => self.lookback_window = spec_u32(key, value)?,
            "spin" => self.spin_limit = spec_u32(key, value)?,
            "unroll" => self.unroll = value != 0,
            // 0: values loaded between the stores; 1: before the first store; 2: before the
            // look-back (gather_early).
            "gather" => {
                self.gather_first = value == 1;
                self.gather_early = value == 2;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A [`ScanPolicy`] field outside its documented range.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ScanPolicyError {
    /// `workgroup_size` is not a power of two in `8..=1024`.
    #[error("scan policy: workgroup_size {0} is not a power of two in 8..=1024")]
    WorkgroupSize(u32),
    /// `vec4_per_thread` is not in `1..=16`.
    #[error("scan policy: vec4_per_thread {0} is not in 1..=16")]
    Vec4PerThread(u32),
    /// `lookback_window` is 0 or larger than the workgroup.
    #[error("scan policy: lookback_window {window} is not in 1..={workgroup_size}")]
    LookbackWindow {
        /// The requested window.
        window: u32,
        /// The policy's workgroup size.
        workgroup_size: u32,
    },
    /// `spin_limit` is 0.
    #[error("scan policy: spin_limit must be at least 1")]
    SpinLimit,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::PolicyParseError;

    #[test]
    fn default_policy_is_valid_and_4096_wide() {
        ScanPolicy::DEFAULT.validate().unwrap();
        assert_eq!(ScanPolicy::DEFAULT.tile_elements(), 4096);
        assert!(ScanPolicy::DEFAULT.workgroup_storage_bytes(true) <= 16 * 1024);
    }

    #[test]
    fn rejects_out_of_range_fields() {
        let p = ScanPolicy::DEFAULT;
        assert_eq!(
            ScanPolicy {
                workgroup_size: 96,
                ..p
            }
            .validate(),
            Err(ScanPolicyError::WorkgroupSize(96))
        );
        assert_eq!(
            ScanPolicy {
                vec4_per_thread: 0,
                ..p
            }
            .validate(),
            Err(ScanPolicyError::Vec4PerThread(0))
        );
        assert!(ScanPolicy {
            lookback_window: 512,
            ..p
        }
        .validate()
        .is_err());
        assert_eq!(
            ScanPolicy { spin_limit: 0, ..p }.validate(),
            Err(ScanPolicyError::SpinLimit)
        );
    }

    #[test]
    fn parses_key_value_specs() {
        let p: ScanPolicy = "wg=128,vec4=2,unroll=0".parse().unwrap();
        assert_eq!(
            p,
            ScanPolicy {
                workgroup_size: 128,
                vec4_per_thread: 2,
                unroll: false,
                ..ScanPolicy::DEFAULT
            }
        );
        assert_eq!("default".parse::<ScanPolicy>(), Ok(ScanPolicy::DEFAULT));
        assert_eq!(
            "wg=96".parse::<ScanPolicy>(),
            Err(PolicyParseError::Invalid(ScanPolicyError::WorkgroupSize(
                96
            )))
        );
        assert!(matches!(
            "sglb=1".parse::<ScanPolicy>(),
            Err(PolicyParseError::Spec(PolicySpecError::UnknownKey { .. }))
        ));
    }
}
