//! Kernel plumbing shared by every algorithm: one compute shader with its explicit bind-group
//! layout and pipeline ([`Kernel`]), compile-time parameter buffers, large-dispatch shapes, and
//! the view checks algorithms apply at their boundary.

mod aliasing;
mod binder;
mod bindings;
mod cache;
mod chained;
mod dispatch;
mod outputs;
mod placeholder;
mod policy;
mod source;
mod views;

pub use aliasing::{check_writes_alone, Arg, IN_PLACE, OVERLAP};
pub(crate) use binder::{import_u32, rows_u32, Binder};
pub use bindings::{bind_or, binding_alignment, row_offset};
pub use cache::BufferKeyed;
pub(crate) use chained::{add_chained_nodes, check_kernel, plan_scan, vec4_binding, ChainedChunk};
pub(crate) use dispatch::{add_dispatch, add_node};
pub use gpugraph_command::{grid_for, Access, ShaderSource, WorkgroupSplit};
pub use outputs::require_output;
pub use placeholder::placeholder_buffer;
pub(crate) use policy::policy_from_str;
pub(crate) use policy::{power_of_two_in, within};
pub use policy::{spec_u32, PolicyError, PolicyParseError, PolicySpec, PolicySpecError};
#[cfg(test)]
pub(crate) use source::{assert_struct_layout, field_offsets, validate_wgsl};
pub use source::{registry_file, shader, WGSL};
pub use views::{
    check_same_topology, require_format, require_packed, require_packed_live,
    require_packed_live_all, ViewCheck,
};

use std::num::NonZeroU64;

use gpugraph_command::{wgpu, DeviceCache};

/// One compiled compute shader entry point with an explicit bind-group layout (group 0,
/// bindings numbered in order). Cheap to clone (wgpu objects are reference counted).
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Label used for the module, layout and pipeline.
    pub label: String,
    /// The pipeline.
    pub pipeline: wgpu::ComputePipeline,
    /// Layout of bind group 0.
    pub layout: wgpu::BindGroupLayout,
}

/// A compute-visible buffer entry at `binding` of type `ty`, without a dynamic offset, that
/// wgpu requires to be at least `min_size` bytes (0: no minimum).
pub fn buffer_entry(
    binding: u32,
    ty: wgpu::BufferBindingType,
    min_size: u64,
) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: false,
            min_binding_size: NonZeroU64::new(min_size),
        },
        count: None,
    }
}

impl Kernel {
    /// Compiles `entry` of `wgsl` with `bindings` as group 0 and pipeline-overridable
    /// constants `constants`. wgpu validation errors surface through the graph's compile scope.
    pub fn new(
        device: &wgpu::Device,
        label: &str,
        wgsl: &str,
        entry: &str,
        bindings: &[Access],
        constants: &[(&str, f64)],
    ) -> Self {
        let entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
            .iter()
            .enumerate()
            .map(|(i, b)| buffer_entry(i as u32, b.binding_type(), 0))
            .collect();
        Self::with_entries(device, label, wgsl, entry, &entries, constants)
    }

    /// [`Kernel::new`] with explicit group-0 layout entries (binding numbers with gaps,
    /// minimum binding sizes). The pipeline comes from the device's one
    /// [`gpugraph_command::DeviceCache`]: the same source, entry, layout and constants compile
    /// once per device, however many graphs or instances ask.
    pub fn with_entries(
        device: &wgpu::Device,
        label: &str,
        wgsl: &str,
        entry: &str,
        entries: &[wgpu::BindGroupLayoutEntry],
        constants: &[(&str, f64)],
    ) -> Self {
        let cached = DeviceCache::for_device(device).compute_pipeline(
            &gpugraph_command::PipelineDescriptor {
                label,
                wgsl,
                entry_point: entry,
                entries,
                constants,
            },
        );
        Self {
            label: label.to_string(),
            pipeline: cached.pipeline,
            layout: cached.layout,
        }
    }

    /// A bind group of `resources` in binding order, from the device's bind-group cache.
    pub fn bind_group(
        &self,
        device: &wgpu::Device,
        resources: &[wgpu::BufferBinding<'_>],
    ) -> wgpu::BindGroup {
        let entries: Vec<(u32, wgpu::BufferBinding<'_>)> = resources
            .iter()
            .enumerate()
            .map(|(i, r)| (i as u32, r.clone()))
            .collect();
        DeviceCache::for_device(device).bind_group(&self.label, &self.layout, &entries)
    }

    /// A bind group of `resources` at their binding numbers (layouts with gaps), from the
    /// device's bind-group cache.
    pub fn bind_group_at(
        &self,
        device: &wgpu::Device,
        resources: &[(u32, wgpu::BufferBinding<'_>)],
    ) -> wgpu::BindGroup {
        DeviceCache::for_device(device).bind_group(&self.label, &self.layout, resources)
    }

    /// Sets pipeline and bind group and dispatches `grid`.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        group: &wgpu::BindGroup,
        grid: WorkgroupSplit,
    ) {
        if grid.is_empty() {
            return;
        }
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, group, &[]);
        pass.dispatch_workgroups(grid.x, grid.y, 1);
    }
}
