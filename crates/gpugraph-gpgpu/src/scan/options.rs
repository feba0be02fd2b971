//! How a [`super::ScanKernel`] is built ([`ScanKernelOptions`]) and the device checks every
//! scan-family node runs when it is declared ([`check_device`]).

use thiserror::Error;

use super::kernel::STORAGE_BINDINGS_SEGMENTED;
use super::policy::{ScanPolicy, ScanPolicyError};
use crate::kernel::{PolicySpec, PolicySpecError};

/// How to build a [`super::ScanKernel`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScanKernelOptions {
    /// Tile shape and look-back tunables.
    pub policy: ScanPolicy,
    /// Use subgroup operations for the in-tile scan (requires `wgpu::Features::SUBGROUP` on
    /// the device). The kernel falls back to its workgroup-memory scan at run time when the
    /// driver does not fill whole subgroups.
    pub subgroups: bool,
    /// Walk the look-back with one subgroup (ballot and subgroup sum per step, no workgroup
    /// barrier inside the walk) instead of a window folded in workgroup memory (requires
    /// `wgpu::Features::SUBGROUP`). The window is then the subgroup size.
    pub subgroup_lookback: bool,
    /// Testing and diagnostics only: the look-back ignores the published status of tiles in the
    /// same chunk, so every workgroup recomputes all its predecessors back to the chunk start
    /// (or a segment start) through the decoupled-fallback path. Quadratic in tiles per chunk.
    pub force_fallback: bool,
    /// Testing and diagnostics only: workgroups take tiles last-first, so each one waits on
    /// predecessors that have not started, the schedule a device without forward-progress
    /// guarantees may produce. Completes only through the fallback (quadratic work).
    pub reverse_tiles: bool,
}

impl ScanKernelOptions {
    /// The default policy, with subgroups when `device` has `wgpu::Features::SUBGROUP`.
    pub fn for_device(device: &wgpu::Device) -> Self {
        Self {
            policy: ScanPolicy::DEFAULT,
            subgroups: device.features().contains(wgpu::Features::SUBGROUP),
            subgroup_lookback: false,
            force_fallback: false,
            reverse_tiles: false,
        }
    }

    /// The options a plain [`crate::scan::Scan`] gets by default: [`Self::for_device`] with the
    /// tile policy chosen per device class from measurement (compaction keeps the default
    /// tile, which measured fastest for it).
    ///
    /// | device class | policy | evidence |
    /// |---|---|---|
    /// | NVIDIA (vendor 0x10de) | 8 `vec4` per invocation (8,192-element tiles), workgroup-memory tile scans, look-back walked by one subgroup | H200, 2026-12-01, one call, 2^28 exclusive: subgroup look-back 0.665 ms against 0.897 ms for the workgroup window (`--scan-policy sglb=1`); with it, 4 `vec4` 0.840 ms, 16 `vec4` 0.806 ms, 128 invocations × 16 `vec4` 0.665 ms, 512 × 4 0.852 ms, subgroup tile scans 0.701 ms. Without it, wider windows (128, 256) were slower (1.27, 1.90 ms) |
    /// | others (lavapipe, ...) | [`ScanPolicy::DEFAULT`], subgroups where available | |
    ///
    /// A class's policy applies only where the device's workgroup memory holds it.
    pub fn for_scan(device: &wgpu::Device) -> Self {
        let mut options = Self::for_device(device);
        let class = match device.adapter_info().vendor {
            0x10de => {
                options.subgroups = false;
                options.subgroup_lookback = has_subgroups(device);
                ScanPolicy {
                    vec4_per_thread: 8,
                    ..ScanPolicy::DEFAULT
                }
            }
            _ => ScanPolicy::DEFAULT,
        };
        let limit = device.limits().max_compute_workgroup_storage_size;
        if class.workgroup_storage_bytes(true) <= limit {
            options.policy = class;
        }
        options
    }
}

impl ScanKernelOptions {
    /// The options a [`crate::compact::Compaction`] (and the range compactions) get by
    /// default: [`Self::for_device`] with the look-back chosen per device class.
    ///
    /// | device class | options | evidence |
    /// |---|---|---|
    /// | NVIDIA (vendor 0x10de) | 512 invocations × 6 `vec4` (12,288-row tiles), values loaded before the look-back ([`ScanPolicy::gather_early`]), subgroup tile scans, look-back walked by one subgroup | H200, 2026-12-01, one call, 2^28 at 1 / 50 / 100 % selected: 0.704 / 1.066 / 1.295 ms against 0.855 / 1.144 / 1.336 ms for 256 × 4 `vec4` with values loaded after the look-back (the previous default), and `torch.masked_select` 0.730 / 1.700 / 2.637 ms; 512 × 5: 0.754 / 1.045 / 1.288; 512 × 8: 0.968 / 1.334 / 1.708 (registers); an earlier call: the workgroup-window look-back 1.377 / 1.558 / 1.658 ms |
    /// | CPU adapters (`wgpu::DeviceType::Cpu`: SwiftShader, lavapipe, a browser's fallback adapter) | [`CPU_COMPACTION_POLICY`] | see its doc |
    /// | others | [`Self::for_device`] | |
    pub fn for_compaction(device: &wgpu::Device) -> Self {
        let mut options = Self::for_device(device);
        if device.adapter_info().device_type == wgpu::DeviceType::Cpu {
            let cpu = ScanKernelOptions {
                policy: CPU_COMPACTION_POLICY,
                ..options
            };
            if check_device_for(device, &cpu, false).is_ok() {
                options = cpu;
            }
        } else if device.adapter_info().vendor == 0x10de {
            options.subgroup_lookback = has_subgroups(device);
            let large = ScanPolicy {
                workgroup_size: 512,
                vec4_per_thread: 6,
                gather_first: true,
                gather_early: true,
                ..options.policy
            };
            // The compaction kernel never runs segmented (see `check_device_for`).
            if check_device_for(
                device,
                &ScanKernelOptions {
                    policy: large,
                    ..options
                },
                false,
            )
            .is_ok()
            {
                options.policy = large;
            } else {
                options.policy.gather_first = true;
            }
        }
        options
    }
}

