//! The span draw in the surface's format: the trace's [`SpanLod`] graph splits the frame's
//! visible spans into quads (wide enough to see, or selected) and a row × pixel-column bitmap
//! of the narrower ones; three render pipelines draw the bitmap (`vs_dense`, one quad), the
//! quads (`vs_span`) and the dependency lines (`vs_edge`), the last two by `draw_indirect`
//! from the non-instanced records the LOD graph writes (six vertices per span, two per edge):
//! the CPU never learns how many spans it draws, and software rasterizers (SwiftShader in
//! headless Chromium) avoid their per-instance cost. Zoomed out over a million spans, the
//! quads drop from every visible span to the few that are wider than a pixel and a half.

use gpugraph_command::{DeviceCache, ShaderRegistry, ShaderSource};
use gpugraph_trace::frame::{span_draw_layouts, FrameBuffers};
use gpugraph_trace::lod::{LodConfig, LodParams, SpanLod};
use gpugraph_trace::NO_SPAN;

use crate::camera::{Camera, Rect};
use crate::ViewerError;

/// The viewer's WGSL files, by path under `src/`, for [`ShaderSource`] recipes.
static WGSL: ShaderRegistry = ShaderRegistry::new(
    "gpugraph-viewer",
    &[
        ("gpu/spans.wgsl", include_str!("spans.wgsl")),
        ("gpu/dense.wgsl", include_str!("dense.wgsl")),
    ],
);

/// The quads' and edges' shader.
fn spans_shader() -> ShaderSource {
    ShaderSource::from_registry(&WGSL, "gpu/spans.wgsl").keyed("viewer/spans")
}

/// The bitmap quad's shader: `dense.wgsl`, which includes the LOD's parameter struct from the
/// trace crate's registry.
fn dense_shader() -> ShaderSource {
    ShaderSource::from_registry(&WGSL, "gpu/dense.wgsl")
        .registry(&gpugraph_trace::shaders::WGSL)
        .keyed("viewer/dense")
}

/// `View` in dense.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
struct DenseView {
    row_scroll: f32,
    rows_in_view: f32,
    plot_h_px: f32,
    pad: f32,
}

/// `Params` in spans.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SpanParams {
    /// Window start (lo, hi).
    pub window_start: [u32; 2],
    /// Window width, ticks.
    pub window_width: f32,
    /// Row at the top of the plot.
    pub row_scroll: f32,
    /// Rows the plot holds.
    pub rows_in_view: f32,
    /// The selected span or `NO_SPAN`.
    pub selected: u32,
    /// One physical pixel in NDC, x.
    pub px_w: f32,
    /// One physical pixel in NDC, y.
    pub px_h: f32,
}

impl SpanParams {
    /// The parameters of `camera` over `plot` (logical px) at `scale` physical px per
    /// logical px.
    pub fn of(camera: &Camera, plot: Rect, scale: f32, selected: Option<u32>) -> Self {
        Self {
            window_start: [camera.start as u32, (camera.start >> 32) as u32],
            window_width: camera.width() as f32,
            row_scroll: camera.row_scroll,
            rows_in_view: plot.h / camera.row_height,
            selected: selected.unwrap_or(NO_SPAN),
            px_w: 2.0 / (plot.w * scale).max(1.0),
            px_h: 2.0 / (plot.h * scale).max(1.0),
        }
    }
}

/// The LOD parameters of `camera` over `plot` (logical px) at `scale` physical px per
/// logical px.
pub fn lod_params(
    config: &LodConfig,
    camera: &Camera,
    plot: Rect,
    scale: f32,
    selected: Option<u32>,
) -> LodParams {
    LodParams::new(
        config,
        camera.start,
        camera.width().round().max(1.0) as u64,
        (plot.w * scale).round().max(0.0) as u32,
        camera.row_scroll,
        plot.h / camera.row_height,
        selected,
    )
}

/// Pipelines, uniforms, bind groups and the LOD graph of the span draw.
pub struct SpanDraw {
    spans: wgpu::RenderPipeline,
    edges: wgpu::RenderPipeline,
    dense: wgpu::RenderPipeline,
    params: wgpu::Buffer,
    dense_view: wgpu::Buffer,
    group: wgpu::BindGroup,
    dense_group: wgpu::BindGroup,
    lod: SpanLod,
}

