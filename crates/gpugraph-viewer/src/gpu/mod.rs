//! [`Viewer`]: the one wgpu code path both shells share. It owns the trace's
//! [`TraceFrame`] (compiled once per loaded trace), the span draw in the surface's format,
//! the egui renderer and the readback ring; every frame it writes the [`TraceView`] of the
//! current [`ViewState`] (queue writes only), encodes the frame graph, the span draw and the
//! UI into one command buffer, and submits. Visible counts and picks come back through the
//! ring, asynchronously.

// The oracle's answers for the checks (`Viewer::oracle_pick`), apart so that the frame path
// never imports the CPU oracle.
mod cpu;
pub mod draw;
pub mod readback;
pub mod setup;
pub mod ui;

use gpugraph_trace::frame::{TraceFrame, TraceFrameConfig};
use gpugraph_trace::lod::LodParams;
use gpugraph_trace::{TraceModel, TraceView};
use web_time::Instant;

use crate::camera::Regions;
use crate::input::{Controller, InputEvent, PickPurpose, PickRequest};
use crate::labels;
use crate::state::{ViewState, MAX_HOPS};
use crate::tooltip::Tooltip;
use crate::ViewerError;

use draw::{SpanDraw, SpanParams};
use readback::ReadbackRing;
use ui::InspectorInfo;

/// Readback slots (frames whose results may be in flight at once).
pub const READBACK_SLOTS: usize = 4;

/// Frames submitted but not finished on the GPU after which [`Viewer::needs_frame`] waits
/// (by default). A WebGPU canvas does not throttle submissions: on a slow adapter
/// (SwiftShader) frames queued behind each other make every input's result arrive several
/// frame times late, and frames beyond the readback slots are drawn without their counts.
/// Input keeps accumulating in the state meanwhile, so the next frame shows all of it.
pub const MAX_FRAMES_IN_FLIGHT: usize = 2;

/// Counters and timings of the frames so far (what the page exposes for tests).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameStats {
    /// Frames encoded and submitted.
    pub frames: u64,
    /// Serial of the last frame whose readback arrived (`frames` counts from 1).
    pub completed: u64,
    /// Visible spans in that frame.
    pub visible: Option<u32>,
    /// Drawn dependency edges in that frame.
    pub edges: Option<u32>,
    /// Mean wall time between frames (exponential average), ms.
    pub frame_ms: f64,
    /// CPU time of the last frame's encode and submit, ms.
    pub encode_ms: f64,
    /// Submission → readback of the last result, ms.
    pub gpu_ms: f64,
    /// Frames that ran neither the frame graph nor the LOD graph: their inputs (the trace
    /// view and the LOD parameters) equalled the previous frame's, so the previous results,
    /// still in their buffers, were drawn (a readback arriving, a tooltip, the inspector).
    pub reused: u64,
}

struct PendingPick {
    request: PickRequest,
    from_serial: u64,
}

/// The viewer (see the module doc).
pub struct Viewer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    format: wgpu::TextureFormat,
    model: TraceModel,
    frame: TraceFrame,
    spans: SpanDraw,
    egui: egui::Context,
    egui_renderer: egui_wgpu::Renderer,
    ring: ReadbackRing,
    state: ViewState,
    controller: Controller,
    physical: (u32, u32),
    pending: Option<PendingPick>,
    /// The latest hover pick waiting for the one in flight (one pick at a time; the
    /// latest pointer position wins).
    queued_hover: Option<PickRequest>,
    stats: FrameStats,
    compiles: u32,
    /// Focus hops the frame is compiled for.
    max_hops: u32,
    dirty: bool,
    /// The inputs of the last frame that ran the graphs (`None`: none since the load).
    graph_inputs: Option<(TraceView, LodParams)>,
    /// Whether a frame with the last inputs reuses the results ([`FrameStats::reused`]).
    reuse_graph: bool,
    /// See [`MAX_FRAMES_IN_FLIGHT`]; `None`: no limit.
    max_in_flight: Option<usize>,
    last_frame: Option<Instant>,
    started: Instant,
}

