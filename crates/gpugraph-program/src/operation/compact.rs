//! [`Compact`]: stable compaction as an operation, lowered onto
//! [`gpugraph_gpgpu::compact::Compaction`] (fused scan + scatter; see its module doc for the
//! paths and the 8–12 bytes per row it moves). The survivor count (and the optional overflow
//! flag) are GPU-resident uint32 scalars: later operations, expressions included, read them
//! without readback.

use gpugraph_command::VectorFormat;
use gpugraph_gpgpu::compact::Compaction;

use crate::expr::ScalarType;
use crate::graph::declaration::{ValueRef, ValueSpec};
use crate::graph::error::BoxError;
use crate::lowering::{LowerContext, Lowering};
use crate::operation::{Operation, OperationContract, Scope, Shape};

/// Type name of [`Compact`].
pub const TYPE: &str = "compaction";

/// Writes `values[i]` for every nonzero `flags[i]`, in source order, into the uint32 result
/// `output`, and the true survivor count into the uint32 scalar `count`. Capacity: the
/// output's rows (by default `values`' rows and chunk boundaries, filled as one logical
/// sequence; or a fixed `capacity` in one chunk); survivors beyond it are counted, not
/// written, and `overflow` (when requested) is 1. Output rows past the count are unspecified.
#[derive(Clone, Debug, PartialEq)]
pub struct Compact {
    /// Operation id.
    pub id: String,
    /// Packed uint32 values.
    pub values: ValueRef,
    /// Packed uint32 flags with `values`' chunk lengths (nonzero = keep).
    pub flags: ValueRef,
    /// The compacted result name.
    pub output: String,
    /// The survivor-count scalar result name.
    pub count: String,
    /// The optional overflow-flag scalar result name.
    pub overflow: Option<String>,
    /// Fixed output rows (`None`: like `values`).
    pub capacity: Option<u64>,
}

impl Compact {
    /// `output, count = compact(values, flags)` with the values' capacity.
    pub fn new(
        id: impl Into<String>,
        values: impl Into<ValueRef>,
        flags: impl Into<ValueRef>,
        output: impl Into<String>,
        count: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            values: values.into(),
            flags: flags.into(),
            output: output.into(),
            count: count.into(),
            overflow: None,
            capacity: None,
        }
    }
    /// Also produce the overflow flag as scalar result `name`.
    pub fn with_overflow(mut self, name: impl Into<String>) -> Self {
        self.overflow = Some(name.into());
        self
    }
    /// A fixed output capacity (one chunk of `rows` rows).
    pub fn with_capacity(mut self, rows: u64) -> Self {
        self.capacity = Some(rows);
        self
    }
}

impl Operation for Compact {
    operation_identity!(TYPE);
    fn contract(&self, scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        for r in [&self.values, &self.flags] {
            let f = scope.vector_format(r)?;
            if f != VectorFormat::Uint32 {
                return Err(format!("{r} is {f}; compaction needs uint32").into());
            }
        }
        let shape = match self.capacity {
            Some(rows) => Shape::Length(rows),
            None => Shape::Like(self.values.clone()),
        };
        let uint = ValueSpec::scalar(ScalarType::Uint32);
        let mut c = OperationContract::new()
            .output(&self.output, ValueSpec::vector(VectorFormat::Uint32))
            .output(&self.count, uint.clone())
            .read(self.values.clone())
            .read_once(self.flags.clone())
            .write(&self.output, Some(shape))
            .write(&self.count, None);
        if let Some(o) = &self.overflow {
            c = c.output(o, uint).write(o, None);
        }
        Ok(c)
    }
}

/// Built-in lowering: the gpgpu compaction algorithm's nodes.
pub(crate) fn lowering() -> Lowering {
    Lowering::typed::<Compact>(TYPE, lower)
}

fn lower(op: &Compact, cx: &mut LowerContext<'_>) -> Result<(), BoxError> {
    let values = cx.resolve_vector(op.values.clone())?;
    let flags = cx.resolve_vector(op.flags.clone())?;
    let output = cx.resolve_vector(op.output.as_str())?;
    let count = cx.resolve_vector(op.count.as_str())?.chunks()[0];
    let overflow = match &op.overflow {
        Some(o) => Some(cx.resolve_vector(o.as_str())?.chunks()[0]),
        None => None,
    };
    let capacity = output.len();
    let non_empty = output.chunks().iter().filter(|c| !c.is_empty()).count();
    Compaction {
        id: cx.node_id("compact"),
        values: values.view.clone(),
        flags: flags.view,
        output: output.view,
        count,
        overflow,
    }
    .add_to_graph(cx.graph())?;
    cx.explain(
        if non_empty > 1 {
            "fused scan compaction, staged over output chunks"
        } else {
            "fused scan compaction, direct"
        },
        format!(
            "{} rows in {} chunk(s) into a capacity of {capacity} over {non_empty} non-empty output chunk(s); count stays on the GPU",
            values.len(),
            values.chunks().len()
        ),
    );
    Ok(())
}
