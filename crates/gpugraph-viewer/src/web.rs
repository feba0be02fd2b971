//! The web shell (wasm32, WebGPU): a [`WebViewer`] over a canvas, driven by `web/viewer.js`
//! (events, the animation-frame loop, file open / drop / `?trace=`, the URL hash). Frames
//! are drawn on demand; readbacks arrive through the browser's promise callbacks and are
//! taken by [`WebViewer::poll`], never waited for.

use gpugraph_trace::{parse_chrome_trace, IngestOptions};
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::gpu::setup;
use crate::labels::LabelKind;
use crate::tooltip::{self, Tooltip};
use crate::{InputEvent, Viewer, ViewerError};

fn js(e: ViewerError) -> JsError {
    JsError::new(&e.to_string())
}

/// Panics go to the console as text (instead of a bare `unreachable`).
#[wasm_bindgen(start)]
pub fn init() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&JsValue::from_str(&format!(
            "gpugraph-viewer panicked: {info}"
        )));
    }));
}

/// The viewer of one canvas (see the module doc).
#[wasm_bindgen]
pub struct WebViewer {
    surface: wgpu::Surface<'static>,
    device: wgpu::Device,
    queue: wgpu::Queue,
    config: wgpu::SurfaceConfiguration,
    scale: f32,
    max_in_flight: Option<usize>,
    reuse_graph: bool,
    viewer: Option<Viewer>,
}

/// Creates the WebGPU device for `canvas` (fails with a readable message when the browser
/// has no WebGPU adapter).
#[wasm_bindgen]
pub async fn start(canvas: HtmlCanvasElement) -> Result<WebViewer, JsError> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::BROWSER_WEBGPU,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let (w, h) = (canvas.width().max(1), canvas.height().max(1));
    let surface = instance
        .create_surface(wgpu::SurfaceTarget::Canvas(canvas))
        .map_err(|e| JsError::new(&format!("WebGPU canvas surface: {e}")))?;
    let (adapter, device, queue) = setup::request_device(&instance, Some(&surface))
        .await
        .map_err(js)?;
    let caps = surface.get_capabilities(&adapter);
    let format = setup::pick_format(&caps)
        .ok_or_else(|| JsError::new("the canvas offers no texture format"))?;
    let config = wgpu::SurfaceConfiguration {
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        format,
        width: w,
        height: h,
        present_mode: wgpu::PresentMode::Fifo,
        desired_maximum_frame_latency: 2,
        alpha_mode: wgpu::CompositeAlphaMode::Auto,
        view_formats: vec![],
        color_space: wgpu::SurfaceColorSpace::Auto,
    };
    surface.configure(&device, &config);
    Ok(WebViewer {
        surface,
        device,
        queue,
        config,
        scale: 1.0,
        max_in_flight: Some(crate::gpu::MAX_FRAMES_IN_FLIGHT),
        reuse_graph: true,
        viewer: None,
    })
}

#[wasm_bindgen]
impl WebViewer {
    /// Parses a Chrome trace (`.json` text or gzip of it) and shows it (a new frame graph,
    /// compiled once). Fails with the parser's message, naming the byte offset.
    pub fn load_trace(&mut self, bytes: &[u8]) -> Result<(), JsError> {
        let model =
            parse_chrome_trace(bytes, IngestOptions::default()).map_err(|e| js(e.into()))?;
        match &mut self.viewer {
            Some(v) => v.load(model).map_err(js)?,
            None => {
                let v = self.viewer.insert(
                    Viewer::new(
                        self.device.clone(),
                        self.queue.clone(),
                        self.config.format,
                        model,
                        (self.config.width, self.config.height),
                        self.scale,
                    )
                    .map_err(js)?,
                );
                v.set_max_frames_in_flight(self.max_in_flight);
                v.set_reuse_graph(self.reuse_graph);
            }
        }
        Ok(())
    }

    /// Whether frames with unchanged graph inputs skip the graphs (default on; see
    /// [`Viewer::set_reuse_graph`]), for this and later traces.
    pub fn set_graph_reuse(&mut self, on: bool) {
        self.reuse_graph = on;
        if let Some(v) = &mut self.viewer {
            v.set_reuse_graph(on);
        }
    }

