//! [`GpuSceneFrame`]: the frame both scene consumers (spec 6.3) run, as one compiled graph
//! over one or more scene layers (a flattened scene graph is one layer; a table scene has one
//! layer per nonempty partition). Per layer: GPU bounds visibility fused with its compaction
//! ([`GpuSceneVisibility`]: live slots' spheres against the frustum, read from the scene's
//! packed bounds view, or from the records of a borrowed scene) into a list of visible slots
//! and a GPU count; draw
//! generation over that list ([`GpuSceneDrawGeneration`] with [`GpuSceneVisibleRows`]: an
//! indirect grid from the count, the commands of the previous encode cleared, the published
//! commands listed) classifying each command into the layer's resource groups as it
//! publishes it ([`GpuSceneDrawGeneration::groups`]; the same result as a
//! [`super::GpuSceneResourceGroups`] pass over the published list, without re-reading the
//! commands and their rows). After visibility the work follows the visible
//! rows and published commands, not the scene or command capacity: at 16M records with 3.6%
//! visible, the full passes over every record and command (clear, claim, publish, classify)
//! were about 3.5 GB of memory traffic a frame. Then one render pass replaying one render
//! bundle that binds each layer and each of its groups in order and issues the group's
//! indirect command window ([`super::frame_draw`]), an optional ID pass for picking, and a
//! copy of the image into a mappable buffer.
//!
//! Per frame the caller writes the camera ([`GpuSceneFrame::set_camera`]) and mutates scenes
//! through their own queue writes, then encodes: nothing recompiles or re-records, and the CPU
//! never selects draws. The frame never submits and never reads back: the caller copies
//! [`GpuSceneFrame::diagnostics_buffer`], maps [`GpuSceneFrame::image_buffer`] and
//! [`GpuSceneFrame::pick_buffer`], and decodes with [`GpuSceneFrame::decode_diagnostics`].

use gpugraph_command::{
    BufferDescriptor, ColorAttachment, ColorLoad, CommandGraph, CompiledGraph, CopyNode, DataView,
    DataViewDescriptor, DepthStencilAttachment, EncodeOptions, EncodeReport, TextureDescriptor,
    VectorFormat,
};
use wgpu::{BufferUsages as U, TextureFormat as F, TextureUsages as T};

use super::frame_draw::{add_scene_pass, DrawLayer};
use super::source::SceneVertex;
use super::{
    GpuScene, GpuSceneDrawGeneration, GpuSceneDrawOutput, GpuSceneGroup,
    GpuSceneGroupClassification, GpuSceneUpload, GpuSceneVisibility, GpuSceneVisibleRows,
};
use crate::camera::{look_at, mul, perspective, Mat4};
use crate::scene::padded_bytes_per_row;
use crate::{
    DrawCommandBuffer, DrawLayout, IndexPickingTarget, PixelPick, RenderError, ViewParams,
};

/// One scene a frame draws: its command records and its renderer-owned groups.
#[derive(Clone, Copy, Debug)]
pub struct GpuSceneLayer<'a> {
    /// The scene (owned or a borrowed table partition).
    pub scene: &'a GpuScene,
    /// Its `drawIndexed` command records; the renderer's geometry words are written.
    pub commands: &'a DrawCommandBuffer,
    /// Its groups (see [`super::GpuSceneResourceGroups`]).
    pub groups: &'a [GpuSceneGroup],
    /// RGBA per group, in group order (missing entries draw white).
    pub colors: &'a [[f32; 4]],
    /// The scene's staged-mutation upload, scattered at the start of every encode
    /// ([`GpuScene::mutate_staged`]); `None` when the scene is mutated with
    /// [`GpuScene::mutate`] or not at all.
    pub upload: Option<&'a GpuSceneUpload>,
}

/// Options of a [`GpuSceneFrame`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuSceneFrameOptions {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Whether to draw at all: `false` builds the GPU selection alone (visibility, draw
    /// generation, groups), what `bench scene` times.
    pub draw: bool,
    /// Whether an ID pass and a one-texel copy serve [`GpuSceneFrame::set_pick`].
    pub picking: bool,
    /// Whether each encode copies the image into [`GpuSceneFrame::image_buffer`].
    pub readback: bool,
}

/// What one layer's GPU steps left in the diagnostics buffer after an encode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuSceneLayerDiagnostics {
    /// Visible active slots (the visibility workflow's count).
    pub visible: u32,
    /// 1 when the visible list overflowed (never: its capacity is the scene's).
    pub visibility_overflow: u32,
    /// Draw generation's eligible rows.
    pub required: u32,
    /// Published commands.
    pub published: u32,
    /// Draw generation's overflow (slot out of range or collision).
    pub draw_overflow: u32,
    /// Compatible live commands per group.
    pub group_counts: Vec<u32>,
    /// Per-group flags.
    pub group_flags: Vec<u32>,
    /// Global classification flags.
    pub group_overflow: u32,
}

