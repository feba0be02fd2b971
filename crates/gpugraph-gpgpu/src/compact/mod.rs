//! Stable compaction (spec: GPUCompaction, GPUIndexedRangeCompaction,
//! GPUPartitionedIndexedRangeCompaction): selected packed-u32 rows written densely in source
//! order, with a GPU-resident count that may live inside a larger structure (the
//! `instanceCount` word of an indirect draw record) and explicit overflow.
//!
//! Design. [`Compaction`] is fused into the single-pass chained scan: `compact/compact.wgsl`
//! (the `COMPACT` variant, dispatched by `node.rs` as declared dispatch nodes) scans the 0/1-normalized flags with the same decoupled
//! look-back and, in its epilogue, scatters `values[i]` to `output[prefix_i]` for selected
//! rows; the workgroup of the last tile writes the count and the overflow flag. Memory traffic
//! per row: flags 4 bytes read, values 4 bytes read (skipped for vec4 groups without a
//! selected row), 4 bytes written per survivor, so 8–12 bytes per row, plus 8 bytes of tile
//! status per 4,096 rows. Which path runs:
//! * **direct** (one pass): the output is one chunk, or its non-empty chunks are contiguous in
//!   one buffer; any number of input chunks (they are one logical sequence);
//! * **staged** (output chunks in several buffers or apart): the fused pass writes the first
//!   `capacity` survivors densely into a transient `{id}/staged`, then one distribution
//!   dispatch per output chunk copies the rows of its logical positions (+8 bytes per
//!   survivor);
//! * **empty input**: a one-invocation pass writes count 0 (and overflow 0); no scan runs.
//!
//! [`IndexedRangeCompaction`] composes range lengths, a [`crate::scan::Scan`] of them,
//! candidate expansion and a [`Compaction`]; [`PartitionedIndexedRangeCompaction`] uses the
//! `COMPACT` + `PARTITIONS` variant (one independent windowed sequence per chunk, survivors are
//! global ids, flags outside the window are not read) and a totals pass. [`cpu`] holds the
//! oracles.
//!
//! Overflow is reported, never hidden: when survivors exceed the output capacity, the first
//! `capacity` survivors are written, the count holds the true survivor count (above the
//! capacity) and the optional overflow word is 1 (0 otherwise).

pub mod cpu;
mod helper;
pub(crate) mod kernel;
mod node;
mod partitioned;
pub mod policy;
mod ranges;

pub use partitioned::PartitionedIndexedRangeCompaction;
pub use ranges::IndexedRangeCompaction;

use gpugraph_command::{
    wgpu, BufferDescriptor, CommandGraph, DataView, DataViewDescriptor, VectorFormat, VectorView,
};

use crate::error::AlgorithmError;
use crate::kernel::{check_kernel, import_u32, plan_scan, rows_u32, Binder};
use crate::kernel::{
    check_same_topology, check_writes_alone, grid_for, require_output, require_packed,
    require_packed_live, shader, Access, ViewCheck, WorkgroupSplit,
};
use crate::scan::{ChunkLayout, ScanKernelOptions, ScanMode};
use helper::{HelperDispatch, HelperKernel, HelperNode, Res};
use kernel::{CompactParams, STORAGE_BINDINGS};
use node::{FusedChunk, FusedNodes};

const ALGORITHM: &str = "compaction";

/// Stable compaction of packed uint32 `values` by `flags` (nonzero = selected) into
/// `output`: survivors in source order, `count` = the number of survivors.
///
/// Reads every flag and value row once, writes each survivor once (8–12 bytes per row, see
/// the module doc for the paths) and writes `count` (and `overflow`) every encoding; output
/// rows past the count are untouched. Capacity: `output.len()` rows over all chunks, filled as
/// one logical sequence; beyond it survivors are counted but not written, and `overflow` = 1.
/// `values` and `flags` need equal chunk lengths (one logical sequence); `count` and
/// `overflow` are one packed uint32 row each, anywhere (e.g. byte 4 of an indirect draw
/// record). Written views may share no buffer with `values` or `flags` and may not overlap.
///
/// Live count: one-chunk `values` (or `flags`; both must then name the same count) may carry
/// a live count; rows at or past `min(count, len)` are not selected, whatever their flags.
#[derive(Clone, Debug)]
pub struct Compaction {
    /// Node id (and label prefix).
    pub id: String,
    /// Packed uint32 values.
    pub values: VectorView,
    /// Packed uint32 selection flags with the values' chunk lengths.
    pub flags: VectorView,
    /// Packed uint32 destination; its total rows are the capacity.
    pub output: VectorView,
    /// One packed uint32 row: the survivor count (may exceed the capacity).
    pub count: DataView,
    /// One packed uint32 row: 1 when survivors exceeded the capacity, else 0.
    pub overflow: Option<DataView>,
}

