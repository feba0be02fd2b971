//! Tunables of the sort family, chosen in one place: digit width, workgroup shapes, keys per
//! thread, histogram batching, look-back patience and segment width buckets.
//!
//! Kernels see them as `const` declarations of a generated header (`source.rs`); no WGSL file
//! of this module holds a tuning literal of its own.

use gpugraph_command::wgpu;

use crate::kernel::{spec_u32, within, PolicyError, PolicySpec, PolicySpecError};

/// Bits of the key consumed by one radix pass.
pub const RADIX_BITS: u32 = 8;
/// Digit values per pass (`2^RADIX_BITS`).
pub const RADIX: u32 = 1 << RADIX_BITS;
/// Radix passes over 32-bit keys.
pub const PASSES: u32 = 32 / RADIX_BITS;
/// Invocations of every radix kernel: one per digit, so look-back and histogram scans map a
/// digit to an invocation.
pub const RADIX_WORKGROUP: u32 = RADIX;
/// Largest domain sorted inside one workgroup (bitonic); larger domains use radix passes.
pub const LOCAL_SORT_MAX: u32 = 256;
/// Invocations of the bitonic kernels: each owns one compare-exchange pair of a 256-row tile.
pub const LOCAL_WORKGROUP: u32 = LOCAL_SORT_MAX / 2;
/// Width classes of [`super::SegmentedSort`]: a segment of `len` rows goes to the first class
/// `>= len`; one dispatch (one graph node) per class in use.
pub const SEGMENT_WIDTHS: [u32; 4] = [32, 64, 128, 256];
/// Invocations of the segment classification kernel (one segment each).
pub const CLASSIFY_WORKGROUP: u32 = 256;
/// Status words pack a 2-bit state and a 30-bit count, so a radix domain holds fewer rows.
pub const MAX_RADIX_ROWS: u64 = (1 << 30) - 1;
/// Smallest subgroup the multisplit ranking ([`SortPolicy::multisplit`]) runs on: its
/// per-subgroup digit counters take `RADIX / 2` words per subgroup, so smaller subgroups (more
/// of them per workgroup) would need more workgroup memory than the tile. A device whose
/// subgroups are smaller (or not all full) ranks with the workgroup-memory counting sorts.
pub const SPLIT_MIN_SUBGROUP: u32 = 8;
/// Largest subgroup the multisplit ranking handles (`subgroupBallot` returns 128 bits).
pub const SPLIT_MAX_SUBGROUP: u32 = 128;
/// Workgroup words of the multisplit counters: 16-bit counts, two digits per word, one row of
/// `RADIX / 2` words per subgroup of at least [`SPLIT_MIN_SUBGROUP`] invocations.
pub const SPLIT_WORDS: u32 = (RADIX_WORKGROUP / SPLIT_MIN_SUBGROUP) * (RADIX / 2);

