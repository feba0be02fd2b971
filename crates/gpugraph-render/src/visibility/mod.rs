//! [`VisibilityWorkflow`] (spec Phase 2, GPUVisibilityWorkflow): which instances are visible,
//! as a source-aligned 0/1 mask, compacted stable IDs and one GPU-resident count.
//!
//! Design. One dispatch node per non-empty chunk (`cull.wgsl`) evaluates, per row, the bounds
//! (a sphere or an axis-aligned box) against the six planes of the view's frustum, the
//! optional time range against the view's time window, the optional LOD band against the
//! distance from the eye to the bounds' center, and the optional selection flag, and writes
//! their intersection as 0/1 into the mask (the caller's, or a transient) at the row's
//! position; with generated IDs it also writes each visible row's global index (the
//! compaction reads only selected rows' values). Then the gpgpu
//! [`Compaction`] (fused scan + scatter) writes the visible IDs in source order and the count,
//! wherever the caller wants it: typically the `instanceCount` word of a
//! [`crate::DrawCommandBuffer`] record, so the draw reads the count without a readback.
//!
//! The view (planes, eye, time window) lives in a caller-imported uniform buffer
//! ([`ViewParams`]): moving the camera is a `queue.write_buffer` between encodes, never a
//! recompile. Selection, LOD and time inputs are ordinary imported buffers the caller (or an
//! earlier node) rewrites the same way.
//!
//! Bounds tests are the conservative plane tests (a sphere or box outside no single plane
//! is kept even when it misses a frustum corner). [`cpu`] states the predicate exactly — the
//! f32 operations and their order, the boundary (a sphere tangent to a plane is kept, one ulp
//! further out it is culled), the squared LOD comparison — and is the oracle tests compare
//! masks, IDs and counts with, bit for bit. Non-finite bounds, negative radii and boxes with
//! `max < min` are never visible.
//! Memory traffic per row: 16 (sphere) or 32 (box) bytes of bounds, 8 per time or LOD input,
//! 4 for selection, 4 written to the mask (+4 per visible row's generated ID), then the
//! compaction's 4 (flags) + 4 per visible row (+ the values of 4-row groups holding one). A
//! strided input (a field of interleaved records) costs the memory sectors it touches: a
//! GPUScene's sphere and flags share the record's first 32-byte sector.

pub mod cpu;

use gpugraph_command::{
    Access, Binding, BufferDescriptor, BufferHandle, CommandGraph, DataView, DataViewDescriptor,
    DispatchNode, Grid, ShaderSource, VectorFormat, VectorView,
};
use gpugraph_gpgpu::Compaction;

use crate::camera::{frustum_planes, Mat4};
use crate::RenderError;

const WORKFLOW: &str = "visibility";
const CULL_WGSL: &str = include_str!("cull.wgsl");
const WORKGROUP_SIZE: u32 = 256;

/// The view uniform the workflow reads (WGSL `View` in `cull.wgsl`; 128 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ViewParams {
    /// Frustum planes `(n, d)`, inside where `n · p + d ≥ 0` (see
    /// [`crate::camera::frustum_planes`]).
    pub planes: [[f32; 4]; 6],
    /// Eye position (xyz; w unused), for LOD distances.
    pub eye: [f32; 4],
    /// Time window `[start, end]`: an instance range `[s, e]` is visible when `s ≤ end` and
    /// `e ≥ start`.
    pub time: [f32; 2],
    /// Padding to the WGSL struct's size.
    pub pad: [f32; 2],
}

impl ViewParams {
    /// Bytes of the uniform (the imported view buffer's minimum byte length).
    pub const BYTES: u64 = std::mem::size_of::<ViewParams>() as u64;

    /// The frustum of `view_projection`, seen from `eye`, with an unbounded time window.
    pub fn new(view_projection: &Mat4, eye: [f32; 3]) -> Self {
        Self {
            planes: frustum_planes(view_projection),
            eye: [eye[0], eye[1], eye[2], 1.0],
            time: [f32::NEG_INFINITY, f32::INFINITY],
            pad: [0.0; 2],
        }
    }

