//! [`LowerContext`]: what a lowering sees. It resolves the operation's declared values to
//! command-graph views (and scalars to host values or one-row GPU views), exposes the command
//! graph to add passes to (pipelines come from the device's one `DeviceCache`) and the backend
//! capabilities, and records the nodes and the realization for the decision report. It has no
//! queue: lowerings cannot submit or read back.

use std::collections::HashMap;

use gpugraph_command::{
    wgpu, BufferDescriptor, BufferHandle, CommandGraph, CopyNode, DataView, DispatchNode,
    GraphError, VectorFormat, VectorView,
};

use crate::expr::{ScalarBinding, ScalarType};
use crate::graph::declaration::{ValueRef, ValueSpec};
use crate::graph::error::ProgramError;
use crate::lowering::decision::BackendCapabilities;
use crate::operation::contract::find_declared;

/// A value bound into one command graph for one execution.
#[derive(Clone, Debug)]
pub(crate) enum Resolved {
    /// GPU storage: a vector, or a scalar stored as a one-row vector.
    Storage { spec: ValueSpec, view: VectorView },
    /// A host scalar binding (not on the GPU).
    Host {
        spec: ValueSpec,
        value: crate::expr::ScalarValue,
    },
}

impl Resolved {
    pub(crate) fn spec(&self) -> &ValueSpec {
        match self {
            Resolved::Storage { spec, .. } | Resolved::Host { spec, .. } => spec,
        }
    }
}

/// A vector value resolved to its execution view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedVector {
    /// The value name.
    pub name: String,
    /// Row format.
    pub format: VectorFormat,
    /// The chunks in order (empty chunks kept), as command-graph views.
    pub view: VectorView,
}

impl ResolvedVector {
    /// The chunk views in order.
    pub fn chunks(&self) -> &[DataView] {
        self.view.chunks()
    }
    /// Total rows.
    pub fn len(&self) -> u64 {
        self.view.len()
    }
    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.view.is_empty()
    }
}

/// A scalar value resolved for execution: a host value or row 0 of a one-row GPU view.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedScalar {
    /// The value name.
    pub name: String,
    /// Its type.
    pub ty: ScalarType,
    /// Where it comes from; directly usable by [`crate::expr::ExpressionKernel`].
    pub binding: ScalarBinding,
}

/// The lowering context of one operation in one execution.
pub struct LowerContext<'a> {
    pub(crate) graph: &'a mut CommandGraph,
    pub(crate) operation: &'a str,
    pub(crate) declared: &'a [String],
    pub(crate) values: &'a HashMap<String, Resolved>,
    pub(crate) capabilities: &'a BackendCapabilities,
    pub(crate) nodes: Vec<String>,
    pub(crate) realization: Option<(String, String)>,
}

impl<'a> LowerContext<'a> {
    /// The command graph to add passes to (e.g. for `gpugraph_gpgpu` algorithms'
    /// `add_to_graph`). Prefer the `add_*` helpers, which also record node ids.
    pub fn graph(&mut self) -> &mut CommandGraph {
        self.graph
    }

    /// The device the passes will run on.
    pub fn device(&self) -> &wgpu::Device {
        self.graph.device()
    }

    /// The id of the operation being lowered.
    pub fn operation_id(&self) -> &str {
        self.operation
    }

