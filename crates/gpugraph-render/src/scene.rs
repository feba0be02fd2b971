//! [`CullScene`]: GPU frustum culling end to end, as one compiled graph: instance spheres in a
//! GPU buffer → [`VisibilityWorkflow`] (frustum, selection, optional LOD) → visible IDs and the
//! count straight into a `drawIndexed` record → [`InstancedCubes`] replaying one render bundle
//! into a depth-tested (optionally multisampled and resolved) offscreen target → a copy of the
//! image into a mappable buffer; optionally an ID pass into an [`IndexPickingTarget`] and a
//! one-texel copy for picking.
//!
//! Per frame the caller only writes uniforms ([`CullScene::set_camera`]) or the selection
//! ([`CullScene::set_selection`]) and encodes: nothing recompiles or re-records. The scene
//! never submits; the caller maps [`CullScene::image_buffer`] after submitting.

use gpugraph_command::{
    BufferDescriptor, ColorAttachment, ColorLoad, CommandGraph, CompiledGraph, CopyNode,
    DepthStencilAttachment, EncodeOptions, EncodeReport, TextureDescriptor, VectorFormat,
};
use wgpu::util::{DeviceExt, DrawIndexedIndirectArgs};
use wgpu::{BufferUsages as U, TextureFormat as F, TextureUsages as T};

use crate::camera::{look_at, mul, perspective};
use crate::mesh::CubeCamera;
use crate::{Bounds, DrawCommandBuffer, DrawLayout, InstancedCubes, RenderError, ViewParams};
use crate::{IndexPickingTarget, PixelPick, VisibilityWorkflow};

/// Options of a [`CullScene`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CullSceneOptions {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Samples per pixel of the color and depth targets (1 = no resolve).
    pub msaa: u32,
    /// Whether an ID pass and a one-texel copy serve [`CullScene::set_pick`].
    pub picking: bool,
    /// Whether every encode copies the image into [`CullScene::image_buffer`] (benchmarks
    /// leave it off and time culling and drawing alone).
    pub readback: bool,
    /// Cubes per drawn instance ([`InstancedCubes::cubes_per_instance`]; typically
    /// [`InstancedCubes::CUBES_PER_INSTANCE`]).
    pub cubes_per_instance: u32,
}

/// Bytes per image row in [`CullScene::image_buffer`] (copies need 256-byte row pitches).
pub fn padded_bytes_per_row(width: u32) -> u32 {
    (width * 4).div_ceil(256) * 256
}

/// The compiled culling scene (see the module doc).
pub struct CullScene {
    compiled: CompiledGraph,
    view: wgpu::Buffer,
    camera: wgpu::Buffer,
    selection: wgpu::Buffer,
    draw: DrawCommandBuffer,
    image: Option<wgpu::Buffer>,
    pick: Option<(wgpu::Buffer, IndexPickingTarget, PixelPick)>,
    options: CullSceneOptions,
    instances: u32,
}

const FOVY_DEGREES: f32 = 60.0;
const NEAR: f32 = 0.5;
const FAR: f32 = 400.0;

/// Which stages a [`CullScene`]'s graph holds (benchmarks time them apart).
#[derive(Clone, Copy, Debug)]
enum Stages<'a> {
    /// Visibility workflow, then the draw (and the options' readback and picking).
    Both,
    /// The visibility workflow alone.
    Cull,
    /// The draw alone, of these visible IDs (uploaded once, count written by the CPU).
    Draw(&'a [u32]),
}

