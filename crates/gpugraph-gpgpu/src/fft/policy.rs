//! Tunables of the FFT kernels ([`FftPolicy`]), their ranges and `key=value` syntax
//! (`elements=4096,threads=256`, the bench's `--fft-policy`).

use gpugraph_command::wgpu;

use crate::kernel::{power_of_two_in, spec_u32, PolicyError, PolicySpec, PolicySpecError};

/// Kernel tunables. Both are upper bounds: the device's workgroup memory and invocation
/// limits cap them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FftPolicy {
    /// Complex elements one workgroup holds, a power of two in `8..=65536`: the longest
    /// one-pass axis, and `elements / length` sequences per workgroup for shorter ones.
    pub workgroup_elements: u32,
    /// Invocations per workgroup at most, a power of two in `1..=1024`; each holds
    /// `elements / threads` values in registers.
    pub threads: u32,
    /// Permute workgroup-memory words within each 32-word row so the exchange after stage 0
    /// is free of bank conflicts, at a few integer operations per access (`swizzle=1`).
    pub swizzle: bool,
    /// The longest column axis of a 2-D transform done in one pass (0: as long as rows), a
    /// power of two otherwise: longer columns take a four-step pair whose short strided
    /// sub-transforms give each workgroup more adjacent columns (wider coalesced rows of
    /// memory) at the cost of one more pass (`columns=1024`).
    pub column_length: u32,
    /// The longest row axis (a 1-D transform, or the rows of a 2-D one) done in one pass (0:
    /// the workgroup length), a power of two otherwise: longer rows take a four-step pair, or
    /// a three-pass decomposition past its square (`rows=64`; lets tests reach the multi-pass
    /// paths at small sizes).
    pub row_length: u32,
    /// The length of the first (strided, twiddled) sub-transform of a four-step column pair
    /// (0: the balanced split, `2^⌈log2 h / 2⌉`), a power of two otherwise, clamped so that
    /// both sub-transforms fit one pass (`split=64`).
    pub column_split: u32,
    /// Passes that read and write strided sequences (columns, four-step column steps) keep
    /// adjacent invocations on adjacent sequences in every stage and store workgroup memory
    /// element-major (`element · C + sequence`), so each exchange is bank-conflict free
    /// whatever the stride of the Stockham stage (`interleave=1`; passes of at least 16
    /// sequences per workgroup).
    pub interleave: bool,
    /// Complex elements one workgroup of a column pass holds (0: `workgroup_elements`), a
    /// power of two in `8..=65536` otherwise: 4,096 (32 KiB with both halves of each value
    /// stored at once, fewer barriers per exchange) fits NVIDIA's 48 KiB where the default
    /// 8,192 exchanges re and im in turn (`colelements=4096`).
    pub column_elements: u32,
}

impl FftPolicy {
    /// 8,192 elements (32 KiB of workgroup memory with re and im exchanged in turn) over at
    /// most 512 invocations: 16 values each.
    pub const DEFAULT: Self = Self {
        workgroup_elements: 8192,
        threads: 512,
        swizzle: false,
        column_length: 0,
        row_length: 0,
        column_split: 0,
        interleave: false,
        column_elements: 0,
    };

    /// The policy a plain `add_to_graph` gets on `device`, chosen per device class from
    /// measurement.
    ///
    /// | device class | policy | evidence |
    /// |---|---|---|
    /// | NVIDIA (vendor 0x10de) | `columns=1024,swizzle=1,interleave=1,colelements=2048` | H200, 2026-12-02, one call at 6bbe73b (`bench fft` with eight variants, `bench/results/h200/2026-12-02-6bbe73b/fft-combined.txt`): 4096² forward 0.289 ms against 0.385 ms for the previous `swizzle=1,columns=1024` (`torch.fft.fft2` 0.226 ms: 0.59× → 0.78×), 8192² 1.126 ms against 1.751 ms (0.861 ms: 0.49× → 0.76×); `interleave=1` alone 0.310 / 1.194 ms, `threads=1024` 0.302 / 1.215 ms, `colelements=4096` 0.336 / 1.313 ms. Earlier (a2c1da2): `swizzle=1,columns=1024` against [`Self::DEFAULT`] 0.383 / 1.731 ms against 0.420 / 2.845 ms |
    /// | others (lavapipe, ...) | [`Self::DEFAULT`] | |
    pub fn for_device(device: &wgpu::Device) -> Self {
        match device.adapter_info().vendor {
            0x10de => Self {
                swizzle: true,
                column_length: 1024,
                interleave: true,
                column_elements: 2048,
                ..Self::DEFAULT
            },
            _ => Self::DEFAULT,
        }
    }

    /// Checks the ranges documented on each field.
    pub fn validate(&self) -> Result<(), PolicyError> {
        const P: &str = "fft";
        power_of_two_in(
            P,
            "workgroup_elements",
            self.workgroup_elements,
            8..=65536,
            "a power of two in 8..=65536",
        )?;
        power_of_two_in(
            P,
            "threads",
            self.threads,
            1..=1024,
            "a power of two in 1..=1024",
        )?;
        for (field, value) in [
            ("column_length", self.column_length),
            ("row_length", self.row_length),
            ("column_split", self.column_split),
        ] {
            if value != 0 {
                power_of_two_in(
                    P,
                    field,
                    value,
                    2..=65536,
                    "0 or a power of two in 2..=65536",
                )?;
            }
        }
        if self.column_elements != 0 {
            power_of_two_in(
                P,
                "column_elements",
                self.column_elements,
                8..=65536,
                "0 or a power of two in 8..=65536",
            )?;
        }
        Ok(())
    }
}

impl PolicySpec for FftPolicy {
    const KEYS: &'static str =
        "elements, threads, swizzle, columns, rows, split, interleave, colelements";

    fn set(&mut self, key: &str, value: u64) -> Result<bool, PolicySpecError> {
        match key {
            "elements" => self.workgroup_elements = spec_u32(key, value)?,
            "threads" => self.threads = spec_u32(key, value)?,
            "swizzle" => self.swizzle = value != 0,
            "columns" => self.column_length = spec_u32(key, value)?,
            "rows" => self.row_length = spec_u32(key, value)?,
            "split" => self.column_split = spec_u32(key, value)?,
            "interleave" => self.interleave = value != 0,
            "colelements" => self.column_elements = spec_u32(key, value)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

crate::kernel::policy_from_str!(FftPolicy, PolicyError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_ranges_hold() {
        let p: FftPolicy = "elements=4096, threads=256,swizzle=1".parse().unwrap();
        assert_eq!(
            (p.workgroup_elements, p.threads, p.swizzle),
            (4096, 256, true)
        );
        assert!("elements=3000".parse::<FftPolicy>().is_err());
        assert!("threads=0".parse::<FftPolicy>().is_err());
        assert_eq!("columns=64".parse::<FftPolicy>().unwrap().column_length, 64);
        assert!("columns=1".parse::<FftPolicy>().is_err());
        assert!("wg=1".parse::<FftPolicy>().is_err());
        let p: FftPolicy = "rows=64,split=32,interleave=1,colelements=4096"
            .parse()
            .unwrap();
        assert_eq!(
            (
                p.row_length,
                p.column_split,
                p.interleave,
                p.column_elements
            ),
            (64, 32, true, 4096)
        );
        assert!("rows=3".parse::<FftPolicy>().is_err());
        assert!("split=1".parse::<FftPolicy>().is_err());
        assert!("colelements=4".parse::<FftPolicy>().is_err());
        assert_eq!(
            "default".parse::<FftPolicy>().unwrap(),
            FftPolicy::default()
        );
    }
}
