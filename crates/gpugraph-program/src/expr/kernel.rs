//! [`ExpressionKernel`]: one compiled expression (or a [`FusedExpression`] of several) as a
//! reusable compute kernel. Each `add_to_graph` adds one declared dispatch node per non-empty
//! chunk (`{id}`, or `{id}/chunk{k}` when several) that reads packed vector views and scalars
//! and writes packed output views with the same chunk topology; its bindings are checked
//! against the generated WGSL when the graph compiles.
//! The pipeline comes from the device's one `DeviceCache`: created once per device and shared by
//! every graph the kernel is added to, whatever the lengths (row counts and offsets are
//! parameters).

use std::sync::Arc;

use gpugraph_command::{
    wgpu, Binding, BufferHandle, CommandGraph, DataView, DispatchNode, Grid, ShaderSource,
    VectorView,
};
use gpugraph_gpgpu::kernel::{
    self, grid_for, require_format, Access, Kernel, ViewCheck, WorkgroupSplit,
};
use gpugraph_gpgpu::AlgorithmError;

use crate::expr::eval::ScalarValue;
use crate::expr::policy::ROWS_PER_WORKGROUP;
use crate::expr::types::{Declarations, ScalarType, ValueType};
use crate::expr::wgsl::{ShaderLayout, ENTRY_POINT};
use crate::expr::{CompiledExpression, FusedExpression};

const ALGORITHM: &str = "expression";

/// Where a declared scalar comes from at execution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarBinding {
    /// A host value, written into the node's parameter buffer at graph compile time.
    Value(ScalarValue),
    /// Row 0 of a GPU-resident one-component view (e.g. a dot-product result), read on the
    /// GPU without readback.
    View(DataView),
}

/// What a kernel runs: one generated shader and how to bind it.
struct Source {
    id: String,
    wgsl: String,
    layout: ShaderLayout,
    /// The shader's vector inputs and scalars (bound by these indices).
    decls: Declarations,
    /// Stored results in binding order.
    outputs: Vec<(String, ValueType)>,
    /// Whether results have one row per input row (else one constant row).
    row_sized: bool,
}

struct Shared {
    source: Source,
    /// The expression of a single-expression kernel.
    single: Option<CompiledExpression>,
}

/// A compiled expression ready to be added to command graphs. Cheap to clone; clones share
/// the per-device pipeline cache.
#[derive(Clone)]
pub struct ExpressionKernel {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ExpressionKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExpressionKernel")
            .field("id", &self.shared.source.id)
            .finish()
    }
}

impl ExpressionKernel {
    /// A kernel for `expr` (no GPU work until a graph that uses it compiles).
    pub fn new(expr: CompiledExpression) -> Self {
        let source = Source {
            id: expr.id().to_string(),
            wgsl: expr.wgsl().to_string(),
            layout: expr.layout().clone(),
            decls: expr.declarations().clone(),
            outputs: vec![(expr.output_name().to_string(), expr.output_type())],
            row_sized: expr.is_row_sized(),
        };
        Self::from_source(source, Some(expr))
    }

    /// The compiled expression of a single-expression kernel (`None` when fused).
    pub fn expression(&self) -> Option<&CompiledExpression> {
        self.shared.single.as_ref()
    }

    /// A kernel computing every stage of `fused` in one pass; its stored results are the
    /// outputs of [`Self::add_fused_to_graph`].
    pub fn fused(fused: FusedExpression) -> Self {
        let source = Source {
            id: fused.id().to_string(),
            wgsl: fused.wgsl().to_string(),
            layout: fused.layout().clone(),
            decls: fused.declarations().clone(),
            outputs: fused.stored_outputs(),
            row_sized: true,
        };
        Self::from_source(source, None)
    }

    fn from_source(source: Source, single: Option<CompiledExpression>) -> Self {
        Self {
            shared: Arc::new(Shared { source, single }),
        }
    }

    /// The shader's own vector inputs and scalars, in the order `add_*_to_graph` binds them.
    pub fn declarations(&self) -> &Declarations {
        &self.shared.source.decls
    }

    /// The operation (or fused group) id: the default node id.
    pub fn id(&self) -> &str {
        &self.shared.source.id
    }

    /// The kernel's pipeline on `device`, from the device's one
    /// [`gpugraph_command::DeviceCache`]: created on the first request for this shader and
    /// layout on that device (by this kernel, a clone or an equal expression), shared after.
    pub fn pipeline(&self, device: &wgpu::Device) -> Kernel {
        self.shared.pipeline(device)
    }

