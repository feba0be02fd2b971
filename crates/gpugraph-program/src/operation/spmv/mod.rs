//! [`SpMV`]: `y = A · x` for a CSR matrix (uint32 row offsets and column indices, float32
//! values) and a float32 vector; `y` is a fixed-shape float32 result of `rows` rows.
//!
//! One invocation per row (the scalar CSR kernel). Bytes moved: per row 8 (offsets) + 4
//! (y); per nonzero 4 (column) + 4 (value) + 4 (gathered x, often cached). Each input must be
//! a single chunk (chunks are never repacked; split matrices are a named error).

pub mod cpu;

use gpugraph_command::{Access, Binding, DataView, DispatchNode, Grid, VectorFormat};

use crate::graph::declaration::{ValueRef, ValueSpec};
use crate::graph::error::BoxError;
use crate::lowering::{LowerContext, Lowering, ResolvedVector};
use crate::operation::policy::{operation_source, SPMV_ROWS_PER_WORKGROUP};
use crate::operation::support::{buffers_of, labeled, word_offset, Check};
use crate::operation::{Operation, OperationContract, Scope, Shape};

/// Type name of [`SpMV`].
pub const TYPE: &str = "spmv";

const WGSL: &str = include_str!("spmv.wgsl");

/// `output = A · x` with `A` in CSR form. Reads every offset, column and value once and
/// gathers `x`; writes all `rows` rows of the float32 result `output` (empty rows get 0).
#[derive(Clone, Debug, PartialEq)]
pub struct SpMV {
    /// Operation id.
    pub id: String,
    /// uint32, `rows + 1` entries.
    pub row_offsets: ValueRef,
    /// uint32 column of each nonzero.
    pub column_indices: ValueRef,
    /// float32 value of each nonzero.
    pub values: ValueRef,
    /// float32 dense vector.
    pub x: ValueRef,
    /// The result name (float32, `rows` rows).
    pub output: String,
    /// Rows of the matrix (the result's fixed length).
    pub rows: u64,
}

impl SpMV {
    /// `output = A · x` for a CSR matrix of `rows` rows.
    pub fn new(
        id: impl Into<String>,
        row_offsets: impl Into<ValueRef>,
        column_indices: impl Into<ValueRef>,
        values: impl Into<ValueRef>,
        x: impl Into<ValueRef>,
        output: impl Into<String>,
        rows: u64,
    ) -> Self {
        Self {
            id: id.into(),
            row_offsets: row_offsets.into(),
            column_indices: column_indices.into(),
            values: values.into(),
            x: x.into(),
            output: output.into(),
            rows,
        }
    }
}

impl Operation for SpMV {
    operation_identity!(TYPE);
    fn contract(&self, scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        for (r, want) in [
            (&self.row_offsets, VectorFormat::Uint32),
            (&self.column_indices, VectorFormat::Uint32),
            (&self.values, VectorFormat::Float32),
            (&self.x, VectorFormat::Float32),
        ] {
            let f = scope.vector_format(r)?;
            if f != want {
                return Err(format!("{r} is {f}; SpMV needs {want}").into());
            }
        }
        Ok(OperationContract::new()
            .output(&self.output, ValueSpec::vector(VectorFormat::Float32))
            .read(self.row_offsets.clone())
            .read(self.column_indices.clone())
            .read(self.values.clone())
            .read(self.x.clone())
            .write(&self.output, Some(Shape::Length(self.rows))))
    }
}

/// Built-in lowering: one compute node, one invocation per row.
pub(crate) fn lowering() -> Lowering {
    Lowering::typed::<SpMV>(TYPE, lower)
}

/// The one chunk holding `v`'s rows (any chunk when it has none), or a named error.
fn single_chunk(
    check: &Check<'_>,
    what: &str,
    v: &ResolvedVector,
) -> Result<Option<DataView>, BoxError> {
    let non_empty: Vec<&DataView> = v.chunks().iter().filter(|c| !c.is_empty()).collect();
    match non_empty.as_slice() {
        [] => Ok(None),
        [c] => Ok(Some(**c)),
        _ => Err(check
            .unsupported(
                what.to_string(),
                "a single chunk (chunks are never repacked)".into(),
                format!("{} non-empty chunks", non_empty.len()),
            )
            .into()),
    }
}

