//! [`IndexPickingTarget`] (spec Tranche 4.1, GPUIndexPickingTarget): integer object and batch
//! IDs rendered into an `Rg32Uint` graph texture (cleared to [`NO_OBJECT`]), read back at one
//! pixel ([`IndexPickingTarget::add_pixel_copy`]) or collected over a region by a compute pass
//! ([`IndexPickingTarget::add_region_pass`]).
//!
//! Region contract: every pixel of the region (clipped to the target and to the pass's maximum
//! size) whose texel holds an object appends one `(object, batch)` pair; one covered pixel is
//! one pair, so duplicates are kept, and the append order is unspecified (atomic). `count`
//! receives the number of covered pixels, possibly above the capacity; the first `capacity`
//! appended pairs are written and `overflow` is 1 when pairs were dropped, else 0. Selection
//! semantics (nearest only, deduplication, highlighting) stay above the primitive. The region
//! lives in a caller-imported uniform ([`PickRegion`]): moving it needs no recompile.
//!
//! [`cpu`] is the oracle: a plain-Rust rasterizer of the cubes into the same ID image.

pub mod cpu;

use std::sync::{Arc, Mutex};

use gpugraph_command::{
    copy_fn, Access, Binding, BufferHandle, ColorAttachment, ColorLoad, CommandGraph, CopyNode,
    DataView, DepthStencilAttachment, DispatchNode, Grid, ResourceUse, ShaderSource, TextureAccess,
    TextureDescriptor, TextureHandle, TextureSlot, VectorFormat,
};

use crate::RenderError;

/// The texel value of a pixel no object covers (both channels).
pub const NO_OBJECT: u32 = u32::MAX;

const REGION_WGSL: &str = include_str!("region.wgsl");

/// The region uniform of a region pass (WGSL `Region`): a rectangle in pixels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PickRegion {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Columns (0: an empty region).
    pub width: u32,
    /// Rows.
    pub height: u32,
}

/// Per-pass constants (WGSL `Params`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
struct RegionParams {
    max_width: u32,
    max_height: u32,
    capacity: u32,
    objects_offset: u32,
    batches_offset: u32,
    count_offset: u32,
    overflow_offset: u32,
    pad: u32,
}

/// The outputs of a region pass, in caller-sized GPU storage.
#[derive(Clone, Copy, Debug)]
pub struct RegionPick {
    /// Node id prefix.
    pub id: &'static str,
    /// Imported uniform buffer holding a [`PickRegion`] (at least 16 bytes).
    pub region: BufferHandle,
    /// Largest region the pass covers (its dispatch size); larger regions are clipped.
    pub max_size: (u32, u32),
    /// Packed uint32 object IDs; its length is the capacity.
    pub objects: DataView,
    /// Packed uint32 batch IDs, as long as `objects`.
    pub batches: DataView,
    /// One packed uint32 row: covered pixels (may exceed the capacity).
    pub count: DataView,
    /// One packed uint32 row: 1 when pairs were dropped, else 0.
    pub overflow: DataView,
}

/// Which pixel a [`IndexPickingTarget::add_pixel_copy`] node copies on its next encodes.
#[derive(Clone, Debug, Default)]
pub struct PixelPick(Arc<Mutex<(u32, u32)>>);

