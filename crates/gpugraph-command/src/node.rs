//! Nodes: declarations (id, kind, uses, explicit dependencies, compile callback) and the
//! executables their callbacks create. Executables record into a pass or encoder the graph
//! hands them; they never submit.

use std::cell::Cell;
use std::collections::HashMap;

use crate::resource::{BufferHandle, ResourceUse, TextureHandle};
use crate::view::DataView;

/// Error type a node compile callback or executable may return.
pub type NodeError = Box<dyn std::error::Error + Send + Sync>;

/// Records one compute node (a compiled [`crate::DispatchNode`], the one compute-node kind)
/// into a compute pass the graph opened (possibly shared with the previous compute nodes).
/// Must not allocate GPU resources or read back. An error fails the whole
/// [`crate::CompiledGraph::encode`] (named by node); the caller's encoder then holds a
/// partial recording and must be dropped, not submitted.
pub(crate) trait ComputeExecutable: Send {
    /// Records the node's dispatches.
    fn encode(
        &mut self,
        pass: &mut wgpu::ComputePass<'_>,
        ctx: &EncodeContext<'_>,
    ) -> Result<(), NodeError>;
}

/// Records one render node into the render pass the graph opened on its color target.
pub trait RenderExecutable: Send {
    /// Records the node's draws.
    fn encode(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        ctx: &EncodeContext<'_>,
    ) -> Result<(), NodeError>;
}

impl<F> RenderExecutable for F
where
    F: FnMut(&mut wgpu::RenderPass<'_>, &EncodeContext<'_>) + Send,
{
    fn encode(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        ctx: &EncodeContext<'_>,
    ) -> Result<(), NodeError> {
        self(pass, ctx);
        Ok(())
    }
}

/// Records one copy node directly on the caller's encoder (no pass).
pub trait CopyExecutable: Send {
    /// Records the node's copies or clears.
    fn encode(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        ctx: &EncodeContext<'_>,
    ) -> Result<(), NodeError>;
}

