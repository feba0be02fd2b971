//! Per-thread block summaries (blocks.wgsl), built on the GPU once per load by the frame's
//! build graph, for zoomed-out frames below O(spans): a frame whose view is plain (no filter,
//! focus or collapse: [`super::TraceFrameConfig::block_lod`]) and whose window covers most
//! spans writes no per-span visibility at all. Its visible count comes from two binary
//! searches per thread (starts and sorted ends), its picks and edge endpoints evaluate the
//! window predicate on the fly, and the span LOD (`lod/blocks`) marks a block's pixel
//! columns from its summary, visiting its spans only when the summary cannot prove the
//! result equal to the per-span one (a block on the window's edge, with the selected span,
//! with a span wide enough for a quad, or with a gap on a lane that could leave a column
//! unmarked).
//!
//! Blocks are [`BLOCK_SPANS`] consecutive spans of one thread (the thread's last block may be
//! shorter); their records are [`BLOCK_WORDS`] words (layout in blocks.wgsl). The CPU oracle
//! is [`crate::cpu::block_summaries`].

use gpugraph_command::{Binding, CommandGraph, DispatchNode, Grid};

use super::{import, FrameBuffers, TraceFrameConfig};
use crate::error::TraceGpuError;
use crate::model::TraceModel;

/// Spans per block.
pub const BLOCK_SPANS: u32 = 64;
/// Distinct lanes a block summarizes (a block with more is always visited span by span).
pub const BLOCK_LANES: u32 = 8;
/// Words per block record: an 8-word header and 8 words per lane entry.
pub const BLOCK_WORDS: u32 = 8 + 8 * BLOCK_LANES;
/// The header's lane-entry word of a block with more than [`BLOCK_LANES`] lanes.
pub const BLOCK_LANES_OVERFLOW: u32 = u32::MAX;

/// Block records a frame of `c` holds: every thread's blocks of a full trace
/// (`spans / BLOCK_SPANS` full ones plus one partial block per thread), 1 without
/// [`TraceFrameConfig::block_lod`].
pub fn block_capacity(c: &TraceFrameConfig) -> u32 {
    if c.block_lod {
        c.span_capacity.div_ceil(BLOCK_SPANS) + c.thread_capacity
    } else {
        1
    }
}

/// Per thread of `model` its first block, then the total, padded with the total to
/// `thread_capacity + 1` words.
pub fn thread_blocks(model: &TraceModel, thread_capacity: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(thread_capacity as usize + 1);
    let mut next = 0u32;
    for t in &model.threads {
        out.push(next);
        next += t.spans.len().div_ceil(BLOCK_SPANS as usize) as u32;
    }
    out.resize(thread_capacity as usize + 1, next);
    out
}

/// Block records of `model`.
pub fn block_count(model: &TraceModel) -> u32 {
    model
        .threads
        .iter()
        .map(|t| t.spans.len().div_ceil(BLOCK_SPANS as usize) as u32)
        .sum()
}

/// Adds `frame/build_blocks` (one invocation per block record) to the build graph.
pub(super) fn add_build_blocks(
    g: &mut CommandGraph,
    b: &FrameBuffers,
    c: &TraceFrameConfig,
) -> Result<(), TraceGpuError> {
    let (s, t) = (u64::from(c.span_capacity), u64::from(c.thread_capacity));
    let blocks = u64::from(block_capacity(c));
    let spans = import(g, "spans", &b.spans, 8 * s)?.1;
    let thread_spans = import(g, "thread-spans", &b.thread_spans, 2 * t)?.1;
    let thread_blocks = import(g, "thread-blocks", &b.thread_blocks, t + 1)?.1;
    let records = import(g, "blocks", &b.blocks, blocks * u64::from(BLOCK_WORDS))?.1;
    g.add_dispatch_node(DispatchNode::new(
        "frame/build_blocks",
        crate::shaders::shader("trace/blocks", "frame/blocks.wgsl"),
        "build_blocks",
        vec![
            Binding::read(0, spans),
            Binding::read(1, thread_spans),
            Binding::read(2, thread_blocks),
            Binding::read_write(3, records),
        ],
        Grid::Rows {
            rows: blocks,
            rows_per_workgroup: 64,
        },
    ))?;
    Ok(())
}

/// Per thread of `model`, its spans' ends (start + the 48-bit duration the kernels read) in
/// ascending order at the thread's span slots, two words each (lo, hi).
pub(super) fn sorted_ends(model: &TraceModel) -> Vec<u32> {
    let mut out = Vec::with_capacity(2 * model.spans.len());
    let mut ends = Vec::new();
    for t in &model.threads {
        ends.clear();
        ends.extend(
            model.spans[t.spans.start as usize..t.spans.end as usize]
                .iter()
                .map(span_end),
        );
        ends.sort_unstable();
        out.extend(ends.iter().flat_map(|&e| [e as u32, (e >> 32) as u32]));
    }
    out
}

/// A span's end as the kernels compute it (start + the 48-bit duration, wrapping).
pub(crate) fn span_end(s: &crate::span::TraceSpan) -> u64 {
    s.start()
        .wrapping_add(s.duration() & crate::span::MAX_SPAN_DURATION)
}
