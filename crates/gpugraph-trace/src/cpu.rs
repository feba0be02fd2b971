//! The oracles: plain loops that the GPU workflows parallelize, written to be obviously
//! right. Tests compare every GPU result against these.

use std::collections::VecDeque;

use crate::model::TraceModel;
use crate::span::{TraceDependency, NO_SPAN};
use crate::view::{FocusDirection, Pick, TraceView};

/// Forward and reverse CSR of a dependency list over `n` spans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Csr {
    /// `n + 1` offsets into `forward_neighbors`.
    pub forward_offsets: Vec<u32>,
    /// Targets, grouped by source, in dependency order within a source.
    pub forward_neighbors: Vec<u32>,
    /// `n + 1` offsets into `reverse_neighbors`.
    pub reverse_offsets: Vec<u32>,
    /// Sources, grouped by target, in dependency order within a target.
    pub reverse_neighbors: Vec<u32>,
}

fn one_way(n: usize, pairs: impl Iterator<Item = (u32, u32)> + Clone) -> (Vec<u32>, Vec<u32>) {
    let mut offsets = vec![0u32; n + 1];
    for (a, _) in pairs.clone() {
        if (a as usize) < n {
            offsets[a as usize + 1] += 1;
        }
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut neighbors = vec![0u32; offsets[n] as usize];
    for (a, b) in pairs {
        if (a as usize) < n {
            neighbors[fill[a as usize] as usize] = b;
            fill[a as usize] += 1;
        }
    }
    (offsets, neighbors)
}

/// The CSR of [`crate::csr::DependencyCsr`]: records whose row endpoint is `≥ n` are left
/// out of that direction; neighbours are kept as given.
pub fn csr(n: usize, deps: &[TraceDependency]) -> Csr {
    let (forward_offsets, forward_neighbors) = one_way(n, deps.iter().map(|d| (d.from, d.to)));
    let (reverse_offsets, reverse_neighbors) = one_way(n, deps.iter().map(|d| (d.to, d.from)));
    Csr {
        forward_offsets,
        forward_neighbors,
        reverse_offsets,
        reverse_neighbors,
    }
}

/// Spans within `hops` links of a seed along `offsets`/`neighbors` (seeds included).
pub fn reach(n: usize, offsets: &[u32], neighbors: &[u32], seeds: &[u32], hops: u32) -> Vec<bool> {
    let mut level = vec![u32::MAX; n];
    let mut q = VecDeque::new();
    for &s in seeds {
        if (s as usize) < n && level[s as usize] == u32::MAX {
            level[s as usize] = 0;
            q.push_back(s);
        }
    }
    while let Some(v) = q.pop_front() {
        let d = level[v as usize];
        if d >= hops {
            continue;
        }
        for &w in &neighbors[offsets[v as usize] as usize..offsets[v as usize + 1] as usize] {
            if (w as usize) < n && level[w as usize] == u32::MAX {
                level[w as usize] = d + 1;
                q.push_back(w);
            }
        }
    }
    level.into_iter().map(|l| l != u32::MAX).collect()
}

pub use crate::layout::{thread_layout, thread_rows, thread_rows_of};

/// One frame as the GPU computes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Per span: shown.
    pub visible: Vec<bool>,
    /// Per span: layout row, [`NO_SPAN`] when hidden.
    pub rows: Vec<u32>,
    /// Visible span IDs in canonical order.
    pub visible_ids: Vec<u32>,
    /// Per thread: first layout row.
    pub thread_offsets: Vec<u32>,
    /// Per dependency: endpoints after ancestor projection (`NO_SPAN` when no visible
    /// ancestor).
    pub edge_ends: Vec<(u32, u32)>,
    /// Dependency IDs drawn (both projected ends present and distinct), in order.
    pub visible_edges: Vec<u32>,
    /// The picked span.
    pub picked: Option<u32>,
}

/// Ancestor projection: `i` if visible, else its nearest visible ancestor within
/// `max_depth` links, else [`NO_SPAN`].
pub fn project(parents: &[u32], visible: &[bool], max_depth: u32) -> Vec<u32> {
    (0..parents.len())
        .map(|i| {
            let mut c = i as u32;
            for _ in 0..=max_depth {
                if visible[c as usize] {
                    return c;
                }
                c = parents[c as usize];
                if c as usize >= parents.len() {
                    return NO_SPAN;
                }
            }
            NO_SPAN
        })
        .collect()
}

