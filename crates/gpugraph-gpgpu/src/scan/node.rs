//! [`Scan`]: the graph algorithm over [`super::ScanKernel`] (spec: GPUScan). One compute node
//! `{id}`: the status clear plus one dispatch per non-empty chunk; the tile status is a graph
//! transient `{id}/tile-status` (8 bytes per 4,096-element tile + 16).

use gpugraph_command::{
    compute_fn, try_compute_fn, view_binding, wgpu, BufferDescriptor, CommandGraph, ComputeNode,
    DataView, ResourceUse, VectorFormat, VectorView,
};

use super::bindings::{ChunkBinding, ScanBindGroups, ScanBindings};
use super::kernel::ScanKernel;
use super::plan::{ChunkLayout, ScanMode, ScanPlan};
use super::ScanKernelOptions;
use crate::error::AlgorithmError;
use crate::kernel::{
    check_kernel, check_same_topology, check_writes_alone, import_u32, plan_scan, require_packed,
    require_packed_live, rows_u32, Binder, BufferKeyed, Handles, ViewCheck,
};

const ALGORITHM: &str = "scan";

/// Prefix sum of packed uint32 `input` into `output`, wrapping modulo 2^32: exclusive
/// (`output[i] = input[start..i]`) or inclusive, restarting at every nonzero
/// `segment_starts` row (and at row 0). Chunked vectors are one logical sequence: carries and
/// segments cross chunk boundaries; every caller buffer and chunk boundary stays as it is.
///
/// Reads every input (and segment-start) row once and writes every output row once, in one
/// pass (4 + 4 bytes per element, +4 when segmented); owns the transient tile status.
/// `input`, `output` and `segment_starts` need equal chunk lengths; `output` may share no
/// buffer with the other two (the kernel does not scan in place). Zero rows: the node
/// records nothing.
///
/// Live count: a one-chunk `input` may carry a live count
/// ([`gpugraph_command::CommandGraph::with_live_count`], e.g. a compaction's count). Rows at
/// or past `min(count, len)` then read as 0 and start no segment, so every output row is
/// still written: rows past the count hold the running total. The count's buffer is read
/// (declared), never written.
#[derive(Clone, Debug)]
pub struct Scan {
    /// Node id (and label prefix).
    pub id: String,
    /// Packed uint32 values.
    pub input: VectorView,
    /// Packed uint32 results, the input's chunk lengths.
    pub output: VectorView,
    /// Inclusive (`output[i]` includes `input[i]`) when true, exclusive otherwise.
    pub inclusive: bool,
    /// Packed uint32 segment-start flags with the input's chunk lengths (nonzero = a segment
    /// starts at this row).
    pub segment_starts: Option<VectorView>,
}

impl Scan {
    /// Validates the views, plans the tiles and adds node `{id}` (see the type's contract),
    /// with the default kernel options for the graph's device class
    /// ([`ScanKernelOptions::for_scan`]).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let options = ScanKernelOptions::for_scan(graph.device());
        self.add_to_graph_with(graph, options)
    }

    /// [`Scan::add_to_graph`] with explicit kernel options (tile policy, subgroups): for
    /// tuning and benches.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        options: ScanKernelOptions,
    ) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        check_kernel(c, graph.device(), &options, true)?;
        let live = require_packed_live(c, "input", &self.input, VectorFormat::Uint32)?;
        require_packed(c, "output", &self.output, VectorFormat::Uint32)?;
        check_same_topology(c, "input", &self.input, "output", &self.output)?;
        let live_v = live.map(VectorView::from);
        let mut read = vec![("input", &self.input)];
        if let Some(l) = &live_v {
            read.push(("live count", l));
        }
        if let Some(f) = &self.segment_starts {
            require_packed(c, "segment_starts", f, VectorFormat::Uint32)?;
            check_same_topology(c, "input", &self.input, "segment_starts", f)?;
            read.push(("segment_starts", f));
        }
        check_writes_alone(
            graph,
            c,
            &[("output", &self.output)],
            &read,
            "the scan kernel does not work in place; write the result to another buffer",
        )?;

        let binder = Binder::new(&graph.device().limits());
        let mut layouts = Vec::with_capacity(self.input.chunks().len());
        for (k, input) in self.input.chunks().iter().enumerate() {
            let name = |what: &str| format!("{what} chunk {k}");
            let flags_offset = match &self.segment_starts {
                Some(f) => binder.offset(c, &name("segment_starts"), &f.chunks()[k])?,
                None => 0,
            };
            layouts.push(ChunkLayout {
                len: rows_u32(c, &name("input"), input.len())?,
                input_offset: binder.offset(c, &name("input"), input)?,
                output_offset: binder.offset(c, &name("output"), &self.output.chunks()[k])?,
                flags_offset,
            });
        }
        let mode = ScanMode {
            inclusive: self.inclusive,
            segmented: self.segment_starts.is_some(),
        };
        let mut plan = plan_scan(c, graph.device(), &options, &layouts, mode)?;
        if let Some(l) = &live {
            plan.set_live_offset(binder.offset(c, "live count", l)?);
            let limit = graph.device().limits().max_storage_buffers_per_shader_stage;
            let needed = if self.segment_starts.is_some() { 8 } else { 6 };
            if limit < needed {
                return Err(c.device_limit(
                    "storage buffers per shader stage",
                    u64::from(needed),
                    u64::from(limit),
                ));
            }
        }

        let mut uses: Vec<ResourceUse> = Vec::new();
        for (_, v) in &read {
            uses.extend(v.buffers().into_iter().map(ResourceUse::storage_read));
        }
        uses.extend(
            self.output
                .buffers()
                .into_iter()
                .map(ResourceUse::storage_write),
        );
        if plan.is_empty() {
            graph.add_compute_node(ComputeNode::new(self.id, uses, |_| {
                Ok(compute_fn(|_, _| {}))
            }))?;
            return Ok(());
        }
        let status = graph.create_buffer(BufferDescriptor::new(
            format!("{}/tile-status", self.id),
            plan.status_bytes(),
            wgpu::BufferUsages::STORAGE,
        ))?;
        uses.push(ResourceUse::storage_read_write(status));

        let mut handles = Handles::default();
        handles.index(status);
        let live = live.map(|l| (l, handles.index(l.buffer())));
        let mut chunks = Vec::with_capacity(layouts.len());
        for k in 0..layouts.len() {
            let input = self.input.chunks()[k];
            let output = self.output.chunks()[k];
            let flags = self.segment_starts.as_ref().map(|f| f.chunks()[k]);
            chunks.push(ChunkViews {
                input: (input, handles.index(input.buffer())),
                output: (output, handles.index(output.buffer())),
                flags: flags.map(|f| (f, handles.index(f.buffer()))),
            });
        }
        let id = self.id.clone();
        graph.add_compute_node(ComputeNode::new(self.id, uses, move |cc| {
            let device = cc.device().clone();
            let kernel = ScanKernel::new(&device, options)?;
            let params = kernel.create_params_buffer(&device, &plan);
            let node = NodeState {
                id,
                device,
                alignment: binder.storage_alignment,
                kernel,
                params,
                plan,
                chunks,
                live,
            };
            let mut cache = BufferKeyed::default();
            {
                let buffers: Vec<&wgpu::Buffer> = handles.0.iter().map(|&h| cc.buffer(h)).collect();
                cache.get_or_try_create(&buffers, || node.bind(&buffers))?;
            }
            Ok(try_compute_fn(move |pass, ec| {
                let buffers: Vec<&wgpu::Buffer> = handles.0.iter().map(|&h| ec.buffer(h)).collect();
                // Overrides passed the graph's size and usage checks, so only an override that
                // aliases the output with an input can fail here: the encode fails by name.
                let groups = cache.get_or_try_create(&buffers, || node.bind(&buffers))?;
                node.kernel.encode(pass, groups);
                Ok(())
            }))
        }))?;
        Ok(())
    }
}

