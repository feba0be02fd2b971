//! Scalar operations: [`ScalarLiteral`] (a constant as a GPU scalar) and [`ScalarOperation`]
//! (`a op b` over float32, sint32 or uint32 scalars). Their results are GPU-resident one-row
//! values that later operations (expressions included) read without a host binding.
//!
//! Bytes moved: a literal copies 4 bytes; an operation reads two words and writes one.

pub mod cpu;

use gpugraph_command::{copy_fn, view_binding, BindGroupCache, ComputeNode, CopyNode, ResourceUse};
use gpugraph_gpgpu::kernel::parameter_buffer;

use crate::expr::ScalarValue;
use crate::graph::declaration::{scalar_format, ValueRef, ValueSpec};
use crate::graph::error::BoxError;
use crate::lowering::{LowerContext, Lowering};
use crate::operation::support::{
    cached_kernel, copy_source, read_then_write, word_offset, Check, Operand,
};
use crate::operation::{Operation, OperationContract, Scope};

/// Type name of [`ScalarLiteral`].
pub const LITERAL_TYPE: &str = "scalar-literal";
/// Type name of [`ScalarOperation`].
pub const OPERATION_TYPE: &str = "scalar-operation";

const WGSL: &str = include_str!("scalar.wgsl");

/// Writes a constant into the GPU scalar `output` (its own result). Reads nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalarLiteral {
    /// Operation id.
    pub id: String,
    /// The result name.
    pub output: String,
    /// The constant (its type is the result's type).
    pub value: ScalarValue,
}

impl ScalarLiteral {
    /// `output = value`.
    pub fn new(id: impl Into<String>, output: impl Into<String>, value: ScalarValue) -> Self {
        Self {
            id: id.into(),
            output: output.into(),
            value,
        }
    }
}

impl Operation for ScalarLiteral {
    operation_identity!(LITERAL_TYPE);
    fn contract(&self, _scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        Ok(OperationContract::new()
            .output(&self.output, ValueSpec::scalar(self.value.scalar()))
            .write(&self.output, None))
    }
}

/// A binary scalar operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarOp {
    /// `a + b` (integers wrap).
    Add,
    /// `a - b` (integers wrap).
    Subtract,
    /// `a * b` (integers wrap).
    Multiply,
    /// `a / b` (integers truncate; division by zero returns `a`, as in WGSL).
    Divide,
    /// The smaller operand.
    Min,
    /// The larger operand.
    Max,
}

impl ScalarOp {
    fn wgsl(self) -> &'static str {
        match self {
            ScalarOp::Add => "a + b",
            ScalarOp::Subtract => "a - b",
            ScalarOp::Multiply => "a * b",
            ScalarOp::Divide => "a / b",
            ScalarOp::Min => "min(a, b)",
            ScalarOp::Max => "max(a, b)",
        }
    }
}

/// `output = a op b` for two scalars of one type (host bindings or GPU results). Reads both
/// operands once and writes the one-row result.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalarOperation {
    /// Operation id.
    pub id: String,
    /// The operator.
    pub op: ScalarOp,
    /// Left operand.
    pub a: ValueRef,
    /// Right operand.
    pub b: ValueRef,
    /// The result name.
    pub output: String,
}

impl ScalarOperation {
    /// `output = a op b`.
    pub fn new(
        id: impl Into<String>,
        op: ScalarOp,
        a: impl Into<ValueRef>,
        b: impl Into<ValueRef>,
        output: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            op,
            a: a.into(),
            b: b.into(),
            output: output.into(),
        }
    }
}

impl Operation for ScalarOperation {
    operation_identity!(OPERATION_TYPE);
    fn contract(&self, scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        let ta = scope.scalar_type(&self.a)?;
        let tb = scope.scalar_type(&self.b)?;
        if ta != tb {
            return Err(format!(
                "operands {} ({ta}) and {} ({tb}) must have one type",
                self.a, self.b
            )
            .into());
        }
        Ok(OperationContract::new()
            .output(&self.output, ValueSpec::scalar(ta))
            .read(self.a.clone())
            .read_once(self.b.clone())
            .write(&self.output, None))
    }
}

