//! Device checks and planning of the chained-scan kernels (scan and the fused compaction share
//! the tile planner of [`crate::scan::plan`]), with their errors mapped into
//! [`AlgorithmError`].

use gpugraph_command::wgpu;

use super::ViewCheck;
use crate::error::AlgorithmError;
use crate::scan::{
    check_device_for, ChunkLayout, PlanLimits, ScanKernelOptions, ScanMode, ScanPlan,
};

/// Maps the kernel's device check into the algorithm's error (`segmented`: whether the
/// kernel may run segmented, which doubles its workgroup storage).
pub fn check_kernel(
    c: ViewCheck<'_>,
    device: &wgpu::Device,
    options: &ScanKernelOptions,
    segmented: bool,
) -> Result<(), AlgorithmError> {
    check_device_for(device, options, segmented).map_err(|source| AlgorithmError::Kernel {
        algorithm: c.algorithm,
        id: c.id.to_string(),
        source: Box::new(source),
    })
}

/// Plans `layouts` for `options` on `device`, mapping planner errors.
pub fn plan_scan(
    c: ViewCheck<'_>,
    device: &wgpu::Device,
    options: &ScanKernelOptions,
    layouts: &[ChunkLayout],
    mode: ScanMode,
) -> Result<ScanPlan, AlgorithmError> {
    ScanPlan::new(
        layouts,
        mode,
        PlanLimits::new(&options.policy, &device.limits()),
    )
    .map_err(|source| AlgorithmError::Kernel {
        algorithm: c.algorithm,
        id: c.id.to_string(),
        source: Box::new(source),
    })
}
