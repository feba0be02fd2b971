//! [`InstancedCubes`]: a render pass node that draws one cube per visible instance from a
//! render bundle recorded once at compile time (spec: stable draw groups). The bundle holds
//! the pipeline, the bindings and one `draw_indexed_indirect` of batched arguments that a
//! one-workgroup dispatch derives from the record's `instanceCount` each encode; every encode
//! replays the bundle, so what it draws changes only through GPU-written buffers (the IDs and
//! the record's `instanceCount`), never by re-recording.

use gpugraph_command::{
    Binding, BufferDescriptor, BufferHandle, ColorAttachment, CommandGraph, DataView,
    DataViewDescriptor, DepthStencilAttachment, DispatchNode, Grid, RenderPassNode, ResourceUse,
    ShaderSource, VectorFormat,
};
use wgpu::util::DeviceExt;

use crate::{DrawCommandBuffer, DrawLayout, RenderError};

const BATCHES_WGSL: &str = include_str!("batches.wgsl");

/// The batching dispatch's constants (WGSL `Params` in `batches.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
struct BatchParams {
    count_offset: u32,
    args_offset: u32,
    drawn_offset: u32,
    cubes: u32,
}

/// The 36 indices of a cube's 12 triangles over corners numbered by their `zyx` bits (corner
/// `v` at `center + (bits(v) * 2 - 1) * radius * HALF_EXTENT`). Every face winds clockwise
/// seen from outside: the pipeline's front face is `Cw` and back faces are culled.
pub(crate) const CUBE_INDICES: [u16; 36] = [
    0, 2, 6, 0, 6, 4, 1, 5, 7, 1, 7, 3, 0, 4, 5, 0, 5, 1, 2, 3, 7, 2, 7, 6, 0, 1, 3, 0, 3, 2, 4, 6,
    7, 4, 7, 5,
];

/// Half the edge of the cube inscribed in a unit sphere (1/√3, the literal in `cubes.wgsl`).
pub(crate) const HALF_EXTENT: f32 = 0.57735;

/// The camera uniform of [`InstancedCubes`] (WGSL `Camera`, 80 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CubeCamera {
    /// Column-major view-projection matrix.
    pub view_projection: [[f32; 4]; 4],
    /// Rows of the visible-ID view: instances at or past it are not drawn.
    pub capacity: u32,
    /// Batch ID written next to each object ID by passes into an
    /// [`crate::IndexPickingTarget`].
    pub batch: u32,
    /// Padding to the WGSL struct's size.
    pub pad: [u32; 2],
}

/// Draws a cube inscribed in each visible instance's bounding sphere (see the module doc).
///
/// The draw record `record` of `draw` must be a `drawIndexed` record (by convention with
/// [`InstancedCubes::INDEX_COUNT`] indices, first index 0, base vertex 0, first instance 0);
/// its `instanceCount` — the number of cubes, typically written by a
/// [`crate::VisibilityWorkflow`] — is the only word read: a batching dispatch
/// (`{id}/batch`) turns it into the arguments of the bundle's indirect draw of
/// [`Self::cubes_per_instance`] cubes per instance. Cube `i` (below `instanceCount` and
/// `camera.capacity`) draws ID `visible[i]`, whose sphere is `spheres[ID]`; cubes are drawn in
/// `i` order, each as 12 triangles with back faces culled. The pipeline's formats and sample
/// count are those of the attachments' graph textures. An `Rg32Uint` color target (an
/// [`crate::IndexPickingTarget`]) receives `(ID, camera.batch)` per covered pixel; any other
/// format a shaded color.
pub struct InstancedCubes {
    /// Node id.
    pub id: String,
    /// The color attachment (multisampled with a resolve target, or not).
    pub color: ColorAttachment,
    /// Optional depth attachment (depth test `Less`, writes on).
    pub depth: Option<DepthStencilAttachment>,
    /// Imported uniform buffer holding a [`CubeCamera`]; rewrite it to move the camera.
    pub camera: BufferHandle,
    /// Packed float32x4 spheres (center, radius) indexed by ID.
    pub spheres: DataView,
    /// Packed uint32 visible IDs (the workflow's output).
    pub visible: DataView,
    /// The draw records.
    pub draw: DrawCommandBuffer,
    /// `draw`'s buffer imported into the graph ([`DrawCommandBuffer::import`]).
    pub draw_handle: BufferHandle,
    /// Which record to draw.
    pub record: u32,
    /// Cubes per drawn instance, 1 ..= [`InstancedCubes::MAX_CUBES_PER_INSTANCE`] (see
    /// [`InstancedCubes::CUBES_PER_INSTANCE`]); the image does not depend on it.
    pub cubes_per_instance: u32,
}

impl InstancedCubes {
    /// Indices per cube: the `indexCount` of the draw record.
    pub const INDEX_COUNT: u32 = CUBE_INDICES.len() as u32;

