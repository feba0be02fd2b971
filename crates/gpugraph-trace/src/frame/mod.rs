//! [`TraceFrame`] (spec T.2): the trace's interactions as buffer writes on one compiled graph.
//!
//! Two graphs over buffers the frame owns: `build` (the [`DependencyCsr`], encoded once per
//! load) and `frame`, encoded every frame:
//!
//! ```text
//! heights (collapse state) ─ Scan ─ thread first rows ─┐
//! GraphTraversal forward ─┐                             ├─ candidates ─ visible, rows
//! GraphTraversal reverse ─┴─ focus masks ───────────────┘        │
//!   edge_projection (each dependency's endpoints walked up to their nearest visible
//!   ancestors) ─ Compaction(edges) ─ edge IDs + count
//!   visible span IDs (the candidates compacted; with [`TraceFrameConfig::compact_visible`])
//!   and their count, written into the instanceCount word of an indirect draw record
//!   ([`FrameBuffers::draw_args`])
//!   pick_clear ─ pick_lane ─ pick_span ─ picked span ID (the last two dispatched
//!   indirectly: no workgroups while the view asks for no pick)
//! ```
//!
//! With [`TraceFrameConfig::block_lod`] (the viewer's frames), a plain view (no filter, focus
//! or collapse) whose window covers most spans runs no per-span pass at all ([`blocks`]):
//! the visible count comes from binary searches, the edges and picks test the window on the
//! fly, and the span LOD draws from per-thread block summaries the build graph writes.
//!
//! The span part costs O(threads · log n + candidates), not O(spans): each thread's window
//! is a candidate range found by binary search over start-sorted spans with a running
//! max-end summary built at load (see `candidates`). Ancestor retention projects the
//! dependencies' endpoints alone (O(dependencies × depth)): no per-span projection pass,
//! since nothing else reads a hidden span's visible ancestor.
//!
//! Everything an interaction changes ([`TraceView`]: window, collapse, filters, focus seeds
//! and hops, the pointer) is a queue write into the frame's state buffers
//! ([`TraceFrame::write_view`]); nothing recompiles and nothing is read back. The frame graph
//! is compiled twice, with and without the two focus traversals: a view without focus (the
//! common case while panning and zooming) encodes the second, whose span visibility ignores
//! the focus masks anyway, and so skips the traversals' `2 × (4 × max_hops + 4)` dispatches.
//! Both share the device's pipeline cache, so the second compile creates no pipeline. Capacities are
//! structural (a [`CapacityTier`] or exact sizes): a trace that exceeds them is an error, and
//! the caller builds a new frame (an explicit rebuild).

pub mod blocks;
mod buffers;
mod candidates;
mod config;
mod draw;

use gpugraph_command::{
    Access, Binding, BufferHandle, CommandGraph, CompiledGraph, DataView, DispatchNode,
    EncodeOptions, Grid, ShaderSource, VectorFormat,
};
use gpugraph_gpgpu::topology::{CsrAdjacency, TraversalDirection};
use gpugraph_gpgpu::{Compaction, GraphTraversal, Scan};

pub use buffers::FrameBuffers;
pub use config::{CapacityTier, TraceFrameConfig};
pub use draw::{span_draw_layouts, TRACE_COLOR_FORMAT};

use crate::csr::{CsrViews, DependencyCsr};
use crate::error::TraceGpuError;
use crate::model::TraceModel;
use crate::scene::TraceSceneProjection;
use crate::view::{FocusDirection, Pick, TraceView};
use gpugraph_render::GpuScene;

const WORKFLOW: &str = "trace frame";
const WG: u32 = 256;
const WGSL: &str = concat!(
    include_str!("../common.wgsl"),
    include_str!("params.wgsl"),
    include_str!("frame.wgsl"),
    include_str!("candidates.wgsl")
);

