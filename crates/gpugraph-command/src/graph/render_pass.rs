//! Adding render pass nodes: attachment validation (see [`crate::attachment`] for the rules)
//! and the node's per-subresource uses.

use super::{CommandGraph, NodeCompileFn, NodeEntry};
use crate::attachment::{AttachmentUse, PassLayout, RenderPassNode};
use crate::error::GraphError;
use crate::resource::{ResourceUse, TextureAccess, TextureHandle};

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
