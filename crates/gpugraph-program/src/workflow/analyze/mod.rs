//! The analysis workflow (what `gpugraph analyze` runs): over the columns of one table,
//! ONE command graph computes row filters, the value's extent, a histogram and its CDF,
//! per-group counts and means, and grid counts and means over x/y, and gathers every small
//! result into one MAP_READ staging buffer. One encode, one submission, one readback.
//!
//! Input: [`AnalyzeInput`], the table's columns as borrowed [`GpuVector`]s (values, optional
//! 0/1 uint32 validity, dictionary strings for text columns) with the rows of each chunk.
//! Spec: [`AnalyzeSpec`] (columns by role, filters, bins, grid). Output: [`Analysis`], a
//! compiled graph that borrows the columns' buffers (they must outlive it), and after a run
//! [`AnalyzeResults`].
//!
//! Which rows each statistic sees (nulls are excluded through the validity masks):
//! * `selected`: rows passing every filter (a filter column's null or NaN rows never pass);
//! * value extent and histogram: selected rows with a non-null value; non-finite values are
//!   ignored (counted as `nonfinite`);
//! * groups: selected rows with a non-null group and (with a value) a finite value;
//! * grid counts: selected rows whose x and y are non-null and finite, whatever the value;
//!   the domain is the extent of x and y over exactly those rows (computed on the GPU, so
//!   positions are mapped onto the unit square on the GPU and binned there), widened one
//!   float32 step outwards for columns whose upload rounded values ([`AnalyzeSpec::grid_widen`]);
//! * grid means: those rows whose grid value (z, [`AnalyzeSpec::grid_value`], a column of
//!   its own, e.g. the mean delay over departure time × distance) is also non-null and finite
//!   (counted per cell as `grid_value_count`).
//!
//! Kernels: filters, integer→float32 conversions and the validity/finiteness masks are
//! expression-language kernels ([`rows`]: e.g. `and(valid, lessThan(x, t))`, thresholds as
//! scalars, so one pipeline serves every threshold and column). Two kernels stay WGSL of
//! their own (`kernels.rs`), because the expression language has no bit casts or NaN
//! literals and reads only row 0 of a GPU-resident scalar: the grid positions (map onto
//! the unit square through a GPU extent widened by one float32 step, NaN for rows the grid
//! ignores) and the uniform histogram edges (bins + 1 outputs from a 2-word extent, not a
//! row-wise map). Their CPU twins are in [`cpu`].
//!
//! Float64: the GPU columns are float32, sint32 or uint32 (WGSL has no portable float64).
//! Filters that must compare float64 values exactly are decided where those values exist,
//! on the host, into a uint32 0/1 column filtered with `== 1` (the CLI does that in its
//! `exact` module while the Arrow batches are in memory).
//!
//! Per-row traffic: every primitive reads its 4-byte inputs and its 4-byte mask once, and the
//! row kernels read 4 and write 4 per column they touch. The flights demo (integer value and
//! x converted, value/group/grid, no filter) moves about 140 bytes per row: conversions 16,
//! extent 8, histogram 8, groups 12, grid mask 20 (x/y validity and finiteness), value mask
//! 16, x/y extents 16, positions 16, grid binning 12, grid aggregation 16 (the separate value
//! mask and binning keep point counts independent of the value); a numeric filter adds 12
//! (predicate) + 8 (selected count) and a mask AND per statistic.

mod build;
pub mod cpu;
mod domain;
mod kernels;
pub mod rows;

use std::collections::HashMap;

use gpugraph_command::wgpu;
use gpugraph_command::{CompiledGraph, GraphError, GraphStats, VectorFormat};
use gpugraph_gpgpu::{AlgorithmError, Summation};
use gpugraph_tables::{GpuVector, TableError};

use crate::expr::ExprError;

pub use domain::{step_out, widened};
pub use rows::{CompareOp, Comparison};

/// How the histogram's bins are chosen.
#[derive(Clone, Debug, PartialEq)]
pub enum Bins {
    /// Equal-width bins over the value's GPU-computed extent (at least 1).
    Uniform(u32),
    /// Literal edges: finite, strictly increasing, at least two.
    Edges(Vec<f32>),
}

/// Grid cells along x and y (each at least 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridSize {
    /// Cells along x.
    pub nx: u32,
    /// Cells along y.
    pub ny: u32,
}

/// The right-hand side of a [`RowFilter`].
#[derive(Clone, Debug, PartialEq)]
pub enum FilterValue {
    /// A number, for float32, sint32 and uint32 columns (integers compare exactly: the
    /// comparison is normalized to an inclusive integer range on the host; float32 columns
    /// compare against the number rounded to float32).
    Number(f64),
    /// A string, for text (dictionary-coded) columns; only `==` and `!=`.
    Text(String),
}

