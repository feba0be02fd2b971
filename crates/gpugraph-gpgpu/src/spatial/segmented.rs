//! [`SegmentedBvh`]: many small complete-binary hierarchies packed in shared buffers, one
//! workgroup per tree, one dispatch per leaf capacity (spec 5.3, GPUSegmentedBVH).

use gpugraph_command::wgpu::{self, util::DeviceExt};
use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, DataView, Grid, VectorFormat, VectorView,
};

use super::bvh::{build_source, BvhParams, BVH_SUBTREE_LEAVES};
use super::grid_index::point_dims;
use super::nodes;
use crate::error::AlgorithmError;
use crate::kernel::{check_writes_alone, require_output, require_packed, Binder, ViewCheck};

const ALGORITHM: &str = "segmented bvh";

/// One tree of a [`SegmentedBvh`]: where its items are and where its hierarchy goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentedBvhTree {
    /// First item row in `lower` / `upper` (and `ids`).
    pub item_offset: u32,
    /// Items (those past `leaf_capacity` are left out: the tree's overflow flag).
    pub items: u32,
    /// Leaves: a power of two up to [`BVH_SUBTREE_LEAVES`].
    pub leaf_capacity: u32,
    /// First node (in nodes, 8 floats / 2 child words each) of its `2L − 1`.
    pub node_offset: u32,
    /// First row of its L leaf IDs.
    pub leaf_offset: u32,
}

/// Builds every tree with the [`super::Bvh`] contract (heap order, source-order leaves,
/// empty boxes `[f32::MAX, −f32::MAX]` for invalid items and unused slots), rebuilt at every
/// encoding. Differences from [`super::Bvh`]: child pairs are tree-local heap indices,
/// generated IDs are tree-local item indices (`ids`, when given, are read at the item's row),
/// and `status` holds 2 rows per tree in the given tree order: `[stored, overflow]`.
///
/// Trees are grouped by leaf capacity: one node `{id}/{capacity}` per distinct capacity (at
/// most 8: 1, 2, …, 128), one workgroup per tree. Node and leaf ranges of different trees
/// must not overlap; rows between them are not written. The tree table is uploaded once, when
/// the node is added (16 bytes per tree).
#[derive(Clone, Debug)]
pub struct SegmentedBvh {
    /// Node id prefix (and label).
    pub id: String,
    /// Packed float32x2 / float32x3 lower corners of every tree's items.
    pub lower: DataView,
    /// Upper corners (same format and length; may be `lower` for points).
    pub upper: DataView,
    /// Packed uint32 IDs aligned with the items; `None`: tree-local item indices.
    pub ids: Option<DataView>,
    /// The trees.
    pub trees: Vec<SegmentedBvhTree>,
    /// Packed float32 node boxes (8 per node) of all trees.
    pub nodes: DataView,
    /// Packed uint32 child pairs (2 per node).
    pub children: DataView,
    /// Packed uint32 leaf IDs.
    pub leaf_ids: DataView,
    /// Packed uint32, 2 rows per tree.
    pub status: DataView,
}

fn check_ranges(
    c: ViewCheck<'_>,
    what: &str,
    mut ranges: Vec<(u64, u64, usize)>,
    len: u64,
) -> Result<(), AlgorithmError> {
    ranges.sort_unstable();
    for (i, &(start, end, tree)) in ranges.iter().enumerate() {
        if end > len {
            return Err(c.out_of_range(
                format!("the end of tree {tree}'s {what} rows {start}..{end}"),
                end,
                format!("at most {len}, the rows of {what}"),
            ));
        }
        if let Some(&(next, _, other)) = ranges.get(i + 1) {
            if next < end {
                return Err(c.out_of_range(
                    format!("the start of tree {other}'s {what} rows"),
                    next,
                    format!("at least {end}, past tree {tree}'s rows {start}..{end} (trees must not overlap)"),
                ));
            }
        }
    }
    Ok(())
}

