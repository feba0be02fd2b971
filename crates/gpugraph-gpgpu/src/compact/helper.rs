//! Nodes of small helper kernels (count clearing, range lengths, candidate expansion, totals):
//! a list of dispatches whose bindings are parameter words, graph views or placeholders, added
//! as declared dispatch nodes.

use gpugraph_command::{Binding, CommandGraph, DataView, DispatchNode, Grid, ShaderSource};

use crate::error::AlgorithmError;
use crate::kernel::{add_node, Access, WorkgroupSplit};

/// One kernel of a helper node.
pub(crate) struct HelperKernel {
    /// Complete WGSL.
    pub wgsl: String,
    /// Entry point.
    pub entry: &'static str,
    /// Group 0, in binding order.
    pub bindings: Vec<Access>,
}

/// What one binding of a dispatch binds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Res {
    /// Parameter block `k` of the node (a compile-time storage buffer of u32 words).
    Params(usize),
    /// A graph view (its aligned containing range).
    View(DataView),
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
    pub grid: WorkgroupSplit,
}

/// A helper node: kernels, parameter blocks and dispatches, in order.
pub(crate) struct HelperNode {
    pub id: String,
    pub kernels: Vec<HelperKernel>,
    pub params: Vec<Vec<u32>>,
    pub dispatches: Vec<HelperDispatch>,
}

impl HelperNode {
    /// Adds the dispatches as declared dispatch nodes, in order: consecutive dispatches of one
    /// shader over the same resources (a clear, then the pass it prepares) share one node via
    /// [`DispatchNode::then`]; one node keeps the id `{id}`, several are `{id}/{k}`. Their uses
    /// derive from what each binds, checked against its WGSL when the graph compiles.
    pub fn add(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let HelperNode {
            id,
            kernels,
            params,
            dispatches,
        } = self;
        let mut nodes: Vec<DispatchNode> = Vec::new();
        let mut last: Option<(usize, &[Res])> = None;
        for d in &dispatches {
            let kernel = &kernels[d.kernel];
            let grid = Grid::Workgroups(d.grid.dims());
            if let (Some((k, res)), Some(node)) = (last, nodes.last_mut()) {
                if kernels[k].wgsl == kernel.wgsl && res == d.resources.as_slice() {
                    node.then.push((kernel.entry.to_string(), grid));
                    continue;
                }
            }
            let bindings = d
                .resources
                .iter()
                .zip(&kernel.bindings)
                .enumerate()
                .map(|(slot, (r, &access))| {
                    let slot = slot as u32;
                    match *r {
                        Res::Params(p) => Binding::storage_params(slot, &params[p]),
                        Res::View(view) if !view.is_empty() => match access {
                            Access::Read => Binding::read(slot, view),
                            _ => Binding::read_write(slot, view),
                        },
                        // An empty view may sit at the very end of its buffer, where even
                        // the minimal 4-byte binding would not fit; the kernel never reads it.
                        Res::View(_) | Res::Placeholder => Binding::placeholder(slot, access),
                    }
                })
                .collect();
            let shader =
                ShaderSource::new(format!("compact/{}", kernel.entry), kernel.wgsl.clone());
            nodes.push(DispatchNode::new(
                String::new(),
                shader,
                kernel.entry,
                bindings,
                grid,
            ));
            last = Some((d.kernel, &d.resources));
        }
        let single = nodes.len() == 1;
        for (k, mut node) in nodes.into_iter().enumerate() {
            node.id = if single {
                id.clone()
            } else {
                format!("{id}/{k}")
            };
            add_node(graph, node)?;
        }
        Ok(())
    }
}
