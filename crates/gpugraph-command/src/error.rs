//! Typed errors of graph construction, compilation and encoding. Every message names the graph
//! ids and numbers involved, and is returned before any command is recorded.

use wgpu::{BufferUsages, TextureUsages};

use crate::resource::{BufferAccess, TextureAccess};

/// Error returned by [`crate::CommandGraph`] and [`crate::CompiledGraph`] calls.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// A buffer, texture or node id is used twice.
    #[error("graph {graph}: duplicate {kind} id '{id}'")]
    DuplicateId {
        /// Graph id.
        graph: String,
        /// "resource" or "node".
        kind: &'static str,
        /// The repeated id.
        id: String,
    },
    /// A descriptor is unusable (zero usage, zero-size texture, ...).
    #[error("graph {graph}: descriptor '{id}' is invalid: {reason}")]
    InvalidDescriptor {
        /// Graph id.
        graph: String,
        /// Resource id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// An imported buffer is smaller than its descriptor's byte length.
    #[error("buffer {id} ({actual} bytes) is smaller than compiled capacity {required}")]
    BufferTooSmall {
        /// Logical buffer id.
        id: String,
        /// Size of the supplied buffer.
        actual: u64,
        /// Byte length of the descriptor.
        required: u64,
    },
    /// An imported buffer lacks usage flags its descriptor promises.
    #[error(
        "buffer {id} was created with usage {actual:?} but the graph needs {missing:?} as well"
    )]
    BufferMissingUsage {
        /// Logical buffer id.
        id: String,
        /// Usage of the supplied buffer.
        actual: BufferUsages,
        /// Flags that are missing.
        missing: BufferUsages,
    },
    /// An imported texture does not match its descriptor.
    #[error("texture {id} does not match its descriptor: {reason}")]
    TextureMismatch {
        /// Logical texture id.
        id: String,
        /// What differs.
        reason: String,
    },
    /// A physical buffer imported a second time under another id.
    #[error("buffer {id} is the same wgpu buffer as import {existing}; import an allocation once and create views of it")]
    DuplicateImport {
        /// The new id.
        id: String,
        /// The id it was first imported as.
        existing: String,
    },
    /// A supplied resource belongs to a different `wgpu::Device` than the graph (or was
    /// destroyed: wgpu reports both the same way).
    #[error("{kind} {id} belongs to a different device than graph {graph} (or was destroyed)")]
    WrongDevice {
        /// Graph id.
        graph: String,
        /// "buffer" or "texture".
        kind: &'static str,
        /// Logical id.
        id: String,
    },
    /// A handle or view that was created by another graph.
    #[error("graph {graph}: {what} was created by a different graph")]
    ForeignHandle {
        /// Graph id.
        graph: String,
        /// Which argument.
        what: String,
    },
    /// A view does not fit inside its logical buffer.
    #[error("view over buffer {buffer} is out of range: byte offset {byte_offset} + span {byte_span} > byte length {byte_length}")]
    ViewOutOfRange {
        /// Logical buffer id.
        buffer: String,
        /// View byte offset.
        byte_offset: u64,
        /// Bytes spanned by the rows.
        byte_span: u64,
        /// Byte length of the logical buffer.
        byte_length: u64,
    },
    /// A view's stride or alignment is not usable.
    #[error("view over buffer {buffer} is invalid: {reason}")]
    InvalidView {
        /// Logical buffer id.
        buffer: String,
        /// What is wrong (stride, alignment, format, length).
        reason: String,
    },
    /// A node declares a use whose usage flag the resource descriptor lacks.
    #[error("node {node} uses {resource} as {access} but its descriptor lacks usage {missing}")]
    UsageNotDeclared {
        /// Node id.
        node: String,
        /// Resource id.
        resource: String,
        /// The declared access, spelled.
        access: String,
        /// The missing usage flag, spelled.
        missing: String,
    },
    /// `depends_on` names a node that does not exist.
    #[error("node {node} depends on unknown node '{dependency}'")]
    UnknownDependency {
        /// Node id.
        node: String,
        /// The missing id.
        dependency: String,
    },
    /// Explicit dependencies and hazards form a cycle.
    #[error("graph {graph} has a dependency cycle through nodes {nodes:?}")]
    Cycle {
        /// Graph id.
        graph: String,
        /// Nodes that could not be ordered.
        nodes: Vec<String>,
    },
    /// A node's compile callback failed; everything created so far was released.
    #[error("node {node} failed to compile: {source}")]
    NodeCompile {
        /// Node id.
        node: String,
        /// The callback's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A node resolved a buffer or texture it did not declare among its uses (at compile or
    /// encode time): its accesses would escape hazard analysis and transient aliasing.
    #[error(
        "graph {graph}: node {node} resolved {resource}, which it did not declare among its uses"
    )]
    UndeclaredResource {
        /// Graph id.
        graph: String,
        /// Node id.
        node: String,
        /// "buffer <id>" or "texture <id>".
        resource: String,
    },
    /// A node's executable failed while recording; the caller's encoder holds a partial
    /// recording and must be dropped.
    #[error("graph {graph}: node {node} failed to encode: {source}")]
    NodeEncode {
        /// Graph id.
        graph: String,
        /// Node id.
        node: String,
        /// The executable's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A dispatch node's declaration cannot work.
    #[error("graph {graph}: dispatch node {node} is invalid: {reason}")]
    InvalidDispatch {
        /// Graph id.
        graph: String,
        /// Node id.
        node: String,
        /// What is wrong (slots, grid, indirect view).
        reason: String,
    },
    /// A per-encoding override names a transient buffer (only imports can be overridden).
    #[error("buffer {id} is a graph transient; only imported buffers can be overridden")]
    OverrideNotImported {
        /// Logical buffer id.
        id: String,
    },
    /// The compiled graph was destroyed.
    #[error("graph {graph} was destroyed and cannot encode")]
    Destroyed {
        /// Graph id.
        graph: String,
    },
    /// Timestamp profiling was requested on a device without `TIMESTAMP_QUERY`.
    #[error("graph {graph}: timestamp profiling needs the TIMESTAMP_QUERY feature, which the device lacks")]
    ProfilingUnsupported {
        /// Graph id.
        graph: String,
    },
    /// Timings were read before a profiled encode was submitted, or the readback failed.
    #[error("graph {graph}: timings unavailable: {reason}")]
    TimingsUnavailable {
        /// Graph id.
        graph: String,
        /// Why.
        reason: String,
    },
    /// A render attachment names a mip level or array layer its texture does not have.
    #[error("node {node}: texture {texture} has {mip_levels} mip levels and {layers} layers; mip {mip_level} layer {layer} does not exist")]
    SubresourceOutOfRange {
        /// Node id.
        node: String,
        /// Texture id.
        texture: String,
        /// Requested mip level.
        mip_level: u32,
        /// Requested array layer.
        layer: u32,
        /// Mip levels of the texture.
        mip_levels: u32,
        /// Array layers of the texture.
        layers: u32,
    },
    /// Two attachments of one render pass disagree (extent, sample count, resolve format,
    /// depth/stencil aspect), or an attachment's format cannot serve its role.
    #[error("node {node}: attachment {texture} has {property} {found}, expected {expected}")]
    AttachmentMismatch {
        /// Node id.
        node: String,
        /// Texture id of the offending attachment.
        texture: String,
        /// What differs ("extent", "sample count", "format", "depth aspect", ...).
        property: &'static str,
        /// What the pass needs.
        expected: String,
        /// What the attachment has.
        found: String,
    },
    /// One subresource is used twice inside one render pass (attached twice, or attached and
    /// also bound by the node), which the pass cannot order.
    #[error("node {node}: texture {texture} mip {mip_level} layer {layer} is used twice in one pass ({first} and {second})")]
    SamePassConflict {
        /// Node id.
        node: String,
        /// Texture id.
        texture: String,
        /// Mip level.
        mip_level: u32,
        /// Array layer.
        layer: u32,
        /// The first use, spelled.
        first: &'static str,
        /// The second use, spelled.
        second: &'static str,
    },
    /// A frame ID not above the previous encoding's.
    #[error("graph {graph}: frame {frame} is stale; the last encoded frame was {last}")]
    StaleFrame {
        /// Graph id.
        graph: String,
        /// The supplied frame ID.
        frame: u64,
        /// The last encoded frame ID.
        last: u64,
    },
    /// An encoding without a texture for one of the graph's frame textures (or a plain
    /// `encode` of a graph that has frame textures).
    #[error("graph {graph}: frame texture {texture} was not supplied for this encoding")]
    MissingFrameTexture {
        /// Graph id.
        graph: String,
        /// Texture id.
        texture: String,
    },
    /// A texture supplied for an encoding under a handle that is not a frame texture.
    #[error("graph {graph}: texture {texture} is not a frame texture (import_frame_texture)")]
    NotAFrameTexture {
        /// Graph id.
        graph: String,
        /// Texture id.
        texture: String,
    },
    /// A node resolved a frame texture while compiling, when no frame's texture exists.
    #[error("graph {graph}: node {node} resolved frame texture {texture} at compile time; frame textures exist only per encoding")]
    FrameTextureAtCompile {
        /// Graph id.
        graph: String,
        /// Node id.
        node: String,
        /// Texture id.
        texture: String,
    },
    /// An external texture used other than sampled (as an attachment, a copy, storage).
    #[error("node {node} uses external texture {texture} as {access}; external textures are sampled only")]
    ExternalTextureAccess {
        /// Node id.
        node: String,
        /// Texture id.
        texture: String,
        /// The refused access.
        access: String,
    },
    /// An external texture supplied again for the next encoding instead of a fresh one.
    #[error("graph {graph}: external texture {texture} received the previous encoding's texture again at frame {frame}; each encoding needs a fresh one")]
    ExternalTextureReused {
        /// Graph id.
        graph: String,
        /// Texture id.
        texture: String,
        /// The frame ID of the refused encoding.
        frame: u64,
    },
}