    /// The same view with time window `[start, end]`.
    pub fn with_time(mut self, start: f32, end: f32) -> Self {
        self.time = [start, end];
        self
    }
}

/// Per-chunk constants of one cull dispatch (WGSL `Chunk`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ChunkParams {
    /// Rows of the chunk.
    pub rows: u32,
    /// Global row index of the chunk's first row (its generated ID).
    pub id_base: u32,
    /// Element offsets (in 4-byte components) of each binding's view inside its binding.
    pub bounds_offset: u32,
    /// Box maxima.
    pub bounds_max_offset: u32,
    /// Time ranges.
    pub time_offset: u32,
    /// LOD bands.
    pub lod_offset: u32,
    /// Selection flags.
    pub selection_offset: u32,
    /// The mask written.
    pub flags_offset: u32,
    /// The generated IDs written.
    pub ids_offset: u32,
    /// Row strides in 4-byte components of the bounds (4 when packed).
    pub bounds_stride: u32,
    /// Box maxima.
    pub bounds_max_stride: u32,
    /// Time ranges.
    pub time_stride: u32,
    /// LOD bands.
    pub lod_stride: u32,
    /// Selection flags.
    pub selection_stride: u32,
    /// Padding to 16-byte multiples.
    pub pad: [u32; 2],
}

/// Per-instance bounds, one row per instance. Rows may be strided (a field of interleaved
/// records, such as a [`crate::GpuSceneViews`] field); the stride is a multiple of 4 bytes.
#[derive(Clone, Debug)]
pub enum Bounds {
    /// float32x4 rows: center xyz, radius w.
    Spheres(VectorView),
    /// float32x3 or float32x4 rows of box minima (w ignored) and maxima, with equal chunk
    /// lengths.
    Boxes {
        /// Minimum corners.
        min: VectorView,
        /// Maximum corners.
        max: VectorView,
    },
}

impl Bounds {
    fn primary(&self) -> &VectorView {
        match self {
            Bounds::Spheres(v) => v,
            Bounds::Boxes { min, .. } => min,
        }
    }
}

/// Visibility of instances against a view, compacted into stable IDs (see the module doc).
///
/// Contract: every input is read row for row with the bounds' chunk lengths (one logical
/// sequence over the chunks; empty chunks allowed). Row `i` (global, over chunks) is visible
/// when its bounds meet the frustum, and, when given, its time range meets the view's time
/// window, its LOD band `[near, far)` contains the eye-to-center distance and its selection
/// flag is nonzero — each evaluated in f32 exactly as [`cpu`] states. `mask` (when given) receives 1 for visible rows and 0 otherwise;
/// `output` receives the visible rows' IDs (`ids[i]`, or `i` when `ids` is `None`) in source
/// order, up to its capacity; `count` receives the number of visible rows (possibly above the
/// capacity, then `overflow` = 1) on every encode. Output rows past the count are untouched.
#[derive(Clone, Debug)]
pub struct VisibilityWorkflow {
    /// Node id prefix.
    pub id: String,
    /// Imported buffer holding [`ViewParams`] (usage `UNIFORM`, at least
    /// [`ViewParams::BYTES`]); rewrite it between encodes to move the view.
    pub view: BufferHandle,
    /// Per-instance bounds.
    pub bounds: Bounds,
    /// Optional packed float32x2 `(start, end)` per instance.
    pub time_range: Option<VectorView>,
    /// Optional packed float32x2 LOD band `[near, far)` of eye distances per instance.
    pub lod: Option<VectorView>,
    /// Optional packed uint32 selection flags (nonzero = selected).
    pub selection: Option<VectorView>,
    /// Optional packed uint32 stable IDs; `None` generates the global row index.
    pub ids: Option<VectorView>,
    /// Optional packed uint32 canonical mask to publish (bounds' chunk lengths).
    pub mask: Option<VectorView>,
    /// Packed uint32 destination of the visible IDs; its total rows are the capacity.
    pub output: VectorView,
    /// One packed uint32 row: the visible count (e.g. an indirect record's `instanceCount`).
    pub count: DataView,
    /// One packed uint32 row: 1 when visible rows exceeded the capacity, else 0.
    pub overflow: Option<DataView>,
}

