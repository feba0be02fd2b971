//! [`BvhQuery`]: point containment, bounds intersection and radius queries against a built
//! [`super::Bvh`], with the grid query's candidate, mask, count and overflow contracts plus
//! the visited-node count (spec 5.4a, GPUBVHQuery).

use gpugraph_command::{Binding, CommandGraph, DataView, Grid, VectorFormat, VectorView};

use super::bvh::BvhStorage;
use super::nodes::{self};
use super::query::QUERY_WORDS;
use crate::error::AlgorithmError;
use crate::kernel::{
    check_writes_alone, require_output, require_packed, shader, Binder, ViewCheck,
};

const ALGORITHM: &str = "bvh query";

/// The deepest level whose subtrees are walked by one invocation each: up to 2^12 parallel
/// walks per query.
pub const BVH_QUERY_SPLIT: u32 = 12;

/// Leaf IDs whose boxes pass one GPU-resident query, at every encoding.
///
/// Contract:
/// * `query`: [`QUERY_WORDS`] words ([`super::SpatialQuery::words`]), rewritten freely
///   between encodings;
/// * a node passes when its box contains the point ([`super::SpatialQuery::Point`]),
///   intersects the closed box (`Bounds`), or lies within the radius (`Radius`: the float32
///   squared distance from the center to the box, `≤ r²`). For point items (equal corners)
///   this is exactly [`super::SpatialQuery::matches`], so candidates are the exact hits;
/// * candidates: the passing leaves' IDs in an unspecified order (atomic append), the first
///   `capacity` stored; rows past the count untouched;
/// * `status` (4 rows): `[count, required, flags, visited]`: stored count, full count,
///   `QUERY_FLAG_*` (index overflow propagated from the hierarchy's status, output overflow,
///   mask range, invalid query) and the nodes whose boxes were tested (a depth-first walk
///   that descends only into passing nodes: the topology-quality measure);
/// * `mask` (optional): cleared, then 1 at every candidate ID below its length.
///
/// Nodes: `{id}/clear`, `{id}/clear-mask`, `{id}` (one invocation per subtree at level
/// `min(log2 L, BVH_QUERY_SPLIT)`), `{id}/finish`.
#[derive(Clone, Debug)]
pub struct BvhQuery {
    /// Node id prefix (and label).
    pub id: String,
    /// The hierarchy.
    pub bvh: BvhStorage,
    /// Packed uint32, [`QUERY_WORDS`] rows.
    pub query: DataView,
    /// Packed uint32 candidate IDs; its length is the capacity.
    pub candidates: DataView,
    /// Packed uint32, 4 rows: count, required, flags, visited.
    pub status: DataView,
    /// Packed uint32 mask addressed by ID.
    pub mask: Option<DataView>,
}

/// `BvhQueryParams` in bvh_query.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct BvhQueryParams {
    query_off: u32,
    nodes_off: u32,
    leaf_ids_off: u32,
    bvh_status_off: u32,
    leaves: u32,
    split: u32,
    cand_off: u32,
    cand_cap: u32,
    status_off: u32,
    mask_off: u32,
    mask_len: u32,
    pad0: u32,
}

fn query_source(dims: u32, mask: bool) -> String {
    shader("spatial/common.wgsl")
        .file("spatial/bvh_query.wgsl")
        .comment(format!("gpugraph-gpgpu spatial: bvh query, {dims}-D"))
        .u32("DIMS", dims)
        .u32("WG", nodes::WG)
        .define_if(mask, "MASK")
        .build()
}

