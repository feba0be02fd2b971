//! [`CommandGraph`]: the builder. It records logical resources, views and nodes, validates each
//! declaration as it arrives, and `compile(self)` turns it into a [`crate::CompiledGraph`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use wgpu::BufferUsages;

use crate::device_check::same_device_buffer;
use crate::error::{
    buffer_access_name, texture_access_name, texture_usage_name, usage_name, GraphError,
};
use crate::node::{ComputeCompile, CopyCompile, RenderCompile};
use crate::node::{CopyNode, RenderNode};
use crate::resource::{
    BufferDescriptor, BufferHandle, GraphKey, Lifetime, ResourceUse, TextureAccess,
    TextureDescriptor, TextureHandle,
};
use crate::view::{DataView, DataViewDescriptor, VectorView};

mod render_pass;
mod textures;

static NEXT_GRAPH: AtomicU64 = AtomicU64::new(1);

pub(crate) struct BufferEntry {
    pub(crate) desc: BufferDescriptor,
    pub(crate) lifetime: Lifetime,
    /// The default buffer of an import.
    pub(crate) import: Option<wgpu::Buffer>,
}

pub(crate) struct TextureEntry {
    pub(crate) desc: TextureDescriptor,
    pub(crate) import: Option<wgpu::Texture>,
    /// Imported per encoding with a frame ID ([`CommandGraph::import_frame_texture`]).
    pub(crate) frame: bool,
    /// A sampled-only external image ([`CommandGraph::import_external_texture`]).
    pub(crate) external: bool,
}

pub(crate) enum NodeCompileFn {
    Compute(ComputeCompile),
    Render(RenderCompile, crate::attachment::PassLayout),
    Copy(CopyCompile),
}

pub(crate) struct NodeEntry {
    pub(crate) id: String,
    pub(crate) uses: Vec<ResourceUse>,
    /// Subresource uses (hazards are per subresource): render attachments and the texture
    /// views of dispatch nodes.
    pub(crate) attachments: Vec<crate::attachment::AttachmentUse>,
    pub(crate) depends_on: Vec<String>,
    pub(crate) compile: NodeCompileFn,
}

/// A command-graph builder bound to one `wgpu::Device`.
///
/// Declares imported and transient resources, typed views, and compute/render/copy nodes with
/// their uses. Nothing is recorded or allocated on the GPU until [`CommandGraph::compile`],
/// which consumes the builder (so a graph cannot be mutated or compiled twice).
pub struct CommandGraph {
    pub(crate) id: String,
    pub(crate) key: GraphKey,
    pub(crate) device: wgpu::Device,
    pub(crate) buffers: Vec<BufferEntry>,
    pub(crate) textures: Vec<TextureEntry>,
    pub(crate) nodes: Vec<NodeEntry>,
    /// Ids taken by buffers and textures (one namespace) and by nodes, and the imported
    /// buffers: O(1) duplicate checks keep building a 10,000-node graph linear.
    resource_ids: HashSet<String>,
    pub(crate) node_ids: HashSet<String>,
    imports: HashMap<wgpu::Buffer, u32>,
}

impl CommandGraph {
    /// An empty graph named `id` on `device`.
    pub fn new(id: impl Into<String>, device: &wgpu::Device) -> Self {
        Self {
            id: id.into(),
            key: GraphKey(NEXT_GRAPH.fetch_add(1, Ordering::Relaxed)),
            device: device.clone(),
            buffers: Vec::new(),
            textures: Vec::new(),
            nodes: Vec::new(),
            resource_ids: HashSet::new(),
            node_ids: HashSet::new(),
            imports: HashMap::new(),
        }
    }

