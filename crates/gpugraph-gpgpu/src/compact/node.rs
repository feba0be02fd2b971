//! What a compiled fused-compaction node keeps and how it binds the graph's buffers (shared by
//! [`super::Compaction`] and [`super::PartitionedIndexedRangeCompaction`]).

use gpugraph_command::{view_binding, wgpu, DataView};

use super::kernel::{CompactBinding, CompactGroups, CompactKernel};
use crate::scan::ScanPlan;

/// A view and the position of its buffer in the node's handle list.
pub(crate) type Bound = (DataView, usize);

/// One non-empty input chunk of a fused compaction.
#[derive(Clone, Debug)]
pub(crate) struct FusedChunk {
    /// Selection flags.
    pub flags: Bound,
    /// Values (without `PARTITIONS`).
    pub values: Option<Bound>,
    /// Where survivors go (`None`: capacity 0).
    pub output: Option<Bound>,
    /// The count word (or the per-partition counts).
    pub count: Bound,
    /// The overflow word (or the per-partition flags).
    pub overflow: Option<Bound>,
    /// The `[start, end)` pairs (with `PARTITIONS`).
    pub ranges: Option<Bound>,
}

/// The compiled kernel, its uniform, the plan and the per-chunk views (`None`: empty chunk).
pub(crate) struct FusedNode {
    pub device: wgpu::Device,
    pub alignment: u64,
    pub kernel: CompactKernel,
    pub params: wgpu::Buffer,
    pub plan: ScanPlan,
    /// Position of the tile-status transient in the handle list.
    pub status: usize,
    pub chunks: Vec<Option<FusedChunk>>,
    /// The input's live count (non-partitioned compaction only).
    pub live: Option<Bound>,
}

impl FusedNode {
    /// Bind groups for the resolved `buffers` (in the node's handle order).
    pub fn bind(&self, buffers: &[&wgpu::Buffer]) -> CompactGroups {
        let align = self.alignment;
        let bind = |(view, at): Bound| view_binding(buffers[at], &view, align).0;
        let bindings: Vec<Option<CompactBinding<'_>>> = self
            .chunks
            .iter()
            .map(|chunk| {
                chunk.as_ref().map(|c| CompactBinding {
                    flags: bind(c.flags),
                    output: c.output.map(bind),
                    count: bind(c.count),
                    overflow: c.overflow.map(bind),
                    values: c
                        .values
                        .map(|v| (bind(v), v.0.aligned_range(align).element_offset as u32)),
                    ranges: c.ranges.map(bind),
                })
            })
            .collect();
        self.kernel.bind_groups(
            &self.device,
            &self.plan,
            &self.params,
            buffers[self.status],
            &bindings,
            self.live.map(bind),
        )
    }
}
