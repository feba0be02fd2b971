//! [`CompiledGraph`]: the executable form. Owns physical transients and node executables,
//! records into a caller's encoder (never submits), and reports stats and optional timings.

use std::collections::{HashMap, HashSet};
use std::time::Duration;
#[cfg(not(target_arch = "wasm32"))]
use std::time::Instant;
// `std::time::Instant::now` panics on wasm32-unknown-unknown; web-time reads performance.now().
#[cfg(target_arch = "wasm32")]
use web_time::Instant;

use crate::attachment::{subresource_view, DepthStencilAttachment, PassLayout};
use crate::error::GraphError;
use crate::graph::{validate_buffer, CommandGraph, NodeCompileFn};
use crate::node::{
    ColorLoad, CompileContext, ComputeExecutable, CopyExecutable, EncodeContext, NodeKind,
};
use crate::node::{Declared, RenderExecutable, Resolver};
use crate::plan::{self, PlanError, PlanNode, ResourceKey, TransientRequest};
use crate::profile::{NodeTiming, Profiler};
use crate::resource::{BufferDescriptor, BufferHandle, GraphKey, Lifetime, ResourceUse};

/// Compile-time allocation and ordering facts: diagnostics, not a score.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct GraphStats {
    /// Declared transient buffers.
    pub logical_transient_count: usize,
    /// Sum of declared transient byte lengths.
    pub logical_transient_bytes: u64,
    /// Physical transient allocations created.
    pub physical_transient_count: usize,
    /// Sum of physical allocation byte lengths (max over tenants).
    pub physical_transient_bytes: u64,
    /// Imported buffers.
    pub imported_count: usize,
    /// Sum of imported descriptor byte lengths.
    pub imported_bytes: u64,
    /// `logical_transient_bytes - physical_transient_bytes`.
    pub reused_bytes: u64,
    /// Reused bytes as a percentage of logical transient bytes (0 when there are none).
    pub reuse_percent: f64,
    /// Node ids in execution order.
    pub node_order: Vec<String>,
    /// For each physical transient allocation, the logical transient ids it hosts in
    /// placement order.
    pub physical_tenants: Vec<Vec<String>>,
    /// Graph-owned textures declared.
    pub logical_texture_count: usize,
    /// Graph-owned texture allocations created (aliasing shares one between textures with
    /// equal descriptors and disjoint lifetimes).
    pub physical_texture_count: usize,
}

/// A dependency between two nodes, by id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DependencyEdge {
    /// Node that runs first.
    pub from: String,
    /// Node that runs after it.
    pub to: String,
    /// Hazard kind or explicit.
    pub kind: plan::EdgeKind,
}

/// Options for one [`CompiledGraph::encode`].
#[derive(Default)]
pub struct EncodeOptions<'a> {
    /// Replacement buffers for imports, revalidated against the compiled descriptor.
    pub overrides: &'a [(BufferHandle, &'a wgpu::Buffer)],
    /// Give every compute/render node its own pass with timestamp writes; read them with
    /// [`CompiledGraph::read_timings`] after submitting. Needs `TIMESTAMP_QUERY`.
    pub profile: bool,
}

/// The frame textures of one [`CompiledGraph::encode_frame`]: every frame texture of the
/// graph with this encoding's texture, under one frame ID that must exceed the previous one.
#[derive(Clone, Copy, Debug)]
pub struct FrameTextures<'a> {
    /// Strictly increasing per compiled graph.
    pub frame_id: u64,
    /// `(handle from import_frame_texture, this frame's texture)`, each frame texture once.
    pub textures: &'a [(crate::TextureHandle, &'a wgpu::Texture)],
}

/// What one encode recorded.
#[derive(Clone, Debug, Default)]
pub struct EncodeReport {
    /// CPU time each node's executable spent recording, in execution order.
    pub node_encode_cpu: Vec<(String, Duration)>,
    /// Compute passes opened.
    pub compute_passes: usize,
    /// Render passes opened.
    pub render_passes: usize,
}

