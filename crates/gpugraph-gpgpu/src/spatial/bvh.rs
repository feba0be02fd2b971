//! [`Bvh`]: a complete-binary bounding volume hierarchy over 2-D or 3-D boxes (points are
//! boxes with equal corners), refit at every encoding (spec 5.3, GPUBVH).

use gpugraph_command::{Binding, CommandGraph, DataView, Grid, VectorFormat, VectorView};

use super::grid_index::point_dims;
use super::nodes::{self, transient_u32};
use super::UpdatePolicy;
use crate::error::AlgorithmError;
use crate::kernel::{
    check_writes_alone, require_output, require_packed, shader, Binder, ViewCheck,
};
use crate::sort::{Sort, SortOptions};

const ALGORITHM: &str = "bvh";

/// Leaves one workgroup reduces in `{id}/subtrees` (hierarchies up to this size build in one
/// dispatch; larger ones add one level pass per level above).
pub const BVH_SUBTREE_LEAVES: u32 = 128;

/// Which item each leaf slot holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BvhOrder {
    /// Leaf slot `j` holds source item `j` (the spec's baseline: source order is the topology).
    Source,
    /// Leaf slots hold the items sorted (stably) by the Morton code of their box centers,
    /// quantized over `[min, max]` (16 bits per axis in 2-D, 10 in 3-D; centers outside are
    /// clamped, invalid items sort last). Spatially close items share subtrees, so queries
    /// visit fewer nodes ([`super::BvhQuery`]'s `visited`) at the cost of one sort per build.
    Morton {
        /// Lower corner of the quantization box.
        min: [f32; 3],
        /// Upper corner.
        max: [f32; 3],
    },
}

/// A complete binary hierarchy over `lower`/`upper` item boxes, rebuilt from the current
/// boxes at every encoding ([`UpdatePolicy::Rebuild`]: moving items refit without recompiling
/// and without changing any leaf's identity).
///
/// Contract:
/// * `leaf_capacity` L is a power of two; there are `2L − 1` nodes in heap order (node `i`
///   has children `2i + 1`, `2i + 2`; leaf slot `j` is node `L − 1 + j`);
/// * leaf slot `j` holds item `j` ([`BvhOrder::Source`]) or the `j`-th in Morton order, for
///   the first `min(items, L)` items; `leaf_ids[j]` is its ID (the source row, or the caller's
///   `ids`), [`super::NO_ID`] for unused slots; items past L are left out (`status` overflow);
/// * `nodes`: 8 float32 per node, `(min.x, min.y, min.z, 0, max.x, max.y, max.z, 0)`; a leaf
///   box is its item's box, an inner box the union of its children's. Items with a
///   non-finite coordinate or `min > max` on a used axis, unused slots and subtrees without
///   items hold the empty box `[f32::MAX, −f32::MAX]` (min > max), which no query passes.
///   2-D hierarchies store z as 0;
/// * `children`: 2 uint32 per node, the child pair (`NO_ID` twice for leaves);
/// * `status` (3 rows): `[items stored = min(items, L), overflow, levels = log2 L + 1]`.
///
/// Nodes: (`{id}/morton`, `{id}/sort`), `{id}/subtrees` (one workgroup per
/// [`BVH_SUBTREE_LEAVES`] leaves: loads the leaves and reduces the subtree in workgroup
/// memory), `{id}/level/{l}` for each level above. Traffic: the item boxes once, each node
/// written once, inner nodes above the subtrees read twice.
#[derive(Clone, Debug)]
pub struct Bvh {
    /// Node id prefix (and label).
    pub id: String,
    /// Packed float32x2 / float32x3 lower corners, one per item.
    pub lower: DataView,
    /// Upper corners (same format and length; may be the same view as `lower` for points).
    pub upper: DataView,
    /// Packed uint32 IDs aligned with the items; `None`: the source row.
    pub ids: Option<DataView>,
    /// Leaves (a power of two, at least 1).
    pub leaf_capacity: u32,
    /// Leaf order.
    pub order: BvhOrder,
    /// Packed float32, `8 · (2L − 1)` rows: node boxes.
    pub nodes: DataView,
    /// Packed uint32, `2 · (2L − 1)` rows: child pairs.
    pub children: DataView,
    /// Packed uint32, L rows: leaf IDs.
    pub leaf_ids: DataView,
    /// Packed uint32, 3 rows: stored items, overflow, levels.
    pub status: DataView,
}

/// What a [`super::BvhQuery`] reads of a built hierarchy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BvhStorage {
    /// 2 or 3.
    pub dims: u32,
    /// Leaves (power of two).
    pub leaf_capacity: u32,
    /// Node boxes.
    pub nodes: DataView,
    /// Leaf IDs.
    pub leaf_ids: DataView,
    /// `[stored, overflow, levels]`.
    pub status: DataView,
}

