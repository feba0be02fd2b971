//! Render-pass attachments: color targets (with optional multisample resolve), a depth/stencil
//! target, each naming one subresource (mip level and array layer) of a graph texture.
//!
//! Design. A render pass node declares its attachments as data; the graph validates them when
//! the node is added (subresource in range, one extent and one sample count across the pass,
//! resolve source multisampled and destination single-sampled with the same format, the
//! depth/stencil aspects the format has, no subresource used twice in the pass) and plans
//! hazards per subresource: two nodes that render into different mips or layers of one texture
//! do not order each other, while a whole-texture use (a sampled binding, a copy) conflicts
//! with every subresource.

use crate::error::GraphError;
use crate::graph::{CommandGraph, NodeCompileFn, NodeEntry};
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

fn access_name(a: TextureAccess) -> &'static str {
    match a {
        TextureAccess::RenderTarget => "color attachment",
        TextureAccess::Resolve => "resolve target",
        TextureAccess::DepthStencil | TextureAccess::DepthStencilReadOnly => {
            "depth/stencil attachment"
        }
        _ => "binding",
    }
}

impl CommandGraph {
    /// Adds a render pass node after validating its attachments (see the module doc): every
    /// failure is a named [`GraphError`] before anything is recorded.
    pub fn add_render_pass_node(&mut self, node: RenderPassNode) -> Result<(), GraphError> {
        let mut attachments = Vec::new();
        for c in &node.color {
            attachments.push(AttachmentUse {
                at: c.target,
                access: TextureAccess::RenderTarget,
            });
            if let Some(r) = c.resolve {
                attachments.push(AttachmentUse {
                    at: r,
                    access: TextureAccess::Resolve,
                });
            }
        }
        if let Some(d) = &node.depth_stencil {
            attachments.push(AttachmentUse {
                at: d.target,
                access: if d.read_only {
                    TextureAccess::DepthStencilReadOnly
                } else {
                    TextureAccess::DepthStencil
                },
            });
        }
        let mut all_uses = node.uses.clone();
        all_uses.extend(
            attachments
                .iter()
                .map(|a| ResourceUse::Texture(a.at.texture, a.access)),
        );
        self.check_node(&node.id, &all_uses)?;
        self.check_attachments(&node, &attachments)?;
        self.node_ids.insert(node.id.clone());
        self.nodes.push(NodeEntry {
            id: node.id,
            uses: node.uses,
            attachments,
            depends_on: node.depends_on,
            compile: NodeCompileFn::Render(
                node.compile,
                PassLayout {
                    color: node.color,
                    depth_stencil: node.depth_stencil,
                },
            ),
        });
        Ok(())
    }

    fn check_attachments(
        &self,
        node: &RenderPassNode,
        attachments: &[AttachmentUse],
    ) -> Result<(), GraphError> {
        let id = &node.id;
        if node.color.is_empty() && node.depth_stencil.is_none() {
            return Err(GraphError::AttachmentMismatch {
                node: id.clone(),
                texture: "(none)".into(),
                property: "attachment count",
                expected: "at least one color or depth/stencil attachment".into(),
                found: "0".into(),
            });
        }
        let desc = |h: TextureHandle| &self.textures[h.index as usize].desc;
        let mismatch = |h: TextureHandle, property, expected: String, found: String| {
            GraphError::AttachmentMismatch {
                node: id.clone(),
                texture: desc(h).id.clone(),
                property,
                expected,
                found,
            }
        };
        for a in attachments {
            let d = desc(a.at.texture);
            if a.at.mip_level >= d.mip_level_count || a.at.layer >= d.layers {
                return Err(GraphError::SubresourceOutOfRange {
                    node: id.clone(),
                    texture: d.id.clone(),
                    mip_level: a.at.mip_level,
                    layer: a.at.layer,
                    mip_levels: d.mip_level_count,
                    layers: d.layers,
                });
            }
        }
        // One extent for every attachment; one sample count for the rendered ones.
        let first = attachments[0].at;
        let extent = desc(first.texture).extent_at(first.mip_level);
        let samples = desc(first.texture).sample_count;
        for a in attachments {
            let d = desc(a.at.texture);
            let e = d.extent_at(a.at.mip_level);
            if e != extent {
                return Err(mismatch(
                    a.at.texture,
                    "extent",
                    format!("{extent:?}"),
                    format!("{e:?} at mip {}", a.at.mip_level),
                ));
            }
            let want = if a.access == TextureAccess::Resolve {
                1
            } else {
                samples
            };
            if d.sample_count != want {
                return Err(mismatch(
                    a.at.texture,
                    "sample count",
                    want.to_string(),
                    d.sample_count.to_string(),
                ));
            }
        }
        for c in &node.color {
            let d = desc(c.target.texture);
            if d.format.is_depth_stencil_format() {
                return Err(mismatch(
                    c.target.texture,
                    "format",
                    "a color format".into(),
                    format!("{:?}", d.format),
                ));
            }
            if let Some(r) = c.resolve {
                if d.sample_count == 1 {
                    return Err(mismatch(
                        c.target.texture,
                        "sample count",
                        "more than 1 (it has a resolve target)".into(),
                        "1".into(),
                    ));
                }
                let rf = desc(r.texture).format;
                if rf != d.format {
                    return Err(mismatch(
                        r.texture,
                        "format",
                        format!("{:?} (its source's)", d.format),
                        format!("{rf:?}"),
                    ));
                }
            }
        }
        if let Some(ds) = &node.depth_stencil {
            let f = desc(ds.target.texture).format;
            let aspect = |property, has: bool, given: bool| {
                let need = has && !ds.read_only;
                if need != given {
                    let want = if need { "operations" } else { "none" };
                    let got = if given { "operations" } else { "none" };
                    return Err(mismatch(
                        ds.target.texture,
                        property,
                        format!("{want} ({f:?}, read-only {})", ds.read_only),
                        got.into(),
                    ));
                }
                Ok(())
            };
            if !f.is_depth_stencil_format() {
                return Err(mismatch(
                    ds.target.texture,
                    "format",
                    "a depth/stencil format".into(),
                    format!("{f:?}"),
                ));
            }
            aspect("depth aspect", f.has_depth_aspect(), ds.depth.is_some())?;
            aspect(
                "stencil aspect",
                f.has_stencil_aspect(),
                ds.stencil.is_some(),
            )?;
        }
        // A subresource attached twice, or attached and also bound by this node.
        for (i, a) in attachments.iter().enumerate() {
            if let Some(b) = attachments[..i].iter().find(|b| b.at == a.at) {
                return Err(GraphError::SamePassConflict {
                    node: id.clone(),
                    texture: desc(a.at.texture).id.clone(),
                    mip_level: a.at.mip_level,
                    layer: a.at.layer,
                    first: access_name(b.access),
                    second: access_name(a.access),
                });
            }
            let bound = node
                .uses
                .iter()
                .any(|u| matches!(u, ResourceUse::Texture(t, _) if *t == a.at.texture));
            if bound {
                return Err(GraphError::SamePassConflict {
                    node: id.clone(),
                    texture: desc(a.at.texture).id.clone(),
                    mip_level: a.at.mip_level,
                    layer: a.at.layer,
                    first: access_name(a.access),
                    second: "binding",
                });
            }
        }
        Ok(())
    }
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