impl CullScene {
    /// Uploads `spheres` (center, radius per instance), an all-selected selection and the
    /// optional LOD bands, then builds and compiles the graph.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        spheres: &[[f32; 4]],
        lod: Option<&[[f32; 2]]>,
        options: CullSceneOptions,
    ) -> Result<Self, RenderError> {
        Self::build(device, queue, spheres, lod, Stages::Both, options)
    }

    /// The scene's visibility workflow alone (frustum, selection, optional LOD; the count
    /// lands in [`Self::draw`]): no render pass, no readback, no picking.
    pub fn cull_only(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        spheres: &[[f32; 4]],
        lod: Option<&[[f32; 2]]>,
        options: CullSceneOptions,
    ) -> Result<Self, RenderError> {
        Self::build(device, queue, spheres, lod, Stages::Cull, options)
    }

    /// The scene's draw alone, of the given `visible` IDs (each below `spheres.len()`, at most
    /// `spheres.len()` of them; uploaded once, their count written into the draw record by
    /// the CPU): the same bundle, targets, readback and picking as [`Self::new`].
    pub fn draw_only(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        spheres: &[[f32; 4]],
        visible: &[u32],
        options: CullSceneOptions,
    ) -> Result<Self, RenderError> {
        let bad = visible.iter().position(|&id| id as usize >= spheres.len());
        if visible.len() > spheres.len() || bad.is_some() {
            return Err(RenderError::UnsupportedView {
                workflow: "cull scene",
                id: "draw only".into(),
                what: "visible IDs",
                expected: "at most one ID per sphere, each below the sphere count",
                actual: match bad {
                    Some(row) => format!(
                        "ID {} at row {row} of {} spheres",
                        visible[row],
                        spheres.len()
                    ),
                    None => format!("{} IDs for {} spheres", visible.len(), spheres.len()),
                },
            });
        }
        Self::build(device, queue, spheres, None, Stages::Draw(visible), options)
    }

    fn build(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        spheres: &[[f32; 4]],
        lod: Option<&[[f32; 2]]>,
        stages: Stages<'_>,
        options: CullSceneOptions,
    ) -> Result<Self, RenderError> {
        let n = spheres.len() as u64;
        let mut g = CommandGraph::new("cull-scene", device);
        let init = |label: &str, bytes: &[u8], usage: U| {
            let mut padded = bytes.to_vec();
            padded.resize(bytes.len().max(16), 0);
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &padded,
                usage,
            })
        };
        let import = |g: &mut CommandGraph, id: &str, b: &wgpu::Buffer| {
            g.import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)
        };
        let storage = U::STORAGE | U::COPY_DST;
        let spheres_buf = init("spheres", bytemuck::cast_slice(spheres), storage);
        let selection = init(
            "selection",
            bytemuck::cast_slice(&vec![1u32; spheres.len()]),
            storage,
        );
        let view = init(
            "view",
            bytemuck::bytes_of(&ViewParams::new(&identity(), [0.0; 3])),
            U::UNIFORM | U::COPY_DST,
        );
        let camera = init(
            "camera",
            bytemuck::bytes_of(&CubeCamera::zeroed_with(n as u32)),
            U::UNIFORM | U::COPY_DST,
        );
        let spheres_h = import(&mut g, "spheres", &spheres_buf)?;
        let selection_h = import(&mut g, "selection", &selection)?;
        let view_h = import(&mut g, "view", &view)?;
        let camera_h = import(&mut g, "camera", &camera)?;
        let spheres_v = g.create_packed_view(spheres_h, VectorFormat::Float32x4, n)?;
        let selection_v = g.create_packed_view(selection_h, VectorFormat::Uint32, n)?;
        let lod_v = match lod {
            Some(bands) => {
                let b = init("lod", bytemuck::cast_slice(bands), storage);
                let h = import(&mut g, "lod", &b)?;
                Some(g.create_vector_view(vec![g.create_packed_view(
                    h,
                    VectorFormat::Float32x2,
                    n,
                )?])?)
            }
            None => None,
        };
        let visible_h = match stages {
            Stages::Draw(ids) => {
                let mut padded = ids.to_vec();
                padded.resize(n as usize, 0);
                let b = init("visible-ids", bytemuck::cast_slice(&padded), U::STORAGE);
                import(&mut g, "visible-ids", &b)?
            }
            _ => g.create_buffer(BufferDescriptor::new(
                "visible-ids",
                (n * 4).max(4),
                U::STORAGE,
            ))?,
        };
        let visible = g.create_packed_view(visible_h, VectorFormat::Uint32, n)?;
        let draw = DrawCommandBuffer::create(device, "cull-draws", DrawLayout::DrawIndexed, 1);
        draw.write_draw_indexed(
            queue,
            0,
            DrawIndexedIndirectArgs {
                index_count: InstancedCubes::INDEX_COUNT,
                instance_count: match stages {
                    Stages::Draw(ids) => ids.len() as u32,
                    _ => 0,
                },
                first_index: 0,
                base_vertex: 0,
                first_instance: 0,
            },
        )?;
        let draw_h = draw.import(&mut g, "draws")?;
        if !matches!(stages, Stages::Draw(_)) {
            VisibilityWorkflow {
                id: "visibility".into(),
                view: view_h,
                bounds: Bounds::Spheres(g.create_vector_view(vec![spheres_v])?),
                time_range: None,
                lod: lod_v,
                selection: Some(g.create_vector_view(vec![selection_v])?),
                ids: None,
                mask: None,
                output: g.create_vector_view(vec![visible])?,
                count: draw.instance_count_view(&g, draw_h, 0)?,
                overflow: None,
            }
            .add_to_graph(&mut g)?;
        }
        if matches!(stages, Stages::Cull) {
            return Ok(Self {
                compiled: g.compile()?,
                view,
                camera,
                selection,
                draw,
                image: None,
                pick: None,
                options,
                instances: n as u32,
            });
        }

        let (w, h) = (options.width, options.height);
        let ra = T::RENDER_ATTACHMENT;
        let resolved = g.create_texture(TextureDescriptor::new(
            "image",
            (w, h),
            F::Rgba8Unorm,
            ra | T::COPY_SRC,
        ))?;
        let depth = g.create_texture(
            TextureDescriptor::new("depth", (w, h), F::Depth32Float, ra).with_samples(options.msaa),
        )?;
        let background = ColorLoad::Clear(wgpu::Color {
            r: 0.02,
            g: 0.02,
            b: 0.05,
            a: 1.0,
        });
        let color = if options.msaa > 1 {
            let msaa = g.create_texture(
                TextureDescriptor::new("image-msaa", (w, h), F::Rgba8Unorm, ra)
                    .with_samples(options.msaa),
            )?;
            let mut c = ColorAttachment::new(msaa, background).resolve_into(resolved);
            c.store = false;
            c
        } else {
            ColorAttachment::new(resolved, background)
        };
        InstancedCubes {
            id: "cubes".into(),
            color,
            depth: Some(DepthStencilAttachment::cleared_depth(depth, 1.0)),
            camera: camera_h,
            spheres: spheres_v,
            visible,
            draw: draw.clone(),
            draw_handle: draw_h,
            record: 0,
            cubes_per_instance: options.cubes_per_instance,
        }
        .add_to_graph(&mut g)?;
        let image = if options.readback {
            let image = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("image readback"),
                size: u64::from(padded_bytes_per_row(w)) * u64::from(h),
                usage: U::MAP_READ | U::COPY_DST,
                mapped_at_creation: false,
            });
            let image_h = import(&mut g, "image-readback", &image)?;
            let row = padded_bytes_per_row(w);
            g.add_copy_node(CopyNode::texture_to_buffer(
                "read-image",
                resolved,
                image_h,
                (w, h),
                row,
            ))?;
            Some(image)
        } else {
            None
        };

        let pick = if options.picking {
            let target = IndexPickingTarget::create(&mut g, "pick-ids", (w, h))?;
            InstancedCubes {
                id: "pick-cubes".into(),
                color: target.color_attachment(),
                depth: Some(target.depth_attachment()),
                camera: camera_h,
                spheres: spheres_v,
                visible,
                draw: draw.clone(),
                draw_handle: draw_h,
                record: 0,
                cubes_per_instance: options.cubes_per_instance,
            }
            .add_to_graph(&mut g)?;
            // Read through the caller's staging (a ReadbackRing), so picks overlap frames.
            let out = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("pick"),
                size: 16,
                usage: U::COPY_SRC | U::COPY_DST,
                mapped_at_creation: false,
            });
            let out_h = import(&mut g, "pick-readback", &out)?;
            let at = target.add_pixel_copy(&mut g, "read-pick", out_h)?;
            Some((out, target, at))
        } else {
            None
        };
        Ok(Self {
            compiled: g.compile()?,
            view,
            camera,
            selection,
            draw,
            image,
            pick,
            options,
            instances: n as u32,
        })
    }

    /// The view-projection matrix of a camera at `eye` looking at `target` (y up), with the
    /// scene's field of view (60°), aspect ratio and depth range (0.5 .. 400).
    pub fn view_projection(&self, eye: [f32; 3], target: [f32; 3]) -> crate::camera::Mat4 {
        let aspect = self.options.width as f32 / self.options.height as f32;
        mul(
            &perspective(FOVY_DEGREES.to_radians(), aspect, NEAR, FAR),
            &look_at(eye, target, [0.0, 1.0, 0.0]),
        )
    }

    /// Points the camera from `eye` at `target` (y up): writes the view and camera uniforms
    /// (the view the workflow reads is `ViewParams::new(&self.view_projection(..), eye)`).
    pub fn set_camera(&self, queue: &wgpu::Queue, eye: [f32; 3], target: [f32; 3]) {
        let vp = self.view_projection(eye, target);
        queue.write_buffer(
            &self.view,
            0,
            bytemuck::bytes_of(&ViewParams::new(&vp, eye)),
        );
        let camera = CubeCamera {
            view_projection: vp,
            ..CubeCamera::zeroed_with(self.instances)
        };
        queue.write_buffer(&self.camera, 0, bytemuck::bytes_of(&camera));
    }

    /// Replaces the selection flags (nonzero = selected), one per instance.
    pub fn set_selection(&self, queue: &wgpu::Queue, selection: &[u32]) -> Result<(), RenderError> {
        if selection.len() as u64 != u64::from(self.instances) {
            return Err(RenderError::ChunkMismatch {
                workflow: "cull scene",
                id: "selection".into(),
                what: "selection",
                expected: vec![u64::from(self.instances)],
                actual: vec![selection.len() as u64],
            });
        }
        if !selection.is_empty() {
            queue.write_buffer(&self.selection, 0, bytemuck::cast_slice(selection));
        }
        Ok(())
    }

    /// Which pixel the next encodes copy into [`Self::pick_buffer`].
    pub fn set_pick(&self, x: u32, y: u32) -> Result<(), RenderError> {
        match &self.pick {
            Some((_, target, at)) => target.set_pixel(at, x, y),
            None => Err(RenderError::PickOutside {
                x,
                y,
                width: 0,
                height: 0,
            }),
        }
    }

    /// Records one frame into `encoder` (optionally with per-node timestamps).
    pub fn encode(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        profile: bool,
    ) -> Result<EncodeReport, RenderError> {
        Ok(self.compiled.encode(
            encoder,
            &EncodeOptions {
                profile,
                ..Default::default()
            },
        )?)
    }

    /// The compiled graph (stats, node order, timings after a profiled encode).
    pub fn compiled_mut(&mut self) -> &mut CompiledGraph {
        &mut self.compiled
    }

    /// The mappable buffer the image lands in: RGBA8 rows of [`padded_bytes_per_row`] bytes
    /// (`None` without [`CullSceneOptions::readback`]).
    pub fn image_buffer(&self) -> Option<&wgpu::Buffer> {
        self.image.as_ref()
    }

    /// The compiled graph alone (its imports stay alive with it), for callers that encode it
    /// themselves once the uniforms are written.
    pub fn into_graph(self) -> CompiledGraph {
        self.compiled
    }

    /// The buffer (`COPY_SRC`, 16 bytes) whose first two words are the picked pixel's object
    /// and batch IDs ([`crate::NO_OBJECT`]: background) after each encode; copy it out, e.g.
    /// through a [`crate::ReadbackRing`] ticket recorded after [`Self::encode`].
    pub fn pick_buffer(&self) -> Option<&wgpu::Buffer> {
        self.pick.as_ref().map(|(b, _, _)| b)
    }

    /// The draw record whose `instanceCount` the workflow writes.
    pub fn draw(&self) -> &DrawCommandBuffer {
        &self.draw
    }

    /// The options the scene was built with.
    pub fn options(&self) -> CullSceneOptions {
        self.options
    }
}

fn identity() -> crate::camera::Mat4 {
    std::array::from_fn(|c| std::array::from_fn(|r| f32::from(u8::from(c == r))))
}

impl CubeCamera {
    fn zeroed_with(capacity: u32) -> Self {
        Self {
            view_projection: identity(),
            capacity,
            batch: 0,
            pad: [0; 2],
        }
    }
}
