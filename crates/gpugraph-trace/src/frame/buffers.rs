//! The buffers a [`super::TraceFrame`] owns: the uploaded trace, its CSR, the interaction
//! state and the frame's outputs. Sized once from the config; uploads are queue writes.

use wgpu::BufferUsages as U;

use super::{TraceFrameConfig, WORKFLOW};
use crate::error::TraceGpuError;
use crate::model::TraceModel;
use crate::span::{TraceSpan, NO_SPAN, TRACE_SPAN_BYTES};

/// Every buffer of a frame. Outputs (and inputs) carry `COPY_SRC` so tools and tests can read
/// them back explicitly.
#[derive(Debug)]
pub struct FrameBuffers {
    /// Canonical spans, `span_capacity × 32` bytes.
    pub spans: wgpu::Buffer,
    /// Parent per span ([`NO_SPAN`] past the loaded spans).
    pub parents: wgpu::Buffer,
    /// Dependency records; past the loaded ones `from = to =` [`NO_SPAN`] (left out of the
    /// CSR).
    pub dependencies: wgpu::Buffer,
    /// Forward CSR offsets (`span_capacity + 1`).
    pub forward_offsets: wgpu::Buffer,
    /// Forward CSR neighbours.
    pub forward_neighbors: wgpu::Buffer,
    /// Reverse CSR offsets.
    pub reverse_offsets: wgpu::Buffer,
    /// Reverse CSR neighbours.
    pub reverse_neighbors: wgpu::Buffer,
    /// Process index per thread.
    pub thread_process: wgpu::Buffer,
    /// Lanes per thread.
    pub thread_lanes: wgpu::Buffer,
    /// First thread per process ([`NO_SPAN`] without threads).
    pub process_first: wgpu::Buffer,
    /// The [`super::FrameParams`] uniform.
    pub params: wgpu::Buffer,
    /// 1 per collapsed process.
    pub process_collapsed: wgpu::Buffer,
    /// 1 per collapsed thread.
    pub thread_collapsed: wgpu::Buffer,
    /// `[seed count, forward hops, reverse hops]`.
    pub focus_state: wgpu::Buffer,
    /// Focus seeds.
    pub seeds: wgpu::Buffer,
    /// Output: rows per thread.
    pub heights: wgpu::Buffer,
    /// Output: first row per thread.
    pub thread_offsets: wgpu::Buffer,
    /// Output: forward focus mask.
    pub focus_forward: wgpu::Buffer,
    /// Output: reverse focus mask.
    pub focus_reverse: wgpu::Buffer,
    /// Output: 1 per visible span (not written by a frame in blocks mode, see
    /// [`TraceFrameConfig::block_lod`]).
    pub visible: wgpu::Buffer,
    /// Output: layout row per span ([`NO_SPAN`] hidden). A frame in blocks mode writes only
    /// the rows of its drawn edges' endpoints (and the span LOD those of its quads); a hidden
    /// span's slot may then keep a row from such a frame.
    pub rows: wgpu::Buffer,
    /// Output: 1 per drawn dependency.
    pub edge_flags: wgpu::Buffer,
    /// Output: projected `(from, to)` per dependency.
    pub edge_ends: wgpu::Buffer,
    /// Per thread `[first span, end)` (two words; the candidate path's index).
    pub thread_spans: wgpu::Buffer,
    /// Per span the running maximum end of its thread's spans up to it (two words, lo, hi).
    pub max_end: wgpu::Buffer,
    /// Output: per thread `[first candidate span, candidates, first row, collapse mode]`
    /// (mode bit 0: only lane 0 shown; bit 1: every span on the first row).
    pub thread_info: wgpu::Buffer,
    /// Output: per thread its candidate spans.
    pub thread_counts: wgpu::Buffer,
    /// Output: inclusive scan of `thread_counts` (the last word is the candidate total).
    pub candidate_ends: wgpu::Buffer,
    /// The candidate pass's indirect dispatch `(x, y, z)`.
    pub candidate_args: wgpu::Buffer,
    /// The unmark pass's indirect dispatch `(x, y, z)` (last frame's visible spans).
    pub unmark_args: wgpu::Buffer,
    /// The sweep pass's indirect dispatch `(x, y, z)` (every span slot, or none).
    pub sweep_args: wgpu::Buffer,
    /// Output: `[candidate rows (candidates, or spans when swept), the previous candidate
    /// frame's, mode]` (the first is the visible-span compaction's live count). Mode 0:
    /// candidates, 1: sweep, 2: blocks (no per-span pass: the first two words keep the last
    /// other frame's rows, whose marks the next candidate frame clears).
    pub live_total: wgpu::Buffer,
    /// Output: the candidates' span IDs (the first `live_total[0]` rows; every span slot in
    /// order when swept).
    pub candidate_ids: wgpu::Buffer,
    /// Output: 1 per candidate that is visible, else 0 (the first `live_total[0]` rows): with
    /// `candidate_ids`, the visible spans in canonical order, compacted or not.
    pub candidate_flags: wgpu::Buffer,
    /// Per thread its first block record, then the total (`thread_capacity + 1` words; see
    /// [`super::blocks`]; 1 word without [`TraceFrameConfig::block_lod`]).
    pub thread_blocks: wgpu::Buffer,
    /// The block records ([`super::blocks::BLOCK_WORDS`] words each), written by the build
    /// graph.
    pub blocks: wgpu::Buffer,
    /// Per span slot of each thread's range, the thread's span ends in ascending order (two
    /// words, lo, hi; with [`TraceFrameConfig::block_lod`]): the visible count's second
    /// binary search.
    pub sorted_ends: wgpu::Buffer,
    /// Output: per thread the spans its window shows when the view is plain (starts at or
    /// before the window's end minus ends before its start).
    pub thread_visible: wgpu::Buffer,
    /// Constant `0..dependency_capacity`.
    pub edge_ids: wgpu::Buffer,
    /// Output with [`TraceFrameConfig::compact_visible`]: visible span IDs, canonical order
    /// (not written without it).
    pub visible_ids: wgpu::Buffer,
    /// Output: drawn dependency IDs.
    pub visible_edges: wgpu::Buffer,
    /// Two indirect draw records (`vertexCount, instanceCount, firstVertex, firstInstance`):
    /// `[6, visible spans, 0, 0]` (one quad per span) and `[2, drawn edges, 0, 0]` (one line
    /// per edge). The frame writes the instance counts in place (words 1 and 5), so a
    /// renderer's `draw_indirect` at byte 0 / 16 draws them without a readback (the span
    /// record draws the visible IDs, so only with [`TraceFrameConfig::compact_visible`]).
    pub draw_args: wgpu::Buffer,
    /// Output: `[deepest lane + 1 under the pointer (0: none), picked span or NO_SPAN]`.
    pub pick: wgpu::Buffer,
    /// The pick passes' indirect dispatch `(x, y, z)`, written by `pick_clear`: no
    /// workgroups while the view asks for no pick, so an ordinary frame skips both passes.
    pub pick_args: wgpu::Buffer,
    /// Output with [`TraceFrameConfig::scene_records`]: one 128-byte GPUScene record per
    /// span slot ([`crate::scene::TraceSceneProjection`]).
    pub scene_records: Option<wgpu::Buffer>,
    /// Output with [`TraceFrameConfig::picture`]: the frame's picture
    /// ([`super::TRACE_COLOR_FORMAT`], `RENDER_ATTACHMENT | COPY_SRC`).
    pub color: Option<wgpu::Texture>,
}