    /// Adds one compute node (id: the operation id) computing the expression into `output`.
    ///
    /// Reads `inputs` (one vector per declared input, in order; only the referenced ones are
    /// bound) and `scalars` (one per declared scalar); writes every output row exactly once.
    /// Views must be packed in their declared formats at 4-byte aligned offsets; the output
    /// has the inferred format. Row-sized expressions need every referenced input to have the
    /// output's chunk lengths (empty chunks included); constant expressions write one row.
    /// The output must not share a buffer with anything the node reads.
    pub fn add_to_graph(
        &self,
        graph: &mut CommandGraph,
        inputs: &[VectorView],
        scalars: &[ScalarBinding],
        output: &VectorView,
    ) -> Result<(), AlgorithmError> {
        let id = self.shared.source.id.clone();
        self.add_to_graph_as(graph, &id, inputs, scalars, output)
    }

    /// [`Self::add_to_graph`] with node id `node_id`, for adding one kernel several times to
    /// one graph (node ids are unique per graph).
    pub fn add_to_graph_as(
        &self,
        graph: &mut CommandGraph,
        node_id: &str,
        inputs: &[VectorView],
        scalars: &[ScalarBinding],
        output: &VectorView,
    ) -> Result<(), AlgorithmError> {
        self.add_fused_to_graph(
            graph,
            node_id,
            inputs,
            scalars,
            std::slice::from_ref(output),
        )
    }

