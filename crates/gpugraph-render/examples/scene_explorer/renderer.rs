//! The explorer's renderer: application-owned pipelines, geometry and per-group materials,
//! recorded once into a render bundle that binds each resource group in order and issues the
//! indirect draws of its command window. GPU draw generation decides which of those draws
//! draw anything; the CPU never selects draws.

use gpugraph_command::{
    BufferHandle, ColorAttachment, CommandGraph, DepthStencilAttachment, RenderExecutable,
    RenderPassNode, ResourceUse,
};
use gpugraph_render::{DrawCommandBuffer, GpuSceneGroup, RenderError};
use wgpu::util::DeviceExt;

const WGSL: &str = concat!(
    include_str!("../../src/gpu_scene/record.wgsl"),
    include_str!("shader.wgsl")
);

/// Vertex: position, normal.
pub type Vertex = [[f32; 3]; 2];

/// What the render node draws with (all application-owned, immutable).
#[derive(Clone)]
pub struct SceneMeshes {
    pub vertices: Vec<Vertex>,
    pub indices: Vec<u32>,
    /// RGBA per group, in group order.
    pub colors: Vec<[f32; 4]>,
}

/// Adds a render pass node drawing `groups`' command windows of `commands`.
#[allow(clippy::too_many_arguments)]
pub fn add_scene_pass(
    graph: &mut CommandGraph,
    id: &str,
    color: ColorAttachment,
    depth: DepthStencilAttachment,
    camera: BufferHandle,
    records: BufferHandle,
    commands: &DrawCommandBuffer,
    command_handle: BufferHandle,
    groups: &[GpuSceneGroup],
    meshes: &SceneMeshes,
    pick: bool,
) -> Result<(), RenderError> {
    let color_format = graph.texture_descriptor(color.target.texture)?.format;
    let depth_format = graph.texture_descriptor(depth.target.texture)?.format;
    let groups = groups.to_vec();
    let meshes = meshes.clone();
    let commands = commands.clone();
    let node = id.to_string();
    graph.add_render_pass_node(RenderPassNode {
        id: id.into(),
        color: vec![color],
        depth_stencil: Some(depth),
        uses: vec![
            ResourceUse::uniform(camera),
            ResourceUse::storage_read(records),
            ResourceUse::indirect(command_handle),
        ],
        depends_on: Vec::new(),
        compile: Box::new(move |cc| {
            let device = cc.device();
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("scene explorer"),
                source: wgpu::ShaderSource::Wgsl(WGSL.into()),
            });
            let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(cc.node_id()),
                layout: None,
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some("vs"),
                    compilation_options: Default::default(),
                    buffers: &[Some(wgpu::VertexBufferLayout {
                        array_stride: 24,
                        step_mode: wgpu::VertexStepMode::Vertex,
                        attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3],
                    })],
                },
                primitive: Default::default(),
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: depth_format,
                    depth_write_enabled: Some(true),
                    depth_compare: Some(wgpu::CompareFunction::Less),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(if pick { "fs_pick" } else { "fs" }),
                    compilation_options: Default::default(),
                    targets: &[Some(color_format.into())],
                }),
                multiview_mask: None,
                cache: None,
            });
            let scene_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("scene"),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(cc.binding(camera)),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: cc.buffer(records).as_entire_binding(),
                    },
                ],
            });
            // One bind group per resource group: the binding topology the CPU keeps (the pick
            // pipeline reads no material: its layout has no group 1).
            let materials: Vec<wgpu::BindGroup> = groups
                .iter()
                .filter(|_| !pick)
                .enumerate()
                .map(|(g, _)| {
                    let color = meshes.colors.get(g).copied().unwrap_or([1.0; 4]);
                    let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("material"),
                        contents: bytemuck::cast_slice(&color),
                        usage: wgpu::BufferUsages::UNIFORM,
                    });
                    device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some("material"),
                        layout: &pipeline.get_bind_group_layout(1),
                        entries: &[wgpu::BindGroupEntry {
                            binding: 0,
                            resource: buffer.as_entire_binding(),
                        }],
                    })
                })
                .collect();
            let vertices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("vertices"),
                contents: bytemuck::cast_slice(&meshes.vertices),
                usage: wgpu::BufferUsages::VERTEX,
            });
            let indices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("indices"),
                contents: bytemuck::cast_slice(&meshes.indices),
                usage: wgpu::BufferUsages::INDEX,
            });
            let command_buffer = cc.buffer(command_handle).clone();
            let mut encoder =
                device.create_render_bundle_encoder(&wgpu::RenderBundleEncoderDescriptor {
                    label: Some(cc.node_id()),
                    color_formats: &[Some(color_format)],
                    depth_stencil: Some(wgpu::RenderBundleDepthStencil {
                        format: depth_format,
                        depth_read_only: false,
                        stencil_read_only: true,
                    }),
                    sample_count: 1,
                    multiview: None,
                });
            encoder.set_pipeline(&pipeline);
            encoder.set_bind_group(0, &scene_group, &[]);
            encoder.set_vertex_buffer(0, vertices.slice(..));
            encoder.set_index_buffer(indices.slice(..), wgpu::IndexFormat::Uint32);
            for (g, group) in groups.iter().enumerate() {
                if let Some(material) = materials.get(g) {
                    encoder.set_bind_group(1, material, &[]);
                }
                for c in group.first_command..group.first_command + group.command_count {
                    commands.encode(&mut encoder, &command_buffer, c)?;
                }
            }
            let bundle = encoder.finish(&wgpu::RenderBundleDescriptor {
                label: Some(cc.node_id()),
            });
            struct Replay(
                wgpu::RenderBundle,
                String,
                Vec<(BufferHandle, wgpu::Buffer)>,
            );
            impl RenderExecutable for Replay {
                fn encode(
                    &mut self,
                    pass: &mut wgpu::RenderPass<'_>,
                    ctx: &gpugraph_command::EncodeContext<'_>,
                ) -> Result<(), gpugraph_command::NodeError> {
                    for (h, b) in &self.2 {
                        if ctx.buffer(*h) != b {
                            return Err(Box::new(RenderError::BundleOverride {
                                node: self.1.clone(),
                                what: "scene buffers",
                            }));
                        }
                    }
                    pass.execute_bundles(std::iter::once(&self.0));
                    Ok(())
                }
            }
            let recorded = vec![
                (camera, cc.buffer(camera).clone()),
                (records, cc.buffer(records).clone()),
                (command_handle, command_buffer),
            ];
            Ok(Box::new(Replay(bundle, node.clone(), recorded)) as Box<dyn RenderExecutable>)
        }),
    })?;
    Ok(())
}