/// `BvhParams` in bvh_build.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct BvhParams {
    pub rows: u32,
    pub leaves: u32,
    pub lo_off: u32,
    pub hi_off: u32,
    pub id_off: u32,
    pub nodes_off: u32,
    pub children_off: u32,
    pub leaf_ids_off: u32,
    pub status_off: u32,
    pub depth: u32,
    pub sub: u32,
    pub sub_levels: u32,
    pub level_first: u32,
    pub level_count: u32,
    pub morton_bits: u32,
    pub pad0: u32,
    pub morton_min: [f32; 4],
    pub morton_scale: [f32; 4],
}

/// Bits per axis of the Morton code in `dims` dimensions.
pub fn morton_bits(dims: u32) -> u32 {
    if dims == 2 {
        16
    } else {
        10
    }
}

/// The Morton quantization scale `2^bits / (max − min)` per axis, as float32.
pub fn morton_scale(dims: u32, min: [f32; 3], max: [f32; 3]) -> [f32; 3] {
    let cells = f64::from(1u32 << morton_bits(dims));
    std::array::from_fn(|a| (cells / (f64::from(max[a]) - f64::from(min[a]))) as f32)
}

pub(crate) fn build_source(dims: u32, defines: &[&'static str], segmented: bool) -> String {
    let mut s = shader("spatial/common.wgsl").file("spatial/bvh_build.wgsl");
    if segmented {
        s = s.file("spatial/segmented_bvh.wgsl");
    }
    s = s
        .comment(format!("gpugraph-gpgpu spatial: bvh build, {dims}-D"))
        .u32("DIMS", dims)
        .u32("WG", nodes::WG)
        .u32("SUB_MAX", BVH_SUBTREE_LEAVES);
    for d in defines {
        s = s.define(*d);
    }
    s.build()
}

impl Bvh {
    /// The update policy (every encoding rebuilds the boxes; the topology is fixed).
    pub fn update_policy(&self) -> UpdatePolicy {
        UpdatePolicy::Rebuild
    }

    /// Validates the configuration and views and adds the build nodes; returns the storage a
    /// [`super::BvhQuery`] reads.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<BvhStorage, AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let u32s = VectorFormat::Uint32;
        let (lower_v, upper_v) = (VectorView::from(self.lower), VectorView::from(self.upper));
        let dims = point_dims(c, "lower", &lower_v)?;
        require_packed(c, "upper", &upper_v, self.lower.format())?;
        let rows = self.lower.len();
        if self.upper.len() != rows {
            return Err(c.length("upper", "rows", self.upper.len(), rows, "lower"));
        }
        if rows >= u64::from(u32::MAX) {
            return Err(c.device_limit("item rows", rows, u64::from(u32::MAX) - 1));
        }
        let leaves = self.leaf_capacity;
        if !leaves.is_power_of_two() || leaves > 1 << 30 {
            return Err(c.out_of_range("leaf capacity", leaves, "a power of two up to 2^30"));
        }
        let node_count = 2 * u64::from(leaves) - 1;
        require_output(
            c,
            "nodes",
            &self.nodes,
            VectorFormat::Float32,
            8 * node_count,
        )?;
        require_output(c, "children", &self.children, u32s, 2 * node_count)?;
        require_output(c, "leaf ids", &self.leaf_ids, u32s, u64::from(leaves))?;
        require_output(c, "status", &self.status, u32s, 3)?;
        let ids_v = self.ids.map(VectorView::from);
        let mut read = vec![("lower", &lower_v), ("upper", &upper_v)];
        if let Some(ids) = &ids_v {
            require_output(c, "ids", &self.ids.unwrap(), u32s, rows)?;
            read.push(("ids", ids));
        }
        let written: Vec<VectorView> = [self.nodes, self.children, self.leaf_ids, self.status]
            .map(VectorView::from)
            .into();
        check_writes_alone(
            graph,
            c,
            &[
                ("nodes", &written[0]),
                ("children", &written[1]),
                ("leaf ids", &written[2]),
                ("status", &written[3]),
            ],
            &read,
            "",
        )?;
        let (morton_min, scale) = match self.order {
            BvhOrder::Source => ([0.0; 3], [0.0; 3]),
            BvhOrder::Morton { min, max } => {
                let scale = morton_scale(dims, min, max);
                if (0..dims as usize).any(|a| {
                    !(min[a].is_finite()
                        && max[a].is_finite()
                        && min[a] < max[a]
                        && scale[a].is_finite())
                }) {
                    return Err(c.out_of_range(
                        "the Morton box",
                        format!("{min:?}..{max:?}"),
                        "finite with min < max per axis and a finite scale",
                    ));
                }
                (min, scale)
            }
        };
        let binder = Binder::new(&graph.device().limits());
        let depth = leaves.trailing_zeros();
        let sub = leaves.min(BVH_SUBTREE_LEAVES);
        let mut params = BvhParams {
            rows: rows as u32,
            leaves,
            lo_off: binder.offset(c, "lower", &self.lower)?,
            hi_off: binder.offset(c, "upper", &self.upper)?,
            id_off: match &self.ids {
                Some(v) => binder.offset(c, "ids", v)?,
                None => 0,
            },
            nodes_off: binder.offset(c, "nodes", &self.nodes)?,
            children_off: binder.offset(c, "children", &self.children)?,
            leaf_ids_off: binder.offset(c, "leaf ids", &self.leaf_ids)?,
            status_off: binder.offset(c, "status", &self.status)?,
            depth,
            sub,
            sub_levels: sub.trailing_zeros(),
            level_first: 0,
            level_count: 0,
            morton_bits: morton_bits(dims),
            pad0: 0,
            morton_min: [morton_min[0], morton_min[1], morton_min[2], 0.0],
            morton_scale: [scale[0], scale[1], scale[2], 0.0],
        };
        let id = &self.id;
        let mut defines = Vec::new();
        if self.ids.is_some() {
            defines.push("EXPLICIT_IDS");
        }
        let mut order = None;
        if matches!(self.order, BvhOrder::Morton { .. }) {
            let codes = transient_u32(graph, format!("{id}/codes"), rows)?;
            let sorted = transient_u32(graph, format!("{id}/sorted-codes"), rows)?;
            let perm = transient_u32(graph, format!("{id}/order"), rows)?;
            nodes::dispatch(
                graph,
                format!("{id}/morton"),
                "spatial/bvh_build",
                build_source(dims, &[], false),
                "morton_codes",
                vec![
                    Binding::params(0, &params),
                    Binding::read(1, self.lower),
                    Binding::read(2, self.upper),
                    Binding::read_write(9, codes),
                ],
                nodes::rows(rows),
            )?;
            Sort::argsort(format!("{id}/sort"), codes, sorted, perm)
                .add_to_graph_with(graph, SortOptions::default())?;
            defines.push("ORDERED");
            order = Some(perm);
        }
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::read(1, self.lower),
            Binding::read(2, self.upper),
            Binding::read_write(5, self.nodes),
            Binding::read_write(6, self.children),
            Binding::read_write(7, self.leaf_ids),
            Binding::read_write(8, self.status),
        ];
        if let Some(ids) = self.ids {
            bindings.push(Binding::read(3, ids));
        }
        if let Some(perm) = order {
            bindings.push(Binding::read(4, perm));
        }
        let wgsl = build_source(dims, &defines, false);
        nodes::dispatch(
            graph,
            format!("{id}/subtrees"),
            "spatial/bvh_build",
            wgsl.clone(),
            "build_subtrees",
            bindings,
            Grid::Rows {
                rows: u64::from(leaves / sub),
                rows_per_workgroup: 1,
            },
        )?;
        let level_wgsl = build_source(dims, &[], false);
        for level in (0..depth - params.sub_levels).rev() {
            params.level_first = (1 << level) - 1;
            params.level_count = 1 << level;
            nodes::dispatch(
                graph,
                format!("{id}/level/{level}"),
                "spatial/bvh_build",
                level_wgsl.clone(),
                "build_level",
                vec![
                    Binding::params(0, &params),
                    Binding::read_write(5, self.nodes),
                    Binding::read_write(6, self.children),
                ],
                nodes::rows(u64::from(params.level_count)),
            )?;
        }
        Ok(BvhStorage {
            dims,
            leaf_capacity: leaves,
            nodes: self.nodes,
            leaf_ids: self.leaf_ids,
            status: self.status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn build_kernels_validate_and_params_match() {
        for dims in [2, 3] {
            for defines in [&[][..], &["EXPLICIT_IDS", "ORDERED"][..]] {
                let s = build_source(dims, defines, false);
                kernel::validate_wgsl(&build_source(dims, defines, true))
                    .unwrap_or_else(|e| panic!("{e}"));
                kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
                let members = kernel::field_offsets!(BvhParams; rows, leaves, lo_off, hi_off,
                    id_off, nodes_off, children_off, leaf_ids_off, status_off, depth, sub,
                    sub_levels, level_first, level_count, morton_bits, pad0, morton_min,
                    morton_scale);
                let size = Some(std::mem::size_of::<BvhParams>());
                kernel::assert_struct_layout(&s, "BvhParams", size, &members);
            }
        }
    }
}
