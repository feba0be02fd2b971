//! [`Scan`]: the graph algorithm (spec: GPUScan) as declared dispatch nodes of `scan.wgsl`, one
//! per non-empty chunk (`{id}`, or `{id}/chunk{k}` when there are several), the first clearing
//! the tile status before its tiles; the tile status is a graph transient `{id}/tile-status`
//! (8 bytes per 4,096-element tile + 16). [`super::ScanKernel`] runs the same WGSL outside a
//! graph.

use gpugraph_command::{
    wgpu, Access, Binding, BufferDescriptor, CommandGraph, VectorFormat, VectorView,
};

use super::kernel::STATUS_BINDING;
use super::plan::{ChunkLayout, ScanMode};
use super::source::{self, Variant};
use super::{ScanKernelOptions, LIVE_BINDING};
use crate::error::AlgorithmError;
use crate::kernel::{
    add_chained_nodes, check_kernel, check_same_topology, check_writes_alone, import_u32,
    plan_scan, require_packed, require_packed_live, rows_u32, vec4_binding, Binder, ChainedChunk,
    ViewCheck,
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

        if plan.is_empty() {
            // Nothing to scan: no dispatch, so no node (the output has no rows to order).
            return Ok(());
        }
        let status = graph.create_buffer(BufferDescriptor::new(
            format!("{}/tile-status", self.id),
            plan.status_bytes(),
            wgpu::BufferUsages::STORAGE,
        ))?;
        let shader = source::recipe(
            &options.policy,
            Variant::of(&options, mode.segmented, live.is_some()),
        );
        let tile = plan.tile_elements;
        let mut chunks = Vec::new();
        for (k, chunk) in plan.chunks.iter().enumerate() {
            if chunk.tiles == 0 {
                continue;
            }
            let vector = chunk.layout.len >= tile;
            let input = self.input.chunks()[k];
            let output = self.output.chunks()[k];
            // Binding numbers (`scan.wgsl`): params 0, input words 1 and vec4 2, output 3 and
            // 4, the tile status 5, segment flags 6 and 7, the live count 9.
            let mut bindings = vec![
                Binding::read(1, input),
                vec4_binding(graph, 2, &input, Access::Read, vector)?,
                Binding::read_write(3, output),
                vec4_binding(graph, 4, &output, Access::ReadWrite, vector)?,
                Binding::handle(STATUS_BINDING, status, Access::ReadWrite),
            ];
            if let Some(f) = &self.segment_starts {
                let flags = f.chunks()[k];
                bindings.push(Binding::read(6, flags));
                bindings.push(vec4_binding(graph, 7, &flags, Access::Read, vector)?);
            }
            bindings.extend(live.map(|l| Binding::read(LIVE_BINDING, l)));
            chunks.push(ChainedChunk {
                index: k,
                params: bytemuck::bytes_of(&chunk.params).to_vec(),
                bindings,
                workgroups: chunk.workgroups,
            });
        }
        add_chained_nodes(graph, &self.id, &shader, plan.clear_workgroups, chunks)
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
