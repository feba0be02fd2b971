//! Histogram: uint32 counts of float32 values per bin: equal-width bins, literal irregular
//! edges, or GPU-resident irregular edges that may change between encodings without a
//! readback or rebuild; optionally the cumulative counts (CDF numerators).
//!
//! Contract (spec: GPUHistogram):
//! * bin i holds `[e_i, e_i+1)`; the last bin also holds the last edge (like numpy and
//!   `torch.histc`). Uniform bins use `floor((x − min) · bins / (max − min))` in float32 (see
//!   [`cpu::uniform_bin`]), so a value within an ulp of an interior edge may land in the
//!   neighboring bin; irregular edges compare exactly (binary search);
//! * rows whose mask is zero are excluded; included values that are non-finite or outside
//!   `[first edge, last edge]` are ignored and counted in the optional `ignored` word;
//! * literal edges must be finite, strictly increasing and at least two, checked at
//!   [`Histogram::add_to_graph`]; GPU edges are checked by a graph pass (`{id}/edges`) at
//!   every encoding: invalid ones produce all-zero counts (and cumulative counts), zero
//!   ignored rows, and `invalid_edges` = 1 (0 when valid);
//! * counts are written once per encoding over all chunks (vectors keep their chunks);
//!   `cumulative[i] = counts[0] + … + counts[i]` (modulo 2³²);
//! * live count: a one-chunk input (or mask) may carry a live count (e.g. a compaction's
//!   count): rows at or past `min(count, capacity)` are not read, without a readback.
//!
//! Design: the keyed accumulation engine (`keyed`): per-workgroup privatized counts in
//! workgroup memory (bins up to the device's workgroup storage, e.g. 12,288 with 48 KiB;
//! replicated for few bins) merged with global atomics, global atomics beyond; edges (up to
//! 1,024) are staged in workgroup memory for the binary search. Memory traffic: 4 bytes per
//! value (+4 with a mask) read once, plus
//! ~12 bytes × bins (init, merge, finalize). The cumulative counts are an inclusive
//! [`crate::scan::Scan`] of the count accumulators (`{id}/cumulative`). Nodes: `{id}/init`,
//! (`{id}/edges`), `{id}`, `{id}/finalize`, (`{id}/cumulative`).
//!
//! ```no_run
//! # use gpugraph_command::{CommandGraph, DataView};
//! # use gpugraph_gpgpu::histogram::{Histogram, HistogramBins};
//! # fn example(graph: &mut CommandGraph, latency: DataView, thresholds: DataView,
//! #            counts: DataView, cdf: DataView, flag: DataView)
//! #            -> Result<(), gpugraph_gpgpu::AlgorithmError> {
//! // Latency counts between GPU-resident thresholds (updated by the application between
//! // encodings) and their cumulative counts.
//! Histogram {
//!     id: "latency".into(),
//!     input: latency.into(),
//!     mask: None,
//!     bins: HistogramBins::GpuEdges(thresholds),
//!     counts,
//!     cumulative: Some(cdf),
//!     ignored: None,
//!     invalid_edges: Some(flag),
//! }
//! .add_to_graph(graph)?;
//! # Ok(()) }
//! ```

pub mod cpu;

use gpugraph_command::{
    Binding, CommandGraph, DataView, DataViewDescriptor, DispatchNode, Grid, VectorFormat,
    VectorView,
};

use crate::error::AlgorithmError;
use crate::kernel::{self, require_output, row_offset, shader, Access, ShaderSource, ViewCheck};
use crate::keyed::{Edges, Keyed, KeyedOutputs, KeyedPolicy, KeyedSpec};
use crate::scan::Scan;

/// Invocations of the single edge-validation workgroup.
const VALIDATE_WORKGROUP_SIZE: u32 = 256;

/// How values map to bins.
#[derive(Clone, Debug, PartialEq)]
pub enum HistogramBins {
    /// `bins` equal-width bins over `[min, max]` (max included). Needs finite `min <= max`; a
    /// degenerate domain (`min == max`) puts every value equal to `min` in bin 0 and ignores
    /// the rest, as luma.gl's GPUHistogram does.
    Uniform {
        /// Lower edge of bin 0.
        min: f32,
        /// Upper edge of the last bin (included).
        max: f32,
        /// Number of bins (at least 1).
        bins: u32,
    },
    /// Host-known edges: `edges.len() − 1` bins. Finite, strictly increasing, at least two.
    Edges(Vec<f32>),
    /// Packed float32 edges on the GPU (`len − 1` bins, at least two edges), read and
    /// validated at every encoding.
    GpuEdges(DataView),
}