enum Executable {
    Compute(Box<dyn ComputeExecutable>),
    Render(Box<dyn RenderExecutable>, Box<PassViews>),
    Copy(Box<dyn CopyExecutable>),
}

/// The views and operations of one render pass node, created at compile time (and again at
/// encode time for attachments that are frame textures).
struct PassViews {
    layout: PassLayout,
    /// Whether an attachment is a frame texture (its views change every frame).
    uses_frame: bool,
    /// (view, resolve view, load, store) per color attachment.
    color: Vec<(
        wgpu::TextureView,
        Option<wgpu::TextureView>,
        ColorLoad,
        bool,
    )>,
    depth_stencil: Option<(wgpu::TextureView, DepthStencilAttachment)>,
}

mod encode;
mod nodes;

pub use nodes::compile_threads;
use nodes::NodeCompiler;

struct CompiledNode {
    id: String,
    /// The handles the node declared: all its executable may resolve.
    declared: Declared,
    exec: Executable,
}

/// A compiled command graph. Owns its physical transients (released once, on drop or
/// [`CompiledGraph::destroy`]); borrows imports (never destroyed).
pub struct CompiledGraph {
    id: String,
    key: GraphKey,
    device: wgpu::Device,
    cache: std::sync::Arc<crate::cache::DeviceCache>,
    descriptors: Vec<BufferDescriptor>,
    buffer_ids: Vec<String>,
    texture_ids: Vec<String>,
    lifetimes: Vec<Lifetime>,
    /// Per logical buffer: the default import or the hosting physical transient.
    resolved: Vec<wgpu::Buffer>,
    /// Per logical buffer: its descriptor byte length.
    lengths: Vec<u64>,
    physical: Vec<wgpu::Buffer>,
    textures: Vec<wgpu::Texture>,
    owned_textures: Vec<wgpu::Texture>,
    /// Per logical texture: imported per frame ([`CommandGraph::import_frame_texture`]).
    frame_flags: Vec<bool>,
    /// Per logical texture: its descriptor (frame textures are checked against it).
    texture_descs: Vec<crate::TextureDescriptor>,
    /// The frame ID of the last `encode_frame`.
    last_frame: Option<u64>,
    /// Per logical texture: an external texture's previous texture (identity only, for the
    /// freshness check; never destroyed).
    last_external: Vec<Option<wgpu::Texture>>,
    /// Per logical texture: whether it is external.
    external_flags: Vec<bool>,
    nodes: Vec<CompiledNode>,
    edges: Vec<DependencyEdge>,
    stats: GraphStats,
    probed_devices: HashSet<wgpu::Buffer>,
    profiler: Option<Profiler>,
    destroyed: bool,
}

/// Planner keys of every subresource of texture `index` (a whole-texture use).
fn texture_keys(graph: &CommandGraph, index: u32) -> impl Iterator<Item = ResourceKey> {
    let d = &graph.textures[index as usize].desc;
    let (mips, layers) = (d.mip_level_count, d.layers);
    (0..mips).flat_map(move |mip| {
        (0..layers).map(move |layer| ResourceKey::TextureSubresource {
            texture: index,
            mip,
            layer,
        })
    })
}

fn plan_nodes(graph: &CommandGraph) -> Vec<PlanNode> {
    graph
        .nodes
        .iter()
        .map(|n| {
            let mut uses = Vec::new();
            for u in &n.uses {
                match u {
                    ResourceUse::Buffer(h, _) => {
                        uses.push((ResourceKey::Buffer(h.index), u.reads(), u.writes()))
                    }
                    ResourceUse::Texture(h, _) => uses
                        .extend(texture_keys(graph, h.index).map(|k| (k, u.reads(), u.writes()))),
                }
            }
            for a in &n.attachments {
                let key = ResourceKey::TextureSubresource {
                    texture: a.at.texture.index,
                    mip: a.at.mip_level,
                    layer: a.at.layer,
                };
                uses.push((key, a.access.reads(), a.access.writes()));
            }
            PlanNode {
                id: n.id.clone(),
                uses,
                depends_on: n.depends_on.clone(),
            }
        })
        .collect()
}