    /// Adds one compute node `node_id` writing every stored result: `outputs[o]` receives
    /// the `o`-th (in stage order). Same rules as [`Self::add_to_graph`]; outputs share the
    /// inputs' chunk topology and no buffer with each other's rows or with what is read.
    pub fn add_fused_to_graph(
        &self,
        graph: &mut CommandGraph,
        node_id: &str,
        inputs: &[VectorView],
        scalars: &[ScalarBinding],
        outputs: &[VectorView],
    ) -> Result<(), AlgorithmError> {
        let shared = &self.shared.source;
        let id = node_id.to_string();
        let check = ViewCheck {
            algorithm: ALGORITHM,
            id: &id,
        };
        let decls = &shared.decls;
        let layout = shared.layout.clone();
        if outputs.len() != shared.outputs.len() {
            return Err(check.length(
                "outputs",
                "vectors",
                outputs.len() as u64,
                shared.outputs.len() as u64,
                format!(
                    "the kernel ({})",
                    join(shared.outputs.iter().map(|(n, _)| n.as_str()))
                ),
            ));
        }
        if inputs.len() != decls.inputs.len() {
            return Err(check.length(
                "inputs",
                "vectors",
                inputs.len() as u64,
                decls.inputs.len() as u64,
                format!(
                    "the expression ({})",
                    join(decls.inputs.iter().map(|(n, _)| n.as_str()))
                ),
            ));
        }
        if scalars.len() != decls.scalars.len() {
            return Err(check.length(
                "scalars",
                "values",
                scalars.len() as u64,
                decls.scalars.len() as u64,
                format!(
                    "the expression ({})",
                    join(decls.scalars.iter().map(|(n, _)| n.as_str()))
                ),
            ));
        }
        for ((name, ty), v) in decls.inputs.iter().zip(inputs) {
            require_packed_words(check, &format!("input {name}"), v, *ty)?;
        }
        let out_names: Vec<String> = shared
            .outputs
            .iter()
            .map(|(n, _)| format!("output {n}"))
            .collect();
        for ((out_name, (_, ty)), output) in out_names.iter().zip(&shared.outputs).zip(outputs) {
            require_packed_words(check, out_name, output, *ty)?;
        }
        for ((name, t), s) in decls.scalars.iter().zip(scalars) {
            check_scalar(check, name, *t, s)?;
        }
        let (out_name, output) = (&out_names[0], &outputs[0]);
        if shared.row_sized {
            for &i in &layout.inputs {
                let name = format!("input {}", decls.inputs[i].0);
                kernel::check_same_topology(check, out_name, output, &name, &inputs[i])?;
            }
            for (name, other) in out_names.iter().zip(outputs).skip(1) {
                kernel::check_same_topology(check, out_name, output, name, other)?;
            }
        } else if output.len() != 1 {
            return Err(check.length(
                out_name.as_str(),
                "rows",
                output.len(),
                1,
                "an expression that reads no vector input (one result row)",
            ));
        }

        let mut reads: Vec<BufferHandle> = Vec::new();
        for &i in &layout.inputs {
            reads.extend(inputs[i].buffers());
        }
        for &j in &layout.scalars {
            if let ScalarBinding::View(v) = scalars[j] {
                reads.push(v.buffer());
            }
        }
        dedup(&mut reads);
        // Every written chunk of every output: (output, chunk, view).
        let written: Vec<(usize, usize, &DataView)> = outputs
            .iter()
            .enumerate()
            .flat_map(|(o, v)| v.chunks().iter().enumerate().map(move |(c, d)| (o, c, d)))
            .collect();
        for (i, &(oa, ca, a)) in written.iter().enumerate() {
            for &(ob, cb, b) in written.iter().skip(i + 1) {
                let overlap = a.buffer() == b.buffer()
                    && !a.is_empty()
                    && !b.is_empty()
                    && a.byte_offset() < b.byte_offset() + b.byte_span()
                    && b.byte_offset() < a.byte_offset() + a.byte_span();
                if overlap {
                    let what = (
                        format!("{} chunk {ca}", out_names[oa]),
                        format!("{} chunk {cb}", out_names[ob]),
                    );
                    let (first, second) = what;
                    return Err(check.aliased(
                        first,
                        second,
                        graph.buffer_id(a.buffer())?,
                        "writable chunks must be disjoint",
                    ));
                }
            }
        }
        for (name, o) in out_names.iter().zip(outputs) {
            if let Some(b) = o.buffers().into_iter().find(|b| reads.contains(b)) {
                return Err(check.aliased(
                    name.as_str(),
                    "a value the expression reads",
                    graph.buffer_id(b)?,
                    "write the result to another buffer",
                ));
            }
        }

        let limits = graph.device().limits();
        if layout.binding_count() > limits.max_storage_buffers_per_shader_stage as usize {
            return Err(AlgorithmError::DeviceLimit {
                algorithm: ALGORITHM,
                id: id.clone(),
                what: "storage bindings for parameters, output, inputs and scalars".into(),
                needed: layout.binding_count() as u64,
                limit: limits.max_storage_buffers_per_shader_stage as u64,
            });
        }
        let align = limits.min_storage_buffer_offset_alignment as u64;
        let mut views: Vec<&DataView> = outputs.iter().flat_map(|o| o.chunks()).collect();
        for &i in &layout.inputs {
            views.extend(inputs[i].chunks());
        }
        for v in views.iter().filter(|v| !v.is_empty()) {
            let size = v.aligned_range(align).size;
            if size > limits.max_storage_buffer_binding_size {
                return Err(AlgorithmError::DeviceLimit {
                    algorithm: ALGORITHM,
                    id: id.clone(),
                    what: format!("storage binding bytes for a {} chunk", v.format()),
                    needed: size,
                    limit: limits.max_storage_buffer_binding_size,
                });
            }
        }
        let max_dim = limits.max_compute_workgroups_per_dimension;
        let mut grids: Vec<WorkgroupSplit> = Vec::new();
        for c in output.chunks() {
            let workgroups = c.len().div_ceil(ROWS_PER_WORKGROUP);
            let grid = grid_for(workgroups, max_dim)
                .filter(|_| c.len() <= u32::MAX as u64)
                .ok_or_else(|| AlgorithmError::DeviceLimit {
                    algorithm: ALGORITHM,
                    id: id.clone(),
                    what: "workgroups for one chunk".into(),
                    needed: workgroups,
                    limit: (max_dim as u64 * max_dim as u64)
                        .min(u32::MAX as u64 / ROWS_PER_WORKGROUP),
                })?;
            grids.push(grid);
        }

        // One declared dispatch per non-empty chunk: `{id}`, or `{id}/chunk{k}` when several.
        // Bindings (`expr/wgsl`): the parameter words at 0, the outputs from 1, then the bound
        // inputs and scalars; a host scalar is read from a copy of the chunk's parameter words.
        let shader = ShaderSource::new(shared.id.clone(), shared.wgsl.clone());
        let dispatched: Vec<usize> = (0..grids.len()).filter(|&c| !grids[c].is_empty()).collect();
        for &ci in &dispatched {
            let out = &output.chunks()[ci];
            // [rows, output offsets.., input offsets.., scalar offsets.., host scalar values..]
            let mut p = vec![out.len() as u32];
            for o in outputs {
                p.push(word_offset(&o.chunks()[ci], align));
            }
            for &i in &layout.inputs {
                p.push(word_offset(&inputs[i].chunks()[ci], align));
            }
            let mut values = Vec::new();
            for &j in &layout.scalars {
                match scalars[j] {
                    ScalarBinding::View(v) => p.push(word_offset(&v, align)),
                    ScalarBinding::Value(s) => {
                        p.push((layout.params_len() + values.len()) as u32);
                        values.push(s.bits());
                    }
                }
            }
            if layout.fence {
                p.push(u32::MAX);
            }
            p.extend(values);
            let mut bindings = vec![Binding::storage_params(0, &p)];
            let mut slot = 1u32;
            let mut next = || {
                slot += 1;
                slot - 1
            };
            for o in outputs {
                bindings.push(Binding::read_write(next(), o.chunks()[ci]));
            }
            for &i in &layout.inputs {
                bindings.push(Binding::read(next(), inputs[i].chunks()[ci]));
            }
            for &j in &layout.scalars {
                bindings.push(match scalars[j] {
                    ScalarBinding::View(v) => Binding::read(next(), v),
                    ScalarBinding::Value(_) => Binding::storage_params(next(), &p),
                });
            }
            let node = if dispatched.len() == 1 {
                id.clone()
            } else {
                format!("{id}/chunk{ci}")
            };
            let grid = Grid::Workgroups(grids[ci].dims());
            graph.add_dispatch_node(DispatchNode::new(
                node,
                shader.clone(),
                ENTRY_POINT,
                bindings,
                grid,
            ))?;
        }
        Ok(())
    }
}