/// The candidate range `[lo, hi)` of span IDs per thread for `window` (the GPU frame's
/// `thread_first` and `thread_counts`): `hi` is one past the last span of the thread starting
/// at or before the window's end, `lo` the first span of the thread such that some span of
/// the thread up to it ends at or after the window's start (`lo = hi` when none does). Every
/// span of the thread the window shows lies in it. Plain scans, no binary search.
pub fn thread_candidates(model: &TraceModel, window: (u64, u64)) -> Vec<(u32, u32)> {
    model
        .threads
        .iter()
        .map(|t| {
            let r = t.spans.clone();
            let hi = r
                .clone()
                .filter(|&i| model.spans[i as usize].start() <= window.1)
                .max()
                .map_or(r.start, |i| i + 1);
            let lo = (r.start..hi)
                .find(|&i| (r.start..=i).any(|j| model.spans[j as usize].end() >= window.0))
                .unwrap_or(hi);
            (lo, hi)
        })
        .collect()
}

/// The whole frame of `view` over `model` (see [`TraceView`]'s contract), with ancestor
/// projection bounded by `max_ancestor_depth` links.
pub fn frame(model: &TraceModel, view: &TraceView, max_ancestor_depth: u32) -> Frame {
    let n = model.spans.len();
    let rows_of = thread_rows(model, view);
    let focus = view.focus.as_ref().map(|f| {
        let c = csr(n, &model.dependencies);
        let (fh, bh) = match f.direction {
            FocusDirection::Forward => (f.hops, 0),
            FocusDirection::Backward => (0, f.hops),
            FocusDirection::Both => (f.hops, f.hops),
        };
        let a = reach(n, &c.forward_offsets, &c.forward_neighbors, &f.seeds, fh);
        let b = reach(n, &c.reverse_offsets, &c.reverse_neighbors, &f.seeds, bh);
        a.iter()
            .zip(&b)
            .map(|(x, y)| *x || *y)
            .collect::<Vec<bool>>()
    });
    let mut visible = vec![false; n];
    let mut rows = vec![NO_SPAN; n];
    for (i, s) in model.spans.iter().enumerate() {
        let (t, p, lane) = (s.thread, s.process(), s.lane());
        let lane_shown =
            if view.collapsed_processes.contains(&p) || view.collapsed_threads.contains(&t) {
                lane == 0
            } else {
                true
            };
        let v = s.start() <= view.window.1
            && s.end() >= view.window.0
            && s.duration() >= view.min_duration
            && s.duration() <= view.max_duration
            && (view.groups >> s.flags().draw_group()) & 1 == 1
            && view.name.is_none_or(|g| g == s.group)
            && lane_shown
            && focus.as_ref().is_none_or(|f| f[i]);
        if v {
            visible[i] = true;
            rows[i] = if view.collapsed_processes.contains(&p) {
                rows_of[model.processes[p as usize].threads.start as usize].1
            } else {
                rows_of[t as usize].1 + lane
            };
        }
    }
    let projected = project(&model.parents, &visible, max_ancestor_depth);
    let edge_ends: Vec<(u32, u32)> = model
        .dependencies
        .iter()
        .map(|d| {
            let at = |x: u32| projected.get(x as usize).copied().unwrap_or(NO_SPAN);
            (at(d.from), at(d.to))
        })
        .collect();
    let visible_edges = edge_ends
        .iter()
        .enumerate()
        .filter(|(_, (a, b))| *a != NO_SPAN && *b != NO_SPAN && a != b)
        .map(|(e, _)| e as u32)
        .collect();
    let picked = view.pick.and_then(|pick| {
        let (time, row_or_thread, by_row) = match pick {
            Pick::Row { time, row } => (time, row, true),
            Pick::Thread { time, thread } => (time, thread, false),
        };
        (0..n)
            .filter(|&i| {
                let s = &model.spans[i];
                visible[i]
                    && s.start() <= time
                    && time <= s.end()
                    && if by_row {
                        rows[i] == row_or_thread
                    } else {
                        s.thread == row_or_thread
                    }
            })
            .max_by_key(|&i| (model.spans[i].lane(), std::cmp::Reverse(i)))
            .map(|i| i as u32)
    });
    Frame {
        visible_ids: (0..n as u32).filter(|&i| visible[i as usize]).collect(),
        visible,
        rows,
        thread_offsets: rows_of.iter().map(|r| r.1).collect(),
        edge_ends,
        visible_edges,
        picked,
    }
}

/// Per-name statistics: count, total duration and self time (duration minus the durations
/// of the spans whose parent it is), in ticks. Self time is signed: overlapping children can
/// exceed their parent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NameStats {
    /// Spans.
    pub count: u32,
    /// Σ duration.
    pub total: u64,
    /// Σ self time.
    pub self_time: i64,
}

