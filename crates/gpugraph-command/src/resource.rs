//! Logical graph resources: buffer and texture handles, their descriptors, and declared uses.
//!
//! Handles are opaque `Copy` ids into one [`crate::CommandGraph`]; users never construct them.
//! A handle names a whole logical allocation; views (see [`crate::view`]) name ranges inside it.

use wgpu::{BufferUsages, TextureUsages};

/// Identity of a graph (for rejecting handles from another graph).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct GraphKey(pub(crate) u64);

/// Opaque reference to one logical buffer of a graph (imported or transient).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferHandle {
    pub(crate) graph: GraphKey,
    pub(crate) index: u32,
}

/// Opaque reference to one logical texture of a graph (imported or graph-owned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TextureHandle {
    pub(crate) graph: GraphKey,
    pub(crate) index: u32,
}

/// Describes a logical buffer: its id, the byte length the graph compiles against, and every
/// usage any executable may need. For imports it is a promise every supplied buffer must keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferDescriptor {
    /// Unique id within the graph; appears in labels and errors.
    pub id: String,
    /// Required byte length (compiled capacity).
    pub byte_length: u64,
    /// Union of creation usages the graph may rely on; must be nonzero.
    pub usage: BufferUsages,
}

impl BufferDescriptor {
    /// Descriptor with the given id, byte length and usage.
    pub fn new(id: impl Into<String>, byte_length: u64, usage: BufferUsages) -> Self {
        Self {
            id: id.into(),
            byte_length,
            usage,
        }
    }
}

/// Describes a logical 2-D texture (optionally an array, mipmapped or multisampled).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextureDescriptor {
    /// Unique id within the graph (textures and buffers share one id namespace).
    pub id: String,
    /// Width and height of mip level 0 in texels.
    pub size: (u32, u32),
    /// Texel format.
    pub format: wgpu::TextureFormat,
    /// Union of creation usages the graph may rely on; must be nonzero.
    pub usage: TextureUsages,
    /// Mip levels (1 ..= the full chain of `size`).
    pub mip_level_count: u32,
    /// Samples per texel: 1, or a count the format supports for multisampling (then one mip
    /// and `RENDER_ATTACHMENT` without `STORAGE_BINDING`).
    pub sample_count: u32,
    /// Array layers (1 for a plain 2-D texture).
    pub layers: u32,
}

impl TextureDescriptor {
    /// A single-sample, single-mip, single-layer texture.
    pub fn new(
        id: impl Into<String>,
        size: (u32, u32),
        format: wgpu::TextureFormat,
        usage: TextureUsages,
    ) -> Self {
        Self {
            id: id.into(),
            size,
            format,
            usage,
            mip_level_count: 1,
            sample_count: 1,
            layers: 1,
        }
    }

    /// The same texture with `samples` samples per texel.
    pub fn with_samples(mut self, samples: u32) -> Self {
        self.sample_count = samples;
        self
    }

    /// The same texture with `mips` mip levels.
    pub fn with_mips(mut self, mips: u32) -> Self {
        self.mip_level_count = mips;
        self
    }

    /// The same texture with `layers` array layers.
    pub fn with_layers(mut self, layers: u32) -> Self {
        self.layers = layers;
        self
    }

    /// Width and height of mip level `mip` (at least 1 texel each).
    pub fn extent_at(&self, mip: u32) -> (u32, u32) {
        let shrink = |v: u32| v.checked_shr(mip).unwrap_or(0).max(1);
        (shrink(self.size.0), shrink(self.size.1))
    }

    /// The wgpu descriptor the graph creates a graph-owned texture from.
    pub fn wgpu_descriptor(&self) -> wgpu::TextureDescriptor<'_> {
        wgpu::TextureDescriptor {
            label: Some(&self.id),
            size: wgpu::Extent3d {
                width: self.size.0,
                height: self.size.1,
                depth_or_array_layers: self.layers,
            },
            mip_level_count: self.mip_level_count,
            sample_count: self.sample_count,
            dimension: wgpu::TextureDimension::D2,
            format: self.format,
            usage: self.usage,
            view_formats: &[],
        }
    }
}

/// Whether a logical resource is caller-owned or graph-owned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// Borrowed from the caller; never destroyed by the graph; may be overridden per encode.
    Imported,
    /// Owned by the compiled graph; may share a physical allocation with disjoint lifetimes.
    Transient,
}

/// How a node uses a buffer. Each access implies one required [`BufferUsages`] flag and a
/// read and/or write role for hazard analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferAccess {
    /// Read-only storage binding.
    StorageRead,
    /// Write-only storage binding (still a STORAGE usage).
    StorageWrite,
    /// Read-write storage binding.
    StorageReadWrite,
    /// Uniform binding.
    Uniform,
    /// Source of a copy.
    CopySrc,
    /// Destination of a copy (or `clear_buffer`).
    CopyDst,
    /// Vertex buffer.
    Vertex,
    /// Index buffer.
    Index,
    /// Indirect draw/dispatch arguments.
    Indirect,
}

