//! [`VirtualGeometrySelection`]: a deterministic render frontier from a cluster hierarchy —
//! bounding-sphere frustum culling and screen-space error, children only where the parent
//! must refine — published as stable cluster IDs and an indirect-ready count (spec tranche
//! 3.2, GPUVirtualGeometrySelection).

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{Binding, CommandGraph, DataView, Grid, VectorFormat, VectorView};

use super::nodes::{self, bound, WG};
use crate::compact::Compaction;
use crate::error::AlgorithmError;
use crate::kernel::{
    check_writes_alone, require_output, require_packed, shader, Binder, ViewCheck,
};

const ALGORITHM: &str = "virtual geometry selection";

/// Rows of the view buffer ([`SelectionView::words`]).
pub const SELECTION_VIEW_WORDS: u64 = 32;

/// The camera a selection is made for; written into a GPU buffer, so it changes between
/// encodings without recompiling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SelectionView {
    /// Six inward-facing planes `(nx, ny, nz, d)`: a sphere is kept when
    /// `dot(n, center) + d ≥ −radius` for every plane. Non-finite planes cull nothing.
    pub planes: [[f32; 4]; 6],
    /// World-space camera position.
    pub camera: [f32; 3],
    /// Pixels per world unit at unit distance (`viewport height / (2·tan(fov_y / 2))` for a
    /// perspective camera).
    pub pixel_scale: f32,
    /// The largest screen-space error kept, in pixels.
    pub max_error: f32,
}

impl SelectionView {
    /// The [`SELECTION_VIEW_WORDS`] uint32 words of the view buffer: the planes (24 float32
    /// bits), the camera (3, then one zero), the pixel scale and the error bound (then two
    /// zeros).
    pub fn words(&self) -> [u32; SELECTION_VIEW_WORDS as usize] {
        let mut w = [0u32; SELECTION_VIEW_WORDS as usize];
        for (p, plane) in self.planes.iter().enumerate() {
            for (k, v) in plane.iter().enumerate() {
                w[4 * p + k] = v.to_bits();
            }
        }
        for (k, v) in self.camera.iter().enumerate() {
            w[24 + k] = v.to_bits();
        }
        w[28] = self.pixel_scale.to_bits();
        w[29] = self.max_error.to_bits();
        w
    }
}

/// A cluster hierarchy stored in breadth-level order: level `L` is the node range
/// `level_offsets[L]..level_offsets[L + 1]`, level 0 the roots (a forest needs no synthetic
/// root).
#[derive(Clone, Debug)]
pub struct ClusterHierarchy {
    /// Packed float32x4 world-space sphere per node: center xyz, radius.
    pub spheres: DataView,
    /// Packed float32 world-space geometric error per node.
    pub errors: DataView,
    /// Packed uint32x2 per node: first child, child count (0: a leaf). A range must lie in the
    /// next level; a range that does not keeps its parent (checked on the GPU, per node).
    pub children: DataView,
    /// Packed uint32 render identity per node, published for the selected nodes.
    pub cluster_ids: DataView,
    /// CPU metadata: 0, then strictly increasing level ends, the last the node count.
    pub level_offsets: Vec<u32>,
}

/// The render frontier of `hierarchy` for the GPU-resident `view`.
///
/// Contract:
/// * a node is active when it is a root, or some active, visible parent refines into it and
///   no selected parent's range contains it (a selected parent and its children never appear
///   together, even when child ranges converge);
/// * an active node whose sphere is outside a frustum plane is culled (with its subtree); else
///   it refines when its child range is valid and its projected error
///   `error · pixel_scale / max(distance(camera, center) − radius, 1e-6)` exceeds `max_error`
///   (a camera within 1e-6 of the sphere, and non-finite inputs, refine), and is selected
///   otherwise;
/// * `output` receives the selected nodes' `cluster_ids` in node order (stable, independent
///   of scheduling); `output.len()` is the capacity; `count` = `min(total, capacity)` — point
///   it at a `DrawCommandBuffer` record's instance count to draw without readback;
///   `total_count` (optional) = the selected count, `overflow` (optional) = 1 when it exceeds
///   the capacity; all rewritten every encoding; rows past `count` are unspecified;
/// * no readback, no submission; the view buffer may change between encodings.
///
/// Nodes: `{id}/init`, `{id}/level/{L}` per level, the compaction `{id}/compact`,
/// `{id}/publish`. Graph-owned: node-aligned state and selection flags (8 bytes per node),
/// the unclamped total. Cost: one read of every active node's sphere, error and child range
/// per encoding, one atomic per child of a decided node, then the compaction.
#[derive(Clone, Debug)]
pub struct VirtualGeometrySelection {
    /// Node id prefix (and label).
    pub id: String,
    /// The clusters.
    pub hierarchy: ClusterHierarchy,
    /// Packed uint32, [`SELECTION_VIEW_WORDS`] rows ([`SelectionView::words`]).
    pub view: DataView,
    /// Packed uint32 selected cluster IDs; its length is the capacity.
    pub output: DataView,
    /// One packed uint32 row: the stored count.
    pub count: DataView,
    /// One packed uint32 row: the selected count before clamping.
    pub total_count: Option<DataView>,
    /// One packed uint32 row: 1 when the selection exceeded the capacity.
    pub overflow: Option<DataView>,
}

