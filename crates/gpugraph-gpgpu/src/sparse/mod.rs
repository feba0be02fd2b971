//! Sparse linear algebra on the kernel core: CSR SpMV (thread-row or subgroup-row, optionally
//! fused with the dot product conjugate gradients needs next), fixed-order dot products
//! (single-workgroup or hierarchical), and the fused passes of Jacobi-preconditioned CG.
//!
//! Every builder returns a [`DispatchNode`] description (registry WGSL, `#[repr(C)]` Pod
//! parameters, declared bindings, a rows grid) and schedules nothing: the caller adds it to
//! a graph, possibly with an indirect grid a gate kernel writes (see gpugraph-program's
//! program compiler). The realizations are chosen from shape and device capabilities by
//! [`SpmvRealization::choose`] and [`ReduceRealization::choose`], which also say why.
//!
//! Every vector kernel owns [`ROWS_PER_WG`] consecutive rows per workgroup and writes at most
//! one partial sum per workgroup; the scalar passes are one workgroup that sums partials in
//! a fixed order, so results are deterministic for a device.

pub mod cpu;
pub mod csr;
pub mod matrix_market;
mod pcg;

use gpugraph_command::wgpu;
use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, DataView, DispatchNode, Grid, VectorFormat,
};

use crate::error::AlgorithmError;
use crate::kernel::{shader, ViewCheck};

pub use csr::{CsrError, CsrMatrix};
pub use matrix_market::{read_matrix_market, read_matrix_market_within, MatrixMarketError};
pub use pcg::{
    PcgShape, PcgVectors, FOLD_PARTIALS, MAX_ROWS_PER_WG, PCG_SCALARS, S_PRED, S_RR, S_RZ_NEW,
    S_TOL2,
};

/// Invocations per workgroup of every sparse kernel.
pub const WG: u32 = 256;
/// Rows one workgroup of a vector kernel owns (so partial sums number `⌈n / ROWS_PER_WG⌉`).
pub const ROWS_PER_WG: u32 = 1024;

/// Partial sums (workgroups) of a vector kernel over `n` rows.
pub fn tiles(n: u64) -> u64 {
    tiles_of(n, ROWS_PER_WG)
}

/// Partial sums (workgroups) of a vector kernel over `n` rows at `rows_per_wg` rows each.
pub fn tiles_of(n: u64, rows_per_wg: u32) -> u64 {
    n.div_ceil(u64::from(rows_per_wg.max(1)))
}

/// How SpMV maps rows to invocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpmvRealization {
    /// One invocation per row (no subgroup operations needed).
    ThreadRow,
    /// `lanes` invocations of one subgroup per row, combined with `subgroupShuffleXor`.
    SubgroupRow {
        /// Invocations per row (a power of two ≤ the smallest subgroup).
        lanes: u32,
    },
}

impl SpmvRealization {
    /// The decision-report name.
    pub fn name(self) -> &'static str {
        match self {
            Self::ThreadRow => "thread-row",
            Self::SubgroupRow { .. } => "subgroup-row",
        }
    }

    /// The realization for rows of `mean_row_length` entries on a device with or without
    /// subgroup operations (`subgroup_min_size`: its smallest subgroup), and why. Lanes are
    /// the largest power of two ≤ the mean row length (capped at 32 and at the smallest
    /// subgroup, so a row never straddles two subgroups); fewer than two lanes → thread-row.
    pub fn choose(mean_row_length: f64, subgroups: bool, subgroup_min_size: u32) -> (Self, String) {
        if !subgroups || subgroup_min_size < 2 {
            return (
                Self::ThreadRow,
                "the device has no subgroup operations: one invocation per row".into(),
            );
        }
        let cap = subgroup_min_size.min(32);
        let mut lanes = 1u32;
        while lanes * 2 <= cap && f64::from(lanes * 2) <= mean_row_length {
            lanes *= 2;
        }
        if lanes < 2 {
            return (
                Self::ThreadRow,
                format!(
                    "rows too short for lanes (mean {mean_row_length:.2} entries): one invocation per row"
                ),
            );
        }
        (
            Self::SubgroupRow { lanes },
            format!(
                "short-row CSR workload (mean {mean_row_length:.2} entries per row) + subgroup support (smallest subgroup {subgroup_min_size}): {lanes} lanes per row"
            ),
        )
    }
}