impl BvhQuery {
    /// Validates the views and adds the query nodes (see the type's contract).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let b = self.bvh;
        let u32s = VectorFormat::Uint32;
        let leaves = b.leaf_capacity;
        if !leaves.is_power_of_two() {
            return Err(c.out_of_range("leaf capacity", leaves, "a power of two"));
        }
        let node_count = 2 * u64::from(leaves) - 1;
        require_output(
            c,
            "bvh nodes",
            &b.nodes,
            VectorFormat::Float32,
            8 * node_count,
        )?;
        require_output(c, "bvh leaf ids", &b.leaf_ids, u32s, u64::from(leaves))?;
        require_output(c, "bvh status", &b.status, u32s, 3)?;
        require_output(c, "query", &self.query, u32s, QUERY_WORDS)?;
        require_output(c, "status", &self.status, u32s, 4)?;
        let cand_v = VectorView::from(self.candidates);
        require_packed(c, "candidates", &cand_v, u32s)?;
        let status_v = VectorView::from(self.status);
        let mask_v = self.mask.map(VectorView::from);
        let mut written = vec![("candidates", &cand_v), ("status", &status_v)];
        if let Some(m) = &mask_v {
            require_packed(c, "mask", m, u32s)?;
            written.push(("mask", m));
        }
        let read: Vec<VectorView> = [self.query, b.nodes, b.leaf_ids, b.status]
            .map(VectorView::from)
            .into();
        check_writes_alone(
            graph,
            c,
            &written,
            &[
                ("query", &read[0]),
                ("bvh nodes", &read[1]),
                ("bvh leaf ids", &read[2]),
                ("bvh status", &read[3]),
            ],
            "",
        )?;
        let rows = |what: &str, v: &DataView| {
            u32::try_from(v.len()).map_err(|_| {
                c.device_limit(format!("rows of {what}"), v.len(), u64::from(u32::MAX))
            })
        };
        let binder = Binder::new(&graph.device().limits());
        let split = leaves.trailing_zeros().min(BVH_QUERY_SPLIT);
        let params = BvhQueryParams {
            query_off: binder.offset(c, "query", &self.query)?,
            nodes_off: binder.offset(c, "bvh nodes", &b.nodes)?,
            leaf_ids_off: binder.offset(c, "bvh leaf ids", &b.leaf_ids)?,
            bvh_status_off: binder.offset(c, "bvh status", &b.status)?,
            leaves,
            split,
            cand_off: binder.offset(c, "candidates", &self.candidates)?,
            cand_cap: rows("candidates", &self.candidates)?,
            status_off: binder.offset(c, "status", &self.status)?,
            mask_off: match &self.mask {
                Some(m) => binder.offset(c, "mask", m)?,
                None => 0,
            },
            mask_len: match &self.mask {
                Some(m) => rows("mask", m)?,
                None => 0,
            },
            pad0: 0,
        };
        let id = &self.id;
        nodes::clear(graph, c, format!("{id}/clear"), self.status)?;
        if let Some(m) = self.mask {
            nodes::clear(graph, c, format!("{id}/clear-mask"), m)?;
        }
        let wgsl = query_source(b.dims, self.mask.is_some());
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::read(1, self.query),
            Binding::read(2, b.nodes),
            Binding::read(3, b.leaf_ids),
            Binding::read(4, b.status),
            Binding::read_write(5, self.candidates),
            Binding::read_write(6, self.status),
        ];
        if let Some(m) = self.mask {
            bindings.push(Binding::read_write(7, m));
        }
        let walks = 1u32 << split;
        nodes::dispatch(
            graph,
            id.clone(),
            "spatial/bvh_query",
            wgsl.clone(),
            "traverse",
            bindings,
            Grid::Workgroups([walks.div_ceil(nodes::WG), 1, 1]),
        )?;
        nodes::dispatch(
            graph,
            format!("{id}/finish"),
            "spatial/bvh_query",
            wgsl,
            "finish",
            vec![
                Binding::params(0, &params),
                Binding::read_write(6, self.status),
            ],
            Grid::Workgroups([1, 1, 1]),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn query_kernel_validates_and_params_match() {
        for dims in [2, 3] {
            for mask in [false, true] {
                let s = query_source(dims, mask);
                kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
                let members = kernel::field_offsets!(BvhQueryParams; query_off, nodes_off,
                    leaf_ids_off, bvh_status_off, leaves, split, cand_off, cand_cap, status_off,
                    mask_off, mask_len, pad0);
                let size = Some(std::mem::size_of::<BvhQueryParams>());
                kernel::assert_struct_layout(&s, "BvhQueryParams", size, &members);
            }
        }
    }
}
