//! The scene frame's render pass node: application-side pipelines, geometry and per-group
//! materials recorded once into a render bundle that, per layer, binds the layer's records and,
//! per group in order, the group's material, then issues the indirect draws of the group's
//! command window. GPU draw generation decides which of those draws draw anything; the CPU
//! never selects draws, and nothing is re-recorded per frame.

use gpugraph_command::{
    BufferHandle, ColorAttachment, CommandGraph, DepthStencilAttachment, EncodeContext, NodeError,
    RenderExecutable, RenderPassNode, ResourceUse,
};
use wgpu::util::DeviceExt;

use super::source::SceneVertex;
use super::{GpuSceneGroup, GPU_SCENE_RECORD_BYTES};
use crate::{DrawCommandBuffer, RenderError};

/// One layer as the pass draws it.
#[derive(Clone, Debug)]
pub(crate) struct DrawLayer {
    pub(crate) records: BufferHandle,
    pub(crate) record_offset: u64,
    pub(crate) capacity: u32,
    pub(crate) commands: DrawCommandBuffer,
    pub(crate) command_handle: BufferHandle,
    pub(crate) groups: Vec<GpuSceneGroup>,
    pub(crate) colors: Vec<[f32; 4]>,
}

/// Adds render pass node `id` drawing `layers` into `color` / `depth` (`pick`: object IDs
/// into an `Rg32Uint` target, no materials).
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_scene_pass(
    graph: &mut CommandGraph,
    id: &str,
    color: ColorAttachment,
    depth: DepthStencilAttachment,
    camera: BufferHandle,
    layers: &[DrawLayer],
    vertices: &[SceneVertex],
    indices: &[u32],
    pick: bool,
) -> Result<(), RenderError> {
    let color_format = graph.texture_descriptor(color.target.texture)?.format;
    let depth_format = graph.texture_descriptor(depth.target.texture)?.format;
    let layers = layers.to_vec();
    // An empty vertex or index buffer cannot be created: one degenerate vertex and index.
    let vertices: Vec<SceneVertex> = if vertices.is_empty() {
        vec![[[0.0; 3]; 2]]
    } else {
        vertices.to_vec()
    };
    let indices: Vec<u32> = if indices.is_empty() {
        vec![0]
    } else {
        indices.to_vec()
    };
    let mut uses = vec![ResourceUse::uniform(camera)];
    for l in &layers {
        for u in [
            ResourceUse::storage_read(l.records),
            ResourceUse::indirect(l.command_handle),
        ] {
            if !uses.contains(&u) {
                uses.push(u);
            }
        }
    }
    let node = id.to_string();
    graph.add_render_pass_node(RenderPassNode {
        id: id.into(),
        color: vec![color],
        depth_stencil: Some(depth),
        uses,
        depends_on: Vec::new(),
        compile: Box::new(move |cc| {
            let device = cc.device();
            let module = gpugraph_command::DeviceCache::for_device(device).shader_module(
                &crate::shaders::shader("gpu-scene frame", "gpu_scene/frame_draw.wgsl"),
            );
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
            let align = u64::from(device.limits().min_storage_buffer_offset_alignment);
            let camera_binding = cc.binding(camera);
            // Per layer: its records from the aligned offset at or below its first record,
            // and the word where the first record starts.
            let layer_groups: Vec<wgpu::BindGroup> = layers
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let records = cc.buffer(l.records);
                    let start = l.record_offset / align * align;
                    let end = (l.record_offset
                        + u64::from(l.capacity.max(1)) * GPU_SCENE_RECORD_BYTES)
                        .min(records.size());
                    let info = [((l.record_offset - start) / 4) as u32, i as u32, 0, 0];
                    let info = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("gpu-scene frame layer"),
                        contents: bytemuck::cast_slice(&info),
                        usage: wgpu::BufferUsages::UNIFORM,
                    });
                    device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some("gpu-scene frame layer"),
                        layout: &pipeline.get_bind_group_layout(0),
                        entries: &[
                            wgpu::BindGroupEntry {
                                binding: 0,
                                resource: wgpu::BindingResource::Buffer(camera_binding.clone()),
                            },
                            wgpu::BindGroupEntry {
                                binding: 1,
                                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                    buffer: records,
                                    offset: start,
                                    size: wgpu::BufferSize::new(end - start),
                                }),
                            },
                            wgpu::BindGroupEntry {
                                binding: 2,
                                resource: info.as_entire_binding(),
                            },
                        ],
                    })
                })
                .collect();
            // One material bind group per resource group (the pick pipeline reads none: its
            // layout has no group 1).
            let materials: Vec<Vec<wgpu::BindGroup>> = layers
                .iter()
                .map(|l| {
                    if pick {
                        return Vec::new();
                    }
                    (0..l.groups.len())
                        .map(|g| {
                            let color = l.colors.get(g).copied().unwrap_or([1.0; 4]);
                            let buffer =
                                device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                                    label: Some("gpu-scene frame material"),
                                    contents: bytemuck::cast_slice(&color),
                                    usage: wgpu::BufferUsages::UNIFORM,
                                });
                            device.create_bind_group(&wgpu::BindGroupDescriptor {
                                label: Some("gpu-scene frame material"),
                                layout: &pipeline.get_bind_group_layout(1),
                                entries: &[wgpu::BindGroupEntry {
                                    binding: 0,
                                    resource: buffer.as_entire_binding(),
                                }],
                            })
                        })
                        .collect()
                })
                .collect();
            let vertex_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("gpu-scene frame vertices"),
                contents: bytemuck::cast_slice(&vertices),
                usage: wgpu::BufferUsages::VERTEX,
            });
            let index_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("gpu-scene frame indices"),
                contents: bytemuck::cast_slice(&indices),
                usage: wgpu::BufferUsages::INDEX,
            });
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
            encoder.set_vertex_buffer(0, vertex_buffer.slice(..));
            encoder.set_index_buffer(index_buffer.slice(..), wgpu::IndexFormat::Uint32);
            let mut recorded = vec![(camera, cc.buffer(camera).clone())];
            for (i, l) in layers.iter().enumerate() {
                let command_buffer = cc.buffer(l.command_handle);
                encoder.set_bind_group(0, &layer_groups[i], &[]);
                for (g, group) in l.groups.iter().enumerate() {
                    if let Some(material) = materials[i].get(g) {
                        encoder.set_bind_group(1, material, &[]);
                    }
                    for c in group.first_command..group.first_command + group.command_count {
                        l.commands.encode(&mut encoder, command_buffer, c)?;
                    }
                }
                recorded.push((l.records, cc.buffer(l.records).clone()));
                recorded.push((l.command_handle, command_buffer.clone()));
            }
            let bundle = encoder.finish(&wgpu::RenderBundleDescriptor {
                label: Some(cc.node_id()),
            });
            Ok(Box::new(Replay {
                bundle,
                node: node.clone(),
                recorded,
            }) as Box<dyn RenderExecutable>)
        }),
    })?;
    Ok(())
}

/// Replays the bundle; refuses an encode whose imports resolve to other buffers than the ones
/// recorded (the bundle holds them).
struct Replay {
    bundle: wgpu::RenderBundle,
    node: String,
    recorded: Vec<(BufferHandle, wgpu::Buffer)>,
}

impl RenderExecutable for Replay {
    fn encode(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        ctx: &EncodeContext<'_>,
    ) -> Result<(), NodeError> {
        for (h, b) in &self.recorded {
            if ctx.buffer(*h) != b {
                return Err(Box::new(RenderError::BundleOverride {
                    node: self.node.clone(),
                    what: "scene buffers",
                }));
            }
        }
        pass.execute_bundles(std::iter::once(&self.bundle));
        Ok(())
    }
}
