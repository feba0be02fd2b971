//! [`SegmentedSort`]: many small domains (at most 256 rows each) sorted in place inside shared
//! key/value buffers, given GPU-resident per-segment offsets and lengths.
//!
//! Bucketing without readback: a classification pass (`classify.wgsl`) appends each segment id
//! to the list of its width class (32, 64, 128 or 256 rows: the first class at least as wide)
//! and grows that class's indirect dispatch arguments; then one indirect dispatch per class in
//! use sorts `256 / width` segments per workgroup with a bitonic network (`local.wgsl`). So the
//! graph holds at most five nodes (`<id>.classify`, `<id>.width32` .. `<id>.width256`)
//! whatever the segment count; classes wider than the caller's `max_width` get no node.
//! Each accepted segment's rows are read once and written once; gaps are never touched.

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{
    Binding, BufferDescriptor, BufferHandle, CommandGraph, DataView, DataViewDescriptor,
    DispatchNode, Grid, VectorFormat, VectorView,
};

use super::policy::{CLASSIFY_WORKGROUP, LOCAL_SORT_MAX, SEGMENT_WIDTHS};
use super::source::{self, LIST_HEADER_WORDS};
use crate::error::AlgorithmError;
use crate::kernel::{grid_for, require_packed, Access, ViewCheck, WorkgroupSplit};

/// Sorts, stably and in place, each segment `s` = rows `offsets[s] .. offsets[s] + lengths[s]`
/// of `keys` (values move with their keys). Rows outside accepted segments are untouched.
/// Segments must not overlap. A segment longer than `max_width` or reaching past the keys is
/// rejected: left as is and counted into `rejected` (never silently clipped).
#[derive(Clone, Debug)]
pub struct SegmentedSort {
    /// Node id prefix.
    pub id: String,
    /// The shared key buffer range segments index into: packed uint32, sorted in place.
    pub keys: DataView,
    /// Values aligned with `keys` (same length, another buffer), moved in place.
    pub values: Option<DataView>,
    /// First row of each segment inside `keys`: packed uint32, GPU-resident.
    pub offsets: DataView,
    /// Rows of each segment: packed uint32, same length as `offsets`.
    pub lengths: DataView,
    /// Widest segment the caller promises, in `1..=256`; picks the width classes in use.
    pub max_width: u32,
    /// Optional one-row uint32 output: the number of rejected segments (written every run).
    pub rejected: Option<DataView>,
}

/// `ClassifyParams` of `classify.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct ClassifyParams {
    segments: u32,
    rows: u32,
    max_width: u32,
    offsets: u32,
    lengths: u32,
    rejected: u32,
    max_dim: u32,
    pad: u32,
}

/// `SegmentParams` of `local.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct SegmentParams {
    keys: u32,
    values: u32,
    offsets: u32,
    lengths: u32,
    count_word: u32,
    list_word: u32,
    pad: [u32; 2],
}

/// The width classes a maximum segment width needs: every class whose narrower neighbor is
/// below `max_width`.
pub fn width_classes(max_width: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut below = 0;
    for w in SEGMENT_WIDTHS {
        if below < max_width {
            out.push(w);
        }
        below = w;
    }
    out
}