/// Tile shape and look-back behavior of the radix passes.
///
/// A radix tile is `RADIX_WORKGROUP * keys_per_thread` keys; each invocation holds
/// `keys_per_thread` consecutive keys in registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SortPolicy {
    /// Keys per invocation of a radix pass: a multiple of 4 in `4..=64` (vec4 loads; the
    /// in-tile ranking packs 16-bit counts, so tiles stay below 2^16 keys).
    pub keys_per_thread: u32,
    /// Radix tiles histogrammed by one workgroup of the global histogram pass (fewer global
    /// atomics with more), in `1..=64`.
    pub histogram_tiles_per_workgroup: u32,
    /// Predecessor tiles each look-back step reads with independent loads, in `1..=32`. The
    /// inclusive prefix crosses tiles one load round trip per step, so a wider window lets it
    /// advance faster when that chain is the bottleneck.
    pub lookback_window: u32,
    /// Look-back patience before a workgroup stops waiting and counts the stalled predecessor
    /// tile's digits itself (decoupled fallback): fruitless reads of one digit's walk with
    /// `independent_lookback`, fruitless workgroup rounds without. At least 1.
    pub spin_limit: u32,
    /// Testing only: the look-back ignores published tile status, so every predecessor tile is
    /// recounted through the fallback path (quadratic in tiles).
    pub force_fallback: bool,
    /// Testing only: workgroups take tiles last-first, so each waits on predecessors that have
    /// not started, the schedule a device without forward-progress guarantees may produce.
    pub reverse_tiles: bool,
    /// Generate the radix pass's per-invocation key loops as straight-line code (`#unroll`).
    /// Off by default until measured on the H200 (`gpugraph bench sort --sort-policy unroll=1`).
    pub unroll: bool,
    /// Use subgroup operations for the radix pass's workgroup prefix sums where the device has
    /// `Features::SUBGROUP` (3 barriers per scan instead of 18; the ranking makes three per
    /// tile). Ignored on devices without subgroups; compare with `--sort-policy subgroups=0`.
    pub subgroups: bool,
    /// Look-back where each digit's invocation walks its predecessors on its own, with no
    /// workgroup barrier inside the walk, until it finds an inclusive prefix or has read
    /// `spin_limit` times in a row without progress; only then does the workgroup vote (one
    /// barrier) and recount the latest stalled predecessor (decoupled fallback). Off: every
    /// walk step is a workgroup round (a barrier and a leader decision), and the fallback
    /// comes after `spin_limit` rounds without progress. Compare with `--sort-policy indep=0`.
    pub independent_lookback: bool,
    /// Rank each tile by warp-level multisplit where the device has `Features::SUBGROUP` and
    /// its subgroups are full and in `SPLIT_MIN_SUBGROUP..=SPLIT_MAX_SUBGROUP`: 8 ballots per
    /// key find its digit peers, per-subgroup digit counters and one scan over subgroups per
    /// digit give the stable rank (each subgroup holds a contiguous run of the tile, keys
    /// striped over its lanes). Otherwise (flag off, no subgroups, or other subgroup shapes at
    /// run time) two 4-bit counting sorts in workgroup memory rank the tile. Compare with
    /// `--sort-policy split=0`.
    pub multisplit: bool,
    /// Give the multisplit counters their own workgroup array ([`SPLIT_WORDS`] words) instead
    /// of sharing the shuffle array, which then needs no atomics for the scatter (costs
    /// 16 KiB more workgroup memory at the default tile; off by default so a 32 KiB device
    /// fits). Compare with `--sort-policy apart=1`.
    pub multisplit_apart: bool,
    /// Look back right after publishing the tile's digit counts, before ranking, instead of
    /// after ranking (Onesweep's order). The tile's inclusive prefixes are then published a
    /// ranking earlier, so successors walk back over fewer tiles, at the cost of not hiding
    /// this tile's wait behind its own ranking. Compare with `--sort-policy early=1`.
    pub lookback_first: bool,
    /// Testing only: the multisplit uses 128-bit peer masks on every subgroup size (devices
    /// with subgroups of at most 32 lanes otherwise use one 32-bit word), so the path of
    /// wider subgroups runs on lavapipe's 8-lane subgroups.
    pub wide_ballots: bool,
    /// Apply the key transforms of int32, float32 and descending sorts inside the radix
    /// kernels: the histogram and the first digit pass encode the caller's keys as they load
    /// them, the last pass decodes before its store, so no `<id>.encode` / `<id>.decode` node
    /// runs (8 B/row less each). Off: the transforms run as their own nodes around the uint32
    /// ascending core. Domains of at most [`LOCAL_SORT_MAX`] rows always use the nodes.
    /// Compare with `--sort-policy fuse=0`.
    pub fuse_keys: bool,
    /// Vec4 loads each invocation of the histogram pass issues before counting them, in
    /// `1..=8` (more loads in flight per invocation when the pass is latency-bound; 1 loads
    /// and counts one vec4 at a time). Compare with `--sort-policy hbatch=4`.
    pub histogram_batch: u32,
    /// Copies of the histogram pass's workgroup counters, 1 or 2: with 2, even and odd
    /// invocations count into their own copy, halving same-address atomic collisions (the
    /// copies are summed before the global atomics). Compare with `--sort-policy hcopies=2`.
    pub histogram_copies: u32,
    /// Keys-only and pair passes write each key (and value) straight to its output row from
    /// registers instead of first reordering the tile through workgroup memory: two barriers
    /// and two workgroup-memory round trips per tile (four with values) less, at the price
    /// of uncoalesced stores (runs of equal digits are about `tile / 256` rows long).
    /// Compare with `--sort-policy direct=1`.
    pub scatter_direct: bool,
    /// Each radix-pass workgroup sorts the tile of its own workgroup id instead of taking a
    /// tile ticket (a global atomic round trip before its first load). Correct on any
    /// launch order through the decoupled fallback; fast where workgroups start in id order.
    /// Compare with `--sort-policy wgtiles=1`.
    pub workgroup_tiles: bool,
    /// Stage the tile's keys in rank order in workgroup memory, and load its values, before
    /// the look-back instead of after it, so the look-back's wait hides that work (and the
    /// value loads' latency). Only with the reorder scatter and the look-back after ranking
    /// (ignored with `scatter_direct` or `lookback_first`). Compare with
    /// `--sort-policy overlap=1`.
    pub overlap_lookback: bool,
}