impl BufferAccess {
    /// The buffer usage flag this access requires.
    pub fn required_usage(self) -> BufferUsages {
        match self {
            BufferAccess::StorageRead
            | BufferAccess::StorageWrite
            | BufferAccess::StorageReadWrite => BufferUsages::STORAGE,
            BufferAccess::Uniform => BufferUsages::UNIFORM,
            BufferAccess::CopySrc => BufferUsages::COPY_SRC,
            BufferAccess::CopyDst => BufferUsages::COPY_DST,
            BufferAccess::Vertex => BufferUsages::VERTEX,
            BufferAccess::Index => BufferUsages::INDEX,
            BufferAccess::Indirect => BufferUsages::INDIRECT,
        }
    }

    /// Whether this access reads the buffer's contents.
    pub fn reads(self) -> bool {
        !matches!(self, BufferAccess::StorageWrite | BufferAccess::CopyDst)
    }

    /// Whether this access writes the buffer's contents.
    pub fn writes(self) -> bool {
        matches!(
            self,
            BufferAccess::StorageWrite | BufferAccess::StorageReadWrite | BufferAccess::CopyDst
        )
    }
}

/// How a node uses a texture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TextureAccess {
    /// Sampled or loaded through a texture binding.
    Sampled,
    /// Read-only storage texture binding.
    StorageRead,
    /// Write-only or read-write storage texture binding.
    StorageWrite,
    /// Color attachment of a render node (written).
    RenderTarget,
    /// Source of a copy.
    CopySrc,
    /// Destination of a copy.
    CopyDst,
    /// Depth/stencil attachment that the pass may write (its load may also read).
    DepthStencil,
    /// Read-only depth/stencil attachment (depth test without writes).
    DepthStencilReadOnly,
    /// Multisample resolve target of a color attachment (written at the end of the pass).
    Resolve,
}

impl TextureAccess {
    /// The texture usage flag this access requires.
    pub fn required_usage(self) -> TextureUsages {
        match self {
            TextureAccess::Sampled => TextureUsages::TEXTURE_BINDING,
            TextureAccess::StorageRead | TextureAccess::StorageWrite => {
                TextureUsages::STORAGE_BINDING
            }
            TextureAccess::RenderTarget
            | TextureAccess::DepthStencil
            | TextureAccess::DepthStencilReadOnly
            | TextureAccess::Resolve => TextureUsages::RENDER_ATTACHMENT,
            TextureAccess::CopySrc => TextureUsages::COPY_SRC,
            TextureAccess::CopyDst => TextureUsages::COPY_DST,
        }
    }

    /// Whether this access reads the texture.
    pub fn reads(self) -> bool {
        matches!(
            self,
            TextureAccess::Sampled
                | TextureAccess::StorageRead
                | TextureAccess::CopySrc
                | TextureAccess::DepthStencilReadOnly
        )
    }

    /// Whether this access writes the texture.
    pub fn writes(self) -> bool {
        !self.reads()
    }
}

/// One declared use of a logical resource by a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceUse {
    /// A buffer use.
    Buffer(BufferHandle, BufferAccess),
    /// A texture use.
    Texture(TextureHandle, TextureAccess),
}

impl ResourceUse {
    /// `buffer` bound as read-only storage.
    pub fn storage_read(buffer: impl Into<BufferHandle>) -> Self {
        Self::Buffer(buffer.into(), BufferAccess::StorageRead)
    }
    /// `buffer` bound as write-only storage.
    pub fn storage_write(buffer: impl Into<BufferHandle>) -> Self {
        Self::Buffer(buffer.into(), BufferAccess::StorageWrite)
    }
    /// `buffer` bound as read-write storage.
    pub fn storage_read_write(buffer: impl Into<BufferHandle>) -> Self {
        Self::Buffer(buffer.into(), BufferAccess::StorageReadWrite)
    }
    /// `buffer` bound as a uniform.
    pub fn uniform(buffer: impl Into<BufferHandle>) -> Self {
        Self::Buffer(buffer.into(), BufferAccess::Uniform)
    }
    /// `buffer` as a copy source.
    pub fn copy_src(buffer: impl Into<BufferHandle>) -> Self {
        Self::Buffer(buffer.into(), BufferAccess::CopySrc)
    }
    /// `buffer` as a copy destination.
    pub fn copy_dst(buffer: impl Into<BufferHandle>) -> Self {
        Self::Buffer(buffer.into(), BufferAccess::CopyDst)
    }
    /// `buffer` as a vertex buffer.
    pub fn vertex(buffer: impl Into<BufferHandle>) -> Self {
        Self::Buffer(buffer.into(), BufferAccess::Vertex)
    }
    /// `buffer` as an index buffer.
    pub fn index(buffer: impl Into<BufferHandle>) -> Self {
        Self::Buffer(buffer.into(), BufferAccess::Index)
    }
    /// `buffer` as indirect arguments.
    pub fn indirect(buffer: impl Into<BufferHandle>) -> Self {
        Self::Buffer(buffer.into(), BufferAccess::Indirect)
    }
    /// `texture` with the given access.
    pub fn texture(texture: TextureHandle, access: TextureAccess) -> Self {
        Self::Texture(texture, access)
    }

    pub(crate) fn reads(&self) -> bool {
        match self {
            ResourceUse::Buffer(_, a) => a.reads(),
            ResourceUse::Texture(_, a) => a.reads(),
        }
    }

    pub(crate) fn writes(&self) -> bool {
        match self {
            ResourceUse::Buffer(_, a) => a.writes(),
            ResourceUse::Texture(_, a) => a.writes(),
        }
    }
}