/// Built-in lowering of [`ScalarLiteral`]: a copy node from a 4-byte buffer created at
/// graph compile time.
pub(crate) fn literal_lowering() -> Lowering {
    Lowering::typed::<ScalarLiteral>(LITERAL_TYPE, |op, cx| {
        let out = cx.resolve_vector(op.output.as_str())?;
        let row = out.chunks()[0];
        let bits = op.value.bits();
        let node = CopyNode::new(
            cx.node_id("copy"),
            vec![ResourceUse::copy_dst(row)],
            move |cc| {
                let source = copy_source(cc.device(), cc.node_id(), &bits.to_le_bytes())?;
                Ok(copy_fn(move |encoder, ec| {
                    encoder.copy_buffer_to_buffer(&source, 0, ec.buffer(row), row.byte_offset(), 4);
                }))
            },
        );
        cx.add_copy_node(node)?;
        cx.explain(
            "constant copy",
            "a 4-byte compile-time buffer copied into the scalar's one-row storage",
        );
        Ok(())
    })
}

/// Built-in lowering of [`ScalarOperation`]: one single-invocation dispatch.
pub(crate) fn operation_lowering() -> Lowering {
    Lowering::typed::<ScalarOperation>(OPERATION_TYPE, lower_operation)
}

fn lower_operation(op: &ScalarOperation, cx: &mut LowerContext<'_>) -> Result<(), BoxError> {
    let check = Check::new(OPERATION_TYPE, &op.id);
    let a = cx.resolve_scalar(op.a.clone())?;
    let b = cx.resolve_scalar(op.b.clone())?;
    let out = cx.resolve_vector(op.output.as_str())?;
    let ty = a.ty;
    check.packed_words("output", &out.view, scalar_format(ty))?;
    let row = out.chunks()[0];
    let (a, b) = (Operand::of(&a.binding), Operand::of(&b.binding));
    let reads: Vec<(String, gpugraph_command::BufferHandle)> = [(&op.a, a), (&op.b, b)]
        .iter()
        .filter_map(|(r, o)| o.buffer().map(|h| (format!("operand {r}"), h)))
        .collect();
    check.disjoint(cx.graph(), &[row.buffer()], &reads)?;
    let uses = read_then_write(reads.iter().map(|(_, h)| *h), row);
    let key = format!("{OPERATION_TYPE}/{}/{:?}", ty.name(), op.op);
    let source = format!(
        "alias T = {};\nfn apply(a: T, b: T) -> T {{ return {}; }}\n{WGSL}",
        ty.wgsl(),
        op.op.wgsl()
    );
    let node = ComputeNode::new(cx.node_id("apply"), uses, move |cc| {
        let device = cc.device().clone();
        let kernel = cached_kernel(&device, &key, &source, "scalar_operation", 2);
        let align = cc.limits().min_storage_buffer_offset_alignment as u64;
        // [a word, b word, out word, a host value, b host value]
        let p = [
            a.word(align, 3),
            b.word(align, 4),
            word_offset(&row, align),
            a.host_bits(),
            b.host_bits(),
        ];
        let params = parameter_buffer(&device, cc.node_id(), bytemuck::cast_slice(&p));
        let mut cache = BindGroupCache::default();
        Ok(gpugraph_command::compute_fn(move |pass, ec| {
            let out_buffer = ec.buffer(row);
            let (ab, bb) = (a.buffer_in(ec, &params), b.buffer_in(ec, &params));
            let group = cache.get_or_create(&[out_buffer, ab, bb], || {
                kernel.bind_group(
                    &device,
                    &[
                        params.as_entire_buffer_binding(),
                        view_binding(out_buffer, &row, align).0,
                        a.binding(ab, align),
                        b.binding(bb, align),
                    ],
                )
            });
            kernel.dispatch(pass, group, gpugraph_gpgpu::kernel::Grid { x: 1, y: 1 });
        }))
    });
    cx.add_compute_node(node)?;
    cx.explain(
        "single-invocation kernel",
        format!(
            "{ty} {:?} over {} operand(s) resident on the GPU; no readback",
            op.op,
            reads.len()
        ),
    );
    Ok(())
}