    /// The graph id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The device the graph records for.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// Number of nodes declared so far.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    fn check_resource_id(&self, id: &str) -> Result<(), GraphError> {
        let taken = self.resource_ids.contains(id);
        if taken {
            return Err(GraphError::DuplicateId {
                graph: self.id.clone(),
                kind: "resource",
                id: id.to_string(),
            });
        }
        Ok(())
    }

    fn check_buffer_desc(&self, desc: &BufferDescriptor) -> Result<(), GraphError> {
        self.check_resource_id(&desc.id)?;
        if desc.usage.is_empty() {
            return Err(self.invalid_desc(
                &desc.id,
                "usage is empty; declare every use the graph may need".into(),
            ));
        }
        let map_partner = [
            (BufferUsages::MAP_READ, BufferUsages::COPY_DST),
            (BufferUsages::MAP_WRITE, BufferUsages::COPY_SRC),
        ];
        let primary = self
            .device
            .features()
            .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);
        for (map, partner) in map_partner {
            if !primary && desc.usage.contains(map) && !(desc.usage - map - partner).is_empty() {
                return Err(self.invalid_desc(
                    &desc.id,
                    format!(
                        "usage {:?} combines {map:?} with flags other than {partner:?}",
                        desc.usage
                    ),
                ));
            }
        }
        let max = self.device.limits().max_buffer_size;
        if desc.byte_length > max {
            return Err(self.invalid_desc(
                &desc.id,
                format!(
                    "byte length {} exceeds the device's max buffer size {max}",
                    desc.byte_length
                ),
            ));
        }
        Ok(())
    }

    fn invalid_desc(&self, id: &str, reason: String) -> GraphError {
        GraphError::InvalidDescriptor {
            graph: self.id.clone(),
            id: id.to_string(),
            reason,
        }
    }

    /// Imports a caller-owned buffer. The graph borrows it (never destroys it) and checks now
    /// that it belongs to the graph's device, is at least `desc.byte_length` bytes, and was
    /// created with every flag in `desc.usage`. A physical buffer is imported once (a second
    /// import is an error): views of one handle share a hazard chain, two handles would not.
    pub fn import_buffer(
        &mut self,
        desc: BufferDescriptor,
        buffer: &wgpu::Buffer,
    ) -> Result<BufferHandle, GraphError> {
        self.check_buffer_desc(&desc)?;
        if let Some(existing) = self.imports.get(buffer).map(|&i| &self.buffers[i as usize]) {
            return Err(GraphError::DuplicateImport {
                id: desc.id,
                existing: existing.desc.id.clone(),
            });
        }
        validate_buffer(&self.id, &self.device, &desc, buffer)?;
        Ok(self.push_buffer(desc, Lifetime::Imported, Some(buffer.clone())))
    }

    /// The handle under which `buffer` was imported, if it was.
    pub fn imported_handle(&self, buffer: &wgpu::Buffer) -> Option<BufferHandle> {
        let index = *self.imports.get(buffer)?;
        Some(BufferHandle {
            graph: self.key,
            index,
        })
    }

    /// The handle of `buffer`: the one it was imported under, else a new import of the whole
    /// buffer under `id` with `usage` (for builders that meet the same buffer several times,
    /// e.g. one slab behind many views).
    pub fn import_buffer_once(
        &mut self,
        id: impl Into<String>,
        buffer: &wgpu::Buffer,
        usage: wgpu::BufferUsages,
    ) -> Result<BufferHandle, GraphError> {
        match self.imported_handle(buffer) {
            Some(h) => Ok(h),
            None => self.import_buffer(BufferDescriptor::new(id, buffer.size(), usage), buffer),
        }
    }

    /// Declares a graph-owned transient buffer. Its physical allocation is created at compile
    /// time and may be shared with transients whose lifetimes do not overlap.
    pub fn create_buffer(&mut self, desc: BufferDescriptor) -> Result<BufferHandle, GraphError> {
        self.check_buffer_desc(&desc)?;
        Ok(self.push_buffer(desc, Lifetime::Transient, None))
    }

    fn push_buffer(
        &mut self,
        desc: BufferDescriptor,
        lifetime: Lifetime,
        import: Option<wgpu::Buffer>,
    ) -> BufferHandle {
        let index = self.buffers.len() as u32;
        self.resource_ids.insert(desc.id.clone());
        if let Some(b) = &import {
            self.imports.insert(b.clone(), index);
        }
        self.buffers.push(BufferEntry {
            desc,
            lifetime,
            import,
        });
        BufferHandle {
            graph: self.key,
            index: (self.buffers.len() - 1) as u32,
        }
    }

    fn entry(&self, h: BufferHandle, what: &str) -> Result<&BufferEntry, GraphError> {
        if h.graph != self.key {
            return Err(GraphError::ForeignHandle {
                graph: self.id.clone(),
                what: what.to_string(),
            });
        }
        Ok(&self.buffers[h.index as usize])
    }

    /// The descriptor of a logical buffer.
    pub fn buffer_descriptor(&self, h: BufferHandle) -> Result<&BufferDescriptor, GraphError> {
        Ok(&self.entry(h, "buffer handle")?.desc)
    }

    /// The descriptor of a logical texture.
    pub fn texture_descriptor(&self, h: TextureHandle) -> Result<&TextureDescriptor, GraphError> {
        if h.graph != self.key {
            return Err(GraphError::ForeignHandle {
                graph: self.id.clone(),
                what: "texture handle".into(),
            });
        }
        Ok(&self.textures[h.index as usize].desc)
    }

    /// Whether a buffer is imported or transient.
    pub fn buffer_lifetime(&self, h: BufferHandle) -> Result<Lifetime, GraphError> {
        Ok(self.entry(h, "buffer handle")?.lifetime)
    }

    /// Creates a typed view inside `buffer`; it must fit: `byte_offset + (length-1)·stride +
    /// row size ≤ byte length`, the stride at least the row size, offset and stride aligned to
    /// the format's component size.
    pub fn create_data_view(
        &self,
        buffer: BufferHandle,
        desc: DataViewDescriptor,
    ) -> Result<DataView, GraphError> {
        let entry = self.entry(buffer, "view buffer")?;
        let row = desc.format.byte_size() as u64;
        let stride = desc.byte_stride.unwrap_or(row);
        let invalid = |reason: String| GraphError::InvalidView {
            buffer: entry.desc.id.clone(),
            reason,
        };
        if stride < row {
            return Err(invalid(format!(
                "byte stride {stride} is smaller than the {} row size {row}",
                desc.format
            )));
        }
        let align = desc.format.component_bytes() as u64;
        if !desc.byte_offset.is_multiple_of(align) || !stride.is_multiple_of(align) {
            return Err(invalid(format!(
                "byte offset {} / stride {stride} not aligned to {align} bytes for {}",
                desc.byte_offset, desc.format
            )));
        }
        let view = DataView {
            buffer,
            format: desc.format,
            length: desc.length,
            byte_offset: desc.byte_offset,
            byte_stride: stride,
            live: None,
        };
        let span = desc
            .length
            .checked_sub(1)
            .and_then(|n| n.checked_mul(stride))
            .and_then(|b| b.checked_add(row))
            .unwrap_or(if desc.length == 0 { 0 } else { u64::MAX });
        let end = desc.byte_offset.checked_add(span);
        if end.is_none_or(|end| end > entry.desc.byte_length) {
            return Err(GraphError::ViewOutOfRange {
                buffer: entry.desc.id.clone(),
                byte_offset: desc.byte_offset,
                byte_span: span,
                byte_length: entry.desc.byte_length,
            });
        }
        Ok(view)
    }

    /// `view` with the live count `count` (one packed uint32 row at a 4-byte aligned offset,
    /// of this graph): consumers then read `min(count, view.len())` rows (see [`DataView`]).
    pub fn with_live_count(&self, view: DataView, count: DataView) -> Result<DataView, GraphError> {
        self.entry(view.buffer, "live-count view")?;
        let entry = self.entry(count.buffer, "live count")?;
        if count.format != crate::VectorFormat::Uint32
            || count.length != 1
            || count.live.is_some()
            || !count.byte_offset.is_multiple_of(4)
        {
            return Err(GraphError::InvalidView {
                buffer: entry.desc.id.clone(),
                reason: format!(
                    "a live count must be one uint32 row at a 4-byte aligned offset, got {} rows of {} at byte {}",
                    count.length, count.format, count.byte_offset
                ),
            });
        }
        Ok(DataView {
            live: Some(crate::view::LiveCount {
                buffer: count.buffer,
                byte_offset: count.byte_offset,
            }),
            ..view
        })
    }

    /// A packed view of `length` rows of `format` at byte 0 of `buffer`.
    pub fn create_packed_view(
        &self,
        buffer: BufferHandle,
        format: crate::VectorFormat,
        length: u64,
    ) -> Result<DataView, GraphError> {
        self.create_data_view(buffer, DataViewDescriptor::packed(format, length))
    }

    /// Groups views into a vector view after checking they belong to this graph and share one
    /// format.
    pub fn create_vector_view(&self, chunks: Vec<DataView>) -> Result<VectorView, GraphError> {
        if let Some(first) = chunks.first() {
            for (i, c) in chunks.iter().enumerate() {
                let entry = self.entry(c.buffer, &format!("vector chunk {i}"))?;
                if c.format != first.format {
                    return Err(GraphError::InvalidView {
                        buffer: entry.desc.id.clone(),
                        reason: format!(
                            "chunk {i} has format {} but chunk 0 has {}",
                            c.format, first.format
                        ),
                    });
                }
            }
        }
        Ok(VectorView { chunks })
    }

    /// The id of a logical buffer (for labels and messages).
    pub fn buffer_id(&self, h: BufferHandle) -> Result<&str, GraphError> {
        Ok(&self.entry(h, "buffer handle")?.desc.id)
    }

    pub(crate) fn check_node(&self, id: &str, uses: &[ResourceUse]) -> Result<(), GraphError> {
        if self.node_ids.contains(id) {
            return Err(GraphError::DuplicateId {
                graph: self.id.clone(),
                kind: "node",
                id: id.to_string(),
            });
        }
        for u in uses {
            match *u {
                ResourceUse::Buffer(h, access) => {
                    let entry = self.entry(h, &format!("a buffer used by node {id}"))?;
                    let need = access.required_usage();
                    if !entry.desc.usage.contains(need) {
                        return Err(GraphError::UsageNotDeclared {
                            node: id.to_string(),
                            resource: entry.desc.id.clone(),
                            access: buffer_access_name(access).to_string(),
                            missing: usage_name(need),
                        });
                    }
                }
                ResourceUse::Texture(h, access) => {
                    if h.graph != self.key {
                        return Err(GraphError::ForeignHandle {
                            graph: self.id.clone(),
                            what: format!("a texture used by node {id}"),
                        });
                    }
                    let entry = &self.textures[h.index as usize];
                    if entry.external && access != TextureAccess::Sampled {
                        return Err(GraphError::ExternalTextureAccess {
                            node: id.to_string(),
                            texture: entry.desc.id.clone(),
                            access: texture_access_name(access).to_string(),
                        });
                    }
                    let need = access.required_usage();
                    if !entry.desc.usage.contains(need) {
                        return Err(GraphError::UsageNotDeclared {
                            node: id.to_string(),
                            resource: entry.desc.id.clone(),
                            access: texture_access_name(access).to_string(),
                            missing: texture_usage_name(need),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Adds a declared dispatch node: its uses are derived from its bindings (and indirect
    /// grid), so it cannot touch a buffer it did not declare. Slots, parameter bindings and
    /// the grid are checked now ([`GraphError::InvalidDispatch`]).
    pub fn add_dispatch_node(
        &mut self,
        node: crate::dispatch::DispatchNode,
    ) -> Result<(), GraphError> {
        if let Some(reason) = node.problem(&self.device.limits()) {
            return Err(GraphError::InvalidDispatch {
                graph: self.id.clone(),
                node: node.id,
                reason,
            });
        }
        let mut textures = Vec::new();
        for (slot, t) in node.textures() {
            if t.texture.graph != self.key {
                return Err(GraphError::ForeignHandle {
                    graph: self.id.clone(),
                    what: format!("a texture bound by node {}", node.id),
                });
            }
            let desc = &self.textures[t.texture.index as usize].desc;
            let resolved = t
                .resolve(desc)
                .map_err(|reason| GraphError::InvalidDispatch {
                    graph: self.id.clone(),
                    node: node.id.clone(),
                    reason: format!("texture slot {slot}: {reason}"),
                })?;
            textures.push(resolved);
        }
        let subresources: Vec<crate::attachment::AttachmentUse> =
            textures.iter().flat_map(|t| t.uses.clone()).collect();
        if let Some(reason) = crate::attachment::binding_conflict(&subresources) {
            return Err(GraphError::InvalidDispatch {
                graph: self.id.clone(),
                node: node.id,
                reason,
            });
        }
        let uses = node.uses();
        // Usage flags and external-image rules are checked per texture, hazards per
        // subresource.
        let mut checked = uses.clone();
        checked.extend(
            subresources
                .iter()
                .map(|a| ResourceUse::Texture(a.at.texture, a.access)),
        );
        self.check_node(&node.id, &checked)?;
        self.node_ids.insert(node.id.clone());
        self.nodes.push(NodeEntry {
            id: node.id.clone(),
            uses,
            attachments: subresources,
            depends_on: node.depends_on.clone(),
            compile: NodeCompileFn::Compute(node.compile(textures)),
        });
        Ok(())
    }

    /// The device's shared pipeline and bind-group cache.
    pub fn cache(&self) -> std::sync::Arc<crate::cache::DeviceCache> {
        crate::cache::DeviceCache::for_device(&self.device)
    }

    /// Adds a render node; its color target (mip 0, layer 0) is used as `RenderTarget` in
    /// addition to `uses`. [`Self::add_render_pass_node`] takes depth, resolve and several
    /// color attachments.
    pub fn add_render_node(&mut self, node: RenderNode) -> Result<(), GraphError> {
        self.add_render_pass_node(crate::attachment::RenderPassNode {
            id: node.id,
            color: vec![crate::attachment::ColorAttachment::new(
                node.color_target,
                node.load,
            )],
            depth_stencil: None,
            uses: node.uses,
            depends_on: node.depends_on,
            compile: node.compile,
        })
    }

    /// Adds a copy node (recorded on the encoder between passes).
    pub fn add_copy_node(&mut self, node: CopyNode) -> Result<(), GraphError> {
        self.check_node(&node.id, &node.uses)?;
        self.node_ids.insert(node.id.clone());
        self.nodes.push(NodeEntry {
            id: node.id,
            uses: node.uses,
            attachments: Vec::new(),
            depends_on: node.depends_on,
            compile: NodeCompileFn::Copy(node.compile),
        });
        Ok(())
    }

    /// Adds a copy node that copies the bytes of packed view `src` into packed view `dst`
    /// (same byte span, 4-byte aligned offsets and span).
    pub fn add_view_copy(
        &mut self,
        id: impl Into<String>,
        src: DataView,
        dst: DataView,
    ) -> Result<(), GraphError> {
        let id = id.into();
        for (what, v) in [("source", &src), ("destination", &dst)] {
            let entry = self.entry(v.buffer, &format!("copy {what}"))?;
            if !v.is_packed() || v.byte_offset % 4 != 0 || v.byte_span() % 4 != 0 {
                return Err(GraphError::InvalidView {
                    buffer: entry.desc.id.clone(),
                    reason: format!(
                        "copy {what} of node {id} must be packed with 4-byte aligned offset ({}) and span ({})",
                        v.byte_offset,
                        v.byte_span()
                    ),
                });
            }
        }
        if src.byte_span() != dst.byte_span() {
            return Err(GraphError::InvalidView {
                buffer: self.entry(dst.buffer, "copy destination")?.desc.id.clone(),
                reason: format!(
                    "copy node {id}: destination spans {} bytes but source spans {}",
                    dst.byte_span(),
                    src.byte_span()
                ),
            });
        }
        let uses = vec![ResourceUse::copy_src(src), ResourceUse::copy_dst(dst)];
        self.add_copy_node(CopyNode::new(id, uses, move |_| {
            Ok(Box::new(
                move |enc: &mut wgpu::CommandEncoder, ctx: &crate::EncodeContext<'_>| {
                    if src.byte_span() > 0 {
                        enc.copy_buffer_to_buffer(
                            ctx.buffer(src),
                            src.byte_offset,
                            ctx.buffer(dst),
                            dst.byte_offset,
                            src.byte_span(),
                        );
                    }
                },
            ))
        }))
    }
}

pub(crate) fn validate_buffer(
    graph: &str,
    device: &wgpu::Device,
    desc: &BufferDescriptor,
    buffer: &wgpu::Buffer,
) -> Result<(), GraphError> {
    if buffer.size() < desc.byte_length {
        return Err(GraphError::BufferTooSmall {
            id: desc.id.clone(),
            actual: buffer.size(),
            required: desc.byte_length,
        });
    }
    let missing: BufferUsages = desc.usage - buffer.usage();
    if !missing.is_empty() {
        return Err(GraphError::BufferMissingUsage {
            id: desc.id.clone(),
            actual: buffer.usage(),
            missing,
        });
    }
    if !same_device_buffer(device, buffer) {
        return Err(GraphError::WrongDevice {
            graph: graph.to_string(),
            kind: "buffer",
            id: desc.id.clone(),
        });
    }
    Ok(())
}