/// One chunk's views, each with the position of its buffer in the node's [`Handles`].
struct ChunkViews {
    input: (DataView, usize),
    output: (DataView, usize),
    flags: Option<(DataView, usize)>,
}

/// What the compiled node keeps: the kernel, its parameters and how to bind the views.
struct NodeState {
    id: String,
    device: wgpu::Device,
    alignment: u64,
    kernel: ScanKernel,
    params: wgpu::Buffer,
    plan: ScanPlan,
    chunks: Vec<ChunkViews>,
    /// The input's live count and its buffer position.
    live: Option<(DataView, usize)>,
}

impl NodeState {
    /// Bind groups for the resolved `buffers` (status first, then in [`Handles`] order).
    fn bind(&self, buffers: &[&wgpu::Buffer]) -> Result<ScanBindGroups, AlgorithmError> {
        let align = self.alignment;
        let bind = |(view, at): (DataView, usize)| view_binding(buffers[at], &view, align).0;
        let chunks: Vec<Option<ChunkBinding<'_>>> = self
            .chunks
            .iter()
            .map(|c| {
                (!c.input.0.is_empty()).then(|| ChunkBinding {
                    input: bind(c.input),
                    output: bind(c.output),
                    flags: c.flags.map(bind),
                })
            })
            .collect();
        let bindings = ScanBindings {
            status: wgpu::BufferBinding {
                buffer: buffers[0],
                offset: 0,
                size: wgpu::BufferSize::new(self.plan.status_bytes()),
            },
            params: self.params.as_entire_buffer_binding(),
            chunks: &chunks,
            live: self.live.map(bind),
        };
        self.kernel
            .create_bind_groups(&self.device, &self.plan, &bindings)
            .map_err(|source| AlgorithmError::Kernel {
                algorithm: ALGORITHM,
                id: self.id.clone(),
                source: Box::new(source),
            })
    }
}

/// Bench and example entry point: a graph `id` importing `input` and `output` (offset 0, `n`
/// packed u32 rows each; STORAGE usage) with one [`Scan`] node `{id}/scan`. The caller fills
/// `input`, compiles the graph once and encodes it as often as it likes.
pub fn scan_graph(
    device: &wgpu::Device,
    id: &str,
    input: &wgpu::Buffer,
    output: &wgpu::Buffer,
    n: u64,
    inclusive: bool,
) -> Result<CommandGraph, AlgorithmError> {
    let mut graph = CommandGraph::new(id, device);
    let input = import_u32(&mut graph, &format!("{id}/input"), input, n)?;
    let output = import_u32(&mut graph, &format!("{id}/output"), output, n)?;
    Scan {
        id: format!("{id}/scan"),
        input: input.into(),
        output: output.into(),
        inclusive,
        segment_starts: None,
    }
    .add_to_graph(&mut graph)?;
    Ok(graph)
}
