//! [`CompiledGraph`]: the executable form. Owns physical transients and node executables,
//! records into a caller's encoder (never submits), and reports stats and optional timings.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

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
    Render(Box<dyn RenderExecutable>, wgpu::TextureView, ColorLoad),
    Copy(Box<dyn CopyExecutable>),
}

mod encode;

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
    nodes: Vec<CompiledNode>,
    edges: Vec<DependencyEdge>,
    stats: GraphStats,
    probed_devices: HashSet<wgpu::Buffer>,
    profiler: Option<Profiler>,
    destroyed: bool,
}

fn plan_nodes(graph: &CommandGraph) -> Vec<PlanNode> {
    graph
        .nodes
        .iter()
        .map(|n| PlanNode {
            id: n.id.clone(),
            uses: n
                .uses
                .iter()
                .map(|u| {
                    let key = match u {
                        ResourceUse::Buffer(h, _) => ResourceKey::Buffer(h.index),
                        ResourceUse::Texture(h, _) => ResourceKey::Texture(h.index),
                    };
                    (key, u.reads(), u.writes())
                })
                .collect(),
            depends_on: n.depends_on.clone(),
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

/// What compiling one node needs of a [`CompiledGraph`] under construction: shared, read-only
/// borrows (`Sync`, unlike the graph, whose executables are only `Send`), so nodes can compile on
/// several threads.
struct NodeCompiler<'a> {
    device: &'a wgpu::Device,
    id: &'a str,
    cache: &'a std::sync::Arc<crate::cache::DeviceCache>,
    resolved: &'a [wgpu::Buffer],
    lengths: &'a [u64],
    textures: &'a [wgpu::Texture],
    buffer_ids: &'a [String],
    texture_ids: &'a [String],
}

impl<'a> NodeCompiler<'a> {
    fn of(graph: &'a CompiledGraph) -> Self {
        Self {
            device: &graph.device,
            id: &graph.id,
            cache: &graph.cache,
            resolved: &graph.resolved,
            lengths: &graph.lengths,
            textures: &graph.textures,
            buffer_ids: &graph.buffer_ids,
            texture_ids: &graph.texture_ids,
        }
    }

    /// Compiles `nodes` on up to [`compile_threads`] threads; results come back in `nodes`'
    /// order, so the first failing node in execution order is the error, as one by one.
    ///
    /// Why threads: a node's compile is mostly shader translation and driver compilation
    /// (`analyze` compiles 24 pipelines; ~120 ms on one thread on the H200 host even with the
    /// driver's cache warm), and nodes compile independently: the device cache makes a racing
    /// request for the same pipeline wait for the first instead of compiling it twice, and wgpu's
    /// error scopes, which attribute validation errors to a node, are per thread.
    fn compile_nodes(
        &self,
        nodes: Vec<crate::graph::NodeEntry>,
    ) -> Vec<Result<CompiledNode, GraphError>> {
        let threads = compile_threads().min(nodes.len());
        if threads <= 1 {
            return nodes.into_iter().map(|n| self.compile_node(n)).collect();
        }
        let count = nodes.len();
        let queue: Vec<std::sync::Mutex<Option<crate::graph::NodeEntry>>> = nodes
            .into_iter()
            .map(|n| std::sync::Mutex::new(Some(n)))
            .collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut results: Vec<(usize, Result<CompiledNode, GraphError>)> =
            std::thread::scope(|scope| {
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        scope.spawn(|| {
                            let mut done = Vec::new();
                            loop {
                                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                if i >= count {
                                    return done;
                                }
                                let taken =
                                    queue[i].lock().unwrap_or_else(|e| e.into_inner()).take();
                                if let Some(node) = taken {
                                    done.push((i, self.compile_node(node)));
                                }
                            }
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .flat_map(|w| match w.join() {
                        Ok(done) => done,
                        Err(panic) => std::panic::resume_unwind(panic),
                    })
                    .collect()
            });
        results.sort_by_key(|(i, _)| *i);
        results.into_iter().map(|(_, r)| r).collect()
    }

    fn compile_node(&self, node: crate::graph::NodeEntry) -> Result<CompiledNode, GraphError> {
        let declared = Declared::of(&node.uses);
        let ctx = CompileContext {
            device: self.device,
            graph_id: self.id,
            node_id: &node.id,
            cache: self.cache,
            resolver: Resolver {
                buffers: self.resolved,
                lengths: self.lengths,
                textures: self.textures,
                overrides: None,
                buffer_ids: self.buffer_ids,
                texture_ids: self.texture_ids,
                declared: &declared,
                violation: Default::default(),
            },
        };
        // Validation errors raised by the callback's wgpu calls become this node's error
        // instead of reaching the device's uncaptured-error handler.
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let result = match node.compile {
            NodeCompileFn::Compute(f) => f(&ctx).map(Executable::Compute),
            NodeCompileFn::Copy(f) => f(&ctx).map(Executable::Copy),
            NodeCompileFn::Render(f, target, load) => f(&ctx).map(|e| {
                let view = self.textures[target.index as usize].create_view(
                    &wgpu::TextureViewDescriptor {
                        label: Some(&node.id),
                        ..Default::default()
                    },
                );
                Executable::Render(e, view, load)
            }),
        };
        let wgpu_error = pollster::block_on(scope.pop());
        if let Some(e) = ctx.resolver.violation(self.id, &node.id) {
            return Err(e);
        }
        let exec = result.map_err(|source| GraphError::NodeCompile {
            node: node.id.clone(),
            source,
        })?;
        if let Some(err) = wgpu_error {
            return Err(GraphError::NodeCompile {
                node: node.id.clone(),
                source: err.to_string().into(),
            });
        }
        Ok(CompiledNode {
            id: node.id,
            declared,
            exec,
        })
    }
}

/// Threads that compile a graph's nodes: `GPUGRAPH_COMPILE_THREADS` when set to a positive
/// number, else the machine's parallelism, at most 8 (beyond that the driver's and wgpu's
/// internal locks, not the cores, bound a compile).
pub fn compile_threads() -> usize {
    std::env::var("GPUGRAPH_COMPILE_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .min(8)
        })
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
        let owned_textures: Vec<(usize, wgpu::Texture)> = graph
            .textures
            .iter()
            .enumerate()
            .filter(|(_, t)| t.import.is_none())
            .map(|(i, t)| {
                let tex = device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(&t.desc.id),
                    size: wgpu::Extent3d {
                        width: t.desc.size.0,
                        height: t.desc.size.1,
                        depth_or_array_layers: 1,
                    },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: t.desc.format,
                    usage: t.desc.usage,
                    view_formats: &[],
                });
                (i, tex)
            })
            .collect();
        let textures: Vec<wgpu::Texture> = graph
            .textures
            .iter()
            .enumerate()
            .map(|(i, t)| match &t.import {
                Some(tex) => tex.clone(),
                None => owned_textures
                    .iter()
                    .find(|(j, _)| *j == i)
                    .map(|(_, t)| t.clone())
                    .unwrap_or_else(|| unreachable!("every graph-owned texture was created above")),
            })
            .collect();
        let owned_textures: Vec<wgpu::Texture> =
            owned_textures.into_iter().map(|(_, t)| t).collect();

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
