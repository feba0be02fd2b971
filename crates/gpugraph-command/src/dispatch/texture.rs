//! Texture bindings of dispatch nodes: which subresources of a graph texture a kernel sees and
//! the WGSL type it sees them as.
//!
//! Design. A texture slot is declared like a buffer slot, and the graph derives its uses from
//! it: one use per (mip, layer) subresource the view covers, in the vocabulary render
//! attachments already use ([`crate::Subresource`], [`TextureAccess`]), so a dispatch that
//! samples mip 0 orders after the render pass that drew mip 0 (read after write) and before the
//! next pass that draws it (write after read), while a pass drawing another mip stays
//! unordered. The slot's WGSL type follows from the declaration and the texture's descriptor
//! ([`TextureSlot::wgsl_type`]) and is checked against the type naga reflects, so a kernel
//! reading `texture_2d<f32>` from a slot declared as `Uint` fails naming both. Samplers are
//! not declarable: kernels read texels with `textureLoad`.

use crate::attachment::{AttachmentUse, Subresource};
use crate::resource::{TextureAccess, TextureDescriptor, TextureHandle};

/// How a kernel reads or writes a bound texture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TextureKind {
    /// A sampled texture (`texture_2d<T>`, `texture_2d_array<T>`,
    /// `texture_multisampled_2d<T>`, `texture_depth_2d`) of this sample type; the texture's
    /// format must offer it (a filterable float format may also be read as unfilterable, a
    /// depth format as `Depth` or unfilterable float).
    Sampled(wgpu::TextureSampleType),
    /// A storage texture (`texture_storage_2d<format, access>`) in the texture's own format,
    /// one mip level.
    Storage(wgpu::StorageTextureAccess),
}

/// A view of a graph texture bound to a dispatch-node slot ([`super::Binding::texture`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextureSlot {
    /// The texture.
    pub texture: TextureHandle,
    /// How the kernel accesses it.
    pub kind: TextureKind,
    /// First mip level of the view.
    pub base_mip: u32,
    /// Mip levels of the view; `None`: every level from `base_mip` on.
    pub mip_count: Option<u32>,
    /// First array layer of the view.
    pub base_layer: u32,
    /// Array layers of the view; `None`: every layer from `base_layer` on.
    pub layer_count: Option<u32>,
    /// Whether the kernel declares an array texture (`texture_2d_array`, ...): a view of more
    /// than one layer must be one.
    pub array: bool,
}

impl TextureSlot {
    /// Every mip of layer 0 of `texture`, read as `sample_type`.
    pub fn sampled(texture: TextureHandle, sample_type: wgpu::TextureSampleType) -> Self {
        Self {
            texture,
            kind: TextureKind::Sampled(sample_type),
            base_mip: 0,
            mip_count: None,
            base_layer: 0,
            layer_count: Some(1),
            array: false,
        }
    }

    /// Mip `mip` of layer 0 of `texture` as a storage texture with `access`.
    pub fn storage(texture: TextureHandle, access: wgpu::StorageTextureAccess, mip: u32) -> Self {
        Self {
            texture,
            kind: TextureKind::Storage(access),
            base_mip: mip,
            mip_count: Some(1),
            base_layer: 0,
            layer_count: Some(1),
            array: false,
        }
    }

    /// The same slot viewing mips `base..base + count`.
    pub fn mips(mut self, base: u32, count: u32) -> Self {
        self.base_mip = base;
        self.mip_count = Some(count);
        self
    }

    /// The same slot as an array texture over layers `base..base + count`.
    pub fn layers(mut self, base: u32, count: u32) -> Self {
        self.base_layer = base;
        self.layer_count = Some(count);
        self.array = true;
        self
    }