impl<F> CopyExecutable for F
where
    F: FnMut(&mut wgpu::CommandEncoder, &EncodeContext<'_>) + Send,
{
    fn encode(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        ctx: &EncodeContext<'_>,
    ) -> Result<(), NodeError> {
        self(encoder, ctx);
        Ok(())
    }
}

/// A fallible copy closure (see [`try_copy_fn`]).
struct TryCopy<F>(F);

impl<F> CopyExecutable for TryCopy<F>
where
    F: FnMut(&mut wgpu::CommandEncoder, &EncodeContext<'_>) -> Result<(), NodeError> + Send,
{
    fn encode(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        ctx: &EncodeContext<'_>,
    ) -> Result<(), NodeError> {
        (self.0)(encoder, ctx)
    }
}

/// What a dispatch node's compile callback returns.
pub(crate) type ComputeCompile =
    Box<dyn FnOnce(&CompileContext<'_>) -> Result<Box<dyn ComputeExecutable>, NodeError> + Send>;
/// What a compile callback returns for a render node.
pub type RenderCompile =
    Box<dyn FnOnce(&CompileContext<'_>) -> Result<Box<dyn RenderExecutable>, NodeError> + Send>;
/// What a compile callback returns for a copy node.
pub type CopyCompile =
    Box<dyn FnOnce(&CompileContext<'_>) -> Result<Box<dyn CopyExecutable>, NodeError> + Send>;

/// How a render node's color attachment starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColorLoad {
    /// Clear to this color.
    Clear(wgpu::Color),
    /// Keep the existing contents.
    Load,
}

/// Declaration of a render node drawing into one color texture. The color target's
/// `RenderTarget` use is implied; list buffers (vertex, index, indirect, storage) in `uses`.
pub struct RenderNode {
    /// Stable id.
    pub id: String,
    /// Color attachment.
    pub color_target: TextureHandle,
    /// Load behavior of the attachment.
    pub load: ColorLoad,
    /// Every other resource the node touches.
    pub uses: Vec<ResourceUse>,
    /// Explicit predecessors.
    pub depends_on: Vec<String>,
    /// Creates the executable at graph compile time.
    pub compile: RenderCompile,
}

/// Declaration of a copy node (recorded on the encoder, outside any pass).
pub struct CopyNode {
    /// Stable id.
    pub id: String,
    /// Every resource the node touches.
    pub uses: Vec<ResourceUse>,
    /// Explicit predecessors.
    pub depends_on: Vec<String>,
    /// Creates the executable at graph compile time.
    pub compile: CopyCompile,
}

impl CopyNode {
    /// A copy node with no explicit dependencies.
    pub fn new(
        id: impl Into<String>,
        uses: Vec<ResourceUse>,
        compile: impl FnOnce(&CompileContext<'_>) -> Result<Box<dyn CopyExecutable>, NodeError>
            + Send
            + 'static,
    ) -> Self {
        Self {
            id: id.into(),
            uses,
            depends_on: Vec::new(),
            compile: Box::new(compile),
        }
    }

    /// Copies mip 0 of `texture` (`size` texels) into `buffer` from byte 0, rows
    /// `bytes_per_row` apart (a multiple of `wgpu::COPY_BYTES_PER_ROW_ALIGNMENT`): the readback
    /// of a rendered picture.
    pub fn texture_to_buffer(
        id: impl Into<String>,
        texture: TextureHandle,
        buffer: BufferHandle,
        size: (u32, u32),
        bytes_per_row: u32,
    ) -> Self {
        let (width, height) = size;
        Self::new(
            id,
            vec![
                ResourceUse::texture(texture, crate::resource::TextureAccess::CopySrc),
                ResourceUse::copy_dst(buffer),
            ],
            move |_| {
                Ok(copy_fn(move |enc, ec| {
                    enc.copy_texture_to_buffer(
                        ec.texture(texture).as_image_copy(),
                        wgpu::TexelCopyBufferInfo {
                            buffer: ec.buffer(buffer),
                            layout: wgpu::TexelCopyBufferLayout {
                                offset: 0,
                                bytes_per_row: Some(bytes_per_row),
                                rows_per_image: Some(height),
                            },
                        },
                        wgpu::Extent3d {
                            width,
                            height,
                            depth_or_array_layers: 1,
                        },
                    );
                }))
            },
        )
    }
}

/// The kind of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// Runs in a compute pass.
    Compute,
    /// Runs in a render pass.
    Render,
    /// Runs on the encoder.
    Copy,
}

/// The handles one node declared (sorted, deduplicated indices): all it may resolve.
#[derive(Clone, Debug, Default)]
pub(crate) struct Declared {
    pub(crate) buffers: Vec<u32>,
    pub(crate) textures: Vec<u32>,
}

impl Declared {
    /// The handles of `uses` and the texture indices of the node's subresource uses.
    pub(crate) fn of(
        uses: &[ResourceUse],
        subresource_textures: impl Iterator<Item = u32>,
    ) -> Self {
        let mut d = Declared::default();
        for u in uses {
            match u {
                ResourceUse::Buffer(h, _) => d.buffers.push(h.index),
                ResourceUse::Texture(h, _) => d.textures.push(h.index),
            }
        }
        d.textures.extend(subresource_textures);
        d.buffers.sort_unstable();
        d.buffers.dedup();
        d.textures.sort_unstable();
        d.textures.dedup();
        d
    }
}

/// A handle a node resolved without declaring it: the first one is kept and the graph turns
/// it into [`crate::GraphError::UndeclaredResource`] once the callback returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Undeclared {
    Buffer(u32),
    Texture(u32),
    /// A frame texture resolved at compile time.
    FrameAtCompile(u32),
}

/// Resolves logical handles to the physical wgpu objects a node compiles or encodes against.
pub(crate) struct Resolver<'a> {
    pub(crate) buffers: &'a [wgpu::Buffer],
    /// Logical byte length of every buffer handle (its descriptor), for exact bindings.
    pub(crate) lengths: &'a [u64],
    pub(crate) textures: &'a [wgpu::Texture],
    pub(crate) overrides: Option<&'a HashMap<u32, wgpu::Buffer>>,
    /// Logical ids of buffers and textures, for naming an undeclared one.
    pub(crate) buffer_ids: &'a [String],
    pub(crate) texture_ids: &'a [String],
    /// What the node declared; resolving anything else is recorded in `violation`.
    pub(crate) declared: &'a Declared,
    pub(crate) violation: Cell<Option<Undeclared>>,
    /// At compile time: which textures are frame textures (not resolvable yet).
    pub(crate) frame_textures: Option<&'a [bool]>,
}

impl Resolver<'_> {
    fn note(&self, v: Undeclared) {
        if self.violation.get().is_none() {
            self.violation.set(Some(v));
        }
    }

    fn check_buffer(&self, h: BufferHandle) -> bool {
        let ok = self.declared.buffers.binary_search(&h.index).is_ok();
        if !ok {
            self.note(Undeclared::Buffer(h.index));
        }
        ok
    }

    fn texture(&self, h: TextureHandle) -> &wgpu::Texture {
        if self.declared.textures.binary_search(&h.index).is_err() {
            self.note(Undeclared::Texture(h.index));
        }
        if self
            .frame_textures
            .is_some_and(|f| f.get(h.index as usize).copied().unwrap_or(false))
        {
            self.note(Undeclared::FrameAtCompile(h.index));
        }
        &self.textures[h.index as usize]
    }

    /// The error naming the first undeclared handle resolved so far, if any.
    pub(crate) fn violation(&self, graph: &str, node: &str) -> Option<crate::GraphError> {
        self.violation
            .get()
            .map(|v| self.undeclared(graph, node, v))
    }

    fn undeclared(&self, graph: &str, node: &str, v: Undeclared) -> crate::GraphError {
        let resource = match v {
            Undeclared::Buffer(i) => format!("buffer {}", self.buffer_ids[i as usize]),
            Undeclared::Texture(i) => format!("texture {}", self.texture_ids[i as usize]),
            Undeclared::FrameAtCompile(i) => {
                return crate::GraphError::FrameTextureAtCompile {
                    graph: graph.to_string(),
                    node: node.to_string(),
                    texture: self.texture_ids[i as usize].clone(),
                }
            }
        };
        crate::GraphError::UndeclaredResource {
            graph: graph.to_string(),
            node: node.to_string(),
            resource,
        }
    }

    /// Exactly the logical buffer's bytes: a transient may live in a larger shared physical
    /// allocation, and binding all of it could exceed binding limits or let a kernel see
    /// another tenant's bytes.
    fn binding(&self, h: BufferHandle) -> wgpu::BufferBinding<'_> {
        self.check_buffer(h);
        let buffer = self.raw_buffer(h);
        let len = self.lengths[h.index as usize].max(4).div_ceil(4) * 4;
        wgpu::BufferBinding {
            buffer,
            offset: 0,
            size: wgpu::BufferSize::new(len.min(buffer.size())),
        }
    }

    fn buffer(&self, h: BufferHandle) -> &wgpu::Buffer {
        self.check_buffer(h);
        self.raw_buffer(h)
    }

    /// The buffer of `h`, or the named error when node `node` of graph `graph` did not
    /// declare it (shared by the compile and encode contexts).
    fn try_buffer(
        &self,
        graph: &str,
        node: &str,
        h: BufferHandle,
    ) -> Result<&wgpu::Buffer, crate::GraphError> {
        if !self.check_buffer(h) {
            return Err(self.undeclared(graph, node, Undeclared::Buffer(h.index)));
        }
        Ok(self.raw_buffer(h))
    }

    fn raw_buffer(&self, h: BufferHandle) -> &wgpu::Buffer {
        if let Some(b) = self.overrides.and_then(|o| o.get(&h.index)) {
            return b;
        }
        &self.buffers[h.index as usize]
    }
}

