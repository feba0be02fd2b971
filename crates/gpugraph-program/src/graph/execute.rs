//! Per-run execution: validate bindings, allocate results, bind every value into a command
//! graph (imports for caller storage, transients for intermediates), run each operation's
//! lowering, then compile, encode and submit.
//!
//! Two strategies share all of it: [`Mode::Fused`] (`Graph`) lowers every operation into ONE
//! command graph, encodes it into one command encoder and submits once; intermediates are
//! command-graph transients (whole-buffer reuse applies) released when the run ends.
//! [`Mode::PerOperation`] (`SimpleGraph`) gives each operation its own command graph and
//! submission (one evaluator pass per operation; intermediates are run-owned buffers dropped
//! after the run). Both run the same lowerings, so results are bit-identical.

use std::collections::HashMap;

use gpugraph_command::{
    wgpu, BufferDescriptor, CommandGraph, DataViewDescriptor, EncodeOptions, GpuContext,
    GraphError, VectorFormat, VectorView,
};
use gpugraph_tables::{GpuData, GpuVector};

use crate::graph::bindings::{validate, Bindings, RunLayout, RunOptions, Storage};
use crate::graph::error::{BoxError, ProgramError};
use crate::graph::fusion::FusionGroup;
use crate::graph::planner::{Plan, PlannedOp};
use crate::lowering::{
    BackendCapabilities, LowerContext, LoweringDecision, LoweringReport, LoweringSource, Resolved,
};

/// How a compiled program turns operations into submissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One command graph, one encoder, one submission per run.
    Fused,
    /// One command graph and one submission per operation.
    PerOperation,
}

/// Usage flags a run may rely on when it imports caller storage (never map flags).
const IMPORT_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::UNIFORM)
    .union(wgpu::BufferUsages::INDIRECT)
    .union(wgpu::BufferUsages::VERTEX)
    .union(wgpu::BufferUsages::INDEX);

/// Usage of every buffer a run allocates: bindable and copyable both ways.
const VALUE_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// What one run returns: the selected results (caller-owned unless they are the caller's own
/// output targets) and the lowering decisions with the nodes each operation emitted.
#[derive(Debug)]
pub struct RunResults {
    values: Vec<(String, GpuVector)>,
    lowering: LoweringReport,
    submissions: usize,
}

impl RunResults {
    /// The result `name` (a one-row vector for scalar results).
    pub fn get(&self, name: &str) -> Option<&GpuVector> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
    /// Removes and returns the result `name`.
    pub fn take(&mut self, name: &str) -> Option<GpuVector> {
        let i = self.values.iter().position(|(n, _)| n == name)?;
        Some(self.values.remove(i).1)
    }
    /// Result names in selection order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.iter().map(|(n, _)| n.as_str())
    }
    /// All results in selection order.
    pub fn into_values(self) -> Vec<(String, GpuVector)> {
        self.values
    }
    /// What each operation's lowering chose and emitted in this run.
    pub fn lowering(&self) -> &LoweringReport {
        &self.lowering
    }
    /// Queue submissions the run made (1 for `Graph`; one per operation for `SimpleGraph`).
    pub fn submissions(&self) -> usize {
        self.submissions
    }
}

/// The state shared by every run of one compiled program.
pub(crate) struct Engine {
    pub ctx: GpuContext,
    pub plan: Plan,
    pub capabilities: BackendCapabilities,
    pub mode: Mode,
    /// Expression fusion groups (Graph only).
    pub fusion: Vec<FusionGroup>,
}

