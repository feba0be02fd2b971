//! [`DependencyCsr`] (spec T.1): forward and reverse CSR of the dependency records, built on
//! the GPU from the 16-byte records in place.
//!
//! Design: `split` copies the `from` and `to` words into packed keys; a stable
//! [`gpugraph_gpgpu::Sort`] per direction argsorts them ([`SortPayload::SourceRows`]), so
//! within a row edges keep their record order and the result is deterministic; `offsets`
//! takes a lower bound per span over the sorted keys (no atomics, no scan); `gather` reads
//! the other endpoint of each sorted record. Traffic per record: 8 bytes split, two radix
//! sorts of 4-byte keys with 4-byte payloads, 8 bytes gathered; per span one binary search.

use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, DataView, DispatchNode, Grid, VectorFormat,
};
use gpugraph_gpgpu::{Sort, SortPayload};
use wgpu::BufferUsages;

use crate::error::TraceGpuError;

const WORKFLOW: &str = "dependency CSR";
const WG: u32 = 256;

/// `Params` in csr.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CsrParams {
    edges: u32,
    nodes: u32,
    deps_base: u32,
    a_base: u32,
    b_base: u32,
    c_base: u32,
    other_word: u32,
    pad: u32,
}

/// One direction's output views.
#[derive(Clone, Copy, Debug)]
pub struct CsrViews {
    /// Packed uint32, `spans + 1` rows.
    pub offsets: DataView,
    /// Packed uint32, one row per dependency record.
    pub neighbors: DataView,
}

/// Builds forward (`from` → `to`) and reverse CSR of `dependencies` over `spans` spans.
///
/// Contract: `dependencies` is packed uint32, 4 words per [`crate::TraceDependency`] record
/// (`m` records); `forward.offsets` / `reverse.offsets` have `spans + 1` rows, the neighbour
/// views `m` rows; outputs share no buffer with the records. Row `v` of a direction lists, in
/// record order, the other endpoint of every record whose row endpoint is `v`; records whose
/// row endpoint is `≥ spans` are left out of that direction (they sort past the last row),
/// their neighbours are kept as written (traversal skips out-of-range IDs). Equal to
/// [`crate::cpu::csr`]. Nodes: `{id}/split`, `{id}/sort-forward`, `{id}/sort-reverse`,
/// `{id}/offsets-{dir}`, `{id}/gather-{dir}`; graph-owned transients: 16 bytes per record.
/// Nothing is read back; every encoding rebuilds from the records as they are.
#[derive(Clone, Debug)]
pub struct DependencyCsr {
    /// Node id prefix.
    pub id: String,
    /// The records.
    pub dependencies: DataView,
    /// Spans (nodes).
    pub spans: u32,
    /// Outgoing adjacency.
    pub forward: CsrViews,
    /// Incoming adjacency.
    pub reverse: CsrViews,
}

impl DependencyCsr {
    fn bad(&self, what: &'static str, expected: &'static str, v: &DataView) -> TraceGpuError {
        TraceGpuError::View {
            workflow: WORKFLOW,
            id: self.id.clone(),
            what,
            expected,
            actual: format!(
                "{} rows of {} (packed {})",
                v.len(),
                v.format(),
                v.is_packed()
            ),
        }
    }