    /// The graph-level access of the slot (read for sampled and read-only storage).
    pub(crate) fn accesses(&self) -> &'static [TextureAccess] {
        match self.kind {
            TextureKind::Sampled(_) => &[TextureAccess::Sampled],
            TextureKind::Storage(wgpu::StorageTextureAccess::ReadOnly) => {
                &[TextureAccess::StorageRead]
            }
            TextureKind::Storage(wgpu::StorageTextureAccess::ReadWrite)
            | TextureKind::Storage(wgpu::StorageTextureAccess::Atomic) => {
                &[TextureAccess::StorageRead, TextureAccess::StorageWrite]
            }
            TextureKind::Storage(_) => &[TextureAccess::StorageWrite],
        }
    }

    /// The slot resolved against its texture's descriptor, or why it cannot be bound.
    pub(crate) fn resolve(&self, desc: &TextureDescriptor) -> Result<ResolvedTexture, String> {
        let mips = self
            .mip_count
            .unwrap_or(desc.mip_level_count.saturating_sub(self.base_mip));
        let layers = self
            .layer_count
            .unwrap_or(desc.layers.saturating_sub(self.base_layer));
        let id = &desc.id;
        if mips == 0
            || self
                .base_mip
                .checked_add(mips)
                .is_none_or(|e| e > desc.mip_level_count)
        {
            return Err(format!(
                "texture {id}: mips {}..+{mips} outside its {} levels",
                self.base_mip, desc.mip_level_count
            ));
        }
        if layers == 0
            || self
                .base_layer
                .checked_add(layers)
                .is_none_or(|e| e > desc.layers)
        {
            return Err(format!(
                "texture {id}: layers {}..+{layers} outside its {} layers",
                self.base_layer, desc.layers
            ));
        }
        if layers > 1 && !self.array {
            return Err(format!(
                "texture {id}: a view of {layers} layers must be bound as an array texture"
            ));
        }
        let multisampled = desc.sample_count > 1;
        let ty = match self.kind {
            TextureKind::Sampled(sample_type) => {
                if !sample_type_fits(desc.format, sample_type) {
                    return Err(format!(
                        "texture {id}: format {:?} cannot be read as {sample_type:?}",
                        desc.format
                    ));
                }
                wgpu::BindingType::Texture {
                    sample_type,
                    view_dimension: self.dimension(),
                    multisampled,
                }
            }
            TextureKind::Storage(access) => {
                if mips != 1 || multisampled {
                    return Err(format!(
                        "texture {id}: a storage binding views one mip of a single-sample texture"
                    ));
                }
                wgpu::BindingType::StorageTexture {
                    access,
                    format: desc.format,
                    view_dimension: self.dimension(),
                }
            }
        };
        let uses = (self.base_mip..self.base_mip + mips)
            .flat_map(|mip_level| {
                (self.base_layer..self.base_layer + layers).flat_map(move |layer| {
                    self.accesses().iter().map(move |&access| AttachmentUse {
                        at: Subresource {
                            texture: self.texture,
                            mip_level,
                            layer,
                        },
                        access,
                    })
                })
            })
            .collect();
        Ok(ResolvedTexture {
            texture: self.texture,
            ty,
            view: wgpu::TextureViewDescriptor {
                label: None,
                format: None,
                dimension: Some(self.dimension()),
                usage: None,
                aspect: wgpu::TextureAspect::All,
                base_mip_level: self.base_mip,
                mip_level_count: Some(mips),
                base_array_layer: self.base_layer,
                array_layer_count: Some(layers),
            },
            uses,
            wgsl: self.wgsl_type(desc),
        })
    }

    fn dimension(&self) -> wgpu::TextureViewDimension {
        if self.array {
            wgpu::TextureViewDimension::D2Array
        } else {
            wgpu::TextureViewDimension::D2
        }
    }

    /// The WGSL type a kernel declares for this slot over a texture described by `desc`, as
    /// [`crate::shader::reflect::BindingKind::Texture`] spells it.
    pub fn wgsl_type(&self, desc: &TextureDescriptor) -> String {
        let array = if self.array { "_array" } else { "" };
        let multi = if desc.sample_count > 1 {
            "multisampled_"
        } else {
            ""
        };
        match self.kind {
            TextureKind::Sampled(wgpu::TextureSampleType::Depth) => {
                format!("texture_depth_{multi}2d{array}")
            }
            TextureKind::Sampled(t) => {
                let scalar = match t {
                    wgpu::TextureSampleType::Uint => "u32",
                    wgpu::TextureSampleType::Sint => "i32",
                    _ => "f32",
                };
                format!("texture_{multi}2d{array}<{scalar}>")
            }
            TextureKind::Storage(access) => {
                let access = match access {
                    wgpu::StorageTextureAccess::ReadOnly => "read",
                    wgpu::StorageTextureAccess::WriteOnly => "write",
                    _ => "read_write",
                };
                let format = format!("{:?}", desc.format).to_lowercase();
                format!("texture_storage_2d{array}<{format}, {access}>")
            }
        }
    }
}

/// Whether a texture of `format` can be bound as `declared`.
fn sample_type_fits(format: wgpu::TextureFormat, declared: wgpu::TextureSampleType) -> bool {
    use wgpu::TextureSampleType as S;
    let native = format
        .sample_type(None, None)
        .or_else(|| format.sample_type(Some(wgpu::TextureAspect::DepthOnly), None));
    match (native, declared) {
        (Some(n), d) if n == d => true,
        (Some(S::Float { filterable: true }), S::Float { filterable: false }) => true,
        (Some(S::Depth), S::Float { filterable: false }) => true,
        _ => false,
    }
}

/// A texture slot checked against its descriptor: the layout entry, the view to create at
/// encode time, the subresource uses the graph plans hazards from, and the WGSL type.
#[derive(Clone, Debug)]
pub(crate) struct ResolvedTexture {
    pub(crate) texture: TextureHandle,
    pub(crate) ty: wgpu::BindingType,
    pub(crate) view: wgpu::TextureViewDescriptor<'static>,
    pub(crate) uses: Vec<AttachmentUse>,
    pub(crate) wgsl: String,
}