/// `SelectParams` in virtual_geometry.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct SelectParams {
    nodes: u32,
    roots: u32,
    begin: u32,
    end: u32,
    next_begin: u32,
    next_end: u32,
    spheres_off: u32,
    errors_off: u32,
    children_off: u32,
    view_off: u32,
    capacity: u32,
    total_off: u32,
    count_off: u32,
    total_out_off: u32,
    overflow_off: u32,
    pad0: u32,
}

fn source(total: bool, overflow: bool) -> String {
    shader("topology/virtual_geometry.wgsl")
        .comment("gpugraph-gpgpu topology: virtual geometry selection")
        .u32("WG", WG)
        .define_if(total, "TOTAL")
        .define_if(overflow, "OVERFLOW")
        .build()
}

impl VirtualGeometrySelection {
    /// Validates the hierarchy and views and adds the selection nodes (see the type's
    /// contract).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let h = &self.hierarchy;
        let n = h.spheres.len();
        require_packed(c, "spheres", &h.spheres.into(), VectorFormat::Float32x4)?;
        require_packed(c, "errors", &h.errors.into(), VectorFormat::Float32)?;
        require_packed(c, "children", &h.children.into(), VectorFormat::Uint32x2)?;
        require_packed(
            c,
            "cluster_ids",
            &h.cluster_ids.into(),
            VectorFormat::Uint32,
        )?;
        for (what, v) in [
            ("errors", &h.errors),
            ("children", &h.children),
            ("cluster_ids", &h.cluster_ids),
        ] {
            if v.len() != n {
                return Err(c.length(what, "rows", v.len(), n, "one row per sphere"));
            }
        }
        let lo = &h.level_offsets;
        let levels_ok = lo.first() == Some(&0)
            && lo.windows(2).all(|w| w[0] < w[1])
            && lo.last().map(|&e| u64::from(e)) == Some(n);
        // An empty hierarchy may also give no offsets at all.
        if !(levels_ok || (n == 0 && lo.is_empty())) {
            return Err(c.out_of_range(
                "level_offsets",
                format!("{lo:?}"),
                format!("0, strictly increasing, ending at the node count {n}"),
            ));
        }
        let u32s = VectorFormat::Uint32;
        require_output(c, "view", &self.view, u32s, SELECTION_VIEW_WORDS)?;
        require_packed(c, "output", &self.output.into(), u32s)?;
        require_output(c, "count", &self.count, u32s, 1)?;
        let mut written: Vec<(&str, VectorView)> =
            vec![("output", self.output.into()), ("count", self.count.into())];
        if let Some(v) = &self.total_count {
            require_output(c, "total_count", v, u32s, 1)?;
            written.push(("total_count", (*v).into()));
        }
        if let Some(v) = &self.overflow {
            require_output(c, "overflow", v, u32s, 1)?;
            written.push(("overflow", (*v).into()));
        }
        let read: Vec<(&str, VectorView)> = vec![
            ("spheres", h.spheres.into()),
            ("errors", h.errors.into()),
            ("children", h.children.into()),
            ("cluster_ids", h.cluster_ids.into()),
            ("view", self.view.into()),
        ];
        let w: Vec<(&str, &VectorView)> = written.iter().map(|(a, b)| (*a, b)).collect();
        let r: Vec<(&str, &VectorView)> = read.iter().map(|(a, b)| (*a, b)).collect();
        check_writes_alone(graph, c, &w, &r, "")?;