impl Shared {
    fn pipeline(&self, device: &wgpu::Device) -> Kernel {
        let layout = &self.source.layout;
        let mut bindings = vec![Access::Read];
        bindings.extend(std::iter::repeat_n(Access::ReadWrite, layout.outputs));
        bindings.extend(std::iter::repeat_n(
            Access::Read,
            layout.inputs.len() + layout.scalars.len(),
        ));
        Kernel::new(
            device,
            &self.source.id,
            &self.source.wgsl,
            ENTRY_POINT,
            &bindings,
            &[],
        )
    }
}

/// Component (4-byte word) offset of a view inside its aligned binding.
fn word_offset(v: &DataView, align: u64) -> u32 {
    ((v.byte_offset() - v.aligned_range(align).offset) / 4) as u32
}

/// Every chunk of `v` has the format of `ty`, is packed, and starts on a 4-byte boundary
/// (the spec asks no more: a float32x3 row may start at any multiple of 4).
fn require_packed_words(
    c: ViewCheck<'_>,
    what: &str,
    v: &VectorView,
    ty: ValueType,
) -> Result<(), AlgorithmError> {
    let format = ty.format();
    require_format(c, what, v, format)?;
    for (i, chunk) in v.chunks().iter().enumerate() {
        if !chunk.is_packed() || chunk.byte_offset() % 4 != 0 {
            return Err(AlgorithmError::UnsupportedView {
                algorithm: c.algorithm,
                id: c.id.to_string(),
                what: if v.chunks().len() == 1 {
                    what.to_string()
                } else {
                    format!("{what} chunk {i}")
                },
                expected: format!("packed {format} at a 4-byte aligned offset"),
                actual: format!(
                    "{} rows at byte offset {} with stride {}",
                    chunk.len(),
                    chunk.byte_offset(),
                    chunk.byte_stride()
                ),
            });
        }
    }
    Ok(())
}

fn check_scalar(
    c: ViewCheck<'_>,
    name: &str,
    t: ScalarType,
    s: &ScalarBinding,
) -> Result<(), AlgorithmError> {
    let unsupported = |expected: String, actual: String| AlgorithmError::UnsupportedView {
        algorithm: c.algorithm,
        id: c.id.to_string(),
        what: format!("scalar {name}"),
        expected,
        actual,
    };
    match s {
        ScalarBinding::Value(v) if v.scalar() != t => Err(unsupported(
            format!("a {t} value"),
            format!("a {} value", v.scalar()),
        )),
        ScalarBinding::View(v) => {
            let format = ValueType::new(t, 1).format();
            if v.format() != format || v.is_empty() {
                return Err(unsupported(
                    format!("a view of at least one {format} row"),
                    format!("{} rows of {}", v.len(), v.format()),
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn dedup(v: &mut Vec<BufferHandle>) {
    let mut seen = Vec::new();
    v.retain(|b| {
        if seen.contains(b) {
            false
        } else {
            seen.push(*b);
            true
        }
    });
}

fn join<'a>(it: impl Iterator<Item = &'a str>) -> String {
    it.collect::<Vec<_>>().join(", ")
}