fn physical_label(graph: &CommandGraph, tenants: &[usize], transient_index: &[usize]) -> String {
    let mut label = String::new();
    for (i, &t) in tenants.iter().enumerate() {
        if i == 4 {
            label.push_str(&format!("+{} more", tenants.len() - 4));
            break;
        }
        if i > 0 {
            label.push('+');
        }
        label.push_str(&graph.buffers[transient_index[t]].desc.id);
    }
    label
}

impl CommandGraph {
    /// Compiles: validates dependencies, derives hazards and the stable order, plans and
    /// creates transients, then runs node compile callbacks. On failure everything created is
    /// released before the error returns.
    pub fn compile(self) -> Result<CompiledGraph, GraphError> {
        CompiledGraph::compile(self)
    }
}

impl CompiledGraph {
    pub(crate) fn compile(graph: CommandGraph) -> Result<Self, GraphError> {
        let plan_nodes = plan_nodes(&graph);
        let edges = plan::derive_edges(&plan_nodes).map_err(|e| plan_error(&graph, e))?;
        let order =
            plan::stable_order(plan_nodes.len(), &edges).map_err(|e| plan_error(&graph, e))?;
        let mut position = vec![0usize; order.len()];
        for (p, &n) in order.iter().enumerate() {
            position[n] = p;
        }

        // Transient intervals over compiled positions.
        let transient_index: Vec<usize> = (0..graph.buffers.len())
            .filter(|&i| graph.buffers[i].lifetime == Lifetime::Transient)
            .collect();
        let mut interval: HashMap<u32, (usize, usize)> = HashMap::new();
        for (n, node) in graph.nodes.iter().enumerate() {
            for u in &node.uses {
                if let ResourceUse::Buffer(h, _) = u {
                    let p = position[n];
                    let e = interval.entry(h.index).or_insert((p, p));
                    e.0 = e.0.min(p);
                    e.1 = e.1.max(p);
                }
            }
        }
        let requests: Vec<TransientRequest> = transient_index
            .iter()
            .map(|&i| TransientRequest {
                byte_length: graph.buffers[i].desc.byte_length,
                usage: graph.buffers[i].desc.usage,
                interval: interval.get(&(i as u32)).copied(),
            })
            .collect();
        let alias = plan::plan_transients(&requests);

        let device = graph.device.clone();
        let physical: Vec<wgpu::Buffer> = alias
            .physical
            .iter()
            .map(|p| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&physical_label(&graph, &p.tenants, &transient_index)),
                    size: p.byte_length.max(4).div_ceil(4) * 4,
                    usage: p.usage,
                    mapped_at_creation: false,
                })
            })
            .collect();
        let mut slot_of_transient: HashMap<usize, usize> = HashMap::new();
        for (t, &i) in transient_index.iter().enumerate() {
            slot_of_transient.insert(i, alias.assignment[t]);
        }
        let resolved: Vec<wgpu::Buffer> = graph
            .buffers
            .iter()
            .enumerate()
            .map(|(i, b)| match &b.import {
                Some(buf) => buf.clone(),
                None => physical[slot_of_transient[&i]].clone(),
            })
            .collect();
        // Graph-owned textures: interval reuse among equal descriptors, as for buffers.
        let mut texture_interval: HashMap<u32, (usize, usize)> = HashMap::new();
        for (n, node) in graph.nodes.iter().enumerate() {
            let textures = node
                .uses
                .iter()
                .filter_map(|u| match u {
                    ResourceUse::Texture(h, _) => Some(h.index),
                    ResourceUse::Buffer(..) => None,
                })
                .chain(node.attachments.iter().map(|a| a.at.texture.index));
            for t in textures {
                let p = position[n];
                let e = texture_interval.entry(t).or_insert((p, p));
                e.0 = e.0.min(p);
                e.1 = e.1.max(p);
            }
        }
        let owned_index: Vec<usize> = (0..graph.textures.len())
            .filter(|&i| graph.textures[i].import.is_none() && !graph.textures[i].frame)
            .collect();
        let texture_requests: Vec<plan::TextureRequest> = owned_index
            .iter()
            .map(|&i| {
                let mut shape = graph.textures[i].desc.clone();
                shape.id.clear();
                plan::TextureRequest {
                    shape,
                    interval: texture_interval.get(&(i as u32)).copied(),
                }
            })
            .collect();
        let texture_slots = plan::plan_textures(&texture_requests);
        let slot_count = texture_slots.iter().map(|&s| s + 1).max().unwrap_or(0);
        let owned_textures: Vec<wgpu::Texture> = (0..slot_count)
            .map(|slot| {
                let first = texture_slots
                    .iter()
                    .position(|&s| s == slot)
                    .unwrap_or_else(|| unreachable!("every slot has a tenant"));
                let tenants: Vec<&str> = texture_slots
                    .iter()
                    .enumerate()
                    .filter(|(_, &s)| s == slot)
                    .map(|(t, _)| graph.textures[owned_index[t]].desc.id.as_str())
                    .collect();
                let label = tenants.join("+");
                let mut desc = graph.textures[owned_index[first]].desc.wgpu_descriptor();
                desc.label = Some(&label);
                device.create_texture(&desc)
            })
            .collect();
        // Frame textures compile against a placeholder of their shape (views of attachments;
        // nodes may not resolve them at compile time), replaced on every encode_frame.
        let mut placeholders: Vec<wgpu::Texture> = Vec::new();
        let textures: Vec<wgpu::Texture> = graph
            .textures
            .iter()
            .enumerate()
            .map(|(i, t)| match &t.import {
                Some(tex) => tex.clone(),
                None if t.frame => {
                    let tex = device.create_texture(&t.desc.wgpu_descriptor());
                    placeholders.push(tex.clone());
                    tex
                }
                None => {
                    let t = owned_index
                        .iter()
                        .position(|&j| j == i)
                        .unwrap_or_else(|| unreachable!("graph-owned textures are indexed"));
                    owned_textures[texture_slots[t]].clone()
                }
            })
            .collect();

        let stats = {
            let logical_transient_bytes: u64 = requests.iter().map(|r| r.byte_length).sum();
            let physical_transient_bytes: u64 = alias.physical.iter().map(|p| p.byte_length).sum();
            let reused = logical_transient_bytes.saturating_sub(physical_transient_bytes);
            let imports: Vec<&crate::graph::BufferEntry> = graph
                .buffers
                .iter()
                .filter(|b| b.lifetime == Lifetime::Imported)
                .collect();
            GraphStats {
                logical_transient_count: requests.len(),
                logical_transient_bytes,
                physical_transient_count: alias.physical.len(),
                physical_transient_bytes,
                imported_count: imports.len(),
                imported_bytes: imports.iter().map(|b| b.desc.byte_length).sum(),
                reused_bytes: reused,
                reuse_percent: if logical_transient_bytes == 0 {
                    0.0
                } else {
                    100.0 * reused as f64 / logical_transient_bytes as f64
                },
                node_order: order.iter().map(|&n| graph.nodes[n].id.clone()).collect(),
                physical_tenants: alias
                    .physical
                    .iter()
                    .map(|p| {
                        p.tenants
                            .iter()
                            .map(|&t| graph.buffers[transient_index[t]].desc.id.clone())
                            .collect()
                    })
                    .collect(),
                logical_texture_count: owned_index.len(),
                physical_texture_count: owned_textures.len(),
            }
        };
        let dependency_edges = edges
            .iter()
            .map(|e| DependencyEdge {
                from: graph.nodes[e.from].id.clone(),
                to: graph.nodes[e.to].id.clone(),
                kind: e.kind,
            })
            .collect();

        let texture_ids = graph.textures.iter().map(|t| t.desc.id.clone()).collect();
        let frame_flags: Vec<bool> = graph.textures.iter().map(|t| t.frame).collect();
        let external_flags: Vec<bool> = graph.textures.iter().map(|t| t.external).collect();
        let texture_descs = graph.textures.iter().map(|t| t.desc.clone()).collect();
        let mut owned_textures = owned_textures;
        owned_textures.extend(placeholders);
        let CommandGraph {
            id,
            key,
            buffers,
            nodes,
            ..
        } = graph;
        let mut compiled = CompiledGraph {
            id,
            key,
            cache: crate::cache::DeviceCache::for_device(&device),
            device,
            descriptors: buffers.iter().map(|b| b.desc.clone()).collect(),
            buffer_ids: buffers.iter().map(|b| b.desc.id.clone()).collect(),
            texture_ids,
            lifetimes: buffers.iter().map(|b| b.lifetime).collect(),
            lengths: buffers.iter().map(|b| b.desc.byte_length).collect(),
            resolved,
            physical,
            textures,
            owned_textures,
            frame_flags,
            texture_descs,
            last_frame: None,
            last_external: vec![None; external_flags.len()],
            external_flags,
            nodes: Vec::with_capacity(nodes.len()),
            edges: dependency_edges,
            stats,
            probed_devices: HashSet::new(),
            profiler: None,
            destroyed: false,
        };
        let mut slots: Vec<Option<crate::graph::NodeEntry>> = nodes.into_iter().map(Some).collect();
        let ordered: Vec<crate::graph::NodeEntry> =
            order.iter().filter_map(|&n| slots[n].take()).collect();
        let results = NodeCompiler::of(&compiled).compile_nodes(ordered);
        for result in results {
            match result {
                Ok(c) => compiled.nodes.push(c),
                Err(e) => {
                    // Dropping `compiled` releases transients, textures and executables so far.
                    compiled.destroy();
                    return Err(e);
                }
            }
        }
        Ok(compiled)
    }
}