impl Engine {
    fn command_error(&self, context: String) -> impl FnOnce(GraphError) -> ProgramError + '_ {
        move |source| ProgramError::CommandGraph {
            graph: self.plan.graph.clone(),
            context,
            source: Box::new(source),
        }
    }

    fn alignment(&self) -> u64 {
        (self.ctx.device.limits().min_storage_buffer_offset_alignment as u64).max(4)
    }

    pub(crate) fn run(
        &self,
        bindings: &Bindings<'_>,
        options: &RunOptions<'_>,
    ) -> Result<RunResults, ProgramError> {
        let layout = validate(&self.plan, bindings, options)?;
        let plan = &self.plan;
        // Selected results become caller-owned vectors; SimpleGraph also gives intermediates
        // real buffers because they cross submissions.
        let mut owned: Vec<Option<GpuVector>> = vec![None; plan.values.len()];
        for (v, s) in layout.storage.iter().enumerate() {
            let Some(Storage::Allocate { format, chunks }) = s else {
                continue;
            };
            if plan.selected.contains(&v) || self.mode == Mode::PerOperation {
                owned[v] = Some(self.allocate(v, *format, chunks)?);
            }
        }

        let mut decisions = Vec::with_capacity(plan.ops.len());
        let submissions = match self.mode {
            Mode::Fused => {
                let mut cg = CommandGraph::new(plan.graph.clone(), &self.ctx.device);
                let groups: Vec<&FusionGroup> = self
                    .fusion
                    .iter()
                    .filter(|g| g.applies(plan, &layout))
                    .collect();
                // Results that stay in registers get no storage at all.
                let bound: Vec<usize> = (0..plan.values.len())
                    .filter(|v| !groups.iter().any(|g| g.in_registers.contains(v)))
                    .collect();
                let resolved = self.bind(&mut cg, &layout, &owned, &bound)?;
                let mut i = 0;
                while i < plan.ops.len() {
                    if let Some(g) = groups.iter().find(|g| g.ops.start == i) {
                        decisions.extend(g.lower(plan, &mut cg, &resolved, &self.capabilities)?);
                        i = g.ops.end;
                    } else {
                        decisions.push(self.lower(&mut cg, &plan.ops[i], &resolved)?);
                        i += 1;
                    }
                }
                self.submit(cg)?;
                1
            }
            Mode::PerOperation => {
                for op in &plan.ops {
                    let mut cg =
                        CommandGraph::new(format!("{}/{}", plan.graph, op.id()), &self.ctx.device);
                    let used: Vec<usize> = op.uses.iter().map(|u| u.value).collect();
                    let resolved = self.bind(&mut cg, &layout, &owned, &used)?;
                    let mut d = self.lower(&mut cg, op, &resolved)?;
                    d.reason = format!(
                        "SimpleGraph runs one evaluator pass (own command graph and submission) per operation; {}",
                        d.reason
                    );
                    d.realization = format!("evaluator pass: {}", d.realization);
                    decisions.push(d);
                    self.submit(cg)?;
                }
                plan.ops.len()
            }
        };

        let mut values = Vec::with_capacity(plan.selected.len());
        for &v in &plan.selected {
            let vector = match &layout.storage[v] {
                Some(Storage::Borrowed(t)) if layout.targeted[v] => (*t).clone(),
                _ => owned[v].take().ok_or_else(|| ProgramError::Allocation {
                    operation: plan.writer(v).to_string(),
                    value: plan.values[v].name.clone(),
                    bytes: 0,
                    format: plan.values[v]
                        .spec
                        .row_format()
                        .unwrap_or(VectorFormat::Uint32),
                    reason: "the result has no storage (internal planning error)".into(),
                })?,
            };
            values.push((plan.values[v].name.clone(), vector));
        }
        // Run-owned intermediates (SimpleGraph) drop here; wgpu defers their destruction
        // until the submitted work that uses them has finished.
        drop(owned);
        Ok(RunResults {
            values,
            lowering: LoweringReport { decisions },
            submissions,
        })
    }

    /// A new owned vector with `chunks` rows of `format`: one buffer, each chunk at an offset
    /// aligned for storage binding.
    fn allocate(
        &self,
        v: usize,
        format: VectorFormat,
        chunks: &[u64],
    ) -> Result<GpuVector, ProgramError> {
        let name = &self.plan.values[v].name;
        if chunks.is_empty() {
            return Ok(GpuVector::empty(format));
        }
        let (offsets, bytes) = chunk_layout(format, chunks, self.alignment());
        let size = bytes.max(4).div_ceil(4) * 4;
        let fail = |reason: String| ProgramError::Allocation {
            operation: self.plan.writer(v).to_string(),
            value: name.clone(),
            bytes: size,
            format,
            reason,
        };
        let max = self.ctx.device.limits().max_buffer_size;
        if size > max {
            return Err(fail(format!("exceeds the device's max buffer size {max}")));
        }
        let scope = self
            .ctx
            .device
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(&format!("{}/{name}", self.plan.graph)),
            size,
            usage: VALUE_USAGE,
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(fail(e.to_string()));
        }
        let row = format.byte_size() as u64;
        let first = GpuData::owned(buffer, offsets[0], chunks[0], format, row)
            .map_err(|e| fail(e.to_string()))?;
        let mut data = vec![first.clone()];
        for (&off, &len) in offsets.iter().zip(chunks).skip(1) {
            data.push(
                first
                    .sibling(off, len, format, row)
                    .map_err(|e| fail(e.to_string()))?,
            );
        }
        GpuVector::from_chunks(format, data).map_err(|e| fail(e.to_string()))
    }

    /// Binds the values `which` into `cg`: caller and run-owned storage as imports (each
    /// physical buffer once), intermediates as transients, host scalars as values.
    fn bind(
        &self,
        cg: &mut CommandGraph,
        layout: &RunLayout<'_>,
        owned: &[Option<GpuVector>],
        which: &[usize],
    ) -> Result<HashMap<String, Resolved>, ProgramError> {
        let mut out = HashMap::with_capacity(which.len());
        for &v in which {
            let value = &self.plan.values[v];
            let Some(storage) = &layout.storage[v] else {
                continue;
            };
            let spec = value.spec.clone();
            let context = || format!("binding '{}'", value.name);
            let resolved = match (storage, &owned[v]) {
                (Storage::Host(s), _) => Resolved::Host { spec, value: *s },
                (Storage::Borrowed(vector), _) => {
                    let view = import_vector(cg, &value.name, vector)
                        .map_err(self.command_error(context()))?;
                    Resolved::Storage { spec, view }
                }
                (Storage::Allocate { .. }, Some(vector)) => {
                    let view = import_vector(cg, &value.name, vector)
                        .map_err(self.command_error(context()))?;
                    Resolved::Storage { spec, view }
                }
                (Storage::Allocate { format, chunks }, None) => {
                    let view = transient_vector(cg, &value.name, *format, chunks, self.alignment())
                        .map_err(self.command_error(context()))?;
                    Resolved::Storage { spec, view }
                }
            };
            out.insert(value.name.clone(), resolved);
        }
        Ok(out)
    }

    fn lower(
        &self,
        cg: &mut CommandGraph,
        op: &PlannedOp,
        resolved: &HashMap<String, Resolved>,
    ) -> Result<LoweringDecision, ProgramError> {
        let before = cg.node_count();
        let mut cx = LowerContext {
            graph: cg,
            operation: op.id(),
            declared: &op.names,
            values: resolved,
            capabilities: &self.capabilities,
            nodes: Vec::new(),
            realization: None,
        };
        op.lowering
            .lower(op.op.as_ref(), &mut cx)
            .map_err(|e| lowering_error(op, e))?;
        let LowerContext {
            nodes, realization, ..
        } = cx;
        let (realization, reason) = realization.unwrap_or_else(|| default_realization(op));
        Ok(LoweringDecision {
            operation: op.id().to_string(),
            operation_type: op.op.operation_type().to_string(),
            source: op.source,
            realization,
            reason,
            nodes,
            node_count: cg.node_count() - before,
        })
    }

    /// Compiles, encodes into one encoder and submits once. wgpu validation errors raised
    /// while encoding or submitting come back as errors instead of reaching the device's
    /// uncaptured-error handler.
    fn submit(&self, cg: CommandGraph) -> Result<(), ProgramError> {
        let id = cg.id().to_string();
        let mut compiled = cg
            .compile()
            .map_err(self.command_error(format!("compiling command graph {id}")))?;
        let device = &self.ctx.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(&id) });
        let encoded = compiled.encode(&mut encoder, &EncodeOptions::default());
        if encoded.is_ok() {
            self.ctx.queue.submit([encoder.finish()]);
        }
        let wgpu_error = pollster::block_on(scope.pop());
        encoded.map_err(self.command_error(format!("encoding command graph {id}")))?;
        if let Some(e) = wgpu_error {
            return Err(ProgramError::CommandGraph {
                graph: self.plan.graph.clone(),
                context: format!("submitting command graph {id}"),
                source: Box::new(GraphError::NodeCompile {
                    node: id,
                    source: e.to_string().into(),
                }),
            });
        }
        // Dropping `compiled` releases this run's transients once the GPU is done with them.
        Ok(())
    }
}