/// How a sum over `n` rows is organized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceRealization {
    /// One workgroup sums everything (one node, no scratch).
    SingleWorkgroup,
    /// Per-workgroup partials into scratch, then one workgroup sums them (two nodes).
    Hierarchical,
}

impl ReduceRealization {
    /// The decision-report name.
    pub fn name(self) -> &'static str {
        match self {
            Self::SingleWorkgroup => "single-workgroup",
            Self::Hierarchical => "hierarchical",
        }
    }

    /// Single-workgroup when `n` fits one workgroup's [`ROWS_PER_WG`] rows, else hierarchical.
    pub fn choose(n: u64) -> (Self, String) {
        if n <= u64::from(ROWS_PER_WG) {
            (
                Self::SingleWorkgroup,
                format!("N = {n} fits one workgroup ({ROWS_PER_WG} rows)"),
            )
        } else {
            (
                Self::Hierarchical,
                format!(
                    "N = {n} exceeds single-workgroup capacity ({ROWS_PER_WG} rows): {} partials, then one workgroup",
                    tiles(n)
                ),
            )
        }
    }
}

/// A CSR matrix bound in a graph: uint32 offsets (`rows + 1`) and columns, float32 values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsrViews {
    /// `rows + 1` packed uint32.
    pub row_offsets: DataView,
    /// One packed uint32 per entry.
    pub column_indices: DataView,
    /// One packed float32 per entry.
    pub values: DataView,
    /// Rows.
    pub rows: u32,
    /// Columns (the length `x` must have).
    pub columns: u32,
}

impl CsrViews {
    /// Uploads `a` into three new storage buffers (at least 4 bytes each) and imports them
    /// into `graph` as `{id}/offsets`, `{id}/columns`, `{id}/values`. Returns the views and
    /// the buffers (the caller keeps them alive while the graph runs).
    pub fn upload(
        graph: &mut CommandGraph,
        id: &str,
        a: &CsrMatrix,
    ) -> Result<(Self, Vec<wgpu::Buffer>), AlgorithmError> {
        use bytemuck::cast_slice;
        use VectorFormat::{Float32, Uint32};
        let mut import = |name: &str, words: &[u32], format| {
            import_words(graph, &format!("{id}/{name}"), words, format)
        };
        let (offsets, o) = import("offsets", cast_slice(a.row_offsets()), Uint32)?;
        let (cols, c) = import("columns", cast_slice(a.column_indices()), Uint32)?;
        let (vals, v) = import("values", cast_slice(a.values()), Float32)?;
        Ok((
            Self {
                row_offsets: offsets,
                column_indices: cols,
                values: vals,
                rows: a.rows(),
                columns: a.columns(),
            },
            vec![o, c, v],
        ))
    }
}

/// A new STORAGE | COPY_SRC | COPY_DST buffer holding `words` (4 bytes when empty), imported
/// into `graph` as `id`; returns a packed view of the words and the buffer.
pub fn import_words(
    graph: &mut CommandGraph,
    id: &str,
    words: &[u32],
    format: VectorFormat,
) -> Result<(DataView, wgpu::Buffer), AlgorithmError> {
    use wgpu::util::DeviceExt;
    let usage =
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let bytes: &[u8] = if words.is_empty() {
        &[0; 4]
    } else {
        bytemuck::cast_slice(words)
    };
    let buffer = graph
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(id),
            contents: bytes,
            usage,
        });
    let h = graph.import_buffer(
        BufferDescriptor::new(id, bytes.len() as u64, usage),
        &buffer,
    )?;
    let view = graph.create_packed_view(h, format, words.len() as u64)?;
    Ok((view, buffer))
}

/// `SpmvParams` in spmv.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct SpmvParams {
    rows: u32,
    off_offsets: u32,
    off_cols: u32,
    off_vals: u32,
    off_x: u32,
    off_y: u32,
    off_dot: u32,
    pad0: u32,
}

/// `DotParams` in dot.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct DotParams {
    n: u32,
    off_a: u32,
    off_b: u32,
    off_out: u32,
}