/// One row predicate `column op value`; null and NaN rows never pass.
#[derive(Clone, Debug, PartialEq)]
pub struct RowFilter {
    /// The column compared.
    pub column: String,
    /// The operator.
    pub op: CompareOp,
    /// The right-hand side.
    pub value: FilterValue,
}

impl std::fmt::Display for RowFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            FilterValue::Number(v) => write!(f, "{} {} {v}", self.column, self.op.symbol()),
            FilterValue::Text(s) => write!(f, "{} {} '{s}'", self.column, self.op.symbol()),
        }
    }
}

/// What to compute: column names per role, filters, bins and grid.
#[derive(Clone, Debug)]
pub struct AnalyzeSpec {
    /// The value column (extent, histogram, group means).
    pub value: Option<String>,
    /// The grid's x and y columns.
    pub xy: Option<(String, String)>,
    /// The column averaged per grid cell (z): `grid_mean` is the mean of z over each x × y
    /// cell. `None`: the grid has counts only. It may be any numeric column, the value
    /// column included; averaging x or y itself only reports where each cell lies.
    pub grid_value: Option<String>,
    /// The text column whose strings are the groups (dictionary codes in the input).
    pub group: Option<String>,
    /// Row filters, ANDed.
    pub filters: Vec<RowFilter>,
    /// Histogram bins.
    pub bins: Bins,
    /// Grid cells.
    pub grid: GridSize,
    /// Whether the x and y extents are widened one float32 step outwards before binning
    /// (for columns whose float32 upload rounded some values, so the domain contains every
    /// original point; see [`widened`]).
    pub grid_widen: [bool; 2],
    /// How group and grid means sum their values.
    pub summation: Summation,
}

impl AnalyzeSpec {
    /// The columns the spec names, each once, in role order (value, group, x, y, grid
    /// value, filters): what an [`AnalyzeInput`] must hold.
    pub fn columns(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for n in self
            .value
            .iter()
            .chain(self.group.iter())
            .chain(self.xy.iter().flat_map(|(x, y)| [x, y]))
            .chain(self.grid_value.iter())
            .chain(self.filters.iter().map(|f| &f.column))
        {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
        names
    }
}

/// One column of the input table. Borrowed: the analysis imports the buffers and never
/// destroys them.
#[derive(Clone, Copy, Debug)]
pub struct AnalyzeColumn<'a> {
    /// Values: float32, sint32 or uint32 (dictionary codes for text columns), one chunk per
    /// record batch, packed.
    pub values: &'a GpuVector,
    /// uint32 0/1 (1 = valid) with the values' chunk lengths; `None` when nothing is null.
    pub validity: Option<&'a GpuVector>,
    /// The strings the codes index (text columns only).
    pub dictionary: Option<&'a [String]>,
}

/// The input table: columns by name and the rows of each chunk (record batch).
#[derive(Clone, Debug, Default)]
pub struct AnalyzeInput<'a> {
    /// Columns by name; every column the spec names must be here.
    pub columns: HashMap<String, AnalyzeColumn<'a>>,
    /// Rows per chunk, shared by every column.
    pub chunk_rows: Vec<u64>,
}