impl SpanDraw {
    /// Builds the LOD graph over `b` and the pipelines for `format`.
    pub fn new(
        device: &wgpu::Device,
        format: wgpu::TextureFormat,
        b: &FrameBuffers,
    ) -> Result<Self, ViewerError> {
        let lod = SpanLod::new(device, b, LodConfig::default())?;
        let cache = DeviceCache::for_device(device);
        let module = cache.shader_module(&spans_shader());
        let (layout, pl) = span_draw_layouts(device, "viewer/spans");
        let dense_module = cache.shader_module(&dense_shader());
        let pipeline = |module: &wgpu::ShaderModule,
                        layout: Option<&wgpu::PipelineLayout>,
                        (entry, fs): (&str, &str),
                        topology| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(entry),
                layout,
                vertex: wgpu::VertexState {
                    module,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    buffers: &[],
                },
                primitive: wgpu::PrimitiveState {
                    topology,
                    ..Default::default()
                },
                depth_stencil: None,
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &[Some(format.into())],
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("viewer/span-params"),
            size: std::mem::size_of::<SpanParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let buffers = [
            &params,
            &b.spans,
            &b.rows,
            lod.wide_ids(),
            &b.visible_edges,
            &b.edge_ends,
        ];
        let entries: Vec<_> = buffers
            .iter()
            .enumerate()
            .map(|(k, buf)| wgpu::BindGroupEntry {
                binding: k as u32,
                resource: buf.as_entire_binding(),
            })
            .collect();
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("viewer/spans"),
            layout: &layout,
            entries: &entries,
        });
        let dense = pipeline(
            &dense_module,
            None,
            ("vs_dense", "fs_dense"),
            wgpu::PrimitiveTopology::TriangleList,
        );
        let dense_view = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("viewer/dense-view"),
            size: std::mem::size_of::<DenseView>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let dense_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("viewer/dense"),
            layout: &dense.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: lod.params().as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: dense_view.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: lod.occupancy().as_entire_binding(),
                },
            ],
        });
        Ok(Self {
            spans: pipeline(
                &module,
                Some(&pl),
                ("vs_span", "fs"),
                wgpu::PrimitiveTopology::TriangleList,
            ),
            edges: pipeline(
                &module,
                Some(&pl),
                ("vs_edge", "fs"),
                wgpu::PrimitiveTopology::LineList,
            ),
            dense,
            params,
            dense_view,
            group,
            dense_group,
            lod,
        })
    }

    /// The LOD's compiled sizes (for [`lod_params`]).
    pub fn lod_config(&self) -> LodConfig {
        self.lod.config()
    }

    /// The LOD graph (its node order for the inspector).
    pub fn lod(&self) -> &SpanLod {
        &self.lod
    }

    /// The LOD graph, mutably (to encode it alone, e.g. for timings).
    pub fn lod_mut(&mut self) -> &mut SpanLod {
        &mut self.lod
    }

    /// Records the LOD graph, which derives this frame's quads, bitmap and draw records
    /// from the trace frame's (after the frame graph, before [`Self::draw`]).
    pub fn encode(&mut self, encoder: &mut wgpu::CommandEncoder) -> Result<(), ViewerError> {
        Ok(self.lod.encode(encoder)?)
    }

    /// Writes this frame's parameters (visible to the next submission); `plot_h_px` is the
    /// plot's height in physical px.
    pub fn write(&self, queue: &wgpu::Queue, params: &SpanParams, lod: &LodParams, plot_h_px: f32) {
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(params));
        self.lod.write(queue, lod);
        let view = DenseView {
            row_scroll: params.row_scroll,
            rows_in_view: params.rows_in_view,
            plot_h_px,
            pad: 0.0,
        };
        queue.write_buffer(&self.dense_view, 0, bytemuck::bytes_of(&view));
    }

    /// Draws into `pass` inside `viewport` (physical px: x, y, width, height).
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>, viewport: [u32; 4]) {
        let [x, y, w, h] = viewport;
        if w == 0 || h == 0 {
            return;
        }
        pass.set_viewport(x as f32, y as f32, w as f32, h as f32, 0.0, 1.0);
        pass.set_scissor_rect(x, y, w, h);
        pass.set_pipeline(&self.dense);
        pass.set_bind_group(0, &self.dense_group, &[]);
        pass.draw(0..6, 0..1);
        pass.set_bind_group(0, &self.group, &[]);
        pass.set_pipeline(&self.spans);
        pass.draw_indirect(self.lod.draw_args(), 0);
        pass.set_pipeline(&self.edges);
        pass.draw_indirect(self.lod.draw_args(), 16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader() {
        let module =
            naga::front::wgsl::parse_str(&spans_shader().build()).expect("the WGSL parses");
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).expect("layout");
        let (h, _) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("Params"))
            .expect("Params");
        assert_eq!(layouter[h].size as usize, std::mem::size_of::<SpanParams>());
        let dense = naga::front::wgsl::parse_str(&dense_shader().build()).expect("the WGSL parses");
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(dense.to_ctx()).expect("layout");
        for (name, size) in [
            ("View", std::mem::size_of::<DenseView>()),
            ("LodParams", std::mem::size_of::<LodParams>()),
        ] {
            let (h, _) = dense
                .types
                .iter()
                .find(|(_, t)| t.name.as_deref() == Some(name))
                .expect(name);
            assert_eq!(layouter[h].size as usize, size, "{name}");
        }
        for src in [spans_shader().build(), dense_shader().build()] {
            let module = naga::front::wgsl::parse_str(&src).expect("the WGSL parses");
            naga::valid::Validator::new(Default::default(), naga::valid::Capabilities::all())
                .validate(&module)
                .expect("the WGSL validates");
        }
    }
}