fn storage_align(graph: &CommandGraph) -> u64 {
    u64::from(graph.device().limits().min_storage_buffer_offset_alignment)
}

fn element_offset(view: &DataView, align: u64) -> u32 {
    view.aligned_range(align).element_offset as u32
}

fn require(
    check: ViewCheck<'_>,
    what: &str,
    view: &DataView,
    format: VectorFormat,
    rows: u64,
    rule: &str,
) -> Result<(), AlgorithmError> {
    if view.format() != format || !view.is_packed() || view.live_count().is_some() {
        return Err(check.unsupported(
            what,
            format!("packed {format} rows without a live count"),
            format!(
                "{} rows of {}{}",
                view.len(),
                view.format(),
                if view.is_packed() { "" } else { ", strided" }
            ),
        ));
    }
    if view.len() != rows {
        return Err(check.length(what.to_string(), "rows", view.len(), rows, rule.to_string()));
    }
    Ok(())
}

fn distinct(
    check: ViewCheck<'_>,
    written: (&str, &DataView),
    others: &[(&str, &DataView)],
) -> Result<(), AlgorithmError> {
    for (name, v) in others {
        if v.buffer() == written.1.buffer() {
            return Err(check.aliased(
                written.0,
                *name,
                "one buffer",
                "a written view shares its buffer with another binding of the same dispatch",
            ));
        }
    }
    Ok(())
}

/// The dispatch of `y = A·x` (and, with `dot_partials`, one partial of `x·y` per workgroup,
/// [`tiles`]`(rows)` float32 rows; needs a square matrix) as node `id`. Checks formats,
/// lengths, aliasing and, for subgroup-row, nothing about the device: pick the realization
/// with [`SpmvRealization::choose`].
pub fn spmv_node(
    graph: &CommandGraph,
    id: &str,
    a: &CsrViews,
    x: DataView,
    y: DataView,
    dot_partials: Option<DataView>,
    realization: SpmvRealization,
) -> Result<DispatchNode, AlgorithmError> {
    spmv_node_tiled(graph, id, a, x, y, dot_partials, realization, ROWS_PER_WG)
}

