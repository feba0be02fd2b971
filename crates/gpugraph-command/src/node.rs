//! Nodes: declarations (id, kind, uses, explicit dependencies, compile callback) and the
//! executables their callbacks create. Executables record into a pass or encoder the graph
//! hands them; they never submit.

use std::collections::HashMap;

use crate::resource::{BufferHandle, ResourceUse, TextureHandle};
use crate::view::DataView;

/// Error type a node compile callback may return.
pub type NodeError = Box<dyn std::error::Error + Send + Sync>;

/// Records one compute node into a compute pass the graph opened (possibly shared with the
/// previous compute nodes). Must not allocate GPU resources or read back.
pub trait ComputeExecutable: Send {
    /// Records the node's dispatches.
    fn encode(&mut self, pass: &mut wgpu::ComputePass<'_>, ctx: &EncodeContext<'_>);
}

impl<F> ComputeExecutable for F
where
    F: FnMut(&mut wgpu::ComputePass<'_>, &EncodeContext<'_>) + Send,
{
    fn encode(&mut self, pass: &mut wgpu::ComputePass<'_>, ctx: &EncodeContext<'_>) {
        self(pass, ctx)
    }
}

/// Records one render node into the render pass the graph opened on its color target.
pub trait RenderExecutable: Send {
    /// Records the node's draws.
    fn encode(&mut self, pass: &mut wgpu::RenderPass<'_>, ctx: &EncodeContext<'_>);
}

impl<F> RenderExecutable for F
where
    F: FnMut(&mut wgpu::RenderPass<'_>, &EncodeContext<'_>) + Send,
{
    fn encode(&mut self, pass: &mut wgpu::RenderPass<'_>, ctx: &EncodeContext<'_>) {
        self(pass, ctx)
    }
}

/// Records one copy node directly on the caller's encoder (no pass).
pub trait CopyExecutable: Send {
    /// Records the node's copies or clears.
    fn encode(&mut self, encoder: &mut wgpu::CommandEncoder, ctx: &EncodeContext<'_>);
}

impl<F> CopyExecutable for F
where
    F: FnMut(&mut wgpu::CommandEncoder, &EncodeContext<'_>) + Send,
{
    fn encode(&mut self, encoder: &mut wgpu::CommandEncoder, ctx: &EncodeContext<'_>) {
        self(encoder, ctx)
    }
}

/// What a compile callback returns for a compute node.
pub type ComputeCompile =
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

/// Declaration of a compute node.
pub struct ComputeNode {
    /// Stable id: the pass label, debug group and error name.
    pub id: String,
    /// Every resource the node touches, with its access.
    pub uses: Vec<ResourceUse>,
    /// Ids of nodes that must run first for reasons no shared resource expresses.
    pub depends_on: Vec<String>,
    /// Creates the executable at graph compile time.
    pub compile: ComputeCompile,
}

impl ComputeNode {
    /// A compute node with no explicit dependencies.
    pub fn new(
        id: impl Into<String>,
        uses: Vec<ResourceUse>,
        compile: impl FnOnce(&CompileContext<'_>) -> Result<Box<dyn ComputeExecutable>, NodeError>
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

/// Resolves logical handles to the physical wgpu objects a node compiles or encodes against.
pub(crate) struct Resolver<'a> {
    pub(crate) buffers: &'a [wgpu::Buffer],
    /// Logical byte length of every buffer handle (its descriptor), for exact bindings.
    pub(crate) lengths: &'a [u64],
    pub(crate) textures: &'a [wgpu::Texture],
    pub(crate) overrides: Option<&'a HashMap<u32, wgpu::Buffer>>,
}

impl Resolver<'_> {
    /// Exactly the logical buffer's bytes: a transient may live in a larger shared physical
    /// allocation, and binding all of it could exceed binding limits or let a kernel see
    /// another tenant's bytes.
    fn binding(&self, h: BufferHandle) -> wgpu::BufferBinding<'_> {
        let buffer = self.buffer(h);
        let len = self.lengths[h.index as usize].max(4).div_ceil(4) * 4;
        wgpu::BufferBinding {
            buffer,
            offset: 0,
            size: wgpu::BufferSize::new(len.min(buffer.size())),
        }
    }

    fn buffer(&self, h: BufferHandle) -> &wgpu::Buffer {
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
    pub(crate) node_id: &'a str,
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
    pub fn buffer(&self, handle: impl Into<BufferHandle>) -> &wgpu::Buffer {
        self.resolver.buffer(handle.into())
    }
    /// The texture a handle resolves to.
    pub fn texture(&self, handle: TextureHandle) -> &wgpu::Texture {
        &self.resolver.textures[handle.index as usize]
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
    pub(crate) node_id: &'a str,
    pub(crate) resolver: Resolver<'a>,
}

impl EncodeContext<'_> {
    /// The id of the node being encoded.
    pub fn node_id(&self) -> &str {
        self.node_id
    }
    /// The buffer a handle resolves to for this encoding.
    pub fn buffer(&self, handle: impl Into<BufferHandle>) -> &wgpu::Buffer {
        self.resolver.buffer(handle.into())
    }
    /// The texture a handle resolves to.
    pub fn texture(&self, handle: TextureHandle) -> &wgpu::Texture {
        &self.resolver.textures[handle.index as usize]
    }
    /// A binding of exactly the logical buffer's bytes (`0..byte_length`), never the whole
    /// physical allocation a transient may share.
    pub fn binding(&self, handle: impl Into<BufferHandle>) -> wgpu::BufferBinding<'_> {
        self.resolver.binding(handle.into())
    }
}

/// A bind group rebuilt only when the buffers behind it change (an import override).
/// Kernels build it at compile time so the common encode allocates nothing.
#[derive(Default)]
pub struct BindGroupCache {
    key: Vec<wgpu::Buffer>,
    group: Option<wgpu::BindGroup>,
}

impl BindGroupCache {
    /// Returns the cached group when `buffers` equal the cached key; otherwise calls `create`
    /// and caches its result.
    pub fn get_or_create(
        &mut self,
        buffers: &[&wgpu::Buffer],
        create: impl FnOnce() -> wgpu::BindGroup,
    ) -> &wgpu::BindGroup {
        let same = self.group.is_some()
            && self.key.len() == buffers.len()
            && self.key.iter().zip(buffers).all(|(a, b)| a == *b);
        if !same {
            self.key = buffers.iter().map(|b| (*b).clone()).collect();
            self.group = Some(create());
        }
        self.group
            .get_or_insert_with(|| unreachable!("group set above"))
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

/// Boxes a closure as a compute executable (gives the closure its higher-ranked signature).
pub fn compute_fn(
    f: impl FnMut(&mut wgpu::ComputePass<'_>, &EncodeContext<'_>) + Send + 'static,
) -> Box<dyn ComputeExecutable> {
    Box::new(f)
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