impl HistogramBins {
    /// Number of bins (0 for fewer than two edges).
    pub fn bin_count(&self) -> u64 {
        match self {
            HistogramBins::Uniform { bins, .. } => *bins as u64,
            HistogramBins::Edges(e) => (e.len() as u64).saturating_sub(1),
            HistogramBins::GpuEdges(v) => v.len().saturating_sub(1),
        }
    }
}

/// `bins / (max − min)` as float32: the uniform bin scale the kernel and the oracle share;
/// 0 for a degenerate domain (`min == max`), so its one value lands in bin 0.
pub fn uniform_scale(min: f32, max: f32, bins: u32) -> f32 {
    if min == max {
        return 0.0;
    }
    (bins as f64 / (max as f64 - min as f64)) as f32
}

/// Counts `input` values per bin into `counts`. Reads every chunk once; writes every row of
/// `counts` (and `cumulative`, `ignored`, `invalid_edges` when given) once per encoding.
#[derive(Clone, Debug)]
pub struct Histogram {
    /// Node id prefix (and label).
    pub id: String,
    /// Packed float32 values.
    pub input: VectorView,
    /// Packed uint32 inclusion mask aligned with `input` (nonzero = included).
    pub mask: Option<VectorView>,
    /// The bins.
    pub bins: HistogramBins,
    /// Packed uint32 counts, one row per bin.
    pub counts: DataView,
    /// Packed uint32 inclusive prefix sums of `counts`, one row per bin.
    pub cumulative: Option<DataView>,
    /// One uint32: included values that were non-finite or outside the edges.
    pub ignored: Option<DataView>,
    /// One uint32: 1 when GPU edges are invalid, else 0. Only with [`HistogramBins::GpuEdges`].
    pub invalid_edges: Option<DataView>,
}

/// Checks literal edges: at least two, finite, strictly increasing.
pub fn check_edges(id: &str, edges: &[f32]) -> Result<(), AlgorithmError> {
    let check = ViewCheck::new("histogram", id);
    if edges.len() < 2 {
        return Err(check.out_of_range("the number of edges", edges.len(), "at least 2"));
    }
    for (i, e) in edges.iter().enumerate() {
        if !e.is_finite() {
            return Err(check.out_of_range(format!("edge {i}"), e, "finite"));
        }
        if i > 0 && edges[i - 1] >= *e {
            let allowed = format!(
                "above edge {} = {} (edges strictly increase)",
                i - 1,
                edges[i - 1]
            );
            return Err(check.out_of_range(format!("edge {i}"), e, allowed));
        }
    }
    Ok(())
}

impl Histogram {
    /// Validates the configuration and views and adds the histogram's nodes.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, KeyedPolicy::DEFAULT)
    }

    /// [`Histogram::add_to_graph`] with explicit tunables of the counting kernel.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: KeyedPolicy,
    ) -> Result<(), AlgorithmError> {
        let id = self.id.clone();
        let check = ViewCheck::new("histogram", &id);
        let bins = self.bins.bin_count();
        let (key_f, edges, key_fn) = match &self.bins {
            HistogramBins::Uniform { min, max, bins } => {
                if !(min.is_finite() && max.is_finite() && min <= max) {
                    return Err(check.out_of_range(
                        "the uniform bin range",
                        format!("[{min}, {max}]"),
                        "finite with min <= max",
                    ));
                }
                let scale = uniform_scale(*min, *max, *bins);
                let degenerate = min == max;
                if *bins == 0
                    || !(max - min).is_finite()
                    || !scale.is_finite()
                    || (scale <= 0.0 && !degenerate)
                {
                    return Err(check.out_of_range(
                        format!("the float32 bin scale of {bins} uniform bins over [{min}, {max}]"),
                        scale,
                        "finite and positive",
                    ));
                }
                (
                    [*min, *max, scale, 0.0, 0.0, 0.0, 0.0, 0.0],
                    None,
                    Some("UNIFORM_KEY"),
                )
            }
            HistogramBins::Edges(e) => {
                check_edges(&id, e)?;
                ([0.0; 8], Some(Edges::Literal(e.clone())), None)
            }
            HistogramBins::GpuEdges(v) => {
                if v.len() < 2 {
                    return Err(check.out_of_range("the number of edges", v.len(), "at least 2"));
                }
                ([0.0; 8], Some(Edges::Gpu(*v)), None)
            }
        };
        if bins > u32::MAX as u64 {
            return Err(check.out_of_range("the bin count", bins, "at most 4294967295"));
        }
        let gpu_edges = matches!(self.bins, HistogramBins::GpuEdges(_));
        if self.invalid_edges.is_some() && !gpu_edges {
            return Err(check.missing(
                "GPU-resident edges (HistogramBins::GpuEdges)",
                "the invalid_edges output",
            ));
        }
        if let Some(c) = &self.cumulative {
            require_output(check, "cumulative output", c, VectorFormat::Uint32, bins)?;
            let others: Vec<(&str, VectorView)> = [
                ("count output", Some(self.counts)),
                ("ignored output", self.ignored),
                ("flag output", self.invalid_edges),
            ]
            .into_iter()
            .filter_map(|(n, v)| v.map(|v| (n, VectorView::from(v))))
            .collect();
            let cumulative = VectorView::from(*c);
            for (name, v) in &others {
                kernel::check_writes_alone(
                    graph,
                    check,
                    &[("cumulative output", &cumulative), (name, v)],
                    &[],
                    "",
                )?;
            }
        }
        let spec = KeyedSpec {
            algorithm: "histogram",
            id: id.clone(),
            keys_name: "input",
            keys: self.input,
            key_format: VectorFormat::Float32,
            key_file: "histogram/histogram.wgsl",
            key_define: key_fn,
            key_f,
            key_u: [0; 4],
            key_count: bins as u32,
            values_name: "values",
            values: None,
            mask: self.mask,
            edges,
            gated: gpu_edges,
            outputs: KeyedOutputs {
                count: Some(self.counts),
                ignored: self.ignored,
                flag: self.invalid_edges,
                ..Default::default()
            },
        };
        let keyed = Keyed::declare(graph, spec, policy)?;
        keyed.add_init(graph)?;
        if let HistogramBins::GpuEdges(edges) = self.bins {
            add_edge_validation(graph, &id, edges, &keyed)?;
        }
        keyed.add_accumulate(graph)?;
        keyed.add_finalize(graph)?;
        if let Some(out) = self.cumulative {
            add_cumulative(graph, &id, bins as u32, out, &keyed)?;
        }
        Ok(())
    }
}

