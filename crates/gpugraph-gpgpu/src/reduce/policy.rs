//! Tunables of the reduction kernels ([`ReducePolicy`]), their ranges and `key=value` syntax.

use crate::kernel::{power_of_two_in, spec_u32, within, PolicyError, PolicySpec, PolicySpecError};

/// Tunables of the reduction kernels, in one place (the shader sees them as `const`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReducePolicy {
    /// Invocations per workgroup (both passes): a power of two in `32..=1024`.
    pub workgroup_size: u32,
    /// `vec4` slots each invocation loads per tile round (all issued before accumulating),
    /// in `1..=16`.
    pub vec4_per_thread: u32,
    /// Most workgroups (= partials) per chunk, at least 1; they stride over the tiles.
    pub max_partials_per_chunk: u64,
}

impl ReducePolicy {
    /// 256 invocations × 4 slots = 4,096 values per tile, at most 1,024 partials per chunk.
    pub const DEFAULT: Self = Self {
        workgroup_size: 256,
        vec4_per_thread: 4,
        max_partials_per_chunk: 1024,
    };

    /// The policy a plain [`crate::reduce::Reduction::add_to_graph`] gets on `device`, chosen
    /// per device class from measurement.
    ///
    /// | device class | policy | evidence |
    /// |---|---|---|
    /// | NVIDIA (vendor 0x10de) | 512 invocations × 8 `vec4` (16,384-value tiles) | H200, 2026-12-01, one call at cdc1cd1, 2^28 f32 (`bench reduce --reduce-policy …`, `bench/results/h200/2026-12-01-cdc1cd1/reduce-combined.txt`): extent 0.256 ms against 0.291 ms for the default and `torch.aminmax` 0.262 ms (0.90× → 1.02×); sum 0.254 / 0.253 ms (unchanged, `torch.sum` 0.257 ms); `wg=512` alone 0.259, `partials=2048` 0.262, `wg=128,vec4=8` 0.272 |
    /// | others (lavapipe, ...) | [`Self::DEFAULT`] | |
    pub fn for_device(device: &wgpu::Device) -> Self {
        match device.adapter_info().vendor {
            0x10de => Self {
                workgroup_size: 512,
                vec4_per_thread: 8,
                ..Self::DEFAULT
            },
            _ => Self::DEFAULT,
        }
    }

    /// Checks the ranges documented on each field.
    pub fn validate(&self) -> Result<(), PolicyError> {
        const P: &str = "reduce";
        let two = "a power of two in 32..=1024";
        power_of_two_in(P, "workgroup_size", self.workgroup_size, 32..=1024, two)?;
        within(
            P,
            "vec4_per_thread",
            self.vec4_per_thread,
            1..=16,
            "in 1..=16",
        )?;
        let partials = self.max_partials_per_chunk;
        within(
            P,
            "max_partials_per_chunk",
            partials,
            1..=u64::MAX,
            "at least 1",
        )
    }
}

impl PolicySpec for ReducePolicy {
    const KEYS: &'static str = "wg, vec4, partials";

    fn set(&mut self, key: &str, value: u64) -> Result<bool, PolicySpecError> {
        match key {
            "wg" => self.workgroup_size = spec_u32(key, value)?,
            "vec4" => self.vec4_per_thread = spec_u32(key, value)?,
            "partials" => self.max_partials_per_chunk = value,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

crate::kernel::policy_from_str!(ReducePolicy, PolicyError);
