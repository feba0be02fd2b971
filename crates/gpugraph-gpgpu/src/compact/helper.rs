//! Nodes of small helper kernels (count clearing, range lengths, candidate expansion, totals):
//! a list of dispatches over [`Kernel`]s whose bindings are parameter words, graph views or
//! placeholders, compiled and bound once, rebound only when an import override changes a
//! buffer.

use gpugraph_command::{compute_fn, view_binding, wgpu, CommandGraph, ComputeNode, ResourceUse};

use super::node::Bound;
use crate::error::AlgorithmError;
use crate::kernel::Handles;
use crate::kernel::{parameter_buffer, placeholder_buffer, Binding, BufferKeyed, Grid, Kernel};

/// One kernel of a helper node.
pub(crate) struct HelperKernel {
    /// Complete WGSL.
    pub wgsl: String,
    /// Entry point.
    pub entry: &'static str,
    /// Group 0, in binding order.
    pub bindings: Vec<Binding>,
}

/// What one binding of a dispatch binds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Res {
    /// Parameter block `k` of the node (a compile-time storage buffer of u32 words).
    Params(usize),
    /// A graph view (its aligned containing range).
    View(Bound),
    /// A placeholder the kernel does not touch for this dispatch.
    Placeholder,
}

/// One dispatch of a helper node.
pub(crate) struct HelperDispatch {
    /// Index into the node's kernels.
    pub kernel: usize,
    /// One resource per binding of that kernel.
    pub resources: Vec<Res>,
    /// Workgroups.
    pub grid: Grid,
}

/// A helper node: kernels, parameter blocks and dispatches, in order.
pub(crate) struct HelperNode {
    pub id: String,
    pub uses: Vec<ResourceUse>,
    pub handles: Handles,
    pub kernels: Vec<HelperKernel>,
    pub params: Vec<Vec<u32>>,
    pub dispatches: Vec<HelperDispatch>,
}

struct Compiled {
    device: wgpu::Device,
    alignment: u64,
    kernels: Vec<Kernel>,
    bindings: Vec<Vec<Binding>>,
    params: Vec<wgpu::Buffer>,
    placeholder_read: wgpu::Buffer,
    placeholder_write: wgpu::Buffer,
    dispatches: Vec<HelperDispatch>,
}

impl Compiled {
    fn bind(&self, buffers: &[&wgpu::Buffer]) -> Vec<wgpu::BindGroup> {
        self.dispatches
            .iter()
            .map(|d| {
                let kernel = &self.kernels[d.kernel];
                let resources: Vec<wgpu::BufferBinding<'_>> = d
                    .resources
                    .iter()
                    .enumerate()
                    .map(|(slot, r)| match *r {
                        Res::Params(k) => self.params[k].as_entire_buffer_binding(),
                        Res::View((view, at)) if !view.is_empty() => {
                            view_binding(buffers[at], &view, self.alignment).0
                        }
                        // An empty view may sit at the very end of its buffer, where even
                        // the minimal 4-byte binding would not fit; the kernel never reads it.
                        Res::View(_) | Res::Placeholder => {
                            if self.kernel_binding(d.kernel, slot) == Binding::StorageRead {
                                self.placeholder_read.as_entire_buffer_binding()
                            } else {
                                self.placeholder_write.as_entire_buffer_binding()
                            }
                        }
                    })
                    .collect();
                kernel.bind_group(&self.device, &resources)
            })
            .collect()
    }

    fn kernel_binding(&self, kernel: usize, slot: usize) -> Binding {
        self.bindings[kernel][slot]
    }
}

impl HelperNode {
    /// Adds the node to `graph`.
    pub fn add(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let HelperNode {
            id,
            uses,
            handles,
            kernels,
            params,
            dispatches,
        } = self;
        graph.add_compute_node(ComputeNode::new(id, uses, move |cc| {
            let device = cc.device().clone();
            let label = cc.node_id().to_string();
            let compiled = Compiled {
                alignment: u64::from(cc.limits().min_storage_buffer_offset_alignment),
                kernels: kernels
                    .iter()
                    .map(|k| Kernel::new(&device, &label, &k.wgsl, k.entry, &k.bindings, &[]))
                    .collect(),
                bindings: kernels.iter().map(|k| k.bindings.clone()).collect(),
                params: params
                    .iter()
                    .map(|p| parameter_buffer(&device, &label, bytemuck::cast_slice(p)))
                    .collect(),
                placeholder_read: placeholder_buffer(&device, &label),
                placeholder_write: placeholder_buffer(&device, &label),
                dispatches,
                device,
            };
            let mut cache = BufferKeyed::default();
            let buffers: Vec<&wgpu::Buffer> = handles.0.iter().map(|&h| cc.buffer(h)).collect();
            cache.get_or_create(&buffers, || compiled.bind(&buffers));
            Ok(compute_fn(move |pass, ec| {
                let buffers: Vec<&wgpu::Buffer> = handles.0.iter().map(|&h| ec.buffer(h)).collect();
                let groups = cache.get_or_create(&buffers, || compiled.bind(&buffers));
                for (d, group) in compiled.dispatches.iter().zip(groups) {
                    compiled.kernels[d.kernel].dispatch(pass, group, d.grid);
                }
            }))
        }))?;
        Ok(())
    }
}