    /// Sets the frames-in-flight limit (`n` ≤ 0: none, what the viewer did before it; see
    /// [`crate::gpu::MAX_FRAMES_IN_FLIGHT`]), for this and later traces.
    pub fn set_frames_in_flight(&mut self, n: i32) {
        self.max_in_flight = usize::try_from(n).ok().filter(|&n| n > 0);
        if let Some(v) = &mut self.viewer {
            v.set_max_frames_in_flight(self.max_in_flight);
        }
    }

    /// The canvas is now `css_w × css_h` CSS px at `dpr` device px per CSS px.
    pub fn resize(&mut self, css_w: f32, css_h: f32, dpr: f32) {
        let dpr = dpr.max(0.1);
        let limit = self.device.limits().max_texture_dimension_2d;
        self.config.width = ((css_w * dpr).round() as u32).clamp(1, limit);
        self.config.height = ((css_h * dpr).round() as u32).clamp(1, limit);
        self.scale = dpr;
        self.surface.configure(&self.device, &self.config);
        if let Some(v) = &mut self.viewer {
            v.resize((self.config.width, self.config.height), dpr);
        }
    }

    fn event(&mut self, e: InputEvent) {
        if let Some(v) = &mut self.viewer {
            v.handle(e);
        }
    }
    /// A button went down at CSS px `(x, y)` (`button` as DOM `MouseEvent.button`).
    pub fn pointer_down(&mut self, x: f32, y: f32, button: i16) {
        self.event(InputEvent::PointerDown {
            x,
            y,
            primary: button == 0,
        });
    }
    /// The pointer moved.
    pub fn pointer_move(&mut self, x: f32, y: f32) {
        self.event(InputEvent::PointerMove { x, y });
    }
    /// A button went up (a click when nothing was dragged).
    pub fn pointer_up(&mut self, x: f32, y: f32, shift: bool) {
        self.event(InputEvent::PointerUp { x, y, shift });
    }
    /// The pointer left the canvas (the tooltip goes).
    pub fn pointer_leave(&mut self) {
        self.event(InputEvent::PointerLeave);
    }
    /// A wheel turn at `(x, y)` (DOM `deltaX`, `deltaY` in px).
    pub fn wheel(&mut self, x: f32, y: f32, dx: f32, dy: f32) {
        self.event(InputEvent::Wheel { x, y, dx, dy });
    }
    /// A key (DOM `KeyboardEvent.key`), through the key path the native shell shares
    /// ([`crate::input::Controller::key_name`]); returns whether the viewer used it.
    pub fn key(&mut self, name: &str) -> bool {
        self.viewer.as_mut().is_some_and(|v| v.key_name(name))
    }
    /// Sets the search filter; returns whether a name matched.
    pub fn set_search(&mut self, text: &str) -> bool {
        self.viewer.as_mut().is_some_and(|v| v.set_search(text))
    }
    /// Takes arrived readbacks (never waits); returns whether any arrived.
    pub fn poll(&mut self) -> bool {
        self.viewer.as_mut().is_some_and(|v| v.poll())
    }
    /// Whether a frame is due.
    pub fn needs_frame(&self) -> bool {
        self.viewer.as_ref().is_some_and(|v| v.needs_frame())
    }
    /// Draws a frame into the canvas when a trace is loaded; returns whether it drew.
    pub fn frame(&mut self) -> Result<bool, JsError> {
        let Some(v) = &mut self.viewer else {
            return Ok(false);
        };
        let frame = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(f)
            | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                self.surface.configure(&self.device, &self.config);
                return Ok(false);
            }
            other => return Err(JsError::new(&format!("no canvas texture: {other:?}"))),
        };
        let view = frame.texture.create_view(&Default::default());
        v.render(&view).map_err(js)?;
        self.queue.present(frame);
        Ok(true)
    }
    /// The state for tests and the page, as JSON: `{loaded, frames, completed, spans,
    /// visible, selected, hovered, tooltip, search, searchEdit, window, collapsed, focus,
    /// hops, frameMs, encodeMs, gpuMs, compiles, pipelines, pickPending, reused}`; `tooltip` is
    /// `null` or `{span, name, duration, durationText, lines}` (duration in ns).
    pub fn state_json(&self) -> String {
        let Some(v) = &self.viewer else {
            return r#"{"loaded":false}"#.to_string();
        };
        let s = v.stats();
        let st = v.state();
        let opt = |x: Option<u32>| x.map_or("null".to_string(), |x| x.to_string());
        let list = |it: &mut dyn Iterator<Item = u32>| {
            it.map(|x| x.to_string()).collect::<Vec<_>>().join(",")
        };
        format!(
            concat!(
                r#"{{"loaded":true,"frames":{},"completed":{},"spans":{},"visible":{},"#,
                r#""selected":{},"window":[{},{}],"collapsed":[{}],"focus":[{}],"hops":{},"#,
                r#""frameMs":{:.3},"encodeMs":{:.3},"gpuMs":{:.3},"compiles":{},"#,
                r#""pipelines":{},"pickPending":{},"hovered":{},"tooltip":{},"search":{},"#,
                r#""searchEdit":{},"reused":{}}}"#
            ),
            s.frames,
            s.completed,
            v.model().spans.len(),
            opt(s.visible),
            opt(st.selected),
            st.camera.start,
            st.camera.end,
            list(&mut st.collapsed_processes.iter().copied()),
            list(&mut st.focus_seeds.iter().copied()),
            st.hops,
            s.frame_ms,
            s.encode_ms,
            s.gpu_ms,
            v.compiles(),
            v.frame().pipelines_created(),
            v.pick_pending(),
            opt(st.hovered),
            v.tooltip().map_or("null".to_string(), |t| t.to_json()),
            tooltip::json_str(&st.search),
            st.search_edit
                .as_deref()
                .map_or("null".to_string(), tooltip::json_str),
            s.reused,
        )
    }
    /// The shareable view as a URL hash (without `#`).
    pub fn hash(&self) -> String {
        self.viewer
            .as_ref()
            .map_or(String::new(), |v| v.state().to_hash())
    }
    /// Applies a URL hash (see [`crate::state::ViewState::apply_hash`]).
    pub fn apply_hash(&mut self, hash: &str) -> Result<(), JsError> {
        let Some(v) = &mut self.viewer else {
            return Ok(());
        };
        let model = v.model().clone();
        v.state_mut().apply_hash(hash, &model).map_err(js)
    }
    /// Test hook: the CPU oracle's pick for a click at CSS px `(x, y)` (-1: none).
    pub fn oracle_pick(&self, x: f32, y: f32) -> f64 {
        self.viewer
            .as_ref()
            .and_then(|v| v.oracle_pick(x, y))
            .map_or(-1.0, f64::from)
    }
    /// Test hook: the facts of span `id` read from the model on the CPU (the tooltip's
    /// JSON shape; `null`: no such span).
    pub fn span_facts(&self, id: u32) -> String {
        self.viewer
            .as_ref()
            .and_then(|v| Tooltip::of(v.model(), id))
            .map_or("null".to_string(), |t| t.to_json())
    }
    /// Test hook: the CPU oracle's visible span count under the current view.
    pub fn oracle_visible(&self) -> f64 {
        self.viewer
            .as_ref()
            .map_or(-1.0, |v| v.oracle_visible() as f64)
    }
    /// Test hook: the centre `[x, y]` (CSS px) of process `p`'s label, when on screen.
    pub fn process_label_center(&self, p: u32) -> Option<Vec<f32>> {
        let (x, y) = self.viewer.as_ref()?.label_center(LabelKind::Process(p))?;
        Some(vec![x, y])
    }
    /// Test hook: a point `[x, y]` (CSS px) inside span `id`'s drawn box, when on screen.
    pub fn span_point(&self, id: u32) -> Option<Vec<f32>> {
        let (x, y) = self.viewer.as_ref()?.span_point(id)?;
        Some(vec![x, y])
    }
}