fn buffer(device: &wgpu::Device, label: &str, words: u64, usage: U) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: words.max(1) * 4,
        usage,
        mapped_at_creation: false,
    })
}

impl FrameBuffers {
    /// Allocates for `c` (nothing written yet).
    pub(super) fn new(device: &wgpu::Device, c: &TraceFrameConfig) -> Self {
        let io = U::STORAGE | U::COPY_DST | U::COPY_SRC;
        let (s, m) = (u64::from(c.span_capacity), u64::from(c.dependency_capacity));
        let (t, p) = (u64::from(c.thread_capacity), u64::from(c.process_capacity));
        let b = |label: &str, words: u64| buffer(device, label, words, io);
        Self {
            spans: b("trace/spans", s * TRACE_SPAN_BYTES / 4),
            parents: b("trace/parents", s),
            dependencies: b("trace/dependencies", 4 * m),
            forward_offsets: b("trace/forward-offsets", s + 1),
            forward_neighbors: b("trace/forward-neighbors", m),
            reverse_offsets: b("trace/reverse-offsets", s + 1),
            reverse_neighbors: b("trace/reverse-neighbors", m),
            thread_process: b("trace/thread-process", t),
            thread_lanes: b("trace/thread-lanes", t),
            process_first: b("trace/process-first", p),
            params: buffer(
                device,
                "trace/params",
                (std::mem::size_of::<super::FrameParams>() / 4) as u64,
                U::UNIFORM | U::COPY_DST,
            ),
            process_collapsed: b("trace/process-collapsed", p),
            thread_collapsed: b("trace/thread-collapsed", t),
            focus_state: b("trace/focus-state", 3),
            seeds: b("trace/seeds", u64::from(c.max_seeds)),
            heights: b("trace/heights", t),
            thread_offsets: b("trace/thread-offsets", t),
            focus_forward: b("trace/focus-forward", s),
            focus_reverse: b("trace/focus-reverse", s),
            visible: b("trace/visible", s),
            rows: b("trace/rows", s),
            edge_flags: b("trace/edge-flags", m),
            edge_ends: b("trace/edge-ends", 2 * m),
            thread_spans: b("trace/thread-spans", 2 * t),
            max_end: b("trace/max-end", 2 * s),
            thread_info: b("trace/thread-info", 4 * t),
            thread_counts: b("trace/thread-counts", t),
            candidate_ends: b("trace/candidate-ends", t),
            candidate_args: buffer(device, "trace/candidate-args", 3, io | U::INDIRECT),
            unmark_args: buffer(device, "trace/unmark-args", 3, io | U::INDIRECT),
            sweep_args: buffer(device, "trace/sweep-args", 3, io | U::INDIRECT),
            live_total: b("trace/live-total", 3),
            thread_blocks: b("trace/thread-blocks", if c.block_lod { t + 1 } else { 1 }),
            blocks: b(
                "trace/blocks",
                u64::from(super::blocks::block_capacity(c)) * u64::from(super::blocks::BLOCK_WORDS),
            ),
            sorted_ends: b("trace/sorted-ends", if c.block_lod { 2 * s } else { 1 }),
            thread_visible: b("trace/thread-visible", t),
            candidate_ids: b("trace/candidate-ids", s),
            candidate_flags: b("trace/candidate-flags", s),
            edge_ids: b("trace/edge-ids", m),
            visible_ids: b("trace/visible-ids", s),
            visible_edges: b("trace/visible-edges", m),
            draw_args: buffer(device, "trace/draw-args", 8, io | U::INDIRECT),
            pick: b("trace/pick", 2),
            pick_args: buffer(device, "trace/pick-args", 3, io | U::INDIRECT),
            color: c.picture.map(|(w, h)| {
                device.create_texture(&wgpu::TextureDescriptor {
                    label: Some("trace/color"),
                    size: wgpu::Extent3d {
                        width: w.max(1),
                        height: h.max(1),
                        depth_or_array_layers: 1,
                    },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: super::TRACE_COLOR_FORMAT,
                    usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
                    view_formats: &[],
                })
            }),
            scene_records: c.scene_records.then(|| {
                buffer(
                    device,
                    "trace/scene-records",
                    s * gpugraph_render::gpu_scene::GPU_SCENE_RECORD_WORDS,
                    gpugraph_render::gpu_scene::GPU_SCENE_BUFFER_USAGE,
                )
            }),
        }
    }

