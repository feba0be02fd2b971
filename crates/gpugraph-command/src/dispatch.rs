//! Declared dispatch nodes: a compute node described as data (shader, entry point, bindings,
//! parameters, grid) instead of a closure.
//!
//! Design. The graph derives the node's declared uses from its bindings (storage read, storage
//! read-write, uniform; `Indirect` for an indirect grid), so a dispatch node cannot bind a
//! buffer it did not declare: there is nothing else to bind. Its pipeline comes from the
//! device's [`crate::DeviceCache`] and its bind group from the same cache, rebuilt only when
//! an import override changes a buffer. `Rows` grids split past
//! `max_compute_workgroups_per_dimension` into x·y workgroups like gpgpu's `grid_for`; the
//! kernel recovers the linear workgroup `wid.y * nwg.x + wid.x` and bound-checks its rows.
//! A live count is a kernel input like any other view: bind it with [`Binding::read`] and
//! size the grid by the capacity; the kernel reads `min(count, capacity)`.
//! Closure nodes ([`crate::ComputeNode`]) remain the escape hatch.

use crate::resource::{BufferAccess, BufferHandle, ResourceUse};
use crate::view::DataView;
use crate::VectorFormat;

/// WGSL text with a stable key for labels (the cache keys by the full text, not by `key`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShaderSource {
    /// Short name for labels and errors ("scan", "mask/and").
    pub key: String,
    /// Complete WGSL.
    pub wgsl: String,
}

impl ShaderSource {
    /// Shader `key` with text `wgsl`.
    pub fn new(key: impl Into<String>, wgsl: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            wgsl: wgsl.into(),
        }
    }
}

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

    pub(crate) fn binding_type(self) -> wgpu::BufferBindingType {
        match self {
            Access::Read => wgpu::BufferBindingType::Storage { read_only: true },
            Access::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
            Access::Uniform => wgpu::BufferBindingType::Uniform,
        }
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
    /// Node-owned parameter bytes (a `#[repr(C)] Pod` struct), written once at compile time
    /// into a uniform buffer the node owns; never a graph resource.
    Params(Vec<u8>),
}