    /// The default cubes per drawn instance: 1, plain instancing. Batching several cubes into
    /// one instance (so an instance's vertex wave has more than 8 vertices to shade) was
    /// measured slower on the H200 (2026-12-02, 6bbe73b, `render cull --frames 30 --msaa 4`,
    /// `bench/results/h200/2026-12-02-6bbe73b/`): 32 cubes per instance 9.90 ms GPU and
    /// 52.3 µs encode per frame at 1M instances against 5.32 ms and 30.3 µs for 1; at 16M
    /// 15.20 ms / 57.6 µs against 8.03 ms / 36.9 µs. Other values stay available for devices
    /// whose vertex stage is lane-bound.
    pub const CUBES_PER_INSTANCE: u32 = 1;

    /// The most cubes per instance (16-bit indices: 8 vertices per cube).
    pub const MAX_CUBES_PER_INSTANCE: u32 = 8192;

    /// Adds the render pass node. Checks the record layout and index and the views' formats
    /// now; the bundle is recorded when the graph compiles.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), RenderError> {
        if self.draw.layout() != DrawLayout::DrawIndexed {
            return Err(RenderError::WrongLayout {
                label: self.id.clone(),
                layout: "draw",
                requested: "drawIndexed",
            });
        }
        self.draw.record_byte_offset(self.record)?;
        let cubes = self.cubes_per_instance;
        if !(1..=Self::MAX_CUBES_PER_INSTANCE).contains(&cubes) {
            return Err(RenderError::UnsupportedView {
                workflow: "instanced cubes",
                id: self.id.clone(),
                what: "cubes per instance",
                expected: "1 ..= 8192 cubes per drawn instance",
                actual: cubes.to_string(),
            });
        }
        for (what, view, format, expected) in [
            (
                "spheres",
                self.spheres,
                VectorFormat::Float32x4,
                "packed float32x4",
            ),
            (
                "visible",
                self.visible,
                VectorFormat::Uint32,
                "packed uint32",
            ),
        ] {
            if view.format() != format || !view.is_packed() || view.live_count().is_some() {
                return Err(RenderError::UnsupportedView {
                    workflow: "instanced cubes",
                    id: self.id.clone(),
                    what,
                    expected,
                    actual: format!("{} (packed {})", view.format(), view.is_packed()),
                });
            }
        }
        let color = graph.texture_descriptor(self.color.target.texture)?;
        let (color_format, samples) = (color.format, color.sample_count);
        let depth_format = match &self.depth {
            Some(d) => Some(graph.texture_descriptor(d.target.texture)?.format),
            None => None,
        };
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        // The batched indirect arguments and the drawn count, written from the record's
        // instanceCount on every encode (the record itself is only read).
        let args_h = graph.create_buffer(BufferDescriptor::new(
            format!("{}/batches", self.id),
            20,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
        ))?;
        let drawn_h = graph.create_buffer(BufferDescriptor::new(
            format!("{}/drawn", self.id),
            4,
            wgpu::BufferUsages::STORAGE,
        ))?;
        let u32s = |n| DataViewDescriptor::packed(VectorFormat::Uint32, n);
        let args = graph.create_data_view(args_h, u32s(5))?;
        let drawn = graph.create_data_view(drawn_h, u32s(1))?;
        let count = self
            .draw
            .instance_count_view(graph, self.draw_handle, self.record)?;
        let offset = |v: &DataView| v.aligned_range(align).element_offset as u32;
        let params = BatchParams {
            count_offset: offset(&count),
            args_offset: offset(&args),
            drawn_offset: offset(&drawn),
            cubes,
        };
        graph.add_dispatch_node(DispatchNode::new(
            format!("{}/batch", self.id),
            ShaderSource::new("render/cubes/batches", BATCHES_WGSL),
            "batches",
            vec![
                Binding::params(0, &params),
                Binding::read(1, count),
                Binding::read_write(2, args),
                Binding::read_write(3, drawn),
            ],
            Grid::Rows {
                rows: 1,
                rows_per_workgroup: 64,
            },
        ))?;
        let uses = vec![
            ResourceUse::uniform(self.camera),
            ResourceUse::storage_read(self.spheres.buffer()),
            ResourceUse::storage_read(self.visible.buffer()),
            ResourceUse::storage_read(drawn_h),
            ResourceUse::indirect(args_h),
        ];
        let Self {
            id,
            color,
            depth,
            camera,
            spheres,
            visible,
            ..
        } = self;
        let node_id = id.clone();
        graph.add_render_pass_node(RenderPassNode {
            id,
            color: vec![color],
            depth_stencil: depth,
            uses,
            depends_on: Vec::new(),
            compile: Box::new(move |cc| {
                let device = cc.device();
                for (what, view) in [("spheres", &spheres), ("visible", &visible)] {
                    if view.aligned_range(align).element_offset != 0 {
                        return Err(format!(
                            "{what} view at byte {} is not aligned to the device's {align}-byte storage offset alignment",
                            view.byte_offset()
                        )
                        .into());
                    }
                }
                let module = gpugraph_command::DeviceCache::for_device(device)
                    .shader_module(&crate::shaders::shader("render/cubes", "cubes.wgsl"));
                let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                    label: Some(cc.node_id()),
                    layout: None,
                    vertex: wgpu::VertexState {
                        module: &module,
                        entry_point: Some("vs"),
                        compilation_options: wgpu::PipelineCompilationOptions {
                            constants: &[("CUBES", f64::from(cubes))],
                            ..Default::default()
                        },
                        buffers: &[],
                    },
                    // Closed cubes: back faces are hidden by the front ones, and culling them
                    // halves the triangles the rasterizer sets up.
                    primitive: wgpu::PrimitiveState {
                        front_face: wgpu::FrontFace::Cw,
                        cull_mode: Some(wgpu::Face::Back),
                        ..Default::default()
                    },
                    depth_stencil: depth_format.map(|format| wgpu::DepthStencilState {
                        format,
                        depth_write_enabled: Some(true),
                        depth_compare: Some(wgpu::CompareFunction::Less),
                        stencil: Default::default(),
                        bias: Default::default(),
                    }),
                    multisample: wgpu::MultisampleState {
                        count: samples,
                        ..Default::default()
                    },
                    fragment: Some(wgpu::FragmentState {
                        module: &module,
                        entry_point: Some(if color_format == wgpu::TextureFormat::Rg32Uint {
                            "fs_pick"
                        } else {
                            "fs"
                        }),
                        compilation_options: Default::default(),
                        targets: &[Some(color_format.into())],
                    }),
                    multiview_mask: None,
                    cache: None,
                });
                let binding = |view: &DataView| {
                    gpugraph_command::view_binding(cc.buffer(view.buffer()), view, align).0
                };
                let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(cc.node_id()),
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(cc.binding(camera)),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: wgpu::BindingResource::Buffer(binding(&spheres)),
                        },
                        wgpu::BindGroupEntry {
                            binding: 2,
                            resource: wgpu::BindingResource::Buffer(binding(&visible)),
                        },
                        wgpu::BindGroupEntry {
                            binding: 3,
                            resource: wgpu::BindingResource::Buffer(binding(&drawn)),
                        },
                    ],
                });
                // `cubes` cubes, cube j's corners at vertices 8j..8j+7.
                let batch: Vec<u16> = (0..cubes)
                    .flat_map(|j| CUBE_INDICES.iter().map(move |&i| i + 8 * j as u16))
                    .collect();
                let indices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("render/cube indices"),
                    contents: bytemuck::cast_slice(&batch),
                    usage: wgpu::BufferUsages::INDEX,
                });
                let args_buffer = cc.buffer(args_h).clone();
                let mut encoder =
                    device.create_render_bundle_encoder(&wgpu::RenderBundleEncoderDescriptor {
                        label: Some(cc.node_id()),
                        color_formats: &[Some(color_format)],
                        depth_stencil: depth_format.map(|format| wgpu::RenderBundleDepthStencil {
                            format,
                            depth_read_only: false,
                            stencil_read_only: true,
                        }),
                        sample_count: samples,
                        multiview: None,
                    });
                encoder.set_pipeline(&pipeline);
                encoder.set_bind_group(0, &group, &[]);
                encoder.set_index_buffer(indices.slice(..), wgpu::IndexFormat::Uint16);
                encoder.draw_indexed_indirect(&args_buffer, 0);
                let bundle = encoder.finish(&wgpu::RenderBundleDescriptor {
                    label: Some(cc.node_id()),
                });
                let recorded = [
                    (camera, cc.buffer(camera).clone(), "camera"),
                    (args_h, args_buffer, "batched draw arguments"),
                    (drawn_h, cc.buffer(drawn_h).clone(), "drawn count"),
                    (spheres.buffer(), cc.buffer(spheres.buffer()).clone(), "spheres"),
                    (visible.buffer(), cc.buffer(visible.buffer()).clone(), "visible IDs"),
                ];
                Ok(replay_bundle(node_id, bundle, recorded))
            }),
        })?;
        Ok(())
    }
}

/// Replays `bundle`, after checking that the buffers it was recorded against are still the
/// ones the graph resolves (an import override cannot reach a recorded bundle).
fn replay_bundle(
    node: String,
    bundle: wgpu::RenderBundle,
    recorded: [(BufferHandle, wgpu::Buffer, &'static str); 5],
) -> Box<dyn gpugraph_command::RenderExecutable> {
    struct Replay {
        node: String,
        bundle: wgpu::RenderBundle,
        recorded: [(BufferHandle, wgpu::Buffer, &'static str); 5],
    }
    impl gpugraph_command::RenderExecutable for Replay {
        fn encode(
            &mut self,
            pass: &mut wgpu::RenderPass<'_>,
            ctx: &gpugraph_command::EncodeContext<'_>,
        ) -> Result<(), gpugraph_command::NodeError> {
            for (h, buffer, what) in &self.recorded {
                if ctx.buffer(*h) != buffer {
                    return Err(Box::new(RenderError::BundleOverride {
                        node: self.node.clone(),
                        what,
                    }));
                }
            }
            pass.execute_bundles(std::iter::once(&self.bundle));
            Ok(())
        }
    }
    Box::new(Replay {
        node,
        bundle,
        recorded,
    })
}
