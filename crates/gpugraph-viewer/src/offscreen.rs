//! Headless pictures of the viewer (native only: it waits for the GPU). [`render_offscreen`]
//! draws a trace into an RGBA texture through the very [`Viewer::render`] the window and the
//! web page use (the frame graph, the span LOD draw, egui's time axis, lane labels, focus
//! outlines and, when asked, the inspector), waits until the frame's readback has arrived
//! (a second frame is drawn when the first one's counts changed what the UI shows), and
//! reads the pixels back. `gpugraph trace render` writes them as a PNG.

use std::collections::BTreeSet;

use gpugraph_trace::{Focus, TraceModel};

use crate::camera::Camera;
use crate::labels;
use crate::{Viewer, ViewerError};

/// The picture's texture format (8-bit RGBA; egui writes sRGB-encoded colors into it, as
/// into any non-sRGB target, so the bytes are the picture's sRGB values).
pub const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// Row heights (logical px) [`OffscreenView::row_height`] `None` chooses from: all rows
/// fitted into the plot, but no taller than the viewer's default and no shorter than a
/// label's text.
pub const FIT_ROW_HEIGHT: (f32, f32) = (12.0, 18.0);

/// What to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct OffscreenView {
    /// Picture size, physical px.
    pub size: (u32, u32),
    /// Physical px per logical px (the UI's scale; 1 draws 11-px label text).
    pub scale: f32,
    /// Closed time window in ticks since the trace origin (`None`: the whole trace).
    pub window: Option<(u64, u64)>,
    /// Collapsed process indices.
    pub collapsed_processes: BTreeSet<u32>,
    /// Collapsed thread indices.
    pub collapsed_threads: BTreeSet<u32>,
    /// Dependency focus (seeds are outlined; any number of hops: the frame is compiled for
    /// at least as many).
    pub focus: Option<Focus>,
    /// Shortest span duration shown, ticks.
    pub min_duration: u64,
    /// Longest span duration shown, ticks.
    pub max_duration: u64,
    /// Draw the inspector panel at the right.
    pub inspector: bool,
    /// Height of a layout row, logical px (`None`: [`FIT_ROW_HEIGHT`]).
    pub row_height: Option<f32>,
}

impl Default for OffscreenView {
    fn default() -> Self {
        Self {
            size: (1600, 900),
            scale: 1.0,
            window: None,
            collapsed_processes: BTreeSet::new(),
            collapsed_threads: BTreeSet::new(),
            focus: None,
            min_duration: 0,
            max_duration: u64::MAX,
            inspector: false,
            row_height: None,
        }
    }
}

/// A drawn picture.
#[derive(Clone, Debug, PartialEq)]
pub struct OffscreenPicture {
    /// Width, px.
    pub width: u32,
    /// Height, px.
    pub height: u32,
    /// Rows of `width × 4` bytes, top first, RGBA (opaque).
    pub rgba: Vec<u8>,
    /// Visible spans of the frame (the GPU's count).
    pub visible_spans: u32,
    /// Dependency edges drawn (the GPU's count).
    pub edges: u32,
    /// The screen regions the picture was laid out with (logical px).
    pub regions: crate::camera::Regions,
    /// The row height used, logical px.
    pub row_height: f32,
}

impl OffscreenPicture {
    /// The pixel at `(x, y)` (physical px).
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let at = ((y * self.width + x) * 4) as usize;
        [
            self.rgba[at],
            self.rgba[at + 1],
            self.rgba[at + 2],
            self.rgba[at + 3],
        ]
    }
}

/// Draws `model` as `view` says on `device` (see the module doc). Blocks until the GPU has
/// finished. Fails on an empty or oversized picture, and where the viewer fails (capacity,
/// frame graph).
pub fn render_offscreen(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    model: TraceModel,
    view: &OffscreenView,
) -> Result<OffscreenPicture, ViewerError> {
    let (w, h) = view.size;
    let max = device.limits().max_texture_dimension_2d;
    if w == 0 || h == 0 || w > max || h > max {
        return Err(ViewerError::Surface(format!(
            "a {w}x{h} picture: each side must be within 1..={max}"
        )));
    }
    let hops = view.focus.as_ref().map_or(0, |f| f.hops);
    let scale = view.scale.max(0.1);
    let mut viewer = Viewer::with_max_hops(
        device.clone(),
        queue.clone(),
        OFFSCREEN_FORMAT,
        model,
        (w, h),
        scale,
        hops,
    )?;
    {
        let end = viewer.model().end;
        let s = viewer.state_mut();
        s.camera = Camera::fit(end);
        if let Some((t0, t1)) = view.window {
            s.camera.start = t0;
            s.camera.end = t1.max(t0 + 1);
        }
        s.collapsed_processes = view.collapsed_processes.clone();
        s.collapsed_threads = view.collapsed_threads.clone();
        if let Some(f) = &view.focus {
            s.focus_seeds = f.seeds.clone();
            s.hops = f.hops;
            s.direction = f.direction;
        }
        s.min_duration = view.min_duration;
        s.max_duration = view.max_duration;
        s.inspector = view.inspector;
    }
    let plot = viewer.regions().plot;
    let rows = labels::total_rows(viewer.model(), &viewer.state().trace_view(None)).max(1);
    let row_height = view
        .row_height
        .unwrap_or_else(|| (plot.h / rows as f32).clamp(FIT_ROW_HEIGHT.0, FIT_ROW_HEIGHT.1));
    viewer.state_mut().camera.row_height = row_height.max(1.0);

    let target = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("viewer/offscreen"),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: OFFSCREEN_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    let target_view = target.create_view(&Default::default());
    let wait = |what: &str| {
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| ViewerError::Surface(format!("waiting for the GPU ({what}): {e}")))
    };
    // Until the latest frame's counts are back and nothing the UI shows changed since.
    let mut settled = false;
    for _ in 0..8 {
        if viewer.needs_frame() {
            viewer.render(&target_view)?;
        }
        wait("the frame")?;
        viewer.poll();
        let s = viewer.stats();
        if !viewer.needs_frame() && s.frames > 0 && s.completed == s.frames {
            settled = true;
            break;
        }
    }
    let stats = viewer.stats().clone();
    let (Some(visible_spans), Some(edges), true) = (stats.visible, stats.edges, settled) else {
        return Err(ViewerError::Surface(
            "the frame's readback never arrived".into(),
        ));
    };

    // The pixels, rows padded to the copy alignment.
    let row =
        (w * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("viewer/offscreen-readback"),
        size: u64::from(row) * u64::from(h),
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&Default::default());
    enc.copy_texture_to_buffer(
        target.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &staging,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(row),
                rows_per_image: Some(h),
            },
        },
        target.size(),
    );
    queue.submit([enc.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    wait("the picture's readback")?;
    rx.recv()
        .map_err(|_| ViewerError::Surface("the picture's readback was dropped".into()))?
        .map_err(|e| ViewerError::Surface(format!("mapping the picture: {e}")))?;
    let mut rgba = Vec::with_capacity((w * h * 4) as usize);
    {
        let bytes = staging
            .get_mapped_range(..)
            .map_err(|e| ViewerError::Surface(format!("reading the picture: {e}")))?;
        for y in 0..h as usize {
            let at = y * row as usize;
            rgba.extend_from_slice(&bytes[at..at + (w * 4) as usize]);
        }
    }
    staging.unmap();
    let regions = viewer.regions();
    Ok(OffscreenPicture {
        width: w,
        height: h,
        rgba,
        visible_spans,
        edges,
        regions,
        row_height,
    })
}
