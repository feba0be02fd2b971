//! gpugraph-command: the scheduling core of gpugraph.
//!
//! A [`CommandGraph`] declares logical buffers (imported or transient), typed views, and
//! compute/render/copy nodes with every resource use. [`CommandGraph::compile`] derives
//! read-after-write, write-after-write and write-after-read hazards in insertion order, a
//! stable topological order, and whole-buffer reuse of transients with disjoint lifetimes.
//! [`CompiledGraph::encode`] records into the caller's `wgpu::CommandEncoder` and never
//! submits. This crate knows nothing of tables or algorithms.
//!
//! It owns the one way to write a kernel: a [`ShaderSource`] recipe (registry files or text,
//! `#include` / `#ifdef` / `#unroll`, a constant header; [`shader`]) run by a
//! [`DispatchNode`], whose declared bindings are its uses and are checked against the WGSL
//! naga reflects when the node compiles ([`BindingError`]).

#![warn(missing_docs)]

mod attachment;
pub mod cache;
mod compiled;
pub mod context;
mod device_check;
pub mod devices;
pub mod dispatch;
mod error;
pub mod format;
mod graph;
mod node;
pub mod pipeline_cache;
pub mod plan;
mod profile;
mod resource;
pub mod shader;
mod view;

pub use attachment::{
    AspectOps, ColorAttachment, DepthStencilAttachment, RenderPassNode, Subresource,
};
pub use cache::{CacheStats, CachedPipeline, DeviceCache, PipelineDescriptor};
pub use compiled::{
    compile_threads, CompiledGraph, DependencyEdge, EncodeOptions, EncodeReport, FrameTextures,
    GraphStats,
};
pub use context::{Capabilities, ContextError, ContextOptions, GpuContext};
pub use devices::{adapter_list, AdapterEntry, DeviceSelection, ParseDeviceSelectionError};
pub use dispatch::{
    grid_for, Access, Binding, BindingError, DispatchNode, Grid, Resource, TextureKind,
    TextureSlot, WorkgroupSplit,
};
pub use error::GraphError;
pub use format::{ParseFormatError, ScalarKind, VectorFormat};
pub use graph::CommandGraph;
pub use node::{
    copy_fn, render_fn, try_copy_fn, view_binding, BindGroupCache, BufferKeyed, ColorLoad,
    CompileContext, CopyExecutable, CopyNode, EncodeContext, NodeError, NodeKind, RenderExecutable,
    RenderNode,
};
pub use pipeline_cache::{LoadStatus, PersistentPipelineCache, PipelineCacheError};
pub use profile::NodeTiming;
pub use resource::{
    BufferAccess, BufferDescriptor, BufferHandle, Lifetime, ResourceUse, TextureAccess,
    TextureDescriptor, TextureHandle,
};
pub use shader::{ShaderRegistry, ShaderSource};
pub use view::{AlignedRange, DataView, DataViewDescriptor, VectorView};
pub use wgpu;
