//! A compiled dispatch node: its pipelines (one per dispatch, one layout), its node-owned
//! buffers, and the bind group, rebuilt only when an import override changes a buffer or a
//! frame texture changes a texture.

use super::{check, split_rows, Access, DispatchNode, Grid, ResolvedTexture, Resource};
use crate::resource::BufferHandle;
use crate::view::DataView;

/// A slot's resource once compiled: a graph buffer (view range or whole), a node-owned
/// buffer (parameters, placeholder) or a graph texture's view.
enum Slot {
    View(DataView, u64),
    Handle(BufferHandle),
    Owned(wgpu::Buffer),
    Texture(Box<ResolvedTexture>),
}

/// One dispatch: its pipeline and grid (workgroups resolved for direct grids).
struct Step {
    pipeline: crate::cache::CachedPipeline,
    grid: Grid,
    workgroups: [u32; 3],
}

struct DispatchExec {
    label: String,
    cache: std::sync::Arc<crate::cache::DeviceCache>,
    /// [`DispatchNode::share_bind_group`].
    shared: bool,
    slots: Vec<(u32, Slot)>,
    steps: Vec<Step>,
    memo: crate::node::BindGroupCache,
    /// The textures `memo`'s bind group views (frame textures change between encodes) and
    /// their views, in slot order.
    textures: Vec<(wgpu::Texture, wgpu::TextureView)>,
}

impl DispatchExec {
    fn group(&mut self, ctx: &crate::node::EncodeContext<'_>) -> &wgpu::BindGroup {
        let Self {
            label,
            cache,
            shared,
            slots,
            steps,
            memo,
            textures,
        } = self;
        let current: Vec<(&wgpu::Texture, &ResolvedTexture)> = slots
            .iter()
            .filter_map(|(_, s)| match s {
                Slot::Texture(t) => Some((ctx.texture(t.texture), &**t)),
                _ => None,
            })
            .collect();
        let same = current.len() == textures.len()
            && current
                .iter()
                .zip(textures.iter())
                .all(|((a, _), (b, _))| *a == b);
        if !same {
            *memo = Default::default();
            *textures = current
                .iter()
                .map(|(t, r)| ((*t).clone(), t.create_view(&r.view)))
                .collect();
        }
        let buffers: Vec<&wgpu::Buffer> = slots
            .iter()
            .filter_map(|(_, s)| match s {
                Slot::View(v, _) => Some(ctx.buffer(v.buffer())),
                Slot::Handle(h) => Some(ctx.buffer(*h)),
                Slot::Owned(b) => Some(b),
                Slot::Texture(_) => None,
            })
            .collect();
        memo.get_or_create(&buffers, || {
            let mut buffer_of = buffers.iter();
            let mut view_of = textures.iter().map(|(_, v)| v);
            let entries: Vec<(u32, wgpu::BindingResource<'_>)> = slots
                .iter()
                .map(|(slot, s)| {
                    let mut buffer = || *buffer_of.next().expect("one buffer per buffer slot");
                    let binding = match s {
                        Slot::View(v, align) => wgpu::BindingResource::Buffer(
                            crate::node::view_binding(buffer(), v, *align).0,
                        ),
                        Slot::Handle(h) => {
                            buffer();
                            wgpu::BindingResource::Buffer(ctx.binding(*h))
                        }
                        Slot::Owned(_) => buffer().as_entire_binding(),
                        Slot::Texture(_) => wgpu::BindingResource::TextureView(
                            view_of.next().expect("one view per texture slot"),
                        ),
                    };
                    (*slot, binding)
                })
                .collect();
            // Every step's pipeline shares the node's one layout.
            let layout = &steps[0].pipeline.layout;
            // The device cache shares buffer-only groups; a texture's group stays the node's
            // (its views are the node's).
            if *shared && textures.is_empty() {
                let entries: Vec<(u32, wgpu::BufferBinding<'_>)> = entries
                    .into_iter()
                    .filter_map(|(slot, r)| match r {
                        wgpu::BindingResource::Buffer(b) => Some((slot, b)),
                        _ => None,
                    })
                    .collect();
                return cache.bind_group(label, layout, &entries);
            }
            let entries: Vec<wgpu::BindGroupEntry<'_>> = entries
                .into_iter()
                .map(|(binding, resource)| wgpu::BindGroupEntry { binding, resource })
                .collect();
            cache
                .device()
                .create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(label),
                    layout,
                    entries: &entries,
                })
        })
    }
}

