//! Compiling a graph's nodes: each node's compile callback runs with the resolved resources,
//! on several threads, and its result keeps the node's declared uses.

use super::*;

/// What compiling one node needs of a [`CompiledGraph`] under construction: shared, read-only
/// borrows (`Sync`, unlike the graph, whose executables are only `Send`), so nodes can compile on
/// several threads.
pub(super) struct NodeCompiler<'a> {
    device: &'a wgpu::Device,
    id: &'a str,
    cache: &'a std::sync::Arc<crate::cache::DeviceCache>,
    resolved: &'a [wgpu::Buffer],
    lengths: &'a [u64],
    textures: &'a [wgpu::Texture],
    buffer_ids: &'a [String],
    texture_ids: &'a [String],
    frame_flags: &'a [bool],
}

impl<'a> NodeCompiler<'a> {
    pub(super) fn of(graph: &'a CompiledGraph) -> Self {
        Self {
            device: &graph.device,
            id: &graph.id,
            cache: &graph.cache,
            resolved: &graph.resolved,
            lengths: &graph.lengths,
            textures: &graph.textures,
            buffer_ids: &graph.buffer_ids,
            texture_ids: &graph.texture_ids,
            frame_flags: &graph.frame_flags,
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
    pub(super) fn compile_nodes(
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
        let declared = Declared::of(
            &node.uses,
            node.attachments.iter().map(|a| a.at.texture.index),
        );
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
                frame_textures: Some(self.frame_flags),
            },
        };
        // Validation errors raised by the callback's wgpu calls become this node's error
        // instead of reaching the device's uncaptured-error handler.
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let result = match node.compile {
            NodeCompileFn::Compute(f) => f(&ctx).map(Executable::Compute),
            NodeCompileFn::Copy(f) => f(&ctx).map(Executable::Copy),
            NodeCompileFn::Render(f, layout) => f(&ctx).map(|e| {
                let views = pass_views(self.textures, self.frame_flags, &layout);
                Executable::Render(e, Box::new(views))
            }),
        };
        let wgpu_error = crate::device_check::scope_error(scope);
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
