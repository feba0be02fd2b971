//! Support for the declaration-graph tests: uploads into chunked vectors, readback, a
//! poisoned-target maker, and test operations with configurable contracts (a `Fill` that
//! writes a position pattern into its output, and `CopyRows` from the operation-contracts
//! spec) with their custom lowerings.
#![allow(dead_code)]

use std::sync::Arc;

use gpugraph_command::{
    wgpu, Binding, DispatchNode, GpuContext, Grid, ResourceUse, ShaderSource, VectorFormat,
};
use gpugraph_program::graph::{BoxError, ValueSpec};
use gpugraph_program::lowering::{LowerContext, Lowering};
use gpugraph_program::operation::{Operation, OperationContract, Scope, Shape};
use gpugraph_tables::{GpuData, GpuVector};

use gpugraph_testing::POISON;

/// A vector of `chunks` (lengths in rows) holding `data` rows of `format` in ONE buffer,
/// chunk k at a 256-byte aligned offset (the upload helper of gpugraph-tables).
pub fn upload<T: bytemuck::Pod>(
    ctx: &GpuContext,
    format: VectorFormat,
    data: &[T],
    chunks: &[usize],
) -> GpuVector {
    let per_row = format.components() as usize * 4 / std::mem::size_of::<T>();
    let mut parts = Vec::new();
    let mut at = 0;
    for &len in chunks {
        parts.push(&data[at * per_row..(at + len) * per_row]);
        at += len;
    }
    assert_eq!(
        at * per_row,
        data.len(),
        "chunk lengths must cover the data"
    );
    GpuVector::upload_chunks_shared(ctx, &parts, format).unwrap()
}

/// A one-chunk vector.
pub fn upload1<T: bytemuck::Pod>(ctx: &GpuContext, format: VectorFormat, data: &[T]) -> GpuVector {
    let rows = std::mem::size_of_val(data) / format.byte_size() as usize;
    upload(ctx, format, data, &[rows])
}

/// A target vector of `chunks` rows of `format`, every word POISON, chunks in separate
/// ranges of one buffer with a poisoned gap between them.
pub fn poisoned(ctx: &GpuContext, format: VectorFormat, chunks: &[usize]) -> GpuVector {
    let words = format.components() as usize;
    let total: usize = chunks.iter().sum::<usize>() * words;
    let data = vec![POISON; total];
    upload(ctx, format, &data, chunks)
}

/// All rows read back as u32 words.
pub fn read_u32(ctx: &GpuContext, v: &GpuVector) -> Vec<u32> {
    v.read_back::<u32>(ctx).unwrap()
}

/// All rows read back as f32 components.
pub fn read_f32(ctx: &GpuContext, v: &GpuVector) -> Vec<f32> {
    v.read_back::<f32>(ctx).unwrap()
}

/// A test operation with a fixed contract: writes `(chunk << 20) | row` (uint32 words) into
/// every row of `output`. Lowered by [`fill_lowering`].
pub struct Fill {
    pub id: String,
    pub output: String,
    pub contract: OperationContract,
}

pub const FILL: &str = "test-fill";

impl Fill {
    /// Produces result `output` (uint32) with `shape`, reading `reads`.
    pub fn new(id: &str, output: &str, shape: Option<Shape>, reads: &[&str]) -> Self {
        let mut c =
            OperationContract::new().output(output, ValueSpec::vector(VectorFormat::Uint32));
        for r in reads {
            c = c.read(*r);
        }
        Self {
            id: id.into(),
            output: output.into(),
            contract: c.write(output, shape),
        }
    }
    /// Produces result `output` with `input`'s rows and chunk boundaries, reading `input`.
    pub fn like(id: &str, output: &str, input: &str) -> Self {
        Self::new(id, output, Some(Shape::Like(input.into())), &[input])
    }
    /// A test operation with an arbitrary contract (its lowering fills `output` if it is a
    /// resolved uint32 vector).
    pub fn with_contract(id: &str, output: &str, contract: OperationContract) -> Self {
        Self {
            id: id.into(),
            output: output.into(),
            contract,
        }
    }
}

