//! The native shell: a winit 0.30 window (X11; raw-window-handle 0.6) whose wgpu surface the
//! [`Viewer`] draws into. Input events become [`InputEvent`]s; frames are drawn on demand
//! (input, a readback arriving) and the readback ring is polled while results are pending.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gpugraph_trace::TraceModel;
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{Key as WinitKey, ModifiersState, NamedKey};
use winit::window::{Window, WindowId};

use crate::gpu::setup;
use crate::{InputEvent, Viewer, ViewerError};

struct Gpu {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    device: wgpu::Device,
    queue: wgpu::Queue,
    viewer: Viewer,
}

struct App {
    model: Option<TraceModel>,
    title: String,
    gpu: Option<Gpu>,
    error: Option<ViewerError>,
    cursor: (f32, f32),
    modifiers: ModifiersState,
}

impl App {
    fn open(&mut self, el: &ActiveEventLoop) -> Result<Gpu, ViewerError> {
        let model = self
            .model
            .take()
            .ok_or_else(|| ViewerError::Surface("the window was already opened".into()))?;
        let attrs = Window::default_attributes()
            .with_title(self.title.clone())
            .with_inner_size(winit::dpi::LogicalSize::new(1280.0, 760.0));
        let window = Arc::new(
            el.create_window(attrs)
                .map_err(|e| ViewerError::Surface(format!("creating the window: {e}")))?,
        );
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let surface = instance
            .create_surface(window.clone())
            .map_err(|e| ViewerError::Surface(format!("creating the surface: {e}")))?;
        let (adapter, device, queue) =
            pollster::block_on(setup::request_device(&instance, Some(&surface)))?;
        let caps = surface.get_capabilities(&adapter);
        let format = setup::pick_format(&caps)
            .ok_or_else(|| ViewerError::Surface("the surface offers no format".into()))?;
        let size = window.inner_size();
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            width: size.width.max(1),
            height: size.height.max(1),
            present_mode: wgpu::PresentMode::AutoVsync,
            desired_maximum_frame_latency: 2,
            alpha_mode: caps.alpha_modes[0],
            view_formats: vec![],
            color_space: wgpu::SurfaceColorSpace::Auto,
        };
        surface.configure(&device, &config);
        let viewer = Viewer::new(
            device.clone(),
            queue.clone(),
            format,
            model,
            (config.width, config.height),
            window.scale_factor() as f32,
        )?;
        Ok(Gpu {
            window,
            surface,
            config,
            device,
            queue,
            viewer,
        })
    }

    fn fail(&mut self, el: &ActiveEventLoop, e: ViewerError) {
        self.error = Some(e);
        el.exit();
    }
}

impl Gpu {
    fn redraw(&mut self) -> Result<(), ViewerError> {
        let frame = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(f)
            | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                self.surface.configure(&self.device, &self.config);
                return Ok(());
            }
            other => {
                return Err(ViewerError::Surface(format!(
                    "no surface texture: {other:?}"
                )))
            }
        };
        let view = frame.texture.create_view(&Default::default());
        self.viewer.render(&view)?;
        self.window.pre_present_notify();
        self.queue.present(frame);
        Ok(())
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, el: &ActiveEventLoop) {
        if self.gpu.is_some() || self.error.is_some() {
            return;
        }
        match self.open(el) {
            Ok(g) => {
                g.window.request_redraw();
                self.gpu = Some(g);
            }
            Err(e) => self.fail(el, e),
        }
    }

    fn window_event(&mut self, el: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let Some(g) = self.gpu.as_mut() else { return };
        let scale = g.window.scale_factor() as f32;
        let input = match event {
            WindowEvent::CloseRequested => {
                el.exit();
                return;
            }
            WindowEvent::Resized(size) => {
                g.config.width = size.width.max(1);
                g.config.height = size.height.max(1);
                g.surface.configure(&g.device, &g.config);
                g.viewer.resize((g.config.width, g.config.height), scale);
                None
            }
            WindowEvent::ModifiersChanged(m) => {
                self.modifiers = m.state();
                None
            }
            WindowEvent::CursorMoved { position, .. } => {
                self.cursor = (position.x as f32 / scale, position.y as f32 / scale);
                Some(InputEvent::PointerMove {
                    x: self.cursor.0,
                    y: self.cursor.1,
                })
            }
            WindowEvent::CursorLeft { .. } => Some(InputEvent::PointerLeave),
            WindowEvent::MouseInput { state, button, .. } => {
                let (x, y) = self.cursor;
                match state {
                    ElementState::Pressed => Some(InputEvent::PointerDown {
                        x,
                        y,
                        primary: button == MouseButton::Left,
                    }),
                    ElementState::Released if button == MouseButton::Left => {
                        Some(InputEvent::PointerUp {
                            x,
                            y,
                            shift: self.modifiers.shift_key(),
                        })
                    }
                    ElementState::Released => None,
                }
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let (dx, dy) = match delta {
                    MouseScrollDelta::LineDelta(x, y) => (-x * 40.0, -y * 40.0),
                    MouseScrollDelta::PixelDelta(p) => (-p.x as f32, -p.y as f32),
                };
                Some(InputEvent::Wheel {
                    x: self.cursor.0,
                    y: self.cursor.1,
                    dx,
                    dy,
                })
            }
            WindowEvent::KeyboardInput { event, .. } if event.state.is_pressed() => {
                // The DOM's key names, so both shells share one key path (search prompt
                // included: a space types a space).
                let name = match &event.logical_key {
                    WinitKey::Named(NamedKey::Escape) => Some("Escape"),
                    WinitKey::Named(NamedKey::Enter) => Some("Enter"),
                    WinitKey::Named(NamedKey::Backspace) => Some("Backspace"),
                    WinitKey::Named(NamedKey::Space) => Some(" "),
                    WinitKey::Character(c) => Some(c.as_str()),
                    _ => None,
                };
                if let Some(name) = name {
                    g.viewer.key_name(name);
                }
                None
            }
            WindowEvent::RedrawRequested => {
                if let Err(e) = g.redraw() {
                    self.error = Some(e);
                    el.exit();
                    return;
                }
                None
            }
            _ => None,
        };
        if let Some(e) = input {
            g.viewer.handle(e);
        }
        if g.viewer.needs_frame() {
            g.window.request_redraw();
        }
    }

    fn about_to_wait(&mut self, el: &ActiveEventLoop) {
        let Some(g) = self.gpu.as_mut() else { return };
        if g.viewer.poll() || g.viewer.needs_frame() {
            g.window.request_redraw();
        }
        // While results are in flight, wake up to collect them; otherwise sleep.
        if g.viewer.pick_pending() || g.viewer.stats().completed < g.viewer.stats().frames {
            el.set_control_flow(ControlFlow::WaitUntil(
                Instant::now() + Duration::from_millis(8),
            ));
        } else {
            el.set_control_flow(ControlFlow::Wait);
        }
    }
}

/// Opens a window titled `title` showing `model` and runs until it is closed.
pub fn run_window(model: TraceModel, title: &str) -> Result<(), ViewerError> {
    let el = EventLoop::new()
        .map_err(|e| ViewerError::Surface(format!("no event loop (no display?): {e}")))?;
    let mut app = App {
        model: Some(model),
        title: title.to_string(),
        gpu: None,
        error: None,
        cursor: (0.0, 0.0),
        modifiers: ModifiersState::default(),
    };
    el.run_app(&mut app)
        .map_err(|e| ViewerError::Surface(format!("event loop: {e}")))?;
    app.error.map_or(Ok(()), Err)
}