/// Parameters of `{id}/edges` (`Params` in validate_edges.wgsl, a uniform).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct EdgeParams {
    /// Edges to check.
    edge_count: u32,
    /// Row offset of the first edge inside its binding.
    edges_off: u32,
}

fn validate_source() -> ShaderSource {
    shader("histogram/validate_edges.wgsl").u32("WG", VALIDATE_WORKGROUP_SIZE)
}

/// `{id}/edges`: one workgroup writes the gate word from the edges' validity.
fn add_edge_validation(
    graph: &mut CommandGraph,
    id: &str,
    edges: DataView,
    keyed: &Keyed,
) -> Result<(), AlgorithmError> {
    // The node binds the edges' aligned range at the device's storage alignment; the kernel
    // adds the row offset inside it.
    let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
    let params = EdgeParams {
        edge_count: edges.len() as u32,
        edges_off: row_offset(&edges, align),
    };
    kernel::add_node(
        graph,
        DispatchNode::new(
            format!("{id}/edges"),
            validate_source(),
            "validate_edges",
            vec![
                Binding::params(0, &params),
                Binding::read(1, edges),
                Binding::handle(2, keyed.accumulators(), Access::ReadWrite),
            ],
            Grid::Workgroups([1, 1, 1]),
        ),
    )
}

/// `{id}/cumulative`: an inclusive [`Scan`] of the bin counts, read in place from the
/// accumulators (so the caller's counts and cumulative views may share a buffer).
fn add_cumulative(
    graph: &mut CommandGraph,
    id: &str,
    bins: u32,
    out: DataView,
    keyed: &Keyed,
) -> Result<(), AlgorithmError> {
    let counts = match keyed.count_words() {
        Some((first, 1)) => graph.create_data_view(
            keyed.accumulators(),
            DataViewDescriptor::packed(VectorFormat::Uint32, bins as u64)
                .at_offset(first as u64 * 4),
        )?,
        _ => {
            return Err(ViewCheck::new("histogram", id).missing(
                "contiguous count accumulators (a keyed layout without them is a bug)",
                "the cumulative output",
            ))
        }
    };
    Scan {
        id: format!("{id}/cumulative"),
        input: counts.into(),
        output: out.into(),
        inclusive: true,
        segment_starts: None,
    }
    .add_to_graph(graph)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_validation_validates_and_its_params_match_the_shader() {
        let source = validate_source().build();
        kernel::validate_wgsl(&source).unwrap_or_else(|e| panic!("{e}"));
        let members = kernel::field_offsets!(EdgeParams; edge_count, edges_off);
        let size = Some(std::mem::size_of::<EdgeParams>());
        kernel::assert_struct_layout(&source, "Params", size, &members);
    }
}