impl Operation for Fill {
    fn id(&self) -> &str {
        &self.id
    }
    fn operation_type(&self) -> &str {
        FILL
    }
    fn contract(&self, _scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        Ok(self.contract.clone())
    }
}

const FILL_WGSL: &str = "
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn fill(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < params[0]) {
        out[params[1] + g.x] = params[2] + g.x;
    }
}";

/// The custom lowering of [`Fill`]: one dispatch node per non-empty output chunk.
pub fn fill_lowering() -> Lowering {
    Lowering::typed::<Fill>(FILL, |op, cx: &mut LowerContext<'_>| {
        let out = cx.resolve_vector(op.output.as_str())?;
        for (k, c) in out.chunks().iter().copied().enumerate() {
            if c.is_empty() {
                continue;
            }
            let id = cx.node_id(&format!("chunk-{k}"));
            let align = u64::from(cx.device().limits().min_storage_buffer_offset_alignment);
            let r = c.aligned_range(align);
            let p = [c.len() as u32, r.element_offset as u32, (k as u32) << 20];
            cx.add_dispatch_node(DispatchNode::new(
                id,
                ShaderSource::new("test-fill", FILL_WGSL),
                "fill",
                vec![Binding::storage_params(0, &p), Binding::read_write(1, c)],
                Grid::Workgroups([(c.len() as u32).div_ceil(64), 1, 1]),
            ))?;
        }
        cx.explain("test fill", "one dispatch per non-empty chunk");
        Ok(())
    })
}

/// The pattern [`Fill`] writes for `chunks`.
pub fn fill_pattern(chunks: &[u64]) -> Vec<u32> {
    chunks
        .iter()
        .enumerate()
        .flat_map(|(k, &len)| (0..len as u32).map(move |i| ((k as u32) << 20) + i))
        .collect()
}

/// The CopyRows operation of the operation-contracts spec.
pub struct CopyRows {
    pub id: String,
    pub input: String,
    pub output: String,
    contract: OperationContract,
}

impl CopyRows {
    pub fn new(id: &str, input: &str, output: &str) -> Self {
        Self {
            id: id.into(),
            input: input.into(),
            output: output.into(),
            contract: OperationContract::new()
                .output(output, ValueSpec::vector(VectorFormat::Uint32x2))
                .read(input)
                .write(output, Some(Shape::Like(input.into()))),
        }
    }
}

impl Operation for CopyRows {
    fn id(&self) -> &str {
        &self.id
    }
    fn operation_type(&self) -> &str {
        "copy-rows"
    }
    fn contract(&self, _scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        Ok(self.contract.clone())
    }
}

/// The spec's copyRowsLowering: one copy node per non-empty chunk.
pub fn copy_rows_lowering() -> Lowering {
    Lowering::typed::<CopyRows>("copy-rows", |op, cx| {
        let source = cx.resolve_vector(op.input.as_str())?;
        let destination = cx.resolve_vector(op.output.as_str())?;
        if source.format != VectorFormat::Uint32x2 {
            return Err("CopyRows expects uint32x2".into());
        }
        for (index, chunk) in source.chunks().iter().copied().enumerate() {
            if chunk.is_empty() {
                continue;
            }
            let output = destination.chunks()[index];
            cx.add_copy_node(gpugraph_command::CopyNode::new(
                format!("{}-{index}", op.id),
                vec![ResourceUse::copy_src(chunk), ResourceUse::copy_dst(output)],
                move |_| {
                    Ok(gpugraph_command::copy_fn(move |encoder, ec| {
                        encoder.copy_buffer_to_buffer(
                            ec.buffer(chunk),
                            chunk.byte_offset(),
                            ec.buffer(output),
                            output.byte_offset(),
                            chunk.len() * 8, // Packed uint32x2 rows.
                        );
                    }))
                },
            ))?;
        }
        Ok(())
    })
}

