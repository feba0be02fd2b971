//! What a compiler tells its lowerings about the backend, and the record of what it chose.

use gpugraph_command::{wgpu, Capabilities};
use serde::Serialize;

/// The compact capability contract lowerings receive instead of backend internals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackendCapabilities {
    /// Backend name, e.g. `"wgpu/vulkan"`.
    pub backend: String,
    /// GPU-resident conditional dispatch: the adapter executes indirect dispatches whose
    /// workgroup counts a kernel wrote (wgpu's `DownlevelFlags::INDIRECT_EXECUTION`), which
    /// is what the program compiler's gates need.
    pub gpu_resident_conditionals: bool,
    /// Native semantic loops (WebGPU/wgpu: no; loops lower by bounded expansion).
    pub native_loops: bool,
    /// Executable child graphs (WebGPU/wgpu: no; composites are flattened).
    pub child_graphs: bool,
    /// The device's limits and optional features.
    pub device: Capabilities,
    /// Enabled device features.
    #[serde(skip)]
    pub features: wgpu::Features,
}

impl BackendCapabilities {
    /// The capabilities of the wgpu backend on `ctx`'s device, as the adapter reports them
    /// (limits, subgroups, indirect execution); nothing is assumed.
    pub fn of(ctx: &gpugraph_command::GpuContext) -> Self {
        let device = ctx.capabilities().clone();
        let indirect = ctx
            .adapter
            .get_downlevel_capabilities()
            .flags
            .contains(wgpu::DownlevelFlags::INDIRECT_EXECUTION);
        Self {
            backend: format!("wgpu/{}", device.backend),
            gpu_resident_conditionals: indirect,
            native_loops: false,
            child_graphs: false,
            features: ctx.device.features(),
            device,
        }
    }
}

/// Whether a lowering is built in or was supplied to the compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum LoweringSource {
    /// Shipped with gpugraph-program.
    BuiltIn,
    /// Supplied in `CompileOptions::lowerings` or to a `GraphCompiler`.
    Custom,
}

/// One lowering choice: which realization was selected for an operation, why, and (after a
/// run) which command-graph nodes it emitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoweringDecision {
    /// Operation id.
    pub operation: String,
    /// Operation type (the registry key).
    pub operation_type: String,
    /// Built-in or custom.
    pub source: LoweringSource,
    /// The realization, e.g. `"two-pass workgroup reduction"` or `"evaluator pass"`.
    pub realization: String,
    /// Why it was selected.
    pub reason: String,
    /// Ids of the nodes it added through the context (empty in compile-time reports).
    pub nodes: Vec<String>,
    /// Nodes it added in total, including those added through `LowerContext::graph`.
    pub node_count: usize,
}

/// The decisions of one compilation (selection) or one run (selection plus emitted nodes),
/// in operation order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoweringReport {
    /// One decision per operation.
    pub decisions: Vec<LoweringDecision>,
}

impl LoweringReport {
    /// The decision for operation `id`.
    pub fn decision(&self, id: &str) -> Option<&LoweringDecision> {
        self.decisions.iter().find(|d| d.operation == id)
    }
}