        let binder = Binder::new(&graph.device().limits());
        let (_, nodes32) = bound(&binder, c, "cluster_ids", &h.cluster_ids)?;
        let (_, capacity) = bound(&binder, c, "output", &self.output)?;
        let base = SelectParams {
            nodes: nodes32,
            roots: lo.get(1).copied().unwrap_or(0),
            spheres_off: binder.offset(c, "spheres", &h.spheres)?,
            errors_off: binder.offset(c, "errors", &h.errors)?,
            children_off: binder.offset(c, "children", &h.children)?,
            view_off: binder.offset(c, "view", &self.view)?,
            capacity,
            count_off: binder.offset(c, "count", &self.count)?,
            total_out_off: match &self.total_count {
                Some(v) => binder.offset(c, "total_count", v)?,
                None => 0,
            },
            overflow_off: match &self.overflow {
                Some(v) => binder.offset(c, "overflow", v)?,
                None => 0,
            },
            ..Default::default()
        };
        let id = &self.id;
        let key = "topology/virtual_geometry";
        let wgsl = source(self.total_count.is_some(), self.overflow.is_some());
        let st = BufferUsages::STORAGE;
        let state_h = nodes::transient(graph, format!("{id}/state"), n, st)?;
        let state = nodes::words(graph, state_h, 0, n.max(1))?;
        let flags_h = nodes::transient(graph, format!("{id}/selected"), n, st)?;
        let flags = nodes::words(graph, flags_h, 0, n)?;
        let flags_bound = nodes::words(graph, flags_h, 0, n.max(1))?;
        let total_h = nodes::transient(graph, format!("{id}/total"), 1, st)?;
        let total = nodes::words(graph, total_h, 0, 1)?;

        nodes::dispatch(
            graph,
            format!("{id}/init"),
            key,
            wgsl.clone(),
            "init",
            vec![
                Binding::params(0, &base),
                Binding::read_write(1, state),
                Binding::read_write(2, flags_bound),
            ],
            nodes::rows(n),
        )?;
        for (l, w) in lo.windows(2).enumerate() {
            let next = lo.get(l + 2).copied().unwrap_or(w[1]);
            let p = SelectParams {
                begin: w[0],
                end: w[1],
                next_begin: w[1],
                next_end: next,
                ..base
            };
            nodes::dispatch(
                graph,
                format!("{id}/level/{l}"),
                key,
                wgsl.clone(),
                "select_level",
                vec![
                    Binding::params(0, &p),
                    Binding::read_write(1, state),
                    Binding::read_write(2, flags_bound),
                    Binding::read(3, h.spheres),
                    Binding::read(4, h.errors),
                    Binding::read(5, h.children),
                    Binding::read(6, self.view),
                ],
                nodes::rows(u64::from(w[1] - w[0])),
            )?;
        }
        Compaction {
            id: format!("{id}/compact"),
            values: h.cluster_ids.into(),
            flags: flags.into(),
            output: self.output.into(),
            count: total,
            overflow: None,
        }
        .add_to_graph(graph)?;
        let mut publish = vec![
            Binding::params(0, &base),
            Binding::read(7, total),
            Binding::read_write(8, self.count),
        ];
        if let Some(v) = self.total_count {
            publish.push(Binding::read_write(9, v));
        }
        if let Some(v) = self.overflow {
            publish.push(Binding::read_write(10, v));
        }
        nodes::dispatch(
            graph,
            format!("{id}/publish"),
            key,
            wgsl,
            "publish",
            publish,
            Grid::Workgroups([1, 1, 1]),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn selection_kernels_validate_and_params_match() {
        for (t, o) in [(false, false), (true, false), (false, true), (true, true)] {
            let s = source(t, o);
            kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
            let members = kernel::field_offsets!(SelectParams; nodes, roots, begin, end,
                next_begin, next_end, spheres_off, errors_off, children_off, view_off,
                capacity, total_off, count_off, total_out_off, overflow_off, pad0);
            let size = Some(std::mem::size_of::<SelectParams>());
            kernel::assert_struct_layout(&s, "SelectParams", size, &members);
        }
    }
}
