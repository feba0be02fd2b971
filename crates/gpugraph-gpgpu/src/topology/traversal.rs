//! [`GraphTraversal`]: bounded breadth-first reachability over CSR adjacency, packed or
//! partitioned, with GPU-resident seed count and depth (spec tranche 3.2, GPUGraphTraversal).

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{Access, Binding, CommandGraph, DataView, Grid, VectorFormat, VectorView};

use super::nodes::{self, bound, WG};
use crate::error::AlgorithmError;
use crate::kernel::{
    check_same_topology, check_writes_alone, require_output, require_packed, require_packed_live,
    shader, Binder, ViewCheck,
};

const ALGORITHM: &str = "graph traversal";

/// The deepest `max_depth` accepted: every level is two compiled nodes per partition.
pub const MAX_TRAVERSAL_DEPTH: u32 = 1024;
/// The level of a node no seed reaches within the effective depth.
pub const UNREACHED: u32 = u32::MAX;
/// Rows of [`GraphTraversal::status`].
pub const TRAVERSAL_STATUS_WORDS: u64 = 3;
/// Edge ranges longer than this are expanded by a whole workgroup instead of one invocation
/// (power-law hubs would otherwise serialize a level on one thread).
pub const BIG_DEGREE: u32 = 32;
/// Edge ranges longer than this go to the level's hub list, whose edges a second indirect
/// dispatch spreads over many workgroups ([`HUB_CHUNK`] edges each).
pub const HUGE_DEGREE: u32 = 1024;
/// Hub edges per workgroup of the hub dispatch.
pub const HUB_CHUNK: u32 = 1024;
/// Claims a workgroup stages before appending them to the frontier with one atomic (the
/// rest go through the global tail); with the hub ranges this keeps the workgroup memory of
/// the expansion under 16 KiB, the WebGPU default.
const STAGE: u32 = 2048;

/// Which adjacency a level follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraversalDirection {
    /// Outgoing edges (the forward CSR).
    Forward,
    /// Incoming edges (the reverse CSR).
    Reverse,
    /// Both: a node's neighbours are its out- and in-neighbours.
    Both,
}

/// CSR adjacency, one chunk per partition: `offsets` chunk `p` has one row per node of
/// partition `p` plus one (positions into `neighbors` chunk `p`), `neighbors` chunk `p` the
/// global node IDs of those edges. The packed form is one chunk of each.
#[derive(Clone, Debug)]
pub struct CsrAdjacency {
    /// Packed uint32 row offsets, per partition.
    pub offsets: VectorView,
    /// Packed uint32 global neighbour IDs, per partition.
    pub neighbors: VectorView,
}

