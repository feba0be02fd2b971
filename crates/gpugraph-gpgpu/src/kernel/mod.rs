//! Kernel plumbing shared by every algorithm: one compute shader with its explicit bind-group
//! layout and pipeline ([`Kernel`]), compile-time parameter buffers, large-dispatch shapes, and
//! the view checks algorithms apply at their boundary.

mod aliasing;
mod cache;
mod dispatch;
mod outputs;
mod placeholder;
mod views;

pub use aliasing::{check_writes_alone, Arg, IN_PLACE, OVERLAP};
pub use cache::BufferKeyed;
pub use dispatch::{grid_for, Grid};
pub use outputs::require_output;
pub use placeholder::placeholder_buffer;
pub use views::{check_same_topology, require_format, require_packed, ViewCheck};

use gpugraph_command::wgpu;

/// How a kernel binds one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// `var<storage, read>`.
    StorageRead,
    /// `var<storage, read_write>`.
    StorageReadWrite,
    /// `var<uniform>`.
    Uniform,
}

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

/// WGSL text shared by several kernels, prepended by [`with_shared`].
pub const SHARED_DISPATCH_WGSL: &str = include_str!("../shared/dispatch.wgsl");

/// `shared` snippets followed by `source`: our one-line include mechanism.
pub fn with_shared(shared: &[&str], source: &str) -> String {
    let mut out = String::new();
    for s in shared {
        out.push_str(s);
        out.push('\n');
    }
    out.push_str(source);
    out
}

impl Kernel {
    /// Compiles `entry` of `wgsl` with `bindings` as group 0 and pipeline-overridable
    /// constants `constants`. wgpu validation errors surface through the graph's compile scope.
    pub fn new(
        device: &wgpu::Device,
        label: &str,
        wgsl: &str,
        entry: &str,
        bindings: &[Binding],
        constants: &[(&str, f64)],
    ) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(wgsl.into()),
        });
        let entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: match b {
                        Binding::StorageRead => {
                            wgpu::BufferBindingType::Storage { read_only: true }
                        }
                        Binding::StorageReadWrite => {
                            wgpu::BufferBindingType::Storage { read_only: false }
                        }
                        Binding::Uniform => wgpu::BufferBindingType::Uniform,
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(label),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants,
                ..Default::default()
            },
            cache: None,
        });
        Self {
            label: label.to_string(),
            pipeline,
            layout,
        }
    }

    /// A bind group of `resources` in binding order.
    pub fn bind_group(
        &self,
        device: &wgpu::Device,
        resources: &[wgpu::BufferBinding<'_>],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = resources
            .iter()
            .enumerate()
            .map(|(i, r)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(r.clone()),
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(&self.label),
            layout: &self.layout,
            entries: &entries,
        })
    }

    /// Sets pipeline and bind group and dispatches `grid`.
    pub fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, group: &wgpu::BindGroup, grid: Grid) {
        if grid.is_empty() {
            return;
        }
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, group, &[]);
        pass.dispatch_workgroups(grid.x, grid.y, 1);
    }
}

/// A uniform (or storage) buffer holding `bytes`, written at creation: compile-time parameters
/// that never change per encode. Padded to 16 bytes.
pub fn parameter_buffer(device: &wgpu::Device, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    let size = (bytes.len() as u64).max(16).div_ceil(16) * 16;
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::STORAGE,
        mapped_at_creation: true,
    });
    let mut padded = bytes.to_vec();
    padded.resize(size as usize, 0);
    if let Ok(mut view) = buffer.slice(..).get_mapped_range_mut() {
        view.copy_from_slice(&padded);
    }
    buffer.unmap();
    buffer
}