impl PixelPick {
    /// Copies pixel `(x, y)` from the next encode on (checked against the target's size by
    /// [`IndexPickingTarget::set_pixel`]).
    fn set(&self, x: u32, y: u32) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = (x, y);
    }

    fn get(&self) -> (u32, u32) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An `Rg32Uint` object/batch ID target and its depth buffer (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct IndexPickingTarget {
    /// The ID texture (`RENDER_ATTACHMENT | TEXTURE_BINDING | COPY_SRC`).
    pub ids: TextureHandle,
    /// Its single-sample `Depth32Float` depth texture.
    pub depth: TextureHandle,
    /// Width and height in pixels.
    pub size: (u32, u32),
}

impl IndexPickingTarget {
    /// Declares the ID texture `{id}` and its depth texture `{id}/depth` in `graph`.
    pub fn create(
        graph: &mut CommandGraph,
        id: &str,
        size: (u32, u32),
    ) -> Result<Self, RenderError> {
        use wgpu::TextureUsages as T;
        let ids = graph.create_texture(TextureDescriptor::new(
            id,
            size,
            wgpu::TextureFormat::Rg32Uint,
            T::RENDER_ATTACHMENT | T::TEXTURE_BINDING | T::COPY_SRC,
        ))?;
        let depth = graph.create_texture(TextureDescriptor::new(
            format!("{id}/depth"),
            size,
            wgpu::TextureFormat::Depth32Float,
            T::RENDER_ATTACHMENT,
        ))?;
        Ok(Self { ids, depth, size })
    }

    /// The color attachment of a pass that draws IDs: cleared to [`NO_OBJECT`].
    pub fn color_attachment(&self) -> ColorAttachment {
        let none = f64::from(NO_OBJECT);
        ColorAttachment::new(
            self.ids,
            ColorLoad::Clear(wgpu::Color {
                r: none,
                g: none,
                b: 0.0,
                a: 0.0,
            }),
        )
    }

    /// The depth attachment of a pass that draws IDs: cleared to 1, discarded after the pass.
    pub fn depth_attachment(&self) -> DepthStencilAttachment {
        DepthStencilAttachment::cleared_depth(self.depth, 1.0)
    }

    /// Adds copy node `id` copying one texel (object, batch: 8 bytes) into the first 8 bytes
    /// of `out` (`COPY_DST`, e.g. a [`crate::ReadbackRing`] source or a mappable buffer) on
    /// every encode. The returned [`PixelPick`] selects the pixel through
    /// [`Self::set_pixel`].
    pub fn add_pixel_copy(
        &self,
        graph: &mut CommandGraph,
        id: &str,
        out: BufferHandle,
    ) -> Result<PixelPick, RenderError> {
        let at = PixelPick::default();
        let pick = at.clone();
        let ids = self.ids;
        graph.add_copy_node(CopyNode::new(
            id,
            vec![
                ResourceUse::texture(ids, TextureAccess::CopySrc),
                ResourceUse::copy_dst(out),
            ],
            move |_| {
                Ok(copy_fn(move |enc, ec| {
                    let (x, y) = pick.get();
                    enc.copy_texture_to_buffer(
                        wgpu::TexelCopyTextureInfo {
                            texture: ec.texture(ids),
                            mip_level: 0,
                            origin: wgpu::Origin3d { x, y, z: 0 },
                            aspect: wgpu::TextureAspect::All,
                        },
                        wgpu::TexelCopyBufferInfo {
                            buffer: ec.buffer(out),
                            layout: wgpu::TexelCopyBufferLayout {
                                offset: 0,
                                bytes_per_row: None,
                                rows_per_image: None,
                            },
                        },
                        wgpu::Extent3d {
                            width: 1,
                            height: 1,
                            depth_or_array_layers: 1,
                        },
                    );
                }))
            },
        ))?;
        Ok(at)
    }

    /// Points `pick` at pixel `(x, y)`; outside the target is [`RenderError::PickOutside`].
    pub fn set_pixel(&self, pick: &PixelPick, x: u32, y: u32) -> Result<(), RenderError> {
        let (width, height) = self.size;
        if x >= width || y >= height {
            return Err(RenderError::PickOutside {
                x,
                y,
                width,
                height,
            });
        }
        pick.set(x, y);
        Ok(())
    }

    /// Adds the region pass: dispatch node `{id}/reset` zeroes count and overflow, dispatch
    /// node `{id}/collect` samples mip 0 of the ID texture and appends the region's pairs (see
    /// the module doc); the sampled view orders it after the pass that drew the IDs. Checks
    /// formats and lengths now.
    pub fn add_region_pass(
        &self,
        graph: &mut CommandGraph,
        pass: RegionPick,
    ) -> Result<(), RenderError> {
        let bad = |what: &'static str, expected: &'static str, v: &DataView| {
            RenderError::UnsupportedView {
                workflow: "region pick",
                id: pass.id.into(),
                what,
                expected,
                actual: format!(
                    "{} rows of {} (packed {})",
                    v.len(),
                    v.format(),
                    v.is_packed()
                ),
            }
        };
        let packed = |v: &DataView| {
            v.format() == VectorFormat::Uint32 && v.is_packed() && v.live_count().is_none()
        };
        if !packed(&pass.objects) {
            return Err(bad("objects", "packed uint32 rows", &pass.objects));
        }
        if !packed(&pass.batches) || pass.batches.len() != pass.objects.len() {
            return Err(bad(
                "batches",
                "packed uint32 rows, as many as objects",
                &pass.batches,
            ));
        }
        for (what, v) in [("count", &pass.count), ("overflow", &pass.overflow)] {
            if !packed(v) || v.len() != 1 {
                return Err(bad(what, "one packed uint32 row", v));
            }
        }
        if graph.buffer_descriptor(pass.region)?.byte_length < 16 {
            return Err(RenderError::UnsupportedView {
                workflow: "region pick",
                id: pass.id.into(),
                what: "region",
                expected: "a uniform buffer of at least 16 bytes (PickRegion)",
                actual: format!(
                    "{} bytes",
                    graph.buffer_descriptor(pass.region)?.byte_length
                ),
            });
        }
        let capacity = u32::try_from(pass.objects.len()).map_err(|_| RenderError::TooManyRows {
            workflow: "region pick",
            id: pass.id.into(),
            rows: pass.objects.len(),
            limit: u64::from(u32::MAX),
        })?;
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let offset = |v: &DataView| v.aligned_range(align).element_offset as u32;
        let params = RegionParams {
            max_width: pass.max_size.0,
            max_height: pass.max_size.1,
            capacity,
            objects_offset: offset(&pass.objects),
            batches_offset: offset(&pass.batches),
            count_offset: offset(&pass.count),
            overflow_offset: offset(&pass.overflow),
            pad: 0,
        };
        let shader = ShaderSource::new("render/picking/region", REGION_WGSL);
        let (count, overflow) = (
            Binding::read_write(5, pass.count),
            Binding::read_write(6, pass.overflow),
        );
        graph.add_dispatch_node(DispatchNode::new(
            format!("{}/reset", pass.id),
            shader.clone(),
            "reset",
            vec![Binding::params(1, &params), count.clone(), overflow.clone()],
            Grid::Workgroups([1, 1, 1]),
        ))?;
        let ids = TextureSlot::sampled(self.ids, wgpu::TextureSampleType::Uint).mips(0, 1);
        graph.add_dispatch_node(DispatchNode::new(
            format!("{}/collect", pass.id),
            shader,
            "collect",
            vec![
                Binding::texture(0, ids),
                Binding::params(1, &params),
                Binding::handle(2, pass.region, Access::Uniform),
                Binding::read_write(3, pass.objects),
                Binding::read_write(4, pass.batches),
                count,
                overflow,
            ],
            Grid::Workgroups([pass.max_size.0.div_ceil(8), pass.max_size.1.div_ceil(8), 1]),
        ))?;
        Ok(())
    }
}