/// `FrameParams` in params.wgsl: the per-frame uniform [`TraceFrame::write_view`] writes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct FrameParams {
    /// Loaded spans.
    pub span_count: u32,
    /// Loaded dependency records.
    pub dependency_count: u32,
    /// Loaded threads.
    pub thread_count: u32,
    /// 1 when dependency focus applies.
    pub focus: u32,
    /// Window start (lo, hi).
    pub window_start: [u32; 2],
    /// Window end (lo, hi).
    pub window_end: [u32; 2],
    /// Shortest duration (lo, hi).
    pub min_duration: [u32; 2],
    /// Longest duration (lo, hi).
    pub max_duration: [u32; 2],
    /// Draw-group bits.
    pub groups: u32,
    /// Name filter or [`crate::NO_SPAN`].
    pub name: u32,
    /// 0 none, 1 by layout row, 2 by thread.
    pub pick_mode: u32,
    /// The row or thread.
    pub pick_target: u32,
    /// Pointer time (lo, hi).
    pub pick_time: [u32; 2],
    /// First layout row drawn.
    pub row_first: u32,
    /// Layout rows drawn (the picture's height).
    pub row_count: u32,
    /// Hidden parent links an edge endpoint's projection follows
    /// ([`TraceFrameConfig::max_ancestor_depth`]).
    pub max_ancestor_depth: u32,
    /// 1 when the view is plain and the frame has block summaries: no filter, focus or
    /// collapse, the window in order ([`TraceFrameConfig::block_lod`]); a zoomed-out frame
    /// then runs in blocks mode.
    pub plain: u32,
    /// Block records of the loaded trace ([`blocks`]).
    pub block_count: u32,
    /// Zero (16-byte size).
    pub pad: u32,
}