/// Bounded breadth-first reachability: every node within `min(active_depth, max_depth)`
/// levels of an active seed, as a node-aligned 0/1 `mask` (and optionally its level).
///
/// Contract:
/// * nodes are global IDs `0..n`, `n` the total length of `mask`, whose chunks are the
///   partitions; the adjacency has one chunk per partition (see [`CsrAdjacency`]; offset
///   chunk `p` has `mask` chunk `p`'s length + 1 rows); neighbour IDs are global, so edges
///   cross partitions freely; no chunk is concatenated or repacked;
/// * `seeds` are global IDs at depth 0; a live count on `seeds` (a GPU-written count, e.g. a
///   compaction's) makes only the first `min(count, len)` active; duplicates are harmless;
/// * `direction` picks forward, reverse or both adjacencies; `reverse` is required for the
///   last two and must have the forward partitioning;
/// * `max_depth ≤` [`MAX_TRAVERSAL_DEPTH`] levels are compiled; `active_depth` (one uint32 row,
///   read at every encoding) lowers the effective depth to `min(active_depth, max_depth)`
///   without recompiling; depth 0 reaches the seeds only;
/// * claims are atomic: a node reached along several paths (cycles, self-loops, duplicate
///   edges, shared descendants) enters the frontier once, at its smallest level; `mask` and
///   `levels` are deterministic whatever the schedule;
/// * sentinel, not error: seed or neighbour IDs `≥ n` are skipped and counted, and a
///   malformed offset pair (decreasing, or past its neighbour chunk) is clamped into the
///   chunk and counted, in `status` row 1 (the GPU data cannot be checked before it runs);
/// * `levels` (optional, mask's chunking): each node's level, [`UNREACHED`] when not reached;
/// * `status` (optional, [`TRAVERSAL_STATUS_WORDS`] rows): `[reached nodes, out-of-range IDs
///   and malformed ranges met, effective depth]`.
///
/// Nodes: `{id}/init`, `{id}/seed`, then per level `d` in `1..=max_depth` `{id}/prepare/{d}`
/// (one invocation closes level `d - 1` at the queue tail and writes the level's indirect
/// dispatch from that GPU-written frontier count), `{id}/expand/{d}/{p}` per non-empty
/// partition (an indirect dispatch over the frontier; each pass expands the frontier nodes of
/// partition `p` through its local CSR and claims targets in every partition through the
/// graph-owned node-aligned level array; ranges over [`BIG_DEGREE`] edges take the whole
/// workgroup, ranges over [`HUGE_DEGREE`] go to the level's hub list),
/// `{id}/prepare-hubs/{d}` and `{id}/expand-hubs/{d}/{p}` (the hub edges spread over
/// [`HUB_CHUNK`]-edge workgroups by a second indirect dispatch), then `{id}/finish/{p}` per
/// non-empty partition and `{id}/report`. Graph-owned: the level array (4 bytes per node), the frontier queue (4 per
/// node; each node enters it once, so it never overflows), the per-level state and the
/// indirect arguments. Cost per level: each frontier node's offsets once per partition pass,
/// each edge of it once.
#[derive(Clone, Debug)]
pub struct GraphTraversal {
    /// Node id prefix (and label).
    pub id: String,
    /// Outgoing adjacency.
    pub forward: CsrAdjacency,
    /// Incoming adjacency (required for [`TraversalDirection::Reverse`] and `Both`).
    pub reverse: Option<CsrAdjacency>,
    /// Which adjacency each level follows.
    pub direction: TraversalDirection,
    /// Packed uint32 global seed IDs, optionally with a live count.
    pub seeds: DataView,
    /// Levels compiled.
    pub max_depth: u32,
    /// One packed uint32 row: the effective depth, clamped to `max_depth`.
    pub active_depth: Option<DataView>,
    /// Packed uint32 output, one row per node, chunks = partitions: 1 reached, 0 not.
    pub mask: VectorView,
    /// Packed uint32 output with `mask`'s chunks: levels.
    pub levels: Option<VectorView>,
    /// Packed uint32 output, [`TRAVERSAL_STATUS_WORDS`] rows.
    pub status: Option<DataView>,
}

/// `TraversalParams` in traversal.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct TraversalParams {
    nodes: u32,
    round: u32,
    max_depth: u32,
    max_dim: u32,
    part_base: u32,
    part_len: u32,
    state_len: u32,
    a_offsets_off: u32,
    a_neighbors_off: u32,
    a_edges: u32,
    b_offsets_off: u32,
    b_neighbors_off: u32,
    b_edges: u32,
    seeds_off: u32,
    seeds_len: u32,
    seed_count_off: u32,
    depth_off: u32,
    mask_off: u32,
    levels_off: u32,
    status_off: u32,
    part_index: u32,
    hub_cap: u32,
    pad0: u32,
    pad1: u32,
}

/// The traversal shader with its variant defines.
fn source(both: bool, levels: bool, seed_count: bool, depth_view: bool) -> String {
    shader("topology/traversal.wgsl")
        .comment("gpugraph-gpgpu topology: graph traversal")
        .u32("WG", WG)
        .u32("BIG_DEGREE", BIG_DEGREE)
        .u32("HUGE_DEGREE", HUGE_DEGREE)
        .u32("HUB_CHUNK", HUB_CHUNK)
        .u32("STAGE", STAGE)
        .define_if(both, "BOTH")
        .define_if(levels, "LEVELS")
        .define_if(seed_count, "SEED_COUNT")
        .define_if(depth_view, "DEPTH_VIEW")
        .build()
}

/// Checks one adjacency against the partitions (`mask`'s chunks).
fn check_csr(
    c: ViewCheck<'_>,
    name: &str,
    adj: &CsrAdjacency,
    mask: &VectorView,
) -> Result<(), AlgorithmError> {
    let u32s = VectorFormat::Uint32;
    let offsets = format!("{name} offsets");
    let neighbors = format!("{name} neighbors");
    require_packed(c, &offsets, &adj.offsets, u32s)?;
    require_packed(c, &neighbors, &adj.neighbors, u32s)?;
    let parts = mask.chunks().len() as u64;
    for (what, v) in [(&offsets, &adj.offsets), (&neighbors, &adj.neighbors)] {
        if v.chunks().len() as u64 != parts {
            return Err(c.length(
                what.as_str(),
                "chunks",
                v.chunks().len() as u64,
                parts,
                "one chunk per mask chunk (partition)",
            ));
        }
    }
    for (p, (o, m)) in adj.offsets.chunks().iter().zip(mask.chunks()).enumerate() {
        if o.len() != m.len() + 1 {
            return Err(c.length(
                format!("{offsets} chunk {p}"),
                "rows",
                o.len(),
                m.len() + 1,
                "one row per node of the partition plus one",
            ));
        }
    }
    Ok(())
}