/// One slot of bind group 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// `@binding(slot)` in group 0.
    pub slot: u32,
    /// What is bound.
    pub resource: Resource,
    /// How the kernel accesses it (`Params` is always `Uniform`).
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
        Self {
            slot,
            resource: Resource::Params(bytemuck::bytes_of(params).to_vec()),
            access: Access::Uniform,
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
        }
    }

    /// The uses the graph derives: one per bound view or handle, plus the indirect buffer.
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
                Resource::Params(_) => continue,
            };
            push(ResourceUse::Buffer(h, b.access.buffer_access()));
        }
        if let Grid::Indirect(v) = self.grid {
            push(ResourceUse::indirect(v.buffer()));
        }
        uses
    }

    /// Why the declaration cannot work, checked when the node is added.
    pub(crate) fn problem(&self, limits: &wgpu::Limits) -> Option<String> {
        let mut slots: Vec<u32> = self.bindings.iter().map(|b| b.slot).collect();
        slots.sort_unstable();
        if let Some(w) = slots.windows(2).find(|w| w[0] == w[1]) {
            return Some(format!("binding slot {} is bound twice", w[0]));
        }
        for b in &self.bindings {
            if matches!(b.resource, Resource::Params(_)) && b.access != Access::Uniform {
                return Some(format!("parameter slot {} must be Uniform", b.slot));
            }
            if let Resource::Params(p) = &b.resource {
                if p.is_empty() {
                    return Some(format!("parameter slot {} holds no bytes", b.slot));
                }
            }
        }
        match self.grid {
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
}

/// The near-square x·y split of `workgroups` (x within `max_per_dim`); `None` past max².
pub fn split_rows(workgroups: u64, max_per_dim: u32) -> Option<[u32; 3]> {
    if workgroups == 0 {
        return Some([0, 0, 0]);
    }
    let max = u64::from(max_per_dim.max(1));
    if workgroups <= max {
        return Some([workgroups as u32, 1, 1]);
    }
    let y = workgroups.div_ceil(max);
    if y > max {
        return None;
    }
    let x = workgroups.div_ceil(y);
    Some([x as u32, y as u32, 1])
}

/// A slot's resource once compiled: a graph buffer (view range or whole) or a params buffer.
enum Slot {
    View(DataView, u64),
    Handle(BufferHandle),
    Params(wgpu::Buffer),
}

struct DispatchExec {
    label: String,
    pipeline: crate::cache::CachedPipeline,
    cache: std::sync::Arc<crate::cache::DeviceCache>,
    slots: Vec<(u32, Slot)>,
    grid: Grid,
    workgroups: [u32; 3],
    memo: crate::node::BindGroupCache,
}

impl DispatchExec {
    fn group(&mut self, ctx: &crate::node::EncodeContext<'_>) -> &wgpu::BindGroup {
        let Self {
            label,
            pipeline,
            cache,
            slots,
            memo,
            ..
        } = self;
        let buffers: Vec<&wgpu::Buffer> = slots
            .iter()
            .map(|(_, s)| match s {
                Slot::View(v, _) => ctx.buffer(v.buffer()),
                Slot::Handle(h) => ctx.buffer(*h),
                Slot::Params(b) => b,
            })
            .collect();
        memo.get_or_create(&buffers, || {
            let entries: Vec<(u32, wgpu::BufferBinding<'_>)> = slots
                .iter()
                .zip(&buffers)
                .map(|((slot, s), buffer)| {
                    let binding = match s {
                        Slot::View(v, align) => crate::node::view_binding(buffer, v, *align).0,
                        Slot::Handle(h) => ctx.binding(*h),
                        Slot::Params(b) => b.as_entire_buffer_binding(),
                    };
                    (*slot, binding)
                })
                .collect();
            cache.bind_group(label, &pipeline.layout, &entries)
        })
    }
}

impl crate::node::ComputeExecutable for DispatchExec {
    fn encode(
        &mut self,
        pass: &mut wgpu::ComputePass<'_>,
        ctx: &crate::node::EncodeContext<'_>,
    ) -> Result<(), crate::node::NodeError> {
        if self.workgroups.contains(&0) && !matches!(self.grid, Grid::Indirect(_)) {
            return Ok(());
        }
        let group = self.group(ctx).clone();
        pass.set_pipeline(&self.pipeline.pipeline);
        pass.set_bind_group(0, &group, &[]);
        match self.grid {
            Grid::Indirect(v) => {
                pass.dispatch_workgroups_indirect(ctx.buffer(v.buffer()), v.byte_offset())
            }
            _ => {
                let [x, y, z] = self.workgroups;
                pass.dispatch_workgroups(x, y, z);
            }
        }
        Ok(())
    }
}

/// The compile callback of a dispatch node (validated by [`DispatchNode::problem`]).
pub(crate) fn compile(node: DispatchNode) -> crate::node::ComputeCompile {
    Box::new(move |cc: &crate::node::CompileContext<'_>| {
        let limits = cc.limits();
        let storage_align = u64::from(limits.min_storage_buffer_offset_alignment);
        let uniform_align = u64::from(limits.min_uniform_buffer_offset_alignment);
        let entries: Vec<wgpu::BindGroupLayoutEntry> = node
            .bindings
            .iter()
            .map(|b| wgpu::BindGroupLayoutEntry {
                binding: b.slot,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: b.access.binding_type(),
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let constants: Vec<(&str, f64)> = node
            .constants
            .iter()
            .map(|(n, v)| (n.as_str(), *v))
            .collect();
        let label = format!("{} ({})", node.id, node.shader.key);
        let cache = cc.cache_arc();
        let pipeline = cache.compute_pipeline(&crate::cache::PipelineDescriptor {
            label: &label,
            wgsl: &node.shader.wgsl,
            entry_point: &node.entry_point,
            entries: &entries,
            constants: &constants,
        });
        let slots = node
            .bindings
            .iter()
            .map(|b| {
                let slot = match &b.resource {
                    Resource::View(v) => {
                        let align = if b.access == Access::Uniform {
                            uniform_align
                        } else {
                            storage_align
                        };
                        Slot::View(*v, align)
                    }
                    Resource::Handle(h) => Slot::Handle(*h),
                    Resource::Params(bytes) => {
                        Slot::Params(params_buffer(cc.device(), &label, bytes))
                    }
                };
                (b.slot, slot)
            })
            .collect();
        let workgroups = match node.grid {
            Grid::Workgroups(w) => w,
            Grid::Rows {
                rows,
                rows_per_workgroup,
            } => split_rows(
                rows.div_ceil(u64::from(rows_per_workgroup)),
                limits.max_compute_workgroups_per_dimension,
            )
            .unwrap_or([0, 0, 0]),
            Grid::Indirect(_) => [1, 1, 1],
        };
        Ok(Box::new(DispatchExec {
            label,
            pipeline,
            cache,
            slots,
            grid: node.grid,
            workgroups,
            memo: crate::node::BindGroupCache::default(),
        }) as Box<dyn crate::node::ComputeExecutable>)
    })
}

/// A uniform buffer holding `bytes`, padded to 16 bytes (WGSL uniform structs round up).
fn params_buffer(device: &wgpu::Device, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    let mut padded = bytes.to_vec();
    padded.resize(bytes.len().max(16).div_ceil(16) * 16, 0);
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &padded,
        usage: wgpu::BufferUsages::UNIFORM,
    })
}
