//! Declared dispatch nodes: a compute node described as data (shader, entry point, bindings,
//! parameters, grid) instead of a closure.
//!
//! Design. The graph derives the node's declared uses from its bindings (storage read, storage
//! read-write, uniform; `Indirect` for an indirect grid; one use per subresource of a bound
//! texture view, [`TextureSlot`]), so a dispatch node cannot bind a resource it did not
//! declare: there is nothing else to bind. Its pipeline comes from the device's
//! [`crate::DeviceCache`] and its bind group from the same cache (textures: from the node),
//! rebuilt only when an import override or a frame texture changes what is bound. `Rows` grids
//! split past `max_compute_workgroups_per_dimension` into x·y workgroups ([`grid_for`]); the
//! kernel recovers the linear workgroup with `linear_workgroup`
//! (`#include "shared/dispatch.wgsl"`, [`crate::shader::SHARED`]) and bound-checks its rows.
//! A live count is a kernel input like any other view: bind it with [`Binding::read`] and
//! size the grid by the capacity; the kernel reads `min(count, capacity)`.
//! When the node compiles, its declared bindings are checked against the bindings naga reflects
//! from the assembled WGSL (slot, storage read / read-write / uniform, texture type): an
//! undeclared, missing or mis-typed binding is a [`BindingError`] naming the node, the slot and
//! both kinds, before any pipeline is created. A dispatch node is the one compute-node kind.

mod check;
mod exec;
mod split;
mod texture;

pub use check::BindingError;
pub use split::{grid_for, split_rows, WorkgroupSplit};
pub(crate) use texture::ResolvedTexture;
pub use texture::{TextureKind, TextureSlot};

use crate::resource::{BufferAccess, BufferHandle, ResourceUse};
use crate::shader::ShaderSource;
use crate::view::DataView;
use crate::VectorFormat;

/// How the kernel accesses a bound buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `var<storage, read>`.
    Read,
    /// `var<storage, read_write>` (read, written, or both: hazard analysis treats it as both).
    ReadWrite,
    /// `var<uniform>`.
    Uniform,
}

impl Access {
    fn buffer_access(self) -> BufferAccess {
        match self {
            Access::Read => BufferAccess::StorageRead,
            Access::ReadWrite => BufferAccess::StorageReadWrite,
            Access::Uniform => BufferAccess::Uniform,
        }
    }

    /// The wgpu buffer binding type of a layout entry.
    pub fn binding_type(self) -> wgpu::BufferBindingType {
        match self {
            Access::Read => wgpu::BufferBindingType::Storage { read_only: true },
            Access::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
            Access::Uniform => wgpu::BufferBindingType::Uniform,
        }
    }
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Read => "var<storage, read>",
            Access::ReadWrite => "var<storage, read_write>",
            Access::Uniform => "var<uniform>",
        })
    }
}

/// What a binding slot holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resource {
    /// The aligned range of a view ([`DataView::aligned_range`] with the device's storage or
    /// uniform offset alignment): the kernel adds the view's element offset itself.
    View(DataView),
    /// The whole logical buffer (exactly its descriptor's bytes).
    Handle(BufferHandle),
    /// Node-owned parameter bytes (a `#[repr(C)] Pod` struct, or words), written once at
    /// compile time into a buffer the node owns (bound as a uniform, or as read-only storage for
    /// kernels that index a runtime-sized parameter array); never a graph resource.
    Params(Vec<u8>),
    /// A node-owned zeroed 16-byte buffer, bound where the kernel declares an optional view the
    /// caller did not supply (its constants keep it unread and unwritten); never a graph
    /// resource, one per slot (so a read and a read-write placeholder never alias).
    Placeholder,
    /// A view of a graph texture ([`TextureSlot`]); its uses are per subresource.
    Texture(TextureSlot),
}

/// One slot of bind group 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// `@binding(slot)` in group 0.
    pub slot: u32,
    /// What is bound.
    pub resource: Resource,
    /// How the kernel accesses it (`Params` is `Uniform` or `Read`).
    pub access: Access,
}

