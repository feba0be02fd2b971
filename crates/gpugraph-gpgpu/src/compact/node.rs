//! The fused compaction's dispatch nodes (shared by [`super::Compaction`] and
//! [`super::PartitionedIndexedRangeCompaction`]): the `COMPACT` variant of the chained scan,
//! one declared node per non-empty input chunk over the scan's planner and node layout
//! ([`crate::kernel::add_chained_nodes`]).

use gpugraph_command::{Access, Binding, BufferHandle, CommandGraph, DataView};

use super::kernel::{ChunkParams, CompactParams};
use crate::error::AlgorithmError;
use crate::kernel::{add_chained_nodes, vec4_binding, ChainedChunk};
use crate::scan::source::{self, Variant};
use crate::scan::{ScanKernelOptions, ScanPlan, LIVE_BINDING};

/// One non-empty input chunk of a fused compaction: the views its dispatch binds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FusedChunk {
    /// Selection flags.
    pub flags: DataView,
    /// Values (without `PARTITIONS`).
    pub values: Option<DataView>,
    /// Where survivors go (`None`: capacity 0, or an empty partition output).
    pub output: Option<DataView>,
    /// The count word (or the per-partition counts).
    pub count: DataView,
    /// The overflow word (or the per-partition flags).
    pub overflow: Option<DataView>,
    /// The `[start, end)` pairs (with `PARTITIONS`).
    pub ranges: Option<DataView>,
}

/// What one fused compaction dispatches: the plan, each chunk's compaction parameters and
/// views (`None` for empty chunks), the tile status and the input's live count.
pub(crate) struct FusedNodes<'a> {
    pub options: &'a ScanKernelOptions,
    pub partitions: bool,
    pub plan: &'a ScanPlan,
    pub compact: &'a [CompactParams],
    pub chunks: &'a [Option<FusedChunk>],
    pub status: BufferHandle,
    pub live: Option<DataView>,
}

impl FusedNodes<'_> {
    /// Adds the nodes `{id}` (or `{id}/chunk{k}`): the status clear, then one dispatch of
    /// `scan_tiles` per non-empty chunk.
    pub fn add(self, graph: &mut CommandGraph, id: &str) -> Result<(), AlgorithmError> {
        let variant = Variant::compaction(self.options, self.partitions, self.live.is_some());
        let shader = source::recipe(&self.options.policy, variant);
        let tile = self.plan.tile_elements;
        let mut chunks = Vec::new();
        for (k, (chunk, views)) in self.plan.chunks.iter().zip(self.chunks).enumerate() {
            let Some(v) = views.filter(|_| chunk.tiles > 0) else {
                continue;
            };
            let vector = chunk.layout.len >= tile;
            let written = |slot, view: Option<DataView>| {
                view.map_or(Binding::placeholder(slot, Access::ReadWrite), |v| {
                    Binding::read_write(slot, v)
                })
            };
            // Binding numbers (`compact.wgsl`): params 0, flags words 1 and vec4 2, output 3,
            // count 4, tile status 5, values words 6 and vec4 7 (ranges at 6 with
            // `PARTITIONS`), overflow 8, the live count 9.
            let mut bindings = vec![
                Binding::read(1, v.flags),
                vec4_binding(graph, 2, &v.flags, Access::Read, vector)?,
                written(3, v.output),
                Binding::read_write(4, v.count),
                Binding::handle(5, self.status, Access::ReadWrite),
                written(8, v.overflow),
            ];
            let read = |slot, view: Option<DataView>| {
                view.map_or(Binding::placeholder(slot, Access::Read), |v| {
                    Binding::read(slot, v)
                })
            };
            if self.partitions {
                bindings.push(read(6, v.ranges));
            } else {
                bindings.push(read(6, v.values));
                bindings.push(match v.values {
                    Some(values) => vec4_binding(graph, 7, &values, Access::Read, vector)?,
                    None => Binding::placeholder(7, Access::Read),
                });
            }
            bindings.extend(self.live.map(|l| Binding::read(LIVE_BINDING, l)));
            let params = ChunkParams {
                scan: chunk.params,
                compact: self.compact[k],
            };
            chunks.push(ChainedChunk {
                index: k,
                params: bytemuck::bytes_of(&params).to_vec(),
                bindings,
                workgroups: chunk.workgroups,
            });
        }
        add_chained_nodes(graph, id, &shader, self.plan.clear_workgroups, chunks)
    }
}