/// [`spmv_node`] with `rows_per_wg` rows per workgroup (a power of two ≥ [`WG`]) instead of
/// [`ROWS_PER_WG`]: the dot partials are then [`tiles_of`]`(rows, rows_per_wg)` rows. CG
/// uses larger tiles so that every workgroup of the next pass can fold all partials itself.
#[allow(clippy::too_many_arguments)]
pub fn spmv_node_tiled(
    graph: &CommandGraph,
    id: &str,
    a: &CsrViews,
    x: DataView,
    y: DataView,
    dot_partials: Option<DataView>,
    realization: SpmvRealization,
    rows_per_wg: u32,
) -> Result<DispatchNode, AlgorithmError> {
    let check = ViewCheck::new("spmv", id);
    if !rows_per_wg.is_power_of_two() || rows_per_wg < WG {
        return Err(check.unsupported(
            "rows per workgroup",
            format!("a power of two ≥ {WG}"),
            rows_per_wg.to_string(),
        ));
    }
    let rows = u64::from(a.rows);
    let nnz = a.values.len();
    require(
        check,
        "row offsets",
        &a.row_offsets,
        VectorFormat::Uint32,
        rows + 1,
        "rows + 1",
    )?;
    require(
        check,
        "column indices",
        &a.column_indices,
        VectorFormat::Uint32,
        nnz,
        "one per value",
    )?;
    require(
        check,
        "values",
        &a.values,
        VectorFormat::Float32,
        nnz,
        "one per value",
    )?;
    require(
        check,
        "x",
        &x,
        VectorFormat::Float32,
        u64::from(a.columns),
        "the matrix columns",
    )?;
    require(
        check,
        "y",
        &y,
        VectorFormat::Float32,
        rows,
        "the matrix rows",
    )?;
    let inputs = [
        ("row offsets", &a.row_offsets),
        ("column indices", &a.column_indices),
        ("values", &a.values),
        ("x", &x),
    ];
    distinct(check, ("y", &y), &inputs)?;
    if let Some(d) = &dot_partials {
        require(
            check,
            "dot partials",
            d,
            VectorFormat::Float32,
            tiles_of(rows, rows_per_wg),
            "one per workgroup of rows",
        )?;
        if a.rows != a.columns {
            return Err(check.length(
                "x",
                "rows",
                u64::from(a.columns),
                rows,
                "x·(A·x) needs a square matrix",
            ));
        }
        distinct(check, ("dot partials", d), &inputs)?;
        distinct(check, ("dot partials", d), &[("y", &y)])?;
    }
    let align = storage_align(graph);
    let params = SpmvParams {
        rows: a.rows,
        off_offsets: element_offset(&a.row_offsets, align),
        off_cols: element_offset(&a.column_indices, align),
        off_vals: element_offset(&a.values, align),
        off_x: element_offset(&x, align),
        off_y: element_offset(&y, align),
        off_dot: dot_partials.map_or(0, |d| element_offset(&d, align)),
        pad0: 0,
    };
    let lanes = match realization {
        SpmvRealization::ThreadRow => 1,
        SpmvRealization::SubgroupRow { lanes } => {
            if !lanes.is_power_of_two() || !(2..=32).contains(&lanes) {
                return Err(check.unsupported(
                    "subgroup-row lanes",
                    "a power of two in 2..=32",
                    lanes.to_string(),
                ));
            }
            lanes
        }
    };
    let wgsl = shader("sparse/spmv.wgsl")
        .comment(format!(
            "gpugraph-gpgpu sparse/mod.rs: SpMV {}",
            realization.name()
        ))
        .u32("WG", WG)
        .u32("ROWS_PER_WG", rows_per_wg)
        .u32("LANES", lanes)
        .define_if(dot_partials.is_some(), "DOT")
        .define_if(lanes > 1, "SUBGROUP_ROW")
        .build();
    let mut bindings = vec![
        Binding::params(0, &params),
        Binding::read(1, a.row_offsets),
        Binding::read(2, a.column_indices),
        Binding::read(3, a.values),
        Binding::read(4, x),
        Binding::read_write(5, y),
    ];
    if let Some(d) = dot_partials {
        bindings.push(Binding::read_write(6, d));
    }
    Ok(DispatchNode::new(
        id,
        gpugraph_command::ShaderSource::new(format!("sparse/spmv/{}", realization.name()), wgsl),
        "spmv",
        bindings,
        rows_grid_of(rows, rows_per_wg),
    ))
}

/// The grid of a vector kernel over `n` rows.
pub fn rows_grid(n: u64) -> Grid {
    rows_grid_of(n, ROWS_PER_WG)
}

/// The grid of a vector kernel over `n` rows at `rows_per_wg` rows per workgroup.
pub fn rows_grid_of(n: u64, rows_per_wg: u32) -> Grid {
    Grid::Rows {
        rows: n,
        rows_per_workgroup: rows_per_wg,
    }
}

fn dot_source(dot: bool) -> String {
    shader("sparse/dot.wgsl")
        .comment("gpugraph-gpgpu sparse/mod.rs: dot products")
        .u32("WG", WG)
        .u32("ROWS_PER_WG", ROWS_PER_WG)
        .define_if(dot, "DOT")
        .define_if(!dot, "SUM")
        .build()
}