impl Binding {
    /// A read-only storage view at `slot`.
    pub fn read(slot: u32, view: DataView) -> Self {
        Self {
            slot,
            resource: Resource::View(view),
            access: Access::Read,
        }
    }
    /// A read-write storage view at `slot`.
    pub fn read_write(slot: u32, view: DataView) -> Self {
        Self {
            slot,
            resource: Resource::View(view),
            access: Access::ReadWrite,
        }
    }
    /// A whole logical buffer at `slot`.
    pub fn handle(slot: u32, handle: BufferHandle, access: Access) -> Self {
        Self {
            slot,
            resource: Resource::Handle(handle),
            access,
        }
    }
    /// A uniform holding `params` at `slot`.
    pub fn params<T: bytemuck::Pod>(slot: u32, params: &T) -> Self {
        Self::params_bytes(slot, bytemuck::bytes_of(params).to_vec())
    }
    /// A uniform holding `bytes` at `slot` (a parameter struct followed by a table).
    pub fn params_bytes(slot: u32, bytes: Vec<u8>) -> Self {
        Self {
            slot,
            resource: Resource::Params(bytes),
            access: Access::Uniform,
        }
    }
    /// A node-owned placeholder at `slot` (see [`Resource::Placeholder`]).
    pub fn placeholder(slot: u32, access: Access) -> Self {
        Self {
            slot,
            resource: Resource::Placeholder,
            access,
        }
    }
    /// A texture view at `slot` (`access` follows from the slot: `Read` for sampled and
    /// read-only storage textures, else `ReadWrite`).
    pub fn texture(slot: u32, texture: TextureSlot) -> Self {
        Self {
            slot,
            resource: Resource::Texture(texture),
            access: texture_access(&texture),
        }
    }
    /// A read-only storage buffer holding `words` at `slot`: parameters a kernel indexes as
    /// `var<storage, read> params: array<u32>`.
    pub fn storage_params(slot: u32, words: &[u32]) -> Self {
        Self {
            slot,
            resource: Resource::Params(bytemuck::cast_slice(words).to_vec()),
            access: Access::Read,
        }
    }
}

/// How many workgroups a dispatch node launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grid {
    /// Exactly these workgroup counts (each within the device's per-dimension limit).
    Workgroups([u32; 3]),
    /// Enough workgroups for `rows` rows at `rows_per_workgroup` each, split over x and y past
    /// the per-dimension limit; zero rows dispatch nothing.
    Rows {
        /// Rows to cover (a live-count kernel passes its capacity).
        rows: u64,
        /// Rows one workgroup handles.
        rows_per_workgroup: u32,
    },
    /// `dispatch_workgroups_indirect` from three packed uint32 rows a GPU wrote (x, y, z).
    Indirect(DataView),
}

/// A declared compute dispatch (see the module doc).
#[derive(Clone, Debug)]
pub struct DispatchNode {
    /// Stable node id.
    pub id: String,
    /// The shader.
    pub shader: ShaderSource,
    /// Entry point in the shader.
    pub entry_point: String,
    /// Pipeline-overridable constants (part of the pipeline key).
    pub constants: Vec<(String, f64)>,
    /// Group-0 bindings; slots unique.
    pub bindings: Vec<Binding>,
    /// Workgroups to launch.
    pub grid: Grid,
    /// Explicit predecessors for reasons no binding expresses.
    pub depends_on: Vec<String>,
    /// Further dispatches of other entry points of the same shader over the same bindings, in
    /// order after the first (a clear before a count, a scan of what it counted): one node, so
    /// one set of declared uses. Each entry point is checked against the bindings.
    pub then: Vec<(String, Grid)>,
    /// Whether the bind group is shared through the device cache (the default: a graph shape
    /// compiled again over the same buffers creates none). The cache's entries keep their
    /// buffers alive until evicted, so a node over buffers that live for one recording (a
    /// query's chunks, an upload's staging) turns it off ([`DispatchNode::private_bind_group`]):
    /// its bind group then belongs to the compiled graph and goes with it.
    pub share_bind_group: bool,
}

impl DispatchNode {
    /// A dispatch of `entry_point` in `shader` with `bindings` over `grid`.
    pub fn new(
        id: impl Into<String>,
        shader: ShaderSource,
        entry_point: impl Into<String>,
        bindings: Vec<Binding>,
        grid: Grid,
    ) -> Self {
        Self {
            id: id.into(),
            shader,
            entry_point: entry_point.into(),
            constants: Vec::new(),
            bindings,
            grid,
            depends_on: Vec::new(),
            then: Vec::new(),
            share_bind_group: true,
        }
    }

    /// The node with a bind group of its own (see [`DispatchNode::share_bind_group`]).
    pub fn private_bind_group(mut self) -> Self {
        self.share_bind_group = false;
        self
    }

    /// The node followed by a dispatch of `entry_point` over `grid` (see [`DispatchNode::then`]).
    pub fn then(mut self, entry_point: impl Into<String>, grid: Grid) -> Self {
        self.then.push((entry_point.into(), grid));
        self
    }