/// Where survivors go.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// Capacity 0: nothing is written.
    Nothing,
    /// One range (a chunk, or contiguous chunks of one buffer).
    Direct(DataView),
    /// Several buffers or separated ranges: staged, then distributed.
    Staged,
}

fn target_of(graph: &CommandGraph, output: &VectorView) -> Result<Target, AlgorithmError> {
    let rows: Vec<&DataView> = output.chunks().iter().filter(|c| !c.is_empty()).collect();
    let Some(first) = rows.first() else {
        return Ok(Target::Nothing);
    };
    let contiguous = rows.windows(2).all(|w| {
        w[0].buffer() == w[1].buffer()
            && w[0].byte_offset() + w[0].byte_span() == w[1].byte_offset()
    });
    if rows.len() == 1 {
        return Ok(Target::Direct(*rows[0]));
    }
    if contiguous {
        let total = rows.iter().map(|c| c.len()).sum();
        let view = graph.create_data_view(
            first.buffer(),
            DataViewDescriptor::packed(VectorFormat::Uint32, total).at_offset(first.byte_offset()),
        )?;
        return Ok(Target::Direct(view));
    }
    Ok(Target::Staged)
}

/// Requires what the scan kernel with `options` needs ([`check_kernel`]) and the
/// storage-buffer count the fused compaction binds ([`STORAGE_BINDINGS`]).
pub(crate) fn check_compaction_device(
    c: ViewCheck<'_>,
    device: &wgpu::Device,
    options: &ScanKernelOptions,
) -> Result<(), AlgorithmError> {
    check_kernel(c, device, options, false)?;
    let limit = device.limits().max_storage_buffers_per_shader_stage;
    if limit < STORAGE_BINDINGS {
        return Err(c.device_limit(
            "storage buffers per shader stage",
            u64::from(STORAGE_BINDINGS),
            u64::from(limit),
        ));
    }
    Ok(())
}

/// A 2-D grid of helper-kernel workgroups over `rows` rows.
pub(crate) fn helper_grid(
    c: ViewCheck<'_>,
    device: &wgpu::Device,
    rows: u64,
) -> Result<WorkgroupSplit, AlgorithmError> {
    let max_dim = device.limits().max_compute_workgroups_per_dimension;
    let workgroups = rows.div_ceil(policy::ROWS_PER_WORKGROUP);
    grid_for(workgroups, max_dim).ok_or_else(|| {
        c.device_limit(
            "workgroups of one dispatch",
            workgroups,
            u64::from(max_dim) * u64::from(max_dim),
        )
    })
}

