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
    compute_fn, view_binding, BindGroupCache, BufferDescriptor, BufferHandle, CommandGraph,
    ComputeNode, DataView, ResourceUse, VectorFormat, VectorView,
};

use super::kernels::{self, resolve};
use super::policy::{CLASSIFY_WORKGROUP, LOCAL_SORT_MAX, SEGMENT_WIDTHS};
use super::source::{self, LIST_HEADER_WORDS};
use crate::error::AlgorithmError;
use crate::kernel::{grid_for, parameter_buffer, require_packed, Binding, Grid, ViewCheck};

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

    #[allow(clippy::too_many_arguments)]
    fn add_classify_node(
        &self,
        graph: &mut CommandGraph,
        classes: &[u32],
        lists: BufferHandle,
        args: BufferHandle,
        rejected: DataView,
        grid: Grid,
        max_dim: u32,
    ) -> Result<(), AlgorithmError> {
        let uses = vec![
            ResourceUse::storage_read(self.offsets),
            ResourceUse::storage_read(self.lengths),
            ResourceUse::storage_read_write(lists),
            ResourceUse::storage_read_write(args),
            ResourceUse::storage_read_write(rejected),
        ];
        let (offsets, lengths) = (self.offsets, self.lengths);
        let p = (
            self.offsets.len() as u32,
            self.keys.len() as u32,
            self.max_width,
        );
        let classes = classes.to_vec();
        graph.add_compute_node(ComputeNode::new(
            format!("{}.classify", self.id),
            uses,
            move |cc| {
                let device = cc.device().clone();
                let align = cc.limits().min_storage_buffer_offset_alignment as u64;
                let bindings = [
                    Binding::Uniform,
                    Binding::StorageRead,
                    Binding::StorageRead,
                    Binding::StorageReadWrite,
                    Binding::StorageReadWrite,
                    Binding::StorageReadWrite,
                ];
                let wgsl = source::classify(&classes);
                let key = format!("sort.classify.{classes:?}");
                let clear = kernels::get(
                    &device,
                    &format!("{key}.clear"),
                    &wgsl,
                    "clear_classes",
                    &bindings,
                );
                let classify = kernels::get(
                    &device,
                    &format!("{key}.classify"),
                    &wgsl,
                    "classify",
                    &bindings,
                );
                let off = |v: DataView| v.aligned_range(align).element_offset as u32;
                let params = ClassifyParams {
                    segments: p.0,
                    rows: p.1,
                    max_width: p.2,
                    offsets: off(offsets),
                    lengths: off(lengths),
                    rejected: off(rejected),
                    max_dim,
                    pad: 0,
                };
                let params = parameter_buffer(&device, cc.node_id(), bytemuck::bytes_of(&params));
                let mut groups = BindGroupCache::default();
                Ok(compute_fn(move |pass, ec| {
                    let bufs = resolve(
                        ec,
                        &[
                            offsets.buffer(),
                            lengths.buffer(),
                            lists,
                            args,
                            rejected.buffer(),
                        ],
                    );
                    let group = groups.get_or_create(&bufs, || {
                        clear.bind_group(
                            &device,
                            &[
                                params.as_entire_buffer_binding(),
                                view_binding(bufs[0], &offsets, align).0,
                                view_binding(bufs[1], &lengths, align).0,
                                ec.binding(lists),
                                ec.binding(args),
                                view_binding(bufs[4], &rejected, align).0,
                            ],
                        )
                    });
                    clear.dispatch(pass, group, Grid { x: 1, y: 1 });
                    classify.dispatch(pass, group, grid);
                }))
            },
        ))?;
        Ok(())
    }

    fn add_width_node(
        &self,
        graph: &mut CommandGraph,
        class: u32,
        width: u32,
        lists: BufferHandle,
        args: BufferHandle,
    ) -> Result<(), AlgorithmError> {
        let mut uses = vec![
            ResourceUse::storage_read_write(self.keys),
            ResourceUse::storage_read(lists),
            ResourceUse::storage_read(self.offsets),
            ResourceUse::storage_read(self.lengths),
            ResourceUse::indirect(args),
        ];
        uses.extend(self.values.map(ResourceUse::storage_read_write));
        let (keys, values, offsets, lengths) = (self.keys, self.values, self.offsets, self.lengths);
        let segments = self.offsets.len() as u32;
        graph.add_compute_node(ComputeNode::new(
            format!("{}.width{width}", self.id),
            uses,
            move |cc| {
                let device = cc.device().clone();
                let align = cc.limits().min_storage_buffer_offset_alignment as u64;
                let mut bindings = vec![
                    Binding::Uniform,
                    Binding::StorageReadWrite,
                    Binding::StorageRead,
                    Binding::StorageRead,
                    Binding::StorageRead,
                ];
                if values.is_some() {
                    bindings.push(Binding::StorageReadWrite);
                }
                let kernel = kernels::get(
                    &device,
                    &format!("sort.sort_segments.{width}.{}", values.is_some()),
                    &source::local_segments(width, values.is_some()),
                    "sort_segments",
                    &bindings,
                );
                let off = |v: DataView| v.aligned_range(align).element_offset as u32;
                let params = SegmentParams {
                    keys: off(keys),
                    values: values.map_or(0, off),
                    offsets: off(offsets),
                    lengths: off(lengths),
                    count_word: class,
                    list_word: LIST_HEADER_WORDS + class * segments,
                    pad: [0; 2],
                };
                let params = parameter_buffer(&device, cc.node_id(), bytemuck::bytes_of(&params));
                let mut groups = BindGroupCache::default();
                Ok(compute_fn(move |pass, ec| {
                    let mut handles =
                        vec![keys.buffer(), lists, offsets.buffer(), lengths.buffer()];
                    handles.extend(values.map(|v| v.buffer()));
                    let bufs = resolve(ec, &handles);
                    let group = groups.get_or_create(&bufs, || {
                        let mut res = vec![
                            params.as_entire_buffer_binding(),
                            view_binding(bufs[0], &keys, align).0,
                            ec.binding(lists),
                            view_binding(bufs[2], &offsets, align).0,
                            view_binding(bufs[3], &lengths, align).0,
                        ];
                        if let Some(v) = &values {
                            res.push(view_binding(bufs[4], v, align).0);
                        }
                        kernel.bind_group(&device, &res)
                    });
                    pass.set_pipeline(&kernel.pipeline);
                    pass.set_bind_group(0, group, &[]);
                    pass.dispatch_workgroups_indirect(ec.buffer(args), class as u64 * 12);
                }))
            },
        ))?;
        Ok(())
    }
}
