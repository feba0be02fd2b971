//! Grid binning and grid aggregation: float32x2 positions into the row-major cells of a
//! caller domain; [`GridBinning`] counts points per cell, [`GridAggregation`] adds per-cell
//! sum, min, max and mean of aligned float32 weights.
//!
//! Contract (spec: GPUGridBinning, GPUGridAggregation):
//! * cell `(cx, cy)` is row `cy · nx + cx`; each axis splits `[min, max]` into equal cells by
//!   `floor((v − min) · cells / (max − min))` in float32 (see [`cpu::cell_of`]), the max edge
//!   included in the last cell (like the histogram's last edge);
//! * rows whose mask is zero are excluded; included rows with a non-finite coordinate, a
//!   position outside the domain, or a non-finite weight are ignored and counted in the
//!   optional `ignored` word;
//! * empty cells: count 0, sum 0, min/max/mean NaN; min/max exact (−0 below +0); by default
//!   sums add in a nondeterministic order (float32 compare-exchange atomics) within about
//!   `count · 2⁻²⁴ · Σ|w|` of the exact sum ([`crate::group::cpu::sum_bound`]);
//!   [`crate::group::Summation::Deterministic`] in the outputs makes them bit-identical;
//! * outputs are initialized once per encoding, then every chunk accumulates (vectors keep
//!   their chunks; positions, weights and mask share one chunk topology).
//!
//! Design: the keyed accumulation engine (`keyed`) keyed by cell: workgroup-privatized
//! accumulators while cells × statistics words fit workgroup memory (12,288 with 48 KiB),
//! global atomics beyond.
//! Memory traffic: 8 bytes per position (+4 weight, +4 mask) read once, plus ~12 bytes ×
//! cells × statistics for init, merge and finalize. Nodes: `{id}/init`, (`{id}/scale` with
//! deterministic sums), `{id}`, `{id}/finalize`.
//!
//! ```no_run
//! # use gpugraph_command::{CommandGraph, DataView};
//! # use gpugraph_gpgpu::grid::{GridAggregation, GridBinning, GridDomain};
//! # use gpugraph_gpgpu::group::AggregateOutputs;
//! # fn example(graph: &mut CommandGraph, points: DataView, weights: DataView,
//! #            density: DataView, mean: DataView) -> Result<(), gpugraph_gpgpu::AlgorithmError> {
//! let domain = GridDomain { x_min: 0.0, x_max: 1.0, y_min: 0.0, y_max: 1.0, nx: 256, ny: 256 };
//! GridBinning {
//!     id: "density".into(), positions: points.into(), mask: None, domain,
//!     counts: density, ignored: None,
//! }
//! .add_to_graph(graph)?;
//! GridAggregation {
//!     id: "mean-weight".into(), positions: points.into(), weights: weights.into(),
//!     mask: None, domain,
//!     outputs: AggregateOutputs { mean: Some(mean), ..Default::default() }, ignored: None,
//! }
//! .add_to_graph(graph)?;
//! # Ok(()) }
//! ```

pub mod cpu;

use gpugraph_command::{CommandGraph, DataView, VectorFormat, VectorView};

use crate::error::AlgorithmError;
use crate::kernel::ViewCheck;
use crate::keyed::{AggregateOutputs, Keyed, KeyedOutputs, KeyedPolicy, KeyedSpec};

/// A row-major grid of `nx × ny` equal cells over `[x_min, x_max] × [y_min, y_max]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridDomain {
    /// Left edge of column 0.
    pub x_min: f32,
    /// Right edge of the last column (included).
    pub x_max: f32,
    /// Lower edge of row 0.
    pub y_min: f32,
    /// Upper edge of the last row (included).
    pub y_max: f32,
    /// Columns (at least 1).
    pub nx: u32,
    /// Rows (at least 1).
    pub ny: u32,
}

impl GridDomain {
    /// Number of cells, `nx · ny`.
    pub fn cells(&self) -> u64 {
        self.nx as u64 * self.ny as u64
    }
    /// `nx / (x_max − x_min)` as float32 (shared by the kernel and the oracle).
    pub fn x_scale(&self) -> f32 {
        (self.nx as f64 / (self.x_max as f64 - self.x_min as f64)) as f32
    }
    /// `ny / (y_max − y_min)` as float32.
    pub fn y_scale(&self) -> f32 {
        (self.ny as f64 / (self.y_max as f64 - self.y_min as f64)) as f32
    }