    /// Every dispatch of the node in order: `(entry point, grid)`.
    pub fn dispatches(&self) -> impl Iterator<Item = (&str, Grid)> + '_ {
        std::iter::once((self.entry_point.as_str(), self.grid))
            .chain(self.then.iter().map(|(e, g)| (e.as_str(), *g)))
    }

    /// The buffer uses the graph derives: one per bound view or handle, plus the indirect
    /// buffer. Texture slots add one use per subresource when the node joins a graph
    /// ([`TextureSlot`]).
    pub fn uses(&self) -> Vec<ResourceUse> {
        let mut uses: Vec<ResourceUse> = Vec::new();
        let mut push = |u: ResourceUse| {
            if !uses.contains(&u) {
                uses.push(u);
            }
        };
        for b in &self.bindings {
            let h = match &b.resource {
                Resource::View(v) => v.buffer(),
                Resource::Handle(h) => *h,
                Resource::Params(_) | Resource::Placeholder | Resource::Texture(_) => continue,
            };
            push(ResourceUse::Buffer(h, b.access.buffer_access()));
        }
        for (_, grid) in self.dispatches() {
            if let Grid::Indirect(v) = grid {
                push(ResourceUse::indirect(v.buffer()));
            }
        }
        uses
    }

    /// The texture slots of the node: `(slot, texture)`.
    pub(crate) fn textures(&self) -> impl Iterator<Item = (u32, &TextureSlot)> + '_ {
        self.bindings.iter().filter_map(|b| match &b.resource {
            Resource::Texture(t) => Some((b.slot, t)),
            _ => None,
        })
    }

    /// The compile callback of the node (validated by [`DispatchNode::problem`]), with its
    /// texture slots resolved against their descriptors (in [`DispatchNode::textures`] order).
    pub(crate) fn compile(self, textures: Vec<ResolvedTexture>) -> crate::node::ComputeCompile {
        exec::compile(self, textures)
    }

    /// Why the declaration cannot work, checked when the node is added.
    pub(crate) fn problem(&self, limits: &wgpu::Limits) -> Option<String> {
        let mut slots: Vec<u32> = self.bindings.iter().map(|b| b.slot).collect();
        slots.sort_unstable();
        if let Some(w) = slots.windows(2).find(|w| w[0] == w[1]) {
            return Some(format!("binding slot {} is bound twice", w[0]));
        }
        for b in &self.bindings {
            if matches!(b.resource, Resource::Params(_)) && b.access == Access::ReadWrite {
                return Some(format!("parameter slot {} must be Uniform or Read", b.slot));
            }
            if let Resource::Params(p) = &b.resource {
                if p.is_empty() {
                    return Some(format!("parameter slot {} holds no bytes", b.slot));
                }
            }
            if let Resource::Texture(t) = &b.resource {
                if b.access != texture_access(t) {
                    return Some(format!(
                        "texture slot {} must be declared {} for {:?}",
                        b.slot,
                        texture_access(t),
                        t.kind
                    ));
                }
            }
        }
        self.dispatches()
            .find_map(|(_, grid)| grid_problem(grid, limits))
    }
}

/// The buffer-style access a texture slot implies (reads only, or writes).
fn texture_access(t: &TextureSlot) -> Access {
    if t.accesses().iter().any(|a| a.writes()) {
        Access::ReadWrite
    } else {
        Access::Read
    }
}

/// Why `grid` cannot be dispatched on a device with `limits`.
fn grid_problem(grid: Grid, limits: &wgpu::Limits) -> Option<String> {
    match grid {
        Grid::Workgroups(w) => {
            let max = limits.max_compute_workgroups_per_dimension;
            if let Some(d) = w.iter().position(|&n| n > max) {
                return Some(format!(
                    "grid dimension {d} has {} workgroups, device limit {max}",
                    w[d]
                ));
            }
        }
        Grid::Rows {
            rows,
            rows_per_workgroup,
        } => {
            if rows_per_workgroup == 0 {
                return Some("rows_per_workgroup is 0".into());
            }
            let wg = rows.div_ceil(u64::from(rows_per_workgroup));
            if split_rows(wg, limits.max_compute_workgroups_per_dimension).is_none() {
                return Some(format!(
                        "{rows} rows need {wg} workgroups, more than the device's per-dimension limit squared"
                    ));
            }
        }
        Grid::Indirect(v) => {
            if v.format() != VectorFormat::Uint32
                || v.len() != 3
                || !v.is_packed()
                || !v.byte_offset().is_multiple_of(4)
            {
                return Some(format!(
                        "indirect arguments must be 3 packed uint32 rows at a 4-byte offset, got {} rows of {} at byte {}",
                        v.len(),
                        v.format(),
                        v.byte_offset()
                    ));
            }
        }
    }
    None
}