    /// `<operation id>-<suffix>`: a node or buffer id unique to this operation.
    pub fn node_id(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.operation)
    }

    /// What the backend offers.
    pub fn capabilities(&self) -> &BackendCapabilities {
        self.capabilities
    }

    fn lookup(&self, r: &ValueRef) -> Result<&'a Resolved, ProgramError> {
        if !self.declared.iter().any(|n| n == r.name()) {
            return Err(ProgramError::UndeclaredUse {
                operation: self.operation.to_string(),
                value: r.name().to_string(),
            });
        }
        find_declared(self.operation, r, self.values, Resolved::spec)
    }

    /// The declaration of a value the contract lists (format, kind, fixed dimensions).
    pub fn spec(&self, r: impl Into<ValueRef>) -> Result<&'a ValueSpec, ProgramError> {
        Ok(self.lookup(&r.into())?.spec())
    }

    /// The execution view of a vector the contract lists (accepts names or typed references).
    /// A GPU-resident scalar resolves to its one-row vector; host scalars and textures do not
    /// resolve.
    pub fn resolve_vector(&self, r: impl Into<ValueRef>) -> Result<ResolvedVector, ProgramError> {
        let r = r.into();
        match self.lookup(&r)? {
            Resolved::Storage { spec, view } => Ok(ResolvedVector {
                name: r.name().to_string(),
                format: spec.row_format().unwrap_or(VectorFormat::Uint32),
                view: view.clone(),
            }),
            Resolved::Host { .. } => Err(ProgramError::ResolveMismatch {
                operation: self.operation.to_string(),
                value: r.name().to_string(),
                expected: "a vector",
                reason: "it is a host scalar binding with no GPU storage".into(),
            }),
        }
    }

    /// A scalar the contract lists: a host value, or row 0 of its one-row GPU view.
    pub fn resolve_scalar(&self, r: impl Into<ValueRef>) -> Result<ResolvedScalar, ProgramError> {
        let r = r.into();
        let resolved = self.lookup(&r)?;
        let Some(ty) = resolved.spec().as_scalar() else {
            return Err(ProgramError::ResolveMismatch {
                operation: self.operation.to_string(),
                value: r.name().to_string(),
                expected: "a scalar",
                reason: format!("it is declared {}", resolved.spec()),
            });
        };
        let binding = match resolved {
            Resolved::Host { value, .. } => ScalarBinding::Value(*value),
            Resolved::Storage { view, .. } => match view.chunks() {
                [row] if row.len() == 1 => ScalarBinding::View(*row),
                _ => {
                    return Err(ProgramError::ResolveMismatch {
                        operation: self.operation.to_string(),
                        value: r.name().to_string(),
                        expected: "a scalar",
                        reason: format!("its storage is {} rows, not one", view.len()),
                    })
                }
            },
        };
        Ok(ResolvedScalar {
            name: r.name().to_string(),
            ty,
            binding,
        })
    }

    /// Records the realization chosen and why (shown in the decision report).
    pub fn explain(&mut self, realization: impl Into<String>, reason: impl Into<String>) {
        self.realization = Some((realization.into(), reason.into()));
    }

    /// Adds a declared dispatch node (uses derived from its bindings, checked against its WGSL
    /// when the graph compiles) and records its id.
    pub fn add_dispatch_node(&mut self, node: DispatchNode) -> Result<(), GraphError> {
        let id = node.id.clone();
        self.graph.add_dispatch_node(node)?;
        self.nodes.push(id);
        Ok(())
    }

    /// Adds a copy node and records its id.
    pub fn add_copy_node(&mut self, node: CopyNode) -> Result<(), GraphError> {
        let id = node.id.clone();
        self.graph.add_copy_node(node)?;
        self.nodes.push(id);
        Ok(())
    }

    /// Adds a packed view-to-view copy node (see `CommandGraph::add_view_copy`) and records it.
    pub fn add_view_copy(
        &mut self,
        id: impl Into<String>,
        src: DataView,
        dst: DataView,
    ) -> Result<(), GraphError> {
        let id = id.into();
        self.graph.add_view_copy(id.clone(), src, dst)?;
        self.nodes.push(id);
        Ok(())
    }

    /// Records a node added through [`Self::graph`] (e.g. by an algorithm's `add_to_graph`).
    pub fn record_node(&mut self, id: impl Into<String>) {
        self.nodes.push(id.into());
    }

    /// Declares graph-owned scratch (a command-graph transient; may share memory with other
    /// transients whose lifetimes do not overlap).
    pub fn create_transient(&mut self, desc: BufferDescriptor) -> Result<BufferHandle, GraphError> {
        self.graph.create_buffer(desc)
    }
}