    fn check(&self, algorithm: &'static str, id: &str) -> Result<(), AlgorithmError> {
        let check = ViewCheck::new(algorithm, id);
        for (axis, lo, hi, n, scale) in [
            ("x", self.x_min, self.x_max, self.nx, self.x_scale()),
            ("y", self.y_min, self.y_max, self.ny, self.y_scale()),
        ] {
            if !(lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite()) {
                return Err(check.out_of_range(
                    format!("the {axis} range"),
                    format!("[{lo}, {hi}]"),
                    "finite with min < max and a finite width",
                ));
            }
            if n == 0 || !scale.is_finite() || scale <= 0.0 {
                return Err(check.out_of_range(
                    format!("the float32 cell scale of {n} cells over {axis} in [{lo}, {hi}]"),
                    scale,
                    "finite and positive",
                ));
            }
        }
        if self.cells() > u32::MAX as u64 {
            return Err(check.out_of_range(
                format!("the cell count {} × {}", self.nx, self.ny),
                self.cells(),
                "at most 4294967295 (u32 row indices)",
            ));
        }
        Ok(())
    }

    fn spec(
        &self,
        algorithm: &'static str,
        id: String,
        positions: VectorView,
        weights: Option<VectorView>,
        mask: Option<VectorView>,
        outputs: KeyedOutputs,
    ) -> Result<KeyedSpec, AlgorithmError> {
        self.check(algorithm, &id)?;
        Ok(KeyedSpec {
            algorithm,
            id,
            keys_name: "positions",
            keys: positions,
            key_format: VectorFormat::Float32x2,
            key_file: "grid/grid.wgsl",
            key_define: None,
            key_f: [
                self.x_min,
                self.x_max,
                self.y_min,
                self.y_max,
                self.x_scale(),
                self.y_scale(),
                0.0,
                0.0,
            ],
            key_u: [self.nx, self.ny, 0, 0],
            key_count: self.cells() as u32,
            values_name: "weights",
            values: weights,
            mask,
            edges: None,
            gated: false,
            outputs,
        })
    }
}

/// Counts `positions` per cell into `counts`. Reads every chunk once; writes every row of
/// `counts` (and `ignored`) once per encoding.
#[derive(Clone, Debug)]
pub struct GridBinning {
    /// Node id prefix (and label).
    pub id: String,
    /// Packed float32x2 positions.
    pub positions: VectorView,
    /// Packed uint32 inclusion mask aligned with `positions` (nonzero = included).
    pub mask: Option<VectorView>,
    /// The grid.
    pub domain: GridDomain,
    /// Packed uint32 counts, `nx · ny` rows, row-major.
    pub counts: DataView,
    /// One uint32: included positions outside the domain or non-finite.
    pub ignored: Option<DataView>,
}

impl GridBinning {
    /// Validates the domain and views and adds `{id}/init`, `{id}`, `{id}/finalize`.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, KeyedPolicy::DEFAULT)
    }

    /// [`GridBinning::add_to_graph`] with explicit tunables.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: KeyedPolicy,
    ) -> Result<(), AlgorithmError> {
        let outputs = KeyedOutputs {
            count: Some(self.counts),
            ignored: self.ignored,
            ..Default::default()
        };
        let spec = self.domain.spec(
            "grid binning",
            self.id,
            self.positions,
            None,
            self.mask,
            outputs,
        )?;
        Keyed::declare(graph, spec, policy)?.add_all(graph)
    }
}

/// Aggregates `weights` per cell of `positions` into `outputs`. Reads every chunk once;
/// writes every row of each given output (and `ignored`) once per encoding.
#[derive(Clone, Debug)]
pub struct GridAggregation {
    /// Node id prefix (and label).
    pub id: String,
    /// Packed float32x2 positions.
    pub positions: VectorView,
    /// Packed float32 weights aligned with `positions`.
    pub weights: VectorView,
    /// Packed uint32 inclusion mask aligned with `positions` (nonzero = included).
    pub mask: Option<VectorView>,
    /// The grid.
    pub domain: GridDomain,
    /// Per-cell result views (`nx · ny` rows each, row-major).
    pub outputs: AggregateOutputs,
    /// One uint32: included rows outside the domain or with a non-finite coordinate or weight.
    pub ignored: Option<DataView>,
}

impl GridAggregation {
    /// Validates the domain and views and adds `{id}/init`, `{id}`, `{id}/finalize`.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, KeyedPolicy::DEFAULT)
    }

    /// [`GridAggregation::add_to_graph`] with explicit tunables.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: KeyedPolicy,
    ) -> Result<(), AlgorithmError> {
        let spec = self.domain.spec(
            "grid aggregation",
            self.id,
            self.positions,
            Some(self.weights),
            self.mask,
            self.outputs.keyed(self.ignored),
        )?;
        Keyed::declare(graph, spec, policy)?.add_all(graph)
    }
}
