//! The CPU oracle of [`super::SpanLod`]: the same f32 operations in the same order as
//! lod.wgsl, so wide sets and bitmaps compare exactly.

use super::LodParams;
use crate::span::TraceSpan;

/// What one LOD pass produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanLodResult {
    /// Span IDs drawn as quads, ascending (the GPU appends in any order).
    pub wide: Vec<u32>,
    /// The bitmap, `max_rows × words_per_row` words.
    pub occupancy: Vec<u32>,
    /// Spans folded into the bitmap.
    pub dense: u32,
}

fn f_of(t: u64) -> f32 {
    ((t >> 32) as u32 as f32) * 4_294_967_296.0 + (t as u32 as f32)
}

fn px_of(t: u64, p: &LodParams) -> f32 {
    let ws = u64::from(p.window_start[0]) | (u64::from(p.window_start[1]) << 32);
    if t < ws {
        -(f_of(ws - t) * p.px_per_tick)
    } else {
        f_of(t - ws) * p.px_per_tick
    }
}

/// The LOD of `visible_ids` (the frame's visible spans, in any order) with their layout `rows`
/// (indexed by span ID), under `p`, into a bitmap of `bitmap_words` words.
pub fn span_lod(
    spans: &[TraceSpan],
    rows: &[u32],
    visible_ids: &[u32],
    p: &LodParams,
    bitmap_words: usize,
) -> SpanLodResult {
    let mut out = SpanLodResult {
        wide: Vec::new(),
        occupancy: vec![0; bitmap_words],
        dense: 0,
    };
    for &id in visible_ids {
        let (Some(s), Some(&r)) = (spans.get(id as usize), rows.get(id as usize)) else {
            continue;
        };
        let mut wide = p.columns == 0 || id == p.selected;
        if !wide && (r < p.first_row || r - p.first_row >= p.rows) {
            continue;
        }
        // The duration's low 48 bits, as the shader masks them.
        let duration = s.duration() & 0xffff_ffff_ffff;
        wide = wide || f_of(duration) * p.px_per_tick >= p.min_px;
        if wide {
            out.wide.push(id);
            continue;
        }
        let x0 = px_of(s.start(), p);
        let x1 = px_of(s.start().wrapping_add(duration), p);
        if x1 < 0.0 || x0 >= p.columns as f32 {
            continue;
        }
        let c0 = x0.floor().max(0.0) as u32;
        let c1 = (x1.floor().max(0.0) as u32).min(p.columns - 1);
        let base = ((r - p.first_row) * p.words_per_row) as usize;
        for c in c0..=c1 {
            out.occupancy[base + (c >> 5) as usize] |= 1 << (c & 31);
        }
        out.dense += 1;
    }
    out.wide.sort_unstable();
    out
}
