//! [`NameStatistics`]: count, total and self time per span name on the GPU, exact in 64-bit
//! integer ticks (what `gpugraph trace stats --by name` aggregates).
//!
//! Why not [`gpugraph_gpgpu::GroupAggregation`]: its sums are float32, and real traces sum
//! epoch-scale microsecond durations whose float32 totals miss the 1e-6 relative bound the
//! stats must meet; this kernel keeps two-word integer sums with carries (see stats.wgsl).
//! Cost: per span 32 bytes read plus 4 for its parent, five atomics (two more for a parent).

use gpugraph_command::{Binding, CommandGraph, DataView, DispatchNode, Grid, VectorFormat};

use crate::error::TraceGpuError;

const WORKFLOW: &str = "name statistics";
const WG: u32 = 256;

/// `Params` in stats.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct StatsParams {
    spans: u32,
    names: u32,
    pad0: u32,
    pad1: u32,
}

/// Per-name statistics of `spans` spans.
///
/// Contract: `spans` is packed uint32, 8 words per [`crate::TraceSpan`] (at least
/// `span_count` spans); `parents` packed uint32 with a row per span ([`crate::NO_SPAN`] or any
/// ID `≥ span_count`: no parent); outputs: `counts` one row per name, `totals` and
/// `self_times` two rows per name (low, high word of the 64-bit sum; self time is two's
/// complement). Spans whose name is `≥ names` are skipped. Every output row is rewritten each
/// encoding; equal to [`crate::cpu::name_stats`]. Views must start at offset 0 of their
/// bindings' alignment (whole buffers or aligned ranges). Nodes: `{id}/clear`,
/// `{id}/accumulate`.
#[derive(Clone, Debug)]
pub struct NameStatistics {
    /// Node id prefix.
    pub id: String,
    /// The spans.
    pub spans: DataView,
    /// The parents.
    pub parents: DataView,
    /// Spans to aggregate.
    pub span_count: u32,
    /// Names (rows of `counts`).
    pub names: u32,
    /// Output counts.
    pub counts: DataView,
    /// Output totals (2 words per name).
    pub totals: DataView,
    /// Output self times (2 words per name).
    pub self_times: DataView,
}

impl NameStatistics {
    /// Checks the views and adds the nodes.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), TraceGpuError> {
        let n = u64::from(self.span_count);
        let g = u64::from(self.names);
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        for (what, v, rows) in [
            ("spans", self.spans, 8 * n),
            ("parents", self.parents, n),
            ("counts", self.counts, g),
            ("totals", self.totals, 2 * g),
            ("self times", self.self_times, 2 * g),
        ] {
            let ok = v.format() == VectorFormat::Uint32
                && v.is_packed()
                && v.len() >= rows
                && v.aligned_range(align).element_offset == 0;
            if !ok {
                return Err(TraceGpuError::View {
                    workflow: WORKFLOW,
                    id: self.id.clone(),
                    what,
                    expected: "packed uint32 at an aligned offset, with enough rows",
                    actual: format!(
                        "{} rows of {} at byte {}",
                        v.len(),
                        v.format(),
                        v.byte_offset()
                    ),
                });
            }
        }
        let p = StatsParams {
            spans: self.span_count,
            names: self.names,
            pad0: 0,
            pad1: 0,
        };
        let bindings = vec![
            Binding::params(0, &p),
            Binding::read(1, self.spans),
            Binding::read(2, self.parents),
            Binding::read_write(3, self.counts),
            Binding::read_write(4, self.totals),
            Binding::read_write(5, self.self_times),
        ];
        let shader = crate::shaders::shader("trace/stats", "stats/stats.wgsl");
        for (entry, rows) in [("clear", g), ("accumulate", n)] {
            graph.add_dispatch_node(DispatchNode::new(
                format!("{}/{entry}", self.id),
                shader.clone(),
                entry,
                bindings.clone(),
                Grid::Rows {
                    rows,
                    rows_per_workgroup: WG,
                },
            ))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader() {
        let wgsl = crate::shaders::shader("trace/stats", "stats/stats.wgsl").build();
        crate::assert_params_layout::<StatsParams>(&wgsl, "Params", 4);
    }
}