fn lower(op: &SpMV, cx: &mut LowerContext<'_>) -> Result<(), BoxError> {
    let check = Check::new(TYPE, &op.id);
    let offsets = cx.resolve_vector(op.row_offsets.clone())?;
    let cols = cx.resolve_vector(op.column_indices.clone())?;
    let vals = cx.resolve_vector(op.values.clone())?;
    let x = cx.resolve_vector(op.x.clone())?;
    let y = cx.resolve_vector(op.output.as_str())?;
    for (what, v, f) in [
        ("row offsets", &offsets, VectorFormat::Uint32),
        ("column indices", &cols, VectorFormat::Uint32),
        ("values", &vals, VectorFormat::Float32),
        ("x", &x, VectorFormat::Float32),
        ("output", &y, VectorFormat::Float32),
    ] {
        check.packed_words(what, &v.view, f)?;
    }
    if offsets.len() != op.rows + 1 {
        return Err(check
            .view_check()
            .length(
                "row offsets",
                "entries",
                offsets.len(),
                op.rows + 1,
                format!("a {}-row matrix", op.rows),
            )
            .into());
    }
    if cols.len() != vals.len() {
        return Err(check
            .view_check()
            .length(
                "values",
                "entries",
                vals.len(),
                cols.len(),
                "the column indices",
            )
            .into());
    }
    let oc = single_chunk(&check, "row offsets", &offsets)?;
    let cc = single_chunk(&check, "column indices", &cols)?;
    let vc = single_chunk(&check, "values", &vals)?;
    let xc = single_chunk(&check, "x", &x)?;
    let Some(yc) = single_chunk(&check, "output", &y)? else {
        cx.explain("nothing to do", "the matrix has no rows");
        return Ok(());
    };
    let Some(oc) = oc else {
        return Err(check
            .view_check()
            .missing("at least one entry (a CSR has rows + 1)", "row offsets")
            .into());
    };
    let reads = labeled(
        "a matrix or x input",
        buffers_of([&offsets.view, &cols.view, &vals.view, &x.view]),
    );
    check.disjoint(cx.graph(), &y.view.buffers(), &reads)?;
    let limits = cx.device().limits();
    for (what, c) in [
        ("row offsets", Some(oc)),
        ("column indices", cc),
        ("values", vc),
        ("x", xc),
        ("output", Some(yc)),
    ] {
        if let Some(c) = c {
            check.binding_fits(what, &c, &limits)?;
        }
    }
    check.fits_u32("rows", op.rows)?;
    check.fits_u32("nonzeros", vals.len())?;
    let grid = check.grid("rows", op.rows.div_ceil(SPMV_ROWS_PER_WORKGROUP), &limits)?;

    let source = operation_source(format!("{TYPE}/csr-row"), WGSL, 1);
    let (nnz, x_len, rows) = (vals.len() as u32, x.len() as u32, op.rows as u32);
    // Bindings are the views' aligned ranges at the device's storage alignment.
    let align = u64::from(limits.min_storage_buffer_offset_alignment);
    let word = |c: &Option<DataView>| c.as_ref().map_or(0, |c| word_offset(c, align));
    let p = [
        rows,
        word_offset(&oc, align),
        word(&cc),
        word(&vc),
        word(&xc),
        word_offset(&yc, align),
        x_len,
        nnz,
    ];
    // An empty matrix part has no view: a placeholder stands in (no row reads it).
    let optional = |slot: u32, c: Option<DataView>| {
        c.map_or(Binding::placeholder(slot, Access::Read), |c| {
            Binding::read(slot, c)
        })
    };
    cx.add_dispatch_node(DispatchNode::new(
        cx.node_id("csr"),
        source,
        "spmv_csr",
        vec![
            Binding::storage_params(0, &p),
            Binding::read_write(1, yc),
            Binding::read(2, oc),
            optional(3, cc),
            optional(4, vc),
            optional(5, xc),
        ],
        Grid::Workgroups(grid.dims()),
    ))?;
    cx.explain(
        "thread-per-row CSR",
        format!(
            "{} rows, {} nonzeros (mean row length {:.1}); one invocation per row",
            op.rows,
            nnz,
            nnz as f64 / op.rows.max(1) as f64
        ),
    );
    Ok(())
}