fn default_realization(op: &PlannedOp) -> (String, String) {
    let ty = op.op.operation_type();
    match op.source {
        LoweringSource::BuiltIn => (
            format!("built-in {ty}"),
            format!("'{ty}' is a built-in operation type"),
        ),
        LoweringSource::Custom => (
            "custom lowering".into(),
            format!("'{ty}' was supplied to the compiler's lowering set"),
        ),
    }
}

fn lowering_error(op: &PlannedOp, e: BoxError) -> ProgramError {
    match e.downcast::<ProgramError>() {
        Ok(p) => *p,
        Err(source) => ProgramError::Lowering {
            operation: op.id().to_string(),
            operation_type: op.op.operation_type().to_string(),
            source,
        },
    }
}

/// Byte offsets of `chunks` packed rows of `format`, each chunk starting on `alignment`, and
/// the total bytes.
pub(crate) fn chunk_layout(
    format: VectorFormat,
    chunks: &[u64],
    alignment: u64,
) -> (Vec<u64>, u64) {
    let row = format.byte_size() as u64;
    let mut offsets = Vec::with_capacity(chunks.len());
    let mut cursor = 0u64;
    for &len in chunks {
        let off = cursor.div_ceil(alignment) * alignment;
        offsets.push(off);
        cursor = off + len * row;
    }
    (offsets, cursor)
}

