//! The frame's picture: a render pass that draws the compacted visible spans (one instanced
//! quad each) and the drawn edges (one line each) through the two indirect records the
//! compactions fill ([`super::FrameBuffers::draw_args`]): the CPU never learns how many.
//! Colors: by name for ordinary spans, dark for instants, red for anomalies (the three
//! draw groups share one draw; see `draw.wgsl`).

use gpugraph_command::{
    render_fn, BufferHandle, ColorAttachment, ColorLoad, CommandGraph, DataView, DeviceCache,
    RenderPassNode, ResourceUse, TextureDescriptor, TextureHandle,
};

use crate::error::TraceGpuError;

/// The picture's format.
pub const TRACE_COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// What the draw reads.
pub(super) struct DrawInputs {
    pub params: BufferHandle,
    pub spans: DataView,
    pub rows: DataView,
    pub visible_ids: DataView,
    pub visible_edges: DataView,
    pub edge_ends: DataView,
    pub draw_args: BufferHandle,
}

/// Imports `texture` and adds the render pass `frame/draw` (cleared to white).
pub(super) fn add_draw(
    g: &mut CommandGraph,
    texture: &wgpu::Texture,
    d: DrawInputs,
) -> Result<TextureHandle, TraceGpuError> {
    let size = (texture.width(), texture.height());
    let target = g.import_texture(
        TextureDescriptor::new("trace/color", size, TRACE_COLOR_FORMAT, texture.usage()),
        texture,
    )?;
    let align = u64::from(g.device().limits().min_storage_buffer_offset_alignment);
    let uses = vec![
        ResourceUse::uniform(d.params),
        ResourceUse::storage_read(d.spans.buffer()),
        ResourceUse::storage_read(d.rows.buffer()),
        ResourceUse::storage_read(d.visible_ids.buffer()),
        ResourceUse::storage_read(d.visible_edges.buffer()),
        ResourceUse::storage_read(d.edge_ends.buffer()),
        ResourceUse::indirect(d.draw_args),
    ];
    g.add_render_pass_node(RenderPassNode {
        id: "frame/draw".into(),
        color: vec![ColorAttachment::new(
            target,
            ColorLoad::Clear(wgpu::Color::WHITE),
        )],
        depth_stencil: None,
        uses,
        depends_on: Vec::new(),
        compile: Box::new(move |cc| {
            let device = cc.device();
            let module = DeviceCache::for_device(device)
                .shader_module(&crate::shaders::shader("trace/draw", "frame/draw.wgsl"));
            let px = [
                ("PX_W", 2.0 / f64::from(size.0.max(1))),
                ("PX_H", 2.0 / f64::from(size.1.max(1))),
            ];
            let (layout, pl) = span_draw_layouts(device, "trace/draw");
            let pipeline = |entry: &str, topology| {
                device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                    label: Some(entry),
                    layout: Some(&pl),
                    vertex: wgpu::VertexState {
                        module: &module,
                        entry_point: Some(entry),
                        compilation_options: wgpu::PipelineCompilationOptions {
                            constants: &px,
                            ..Default::default()
                        },
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
                        targets: &[Some(TRACE_COLOR_FORMAT.into())],
                    }),
                    multiview_mask: None,
                    cache: None,
                })
            };
            let spans_p = pipeline("vs_span", wgpu::PrimitiveTopology::TriangleList);
            let edges_p = pipeline("vs_edge", wgpu::PrimitiveTopology::LineList);
            let views = [d.spans, d.rows, d.visible_ids, d.visible_edges, d.edge_ends];
            for v in &views {
                if v.aligned_range(align).element_offset != 0 {
                    return Err("trace draw views must start at an aligned offset".into());
                }
            }
            let mut entries = vec![wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(cc.binding(d.params)),
            }];
            for (k, v) in views.iter().enumerate() {
                entries.push(wgpu::BindGroupEntry {
                    binding: k as u32 + 1,
                    resource: wgpu::BindingResource::Buffer(
                        gpugraph_command::view_binding(cc.buffer(v.buffer()), v, align).0,
                    ),
                });
            }
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("trace/draw"),
                layout: &layout,
                entries: &entries,
            });
            let args = cc.buffer(d.draw_args).clone();
            Ok(render_fn(move |pass, _| {
                pass.set_bind_group(0, &group, &[]);
                pass.set_pipeline(&spans_p);
                pass.draw_indirect(&args, 0);
                pass.set_pipeline(&edges_p);
                pass.draw_indirect(&args, 16);
            }))
        }),
    })?;
    Ok(target)
}

/// The bind-group and pipeline layouts of a span draw: binding 0 a uniform, bindings 1–5
/// read-only storage buffers, all read by the vertex stage (the layout `draw.wgsl` and the
/// viewer's span shader share).
pub fn span_draw_layouts(
    device: &wgpu::Device,
    label: &str,
) -> (wgpu::BindGroupLayout, wgpu::PipelineLayout) {
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(label),
        entries: &(0..6)
            .map(|binding| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::VERTEX,
                ty: wgpu::BindingType::Buffer {
                    ty: if binding == 0 {
                        wgpu::BufferBindingType::Uniform
                    } else {
                        wgpu::BufferBindingType::Storage { read_only: true }
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect::<Vec<_>>(),
    });
    let pipeline = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(label),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    (layout, pipeline)
}