/// What a node compile callback sees: the device, its limits and features, and the buffers
/// its handles resolve to (default imports and physical transients).
pub struct CompileContext<'a> {
    pub(crate) device: &'a wgpu::Device,
    pub(crate) graph_id: &'a str,
    pub(crate) node_id: &'a str,
    pub(crate) cache: &'a std::sync::Arc<crate::cache::DeviceCache>,
    pub(crate) resolver: Resolver<'a>,
}

impl<'a> CompileContext<'a> {
    /// The graph's device.
    pub fn device(&self) -> &'a wgpu::Device {
        self.device
    }
    /// The id of the node being compiled (prefix for labels).
    pub fn node_id(&self) -> &str {
        self.node_id
    }
    /// The id of the graph being compiled.
    pub fn graph_id(&self) -> &str {
        self.graph_id
    }
    /// The device's shared pipeline and bind-group cache.
    pub fn cache(&self) -> &'a crate::cache::DeviceCache {
        self.cache
    }
    /// The cache as a shared handle, for executables that create bind groups at encode time.
    pub fn cache_arc(&self) -> std::sync::Arc<crate::cache::DeviceCache> {
        self.cache.clone()
    }
    /// The device's limits (e.g. `min_storage_buffer_offset_alignment`).
    pub fn limits(&self) -> wgpu::Limits {
        self.device.limits()
    }
    /// The device's enabled features.
    pub fn features(&self) -> wgpu::Features {
        self.device.features()
    }
    /// The buffer a handle resolves to at compile time (an import's default buffer, or the
    /// physical allocation hosting a transient). Encode-time overrides may replace imports.
    /// A handle the node did not declare in its uses fails the node's compile with
    /// [`crate::GraphError::UndeclaredResource`] (the buffer is returned so the callback can
    /// finish; the graph discards its result).
    pub fn buffer(&self, handle: impl Into<BufferHandle>) -> &wgpu::Buffer {
        self.resolver.buffer(handle.into())
    }
    /// [`Self::buffer`] that reports an undeclared handle to the caller at once.
    pub fn try_buffer(
        &self,
        handle: impl Into<BufferHandle>,
    ) -> Result<&wgpu::Buffer, crate::GraphError> {
        self.resolver
            .try_buffer(self.graph_id, self.node_id, handle.into())
    }
    /// The texture a handle resolves to (undeclared: as for [`Self::buffer`]).
    pub fn texture(&self, handle: TextureHandle) -> &wgpu::Texture {
        self.resolver.texture(handle)
    }
    /// A binding of exactly the logical buffer's bytes (`0..byte_length`), never the whole
    /// physical allocation a transient may share.
    pub fn binding(&self, handle: impl Into<BufferHandle>) -> wgpu::BufferBinding<'_> {
        self.resolver.binding(handle.into())
    }
}