/// The dispatches of `out[0] = a·b` (fixed order) as nodes `{id}` (single-workgroup) or
/// `{id}/partials` + `{id}/finish` (hierarchical, through `scratch`: [`tiles`]`(n)` float32
/// rows).
pub fn dot_nodes(
    graph: &CommandGraph,
    id: &str,
    a: DataView,
    b: DataView,
    out: DataView,
    scratch: Option<DataView>,
    realization: ReduceRealization,
) -> Result<Vec<DispatchNode>, AlgorithmError> {
    let check = ViewCheck::new("dot", id);
    let n = a.len();
    require(check, "a", &a, VectorFormat::Float32, n, "a's own length")?;
    require(check, "b", &b, VectorFormat::Float32, n, "the length of a")?;
    require(
        check,
        "output",
        &out,
        VectorFormat::Float32,
        1,
        "one scalar",
    )?;
    distinct(check, ("output", &out), &[("a", &a), ("b", &b)])?;
    if n > u64::from(u32::MAX) {
        return Err(check.device_limit("rows", n, u64::from(u32::MAX)));
    }
    let align = storage_align(graph);
    let shader = |dot: bool| {
        gpugraph_command::ShaderSource::new(
            if dot { "sparse/dot" } else { "sparse/sum" },
            dot_source(dot),
        )
    };
    match realization {
        ReduceRealization::SingleWorkgroup => {
            let params = DotParams {
                n: n as u32,
                off_a: element_offset(&a, align),
                off_b: element_offset(&b, align),
                off_out: element_offset(&out, align),
            };
            Ok(vec![DispatchNode::new(
                id,
                shader(true),
                "dot_single",
                vec![
                    Binding::params(0, &params),
                    Binding::read(1, a),
                    Binding::read(2, b),
                    Binding::read_write(3, out),
                ],
                Grid::Workgroups([1, 1, 1]),
            )])
        }
        ReduceRealization::Hierarchical => {
            let Some(scratch) = scratch else {
                return Err(check.missing("scratch partials", "the hierarchical realization"));
            };
            let t = tiles(n);
            require(
                check,
                "scratch partials",
                &scratch,
                VectorFormat::Float32,
                t,
                "one per workgroup of rows",
            )?;
            distinct(
                check,
                ("scratch partials", &scratch),
                &[("a", &a), ("b", &b), ("output", &out)],
            )?;
            let first = DotParams {
                n: n as u32,
                off_a: element_offset(&a, align),
                off_b: element_offset(&b, align),
                off_out: element_offset(&scratch, align),
            };
            let second = DotParams {
                n: t as u32,
                off_a: element_offset(&scratch, align),
                off_b: 0,
                off_out: element_offset(&out, align),
            };
            Ok(vec![
                DispatchNode::new(
                    format!("{id}/partials"),
                    shader(true),
                    "dot_partials",
                    vec![
                        Binding::params(0, &first),
                        Binding::read(1, a),
                        Binding::read(2, b),
                        Binding::read_write(3, scratch),
                    ],
                    rows_grid(n),
                ),
                DispatchNode::new(
                    format!("{id}/finish"),
                    shader(false),
                    "dot_single",
                    vec![
                        Binding::params(0, &second),
                        Binding::read(1, scratch),
                        Binding::read_write(3, out),
                    ],
                    Grid::Workgroups([1, 1, 1]),
                ),
            ])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{assert_struct_layout, field_offsets};

    #[test]
    fn parameter_structs_match_the_wgsl() {
        let spmv = shader("sparse/spmv.wgsl")
            .u32("WG", WG)
            .u32("ROWS_PER_WG", ROWS_PER_WG)
            .u32("LANES", 1)
            .define("DOT")
            .build();
        assert_struct_layout(
            &spmv,
            "SpmvParams",
            Some(std::mem::size_of::<SpmvParams>()),
            &field_offsets!(SpmvParams; rows, off_offsets, off_cols, off_vals, off_x, off_y, off_dot, pad0)
                [..],
        );
        assert_struct_layout(
            &dot_source(true),
            "DotParams",
            Some(std::mem::size_of::<DotParams>()),
            &field_offsets!(DotParams; n, off_a, off_b, off_out)[..],
        );
        pcg::check_layouts();
    }

    #[test]
    fn realizations_follow_shape_and_capabilities() {
        assert_eq!(
            SpmvRealization::choose(5.0, false, 0).0,
            SpmvRealization::ThreadRow
        );
        assert_eq!(
            SpmvRealization::choose(5.0, true, 32).0,
            SpmvRealization::SubgroupRow { lanes: 4 }
        );
        assert_eq!(
            SpmvRealization::choose(1.2, true, 32).0,
            SpmvRealization::ThreadRow
        );
        assert_eq!(
            SpmvRealization::choose(100.0, true, 8).0,
            SpmvRealization::SubgroupRow { lanes: 8 }
        );
        assert_eq!(
            ReduceRealization::choose(1024).0,
            ReduceRealization::SingleWorkgroup
        );
        assert_eq!(
            ReduceRealization::choose(1025).0,
            ReduceRealization::Hierarchical
        );
    }
}