/// The WGSL of a helper kernel: the policy header, the shared dispatch helpers, then the
/// registry `files` in order.
pub(crate) fn helper_source(files: &[&'static str]) -> String {
    let mut source = shader("shared/dispatch.wgsl")
        .u32("WORKGROUP_SIZE", policy::WORKGROUP_SIZE)
        .u32("ROWS_PER_THREAD", policy::ROWS_PER_THREAD);
    for file in files {
        source = source.file(file);
    }
    source.build()
}

/// Adds node `id` that writes 0 into each of `words` (at most three one-row uint32 views):
/// the count-clearing pass of an empty compaction.
pub(crate) fn add_zero_words(
    graph: &mut CommandGraph,
    id: String,
    words: Vec<DataView>,
) -> Result<(), AlgorithmError> {
    let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
    let mut resources = vec![Res::Params(0)];
    let mut params = vec![words.len().min(3) as u32];
    for w in words.into_iter().take(3) {
        resources.push(Res::View(w));
        params.push(w.aligned_range(align).element_offset as u32);
    }
    resources.resize(4, Res::Placeholder);
    HelperNode {
        id,
        kernels: vec![HelperKernel {
            wgsl: shader("compact/zero.wgsl").build(),
            entry: "zero_words",
            bindings: vec![
                Access::Read,
                Access::ReadWrite,
                Access::ReadWrite,
                Access::ReadWrite,
            ],
        }],
        params: vec![params],
        dispatches: vec![HelperDispatch {
            kernel: 0,
            resources,
            grid: WorkgroupSplit { x: 1, y: 1 },
        }],
    }
    .add(graph)
}

impl Compaction {
    /// Validates the views, plans the tiles and adds node `{id}` (see the type's contract),
    /// with the default kernel options for the graph's device.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let options = ScanKernelOptions::for_compaction(graph.device());
        self.add_to_graph_with(graph, options)
    }

    /// [`Compaction::add_to_graph`] with explicit scan kernel options (tile policy,
    /// subgroups): for tuning and benches.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        options: ScanKernelOptions,
    ) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let device = graph.device().clone();
        check_compaction_device(c, &device, &options)?;
        let live_values = require_packed_live(c, "values", &self.values, VectorFormat::Uint32)?;
        let live_flags = require_packed_live(c, "flags", &self.flags, VectorFormat::Uint32)?;
        if let (Some(a), Some(b)) = (live_values, live_flags) {
            if a != b {
                return Err(AlgorithmError::LiveCountMismatch {
                    algorithm: c.algorithm,
                    id: c.id.to_string(),
                    first: "values".into(),
                    second: "flags".into(),
                });
            }
        }
        let live = live_values.or(live_flags);
        if live.is_some() {
            let limit = device.limits().max_storage_buffers_per_shader_stage;
            if limit < STORAGE_BINDINGS + 1 {
                return Err(c.device_limit(
                    "storage buffers per shader stage",
                    u64::from(STORAGE_BINDINGS + 1),
                    u64::from(limit),
                ));
            }
        }
        let live_v = live.map(VectorView::from);
        require_packed(c, "output", &self.output, VectorFormat::Uint32)?;
        check_same_topology(c, "values", &self.values, "flags", &self.flags)?;
        require_output(c, "count", &self.count, VectorFormat::Uint32, 1)?;
        if let Some(o) = &self.overflow {
            require_output(c, "overflow", o, VectorFormat::Uint32, 1)?;
        }
        let count_v = VectorView::from(self.count);
        let overflow_v = self.overflow.map(VectorView::from);
        let mut written = vec![("output", &self.output), ("count", &count_v)];
        if let Some(o) = &overflow_v {
            written.push(("overflow", o));
        }
        let mut reads = vec![("values", &self.values), ("flags", &self.flags)];
        if let Some(l) = &live_v {
            reads.push(("live count", l));
        }
        check_writes_alone(graph, c, &written, &reads, "")?;
        let binder = Binder::new(&device.limits());
        let capacity = rows_u32(c, "output", self.output.len())?;
        let count_offset = binder.offset(c, "count", &self.count)?;
        let overflow_offset = match &self.overflow {
            Some(o) => binder.offset(c, "overflow", o)?,
            None => 0,
        };

        if self.values.is_empty() {
            let mut words = vec![self.count];
            words.extend(self.overflow);
            return add_zero_words(graph, self.id, words);
        }

        let target = target_of(graph, &self.output)?;
        let output_offset = match &target {
            Target::Direct(v) => binder.offset(c, "output", v)?,
            _ => 0,
        };
        let mut layouts = Vec::new();
        let mut value_offsets = Vec::new();
        for (k, (values, flags)) in self
            .values
            .chunks()
            .iter()
            .zip(self.flags.chunks())
            .enumerate()
        {
            layouts.push(ChunkLayout {
                len: rows_u32(c, &format!("values chunk {k}"), values.len())?,
                input_offset: binder.offset(c, &format!("flags chunk {k}"), flags)?,
                output_offset,
                flags_offset: 0,
            });
            value_offsets.push(binder.offset(c, &format!("values chunk {k}"), values)?);
        }
        let mut plan = plan_scan(c, &device, &options, &layouts, ScanMode::default())?;
        if let Some(l) = &live {
            plan.set_live_offset(binder.offset(c, "live count", l)?);
        }
        let compact: Vec<CompactParams> = value_offsets
            .iter()
            .map(|&value_offset| CompactParams {
                value_offset,
                capacity,
                count_offset,
                overflow_offset,
                count_tile: plan.total_tiles - 1,
                has_overflow: u32::from(self.overflow.is_some()),
                ..CompactParams::default()
            })
            .collect();

        let status = graph.create_buffer(BufferDescriptor::new(
            format!("{}/tile-status", self.id),
            plan.status_bytes(),
            wgpu::BufferUsages::STORAGE,
        ))?;
        let staged = match target {
            Target::Staged => {
                let bytes = u64::from(capacity) * 4;
                if bytes > binder.max_binding {
                    return Err(c.device_limit(
                        "bytes of the staged survivors",
                        bytes,
                        binder.max_binding,
                    ));
                }
                let h = graph.create_buffer(BufferDescriptor::new(
                    format!("{}/staged", self.id),
                    bytes,
                    wgpu::BufferUsages::STORAGE,
                ))?;
                Some(graph.create_packed_view(h, VectorFormat::Uint32, u64::from(capacity))?)
            }
            _ => None,
        };
        let output = match target {
            Target::Nothing => None,
            Target::Direct(v) => Some(v),
            Target::Staged => staged,
        };
        let chunks: Vec<Option<FusedChunk>> = self
            .values
            .chunks()
            .iter()
            .zip(self.flags.chunks())
            .map(|(v, f)| {
                (!v.is_empty()).then_some(FusedChunk {
                    flags: *f,
                    values: Some(*v),
                    output,
                    count: self.count,
                    overflow: self.overflow,
                    ranges: None,
                })
            })
            .collect();
        // The staged path's {id}/distribute: one dispatch per non-empty output chunk copies
        // the staged rows of its logical positions (the survivor count is status word 1).
        // Planned and checked before any node is added.
        let status_words =
            graph.create_packed_view(status, VectorFormat::Uint32, plan.status_bytes() / 4)?;
        let mut position = 0u64;
        let mut params = Vec::new();
        let mut dispatches = Vec::new();
        for (k, chunk) in self.output.chunks().iter().enumerate() {
            if let (false, Some(staged)) = (chunk.is_empty(), staged) {
                let offset = binder.offset(c, &format!("output chunk {k}"), chunk)?;
                dispatches.push(HelperDispatch {
                    kernel: 0,
                    resources: vec![
                        Res::Params(params.len()),
                        Res::View(*chunk),
                        Res::View(staged),
                        Res::View(status_words),
                    ],
                    grid: helper_grid(c, &device, chunk.len())?,
                });
                params.push(vec![chunk.len() as u32, offset, position as u32, capacity]);
            }
            position += chunk.len();
        }
        FusedNodes {
            options: &options,
            partitions: false,
            plan: &plan,
            compact: &compact,
            chunks: &chunks,
            status,
            live,
        }
        .add(graph, &self.id)?;
        if staged.is_none() {
            return Ok(());
        }
        HelperNode {
            id: format!("{}/distribute", self.id),
            kernels: vec![HelperKernel {
                wgsl: helper_source(&["compact/distribute.wgsl"]),
                entry: "distribute",
                bindings: vec![Access::Read, Access::ReadWrite, Access::Read, Access::Read],
            }],
            params,
            dispatches,
        }
        .add(graph)
    }
}