impl GraphTraversal {
    /// Validates the views and adds the traversal nodes (see the type's contract).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let u32s = VectorFormat::Uint32;
        if self.max_depth > MAX_TRAVERSAL_DEPTH {
            return Err(c.out_of_range(
                "max_depth",
                self.max_depth,
                format!("at most {MAX_TRAVERSAL_DEPTH}"),
            ));
        }
        require_packed(c, "mask", &self.mask, u32s)?;
        let n = self.mask.len();
        let n32 = u32::try_from(n).map_err(|_| c.device_limit("nodes", n, u64::from(u32::MAX)))?;
        if let Some(l) = &self.levels {
            require_packed(c, "levels", l, u32s)?;
            check_same_topology(c, "mask", &self.mask, "levels", l)?;
        }
        check_csr(c, "forward", &self.forward, &self.mask)?;
        if let Some(r) = &self.reverse {
            check_csr(c, "reverse", r, &self.mask)?;
        }
        let (side_a, side_b) = match (self.direction, &self.reverse) {
            (TraversalDirection::Forward, _) => (&self.forward, None),
            (TraversalDirection::Reverse, Some(r)) => (r, None),
            (TraversalDirection::Both, Some(r)) => (&self.forward, Some(r)),
            (d, None) => {
                return Err(c.missing("a reverse CSR", format!("direction {d:?}").to_lowercase()))
            }
        };
        let seeds_v = VectorView::from(self.seeds);
        let seed_count = require_packed_live(c, "seeds", &seeds_v, u32s)?;
        let seeds = self.seeds.without_live_count();
        if let Some(d) = &self.active_depth {
            require_output(c, "active_depth", d, u32s, 1)?;
        }
        if let Some(s) = &self.status {
            require_output(c, "status", s, u32s, TRAVERSAL_STATUS_WORDS)?;
        }
        let levels_v = self.levels.clone();
        let status_v = self.status.map(VectorView::from);
        let mut written = vec![("mask", &self.mask)];
        if let Some(l) = &levels_v {
            written.push(("levels", l));
        }
        if let Some(s) = &status_v {
            written.push(("status", s));
        }
        let seeds_plain = VectorView::from(seeds);
        let count_v = seed_count.map(VectorView::from);
        let depth_v = self.active_depth.map(VectorView::from);
        let mut read = vec![
            ("forward offsets", &self.forward.offsets),
            ("forward neighbors", &self.forward.neighbors),
            ("seeds", &seeds_plain),
        ];
        if let Some(r) = &self.reverse {
            read.push(("reverse offsets", &r.offsets));
            read.push(("reverse neighbors", &r.neighbors));
        }
        if let Some(v) = &count_v {
            read.push(("seed count", v));
        }
        if let Some(v) = &depth_v {
            read.push(("active_depth", v));
        }
        check_writes_alone(graph, c, &written, &read, "")?;