impl SortPolicy {
    /// Default for devices with at least 20 KiB of workgroup memory: 4096-key tiles, 8 tiles
    /// per histogram workgroup, a look-back window of 1, the independent look-back with the
    /// fallback after 64 fruitless reads, multisplit ranking where subgroups allow, key
    /// transforms fused into the radix kernels, a histogram that counts each vec4 as it loads
    /// it into one counter copy, the scatter through workgroup memory and tiles by ticket
    /// (the last three are the behavior measured on the H200 so far; their alternatives are
    /// knobs until the H200 says otherwise). Measured
    /// before the independent look-back and the multisplit: on an H200 (wgpu/Vulkan) 32 keys
    /// per thread ran about 2x slower per pass and a window of 8 about 7% slower at 2^20
    /// rows: the passes are bound by per-tile latency, not by the look-back chain (see the
    /// module doc of `sort`).
    pub const DEFAULT: Self = Self {
        keys_per_thread: 16,
        histogram_tiles_per_workgroup: 8,
        lookback_window: 1,
        spin_limit: 64,
        force_fallback: false,
        reverse_tiles: false,
        unroll: false,
        subgroups: true,
        independent_lookback: true,
        multisplit: true,
        multisplit_apart: false,
        lookback_first: false,
        wide_ballots: false,
        fuse_keys: true,
        histogram_batch: 1,
        histogram_copies: 1,
        scatter_direct: false,
        workgroup_tiles: false,
        overlap_lookback: false,
    };

    /// The default shrunk until its radix pass fits the device's workgroup memory: fewer keys
    /// per thread first, then without the multisplit counters.
    pub fn for_device(limits: &wgpu::Limits) -> Self {
        let fits =
            |p: &Self| p.workgroup_storage_bytes() <= limits.max_compute_workgroup_storage_size;
        let shrink = |mut p: Self| {
            while p.keys_per_thread > 4 && !fits(&p) {
                p.keys_per_thread /= 2;
            }
            p
        };
        let p = shrink(Self::DEFAULT);
        if fits(&p) {
            return p;
        }
        shrink(Self {
            multisplit: false,
            ..Self::DEFAULT
        })
    }

    /// The default a sort gets on `device`: [`Self::for_device`] with the look-back tuned per
    /// device class from measurement.
    ///
    /// | device class | change | evidence |
    /// |---|---|---|
    /// | NVIDIA (vendor 0x10de) | look-back window 4, unrolled key loops | H200, 2026-12-01, one call, 2^26 u32 keys / pairs: 4.52 / 5.11 ms against 8.14 / 11.11 ms with window 1 (`--sort-policy window=4,unroll=1`); the look-back before ranking (`early=1`) and the old per-read workgroup look-back (`indep=0`) changed nothing, the counting-sort ranking (`split=0`) doubled the time |
    /// | NVIDIA (vendor 0x10de) | key transforms as their own nodes (`fuse_keys` off) | H200, 2026-12-01, 2^26 float32 descending: 4.93 ms with the encode/decode nodes against 5.90 ms fused (every fused pass 1.37–1.40 ms instead of 1.04; u32 keys unchanged at 4.48 ms) |
    /// | others (lavapipe, ...) | none | |
    pub fn for_gpu(device: &wgpu::Device) -> Self {
        let mut p = Self::for_device(&device.limits());
        if device.adapter_info().vendor == 0x10de {
            p.lookback_window = 4;
            p.unroll = true;
            p.fuse_keys = false;
        }
        p
    }