/// What an executable sees while encoding: the buffers its handles resolve to for this
/// encoding, with per-encoding overrides applied.
pub struct EncodeContext<'a> {
    pub(crate) graph_id: &'a str,
    pub(crate) node_id: &'a str,
    pub(crate) resolver: Resolver<'a>,
}

impl EncodeContext<'_> {
    /// The id of the node being encoded.
    pub fn node_id(&self) -> &str {
        self.node_id
    }
    /// [`Self::buffer`] that reports an undeclared handle to the caller at once.
    pub fn try_buffer(
        &self,
        handle: impl Into<BufferHandle>,
    ) -> Result<&wgpu::Buffer, crate::GraphError> {
        self.resolver
            .try_buffer(self.graph_id, self.node_id, handle.into())
    }
    /// The buffer a handle resolves to for this encoding. A handle the node did not declare
    /// fails the encode with [`crate::GraphError::UndeclaredResource`] once the executable
    /// returns (the caller's encoder must then be dropped).
    pub fn buffer(&self, handle: impl Into<BufferHandle>) -> &wgpu::Buffer {
        self.resolver.buffer(handle.into())
    }
    /// The texture a handle resolves to (undeclared: as for [`Self::buffer`]).
    pub fn texture(&self, handle: TextureHandle) -> &wgpu::Texture {
        self.resolver.texture(handle)
    }
    /// A binding of exactly the logical buffer's bytes (`0..byte_length`), never the whole
    /// physical allocation a transient may share.
    pub fn binding(&self, handle: impl Into<BufferHandle>) -> wgpu::BufferBinding<'_> {
        self.resolver.binding(handle.into())
    }
}

