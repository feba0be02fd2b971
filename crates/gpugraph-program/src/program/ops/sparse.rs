//! Sparse semantic operations and their program lowerings over gpgpu's `sparse` kernels:
//! `spmv` (`y = A·x`) and `spmv-dot` (plus per-tile partials of `x·y`), each realized as
//! `subgroup-row` (short rows and subgroup support) or `thread-row`; and `dot`
//! (`out = a·b`), realized as `single-workgroup` (N fits one workgroup) or `hierarchical`.
//! The choice is the lowering set's, made from the operation's attributes (mean row
//! length, N) and the backend's capabilities. CPU semantics: the sums of gpgpu's `sparse::cpu`
//! oracles, written out here; float results match within float32 rounding of the summation
//! order, not bit for bit.

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{BufferDescriptor, CommandGraph, DataView, VectorFormat};
use gpugraph_gpgpu::sparse::{self, CsrViews, ReduceRealization, SpmvRealization, ROWS_PER_WG};

use crate::lowering::{Attribute, BackendCapabilities, ProgramLowering, ProgramOp, FORCED};
use crate::program::primitive::{CpuMemory, PrimitiveNode};
use crate::program::ProgramTreeError;

/// Attribute: stored entries per row of the matrix (selects the SpMV realization).
pub const MEAN_ROW_LENGTH: &str = "mean_row_length";
/// Attribute: invocations per row of a forced `subgroup-row`.
pub const LANES: &str = "lanes";
/// Attribute: rows per workgroup of `spmv-dot` (one partial per workgroup).
pub const ROWS_PER_WG_ATTR: &str = "rows_per_wg";

/// Binds CSR matrix `a` as inputs `a.offsets`, `a.columns`, `a.values` with attributes
/// `rows`, `columns` and [`MEAN_ROW_LENGTH`].
pub fn with_matrix(op: ProgramOp, a: &CsrViews, mean_row_length: f64) -> ProgramOp {
    op.input("a.offsets", a.row_offsets)
        .input("a.columns", a.column_indices)
        .input("a.values", a.values)
        .attr("rows", Attribute::U32(a.rows))
        .attr("columns", Attribute::U32(a.columns))
        .attr(MEAN_ROW_LENGTH, Attribute::F64(mean_row_length))
}

/// The matrix bound by [`with_matrix`].
pub fn matrix(op: &ProgramOp) -> Result<CsrViews, ProgramTreeError> {
    Ok(CsrViews {
        row_offsets: op.view("a.offsets")?,
        column_indices: op.view("a.columns")?,
        values: op.view("a.values")?,
        rows: op.u32_attr("rows")?,
        columns: op.u32_attr("columns")?,
    })
}

fn force(op: ProgramOp, forced: Option<SpmvRealization>) -> ProgramOp {
    match forced {
        None => op,
        Some(r) => {
            let op = op.attr(FORCED, Attribute::Text(r.name().into()));
            match r {
                SpmvRealization::SubgroupRow { lanes } => op.attr(LANES, Attribute::U32(lanes)),
                SpmvRealization::ThreadRow => op,
            }
        }
    }
}

/// `y = A·x` (operation type `spmv`); `forced` skips the automatic choice.
pub fn spmv(
    id: impl Into<String>,
    a: &CsrViews,
    mean_row_length: f64,
    x: DataView,
    y: DataView,
    forced: Option<SpmvRealization>,
) -> ProgramOp {
    let op = with_matrix(ProgramOp::new(id, "spmv"), a, mean_row_length)
        .input("x", x)
        .output("y", y);
    force(op, forced)
}

/// `y = A·x` plus one partial of `x·y` per `rows_per_wg` rows into `partials` (operation
/// type `spmv-dot`; a square matrix): conjugate gradients' q = A·p with p·q.
#[allow(clippy::too_many_arguments)]
pub fn spmv_dot(
    id: impl Into<String>,
    a: &CsrViews,
    mean_row_length: f64,
    x: DataView,
    y: DataView,
    partials: DataView,
    rows_per_wg: u32,
    forced: Option<SpmvRealization>,
) -> ProgramOp {
    let op = with_matrix(ProgramOp::new(id, "spmv-dot"), a, mean_row_length)
        .input("x", x)
        .output("y", y)
        .output("partials", partials)
        .attr(ROWS_PER_WG_ATTR, Attribute::U32(rows_per_wg));
    force(op, forced)
}

/// `out = a·b` (operation type `dot`; float32 vectors of equal length, one float32 row out).
pub fn dot(id: impl Into<String>, a: DataView, b: DataView, out: DataView) -> ProgramOp {
    ProgramOp::new(id, "dot")
        .input("a", a)
        .input("b", b)
        .output("out", out)
}

/// The subgroup-row realization `op` would get on `caps` (its forced lanes, else
/// [`SpmvRealization::choose`]), or why none.
fn subgroup_lanes(op: &ProgramOp, caps: &BackendCapabilities) -> Result<(u32, String), String> {
    if let Ok(lanes) = op.u32_attr(LANES) {
        return Ok((lanes, format!("{lanes} lanes per row (forced)")));
    }
    let mean = op.f64_attr(MEAN_ROW_LENGTH).map_err(|e| e.to_string())?;
    match SpmvRealization::choose(mean, caps.device.subgroups, caps.device.subgroup_min_size) {
        (SpmvRealization::SubgroupRow { lanes }, why) => Ok((lanes, why)),
        (SpmvRealization::ThreadRow, why) => Err(why),
    }
}