    /// Keys per radix tile.
    pub const fn tile_rows(&self) -> u32 {
        RADIX_WORKGROUP * self.keys_per_thread
    }

    /// Words of the radix pass's shuffle array: the tile, and the ranking's counters (16 per
    /// invocation for the counting sorts, [`SPLIT_WORDS`] with `multisplit` unless apart).
    pub const fn shuffle_words(&self) -> u32 {
        let shared = self.multisplit && !self.multisplit_apart;
        let counters = if shared && SPLIT_WORDS > 8 * RADIX_WORKGROUP {
            SPLIT_WORDS
        } else {
            8 * RADIX_WORKGROUP
        };
        let tile = self.tile_rows();
        if tile > counters {
            tile
        } else {
            counters
        }
    }

    /// Workgroup memory the radix pass declares: the shuffle array (which also hosts the
    /// ranking's counters), digit counts, bases and scan scratch.
    pub const fn workgroup_storage_bytes(&self) -> u32 {
        let apart = if self.multisplit && self.multisplit_apart {
            SPLIT_WORDS
        } else {
            0
        };
        4 * (self.shuffle_words() + apart + 3 * RADIX + 16)
    }

    /// Checks the documented ranges and that the device can run the policy.
    pub fn validate(&self, limits: &wgpu::Limits) -> Result<(), SortPolicyError> {
        const P: &str = "sort";
        let p = self;
        if !p.keys_per_thread.is_multiple_of(4) {
            let e = "a multiple of 4 in 4..=64";
            return Err(PolicyError::new(P, "keys_per_thread", p.keys_per_thread.into(), e).into());
        }
        within(
            P,
            "keys_per_thread",
            p.keys_per_thread,
            4..=64,
            "a multiple of 4 in 4..=64",
        )?;
        let tiles = p.histogram_tiles_per_workgroup;
        within(
            P,
            "histogram_tiles_per_workgroup",
            tiles,
            1..=64,
            "in 1..=64",
        )?;
        within(P, "lookback_window", p.lookback_window, 1..=32, "in 1..=32")?;
        within(P, "histogram_batch", p.histogram_batch, 1..=8, "in 1..=8")?;
        within(P, "histogram_copies", p.histogram_copies, 1..=2, "1 or 2")?;
        within(P, "spin_limit", p.spin_limit, 1..=u32::MAX, "at least 1")?;
        if p.workgroup_storage_bytes() > limits.max_compute_workgroup_storage_size {
            return Err(SortPolicyError::DeviceLimit {
                what: "workgroup memory bytes (keys_per_thread and histogram_copies)",
                needed: p.workgroup_storage_bytes().into(),
                limit: limits.max_compute_workgroup_storage_size.into(),
            });
        }
        if limits.max_compute_invocations_per_workgroup < RADIX_WORKGROUP {
            return Err(SortPolicyError::DeviceLimit {
                what: "invocations per workgroup (radix kernels)",
                needed: RADIX_WORKGROUP.into(),
                limit: limits.max_compute_invocations_per_workgroup.into(),
            });
        }
        Ok(())
    }
}

/// Why a [`SortPolicy`] cannot run: a field outside its range, or more than the device has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SortPolicyError {
    /// A field outside its documented range.
    #[error(transparent)]
    Field(#[from] PolicyError),
    /// The policy needs more of a device resource than the device allows.
    #[error("sort policy: {what}: needs {needed} but the device allows {limit}")]
    DeviceLimit {
        /// The resource.
        what: &'static str,
        /// What the policy needs.
        needed: u64,
        /// What the device allows.
        limit: u64,
    },
}

impl PolicySpec for SortPolicy {
    const KEYS: &'static str = "kpt, tiles, window, spin, unroll, subgroups, indep, split, apart, \
         early, fuse, hbatch, hcopies, direct, wgtiles, overlap";