        let limits = graph.device().limits();
        let binder = Binder::new(&limits);
        let id = &self.id;
        let state_len = 5 + u64::from(self.max_depth) + 1;
        let (seeds_off, seeds_len) = bound(&binder, c, "seeds", &seeds)?;
        let mut base = TraversalParams {
            nodes: n32,
            max_depth: self.max_depth,
            max_dim: limits.max_compute_workgroups_per_dimension,
            state_len: state_len as u32,
            seeds_off,
            seeds_len,
            ..Default::default()
        };
        if let Some(v) = &seed_count {
            base.seed_count_off = binder.offset(c, "seed count", v)?;
        }
        if let Some(v) = &self.active_depth {
            base.depth_off = binder.offset(c, "active_depth", v)?;
        }
        if let Some(v) = &self.status {
            base.status_off = binder.offset(c, "status", v)?;
        }
        // Every partition's views, bound before anything is added so a bad one adds nothing.
        struct Part {
            base: u32,
            len: u32,
            a: (DataView, DataView, u32, u32, u32),
            b: Option<(DataView, DataView, u32, u32, u32)>,
            mask: (DataView, u32),
            levels: Option<(DataView, u32)>,
        }
        let side = |adj: &CsrAdjacency, p: usize, name: &str| {
            let (o, nb) = (adj.offsets.chunks()[p], adj.neighbors.chunks()[p]);
            let (o_off, _) = bound(&binder, c, &format!("{name} offsets chunk {p}"), &o)?;
            let (nb_off, edges) = bound(&binder, c, &format!("{name} neighbors chunk {p}"), &nb)?;
            Ok::<_, AlgorithmError>((o, nb, o_off, nb_off, edges))
        };
        let mut parts = Vec::new();
        let mut row = 0u32;
        for (p, m) in self.mask.chunks().iter().enumerate() {
            let (mask_off, len) = bound(&binder, c, &format!("mask chunk {p}"), m)?;
            let levels = match &self.levels {
                Some(l) => {
                    let v = l.chunks()[p];
                    Some((v, binder.offset(c, &format!("levels chunk {p}"), &v)?))
                }
                None => None,
            };
            parts.push(Part {
                base: row,
                len,
                a: side(side_a, p, "adjacency")?,
                b: match side_b {
                    Some(r) => Some(side(r, p, "reverse")?),
                    None => None,
                },
                mask: (*m, mask_off),
                levels,
            });
            row += len;
        }

        let wgsl = source(
            side_b.is_some(),
            self.levels.is_some(),
            seed_count.is_some(),
            self.active_depth.is_some(),
        );
        let key = "topology/traversal";
        let rw = BufferUsages::STORAGE;
        let state_h = nodes::transient(graph, format!("{id}/state"), state_len, rw)?;
        let state = nodes::words(graph, state_h, 0, state_len)?;
        let queue_h = nodes::transient(graph, format!("{id}/queue"), n, rw)?;
        let queue = nodes::words(graph, queue_h, 0, n.max(1))?;
        let level_h = nodes::transient(graph, format!("{id}/level"), n, rw)?;
        let level = nodes::words(graph, level_h, 0, n.max(1))?;
        // Per level: the expansion's and the hub dispatch's indirect arguments.
        let args_words = 6 * u64::from(self.max_depth);
        let edges: u64 = parts
            .iter()
            .map(|p| u64::from(p.a.4) + p.b.as_ref().map_or(0, |b| u64::from(b.4)))
            .sum();
        // Ranges of a well-formed CSR are disjoint, so at most edges / HUGE_DEGREE hubs per
        // level; malformed overlapping ranges past that are expanded in their workgroup.
        let hub_cap = edges / u64::from(HUGE_DEGREE) + 2;
        let hubs_h = nodes::transient(graph, format!("{id}/hubs"), 4 * hub_cap, rw)?;
        let hubs = nodes::words(graph, hubs_h, 0, 4 * hub_cap)?;
        base.hub_cap = u32::try_from(hub_cap).unwrap_or(u32::MAX);
        let args_h = nodes::transient(
            graph,
            format!("{id}/args"),
            args_words,
            rw | BufferUsages::INDIRECT,
        )?;

        let mut init = vec![
            Binding::params(0, &base),
            Binding::read_write(1, state),
            Binding::read_write(3, level),
        ];
        if let Some(d) = self.active_depth {
            init.push(Binding::read(10, d));
        }
        let init_rows = n.max(state_len);
        nodes::dispatch(
            graph,
            format!("{id}/init"),
            key,
            wgsl.clone(),
            "init",
            init,
            nodes::rows(init_rows),
        )?;

        let mut seed = vec![
            Binding::params(0, &base),
            Binding::read_write(1, state),
            Binding::read_write(2, queue),
            Binding::read_write(3, level),
            Binding::read(8, seeds),
        ];
        if let Some(v) = seed_count {
            seed.push(Binding::read(9, v));
        }
        nodes::dispatch(
            graph,
            format!("{id}/seed"),
            key,
            wgsl.clone(),
            "seed",
            seed,
            nodes::rows(u64::from(seeds_len)),
        )?;