/// A borrowed view of `v` (the same buffers, never destroyed through it).
pub fn borrowed(v: &GpuVector) -> GpuVector {
    GpuVector::from_chunks(
        v.format(),
        v.chunks().iter().map(GpuData::to_borrowed).collect(),
    )
    .unwrap()
}

/// Keeps the `Arc`/`wgpu` imports used by every test file that includes this module.
pub fn _keep(_: Arc<()>, _: wgpu::BufferUsages) {}

/// One program declared on both a [`Graph`] and a [`SimpleGraph`].
#[derive(Default, Clone)]
pub struct Program {
    pub inputs: Vec<(String, ValueSpec)>,
    pub states: Vec<(String, ValueSpec)>,
    pub ops: Vec<Arc<dyn Operation>>,
}

use gpugraph_program::graph::{
    Bindings, CompileOptions, CompiledGraph, CompiledSimpleGraph, Graph, RunOptions, RunResults,
    SimpleGraph,
};

/// `$program`'s inputs, state and operations declared on the empty graph `$graph` (either
/// kind: they share the builder methods but no trait).
macro_rules! declare_program {
    ($program:expr, $graph:expr) => {{
        let mut g = $graph;
        for (n, s) in &$program.inputs {
            g.add_input(n, s.clone()).unwrap();
        }
        for (n, s) in &$program.states {
            g.add_state(n, s.clone()).unwrap();
        }
        for op in &$program.ops {
            g.add_shared(op.clone()).unwrap();
        }
        g
    }};
}

impl Program {
    pub fn input(mut self, name: &str, spec: ValueSpec) -> Self {
        self.inputs.push((name.into(), spec));
        self
    }
    pub fn state(mut self, name: &str, spec: ValueSpec) -> Self {
        self.states.push((name.into(), spec));
        self
    }
    pub fn op(mut self, op: impl Operation) -> Self {
        self.ops.push(Arc::new(op));
        self
    }
    pub fn graph(&self) -> Graph {
        declare_program!(self, Graph::new("full"))
    }
    pub fn simple(&self) -> SimpleGraph {
        declare_program!(self, SimpleGraph::new("simple"))
    }
    /// Both compiled graphs selecting `outputs`.
    pub fn compile_both(
        &self,
        ctx: &GpuContext,
        outputs: &[&str],
    ) -> (CompiledGraph, CompiledSimpleGraph) {
        (
            self.graph()
                .compile(ctx, CompileOptions::outputs(outputs))
                .unwrap(),
            self.simple()
                .compile(ctx, CompileOptions::outputs(outputs))
                .unwrap(),
        )
    }
}

/// Runs both and checks that every result has the same chunks and the same bits; returns the
/// Graph's results. Graph submits once; SimpleGraph once per operation.
pub fn run_both(
    ctx: &GpuContext,
    compiled: &(CompiledGraph, CompiledSimpleGraph),
    bindings: Bindings<'_>,
) -> RunResults {
    let full = compiled.0.run(bindings.clone(), RunOptions::new()).unwrap();
    let simple = compiled.1.run(bindings, RunOptions::new()).unwrap();
    assert_eq!(full.submissions(), 1);
    assert_eq!(simple.submissions(), simple.lowering().decisions.len());
    let names: Vec<&str> = full.names().collect();
    assert_eq!(names, simple.names().collect::<Vec<_>>());
    for name in names {
        let (a, b) = (full.get(name).unwrap(), simple.get(name).unwrap());
        assert_eq!(a.chunk_lengths(), b.chunk_lengths(), "{name}: chunks");
        assert_eq!(
            read_u32(ctx, a),
            read_u32(ctx, b),
            "{name}: Graph and SimpleGraph differ"
        );
    }
    full
}

/// `|got - want| <= tol(i)` for every component, with the index in the message.
pub fn assert_close(got: &[f32], want: &[f32], tol: impl Fn(usize) -> f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol(i),
            "{what}[{i}]: got {g}, want {w} (tolerance {})",
            tol(i)
        );
    }
}