fn split(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

/// The interaction frame over one loaded trace (see the module doc).
pub struct TraceFrame {
    config: TraceFrameConfig,
    buffers: FrameBuffers,
    scene: Option<GpuScene>,
    layout: Vec<(u32, u32, bool)>,
    build: CompiledGraph,
    frame: CompiledGraph,
    /// The frame graph without the focus traversals (views without focus).
    unfocused: CompiledGraph,
    /// Whether the last written view has focus (which graph [`TraceFrame::encode`] runs).
    focused: std::sync::atomic::AtomicBool,
    counts: (u32, u32, u32, u32),
    /// Block records of the loaded trace.
    block_count: u32,
}

/// Packed uint32 view of the first `rows` rows of an imported buffer.
fn import(
    g: &mut CommandGraph,
    name: &str,
    b: &wgpu::Buffer,
    rows: u64,
) -> Result<(BufferHandle, DataView), TraceGpuError> {
    let h = g.import_buffer_once(name, b, b.usage())?;
    let v = g.create_packed_view(h, VectorFormat::Uint32, rows)?;
    Ok((h, v))
}

impl TraceFrame {
    /// Allocates the frame's buffers for `config`, uploads `model` through `queue` writes
    /// (visible to the next submission), and compiles both graphs. Fails with
    /// [`TraceGpuError::Capacity`] when the model exceeds the config, and with
    /// [`TraceGpuError::View`] for what [`TraceFrameConfig::validate`] rejects (a picture
    /// without the visible IDs, blocks mode beside consumers of every slot); submits
    /// nothing.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        model: &TraceModel,
        config: TraceFrameConfig,
    ) -> Result<Self, TraceGpuError> {
        config.validate()?;
        let buffers = FrameBuffers::new(device, &config);
        let build = Self::build_graph(device, &buffers, &config)?;
        let frame = Self::frame_graph(device, &buffers, &config, true)?;
        let unfocused = Self::frame_graph(device, &buffers, &config, false)?;
        let mut f = Self {
            config,
            buffers,
            build,
            frame,
            unfocused,
            focused: std::sync::atomic::AtomicBool::new(false),
            scene: None,
            layout: Vec::new(),
            counts: (0, 0, 0, 0),
            block_count: 0,
        };
        f.load_with(device, queue, model)?;
        f.write_view(queue, &TraceView::default())?;
        Ok(f)
    }

    /// Replaces the loaded trace within the compiled capacities (queue writes only); encode
    /// [`Self::encode_build`] once before the next frame. With scene records, the scene of
    /// [`Self::scene`] is re-borrowed with the new span count (a new 16-byte state block).
    pub fn load_with(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        model: &TraceModel,
    ) -> Result<(), TraceGpuError> {
        self.counts = self.buffers.upload(queue, model, &self.config)?;
        self.layout = crate::layout::thread_layout(model);
        self.block_count = self.loaded_blocks(model);
        if let Some(records) = &self.buffers.scene_records {
            if let Some(old) = &mut self.scene {
                old.destroy();
            }
            let n = self.counts.0;
            self.scene = Some(
                GpuScene::borrow_records(device, queue, "trace-scene", records, 0, n, n)
                    .map_err(gpugraph_render::RenderError::from)?,
            );
        }
        Ok(())
    }

    /// [`Self::load_with`] for frames without scene records (fails with
    /// [`TraceGpuError::View`] for a frame that has them, which need the device).
    pub fn load(&mut self, queue: &wgpu::Queue, model: &TraceModel) -> Result<(), TraceGpuError> {
        if self.buffers.scene_records.is_some() {
            return Err(TraceGpuError::View {
                workflow: WORKFLOW,
                id: "trace".into(),
                what: "load",
                expected: "load_with (the frame has scene records)",
                actual: "load".into(),
            });
        }
        self.counts = self.buffers.upload(queue, model, &self.config)?;
        self.layout = crate::layout::thread_layout(model);
        self.block_count = self.loaded_blocks(model);
        Ok(())
    }

    fn loaded_blocks(&self, model: &TraceModel) -> u32 {
        if self.config.block_lod {
            blocks::block_count(model)
        } else {
            0
        }
    }

    /// The spans as an opaque, read-only GPUScene over the frame's record buffer (with
    /// [`TraceFrameConfig::scene_records`]): `count = active_count =` loaded spans. Records
    /// are rewritten by every [`Self::encode`].
    pub fn scene(&self) -> Option<&GpuScene> {
        self.scene.as_ref()
    }

    /// The compiled sizes.
    pub fn config(&self) -> TraceFrameConfig {
        self.config
    }
    /// The frame's buffers (outputs are `COPY_SRC`).
    pub fn buffers(&self) -> &FrameBuffers {
        &self.buffers
    }
    /// The frame graph the last written view encodes (statistics, node order, its device
    /// cache): with the focus traversals when the view has focus, without them otherwise.
    pub fn frame_graph_compiled(&self) -> &CompiledGraph {
        if self.focused.load(std::sync::atomic::Ordering::Relaxed) {
            &self.frame
        } else {
            &self.unfocused
        }
    }
    /// Pipelines the device cache has created so far (compile count: it does not move when
    /// only the view changes).
    pub fn pipelines_created(&self) -> u64 {
        self.frame.cache().stats().pipelines_created
    }

    /// Records the CSR build into `encoder` (after a load).
    pub fn encode_build(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<(), TraceGpuError> {
        self.build.encode(encoder, &EncodeOptions::default())?;
        Ok(())
    }

    /// Records one frame of the last written view into `encoder`.
    pub fn encode(&mut self, encoder: &mut wgpu::CommandEncoder) -> Result<(), TraceGpuError> {
        self.active_graph()
            .encode(encoder, &EncodeOptions::default())?;
        Ok(())
    }

    /// [`Self::encode`] with a timestamp pass around every node (needs `TIMESTAMP_QUERY`);
    /// after submitting, [`Self::read_timings`] gives each node's GPU time.
    pub fn encode_profiled(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<(), TraceGpuError> {
        let options = EncodeOptions {
            profile: true,
            ..Default::default()
        };
        self.active_graph().encode(encoder, &options)?;
        Ok(())
    }

    /// The node timings of the last [`Self::encode_profiled`], in execution order. A
    /// readback: blocks until the GPU finished (native only in practice).
    pub fn read_timings(
        &mut self,
        queue: &wgpu::Queue,
    ) -> Result<Vec<gpugraph_command::NodeTiming>, TraceGpuError> {
        Ok(self.active_graph().read_timings(queue)?)
    }

    fn active_graph(&mut self) -> &mut CompiledGraph {
        if *self.focused.get_mut() {
            &mut self.frame
        } else {
            &mut self.unfocused
        }
    }

    /// Writes `view` into the state buffers (queue writes of a few hundred bytes plus one
    /// word per process and thread). Fails when the focus asks for more seeds or hops than
    /// compiled; nothing is written then.
    pub fn write_view(&self, queue: &wgpu::Queue, view: &TraceView) -> Result<(), TraceGpuError> {
        let c = &self.config;
        let (spans, deps, threads, processes) = self.counts;
        let cap = |what, needed: u64, capacity: u32| {
            if needed > u64::from(capacity) {
                Err(TraceGpuError::Capacity {
                    workflow: WORKFLOW,
                    id: "trace".into(),
                    what,
                    needed,
                    capacity: u64::from(capacity),
                })
            } else {
                Ok(())
            }
        };
        if let Some(f) = &view.focus {
            cap("focus seeds", f.seeds.len() as u64, c.max_seeds)?;
            cap("focus hops", u64::from(f.hops), c.max_hops)?;
        }
        let (pick_mode, pick_target, pick_time) = match view.pick {
            None => (0, 0, 0),
            Some(Pick::Row { time, row }) => (1, row, time),
            Some(Pick::Thread { time, thread }) => (2, thread, time),
        };
        let params = FrameParams {
            span_count: spans,
            dependency_count: deps,
            thread_count: threads,
            focus: u32::from(view.focus.is_some()),
            window_start: split(view.window.0),
            window_end: split(view.window.1),
            min_duration: split(view.min_duration),
            max_duration: split(view.max_duration),
            groups: view.groups,
            name: view.name_word(),
            pick_mode,
            pick_target,
            pick_time: split(pick_time),
            row_first: view.rows.map_or(0, |r| r.0),
            row_count: view.rows.map_or_else(
                || {
                    crate::layout::thread_rows_of(&self.layout, view)
                        .last()
                        .map_or(0, |&(h, r)| r + h)
                },
                |r| r.1,
            ),
            max_ancestor_depth: c.max_ancestor_depth,
            plain: u32::from(c.block_lod && view.is_plain()),
            block_count: self.block_count,
            pad: 0,
        };
        let b = &self.buffers;
        queue.write_buffer(&b.params, 0, bytemuck::bytes_of(&params));
        let flags = |n: u32, set: &std::collections::BTreeSet<u32>| -> Vec<u32> {
            (0..n.max(1)).map(|i| u32::from(set.contains(&i))).collect()
        };
        queue.write_buffer(
            &b.process_collapsed,
            0,
            bytemuck::cast_slice(&flags(processes, &view.collapsed_processes)),
        );
        queue.write_buffer(
            &b.thread_collapsed,
            0,
            bytemuck::cast_slice(&flags(threads, &view.collapsed_threads)),
        );
        let (seeds, fwd, rev) = match &view.focus {
            None => (Vec::new(), 0, 0),
            Some(f) => {
                let (a, r) = match f.direction {
                    FocusDirection::Forward => (f.hops, 0),
                    FocusDirection::Backward => (0, f.hops),
                    FocusDirection::Both => (f.hops, f.hops),
                };
                (f.seeds.clone(), a, r)
            }
        };
        // [seed count, forward depth, reverse depth], then the seeds.
        queue.write_buffer(
            &b.focus_state,
            0,
            bytemuck::cast_slice(&[seeds.len() as u32, fwd, rev]),
        );
        if !seeds.is_empty() {
            queue.write_buffer(&b.seeds, 0, bytemuck::cast_slice(&seeds));
        }
        self.focused
            .store(view.focus.is_some(), std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    fn build_graph(
        device: &wgpu::Device,
        b: &FrameBuffers,
        c: &TraceFrameConfig,
    ) -> Result<CompiledGraph, TraceGpuError> {
        let mut g = CommandGraph::new("trace-build", device);
        let (s, m) = (u64::from(c.span_capacity), u64::from(c.dependency_capacity));
        let deps = import(&mut g, "deps", &b.dependencies, 4 * m)?.1;
        let views = |g: &mut CommandGraph, o: &wgpu::Buffer, nb: &wgpu::Buffer, dir: &str| {
            Ok::<_, TraceGpuError>(CsrViews {
                offsets: import(g, &format!("{dir}-offsets"), o, s + 1)?.1,
                neighbors: import(g, &format!("{dir}-neighbors"), nb, m)?.1,
            })
        };
        let forward = views(&mut g, &b.forward_offsets, &b.forward_neighbors, "forward")?;
        let reverse = views(&mut g, &b.reverse_offsets, &b.reverse_neighbors, "reverse")?;
        DependencyCsr {
            id: "csr".into(),
            dependencies: deps,
            spans: c.span_capacity,
            forward,
            reverse,
        }
        .add_to_graph(&mut g)?;
        if c.block_lod {
            blocks::add_build_blocks(&mut g, b, c)?;
        }
        Ok(g.compile()?)
    }

    fn frame_graph(
        device: &wgpu::Device,
        b: &FrameBuffers,
        c: &TraceFrameConfig,
        focus: bool,
    ) -> Result<CompiledGraph, TraceGpuError> {
        let id = if focus {
            "trace-frame"
        } else {
            "trace-frame-unfocused"
        };
        let mut g = CommandGraph::new(id, device);
        let (s, m) = (u64::from(c.span_capacity), u64::from(c.dependency_capacity));
        let (t, p) = (u64::from(c.thread_capacity), u64::from(c.process_capacity));
        let params = g.import_buffer_once("params", &b.params, b.params.usage())?;
        let v = |g: &mut CommandGraph, name: &str, buf: &wgpu::Buffer, rows: u64| {
            import(g, name, buf, rows).map(|x| x.1)
        };
        let thread_process = v(&mut g, "thread-process", &b.thread_process, t)?;
        let thread_lanes = v(&mut g, "thread-lanes", &b.thread_lanes, t)?;
        let process_first = v(&mut g, "process-first", &b.process_first, p)?;
        let process_collapsed = v(&mut g, "process-collapsed", &b.process_collapsed, p)?;
        let thread_collapsed = v(&mut g, "thread-collapsed", &b.thread_collapsed, t)?;
        let heights = v(&mut g, "heights", &b.heights, t)?;
        let thread_offsets = v(&mut g, "thread-offsets", &b.thread_offsets, t)?;
        let spans = v(&mut g, "spans", &b.spans, 8 * s)?;
        let parents = v(&mut g, "parents", &b.parents, s)?;
        let deps = v(&mut g, "deps", &b.dependencies, 4 * m)?;
        let csr = |g: &mut CommandGraph, o: &wgpu::Buffer, nb: &wgpu::Buffer, dir: &str| {
            Ok::<_, TraceGpuError>(CsrAdjacency {
                offsets: v(g, &format!("{dir}-offsets"), o, s + 1)?.into(),
                neighbors: v(g, &format!("{dir}-neighbors"), nb, m)?.into(),
            })
        };
        let forward = csr(&mut g, &b.forward_offsets, &b.forward_neighbors, "forward")?;
        let reverse = csr(&mut g, &b.reverse_offsets, &b.reverse_neighbors, "reverse")?;
        let (state_h, _) = import(&mut g, "focus-state", &b.focus_state, 3)?;
        let word = |g: &mut CommandGraph, k: u64| {
            g.create_data_view(
                state_h,
                gpugraph_command::DataViewDescriptor::packed(VectorFormat::Uint32, 1)
                    .at_offset(4 * k),
            )
        };
        let (seed_count, depth_fwd, depth_rev) =
            (word(&mut g, 0)?, word(&mut g, 1)?, word(&mut g, 2)?);
        let seeds = v(&mut g, "seeds", &b.seeds, u64::from(c.max_seeds))?;
        let seeds = g.with_live_count(seeds, seed_count)?;
        let focus_forward = v(&mut g, "focus-forward", &b.focus_forward, s)?;
        let focus_reverse = v(&mut g, "focus-reverse", &b.focus_reverse, s)?;
        let visible = v(&mut g, "visible", &b.visible, s)?;
        let rows = v(&mut g, "rows", &b.rows, s)?;
        let edge_flags = v(&mut g, "edge-flags", &b.edge_flags, m)?;
        let edge_ends = v(&mut g, "edge-ends", &b.edge_ends, 2 * m)?;
        let edge_ids = v(&mut g, "edge-ids", &b.edge_ids, m)?;
        let visible_ids = v(&mut g, "visible-ids", &b.visible_ids, s)?;
        let visible_edges = v(&mut g, "visible-edges", &b.visible_edges, m)?;
        let (counts_h, _) = import(&mut g, "draw-args", &b.draw_args, 8)?;
        let count = |g: &mut CommandGraph, k: u64| {
            g.create_data_view(
                counts_h,
                gpugraph_command::DataViewDescriptor::packed(VectorFormat::Uint32, 1)
                    .at_offset(4 * k),
            )
        };
        // The instanceCount words of the two indirect draw records.
        let (visible_count, edge_count) = (count(&mut g, 1)?, count(&mut g, 5)?);
        let pick = v(&mut g, "pick", &b.pick, 2)?;
        let pick_args = v(&mut g, "pick-args", &b.pick_args, 3)?;
        let spans_read = || Binding::read(7, spans);
        let thread_info = v(&mut g, "thread-info", &b.thread_info, 4 * t)?;
        let mode = v(&mut g, "live-total", &b.live_total, 3)?;

        let shader = ShaderSource::new("trace/frame", WGSL);
        let fp = || Binding::handle(0, params, Access::Uniform);
        let rows_of = |rows: u64| Grid::Rows {
            rows,
            rows_per_workgroup: WG,
        };
        let node = |g: &mut CommandGraph, entry: &str, bindings: Vec<Binding>, grid: Grid| {
            g.add_dispatch_node(DispatchNode::new(
                format!("frame/{entry}"),
                shader.clone(),
                entry,
                bindings,
                grid,
            ))
            .map_err(TraceGpuError::from)
        };
        // Layout: heights, then first rows by the gpgpu scan.
        node(
            &mut g,
            "thread_heights",
            vec![
                fp(),
                Binding::read(1, thread_process),
                Binding::read(2, thread_lanes),
                Binding::read(3, process_first),
                Binding::read(4, process_collapsed),
                Binding::read(5, thread_collapsed),
                Binding::read_write(6, heights),
            ],
            rows_of(t),
        )?;
        Scan {
            id: "frame/lane-offsets".into(),
            input: heights.into(),
            output: thread_offsets.into(),
            inclusive: false,
            segment_starts: None,
        }
        .add_to_graph(&mut g)?;
        // Focus: N hops each way from the seeds; the depth words pick the direction.
        let directions = [
            (TraversalDirection::Forward, depth_fwd, focus_forward),
            (TraversalDirection::Reverse, depth_rev, focus_reverse),
        ];
        for (dir, depth, mask) in directions.into_iter().filter(|_| focus) {
            GraphTraversal {
                id: format!("frame/focus-{dir:?}").to_lowercase(),
                forward: forward.clone(),
                reverse: Some(reverse.clone()),
                direction: dir,
                seeds,
                max_depth: c.max_hops,
                active_depth: Some(depth),
                mask: mask.into(),
                levels: None,
                status: None,
            }
            .add_to_graph(&mut g)?;
        }
        candidates::add_candidates(&mut g, b, c, &shader, visible_count)?;
        node(
            &mut g,
            "edge_projection",
            vec![
                fp(),
                Binding::read(13, deps),
                Binding::read(14, parents),
                Binding::read(17, visible),
                Binding::read_write(15, edge_flags),
                Binding::read_write(16, edge_ends),
                spans_read(),
                Binding::read(38, mode),
            ],
            rows_of(m),
        )?;
        Compaction {
            id: "frame/visible-edges".into(),
            values: edge_ids.into(),
            flags: edge_flags.into(),
            output: visible_edges.into(),
            count: edge_count,
            overflow: None,
        }
        .add_to_graph(&mut g)?;
        if c.block_lod {
            node(
                &mut g,
                "edge_rows",
                vec![
                    fp(),
                    Binding::read_write(16, edge_ends),
                    spans_read(),
                    Binding::read(31, thread_info),
                    Binding::read_write(12, rows),
                    Binding::read(38, mode),
                ],
                rows_of(m),
            )?;
        }
        let pick_bindings = || {
            vec![
                fp(),
                Binding::read(7, spans),
                Binding::read(17, visible),
                Binding::read(18, rows),
                Binding::read_write(19, pick),
                Binding::read(31, thread_info),
                Binding::read(38, mode),
            ]
        };
        let mut clear_bindings = pick_bindings();
        clear_bindings.push(Binding::read_write(20, pick_args));
        node(
            &mut g,
            "pick_clear",
            clear_bindings,
            Grid::Workgroups([1, 1, 1]),
        )?;
        node(
            &mut g,
            "pick_lane",
            pick_bindings(),
            Grid::Indirect(pick_args),
        )?;
        node(
            &mut g,
            "pick_span",
            pick_bindings(),
            Grid::Indirect(pick_args),
        )?;
        if let Some(texture) = &b.color {
            draw::add_draw(
                &mut g,
                texture,
                draw::DrawInputs {
                    params,
                    spans,
                    rows,
                    visible_ids,
                    visible_edges,
                    edge_ends,
                    draw_args: counts_h,
                },
            )?;
        }
        if let Some(records) = &b.scene_records {
            TraceSceneProjection {
                id: "frame/scene".into(),
                frame_params: params,
                spans,
                rows,
                records: v(&mut g, "scene-records", records, 32 * s)?,
                units_per_tick: 1e-3,
            }
            .add_to_graph(&mut g)?;
        }
        Ok(g.compile()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader() {
        crate::assert_params_layout::<FrameParams>(WGSL, "FrameParams", 24);
    }

    #[test]
    fn tiers() {
        assert_eq!(CapacityTier::for_spans(0), Some(CapacityTier::K250));
        assert_eq!(CapacityTier::for_spans(250_001), Some(CapacityTier::M1));
        assert_eq!(CapacityTier::for_spans(1 << 24), Some(CapacityTier::M16));
        assert_eq!(CapacityTier::for_spans((1 << 24) + 1), None);
    }
}