/// [`NameStats`] for every name ID `0..names`.
pub fn name_stats(model: &TraceModel) -> Vec<NameStats> {
    let mut out = vec![NameStats::default(); model.names.len()];
    for (i, s) in model.spans.iter().enumerate() {
        let g = &mut out[s.group as usize];
        g.count += 1;
        g.total = g.total.wrapping_add(s.duration());
        g.self_time = g.self_time.wrapping_add(s.duration() as i64);
        let p = model.parents[i];
        if p != NO_SPAN {
            let pg = model.spans[p as usize].group as usize;
            out[pg].self_time = out[pg].self_time.wrapping_sub(s.duration() as i64);
        }
    }
    out
}

/// The GPUScene record [`crate::scene::TraceSceneProjection`] writes for span `i` of `spans`
/// at layout row `row` ([`NO_SPAN`]: hidden), x scaled by `units_per_tick` (float32 as the
/// shader computes it; a device may fuse the multiply-add, so compare boxes with a relative
/// tolerance).
pub fn scene_record(
    spans: &[crate::TraceSpan],
    i: u32,
    row: u32,
    units_per_tick: f32,
) -> gpugraph_render::GpuSceneRecord {
    let s = spans[i as usize];
    let f = |t: u64| ((t >> 32) as u32 as f32 * 4_294_967_296.0 + t as u32 as f32) * units_per_tick;
    let (x0, x1) = (f(s.start()), f(s.end()));
    let y0 = if row == NO_SPAN { -1.0 } else { row as f32 };
    let hx = (x1 - x0) * 0.5;
    let mut r = gpugraph_render::GpuSceneRecord::new(i)
        .with_group(s.flags().draw_group())
        .with_geometry(s.group)
        .with_aabb([x0, y0, 0.0], [x1, y0 + 1.0, 0.0]);
    r.flags = gpugraph_render::gpu_scene::GPU_SCENE_ACTIVE_FLAG | (u32::from(s.flags().0) << 16);
    r.sphere = [x0 + hx, y0 + 0.5, 0.0, (hx * hx + 0.25).sqrt()];
    r
}

/// The block records the frame's build graph writes (`frame::blocks`, blocks.wgsl), for
/// every block of `model`'s threads in order: [`crate::frame::blocks::BLOCK_WORDS`] words
/// each, the header `[first, end, thread, lane entries or BLOCK_LANES_OVERFLOW, max end
/// (lo, hi), max duration (lo, hi)]` and per distinct lane in order of first appearance
/// (at most `BLOCK_LANES`) `[lane, spans, first start, max end, largest gap]` (64-bit values
/// as lo, hi). Plain loops over each block's spans.
pub fn block_summaries(model: &TraceModel) -> Vec<u32> {
    use crate::frame::blocks::{
        span_end, BLOCK_LANES, BLOCK_LANES_OVERFLOW, BLOCK_SPANS, BLOCK_WORDS,
    };
    let split = |v: u64| [v as u32, (v >> 32) as u32];
    let mut out = Vec::new();
    for (t, thread) in model.threads.iter().enumerate() {
        let r = thread.spans.clone();
        for first in r.clone().step_by(BLOCK_SPANS as usize) {
            let end = (first + BLOCK_SPANS).min(r.end);
            // (lane, spans, first start, max end, largest gap)
            let mut lanes: Vec<(u32, u32, u64, u64, u64)> = Vec::new();
            let (mut overflow, mut max_end, mut max_dur) = (false, 0u64, 0u64);
            for s in &model.spans[first as usize..end as usize] {
                let (start, e) = (s.start(), span_end(s));
                max_end = max_end.max(e);
                max_dur = max_dur.max(s.duration() & crate::span::MAX_SPAN_DURATION);
                if let Some(l) = lanes.iter_mut().find(|l| l.0 == s.lane()) {
                    if start > l.3 {
                        l.4 = l.4.max(start - l.3);
                    }
                    l.3 = l.3.max(e);
                    l.1 += 1;
                } else if lanes.len() < BLOCK_LANES as usize {
                    lanes.push((s.lane(), 1, start, e, 0));
                } else {
                    overflow = true;
                }
            }
            let mut w = vec![
                first,
                end,
                t as u32,
                if overflow {
                    BLOCK_LANES_OVERFLOW
                } else {
                    lanes.len() as u32
                },
            ];
            w.extend(split(max_end));
            w.extend(split(max_dur));
            for l in &lanes {
                w.extend([l.0, l.1]);
                w.extend(split(l.2));
                w.extend(split(l.3));
                w.extend(split(l.4));
            }
            w.resize(BLOCK_WORDS as usize, 0);
            out.extend(w);
        }
    }
    out
}
