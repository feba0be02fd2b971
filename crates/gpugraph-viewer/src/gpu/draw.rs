//! The span draw in the surface's format: two render pipelines (`vs_span` quads, `vs_edge`
//! lines) over the trace frame's buffers, drawn by `draw_indirect`. A one-thread compute
//! pass (`args.wgsl`) turns the frame's instanced indirect records into non-instanced ones
//! (six vertices per span, two per edge): the CPU never learns how many spans it draws, and
//! software rasterizers (SwiftShader in headless Chromium) avoid their per-instance cost.

use gpugraph_trace::frame::{span_draw_layouts, FrameBuffers};
use gpugraph_trace::NO_SPAN;

use crate::camera::{Camera, Rect};

const WGSL: &str = include_str!("spans.wgsl");
const ARGS_WGSL: &str = include_str!("args.wgsl");

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

/// Pipelines, uniform and bind group of the span draw.
pub struct SpanDraw {
    spans: wgpu::RenderPipeline,
    edges: wgpu::RenderPipeline,
    params: wgpu::Buffer,
    group: wgpu::BindGroup,
    args: wgpu::ComputePipeline,
    args_group: wgpu::BindGroup,
    draw_args: wgpu::Buffer,
}

impl SpanDraw {
    /// Builds the pipelines for `format` and binds `b`'s buffers.
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat, b: &FrameBuffers) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("viewer/spans"),
            source: wgpu::ShaderSource::Wgsl(WGSL.into()),
        });
        let (layout, pl) = span_draw_layouts(device, "viewer/spans");
        let pipeline = |entry: &str, topology| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(entry),
                layout: Some(&pl),
                vertex: wgpu::VertexState {
                    module: &module,
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
                    module: &module,
                    entry_point: Some("fs"),
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
            &b.visible_ids,
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
        let draw_args = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("viewer/draw-args"),
            size: 32,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
            mapped_at_creation: false,
        });
        let args_module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("viewer/args"),
            source: wgpu::ShaderSource::Wgsl(ARGS_WGSL.into()),
        });
        let args = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("viewer/args"),
            layout: None,
            module: &args_module,
            entry_point: Some("expand_args"),
            compilation_options: Default::default(),
            cache: None,
        });
        let args_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("viewer/args"),
            layout: &args.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: b.draw_args.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: draw_args.as_entire_binding(),
                },
            ],
        });
        Self {
            spans: pipeline("vs_span", wgpu::PrimitiveTopology::TriangleList),
            edges: pipeline("vs_edge", wgpu::PrimitiveTopology::LineList),
            params,
            group,
            args,
            args_group,
            draw_args,
        }
    }

    /// Records the pass that derives this frame's draw records from the trace frame's
    /// (after the frame graph, before [`Self::draw`]).
    pub fn encode_args(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("viewer/args"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.args);
        pass.set_bind_group(0, &self.args_group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }

    /// Writes this frame's parameters (visible to the next submission).
    pub fn write(&self, queue: &wgpu::Queue, params: &SpanParams) {
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(params));
    }

    /// Draws into `pass` inside `viewport` (physical px: x, y, width, height).
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>, viewport: [u32; 4]) {
        let [x, y, w, h] = viewport;
        if w == 0 || h == 0 {
            return;
        }
        pass.set_viewport(x as f32, y as f32, w as f32, h as f32, 0.0, 1.0);
        pass.set_scissor_rect(x, y, w, h);
        pass.set_bind_group(0, &self.group, &[]);
        pass.set_pipeline(&self.spans);
        pass.draw_indirect(&self.draw_args, 0);
        pass.set_pipeline(&self.edges);
        pass.draw_indirect(&self.draw_args, 16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader() {
        let module = naga::front::wgsl::parse_str(WGSL).expect("the WGSL parses");
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).expect("layout");
        let (h, _) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("Params"))
            .expect("Params");
        assert_eq!(layouter[h].size as usize, std::mem::size_of::<SpanParams>());
        for src in [WGSL, ARGS_WGSL] {
            let module = naga::front::wgsl::parse_str(src).expect("the WGSL parses");
            naga::valid::Validator::new(Default::default(), naga::valid::Capabilities::all())
                .validate(&module)
                .expect("the WGSL validates");
        }
    }
}