    /// The CLI's `--sort-policy` keys, one per field. Ranges are checked by
    /// [`SortPolicy::validate`], which needs the device's limits.
    fn set(&mut self, key: &str, value: u64) -> Result<bool, PolicySpecError> {
        let on = value != 0;
        match key {
            "kpt" => self.keys_per_thread = spec_u32(key, value)?,
            "tiles" => self.histogram_tiles_per_workgroup = spec_u32(key, value)?,
            "window" => self.lookback_window = spec_u32(key, value)?,
            "spin" => self.spin_limit = spec_u32(key, value)?,
            "unroll" => self.unroll = on,
            "subgroups" => self.subgroups = on,
            "indep" => self.independent_lookback = on,
            "split" => self.multisplit = on,
            "apart" => self.multisplit_apart = on,
            "early" => self.lookback_first = on,
            "fuse" => self.fuse_keys = on,
            "hbatch" => self.histogram_batch = spec_u32(key, value)?,
            "hcopies" => self.histogram_copies = spec_u32(key, value)?,
            "direct" => self.scatter_direct = on,
            "wgtiles" => self.workgroup_tiles = on,
            "overlap" => self.overlap_lookback = on,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl Default for SortPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_specs_set_every_key_and_name_unknown_ones() {
        let mut p = SortPolicy::DEFAULT;
        p.apply(
            "kpt=8, tiles=4,window=2,spin=9,unroll=0,subgroups=0,indep=0,split=0,apart=1,early=1",
        )
        .unwrap();
        p.apply("fuse=0,hbatch=3,hcopies=2,direct=1,wgtiles=1,overlap=1")
            .unwrap();
        let want = SortPolicy {
            keys_per_thread: 8,
            histogram_tiles_per_workgroup: 4,
            lookback_window: 2,
            spin_limit: 9,
            unroll: false,
            subgroups: false,
            independent_lookback: false,
            multisplit: false,
            multisplit_apart: true,
            lookback_first: true,
            fuse_keys: false,
            histogram_batch: 3,
            histogram_copies: 2,
            scatter_direct: true,
            workgroup_tiles: true,
            overlap_lookback: true,
            ..SortPolicy::DEFAULT
        };
        assert_eq!(p, want);
        let mut q = SortPolicy::DEFAULT;
        q.apply("default").unwrap();
        assert_eq!(q, SortPolicy::DEFAULT);
        let err = q.apply("kpt=8,bogus=1").unwrap_err().to_string();
        assert!(
            err.contains("unknown key 'bogus'") && err.contains("overlap"),
            "{err}"
        );
        let err = q.apply("window=x").unwrap_err().to_string();
        assert!(err.contains("window") && err.contains("'x'"), "{err}");
    }

    #[test]
    fn default_fits_common_devices_and_shrinks_for_small_ones() {
        let lavapipe = wgpu::Limits {
            max_compute_workgroup_storage_size: 32 * 1024,
            ..wgpu::Limits::default()
        };
        assert_eq!(SortPolicy::for_device(&lavapipe), SortPolicy::DEFAULT);
        SortPolicy::DEFAULT.validate(&lavapipe).unwrap();
        assert_eq!(SortPolicy::DEFAULT.tile_rows(), 4096);
        let webgpu = wgpu::Limits::default();
        let small = SortPolicy::for_device(&webgpu);
        // The multisplit counters alone take 16 KiB: dropped before the tile shrinks below 8.
        assert_eq!(small.keys_per_thread, 8);
        assert!(!small.multisplit);
        small.validate(&webgpu).unwrap();
    }

    #[test]
    fn rejects_out_of_range_fields() {
        let l = wgpu::Limits {
            max_compute_workgroup_storage_size: 1 << 20,
            ..wgpu::Limits::default()
        };
        let p = SortPolicy::DEFAULT;
        for bad in [
            SortPolicy {
                keys_per_thread: 6,
                ..p
            },
            SortPolicy {
                keys_per_thread: 128,
                ..p
            },
            SortPolicy {
                histogram_tiles_per_workgroup: 0,
                ..p
            },
            SortPolicy { spin_limit: 0, ..p },
            SortPolicy {
                histogram_batch: 0,
                ..p
            },
            SortPolicy {
                histogram_batch: 9,
                ..p
            },
            SortPolicy {
                histogram_copies: 3,
                ..p
            },
            SortPolicy {
                lookback_window: 0,
                ..p
            },
        ] {
            assert!(bad.validate(&l).is_err(), "{bad:?}");
        }
    }
}