        for d in 1..=self.max_depth {
            let round = TraversalParams { round: d, ..base };
            nodes::dispatch(
                graph,
                format!("{id}/prepare/{d}"),
                key,
                wgsl.clone(),
                "prepare",
                vec![
                    Binding::params(0, &round),
                    Binding::read_write(1, state),
                    Binding::handle(11, args_h, Access::ReadWrite),
                ],
                Grid::Workgroups([1, 1, 1]),
            )?;
            let at = 6 * u64::from(d - 1);
            let indirect = nodes::words(graph, args_h, at, 3)?;
            let hub_indirect = nodes::words(graph, args_h, at + 3, 3)?;
            let part_params = |p: usize, part: &Part| TraversalParams {
                part_base: part.base,
                part_len: part.len,
                part_index: p as u32,
                a_offsets_off: part.a.2,
                a_neighbors_off: part.a.3,
                a_edges: part.a.4,
                b_offsets_off: part.b.as_ref().map_or(0, |s| s.2),
                b_neighbors_off: part.b.as_ref().map_or(0, |s| s.3),
                b_edges: part.b.as_ref().map_or(0, |s| s.4),
                ..round
            };
            for (p, part) in parts.iter().enumerate() {
                if part.len == 0 {
                    continue;
                }
                let params = part_params(p, part);
                let mut b = vec![
                    Binding::read_write(1, state),
                    Binding::read_write(2, queue),
                    Binding::read_write(3, level),
                    Binding::read(4, part.a.0),
                    Binding::read(5, part.a.1),
                    Binding::read_write(15, hubs),
                ];
                if let Some(s) = &part.b {
                    b.push(Binding::read(6, s.0));
                    b.push(Binding::read(7, s.1));
                }
                b.push(Binding::params(0, &params));
                nodes::dispatch(
                    graph,
                    format!("{id}/expand/{d}/{p}"),
                    key,
                    wgsl.clone(),
                    "expand",
                    b,
                    Grid::Indirect(indirect),
                )?;
            }
            nodes::dispatch(
                graph,
                format!("{id}/prepare-hubs/{d}"),
                key,
                wgsl.clone(),
                "prepare_hubs",
                vec![
                    Binding::params(0, &round),
                    Binding::read_write(1, state),
                    Binding::handle(11, args_h, Access::ReadWrite),
                ],
                Grid::Workgroups([1, 1, 1]),
            )?;
            for (p, part) in parts.iter().enumerate() {
                if part.len == 0 {
                    continue;
                }
                let mut b = vec![
                    Binding::params(0, &part_params(p, part)),
                    Binding::read_write(1, state),
                    Binding::read_write(2, queue),
                    Binding::read_write(3, level),
                    Binding::read(5, part.a.1),
                    Binding::read_write(15, hubs),
                ];
                if let Some(s) = &part.b {
                    b.push(Binding::read(7, s.1));
                }
                nodes::dispatch(
                    graph,
                    format!("{id}/expand-hubs/{d}/{p}"),
                    key,
                    wgsl.clone(),
                    "expand_hubs",
                    b,
                    Grid::Indirect(hub_indirect),
                )?;
            }
        }

        for (p, part) in parts.iter().enumerate() {
            if part.len == 0 {
                continue;
            }
            let mut params = TraversalParams {
                part_base: part.base,
                part_len: part.len,
                mask_off: part.mask.1,
                ..base
            };
            let mut b = vec![
                Binding::read_write(3, level),
                Binding::read_write(12, part.mask.0),
            ];
            if let Some((v, off)) = part.levels {
                params.levels_off = off;
                b.push(Binding::read_write(13, v));
            }
            b.push(Binding::params(0, &params));
            nodes::dispatch(
                graph,
                format!("{id}/finish/{p}"),
                key,
                wgsl.clone(),
                "finish",
                b,
                nodes::rows(u64::from(part.len)),
            )?;
        }
        if let Some(s) = self.status {
            nodes::dispatch(
                graph,
                format!("{id}/report"),
                key,
                wgsl,
                "report",
                vec![
                    Binding::params(0, &base),
                    Binding::read_write(1, state),
                    Binding::read_write(14, s),
                ],
                Grid::Workgroups([1, 1, 1]),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn traversal_kernels_validate_and_params_match() {
        for bits in 0..16u32 {
            let s = source(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0, bits & 8 != 0);
            kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
            let members = kernel::field_offsets!(TraversalParams; nodes, round, max_depth,
                max_dim, part_base, part_len, state_len, a_offsets_off, a_neighbors_off,
                a_edges, b_offsets_off, b_neighbors_off, b_edges, seeds_off, seeds_len,
                seed_count_off, depth_off, mask_off, levels_off, status_off, part_index,
                hub_cap, pad0, pad1);
            let size = Some(std::mem::size_of::<TraversalParams>());
            kernel::assert_struct_layout(&s, "TraversalParams", size, &members);
        }
    }
}