impl Viewer {
    /// A viewer of `model` drawing into `format` targets of `physical` px at `scale`
    /// physical px per logical px. Builds and compiles the trace frame (sized exactly for the
    /// model) and records its CSR build into the first frame.
    pub fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        format: wgpu::TextureFormat,
        model: TraceModel,
        physical: (u32, u32),
        scale: f32,
    ) -> Result<Self, ViewerError> {
        Self::with_max_hops(device, queue, format, model, physical, scale, MAX_HOPS)
    }

    /// [`Self::new`] with the frame compiled for `max_hops` focus hops (at least
    /// [`MAX_HOPS`]; views set programmatically, e.g. [`crate::offscreen`]'s, may ask for
    /// more than the keys reach).
    pub fn with_max_hops(
        device: wgpu::Device,
        queue: wgpu::Queue,
        format: wgpu::TextureFormat,
        model: TraceModel,
        physical: (u32, u32),
        scale: f32,
        max_hops: u32,
    ) -> Result<Self, ViewerError> {
        let max_hops = max_hops.max(MAX_HOPS);
        let mut frame = Self::build_frame(&device, &queue, &model, max_hops)?;
        let mut enc = device.create_command_encoder(&Default::default());
        frame.encode_build(&mut enc)?;
        queue.submit([enc.finish()]);
        let spans = SpanDraw::new(&device, format, frame.buffers())?;
        let egui_renderer = egui_wgpu::Renderer::new(&device, format, Default::default());
        let scale = scale.max(0.1);
        let state = ViewState::new(&model);
        Ok(Self {
            ring: ReadbackRing::new(&device, READBACK_SLOTS),
            controller: Controller::new(
                physical.0 as f32 / scale,
                physical.1 as f32 / scale,
                scale,
            ),
            physical,
            device,
            queue,
            format,
            model,
            frame,
            spans,
            egui: egui::Context::default(),
            egui_renderer,
            state,
            pending: None,
            queued_hover: None,
            stats: FrameStats::default(),
            compiles: 1,
            max_hops,
            dirty: true,
            graph_inputs: None,
            reuse_graph: true,
            max_in_flight: Some(MAX_FRAMES_IN_FLIGHT),
            last_frame: None,
            started: Instant::now(),
        })
    }

    fn build_frame(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        model: &TraceModel,
        max_hops: u32,
    ) -> Result<TraceFrame, ViewerError> {
        // No visible-ID compaction: the span LOD reads the frame's candidates and flags, so
        // a zoomed-in frame costs nothing proportional to the trace and a zoomed-out one a
        // pass over it less. Block summaries: a plain zoomed-out frame runs no per-span pass
        // (the LOD marks whole blocks; counts, picks and edges need no `visible`).
        let config = TraceFrameConfig {
            compact_visible: false,
            block_lod: true,
            ..TraceFrameConfig::exact(model, max_hops)
        };
        Ok(TraceFrame::new(device, queue, model, config)?)
    }

    /// Replaces the trace: a new frame compiled for `model`, the view reset.
    pub fn load(&mut self, model: TraceModel) -> Result<(), ViewerError> {
        let mut frame = Self::build_frame(&self.device, &self.queue, &model, self.max_hops)?;
        let mut enc = self.device.create_command_encoder(&Default::default());
        frame.encode_build(&mut enc)?;
        self.queue.submit([enc.finish()]);
        self.spans = SpanDraw::new(&self.device, self.format, frame.buffers())?;
        self.frame = frame;
        self.state = ViewState::new(&model);
        self.model = model;
        self.ring = ReadbackRing::new(&self.device, READBACK_SLOTS);
        self.pending = None;
        self.queued_hover = None;
        self.graph_inputs = None;
        self.stats.visible = None;
        self.stats.edges = None;
        self.compiles += 1;
        self.dirty = true;
        Ok(())
    }

    /// The loaded trace.
    pub fn model(&self) -> &TraceModel {
        &self.model
    }
    /// The interaction state.
    pub fn state(&self) -> &ViewState {
        &self.state
    }
    /// The interaction state, to change it directly (marks a redraw due).
    pub fn state_mut(&mut self) -> &mut ViewState {
        self.dirty = true;
        &mut self.state
    }
    /// The trace frame.
    pub fn frame(&self) -> &TraceFrame {
        &self.frame
    }
    /// The trace frame, mutably (to encode it alone, e.g. for timings).
    pub fn frame_mut(&mut self) -> &mut TraceFrame {
        &mut self.frame
    }
    /// The span LOD graph, mutably (to encode it alone, e.g. for timings; it reads the
    /// trace frame's outputs of the last frame graph).
    pub fn span_lod_mut(&mut self) -> &mut gpugraph_trace::lod::SpanLod {
        self.spans.lod_mut()
    }
    /// Counters and timings.
    pub fn stats(&self) -> &FrameStats {
        &self.stats
    }
    /// Frame graph compilations (one per loaded trace; never per frame).
    pub fn compiles(&self) -> u32 {
        self.compiles
    }
    /// The screen regions now.
    pub fn regions(&self) -> Regions {
        self.controller.regions(&self.state)
    }
    /// Whether a pick is waiting for its readback.
    pub fn pick_pending(&self) -> bool {
        self.pending.is_some()
    }
    /// Whether a frame is due: something changed since the last frame (input, a readback,
    /// a load), and fewer than the frames-in-flight limit are still on the GPU.
    pub fn needs_frame(&self) -> bool {
        (self.dirty || self.pending.is_some())
            && self.max_in_flight.is_none_or(|n| self.ring.in_flight() < n)
    }

    /// Whether frames whose graph inputs did not change skip the graphs (the default; off:
    /// every frame runs them, what the viewer did before, for measuring).
    pub fn set_reuse_graph(&mut self, on: bool) {
        self.reuse_graph = on;
    }

    /// Sets the frames-in-flight limit ([`MAX_FRAMES_IN_FLIGHT`] by default, at least 1,
    /// at most [`READBACK_SLOTS`]); `None` draws whenever something changed (what the
    /// viewer did before the limit: for measuring it).
    pub fn set_max_frames_in_flight(&mut self, n: Option<usize>) {
        self.max_in_flight = n.map(|n| n.clamp(1, READBACK_SLOTS));
    }

    /// The surface is now `physical` px at `scale` physical px per logical px.
    pub fn resize(&mut self, physical: (u32, u32), scale: f32) {
        self.physical = (physical.0.max(1), physical.1.max(1));
        let scale = scale.max(0.1);
        self.handle(InputEvent::Resize {
            width: self.physical.0 as f32 / scale,
            height: self.physical.1 as f32 / scale,
            scale,
        });
    }

    /// Applies an input event (see [`crate::input`]).
    pub fn handle(&mut self, event: InputEvent) {
        let (pick, changed) = self.controller.handle(event, &mut self.state, &self.model);
        if let Some(request) = pick {
            self.request_pick(request);
        }
        self.dirty |= changed;
    }

    /// A key by name, through the shared key path ([`Controller::key_name`]: the search
    /// prompt, then [`crate::Key`]); returns whether the viewer used it.
    pub fn key_name(&mut self, name: &str) -> bool {
        let used = self.controller.key_name(name, &mut self.state, &self.model);
        self.dirty |= used;
        used
    }

    /// Queues `request` as the next frame's pick. A hover never displaces a click's pick
    /// nor one a submitted frame already carries (else a moving pointer would restart it
    /// every frame and no answer would ever arrive): it waits for that answer instead.
    fn request_pick(&mut self, request: PickRequest) {
        let busy = self.pending.as_ref().is_some_and(|p| {
            p.request.purpose != PickPurpose::Hover || p.from_serial <= self.stats.frames
        });
        if request.purpose == PickPurpose::Hover && busy {
            self.queued_hover = Some(request);
            return;
        }
        // A click displacing a hover: the hover runs after it (unless a later one waits).
        if let Some(p) = self.pending.take() {
            if p.request.purpose == PickPurpose::Hover && request.purpose != PickPurpose::Hover {
                self.queued_hover.get_or_insert(p.request);
            }
        }
        self.pending = Some(PendingPick {
            request,
            from_serial: self.stats.frames + 1,
        });
    }

    /// The tooltip of the hovered span, when the pointer is over one.
    pub fn tooltip(&self) -> Option<Tooltip> {
        Tooltip::of(&self.model, self.state.hovered?)
    }

    /// Sets the search filter (see [`ViewState::set_search`]); returns whether a name
    /// matched.
    pub fn set_search(&mut self, text: &str) -> bool {
        self.dirty = true;
        self.state.set_search(&self.model, text)
    }

    /// Takes the readbacks that have arrived (never waits; on native targets it also lets
    /// wgpu run callbacks of finished work). Returns whether anything arrived.
    pub fn poll(&mut self) -> bool {
        #[cfg(not(target_arch = "wasm32"))]
        let _ = self.device.poll(wgpu::PollType::Poll);
        let results = self.ring.collect();
        let any = !results.is_empty();
        for r in results {
            if r.serial < self.stats.completed {
                continue;
            }
            // Redraw only when something shown changed (else every readback would draw a
            // frame that reads back again, forever).
            self.dirty |=
                self.stats.visible != Some(r.visible) || self.stats.edges != Some(r.edges);
            self.stats.completed = r.serial;
            self.stats.visible = Some(r.visible);
            self.stats.edges = Some(r.edges);
            self.stats.gpu_ms = r.latency_ms;
            if let Some(p) = &self.pending {
                if r.serial >= p.from_serial {
                    match p.request.purpose {
                        PickPurpose::ToggleSeed => {
                            if let Some(s) = r.picked {
                                self.state.toggle_seed(s);
                            }
                        }
                        PickPurpose::Select => self.state.selected = r.picked,
                        // The pointer may have left since: then no tooltip.
                        PickPurpose::Hover if self.controller.pointer().is_some() => {
                            self.state.hovered = r.picked
                        }
                        PickPurpose::Hover => {}
                    }
                    self.pending = None;
                    if let Some(request) = self.queued_hover.take() {
                        self.request_pick(request);
                    }
                    self.dirty = true;
                }
            }
        }
        any
    }

    /// The view the next frame writes.
    pub fn trace_view(&self) -> TraceView {
        self.state
            .trace_view(self.pending.as_ref().map(|p| p.request.pick))
    }

    /// Encodes and submits one frame into `target` (a view of a `physical`-sized texture of
    /// the viewer's format): the frame graph, the readback copies (when a slot is free), the
    /// span draw and the UI. Never waits for the GPU.
    pub fn render(&mut self, target: &wgpu::TextureView) -> Result<(), ViewerError> {
        self.poll();
        let t0 = Instant::now();
        if let Some(last) = self.last_frame {
            let dt = t0.duration_since(last).as_secs_f64() * 1e3;
            self.stats.frame_ms = if self.stats.frames <= 1 {
                dt
            } else {
                0.8 * self.stats.frame_ms + 0.2 * dt
            };
        }
        self.last_frame = Some(t0);
        let serial = self.stats.frames + 1;
        let regions = self.regions();
        let total = labels::total_rows(&self.model, &self.state.trace_view(None));
        self.state.camera.clamp_rows(total);
        let view = self.trace_view();
        self.frame.write_view(&self.queue, &view)?;
        let scale = self.controller.scale;
        let camera = &self.state.camera;
        let lod = draw::lod_params(
            &self.spans.lod_config(),
            camera,
            regions.plot,
            scale,
            self.state.selected,
        );
        self.spans.write(
            &self.queue,
            &SpanParams::of(camera, regions.plot, scale, self.state.selected),
            &lod,
            regions.plot.h * scale,
        );

        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("viewer/frame"),
            });
        let inputs = (view, lod);
        if self.reuse_graph && self.graph_inputs.as_ref() == Some(&inputs) {
            self.stats.reused += 1;
        } else {
            self.graph_inputs = None;
            self.frame.encode(&mut enc)?;
            self.spans.encode(&mut enc)?;
            self.graph_inputs = Some(inputs);
        }
        let slot = self.ring.record(&mut enc, self.frame.buffers(), serial);

        let info = InspectorInfo {
            nodes: self
                .frame
                .frame_graph_compiled()
                .node_order()
                .iter()
                .chain(self.spans.lod().graph().node_order())
                .cloned()
                .collect(),
            compiles: self.compiles,
            pipelines_created: self.frame.pipelines_created(),
            visible: self.stats.visible,
            edges: self.stats.edges,
            frames: serial,
            frame_ms: self.stats.frame_ms,
            encode_ms: self.stats.encode_ms,
            gpu_ms: self.stats.gpu_ms,
        };
        let (w, h) = self.controller.size;
        let mut input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(
                egui::Pos2::ZERO,
                egui::vec2(w, h),
            )),
            time: Some(self.started.elapsed().as_secs_f64()),
            ..Default::default()
        };
        input
            .viewports
            .entry(egui::ViewportId::ROOT)
            .or_default()
            .native_pixels_per_point = Some(scale);
        let (model, state) = (&self.model, &self.state);
        let pointer = self.controller.pointer();
        let output = self.egui.run_pass(input, |ctx| {
            ui::paint(ctx, model, state, &regions, &info, pointer);
        });
        let ppp = output.pixels_per_point;
        let prims = self.egui.tessellate(output.shapes, ppp);
        for (id, deltas) in &output.textures_delta.set {
            for delta in deltas {
                self.egui_renderer
                    .update_texture(&self.device, &self.queue, *id, delta);
            }
        }
        let screen = egui_wgpu::ScreenDescriptor {
            size_in_pixels: [self.physical.0, self.physical.1],
            pixels_per_point: ppp,
        };
        let extra =
            self.egui_renderer
                .update_buffers(&self.device, &self.queue, &mut enc, &prims, &screen);
        {
            let pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("viewer/draw"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: target,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::WHITE),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            let mut pass = pass.forget_lifetime();
            self.spans.draw(&mut pass, self.plot_viewport(&regions));
            pass.set_viewport(
                0.0,
                0.0,
                self.physical.0 as f32,
                self.physical.1 as f32,
                0.0,
                1.0,
            );
            pass.set_scissor_rect(0, 0, self.physical.0, self.physical.1);
            self.egui_renderer.render(&mut pass, &prims, &screen);
        }
        self.queue
            .submit(extra.into_iter().chain(std::iter::once(enc.finish())));
        if let Some(k) = slot {
            self.ring.map(k);
        }
        for id in &output.textures_delta.free {
            self.egui_renderer.free_texture(id);
        }
        self.stats.frames = serial;
        self.stats.encode_ms = t0.elapsed().as_secs_f64() * 1e3;
        // A frame without a readback slot is drawn again later, so the latest view's counts
        // and pick always come back.
        self.dirty = slot.is_none();
        Ok(())
    }

    /// The plot rectangle in physical px, clamped to the target.
    fn plot_viewport(&self, regions: &Regions) -> [u32; 4] {
        let s = self.controller.scale;
        let (pw, ph) = self.physical;
        let p = regions.plot;
        let x = ((p.x * s).round() as u32).min(pw);
        let y = ((p.y * s).round() as u32).min(ph);
        let w = ((p.w * s).round() as u32).min(pw - x);
        let h = ((p.h * s).round() as u32).min(ph - y);
        [x, y, w, h]
    }

    /// The centre of the label of `kind` (logical px), when it is on screen.
    pub fn label_center(&self, kind: labels::LabelKind) -> Option<(f32, f32)> {
        let r = self.regions();
        let ls = labels::labels(&self.model, &self.state.trace_view(None));
        let l = ls.iter().find(|l| l.kind == kind)?;
        let rect = labels::label_rect(l, &self.state.camera, r.labels, r.plot);
        let (x, y) = (rect.x + rect.w * 0.5, rect.y + rect.h * 0.5);
        r.labels.contains(x, y).then_some((x, y))
    }

    /// A point (logical px) in the middle of the on-screen part of span `id`'s box, when it
    /// is shown and on screen.
    pub fn span_point(&self, id: u32) -> Option<(f32, f32)> {
        let r = self.regions();
        let cam = &self.state.camera;
        let row = ui::span_row(&self.model, &self.state.trace_view(None), id)?;
        let s = self.model.spans.get(id as usize)?;
        let x0 = cam.x_of(r.plot, s.start()).max(r.plot.x);
        let x1 = cam.x_of(r.plot, s.end()).min(r.plot.right() - 1.0);
        let (x, y) = (
            (x0 + x1) * 0.5,
            cam.y_of_row(r.plot, row) + cam.row_height * 0.5,
        );
        (x1 >= x0 && r.plot.contains(x, y)).then_some((x, y))
    }
}