fn lengths(v: &VectorView) -> Vec<u64> {
    v.chunks().iter().map(|c| c.len()).collect()
}

impl VisibilityWorkflow {
    fn unsupported(
        &self,
        what: &'static str,
        expected: &'static str,
        actual: String,
    ) -> RenderError {
        RenderError::UnsupportedView {
            workflow: WORKFLOW,
            id: self.id.clone(),
            what,
            expected,
            actual,
        }
    }

    /// Every chunk of `v` of one of `formats` without a live count, packed unless `strided`
    /// (inputs may be strided by whole 4-byte words), with the bounds' chunks.
    fn check(
        &self,
        what: &'static str,
        v: &VectorView,
        formats: &[VectorFormat],
        strided: bool,
        expected: &'static str,
        reference: &[u64],
    ) -> Result<(), RenderError> {
        for c in v.chunks() {
            let layout_ok = if strided {
                c.byte_stride().is_multiple_of(4)
            } else {
                c.is_packed()
            };
            if !formats.contains(&c.format()) || !layout_ok || c.live_count().is_some() {
                return Err(self.unsupported(
                    what,
                    expected,
                    format!(
                        "{} rows (packed {}, live count {})",
                        c.format(),
                        c.is_packed(),
                        c.live_count().is_some()
                    ),
                ));
            }
        }
        if lengths(v) != reference {
            return Err(RenderError::ChunkMismatch {
                workflow: WORKFLOW,
                id: self.id.clone(),
                what,
                expected: reference.to_vec(),
                actual: lengths(v),
            });
        }
        Ok(())
    }

    /// Adds the cull dispatches and the compaction to `graph` after checking every view
    /// (formats, chunk lengths, written views sharing no buffer with what is read, the view
    /// buffer's size); nothing is added when one of these checks fails. A device limit the
    /// composed compaction hits is reported after the cull nodes were declared: drop the
    /// graph then.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), RenderError> {
        let reference = lengths(self.bounds.primary());
        let total: u64 = reference.iter().sum();
        let f4 = "float32x4 rows (stride a multiple of 4 bytes) without a live count";
        let f34 = "float32x3 or float32x4 rows (stride a multiple of 4 bytes) without a live count";
        let f2 = "float32x2 rows (stride a multiple of 4 bytes) without a live count";
        let u1s = "uint32 rows (stride a multiple of 4 bytes) without a live count";
        let u1 = "packed uint32 rows without a live count";
        use VectorFormat::{Float32x2, Float32x3, Float32x4, Uint32};
        match &self.bounds {
            Bounds::Spheres(v) => self.check("bounds", v, &[Float32x4], true, f4, &reference)?,
            Bounds::Boxes { min, max } => {
                let f = &[Float32x3, Float32x4];
                self.check("bounds", min, f, true, f34, &reference)?;
                self.check("box maxima", max, f, true, f34, &reference)?;
            }
        }
        let optional = [
            ("time range", &self.time_range, Float32x2, true, f2),
            ("lod band", &self.lod, Float32x2, true, f2),
            ("selection", &self.selection, Uint32, true, u1s),
            ("ids", &self.ids, Uint32, false, u1),
            ("mask", &self.mask, Uint32, false, u1),
        ];
        for (what, v, format, strided, expected) in optional {
            if let Some(v) = v {
                self.check(what, v, &[format], strided, expected, &reference)?;
            }
        }
        if total > u64::from(u32::MAX) {
            return Err(RenderError::TooManyRows {
                workflow: WORKFLOW,
                id: self.id.clone(),
                rows: total,
                limit: u64::from(u32::MAX),
            });
        }
        let view_bytes = graph.buffer_descriptor(self.view)?.byte_length;
        if view_bytes < ViewParams::BYTES {
            return Err(self.unsupported(
                "view",
                "a uniform buffer of at least 128 bytes (ViewParams)",
                format!("{view_bytes} bytes"),
            ));
        }
        let mut inputs: Vec<BufferHandle> = vec![self.view];
        let mut add_inputs = |v: &VectorView| inputs.extend(v.buffers());
        add_inputs(self.bounds.primary());
        if let Bounds::Boxes { max, .. } = &self.bounds {
            add_inputs(max);
        }
        for v in [&self.time_range, &self.lod, &self.selection, &self.ids]
            .into_iter()
            .flatten()
        {
            add_inputs(v);
        }
        self.check_outputs(graph, &inputs)?;