impl SegmentedSort {
    /// Validates and adds `<id>.classify` plus one `<id>.width<w>` node per width class in
    /// use; transients `<id>.lists` (class counts and segment ids), `<id>.args` (indirect
    /// dispatch arguments) and, without a `rejected` view, `<id>.rejected`. No nodes for zero
    /// segments.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let check = ViewCheck::new("segmented sort", &self.id);
        let u32f = VectorFormat::Uint32;
        let vec = |v: DataView| -> VectorView { v.into() };
        require_packed(check, "keys", &vec(self.keys), u32f)?;
        require_packed(check, "offsets", &vec(self.offsets), u32f)?;
        require_packed(check, "lengths", &vec(self.lengths), u32f)?;
        if let Some(v) = self.values {
            require_packed(check, "values", &vec(v), u32f)?;
            if v.len() != self.keys.len() {
                return Err(check.length("values", "rows", v.len(), self.keys.len(), "the keys"));
            }
        }
        if let Some(r) = self.rejected {
            require_packed(check, "rejected", &vec(r), u32f)?;
            if r.len() != 1 {
                return Err(check.length("rejected", "rows", r.len(), 1, "the rejected count"));
            }
        }
        if self.offsets.len() != self.lengths.len() {
            return Err(check.length(
                "lengths",
                "rows",
                self.lengths.len(),
                self.offsets.len(),
                "one per segment offset",
            ));
        }
        if self.max_width == 0 || self.max_width > LOCAL_SORT_MAX {
            return Err(check.out_of_range(
                "max segment width",
                self.max_width,
                format!("in 1..={LOCAL_SORT_MAX} (sort wider domains with Sort or BatchSort)"),
            ));
        }
        // Written views must not share a buffer with any other view of the node.
        let written: Vec<(&str, DataView)> = [
            ("keys", Some(self.keys)),
            ("values", self.values),
            ("rejected", self.rejected),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| (n, v)))
        .collect();
        let all: Vec<(&str, DataView)> = written
            .iter()
            .copied()
            .chain([("offsets", self.offsets), ("lengths", self.lengths)])
            .collect();
        for (i, (name, w)) in written.iter().enumerate() {
            for (j, (other, o)) in all.iter().enumerate() {
                if i != j && w.buffer() == o.buffer() {
                    return Err(check.aliased(
                        *name,
                        *other,
                        graph.buffer_id(w.buffer())?,
                        "each needs its own buffer",
                    ));
                }
            }
        }
        for (name, v) in &all {
            super::check_binding_sizes(graph, check, name, &vec(*v))?;
        }
        let segments = self.offsets.len();
        if segments == 0 {
            return Ok(());
        }
        let limits = graph.device().limits();
        let max_dim = limits.max_compute_workgroups_per_dimension;
        let classes = width_classes(self.max_width);
        let list_bytes = (LIST_HEADER_WORDS as u64 + classes.len() as u64 * segments) * 4;
        if segments > u32::MAX as u64 || list_bytes > limits.max_storage_buffer_binding_size {
            return Err(check.device_limit(
                "segment list bytes",
                list_bytes,
                limits.max_storage_buffer_binding_size,
            ));
        }
        let grid_limit = max_dim as u64 * max_dim as u64;
        let classify_grid = grid_for(segments.div_ceil(CLASSIFY_WORKGROUP as u64), max_dim)
            .ok_or_else(|| {
                check.device_limit(
                    "classification workgroups",
                    segments.div_ceil(CLASSIFY_WORKGROUP as u64),
                    grid_limit,
                )
            })?;
        // The widest class in use packs the fewest segments per workgroup.
        let widest = classes.last().copied().unwrap_or(LOCAL_SORT_MAX);
        let class_groups = segments.div_ceil((LOCAL_SORT_MAX / widest) as u64);
        if class_groups > grid_limit {
            return Err(check.device_limit(
                "workgroups of one width class",
                class_groups,
                grid_limit,
            ));
        }
        let lists = graph.create_buffer(BufferDescriptor::new(
            format!("{}.lists", self.id),
            list_bytes,
            BufferUsages::STORAGE,
        ))?;
        let args = graph.create_buffer(BufferDescriptor::new(
            format!("{}.args", self.id),
            classes.len() as u64 * 12,
            BufferUsages::STORAGE | BufferUsages::INDIRECT,
        ))?;
        let rejected = match self.rejected {
            Some(r) => r,
            None => {
                let h = graph.create_buffer(BufferDescriptor::new(
                    format!("{}.rejected", self.id),
                    4,
                    BufferUsages::STORAGE,
                ))?;
                graph.create_packed_view(h, u32f, 1)?
            }
        };
        self.add_classify_node(
            graph,
            &classes,
            lists,
            args,
            rejected,
            classify_grid,
            max_dim,
        )?;
        for (c, &w) in classes.iter().enumerate() {
            self.add_width_node(graph, c as u32, w, lists, args)?;
        }
        Ok(())
    }

    /// `{id}.classify`: clears the class lists, then classifies every segment (one node, two
    /// dispatches over the same bindings).
    #[allow(clippy::too_many_arguments)]
    fn add_classify_node(
        &self,
        graph: &mut CommandGraph,
        classes: &[u32],
        lists: BufferHandle,
        args: BufferHandle,
        rejected: DataView,
        grid: WorkgroupSplit,
        max_dim: u32,
    ) -> Result<(), AlgorithmError> {
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let off = |v: DataView| v.aligned_range(align).element_offset as u32;
        let params = ClassifyParams {
            segments: self.offsets.len() as u32,
            rows: self.keys.len() as u32,
            max_width: self.max_width,
            offsets: off(self.offsets),
            lengths: off(self.lengths),
            rejected: off(rejected),
            max_dim,
            pad: 0,
        };
        let shader = source::classify(classes).keyed(format!("sort.classify.{classes:?}"));
        let node = DispatchNode::new(
            format!("{}.classify", self.id),
            shader,
            "clear_classes",
            vec![
                Binding::params(0, &params),
                Binding::read(1, self.offsets),
                Binding::read(2, self.lengths),
                Binding::handle(3, lists, Access::ReadWrite),
                Binding::handle(4, args, Access::ReadWrite),
                Binding::read_write(5, rejected),
            ],
            Grid::Workgroups([1, 1, 1]),
        )
        .then("classify", Grid::Workgroups(grid.dims()));
        crate::kernel::add_node(graph, node)
    }

    /// `{id}.width{width}`: sorts the segments of one width class in place, its workgroup
    /// count read from the class's indirect arguments (`args` at `class × 12` bytes).
    fn add_width_node(
        &self,
        graph: &mut CommandGraph,
        class: u32,
        width: u32,
        lists: BufferHandle,
        args: BufferHandle,
    ) -> Result<(), AlgorithmError> {
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let off = |v: DataView| v.aligned_range(align).element_offset as u32;
        let segments = self.offsets.len() as u32;
        let params = SegmentParams {
            keys: off(self.keys),
            values: self.values.map_or(0, off),
            offsets: off(self.offsets),
            lengths: off(self.lengths),
            count_word: class,
            list_word: LIST_HEADER_WORDS + class * segments,
            pad: [0; 2],
        };
        let indirect = graph.create_data_view(
            args,
            DataViewDescriptor {
                format: VectorFormat::Uint32,
                length: 3,
                byte_offset: u64::from(class) * 12,
                byte_stride: None,
            },
        )?;
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::read_write(1, self.keys),
            Binding::handle(2, lists, Access::Read),
            Binding::read(3, self.offsets),
            Binding::read(4, self.lengths),
        ];
        bindings.extend(self.values.map(|v| Binding::read_write(5, v)));
        let values = self.values.is_some();
        let shader = source::local_segments(width, values)
            .keyed(format!("sort.sort_segments.{width}.{values}"));
        crate::kernel::add_node(
            graph,
            DispatchNode::new(
                format!("{}.width{width}", self.id),
                shader,
                "sort_segments",
                bindings,
                Grid::Indirect(indirect),
            ),
        )
    }
}