/// Words of one layer's diagnostics: five, two per group, one.
fn layer_words(groups: usize) -> u64 {
    6 + 2 * groups as u64
}

/// The compiled frame (see the module doc).
pub struct GpuSceneFrame {
    compiled: CompiledGraph,
    /// The layers' uploads, taken by every encode.
    uploads: Vec<super::upload::UploadLink>,
    view: wgpu::Buffer,
    camera: wgpu::Buffer,
    diagnostics: wgpu::Buffer,
    layer_groups: Vec<usize>,
    /// Each layer's draw generation state.
    draw_outputs: Vec<GpuSceneDrawOutput>,
    image: Option<wgpu::Buffer>,
    pick: Option<(wgpu::Buffer, IndexPickingTarget, PixelPick)>,
    options: GpuSceneFrameOptions,
}

impl GpuSceneFrame {
    /// Builds and compiles the frame over `layers` (at least one), drawing geometry from the
    /// shared `vertices` / `indices` (ignored when `options.draw` is off). Every layer's
    /// commands must be `drawIndexed`; the device needs `INDIRECT_FIRST_INSTANCE`. Submits
    /// nothing; the camera starts at the identity until [`Self::set_camera`].
    pub fn new(
        device: &wgpu::Device,
        layers: &[GpuSceneLayer<'_>],
        vertices: &[SceneVertex],
        indices: &[u32],
        options: GpuSceneFrameOptions,
    ) -> Result<Self, RenderError> {
        if layers.is_empty() {
            return Err(RenderError::SceneSource {
                reason: "a frame needs at least one scene layer".into(),
            });
        }
        if let Some(l) = layers
            .iter()
            .find(|l| l.commands.layout() != DrawLayout::DrawIndexed)
        {
            return Err(RenderError::SceneSource {
                reason: format!(
                    "scene {}: its commands are {:?}; the frame draws indexed geometry",
                    l.scene.label(),
                    l.commands.layout()
                ),
            });
        }
        let (w, h) = (options.width.max(1), options.height.max(1));
        let mut g = CommandGraph::new("gpu-scene-frame", device);
        let uniform = |label: &str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: U::UNIFORM | U::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let view = uniform("scene-frame/view", ViewParams::BYTES);
        let camera = uniform("scene-frame/camera", 64);
        let view_h = g.import_buffer(
            BufferDescriptor::new("view", ViewParams::BYTES, U::UNIFORM),
            &view,
        )?;
        let camera_h = g.import_buffer(BufferDescriptor::new("camera", 64, U::UNIFORM), &camera)?;
        let total: u64 = layers.iter().map(|l| layer_words(l.groups.len())).sum();
        let diagnostics = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("scene-frame/diagnostics"),
            size: total * 4,
            usage: U::STORAGE | U::COPY_SRC | U::COPY_DST,
            mapped_at_creation: false,
        });
        let diag_h = g.import_buffer(
            BufferDescriptor::new("diagnostics", total * 4, U::STORAGE),
            &diagnostics,
        )?;
        let mut draw_layers = Vec::with_capacity(layers.len());
        let mut draw_outputs = Vec::with_capacity(layers.len());
        let mut at = 0u64;
        for (i, layer) in layers.iter().enumerate() {
            let id = format!("layer-{i}");
            let views = layer
                .scene
                .import_to_graph(&mut g, &format!("{id}/scene"))?;
            if let Some(upload) = layer.upload {
                upload.add_to_graph(&mut g, &views, &format!("{id}/upload"))?;
            }
            let command_h = match g.imported_handle(layer.commands.buffer()) {
                Some(h) => h,
                None => layer.commands.import(&mut g, &format!("{id}/commands"))?,
            };
            let word = |g: &CommandGraph, k: u64, len: u64| -> Result<DataView, RenderError> {
                Ok(g.create_data_view(
                    diag_h,
                    DataViewDescriptor::packed(VectorFormat::Uint32, len).at_offset(4 * (at + k)),
                )?)
            };
            let n = u64::from(views.capacity).max(1);
            let visible_h = g.create_buffer(BufferDescriptor::new(
                format!("{id}/visible"),
                n * 4,
                U::STORAGE,
            ))?;
            let rows = u64::from(views.capacity);
            let visible = g.create_packed_view(visible_h, VectorFormat::Uint32, rows)?;
            let visible_count = word(&g, 0, 1)?;
            GpuSceneVisibility {
                id: format!("{id}/visibility"),
                view: view_h,
                scene: views,
                output: visible,
                count: visible_count,
                overflow: word(&g, 1, 1)?,
            }
            .add_to_graph(&mut g)?;
            let gn = layer.groups.len() as u64;
            let generated = GpuSceneDrawGeneration {
                id: format!("{id}/draw-generation"),
                scene: views,
                visibility: None,
                visible_rows: Some(GpuSceneVisibleRows {
                    rows: visible,
                    count: visible_count,
                }),
                commands: layer.commands.clone(),
                command_handle: command_h,
                required_count: word(&g, 2, 1)?,
                published_count: word(&g, 3, 1)?,
                overflow: word(&g, 4, 1)?,
                // Classified as published: no pass re-reading the commands and their rows.
                groups: Some(GpuSceneGroupClassification {
                    groups: layer.groups.to_vec(),
                    counts: word(&g, 5, gn)?,
                    group_flags: word(&g, 5 + gn, gn)?,
                    overflow: word(&g, 5 + 2 * gn, 1)?,
                }),
            }
            .add_to_graph(&mut g)?;
            draw_outputs.push(generated);
            at += layer_words(layer.groups.len());
            draw_layers.push(DrawLayer {
                records: views.records,
                record_offset: layer.scene.record_buffer_offset(),
                capacity: views.capacity,
                commands: layer.commands.clone(),
                command_handle: command_h,
                groups: layer.groups.to_vec(),
                colors: layer.colors.to_vec(),
            });
        }
        let (mut image, mut pick) = (None, None);
        if options.draw {
            let color = g.create_texture(TextureDescriptor::new(
                "image",
                (w, h),
                F::Rgba8Unorm,
                T::RENDER_ATTACHMENT | T::COPY_SRC,
            ))?;
            let depth = g.create_texture(TextureDescriptor::new(
                "depth",
                (w, h),
                F::Depth32Float,
                T::RENDER_ATTACHMENT,
            ))?;
            let background = wgpu::Color {
                r: 0.03,
                g: 0.03,
                b: 0.06,
                a: 1.0,
            };
            add_scene_pass(
                &mut g,
                "draw",
                ColorAttachment::new(color, ColorLoad::Clear(background)),
                DepthStencilAttachment::cleared_depth(depth, 1.0),
                camera_h,
                &draw_layers,
                vertices,
                indices,
                false,
            )?;
            if options.readback {
                image = Some(add_image_copy(&mut g, color, (w, h))?);
            }
            if options.picking {
                let target = IndexPickingTarget::create(&mut g, "pick-ids", (w, h))?;
                add_scene_pass(
                    &mut g,
                    "pick",
                    target.color_attachment(),
                    target.depth_attachment(),
                    camera_h,
                    &draw_layers,
                    vertices,
                    indices,
                    true,
                )?;
                let out = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("scene-frame/pick"),
                    size: 16,
                    usage: U::COPY_DST | U::MAP_READ,
                    mapped_at_creation: false,
                });
                let out_h =
                    g.import_buffer(BufferDescriptor::new("pick", 16, U::COPY_DST), &out)?;
                let at = target.add_pixel_copy(&mut g, "read-pick", out_h)?;
                pick = Some((out, target, at));
            }
        }
        Ok(Self {
            compiled: g.compile()?,
            uploads: layers
                .iter()
                .filter_map(|l| l.upload.map(GpuSceneUpload::link))
                .collect(),
            view,
            camera,
            diagnostics,
            layer_groups: layers.iter().map(|l| l.groups.len()).collect(),
            draw_outputs,
            image,
            pick,
            options,
        })
    }

    /// Writes the view (frustum planes from `view_projection`, `eye`) the visibility reads and
    /// the camera the draw reads: two uniform writes, visible after the next submission.
    pub fn set_camera(&self, queue: &wgpu::Queue, view_projection: &Mat4, eye: [f32; 3]) {
        queue.write_buffer(
            &self.view,
            0,
            bytemuck::bytes_of(&ViewParams::new(view_projection, eye)),
        );
        queue.write_buffer(&self.camera, 0, bytemuck::bytes_of(view_projection));
    }

    /// Makes the next encode clear every layer's command `instanceCount` / `firstInstance`
    /// words again ([`GpuSceneDrawOutput::clear_every_command`]): after something other than
    /// this frame wrote them (another frame over the same commands, a CPU write).
    pub fn clear_every_command(&self, queue: &wgpu::Queue) {
        for d in &self.draw_outputs {
            d.clear_every_command(queue);
        }
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

    /// Records one frame into `encoder` (optionally with per-node timestamps); the layers'
    /// staged uploads are taken ([`GpuSceneUpload::encode`]: submit this encoder before
    /// staging again; an encode that fails still took them).
    pub fn encode(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        profile: bool,
    ) -> Result<EncodeReport, RenderError> {
        // The staged bytes' copies first: the graph's scatter reads them.
        for upload in &self.uploads {
            upload.encode(encoder);
        }
        Ok(self.compiled.encode(
            encoder,
            &EncodeOptions {
                profile,
                ..Default::default()
            },
        )?)
    }

    /// The compiled graph (pipeline statistics, timings after a profiled encode).
    pub fn compiled_mut(&mut self) -> &mut CompiledGraph {
        &mut self.compiled
    }

    /// Pipelines the frame's graph created so far (constant after compile: a parameter or
    /// mutation change recompiles nothing).
    pub fn pipelines_created(&self) -> u64 {
        self.compiled.cache().stats().pipelines_created
    }

    /// The diagnostics (`STORAGE | COPY_SRC`): per layer in order, visible, visibility
    /// overflow, required, published, draw overflow, the group counts, the group flags and
    /// the classification flags ([`Self::decode_diagnostics`]).
    pub fn diagnostics_buffer(&self) -> &wgpu::Buffer {
        &self.diagnostics
    }

    /// Splits the diagnostics buffer's words per layer; `None` when `words` is too short.
    pub fn decode_diagnostics(&self, words: &[u32]) -> Option<Vec<GpuSceneLayerDiagnostics>> {
        let mut out = Vec::with_capacity(self.layer_groups.len());
        let mut at = 0usize;
        for &gn in &self.layer_groups {
            let w = words.get(at..at + layer_words(gn) as usize)?;
            out.push(GpuSceneLayerDiagnostics {
                visible: w[0],
                visibility_overflow: w[1],
                required: w[2],
                published: w[3],
                draw_overflow: w[4],
                group_counts: w[5..5 + gn].to_vec(),
                group_flags: w[5 + gn..5 + 2 * gn].to_vec(),
                group_overflow: w[5 + 2 * gn],
            });
            at += layer_words(gn) as usize;
        }
        Some(out)
    }

    /// The mappable image buffer: RGBA8 rows of [`padded_bytes_per_row`] bytes (`None`
    /// without drawing or readback).
    pub fn image_buffer(&self) -> Option<&wgpu::Buffer> {
        self.image.as_ref()
    }

    /// The mappable buffer whose first word is the picked pixel's object ID
    /// ([`crate::NO_OBJECT`]: background) and whose second is its layer index.
    pub fn pick_buffer(&self) -> Option<&wgpu::Buffer> {
        self.pick.as_ref().map(|(b, _, _)| b)
    }

    /// The options the frame was built with.
    pub fn options(&self) -> GpuSceneFrameOptions {
        self.options
    }
}