/// A bind group rebuilt only when the buffers behind it change (an import override).
/// Kernels build it at compile time so the common encode allocates nothing.
pub type BindGroupCache = BufferKeyed<wgpu::BindGroup>;

/// Caches one `T` keyed on the exact buffers it was built from. Prime it at node compile time
/// (with `cc.buffer(..)`) so an encode without import overrides allocates nothing.
#[derive(Debug)]
pub struct BufferKeyed<T> {
    key: Vec<wgpu::Buffer>,
    value: Option<T>,
}

impl<T> Default for BufferKeyed<T> {
    fn default() -> Self {
        Self {
            key: Vec::new(),
            value: None,
        }
    }
}

impl<T> BufferKeyed<T> {
    /// The cached value when `buffers` equal the key it was built from; otherwise the result
    /// of `create`, cached on success (a failure keeps nothing, so the next call retries).
    pub fn get_or_try_create<E>(
        &mut self,
        buffers: &[&wgpu::Buffer],
        create: impl FnOnce() -> Result<T, E>,
    ) -> Result<&T, E> {
        let same = self.value.is_some()
            && self.key.len() == buffers.len()
            && self.key.iter().zip(buffers).all(|(a, b)| a == *b);
        if !same {
            self.value = None;
            let value = create()?;
            self.key = buffers.iter().map(|b| (*b).clone()).collect();
            self.value = Some(value);
        }
        Ok(self
            .value
            .get_or_insert_with(|| unreachable!("value set above")))
    }

    /// [`Self::get_or_try_create`] for a `create` that cannot fail.
    pub fn get_or_create(&mut self, buffers: &[&wgpu::Buffer], create: impl FnOnce() -> T) -> &T {
        match self.get_or_try_create(buffers, || Ok::<T, std::convert::Infallible>(create())) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }
}

/// The packed binding of a view: its buffer, aligned range and element offset.
pub fn view_binding<'b>(
    buffer: &'b wgpu::Buffer,
    view: &DataView,
    alignment: u64,
) -> (wgpu::BufferBinding<'b>, u64) {
    let r = view.aligned_range(alignment);
    let size = r.size.min(buffer.size().saturating_sub(r.offset));
    (
        wgpu::BufferBinding {
            buffer,
            offset: r.offset,
            size: wgpu::BufferSize::new(size.max(4)),
        },
        r.element_offset,
    )
}

/// Boxes a fallible closure as a copy executable.
pub fn try_copy_fn(
    f: impl FnMut(&mut wgpu::CommandEncoder, &EncodeContext<'_>) -> Result<(), NodeError>
        + Send
        + 'static,
) -> Box<dyn CopyExecutable> {
    Box::new(TryCopy(f))
}

/// Boxes a closure as a render executable.
pub fn render_fn(
    f: impl FnMut(&mut wgpu::RenderPass<'_>, &EncodeContext<'_>) + Send + 'static,
) -> Box<dyn RenderExecutable> {
    Box::new(f)
}

/// Boxes a closure as a copy executable.
pub fn copy_fn(
    f: impl FnMut(&mut wgpu::CommandEncoder, &EncodeContext<'_>) + Send + 'static,
) -> Box<dyn CopyExecutable> {
    Box::new(f)
}