pub(crate) fn buffer_access_name(a: BufferAccess) -> &'static str {
    match a {
        BufferAccess::StorageRead => "storage-read",
        BufferAccess::StorageWrite => "storage-write",
        BufferAccess::StorageReadWrite => "storage-read-write",
        BufferAccess::Uniform => "uniform",
        BufferAccess::CopySrc => "copy-source",
        BufferAccess::CopyDst => "copy-destination",
        BufferAccess::Vertex => "vertex",
        BufferAccess::Index => "index",
        BufferAccess::Indirect => "indirect",
    }
}

pub(crate) fn texture_access_name(a: TextureAccess) -> &'static str {
    match a {
        TextureAccess::Sampled => "sampled",
        TextureAccess::StorageRead => "storage-read",
        TextureAccess::StorageWrite => "storage-write",
        TextureAccess::RenderTarget => "render-target",
        TextureAccess::CopySrc => "copy-source",
        TextureAccess::CopyDst => "copy-destination",
        TextureAccess::DepthStencil => "depth-stencil",
        TextureAccess::DepthStencilReadOnly => "read-only depth-stencil",
        TextureAccess::Resolve => "resolve-target",
    }
}

pub(crate) fn usage_name(u: BufferUsages) -> String {
    format!("{u:?}")
}

pub(crate) fn texture_usage_name(u: TextureUsages) -> String {
    format!("{u:?}")
}