/// The views of `layout`'s attachments over `textures`.
fn pass_views(textures: &[wgpu::Texture], frame_flags: &[bool], layout: &PassLayout) -> PassViews {
    let view = |at: crate::attachment::Subresource| {
        subresource_view(&textures[at.texture.index as usize], at)
    };
    let uses_frame = layout
        .color
        .iter()
        .flat_map(|c| [Some(c.target), c.resolve])
        .flatten()
        .chain(layout.depth_stencil.map(|d| d.target))
        .any(|at| frame_flags[at.texture.index as usize]);
    PassViews {
        layout: layout.clone(),
        uses_frame,
        color: layout
            .color
            .iter()
            .map(|c| (view(c.target), c.resolve.map(view), c.load, c.store))
            .collect(),
        depth_stencil: layout.depth_stencil.map(|d| (view(d.target), d)),
    }
}

impl CompiledGraph {
    /// The graph id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The device's shared pipeline and bind-group cache (the one its nodes compiled with).
    pub fn cache(&self) -> &std::sync::Arc<crate::cache::DeviceCache> {
        &self.cache
    }

    /// Allocation and order statistics computed at compile time.
    pub fn stats(&self) -> &GraphStats {
        &self.stats
    }

    /// Node ids in execution order.
    pub fn node_order(&self) -> &[String] {
        &self.stats.node_order
    }

