//! The sizes a [`super::TraceFrame`] is compiled for: the spec's capacity tiers and the
//! exact or tiered [`TraceFrameConfig`].

use super::WORKFLOW;
use crate::error::TraceGpuError;
use crate::model::TraceModel;

/// The span capacity tiers of the spec (250K / 1M / 4M / 16M spans).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapacityTier {
    /// 250,000 spans.
    K250,
    /// 1,048,576 spans.
    M1,
    /// 4,194,304 spans.
    M4,
    /// 16,777,216 spans.
    M16,
}

impl CapacityTier {
    /// Spans of the tier.
    pub fn spans(self) -> u32 {
        match self {
            Self::K250 => 250_000,
            Self::M1 => 1 << 20,
            Self::M4 => 1 << 22,
            Self::M16 => 1 << 24,
        }
    }
    /// The smallest tier holding `spans`, if any.
    pub fn for_spans(spans: usize) -> Option<Self> {
        [Self::K250, Self::M1, Self::M4, Self::M16]
            .into_iter()
            .find(|t| t.spans() as usize >= spans)
    }
}

/// Sizes a frame is compiled for (all at least 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceFrameConfig {
    /// Spans.
    pub span_capacity: u32,
    /// Dependency records.
    pub dependency_capacity: u32,
    /// Threads.
    pub thread_capacity: u32,
    /// Processes.
    pub process_capacity: u32,
    /// Focus hops compiled (a view may ask for fewer without recompiling).
    pub max_hops: u32,
    /// Focus seeds.
    pub max_seeds: u32,
    /// Hidden parent links ancestor projection follows.
    pub max_ancestor_depth: u32,
    /// Also project the spans into GPUScene records every frame (128 bytes per span slot;
    /// x in microseconds since the origin, y the layout row): [`TraceFrame::scene`].
    pub scene_records: bool,
    /// Also draw the frame into a `(width, height)` RGBA8 texture
    /// ([`FrameBuffers::color`]): spans as quads, edges as lines, by indirect draws. Needs
    /// `compact_visible`.
    pub picture: Option<(u32, u32)>,
    /// Compact the visible span IDs into [`super::FrameBuffers::visible_ids`] every frame (on by
    /// default). Off, the frame writes the visible count alone and consumers read the
    /// candidates' IDs and flags (`FrameBuffers::candidate_ids`, `candidate_flags`): no
    /// compaction over the candidates, so a zoomed-in frame costs nothing proportional to the
    /// span slots and a zoomed-out one a pass less (the viewer's span LOD reads them so).
    pub compact_visible: bool,
    /// Build per-thread block summaries at load and let plain zoomed-out frames skip the
    /// per-span visibility ([`super::blocks`]; off by default). A frame whose view has no
    /// filter, focus or collapse and whose window covers more than half the spans then
    /// writes neither `visible` and `rows` nor the candidates' IDs and flags (they keep the
    /// last other frame's values): its visible count comes from binary searches, its picks
    /// and edge endpoints evaluate the window on the fly (the endpoints' rows are written),
    /// and the span LOD draws it from the blocks. Needs `compact_visible` and
    /// `scene_records` off (both read every visible span's slot).
    pub block_lod: bool,
}

impl TraceFrameConfig {
    /// Fails with [`TraceGpuError::View`] for a combination a frame cannot run: a picture
    /// without `compact_visible` (it draws the visible IDs), `block_lod` with
    /// `compact_visible` or `scene_records` (blocks mode writes neither).
    pub fn validate(&self) -> Result<(), TraceGpuError> {
        if self.block_lod && (self.compact_visible || self.scene_records) {
            return Err(TraceGpuError::View {
                workflow: WORKFLOW,
                id: "trace".into(),
                what: "config",
                expected: "block_lod without compact_visible and scene_records (blocks mode \
                           writes no visible IDs nor rows)",
                actual: format!(
                    "block_lod with compact_visible {} and scene_records {}",
                    self.compact_visible, self.scene_records
                ),
            });
        }
        if self.picture.is_some() && !self.compact_visible {
            return Err(TraceGpuError::View {
                workflow: WORKFLOW,
                id: "trace".into(),
                what: "config",
                expected: "compact_visible with a picture (it draws the visible IDs)",
                actual: "picture without compact_visible".into(),
            });
        }
        Ok(())
    }

    /// Exactly `model`'s sizes (at least 1 each), with `max_hops` focus hops.
    pub fn exact(model: &TraceModel, max_hops: u32) -> Self {
        Self {
            span_capacity: model.spans.len().max(1) as u32,
            dependency_capacity: model.dependencies.len().max(1) as u32,
            thread_capacity: model.threads.len().max(1) as u32,
            process_capacity: model.processes.len().max(1) as u32,
            max_hops,
            max_seeds: 64,
            max_ancestor_depth: 64,
            scene_records: false,
            picture: None,
            compact_visible: true,
            block_lod: false,
        }
    }
    /// `tier`'s spans, with dependencies, threads and processes sized for `model` and room
    /// to grow (dependencies: a tenth of the spans or the model's, whichever is more).
    pub fn tier(model: &TraceModel, tier: CapacityTier, max_hops: u32) -> Self {
        let spans = tier.spans();
        Self {
            span_capacity: spans,
            dependency_capacity: (spans / 10).max(model.dependencies.len() as u32).max(1),
            thread_capacity: (model.threads.len() as u32).next_power_of_two().max(64),
            process_capacity: (model.processes.len() as u32).next_power_of_two().max(16),
            ..Self::exact(model, max_hops)
        }
    }
}