impl crate::node::ComputeExecutable for DispatchExec {
    fn encode(
        &mut self,
        pass: &mut wgpu::ComputePass<'_>,
        ctx: &crate::node::EncodeContext<'_>,
    ) -> Result<(), crate::node::NodeError> {
        let runs = |s: &Step| matches!(s.grid, Grid::Indirect(_)) || !s.workgroups.contains(&0);
        if !self.steps.iter().any(runs) {
            return Ok(());
        }
        let group = self.group(ctx).clone();
        for step in self.steps.iter().filter(|s| runs(s)) {
            pass.set_pipeline(&step.pipeline.pipeline);
            pass.set_bind_group(0, &group, &[]);
            match step.grid {
                Grid::Indirect(v) => {
                    pass.dispatch_workgroups_indirect(ctx.buffer(v.buffer()), v.byte_offset())
                }
                _ => {
                    let [x, y, z] = step.workgroups;
                    pass.dispatch_workgroups(x, y, z);
                }
            }
        }
        Ok(())
    }
}

/// The compile callback of a dispatch node: assembles the shader, checks the declared
/// bindings against its reflection for every entry point ([`super::BindingError`]), then takes
/// the pipelines from the device cache.
pub(super) fn compile(
    node: DispatchNode,
    textures: Vec<ResolvedTexture>,
) -> crate::node::ComputeCompile {
    Box::new(move |cc: &crate::node::CompileContext<'_>| {
        let texture_of = |slot: u32| {
            let i = node
                .textures()
                .position(|(s, _)| s == slot)
                .expect("every texture slot was resolved");
            textures[i].clone()
        };
        let limits = cc.limits();
        let storage_align = u64::from(limits.min_storage_buffer_offset_alignment);
        let uniform_align = u64::from(limits.min_uniform_buffer_offset_alignment);
        let entries: Vec<wgpu::BindGroupLayoutEntry> = node
            .bindings
            .iter()
            .map(|b| wgpu::BindGroupLayoutEntry {
                binding: b.slot,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: match &b.resource {
                    Resource::Texture(_) => texture_of(b.slot).ty,
                    _ => wgpu::BindingType::Buffer {
                        ty: b.access.binding_type(),
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                },
                count: None,
            })
            .collect();
        let constants: Vec<(&str, f64)> = node
            .constants
            .iter()
            .map(|(n, v)| (n.as_str(), *v))
            .collect();
        let label = format!("{} ({})", node.id, node.shader.key());
        let wgsl = node.shader.build();
        let texture_types: Vec<(u32, String)> = node
            .textures()
            .zip(&textures)
            .map(|((slot, _), t)| (slot, t.wgsl.clone()))
            .collect();
        for (entry_point, _) in node.dispatches() {
            check::check_bindings(&node, entry_point, &wgsl, &texture_types)?;
        }
        let cache = cc.cache_arc();
        let steps = node
            .dispatches()
            .map(|(entry_point, grid)| Step {
                pipeline: cache.compute_pipeline(&crate::cache::PipelineDescriptor {
                    label: &label,
                    wgsl: &wgsl,
                    entry_point,
                    entries: &entries,
                    constants: &constants,
                }),
                grid,
                workgroups: match grid {
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
                },
            })
            .collect();
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
                        Slot::Owned(owned_buffer(cc.device(), &label, bytes))
                    }
                    Resource::Placeholder => {
                        Slot::Owned(owned_buffer(cc.device(), &label, &[0; 16]))
                    }
                    Resource::Texture(_) => Slot::Texture(Box::new(texture_of(b.slot))),
                };
                (b.slot, slot)
            })
            .collect();
        Ok(Box::new(DispatchExec {
            label,
            cache,
            shared: node.share_bind_group,
            slots,
            steps,
            memo: crate::node::BindGroupCache::default(),
            textures: Vec::new(),
        }) as Box<dyn crate::node::ComputeExecutable>)
    })
}

/// A uniform / storage buffer holding `bytes`, padded to 16 bytes (WGSL uniform structs round
/// up).
fn owned_buffer(device: &wgpu::Device, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    let mut padded = bytes.to_vec();
    padded.resize(bytes.len().max(16).div_ceil(16) * 16, 0);
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &padded,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::STORAGE,
    })
}
