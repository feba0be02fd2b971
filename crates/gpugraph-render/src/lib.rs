//! gpugraph-render: the rendering half of gpugraph, built on the command graph's render pass
//! nodes and the gpgpu algorithms.
//!
//! * [`DrawCommandBuffer`]: typed `draw` / `drawIndexed` indirect records in one buffer that
//!   compute writes and render passes consume, with a borrowed view of each record's
//!   `instanceCount` word.
//! * [`VisibilityWorkflow`]: bounds (sphere or box) against a frustum, time range, LOD band
//!   and selection, intersected into a source-aligned mask, compacted into stable IDs whose
//!   GPU-written count lands straight in an indirect record. View changes are uniform writes.
//!   [`visibility::cpu`] is its exact f32 oracle (boundary included, tested bit for bit).
//! * [`InstancedCubes`]: one render pass node drawing a cube per visible ID (back faces
//!   culled, 32 cubes per drawn instance) from a render bundle recorded once; what it draws
//!   changes only through GPU-written buffers.
//! * [`CullScene`]: GPU frustum culling end to end in one compiled graph (the `gpugraph
//!   render cull` consumer).
//! * [`IndexPickingTarget`]: object and batch IDs per pixel, read at one pixel or collected
//!   over a region into caller-sized storage (count and overflow on the GPU);
//!   [`picking::cpu`] rasterizes the same ID image on the CPU.
//! * [`ReadbackRing`]: reusable staging slots for asynchronous readback that never reuse a
//!   mapped buffer, never submit and wait only when asked.
//! * [`TextureHistory`]: the last N frames of a texture with frame IDs, supplied to graphs as
//!   frame textures.
//! * [`GpuScene`] ([`gpu_scene`], spec Phase 6): a flat GPU draw database of 128-byte records
//!   with stable object IDs, transactional mutation with exact upload costs, CPU-hierarchy and
//!   table-partition adapters, [`GpuSceneVisibility`] (cull fused with compaction over a packed
//!   bounds view), [`GpuSceneDrawGeneration`] into indirect-command slots and
//!   [`GpuSceneResourceGroups`] over renderer-owned command windows.
//! * [`camera`]: the few matrix helpers the workflow and the CLI need.
//!
//! Nothing here submits: everything records into the caller's graph or encoder.

#![warn(missing_docs)]

pub mod camera;
mod draw;
mod error;
pub mod gpu_scene;
mod history;
mod mesh;
pub mod picking;
mod readback;
pub mod scene;
pub mod shaders;
pub mod visibility;

pub use draw::{DrawCommandBuffer, DrawLayout};
pub use error::RenderError;
pub use gpu_scene::{
    GpuScene, GpuSceneCommandList, GpuSceneDrawGeneration, GpuSceneDrawOutput, GpuSceneError,
    GpuSceneField, GpuSceneFieldValue, GpuSceneGroup, GpuSceneGroupClassification,
    GpuSceneMutation, GpuSceneMutationReport, GpuScenePatch, GpuSceneRecord,
    GpuSceneResourceGroups, GpuSceneUpload, GpuSceneViews, GpuSceneVisibility, GpuSceneVisibleRows,
};
pub use history::TextureHistory;
pub use mesh::{CubeCamera, InstancedCubes};
pub use picking::{IndexPickingTarget, PickRegion, PixelPick, RegionPick, NO_OBJECT};
pub use readback::{ReadbackRing, ReadbackTicket, TicketStatus};
pub use scene::{CullScene, CullSceneOptions};
pub use visibility::{Bounds, ViewParams, VisibilityWorkflow};