        let flags = match &self.mask {
            Some(m) => m.clone(),
            None => self.transient_u32(graph, "mask", &reference)?,
        };
        let generated = self.ids.is_none();
        let ids = match &self.ids {
            Some(v) => v.clone(),
            None => self.transient_u32(graph, "ids", &reference)?,
        };
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let offset = |v: &DataView| v.aligned_range(align).element_offset as u32;
        let stride = |v: &DataView| (v.byte_stride() / 4) as u32;
        let constants = vec![
            (
                "BOX_BOUNDS".to_string(),
                f64::from(u8::from(matches!(self.bounds, Bounds::Boxes { .. }))),
            ),
            (
                "USE_TIME".to_string(),
                f64::from(u8::from(self.time_range.is_some())),
            ),
            (
                "USE_LOD".to_string(),
                f64::from(u8::from(self.lod.is_some())),
            ),
            (
                "USE_SELECTION".to_string(),
                f64::from(u8::from(self.selection.is_some())),
            ),
        ];
        let shader = ShaderSource::new("render/visibility/cull", CULL_WGSL);
        let chunk_count = reference.len();
        let mut base = 0u64;
        for (k, &rows) in reference.iter().enumerate() {
            let id_base = base;
            base += rows;
            if rows == 0 {
                continue;
            }
            let bounds = self.bounds.primary().chunks()[k];
            let pick = |v: &Option<VectorView>| v.as_ref().map(|v| v.chunks()[k]);
            let max = match &self.bounds {
                Bounds::Boxes { max, .. } => Some(max.chunks()[k]),
                Bounds::Spheres(_) => None,
            };
            let (time, lod, selection) = (
                pick(&self.time_range),
                pick(&self.lod),
                pick(&self.selection),
            );
            let flag_view = flags.chunks()[k];
            let id_view = ids.chunks()[k];
            let params = ChunkParams {
                rows: rows as u32,
                id_base: id_base as u32,
                bounds_offset: offset(&bounds),
                bounds_max_offset: max.as_ref().map_or(0, offset),
                time_offset: time.as_ref().map_or(0, offset),
                lod_offset: lod.as_ref().map_or(0, offset),
                selection_offset: selection.as_ref().map_or(0, offset),
                flags_offset: offset(&flag_view),
                ids_offset: offset(&id_view),
                bounds_stride: stride(&bounds),
                bounds_max_stride: max.as_ref().map_or(0, stride),
                time_stride: time.as_ref().map_or(0, stride),
                lod_stride: lod.as_ref().map_or(0, stride),
                selection_stride: selection.as_ref().map_or(0, stride),
                pad: [0; 2],
            };
            let mut bindings = vec![
                Binding::handle(0, self.view, Access::Uniform),
                Binding::params(1, &params),
                Binding::read(2, bounds),
                Binding::read(3, max.unwrap_or(bounds)),
                Binding::read(4, time.unwrap_or(bounds)),
                Binding::read(5, lod.unwrap_or(bounds)),
                Binding::read(6, selection.unwrap_or(bounds)),
                Binding::read_write(7, flag_view),
            ];
            if generated {
                bindings.push(Binding::read_write(8, id_view));
            }
            let node_id = if chunk_count == 1 {
                format!("{}/cull", self.id)
            } else {
                format!("{}/cull-{k}", self.id)
            };
            let entry = if generated { "cull_ids" } else { "cull" };
            let mut node = DispatchNode::new(
                node_id,
                shader.clone(),
                entry,
                bindings,
                Grid::Rows {
                    rows,
                    rows_per_workgroup: WORKGROUP_SIZE,
                },
            );
            node.constants = constants.clone();
            graph.add_dispatch_node(node)?;
        }
        Compaction {
            id: format!("{}/compact", self.id),
            values: ids,
            flags,
            output: self.output,
            count: self.count,
            overflow: self.overflow,
        }
        .add_to_graph(graph)?;
        Ok(())
    }

    /// The written views: formats, and no buffer shared with an input or between the
    /// mask and the compaction's outputs (checked here so that a failure adds nothing).
    fn check_outputs(
        &self,
        graph: &CommandGraph,
        inputs: &[BufferHandle],
    ) -> Result<(), RenderError> {
        let u1 = "packed uint32 rows without a live count";
        let one = "one packed uint32 row without a live count";
        let capacity = lengths(&self.output);
        self.check(
            "output",
            &self.output,
            &[VectorFormat::Uint32],
            false,
            u1,
            &capacity,
        )?;
        for (what, v) in [("count", Some(self.count)), ("overflow", self.overflow)] {
            if let Some(v) = v {
                if v.format() != VectorFormat::Uint32 || v.len() != 1 || v.live_count().is_some() {
                    return Err(self.unsupported(
                        what,
                        one,
                        format!("{} rows of {}", v.len(), v.format()),
                    ));
                }
            }
        }
        let mask: Vec<BufferHandle> = self.mask.iter().flat_map(|m| m.buffers()).collect();
        let mut written: Vec<(&'static str, Vec<BufferHandle>)> = vec![("mask", mask.clone())];
        written.push(("output", self.output.buffers()));
        written.push(("count", vec![self.count.buffer()]));
        if let Some(o) = self.overflow {
            written.push(("overflow", vec![o.buffer()]));
        }
        for (what, buffers) in &written {
            let mut read = inputs.to_vec();
            if *what != "mask" {
                read.extend(&mask);
            }
            if let Some(shared) = buffers.iter().find(|b| read.contains(b)) {
                return Err(RenderError::WritesAlone {
                    workflow: WORKFLOW,
                    id: self.id.clone(),
                    what,
                    buffer: graph.buffer_id(*shared)?.to_string(),
                });
            }
        }
        Ok(())
    }

    /// A transient uint32 buffer `{id}/{name}` with one view per chunk of `lengths`.
    fn transient_u32(
        &self,
        graph: &mut CommandGraph,
        name: &str,
        lengths: &[u64],
    ) -> Result<VectorView, RenderError> {
        let total: u64 = lengths.iter().sum();
        let handle = graph.create_buffer(BufferDescriptor::new(
            format!("{}/{name}", self.id),
            (total * 4).max(4),
            wgpu::BufferUsages::STORAGE,
        ))?;
        let mut at = 0u64;
        let mut chunks = Vec::with_capacity(lengths.len());
        for &len in lengths {
            chunks.push(graph.create_data_view(
                handle,
                DataViewDescriptor::packed(VectorFormat::Uint32, len).at_offset(at * 4),
            )?);
            at += len;
        }
        Ok(graph.create_vector_view(chunks)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust uniforms match the WGSL structs member for member.
    #[test]
    fn uniform_layouts_match_the_shader() {
        let module = naga::front::wgsl::parse_str(CULL_WGSL).expect("cull.wgsl parses");
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).expect("layout");
        let find = |name: &str| {
            module
                .types
                .iter()
                .find(|(_, t)| t.name.as_deref() == Some(name))
                .map(|(h, t)| (h, t.clone()))
                .expect("struct present")
        };
        let offsets = |name: &str| {
            let (h, t) = find(name);
            let naga::TypeInner::Struct { members, .. } = t.inner else {
                panic!("{name} is a struct")
            };
            (
                members.iter().map(|m| m.offset).collect::<Vec<_>>(),
                layouter[h].size,
            )
        };
        assert_eq!(
            offsets("View"),
            (vec![0, 96, 112, 120], ViewParams::BYTES as u32)
        );
        let (chunk, size) = offsets("Chunk");
        assert_eq!(size as usize, std::mem::size_of::<ChunkParams>());
        assert_eq!(chunk, (0..16).map(|i| i * 4).collect::<Vec<u32>>());
    }
}
