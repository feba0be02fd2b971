//! [`PartitionedIndexedRangeCompaction`]: per-partition candidate compaction that keeps the
//! flag and output chunks, for visibility scratch and id lists beyond one storage binding.
//!
//! Nodes `{id}` (`{id}/chunk{k}` when several partitions have rows): the fused compaction in
//! its `PARTITIONS` variant, one dispatch per partition with source rows, all sharing one
//! tile-status transient: every partition is an
//! independent scan sequence (its first tile never looks back), candidates are the rows of
//! its GPU-resident window, survivors are global ids computed from the row (no values read);
//! each partition's last tile writes its count and overflow flag. Node `{id}/totals` (one
//! workgroup) zeroes the counts of partitions without rows, sums the total and counts invalid
//! ranges. Traffic: 4 bytes per flag row inside the windows (flags outside are not read),
//! 4 bytes per survivor, 8 bytes of status per 4,096 rows, 8 per partition.

use gpugraph_command::{wgpu, BufferDescriptor, CommandGraph, DataView, VectorFormat, VectorView};

use super::helper::{HelperDispatch, HelperKernel, HelperNode, Res};
use super::kernel::CompactParams;
use super::node::{FusedChunk, FusedNodes};
use super::{add_zero_words, check_compaction_device, helper_source};
use crate::error::AlgorithmError;
use crate::kernel::{
    check_writes_alone, require_output, require_packed, Access, ViewCheck, WorkgroupSplit,
};
use crate::kernel::{plan_scan, rows_u32, Binder};
use crate::scan::{ChunkLayout, ScanKernelOptions, ScanMode};

const ALGORITHM: &str = "partitioned indexed range compaction";

/// For every partition k (one row of `ranges`, chunk k of `flags` and of `outputs`): emits
/// the global source ids `i` in `[start_k, end_k) ∩ [base_k, base_k + rows_k)` with
/// `flags[k][i - base_k] != 0`, in order, into output chunk k; `partition_counts[k]` = that
/// partition's survivor count, `total_count` = their sum.
///
/// `base_k` is the global id of flag chunk k's first row: `chunk_bases[k]`, or when `None`
/// the rows of all earlier flag chunks (partitions are consecutive slices of one id space).
/// Ranges are GPU-resident packed uint32x2, read every encoding; a range that is reversed, or
/// non-empty and not inside its partition's ids, is clamped to the partition and counted in
/// `invalid_ranges`. Capacity of partition k: output chunk k's rows; beyond it survivors are
/// counted but not written and `overflow[k]` = 1 (0 otherwise). Counts, overflow and totals
/// are written every encoding (0 for partitions without rows).
#[derive(Clone, Debug)]
pub struct PartitionedIndexedRangeCompaction {
    /// Node id prefix.
    pub id: String,
    /// Packed uint32x2, one `[start, end)` row of global ids per partition.
    pub ranges: DataView,
    /// Packed uint32 flags, chunk k = partition k's source rows.
    pub flags: VectorView,
    /// Global id of each partition's first row; `None`: consecutive partitions from 0.
    pub chunk_bases: Option<Vec<u32>>,
    /// Packed uint32 destinations, chunk k = partition k's bounded output.
    pub outputs: VectorView,
    /// Packed uint32, one count per partition.
    pub partition_counts: DataView,
    /// One packed uint32 row: the sum of the partition counts.
    pub total_count: DataView,
    /// Packed uint32, one 0/1 overflow flag per partition.
    pub overflow: Option<DataView>,
    /// One packed uint32 row: the number of invalid (clamped) ranges.
    pub invalid_ranges: Option<DataView>,
}