    /// Writes `model` (checked against `c`), its thread index and the frame's cleared
    /// visibility (no span visible, no visible IDs); returns the loaded `(spans,
    /// dependencies, threads, processes)`.
    pub(super) fn upload(
        &self,
        queue: &wgpu::Queue,
        model: &TraceModel,
        c: &TraceFrameConfig,
    ) -> Result<(u32, u32, u32, u32), TraceGpuError> {
        for (what, needed, capacity) in [
            ("spans", model.spans.len(), c.span_capacity),
            (
                "dependencies",
                model.dependencies.len(),
                c.dependency_capacity,
            ),
            ("threads", model.threads.len(), c.thread_capacity),
            ("processes", model.processes.len(), c.process_capacity),
        ] {
            if needed as u64 > u64::from(capacity) {
                return Err(TraceGpuError::Capacity {
                    workflow: WORKFLOW,
                    id: "trace".into(),
                    what,
                    needed: needed as u64,
                    capacity: u64::from(capacity),
                });
            }
        }
        let (thread_spans, max_end) = super::candidates::thread_index(model)?;
        let (s, m) = (c.span_capacity as usize, c.dependency_capacity as usize);
        let write = |b: &wgpu::Buffer, words: &[u32]| {
            if !words.is_empty() {
                queue.write_buffer(b, 0, bytemuck::cast_slice(words));
            }
        };
        if !model.spans.is_empty() {
            queue.write_buffer(
                &self.spans,
                0,
                bytemuck::cast_slice::<TraceSpan, u8>(&model.spans),
            );
        }
        let mut parents = model.parents.clone();
        parents.resize(s, NO_SPAN);
        write(&self.parents, &parents);
        let mut deps: Vec<u32> = Vec::with_capacity(4 * m);
        for d in &model.dependencies {
            deps.extend([d.from, d.to, d.kind, d.flow]);
        }
        deps.resize(4 * m, 0);
        for pad in deps[4 * model.dependencies.len()..].chunks_mut(4) {
            pad[0] = NO_SPAN;
            pad[1] = NO_SPAN;
        }
        write(&self.dependencies, &deps);
        let tp: Vec<u32> = model.threads.iter().map(|t| t.process).collect();
        let tl: Vec<u32> = model.threads.iter().map(|t| t.lanes).collect();
        let pf: Vec<u32> = model
            .processes
            .iter()
            .map(|p| {
                if p.threads.is_empty() {
                    NO_SPAN
                } else {
                    p.threads.start
                }
            })
            .collect();
        write(&self.thread_process, &tp);
        write(&self.thread_lanes, &tl);
        write(&self.process_first, &pf);
        write(&self.draw_args, &[6, 0, 0, 0, 2, 0, 0, 0]);
        write(&self.thread_spans, &thread_spans);
        write(&self.max_end, &max_end);
        write(&self.visible, &vec![0; s]);
        write(&self.rows, &vec![NO_SPAN; s]);
        // No candidates yet: nothing for the first frame's unmark.
        write(&self.live_total, &[0, 0, 0]);
        if c.block_lod {
            write(
                &self.thread_blocks,
                &super::blocks::thread_blocks(model, c.thread_capacity),
            );
            write(&self.sorted_ends, &super::blocks::sorted_ends(model));
        }
        write(&self.edge_ids, &(0..m as u32).collect::<Vec<_>>());
        Ok((
            model.spans.len() as u32,
            model.dependencies.len() as u32,
            model.threads.len() as u32,
            model.processes.len() as u32,
        ))
    }
}