/// Why an analysis could not be built. Every variant names the column, filter or graph
/// object involved.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// The spec names a column the input does not hold.
    #[error("column '{column}' was not given to the analysis")]
    MissingColumn {
        /// The column name.
        column: String,
    },
    /// A column's chunk lengths differ from the input's.
    #[error("column '{column}' has chunk lengths {actual:?} but the table has {expected:?}")]
    ChunkMismatch {
        /// The column name.
        column: String,
        /// The input's rows per chunk.
        expected: Vec<u64>,
        /// The column's.
        actual: Vec<u64>,
    },
    /// More rows than the uint32 counts can hold.
    #[error("{rows} rows exceed the analysis's uint32 counts (at most 4294967295 rows)")]
    TooManyRows {
        /// The input's rows.
        rows: u64,
    },
    /// A value, x or y column stored in a format the analysis cannot use as float32.
    #[error("column '{column}' is stored as {format}, which analyze cannot convert to float32")]
    NotNumeric {
        /// The column name.
        column: String,
        /// Its storage format.
        format: VectorFormat,
    },
    /// A filter whose column format cannot be compared.
    #[error("filter '{filter}': column '{column}' is stored as {format}, which the filter cannot compare")]
    FilterFormat {
        /// The filter as written.
        filter: String,
        /// The column name.
        column: String,
        /// Its storage format.
        format: VectorFormat,
    },
    /// `<`, `<=`, `>`, `>=` on a text column, a number against text or text against numbers.
    #[error("filter '{filter}': {reason}")]
    FilterValue {
        /// The filter as written.
        filter: String,
        /// What is wrong, naming the column.
        reason: String,
    },
    /// The group column has no dictionary (it is not a text column).
    #[error("group column '{column}' is not a text column (no dictionary)")]
    GroupNotText {
        /// The column name.
        column: String,
    },
    /// Histogram bins outside what the spec allows (no bins, fewer than two edges).
    #[error("histogram bins: {reason}")]
    Bins {
        /// What is wrong.
        reason: String,
    },
    /// An error while adding the grid's nodes (e.g. a grid too large for the device).
    #[error("grid {nx}x{ny}: {source}")]
    Grid {
        /// Cells along x.
        nx: u32,
        /// Cells along y.
        ny: u32,
        /// The underlying error.
        #[source]
        source: Box<AnalyzeError>,
    },
    /// Compiling the graph failed (transient allocation, device limits).
    #[error("compiling the analysis graph{}: {source}", grid.map(|g| format!(" (with a {}x{} grid)", g.nx, g.ny)).unwrap_or_default())]
    Compile {
        /// The grid, when there is one (its transients are the largest).
        grid: Option<GridSize>,
        /// The graph error.
        #[source]
        source: GraphError,
    },
    /// A graph call failed.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A primitive refused its views or the device limits.
    #[error(transparent)]
    Algorithm(#[from] AlgorithmError),
    /// A row kernel's expression did not compile (a bug: the expressions are fixed).
    #[error(transparent)]
    Expression(#[from] ExprError),
    /// Importing a column failed.
    #[error(transparent)]
    Table(#[from] TableError),
    /// Reading the results back failed.
    #[error("reading the analysis results back: {0}")]
    Readback(String),
}

/// Where one result lives in the staging buffer (in 4-byte words).
#[derive(Clone, Copy, Debug)]
struct Section {
    offset: usize,
    words: usize,
}

#[derive(Default)]
struct Layout {
    selected: Option<Section>,
    extent: Option<Section>,
    nonfinite: Option<Section>,
    edges: Option<Section>,
    counts: Option<Section>,
    cumulative: Option<Section>,
    hist_ignored: Option<Section>,
    invalid_edges: Option<Section>,
    group_count: Option<Section>,
    group_rows: Option<Section>,
    group_mean: Option<Section>,
    x_extent: Option<Section>,
    y_extent: Option<Section>,
    grid_count: Option<Section>,
    grid_value_count: Option<Section>,
    grid_mean: Option<Section>,
}

/// The compiled analysis. Owns its transients and the staging buffer; borrows (imports) the
/// input columns' buffers, which must stay alive until it drops.
pub struct Analysis {
    compiled: CompiledGraph,
    staging: wgpu::Buffer,
    layout: Layout,
    literal_edges: Option<Vec<f32>>,
    nodes: Vec<String>,
}

/// The small results read back after a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnalyzeResults {
    /// Rows passing the filters (`None` without filters: every row).
    pub selected: Option<u64>,
    /// `[min, max]` of the finite selected values (NaN when there are none); `None` without
    /// a value column.
    pub extent: Option<[f32; 2]>,
    /// Selected non-null values that are NaN or infinite.
    pub nonfinite: u64,
    /// Histogram edges (bins + 1).
    pub edges: Vec<f32>,
    /// Histogram counts per bin.
    pub counts: Vec<u32>,
    /// Inclusive prefix sums of `counts`.
    pub cumulative: Vec<u32>,
    /// Values the histogram ignored (non-finite or outside the edges).
    pub hist_ignored: u64,
    /// The GPU edges were invalid (no finite value, or the extent too narrow for distinct
    /// float32 edges): counts are all zero.
    pub invalid_edges: bool,
    /// Per group (dictionary code order): rows counted.
    pub group_count: Vec<u32>,
    /// Per group: selected rows whatever the value (only with filters and a value column;
    /// otherwise empty, and `group_count` is that number or every group has rows).
    pub group_rows: Vec<u32>,
    /// Per group: mean value (NaN when empty).
    pub group_mean: Vec<f32>,
    /// `[min, max]` of x over the grid's rows.
    pub x_extent: Option<[f32; 2]>,
    /// `[min, max]` of y over the grid's rows.
    pub y_extent: Option<[f32; 2]>,
    /// Row-major grid counts of x/y points (`cy * nx + cx`), whatever the value.
    pub grid_count: Vec<u32>,
    /// Row-major counts of the points whose grid value (z) is non-null and finite (the rows
    /// each cell's mean averages; empty without a grid value).
    pub grid_value_count: Vec<u32>,
    /// Row-major grid means of the grid value z (empty without a grid value).
    pub grid_mean: Vec<f32>,
}

impl Analysis {
    /// Builds and compiles the analysis of `input` on `device` (no GPU work is recorded).
    ///
    /// Reads the named columns (imported, never written or destroyed); writes only its own
    /// transients and the staging buffer, which it owns. Checks every named column (present,
    /// chunk lengths, format for its role), the row count and every filter before adding
    /// nodes; errors name the column or filter. Transients are graph-owned with the input's
    /// chunk lengths (in as few buffers as the device's buffer and binding sizes allow); the
    /// staging buffer holds every result (a few words per bin, group and cell), so the
    /// device's buffer size bounds bins × groups × cells. Counts are uint32: inputs of more
    /// than `u32::MAX` rows are refused ([`AnalyzeError::TooManyRows`]), so no count wraps.
    pub fn build(
        device: &wgpu::Device,
        input: &AnalyzeInput<'_>,
        spec: &AnalyzeSpec,
    ) -> Result<Self, AnalyzeError> {
        build::build(device, input, spec)
    }

    /// The compiled graph: encode it into a caller's encoder (it never submits) and submit;
    /// then [`Self::staging`] holds the results.
    pub fn compiled_mut(&mut self) -> &mut CompiledGraph {
        &mut self.compiled
    }

    /// The MAP_READ buffer every result is copied into by the graph's last nodes.
    pub fn staging(&self) -> &wgpu::Buffer {
        &self.staging
    }

    /// Node ids in execution order.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// Graph statistics (transients, reuse, imported bytes).
    pub fn stats(&self) -> &GraphStats {
        self.compiled.stats()
    }

    /// Convenience (submits and blocks): encodes the graph once, submits it on `queue`,
    /// waits, maps the staging buffer and decodes it.
    pub fn run(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> Result<AnalyzeResults, AnalyzeError> {
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("analysis"),
        });
        self.compiled
            .encode(&mut enc, &gpugraph_command::EncodeOptions::default())?;
        queue.submit([enc.finish()]);
        let slice = self.staging.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| AnalyzeError::Readback(e.to_string()))?;
        rx.recv()
            .map_err(|e| AnalyzeError::Readback(e.to_string()))?
            .map_err(|e| AnalyzeError::Readback(e.to_string()))?;
        let words = {
            let bytes = slice
                .get_mapped_range()
                .map_err(|e| AnalyzeError::Readback(e.to_string()))?;
            bytemuck::pod_collect_to_vec::<u8, u32>(&bytes)
        };
        self.staging.unmap();
        Ok(self.decode(&words))
    }

    /// Decodes the staging buffer's words (read back after a run) into the results.
    pub fn decode(&self, words: &[u32]) -> AnalyzeResults {
        let l = &self.layout;
        let u32s = |s: Option<Section>| -> Vec<u32> {
            s.and_then(|s| words.get(s.offset..s.offset + s.words))
                .map(<[u32]>::to_vec)
                .unwrap_or_default()
        };
        let f32s =
            |s: Option<Section>| -> Vec<f32> { u32s(s).into_iter().map(f32::from_bits).collect() };
        let word = |s: Option<Section>| u32s(s).first().copied().unwrap_or(0) as u64;
        let pair = |s: Option<Section>| {
            s.map(|_| match f32s(s)[..] {
                [lo, hi] => [lo, hi],
                _ => [f32::NAN; 2],
            })
        };
        AnalyzeResults {
            selected: l.selected.map(|_| word(l.selected)),
            extent: pair(l.extent),
            nonfinite: word(l.nonfinite),
            edges: match &self.literal_edges {
                Some(e) => e.clone(),
                None => f32s(l.edges),
            },
            counts: u32s(l.counts),
            cumulative: u32s(l.cumulative),
            hist_ignored: word(l.hist_ignored),
            invalid_edges: word(l.invalid_edges) != 0,
            group_count: u32s(l.group_count),
            group_rows: u32s(l.group_rows),
            group_mean: f32s(l.group_mean),
            x_extent: pair(l.x_extent),
            y_extent: pair(l.y_extent),
            grid_count: u32s(l.grid_count),
            grid_value_count: u32s(l.grid_value_count),
            grid_mean: f32s(l.grid_mean),
        }
    }
}
