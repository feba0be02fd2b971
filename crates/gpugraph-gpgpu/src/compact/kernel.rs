//! The fused compaction kernel's parameters: the `COMPACT` (and `COMPACT` + `PARTITIONS`)
//! variants of the chained scan (`compact/compact.wgsl`, dispatched by `node.rs`). The chained scan runs over the 0/1-normalized selection flags; the
//! epilogue scatters each selected row's value to `output[prefix]` (below capacity) and the
//! workgroup of one chosen tile per sequence writes the count, the overflow flag and status
//! word 1 (read by the distribution pass of chunked outputs). Planning is the scan's
//! (`ScanPlan`); each chunk's uniform is its [`ScanParams`] followed by [`CompactParams`].

use bytemuck::{Pod, Zeroable};

use crate::scan::ScanParams;

/// Storage buffers one dispatch binds at most: flags ×2, output, count, status, values ×2,
/// overflow.
pub(crate) const STORAGE_BINDINGS: u32 = 8;

/// The compaction fields of a chunk's uniform, as `scan.wgsl` declares them under `COMPACT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct CompactParams {
    /// Element offset of the chunk's values inside the values binding.
    pub value_offset: u32,
    /// Output rows; survivors at positions `>= capacity` are counted but not written.
    pub capacity: u32,
    /// Element offset of the count word inside the count binding.
    pub count_offset: u32,
    /// Element offset of the overflow word inside the overflow binding.
    pub overflow_offset: u32,
    /// Global id of the tile whose workgroup writes the count (the sequence's last tile).
    pub count_tile: u32,
    /// `PARTITIONS`: global row id of the chunk's first row.
    pub id_base: u32,
    /// `PARTITIONS`: element offset of the chunk's `[start, end)` pair in the ranges binding.
    pub range_offset: u32,
    /// 1 when an overflow word is bound.
    pub has_overflow: u32,
}

/// One chunk's uniform: its scan parameters, then its compaction parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct ChunkParams {
    pub scan: ScanParams,
    pub compact: CompactParams,
}
