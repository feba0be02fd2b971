//! Scalar operations: [`ScalarLiteral`] (a constant as a GPU scalar) and [`ScalarOperation`]
//! (`a op b` over float32, sint32 or uint32 scalars). Their results are GPU-resident one-row
//! values that later operations (expressions included) read without a host binding.
//!
//! Bytes moved: a literal copies 4 bytes; an operation reads two words and writes one.

pub mod cpu;

use gpugraph_command::{
    copy_fn, Binding, CopyNode, DispatchNode, Grid, ResourceUse, ShaderRegistry, ShaderSource,
};

use crate::expr::ScalarValue;
use crate::graph::declaration::{scalar_format, ValueRef, ValueSpec};
use crate::graph::error::BoxError;
use crate::lowering::{LowerContext, Lowering};
use crate::operation::support::{copy_source, word_offset, Check, Operand};
use crate::operation::{Operation, OperationContract, Scope};

/// Type name of [`ScalarLiteral`].
pub const LITERAL_TYPE: &str = "scalar-literal";
/// Type name of [`ScalarOperation`].
pub const OPERATION_TYPE: &str = "scalar-operation";

/// The step's kernel, which the generated `apply` precedes.
static WGSL: ShaderRegistry = ShaderRegistry::new(
    "gpugraph-program scalar",
    &[("operation/scalar.wgsl", include_str!("scalar.wgsl"))],
);

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
    let key = format!("{OPERATION_TYPE}/{}/{:?}", ty.name(), op.op);
    let source = ShaderSource::new(
        key,
        format!(
            "fn apply(a: T, b: T) -> T {{ return {}; }}\n#include \"operation/scalar.wgsl\"\n",
            op.op.wgsl()
        ),
    )
    .registry(&WGSL)
    .alias("T", ty.wgsl());
    // Bindings are the views' aligned ranges at the device's storage alignment.
    let align = u64::from(cx.device().limits().min_storage_buffer_offset_alignment);
    // [a word, b word, out word, a host value, b host value]
    let p = [
        a.word(align, 3),
        b.word(align, 4),
        word_offset(&row, align),
        a.host_bits(),
        b.host_bits(),
    ];
    // A host operand reads its value from a node-owned copy of the parameter words (at the
    // host slot it names), so host and GPU operands take the same path in the kernel.
    let operand = |slot: u32, o: &Operand| match o {
        Operand::View(v) => Binding::read(slot, *v),
        Operand::Host(_) => Binding::storage_params(slot, &p),
    };
    let node = DispatchNode::new(
        cx.node_id("apply"),
        source,
        "scalar_operation",
        vec![
            Binding::storage_params(0, &p),
            Binding::read_write(1, row),
            operand(2, &a),
            operand(3, &b),
        ],
        Grid::Workgroups([1, 1, 1]),
    );
    cx.add_dispatch_node(node)?;
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