    /// Checks the views and adds the nodes (see the type's contract).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), TraceGpuError> {
        let u32s = VectorFormat::Uint32;
        let packed = |v: &DataView| v.format() == u32s && v.is_packed() && v.live_count().is_none();
        let d = &self.dependencies;
        if !packed(d) || !d.len().is_multiple_of(4) {
            return Err(self.bad("dependencies", "packed uint32, 4 words per record", d));
        }
        let m = d.len() / 4;
        let n = u64::from(self.spans);
        for (what, v, rows) in [
            ("forward offsets", self.forward.offsets, n + 1),
            ("reverse offsets", self.reverse.offsets, n + 1),
            ("forward neighbors", self.forward.neighbors, m),
            ("reverse neighbors", self.reverse.neighbors, m),
        ] {
            if !packed(&v) || v.len() != rows {
                return Err(self.bad(what, "packed uint32 with spans + 1 / record rows", &v));
            }
            if v.buffer() == d.buffer() {
                return Err(self.bad(what, "a buffer apart from the records", &v));
            }
        }
        let edges = u32::try_from(m).map_err(|_| TraceGpuError::Capacity {
            workflow: WORKFLOW,
            id: self.id.clone(),
            what: "dependency records",
            needed: m,
            capacity: u64::from(u32::MAX),
        })?;
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let base = |v: &DataView| v.aligned_range(align).element_offset as u32;
        let shader = crate::shaders::shader("trace/csr", "csr/csr.wgsl");
        let rows = |rows: u64| Grid::Rows {
            rows,
            rows_per_workgroup: WG,
        };
        let words = |graph: &mut CommandGraph, name: &str| -> Result<DataView, TraceGpuError> {
            let h = graph.create_buffer(BufferDescriptor::new(
                format!("{}/{name}", self.id),
                m.max(1) * 4,
                BufferUsages::STORAGE,
            ))?;
            Ok(graph.create_packed_view(h, u32s, m)?)
        };
        let params = |a: &DataView, b: &DataView, c: &DataView, other: u32| CsrParams {
            edges,
            nodes: self.spans,
            deps_base: base(d),
            a_base: base(a),
            b_base: base(b),
            c_base: base(c),
            other_word: other,
            pad: 0,
        };
        let (mut keys, mut sorted, mut perms) = (Vec::new(), Vec::new(), Vec::new());
        if m > 0 {
            for dir in ["forward", "reverse"] {
                keys.push(words(graph, &format!("keys-{dir}"))?);
                sorted.push(words(graph, &format!("sorted-{dir}"))?);
                perms.push(words(graph, &format!("perm-{dir}"))?);
            }
            let p = params(&keys[0], &keys[1], &keys[1], 0);
            graph.add_dispatch_node(DispatchNode::new(
                format!("{}/split", self.id),
                shader.clone(),
                "split",
                vec![
                    Binding::params(0, &p),
                    Binding::read(1, *d),
                    Binding::read_write(2, keys[0]),
                    Binding::read_write(3, keys[1]),
                ],
                rows(m),
            ))?;
            for (k, dir) in ["forward", "reverse"].into_iter().enumerate() {
                Sort {
                    id: format!("{}/sort-{dir}", self.id),
                    keys: keys[k],
                    sorted_keys: sorted[k],
                    payload: SortPayload::SourceRows { output: perms[k] },
                    policy: None,
                }
                .add_to_graph(graph)?;
            }
        }
        for (k, (dir, out, other)) in [("forward", self.forward, 1), ("reverse", self.reverse, 0)]
            .into_iter()
            .enumerate()
        {
            // With no records every bound is 0 and no key is read: the (empty) records stand
            // in for the sorted keys, which do not exist.
            let sorted_v = sorted.get(k).copied().unwrap_or(*d);
            let p = params(&sorted_v, &out.offsets, &out.offsets, other);
            graph.add_dispatch_node(DispatchNode::new(
                format!("{}/offsets-{dir}", self.id),
                shader.clone(),
                "row_offsets",
                vec![
                    Binding::params(0, &p),
                    Binding::read(4, sorted_v),
                    Binding::read_write(5, out.offsets),
                ],
                rows(n + 1),
            ))?;
            if m > 0 {
                let p = params(&perms[k], &out.neighbors, &perms[k], other);
                graph.add_dispatch_node(DispatchNode::new(
                    format!("{}/gather-{dir}", self.id),
                    shader.clone(),
                    "gather",
                    vec![
                        Binding::params(0, &p),
                        Binding::read(1, *d),
                        Binding::read(6, perms[k]),
                        Binding::read_write(7, out.neighbors),
                    ],
                    rows(m),
                ))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader() {
        let wgsl = crate::shaders::shader("trace/csr", "csr/csr.wgsl").build();
        crate::assert_params_layout::<CsrParams>(&wgsl, "Params", 8);
    }
}
