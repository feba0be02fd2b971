//! Group aggregation: dense uint32 codes (`0..group_count`) select caller-owned group rows;
//! each group gets a uint32 count and, from aligned float32 values, sum, min, max and mean.
//!
//! Contract (spec: GPUGroupAggregation):
//! * rows whose mask is zero are excluded; included rows with a code ≥ `group_count` or a
//!   non-finite value are ignored and counted in the optional `ignored` word;
//! * empty groups publish count 0, sum 0, and NaN min, max and mean; min/max are exact (−0
//!   orders below +0); by default ([`Summation::Atomic`]) sums add in a nondeterministic order
//!   (float32 compare-exchange atomics), so they differ from an exact sum by at most about
//!   `count · 2⁻²⁴ · Σ|v|` (see [`cpu::sum_bound`]); [`Summation::Deterministic`] makes sums
//!   and means bit-identical across runs; mean is the sum divided by the count;
//! * outputs are initialized once per encoding, then every chunk accumulates: a vector keeps
//!   its chunks (no packing); codes, values and mask must share one chunk topology;
//! * live count: one-chunk codes, values or mask may carry a live count (the same one on
//!   each that has one, e.g. a compaction's count): rows at or past `min(count, capacity)`
//!   are not read, without a readback;
//! * chunks of any size use a bounded grid (at most 2,048 workgroups striding over tiles,
//!   split over two dimensions where the device's per-dimension limit is lower).
//!
//! Design: while the accumulators (groups × statistics words) fit workgroup memory (12,288
//! words with 48 KiB; [`KeyedPolicy`]), each workgroup accumulates in workgroup memory
//! (replicated for very few groups), then merges its non-empty groups into a graph-owned
//! accumulator transient with global atomics; beyond that, rows update the transient
//! directly (fine for many groups; few groups with that many statistics would contend). A
//! finalize pass writes the caller's views.
//! Memory traffic: 4 (codes) + 4 (values) + 4 (mask) bytes per row read once (twice with
//! deterministic sums), plus ~3 × 4 bytes × groups × stride for init, merge and finalize.
//! Nodes: `{id}/init`, (`{id}/scale` with deterministic sums), `{id}`, `{id}/finalize`.
//!
//! ```no_run
//! # use gpugraph_command::{CommandGraph, DataView};
//! # use gpugraph_gpgpu::group::{AggregateOutputs, GroupAggregation};
//! # fn example(graph: &mut CommandGraph, codes: DataView, values: DataView,
//! #            count: DataView, mean: DataView) -> Result<(), gpugraph_gpgpu::AlgorithmError> {
//! // Per-quadrant counts and means of `values`, grouped by `codes` in 0..4.
//! GroupAggregation {
//!     id: "by-quadrant".into(),
//!     codes: codes.into(),
//!     values: Some(values.into()),
//!     mask: None,
//!     group_count: 4,
//!     outputs: AggregateOutputs { count: Some(count), mean: Some(mean), ..Default::default() },
//!     ignored: None,
//! }
//! .add_to_graph(graph)?;
//! # Ok(()) }
//! ```

pub mod cpu;

pub use crate::keyed::{AggregateOutputs, KeyedPolicy, Summation};

use gpugraph_command::{CommandGraph, DataView, VectorFormat, VectorView};

use crate::error::AlgorithmError;
use crate::keyed::{Keyed, KeyedSpec};

/// Aggregates `values` (optional) by dense `codes` into `outputs`. Reads every chunk once;
/// writes every row of each given output and the `ignored` word exactly once per encoding.
#[derive(Clone, Debug)]
pub struct GroupAggregation {
    /// Node id prefix (and label).
    pub id: String,
    /// Packed uint32 group codes.
    pub codes: VectorView,
    /// Packed float32 values aligned with `codes` (required for sum, min, max, mean).
    pub values: Option<VectorView>,
    /// Packed uint32 inclusion mask aligned with `codes` (nonzero = included).
    pub mask: Option<VectorView>,
    /// Number of groups (rows of each output); at least 1.
    pub group_count: u32,
    /// The per-group result views.
    pub outputs: AggregateOutputs,
    /// One uint32: included rows with a code ≥ `group_count` or a non-finite value.
    pub ignored: Option<DataView>,
}

impl GroupAggregation {
    /// Validates the views and adds the nodes `{id}/init`, `{id}`, `{id}/finalize`.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, KeyedPolicy::DEFAULT)
    }

    /// [`GroupAggregation::add_to_graph`] with explicit tunables.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: KeyedPolicy,
    ) -> Result<(), AlgorithmError> {
        let spec = KeyedSpec {
            algorithm: "group aggregation",
            id: self.id,
            keys_name: "codes",
            keys: self.codes,
            key_format: VectorFormat::Uint32,
            key_file: "group/code_key.wgsl",
            key_define: None,
            key_f: [0.0; 8],
            key_u: [0; 4],
            key_count: self.group_count,
            values_name: "values",
            values: self.values,
            mask: self.mask,
            edges: None,
            gated: false,
            outputs: self.outputs.keyed(self.ignored),
        };
        Keyed::declare(graph, spec, policy)?.add_all(graph)
    }
}