/// A copy node of the image into a new mappable buffer, every encode.
fn add_image_copy(
    g: &mut CommandGraph,
    image: gpugraph_command::TextureHandle,
    (w, h): (u32, u32),
) -> Result<wgpu::Buffer, RenderError> {
    let row = padded_bytes_per_row(w);
    let buffer = g.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("scene-frame/image"),
        size: u64::from(row) * u64::from(h),
        usage: U::MAP_READ | U::COPY_DST,
        mapped_at_creation: false,
    });
    let handle = g.import_buffer(
        BufferDescriptor::new("image-readback", buffer.size(), U::COPY_DST),
        &buffer,
    )?;
    g.add_copy_node(CopyNode::texture_to_buffer(
        "read-image",
        image,
        handle,
        (w, h),
        row,
    ))?;
    Ok(buffer)
}

/// A camera orbiting the box `[lo, hi]` (infinite bounds: the unit box at the origin) at
/// `angle` radians, above it, with a 55° field of view at `aspect`: the view-projection and
/// the eye.
pub fn orbit_camera(lo: [f32; 3], hi: [f32; 3], angle: f32, aspect: f32) -> (Mat4, [f32; 3]) {
    let finite = lo.iter().chain(&hi).all(|v| v.is_finite());
    let (lo, hi) = if finite {
        (lo, hi)
    } else {
        ([-1.0; 3], [1.0; 3])
    };
    let center: [f32; 3] = std::array::from_fn(|i| (lo[i] + hi[i]) * 0.5);
    let radius = (0..3).map(|i| hi[i] - lo[i]).fold(1.0f32, f32::max);
    let eye = [
        center[0] + radius * 0.9 * angle.cos(),
        center[1] + radius * 0.6,
        center[2] + radius * 0.9 * angle.sin(),
    ];
    let vp = mul(
        &perspective(55f32.to_radians(), aspect, radius * 0.01, radius * 4.0),
        &look_at(eye, center, [0.0, 1.0, 0.0]),
    );
    (vp, eye)
}