impl SegmentedBvh {
    /// Validates the trees and views, uploads the tree table and adds one node per leaf
    /// capacity (see the type's contract).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let u32s = VectorFormat::Uint32;
        let (lower_v, upper_v) = (VectorView::from(self.lower), VectorView::from(self.upper));
        let dims = point_dims(c, "lower", &lower_v)?;
        require_packed(c, "upper", &upper_v, self.lower.format())?;
        let rows = self.lower.len();
        if self.upper.len() != rows {
            return Err(c.length("upper", "rows", self.upper.len(), rows, "lower"));
        }
        let trees = self.trees.len() as u64;
        require_output(c, "status", &self.status, u32s, 2 * trees)?;
        for (name, v, format) in [
            ("nodes", &self.nodes, VectorFormat::Float32),
            ("children", &self.children, u32s),
            ("leaf ids", &self.leaf_ids, u32s),
        ] {
            require_packed(c, name, &VectorView::from(*v), format)?;
        }
        if let Some(ids) = &self.ids {
            require_output(c, "ids", ids, u32s, rows)?;
        }
        let (mut node_ranges, mut leaf_ranges) = (Vec::new(), Vec::new());
        for (i, t) in self.trees.iter().enumerate() {
            let cap = t.leaf_capacity;
            if !cap.is_power_of_two() || cap > BVH_SUBTREE_LEAVES {
                return Err(c.out_of_range(
                    format!("tree {i}'s leaf capacity"),
                    cap,
                    format!("a power of two up to {BVH_SUBTREE_LEAVES}"),
                ));
            }
            let end = u64::from(t.item_offset) + u64::from(t.items);
            if end > rows {
                return Err(c.out_of_range(
                    format!("the end of tree {i}'s items {}..{end}", t.item_offset),
                    end,
                    format!("at most {rows}, the item rows"),
                ));
            }
            let nodes = u64::from(t.node_offset);
            node_ranges.push((nodes, nodes + 2 * u64::from(cap) - 1, i));
            let leaves = u64::from(t.leaf_offset);
            leaf_ranges.push((leaves, leaves + u64::from(cap), i));
        }
        check_ranges(c, "nodes", node_ranges, self.nodes.len() / 8)?;
        if self.children.len() != self.nodes.len() / 4 {
            return Err(c.length(
                "children",
                "rows",
                self.children.len(),
                self.nodes.len() / 4,
                "2 per node",
            ));
        }
        check_ranges(c, "leaf ids", leaf_ranges, self.leaf_ids.len())?;
        let written: Vec<VectorView> = [self.nodes, self.children, self.leaf_ids, self.status]
            .map(VectorView::from)
            .into();
        let ids_v = self.ids.map(VectorView::from);
        let mut read = vec![("lower", &lower_v), ("upper", &upper_v)];
        if let Some(ids) = &ids_v {
            read.push(("ids", ids));
        }
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
        if self.trees.is_empty() {
            return Ok(());
        }
        // The tree table grouped by capacity (stable within a group), so each capacity is one
        // contiguous run of descriptors and one node; the second word pair carries the tree's
        // own index, which addresses its status rows.
        let mut order: Vec<usize> = (0..self.trees.len()).collect();
        order.sort_by_key(|&i| self.trees[i].leaf_capacity);
        let table: Vec<[u32; 8]> = order
            .iter()
            .map(|&i| {
                let t = &self.trees[i];
                [
                    t.item_offset,
                    t.items,
                    t.node_offset,
                    t.leaf_offset,
                    i as u32,
                    0,
                    0,
                    0,
                ]
            })
            .collect();
        let device = graph.device().clone();
        let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(&format!("{}/trees", self.id)),
            contents: bytemuck::cast_slice(&table),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let h = graph.import_buffer(
            BufferDescriptor::new(format!("{}/trees", self.id), buffer.size(), buffer.usage()),
            &buffer,
        )?;
        let table_v = graph.create_packed_view(h, VectorFormat::Uint32x4, 2 * trees)?;
        let binder = Binder::new(&graph.device().limits());
        let mut defines = Vec::new();
        if self.ids.is_some() {
            defines.push("EXPLICIT_IDS");
        }
        let wgsl = build_source(dims, &defines, true);
        let mut start = 0usize;
        while start < order.len() {
            let cap = self.trees[order[start]].leaf_capacity;
            let mut i = start;
            while i < order.len() && self.trees[order[i]].leaf_capacity == cap {
                i += 1;
            }
            {
                let params = BvhParams {
                    leaves: cap,
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
                    depth: cap.trailing_zeros(),
                    sub: cap,
                    sub_levels: cap.trailing_zeros(),
                    level_first: start as u32,
                    level_count: (i - start) as u32,
                    ..bytemuck::Zeroable::zeroed()
                };
                let mut bindings = vec![
                    Binding::params(0, &params),
                    Binding::read(1, self.lower),
                    Binding::read(2, self.upper),
                    Binding::read_write(5, self.nodes),
                    Binding::read_write(6, self.children),
                    Binding::read_write(7, self.leaf_ids),
                    Binding::read_write(8, self.status),
                    Binding::read(10, table_v),
                ];
                if let Some(ids) = self.ids {
                    bindings.push(Binding::read(3, ids));
                }
                nodes::dispatch(
                    graph,
                    format!("{}/{cap}", self.id),
                    "spatial/segmented_bvh",
                    wgsl.clone(),
                    "build_trees",
                    bindings,
                    Grid::Rows {
                        rows: (i - start) as u64,
                        rows_per_workgroup: 1,
                    },
                )?;
            }
            start = i;
        }
        Ok(())
    }
}
