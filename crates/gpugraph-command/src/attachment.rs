//! Render-pass attachments: color targets (with optional multisample resolve), a depth/stencil
//! target, each naming one subresource (mip level and array layer) of a graph texture.
//!
//! Design. A render pass node declares its attachments as data; the graph validates them when
//! the node is added (subresource in range, one extent and one sample count across the pass,
//! resolve source multisampled and destination single-sampled with the same format, the
//! depth/stencil aspects the format has, no subresource used twice in the pass) and plans
//! hazards per subresource: two nodes that render into different mips or layers of one texture
//! do not order each other, while a whole-texture use (a sampled binding, a copy) conflicts
//! with every subresource. The graph validates and records them in
//! [`crate::graph`] (`graph/render_pass.rs`); this module holds the vocabulary, which dispatch
//! nodes' texture views share.

use crate::node::{ColorLoad, RenderCompile};
use crate::resource::{ResourceUse, TextureAccess, TextureHandle};

/// One mip level of one array layer of a graph texture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Subresource {
    /// The texture.
    pub texture: TextureHandle,
    /// Mip level.
    pub mip_level: u32,
    /// Array layer.
    pub layer: u32,
}

impl Subresource {
    /// Mip 0, layer 0 of `texture`.
    pub fn base(texture: TextureHandle) -> Self {
        Self {
            texture,
            mip_level: 0,
            layer: 0,
        }
    }
}

/// A color attachment of a render pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColorAttachment {
    /// Where the pass renders.
    pub target: Subresource,
    /// How the attachment starts.
    pub load: ColorLoad,
    /// Whether the rendered samples are kept after the pass (a multisampled target that is
    /// only resolved may discard them).
    pub store: bool,
    /// Single-sample destination of the multisample resolve, if any.
    pub resolve: Option<Subresource>,
}

impl ColorAttachment {
    /// Renders into mip 0, layer 0 of `texture`, storing the result, without resolve.
    pub fn new(texture: TextureHandle, load: ColorLoad) -> Self {
        Self {
            target: Subresource::base(texture),
            load,
            store: true,
            resolve: None,
        }
    }

    /// The same attachment resolved into mip 0, layer 0 of `texture` at the end of the pass.
    pub fn resolve_into(mut self, texture: TextureHandle) -> Self {
        self.resolve = Some(Subresource::base(texture));
        self
    }
}

/// Load and store of one depth/stencil aspect; `clear: None` keeps the existing values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AspectOps<T> {
    /// Clear value, or `None` to load.
    pub clear: Option<T>,
    /// Whether the pass's writes are kept.
    pub store: bool,
}

/// The depth/stencil attachment of a render pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DepthStencilAttachment {
    /// The depth/stencil subresource.
    pub target: Subresource,
    /// Depth operations: required exactly when the format has a depth aspect and the
    /// attachment is writable.
    pub depth: Option<AspectOps<f32>>,
    /// Stencil operations: required exactly when the format has a stencil aspect and the
    /// attachment is writable.
    pub stencil: Option<AspectOps<u32>>,
    /// Depth/stencil test without writes; then both operations must be `None`.
    pub read_only: bool,
}

impl DepthStencilAttachment {
    /// A writable depth attachment at mip 0, layer 0, cleared to `clear` and discarded after
    /// the pass (the usual case: depth only serves the pass's own test).
    pub fn cleared_depth(texture: TextureHandle, clear: f32) -> Self {
        Self {
            target: Subresource::base(texture),
            depth: Some(AspectOps {
                clear: Some(clear),
                store: false,
            }),
            stencil: None,
            read_only: false,
        }
    }
}

/// Declaration of a render pass node: attachments, other uses, and the compile callback.
pub struct RenderPassNode {
    /// Stable id.
    pub id: String,
    /// Color attachments in `@location` order (at least one, or a depth/stencil attachment).
    pub color: Vec<ColorAttachment>,
    /// Optional depth/stencil attachment.
    pub depth_stencil: Option<DepthStencilAttachment>,
    /// Every other resource the node touches (vertex, index, indirect, storage, sampled).
    pub uses: Vec<ResourceUse>,
    /// Explicit predecessors.
    pub depends_on: Vec<String>,
    /// Creates the executable at graph compile time.
    pub compile: RenderCompile,
}

/// One attachment as the planner sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AttachmentUse {
    pub(crate) at: Subresource,
    pub(crate) access: TextureAccess,
}

/// What the graph needs at compile time to create the pass's views and operations.
#[derive(Clone, Debug)]
pub(crate) struct PassLayout {
    pub(crate) color: Vec<ColorAttachment>,
    pub(crate) depth_stencil: Option<DepthStencilAttachment>,
}

/// A view of exactly one subresource (one mip, one layer, all aspects).
pub(crate) fn subresource_view(texture: &wgpu::Texture, at: Subresource) -> wgpu::TextureView {
    texture.create_view(&wgpu::TextureViewDescriptor {
        label: None,
        dimension: Some(wgpu::TextureViewDimension::D2),
        base_mip_level: at.mip_level,
        mip_level_count: Some(1),
        base_array_layer: at.layer,
        array_layer_count: Some(1),
        ..Default::default()
    })
}

/// Why one dispatch cannot bind these subresource uses together: a storage write of a
/// subresource excludes every other binding of it in the same dispatch (wgpu's usage scope).
pub(crate) fn binding_conflict(uses: &[AttachmentUse]) -> Option<String> {
    for (i, a) in uses.iter().enumerate() {
        let writes = |u: &AttachmentUse| u.access == TextureAccess::StorageWrite;
        let clash = uses[..i].iter().filter(|b| b.at == a.at).any(|b| {
            writes(a) && writes(b)
                || (writes(a) || writes(b))
                    && (a.access == TextureAccess::Sampled || b.access == TextureAccess::Sampled)
        });
        if clash {
            return Some(format!(
                "mip {} layer {} of a texture is bound by two slots, one a storage write",
                a.at.mip_level, a.at.layer
            ));
        }
    }
    None
}