fn spmv_nodes(
    op: &ProgramOp,
    graph: &CommandGraph,
    realization: SpmvRealization,
) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
    let a = matrix(op)?;
    let (partials, rows_per_wg) = if op.name == "spmv-dot" {
        (Some(op.view("partials")?), op.u32_attr(ROWS_PER_WG_ATTR)?)
    } else {
        (None, ROWS_PER_WG)
    };
    let node = sparse::spmv_node_tiled(
        graph,
        "spmv",
        &a,
        op.view("x")?,
        op.view("y")?,
        partials,
        realization,
        rows_per_wg,
    )?;
    Ok(vec![PrimitiveNode::Dispatch(node)])
}

fn spmv_cpu(op: &ProgramOp, m: &mut CpuMemory) -> Result<Vec<f32>, ProgramTreeError> {
    let id = &op.id;
    let a = matrix(op)?;
    let offsets = m.read(id, &a.row_offsets)?;
    let cols = m.read(id, &a.column_indices)?;
    let vals = m.read_f32(id, &a.values)?;
    let x = m.read_f32(id, &op.view("x")?)?;
    let y: Vec<f32> = (0..a.rows as usize)
        .map(|row| {
            (offsets[row] as usize..offsets[row + 1] as usize).fold(0.0f32, |acc, k| {
                acc + vals[k] * x.get(cols[k] as usize).copied().unwrap_or(0.0)
            })
        })
        .collect();
    m.write_f32(id, &op.view("y")?, &y)?;
    Ok(y)
}

/// Per-tile sums of `f(i)` over `n` rows at `per` rows a tile (f64 within a tile, then
/// float32): the CPU image of a vector pass's partials. At least one tile.
pub fn tile_sums(n: usize, per: u32, f: impl Fn(usize) -> f64) -> Vec<f32> {
    let per = per.max(1) as usize;
    (0..sparse::tiles_of(n as u64, per as u32).max(1) as usize)
        .map(|t| (t * per..((t + 1) * per).min(n)).map(&f).sum::<f64>() as f32)
        .collect()
}

fn spmv_lowering(name: &'static str) -> ProgramLowering {
    ProgramLowering::new(name, |op, m| {
        let y = spmv_cpu(op, m)?;
        if op.name == "spmv-dot" {
            let x = m.read_f32(&op.id, &op.view("x")?)?;
            let per = op.u32_attr(ROWS_PER_WG_ATTR)?;
            let parts = tile_sums(y.len(), per, |i| f64::from(x[i]) * f64::from(y[i]));
            m.write_f32(&op.id, &op.view("partials")?, &parts)?;
        }
        Ok(())
    })
    .realization(
        "subgroup-row",
        |op, caps| subgroup_lanes(op, caps).map(|(_, why)| why),
        |op, graph, caps| {
            let (lanes, _) =
                subgroup_lanes(op, caps).map_err(|reasons| ProgramTreeError::NoRealization {
                    operation: op.id.clone(),
                    operation_type: op.name.clone(),
                    reasons,
                })?;
            spmv_nodes(op, graph, SpmvRealization::SubgroupRow { lanes })
        },
    )
    .realization(
        "thread-row",
        |_, _| Ok("one invocation per row (needs no subgroup operations)".into()),
        |op, graph, _| spmv_nodes(op, graph, SpmvRealization::ThreadRow),
    )
}

fn dot_nodes(
    op: &ProgramOp,
    graph: &mut CommandGraph,
    realization: ReduceRealization,
) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
    let (a, b, out) = (op.view("a")?, op.view("b")?, op.view("out")?);
    // Realized once per compile: the scratch is one graph transient however often the
    // operation runs.
    let scratch = match realization {
        ReduceRealization::SingleWorkgroup => None,
        ReduceRealization::Hierarchical => {
            let t = sparse::tiles(a.len());
            let h = graph.create_buffer(BufferDescriptor::new(
                format!("{}/partials", op.id),
                t * 4,
                BufferUsages::STORAGE,
            ))?;
            Some(graph.create_packed_view(h, VectorFormat::Float32, t)?)
        }
    };
    Ok(
        sparse::dot_nodes(graph, "dot", a, b, out, scratch, realization)?
            .into_iter()
            .map(PrimitiveNode::Dispatch)
            .collect(),
    )
}

fn dot_lowering() -> ProgramLowering {
    ProgramLowering::new("dot", |op, m| {
        let a = m.read_f32(&op.id, &op.view("a")?)?;
        let b = m.read_f32(&op.id, &op.view("b")?)?;
        // Accumulated in f64 and rounded once, as gpgpu's `sparse::cpu::dot` oracle defines the
        // result (spelled out here: production code does not import an oracle).
        let dot = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| f64::from(x) * f64::from(y))
            .sum::<f64>() as f32;
        m.write_f32(&op.id, &op.view("out")?, &[dot])
    })
    .realization(
        "single-workgroup",
        |op, _| {
            let n = op.view("a").map_err(|e| e.to_string())?.len();
            match ReduceRealization::choose(n) {
                (ReduceRealization::SingleWorkgroup, why) => Ok(why),
                (_, why) => Err(why),
            }
        },
        |op, graph, _| dot_nodes(op, graph, ReduceRealization::SingleWorkgroup),
    )
    .realization(
        "hierarchical",
        |op, _| {
            let n = op.view("a").map_err(|e| e.to_string())?.len();
            Ok(format!(
                "{} partials of {ROWS_PER_WG} rows, then one workgroup sums them",
                sparse::tiles(n)
            ))
        },
        |op, graph, _| dot_nodes(op, graph, ReduceRealization::Hierarchical),
    )
}

/// The sparse program lowerings: `spmv`, `spmv-dot`, `dot`.
pub(crate) fn lowerings() -> Vec<ProgramLowering> {
    vec![
        spmv_lowering("spmv"),
        spmv_lowering("spmv-dot"),
        dot_lowering(),
    ]
}
