//! Prefix scan (sum) of packed u32, wrapping modulo 2^32: exclusive or inclusive, optionally
//! segmented, over one buffer range or a chunked vector treated as one logical sequence.
//!
//! The algorithm is [`Scan`] (`node.rs`): declared dispatch nodes (one per non-empty chunk)
//! over the kernel layer's WGSL and plan, with the tile status as a graph transient;
//! [`scan_graph`] builds a standalone graph for benches.
//!
//! The kernel layer: a single-pass chained scan with decoupled look-back and
//! decoupled fallback (`scan.wgsl`), its CPU oracle ([`cpu`]), pure tile planning ([`plan`]),
//! the tunables ([`policy`]) and, for callers outside a graph, the wgpu side ([`kernel`]). Reads `n` values and writes `n`
//! results (plus 8 bytes of status per tile), in one pass over the data, without hanging on
//! devices that give no forward-progress guarantee between workgroups.

mod bindings;
pub mod cpu;
pub mod kernel;
mod node;
mod options;
pub mod plan;
pub mod policy;
pub(crate) mod source;

pub use bindings::{ChunkBinding, ScanBindError, ScanBindGroups, ScanBindings};
pub use kernel::ScanKernel;
pub(crate) use kernel::LIVE_BINDING;
pub use node::{scan_graph, Scan};
pub use options::{
    check_device, check_device_for, ScanKernelError, ScanKernelOptions, CPU_COMPACTION_POLICY,
};
pub use plan::{ChunkLayout, ChunkPlan, PlanLimits, ScanMode, ScanParams, ScanPlan, ScanPlanError};
pub use policy::{ScanPolicy, ScanPolicyError};