    /// Every dependency edge (hazards and explicit), by node id.
    pub fn edges(&self) -> &[DependencyEdge] {
        &self.edges
    }

    /// The kind of every node in execution order.
    pub fn node_kinds(&self) -> Vec<NodeKind> {
        self.nodes
            .iter()
            .map(|n| match n.exec {
                Executable::Compute(_) => NodeKind::Compute,
                Executable::Render(..) => NodeKind::Render,
                Executable::Copy(_) => NodeKind::Copy,
            })
            .collect()
    }

    /// The buffer a handle resolves to without overrides (default import or physical
    /// transient), e.g. to copy a transient result out in the caller's encoder.
    pub fn buffer(&self, handle: impl Into<BufferHandle>) -> Result<&wgpu::Buffer, GraphError> {
        let h = handle.into();
        self.check_handle(h)?;
        Ok(&self.resolved[h.index as usize])
    }

    fn check_handle(&self, h: BufferHandle) -> Result<(), GraphError> {
        if h.graph != self.key || h.index as usize >= self.resolved.len() {
            return Err(GraphError::ForeignHandle {
                graph: self.id.clone(),
                what: "buffer handle".into(),
            });
        }
        Ok(())
    }

    /// Whether [`CompiledGraph::destroy`] ran.
    pub fn is_destroyed(&self) -> bool {
        self.destroyed
    }