/// Bench and example entry point: a graph `id` importing `values` and `flags` (`n` packed
/// u32 rows each at offset 0), `output` (`capacity` rows at offset 0) and `count` (one u32 at
/// byte `count_byte_offset`, e.g. 4 for the `instanceCount` of an indirect draw record),
/// with one [`Compaction`] node `{id}/compact` (direct path). All buffers need STORAGE usage.
#[allow(clippy::too_many_arguments)]
pub fn compaction_graph(
    device: &wgpu::Device,
    id: &str,
    values: &wgpu::Buffer,
    flags: &wgpu::Buffer,
    output: &wgpu::Buffer,
    count: &wgpu::Buffer,
    count_byte_offset: u64,
    n: u64,
    capacity: u64,
) -> Result<CommandGraph, AlgorithmError> {
    let mut graph = CommandGraph::new(id, device);
    let values = import_u32(&mut graph, &format!("{id}/values"), values, n)?;
    let flags = import_u32(&mut graph, &format!("{id}/flags"), flags, n)?;
    let output = import_u32(&mut graph, &format!("{id}/output"), output, capacity)?;
    let count_handle = graph.import_buffer(
        BufferDescriptor::new(format!("{id}/count"), count.size(), count.usage()),
        count,
    )?;
    let count = graph.create_data_view(
        count_handle,
        DataViewDescriptor::packed(VectorFormat::Uint32, 1).at_offset(count_byte_offset),
    )?;
    Compaction {
        id: format!("{id}/compact"),
        values: values.into(),
        flags: flags.into(),
        output: output.into(),
        count,
        overflow: None,
    }
    .add_to_graph(&mut graph)?;
    Ok(graph)
}