/// Imports every distinct buffer behind `vector` once (the graph borrows it) with the usage
/// it was created with, and returns its chunk views in order.
fn import_vector(
    cg: &mut CommandGraph,
    name: &str,
    vector: &GpuVector,
) -> Result<VectorView, GraphError> {
    let mut views = Vec::with_capacity(vector.num_chunks());
    for (k, chunk) in vector.chunks().iter().enumerate() {
        let buffer = chunk.buffer();
        let handle = match cg.imported_handle(buffer) {
            Some(h) => h,
            None => {
                let id = if k == 0 {
                    format!("value:{name}")
                } else {
                    format!("value:{name}#{k}")
                };
                let desc = BufferDescriptor::new(id, buffer.size(), buffer.usage() & IMPORT_USAGE);
                cg.import_buffer(desc, buffer)?
            }
        };
        views.push(cg.create_data_view(handle, chunk.view_descriptor())?);
    }
    cg.create_vector_view(views)
}

/// A graph-owned transient holding `chunks` packed rows of `format`.
fn transient_vector(
    cg: &mut CommandGraph,
    name: &str,
    format: VectorFormat,
    chunks: &[u64],
    alignment: u64,
) -> Result<VectorView, GraphError> {
    if chunks.is_empty() {
        return Ok(VectorView::from_chunks(Vec::new()));
    }
    let (offsets, bytes) = chunk_layout(format, chunks, alignment);
    let handle = cg.create_buffer(BufferDescriptor::new(
        format!("value:{name}"),
        bytes.max(4).div_ceil(4) * 4,
        VALUE_USAGE,
    ))?;
    let views = offsets
        .iter()
        .zip(chunks)
        .map(|(&off, &len)| {
            cg.create_data_view(
                handle,
                DataViewDescriptor::packed(format, len).at_offset(off),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    cg.create_vector_view(views)
}