    /// Releases node executables and destroys each physical transient and graph-owned texture
    /// once. Imports are untouched. Idempotent; later encodes fail with `Destroyed`.
    pub fn destroy(&mut self) {
        if self.destroyed {
            return;
        }
        self.destroyed = true;
        self.nodes.clear();
        for b in self.physical.drain(..) {
            b.destroy();
        }
        for t in self.owned_textures.drain(..) {
            t.destroy();
        }
        self.profiler = None;
    }

    /// Where the last profiled encode resolved its timestamps: a buffer (`COPY_SRC`) and the
    /// byte count from its start. A caller that reads results back after the encode copies
    /// this range into the same readback and turns the bytes into timings with
    /// [`Self::timings_from`], instead of [`Self::read_timings`]' own map and wait. `None`
    /// before a profiled encode.
    pub fn timestamp_range(&self) -> Option<(&wgpu::Buffer, u64)> {
        self.profiler.as_ref().and_then(Profiler::ticks)
    }

    /// The GPU timings of the last profiled encode from `bytes`, the contents of
    /// [`Self::timestamp_range`] read back after the encode's submission completed.
    pub fn timings_from(
        &self,
        queue: &wgpu::Queue,
        bytes: &[u8],
    ) -> Result<Vec<NodeTiming>, GraphError> {
        let ids: Vec<String> = self.nodes.iter().map(|n| n.id.clone()).collect();
        let unavailable = |reason: String| GraphError::TimingsUnavailable {
            graph: self.id.clone(),
            reason,
        };
        let Some(p) = self.profiler.as_ref().filter(|p| p.ticks().is_some()) else {
            return Err(unavailable(
                "no profiled encode was recorded (EncodeOptions::profile)".into(),
            ));
        };
        p.timings(queue, &ids, bytes).map_err(unavailable)
    }

    /// Reads the GPU timings of the last profiled encode. This is a READBACK: it maps a
    /// staging buffer and blocks until the GPU finished; call it after submitting.
    pub fn read_timings(&mut self, queue: &wgpu::Queue) -> Result<Vec<NodeTiming>, GraphError> {
        let ids: Vec<String> = self.nodes.iter().map(|n| n.id.clone()).collect();
        let Some(p) = self.profiler.as_mut() else {
            return Err(GraphError::TimingsUnavailable {
                graph: self.id.clone(),
                reason: "no profiled encode was recorded (EncodeOptions::profile)".into(),
            });
        };
        p.read(&self.device, queue, &ids)
            .map_err(|reason| GraphError::TimingsUnavailable {
                graph: self.id.clone(),
                reason,
            })
    }
}

impl Drop for CompiledGraph {
    fn drop(&mut self) {
        self.destroy();
    }
}

fn plan_error(graph: &CommandGraph, e: PlanError) -> GraphError {
    match e {
        PlanError::UnknownDependency { node, dependency } => GraphError::UnknownDependency {
            node: graph.nodes[node].id.clone(),
            dependency,
        },
        PlanError::Cycle(nodes) => GraphError::Cycle {
            graph: graph.id.clone(),
            nodes: nodes
                .into_iter()
                .map(|n| graph.nodes[n].id.clone())
                .collect(),
        },
    }
}