impl PolicySpec for ScanKernelOptions {
    const KEYS: &'static str = "wg, vec4, window, spin, unroll, gather, subgroups, sglb";

    /// The policy's keys, plus `subgroups` (subgroup tile scans) and `sglb` (subgroup
    /// look-back). Whether the device has subgroups is the caller's to check.
    fn set(&mut self, key: &str, value: u64) -> Result<bool, PolicySpecError> {
        match key {
            "subgroups" => self.subgroups = value != 0,
            "sglb" => self.subgroup_lookback = value != 0,
            _ => return self.policy.set(key, value),
        }
        Ok(true)
    }
}

/// The compaction's tile on CPU adapters: 8 invocations × 16 `vec4` (512-row tiles), a
/// look-back window of 8. A CPU Vulkan runs a workgroup's invocations as SIMD lane groups
/// (coroutines where the shader has barriers), so every `workgroupBarrier` of the tile scan
/// and of each look-back step costs a switch through all of them: small workgroups with many
/// rows per invocation keep the barriers few. SwiftShader (the Vulkan ICD Chromium bundles,
/// driven natively by `frame_bench 1000000 3`, 2 loaded cores, 2026-12-07), the viewer's
/// visible-span compaction of 999,936 rows: 1,055 ms with the default 256 × 4 tile, 1,015 ms
/// without subgroups, 405 ms at 64 × 4, 308 ms at 16 × 4, 1,260 ms at 64 × 1, 305 ms at
/// 64 × 16, 222 ms at 32 × 16, 260 ms at 16 × 16, 212 ms at 8 × 16; the spin limit
/// (1 instead of 16) changed nothing.
pub const CPU_COMPACTION_POLICY: ScanPolicy = ScanPolicy {
    workgroup_size: 8,
    vec4_per_thread: 16,
    lookback_window: 8,
    ..ScanPolicy::DEFAULT
};

fn has_subgroups(device: &wgpu::Device) -> bool {
    device.features().contains(wgpu::Features::SUBGROUP)
}

/// The device cannot run the kernel as configured.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ScanKernelError {
    /// The policy is out of range.
    #[error(transparent)]
    Policy(#[from] ScanPolicyError),
    /// `subgroups` was requested but the device lacks `Features::SUBGROUP`.
    #[error("scan kernel: subgroups requested but the device lacks Features::SUBGROUP")]
    SubgroupsUnsupported,
    /// A device limit is below what the policy needs.
    #[error("scan kernel: policy needs {name} >= {needed}, device limit is {limit}")]
    Limit {
        /// `wgpu::Limits` field name.
        name: &'static str,
        /// What the policy needs.
        needed: u64,
        /// What the device offers.
        limit: u64,
    },
}

fn check_limit(name: &'static str, needed: u64, limit: u64) -> Result<(), ScanKernelError> {
    if needed > limit {
        return Err(ScanKernelError::Limit {
            name,
            needed,
            limit,
        });
    }
    Ok(())
}

/// Checks that `device` can run the plain and segmented scan with `options`: policy ranges,
/// subgroup support, and the workgroup size, workgroup storage and storage-buffer-count limits.
/// [`super::ScanKernel::new`] runs the same checks; graph nodes run them when declared.
pub fn check_device(
    device: &wgpu::Device,
    options: &ScanKernelOptions,
) -> Result<(), ScanKernelError> {
    check_device_for(device, options, true)
}

/// [`check_device`] for kernels that never run segmented (the fused compaction): their
/// workgroup storage holds one pair array, not two, so larger tiles fit.
pub fn check_device_for(
    device: &wgpu::Device,
    options: &ScanKernelOptions,
    segmented: bool,
) -> Result<(), ScanKernelError> {
    let policy = options.policy;
    policy.validate()?;
    if (options.subgroups || options.subgroup_lookback)
        && !device.features().contains(wgpu::Features::SUBGROUP)
    {
        return Err(ScanKernelError::SubgroupsUnsupported);
    }
    let limits = device.limits();
    let wg = u64::from(policy.workgroup_size);
    check_limit(
        "max_compute_workgroup_size_x",
        wg,
        limits.max_compute_workgroup_size_x.into(),
    )?;
    check_limit(
        "max_compute_invocations_per_workgroup",
        wg,
        limits.max_compute_invocations_per_workgroup.into(),
    )?;
    check_limit(
        "max_compute_workgroup_storage_size",
        policy.workgroup_storage_bytes(segmented).into(),
        limits.max_compute_workgroup_storage_size.into(),
    )?;
    check_limit(
        "max_storage_buffers_per_shader_stage",
        STORAGE_BINDINGS_SEGMENTED.into(),
        limits.max_storage_buffers_per_shader_stage.into(),
    )
}