impl PartitionedIndexedRangeCompaction {
    /// Validates the views and adds `{id}` and `{id}/totals` (see the module doc).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let options = ScanKernelOptions::for_compaction(graph.device());
        self.add_to_graph_with(graph, options)
    }

    /// [`PartitionedIndexedRangeCompaction::add_to_graph`] with explicit scan kernel options.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        options: ScanKernelOptions,
    ) -> Result<(), AlgorithmError> {
        let id = self.id.clone();
        let c = ViewCheck::new(ALGORITHM, &id);
        let device = graph.device().clone();
        check_compaction_device(c, &device, &options)?;
        let ranges_v = VectorView::from(self.ranges);
        require_packed(c, "ranges", &ranges_v, VectorFormat::Uint32x2)?;
        require_packed(c, "flags", &self.flags, VectorFormat::Uint32)?;
        require_packed(c, "outputs", &self.outputs, VectorFormat::Uint32)?;
        let partitions = self.ranges.len();
        for (what, v) in [("flags", &self.flags), ("outputs", &self.outputs)] {
            if v.chunks().len() as u64 != partitions {
                return Err(c.length(
                    what,
                    "chunks",
                    v.chunks().len() as u64,
                    partitions,
                    "one per partition (a row of ranges)",
                ));
            }
        }
        require_output(
            c,
            "partition_counts",
            &self.partition_counts,
            VectorFormat::Uint32,
            partitions,
        )?;
        require_output(c, "total_count", &self.total_count, VectorFormat::Uint32, 1)?;
        if let Some(o) = &self.overflow {
            require_output(c, "overflow", o, VectorFormat::Uint32, partitions)?;
        }
        if let Some(v) = &self.invalid_ranges {
            require_output(c, "invalid_ranges", v, VectorFormat::Uint32, 1)?;
        }
        let rows: Vec<usize> = self
            .flags
            .chunks()
            .iter()
            .map(|f| f.len() as usize)
            .collect();
        let bases = match &self.chunk_bases {
            Some(b) if b.len() as u64 != partitions => {
                return Err(c.length(
                    "chunk_bases",
                    "entries",
                    b.len() as u64,
                    partitions,
                    "one per partition",
                ))
            }
            Some(b) => b.clone(),
            None => consecutive_bases(&rows),
        };
        for (k, (&base, &r)) in bases.iter().zip(&rows).enumerate() {
            if u64::from(base) + r as u64 > u64::from(u32::MAX) {
                return Err(c.out_of_range(
                    format!("partition {k}'s base + rows ({base} + {r})"),
                    u64::from(base) + r as u64,
                    "within the u32 id space (at most 4294967295)",
                ));
            }
        }
        let counts_v = VectorView::from(self.partition_counts);
        let total_v = VectorView::from(self.total_count);
        let overflow_v = self.overflow.map(VectorView::from);
        let invalid_v = self.invalid_ranges.map(VectorView::from);
        let mut written = vec![
            ("outputs", &self.outputs),
            ("partition_counts", &counts_v),
            ("total_count", &total_v),
        ];
        if let Some(v) = &overflow_v {
            written.push(("overflow", v));
        }
        if let Some(v) = &invalid_v {
            written.push(("invalid_ranges", v));
        }
        check_writes_alone(
            graph,
            c,
            &written,
            &[("ranges", &ranges_v), ("flags", &self.flags)],
            "",
        )?;
        if partitions == 0 {
            let mut words = vec![self.total_count];
            words.extend(self.invalid_ranges);
            return add_zero_words(graph, id, words);
        }

        let binder = Binder::new(&device.limits());
        let ranges_offset = binder.offset(c, "ranges", &self.ranges)?;
        let counts_offset = binder.offset(c, "partition_counts", &self.partition_counts)?;
        let total_offset = binder.offset(c, "total_count", &self.total_count)?;
        let overflow_offset = match &self.overflow {
            Some(o) => binder.offset(c, "overflow", o)?,
            None => 0,
        };
        let invalid_offset = match &self.invalid_ranges {
            Some(v) => binder.offset(c, "invalid_ranges", v)?,
            None => 0,
        };
        let mut layouts = Vec::new();
        let mut capacities = Vec::new();
        for (k, (f, o)) in self
            .flags
            .chunks()
            .iter()
            .zip(self.outputs.chunks())
            .enumerate()
        {
            layouts.push(ChunkLayout {
                len: rows_u32(c, &format!("flags chunk {k}"), f.len())?,
                input_offset: binder.offset(c, &format!("flags chunk {k}"), f)?,
                output_offset: if o.is_empty() {
                    0
                } else {
                    binder.offset(c, &format!("outputs chunk {k}"), o)?
                },
                flags_offset: 0,
            });
            capacities.push(rows_u32(c, &format!("outputs chunk {k}"), o.len())?);
        }
        let plan = plan_scan(c, &device, &options, &layouts, ScanMode::default())?;

        if !plan.is_empty() {
            let compact: Vec<CompactParams> = plan
                .chunks
                .iter()
                .enumerate()
                .map(|(k, chunk)| CompactParams {
                    value_offset: 0,
                    capacity: capacities[k],
                    count_offset: counts_offset + k as u32,
                    overflow_offset: overflow_offset + k as u32,
                    count_tile: (chunk.tile_base + chunk.tiles).wrapping_sub(1),
                    id_base: bases[k],
                    range_offset: ranges_offset + 2 * k as u32,
                    has_overflow: u32::from(self.overflow.is_some()),
                })
                .collect();
            let status = graph.create_buffer(BufferDescriptor::new(
                format!("{id}/tile-status"),
                plan.status_bytes(),
                wgpu::BufferUsages::STORAGE,
            ))?;
            let chunks: Vec<Option<FusedChunk>> = self
                .flags
                .chunks()
                .iter()
                .zip(self.outputs.chunks())
                .map(|(f, o)| {
                    (!f.is_empty()).then_some(FusedChunk {
                        flags: *f,
                        values: None,
                        output: (!o.is_empty()).then_some(*o),
                        count: self.partition_counts,
                        overflow: self.overflow,
                        ranges: Some(self.ranges),
                    })
                })
                .collect();
            FusedNodes {
                options: &options,
                partitions: true,
                plan: &plan,
                compact: &compact,
                chunks: &chunks,
                status,
                live: None,
            }
            .add(graph, &id)?;
        }

        // {id}/totals
        let mut resources = vec![Res::Params(0), Res::View(self.ranges)];
        for v in [
            Some(self.partition_counts),
            self.overflow,
            Some(self.total_count),
            self.invalid_ranges,
        ] {
            match v {
                Some(v) => {
                    resources.push(Res::View(v));
                }
                None => resources.push(Res::Placeholder),
            }
        }
        let mut params = vec![
            partitions as u32,
            counts_offset,
            overflow_offset,
            u32::from(self.overflow.is_some()),
            total_offset,
            invalid_offset,
            u32::from(self.invalid_ranges.is_some()),
            ranges_offset,
        ];
        for (&base, &r) in bases.iter().zip(&rows) {
            params.push(base);
            params.push(r as u32);
        }
        HelperNode {
            id: format!("{id}/totals"),
            kernels: vec![HelperKernel {
                wgsl: helper_source(&["compact/partition_totals.wgsl"]),
                entry: "partition_totals",
                bindings: vec![
                    Access::Read,
                    Access::Read,
                    Access::ReadWrite,
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
}

/// The global id of each partition's first row when partitions are consecutive: the prefix
/// sums of the partition row counts.
pub fn consecutive_bases(rows: &[usize]) -> Vec<u32> {
    let mut at = 0u32;
    rows.iter()
        .map(|&r| {
            let base = at;
            at = at.wrapping_add(r as u32);
            base
        })
        .collect()
}
