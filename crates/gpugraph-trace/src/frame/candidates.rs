//! The frame's candidate path (candidates.wgsl): span visibility and the visible-span
//! compaction cost O(threads · log n + candidates) per frame instead of O(spans).
//!
//! A thread's spans are one contiguous ID range sorted by start (canonical order), so at load
//! [`thread_index`] records each thread's `[begin, end)` and, per span, the running maximum
//! end of its thread's spans up to it (a monotone summary: one long span early in a thread
//! widens every later candidate range, never hides a span). Per frame:
//!
//! ```text
//! thread_candidates (per thread: [lo, hi) by binary search), thread_rows (its first row and
//! collapse mode) ─ Scan (inclusive: candidate ends) ─ frame_args (mode, three grids) ─
//!   candidates ≤ spans / 2: unmark (last frame's visible IDs: visible = 0, rows = NO_SPAN) ─
//!                           span_candidates (per candidate: the predicate, visible/rows)
//!   otherwise:              span_sweep (every span slot, no search)
//! ─ Compaction (live count: candidates or spans) ─ visible span IDs, canonical order, and
//!   their count; or, without [`TraceFrameConfig::compact_visible`], count_visible (the
//!   count alone: the candidates' flags summed)
//! ```
//!
//! The mode is chosen on the GPU every frame (indirect grids of zero workgroups for the path
//! not taken), so a view change stays a uniform write. Zoomed out, most spans are
//! candidates and the sweep is cheaper per span (no search, no unmark pass); zoomed in, the
//! candidates are a small part. `visible` and `rows` keep their meaning for every span slot
//! (1 / the row exactly for the visible spans): the sweep rewrites every slot, and a slot
//! `span_candidates` sets is one of that frame's flagged candidates, which the next frame's
//! `unmark` clears before a candidate pass (the candidates' IDs and flags stay in their
//! buffers until the next candidate or sweep pass rewrites them).
//!
//! The visible-ID compaction is optional: a consumer that reads the candidates' IDs and flags
//! itself (the viewer's span LOD) skips it, and the frame then costs nothing proportional to
//! the span slots unless most spans are candidates.

use gpugraph_command::{
    Access, Binding, CommandGraph, DataView, DispatchNode, Grid, ShaderSource, VectorFormat,
};
use gpugraph_gpgpu::{Compaction, Scan};

use super::{import, FrameBuffers, TraceFrameConfig, WG, WORKFLOW};
use crate::error::TraceGpuError;
use crate::model::TraceModel;

/// Per thread `[begin, end)` of its span IDs (two words), and per span its thread's running
/// maximum end up to it (two words, lo then hi). Fails with [`TraceGpuError::View`] unless
/// the threads' span ranges tile the spans in order, each span lies in its own thread's range
/// (and process), and starts within a thread never decrease: the binary searches and the
/// per-thread rows rely on all of it.
pub(super) fn thread_index(model: &TraceModel) -> Result<(Vec<u32>, Vec<u32>), TraceGpuError> {
    let bad = |actual: String| TraceGpuError::View {
        workflow: WORKFLOW,
        id: "trace".into(),
        what: "thread span ranges",
        expected: "consecutive ranges covering every span, of the span's thread, by start",
        actual,
    };
    let mut ranges = Vec::with_capacity(2 * model.threads.len());
    let mut max_end = Vec::with_capacity(2 * model.spans.len());
    let mut next = 0u32;
    for (t, thread) in model.threads.iter().enumerate() {
        let r = thread.spans.clone();
        if r.start != next || r.end < r.start || r.end as usize > model.spans.len() {
            return Err(bad(format!("thread {t}: {r:?} after span {next}")));
        }
        let mut running = 0u64;
        let mut previous = 0u64;
        for i in r.clone() {
            let s = &model.spans[i as usize];
            if s.thread as usize != t || s.process() != thread.process || s.start() < previous {
                return Err(bad(format!("span {i} in thread {t}'s range {r:?}")));
            }
            previous = s.start();
            running = running.max(s.end());
            max_end.extend([running as u32, (running >> 32) as u32]);
        }
        ranges.extend([r.start, r.end]);
        next = r.end;
    }
    if next as usize != model.spans.len() {
        return Err(bad(format!(
            "the ranges end at span {next} of {}",
            model.spans.len()
        )));
    }
    Ok((ranges, max_end))
}

/// Workgroups of `count_visible`: a fixed grid whose invocations stride over the live
/// candidates (one atomic per workgroup, whatever the span count). A CPU adapter runs a
/// workgroup's barriers by switching through its invocations, so it gets few workgroups
/// (each strides far; the loads are cheap there); a GPU needs enough of them in flight to
/// hide memory latency over millions of flags.
fn count_groups(device: &wgpu::Device) -> u32 {
    if device.adapter_info().device_type == wgpu::DeviceType::Cpu {
        16
    } else {
        1024
    }
}

/// Adds the nodes of the module doc: `visible`, `rows`, the candidates' IDs and flags, the
/// visible count (the instanceCount word `visible_count`) and, with
/// [`TraceFrameConfig::compact_visible`], the visible IDs for the view in `params`.
pub(super) fn add_candidates(
    g: &mut CommandGraph,
    b: &FrameBuffers,
    c: &TraceFrameConfig,
    shader: &ShaderSource,
    visible_count: DataView,
) -> Result<(), TraceGpuError> {
    let (s, t) = (u64::from(c.span_capacity), u64::from(c.thread_capacity));
    let params = g.import_buffer_once("params", &b.params, b.params.usage())?;
    let mut v = |name: &str, buf: &wgpu::Buffer, rows: u64| import(g, name, buf, rows);
    let spans = v("spans", &b.spans, 8 * s)?.1;
    let p = u64::from(c.process_capacity);
    let thread_process = v("thread-process", &b.thread_process, t)?.1;
    let process_first = v("process-first", &b.process_first, p)?.1;
    let process_collapsed = v("process-collapsed", &b.process_collapsed, p)?.1;
    let thread_collapsed = v("thread-collapsed", &b.thread_collapsed, t)?.1;
    let thread_offsets = v("thread-offsets", &b.thread_offsets, t)?.1;
    let focus_forward = v("focus-forward", &b.focus_forward, s)?.1;
    let focus_reverse = v("focus-reverse", &b.focus_reverse, s)?.1;
    let visible = v("visible", &b.visible, s)?.1;
    let rows = v("rows", &b.rows, s)?.1;
    // The whole draw record: a storage binding cannot start at the count word's offset.
    let draw_record = v("draw-args", &b.draw_args, 8)?.1;
    let thread_spans = v("thread-spans", &b.thread_spans, 2 * t)?.1;
    let max_end = v("max-end", &b.max_end, 2 * s)?.1;
    let thread_info = v("thread-info", &b.thread_info, 4 * t)?.1;
    let thread_counts = v("thread-counts", &b.thread_counts, t)?.1;
    let candidate_ends = v("candidate-ends", &b.candidate_ends, t)?.1;
    let candidate_args = v("candidate-args", &b.candidate_args, 3)?.1;
    let unmark_args = v("unmark-args", &b.unmark_args, 3)?.1;
    let sweep_args = v("sweep-args", &b.sweep_args, 3)?.1;
    let (live_h, live_total) = v("live-total", &b.live_total, 3)?;
    let candidate_ids = v("candidate-ids", &b.candidate_ids, s)?.1;
    let candidate_flags = v("candidate-flags", &b.candidate_flags, s)?.1;
    let sorted_ends = v("sorted-ends", &b.sorted_ends, b.sorted_ends.size() / 4)?.1;
    let thread_visible = v("thread-visible", &b.thread_visible, t)?.1;

    let node = |g: &mut CommandGraph, entry: &str, bindings: Vec<Binding>, grid: Grid| {
        g.add_dispatch_node(DispatchNode::new(
            format!("frame/{entry}"),
            shader.clone(),
            entry,
            bindings,
            grid,
        ))
        .map(|_| ())
    };
    let fp = || Binding::handle(0, params, Access::Uniform);
    let rows_of = |rows: u64| Grid::Rows {
        rows,
        rows_per_workgroup: WG,
    };
    node(
        g,
        "thread_candidates",
        vec![
            fp(),
            Binding::read(7, spans),
            Binding::read(21, thread_spans),
            Binding::read(22, max_end),
            Binding::read_write(23, thread_info),
            Binding::read_write(24, thread_counts),
            Binding::read(36, sorted_ends),
            Binding::read_write(37, thread_visible),
        ],
        rows_of(t),
    )?;
    node(
        g,
        "thread_rows",
        vec![
            fp(),
            Binding::read(1, thread_process),
            Binding::read(3, process_first),
            Binding::read(4, process_collapsed),
            Binding::read(5, thread_collapsed),
            Binding::read(8, thread_offsets),
            Binding::read_write(23, thread_info),
        ],
        rows_of(t),
    )?;
    Scan {
        id: "frame/candidate-ends".into(),
        input: thread_counts.into(),
        output: candidate_ends.into(),
        inclusive: true,
        segment_starts: None,
    }
    .add_to_graph(g)?;
    node(
        g,
        "frame_args",
        vec![
            fp(),
            Binding::read(25, candidate_ends),
            Binding::read_write(30, draw_record),
            Binding::read_write(26, candidate_args),
            Binding::read_write(33, sweep_args),
            Binding::read_write(34, unmark_args),
            Binding::read_write(35, live_total),
        ],
        Grid::Workgroups([1, 1, 1]),
    )?;
    node(
        g,
        "unmark",
        vec![
            Binding::read_write(27, candidate_ids),
            Binding::read_write(28, candidate_flags),
            Binding::read_write(35, live_total),
            Binding::read_write(11, visible),
            Binding::read_write(12, rows),
        ],
        Grid::Indirect(unmark_args),
    )?;
    let marks = |extra: Option<Binding>| {
        let mut m = vec![
            fp(),
            Binding::read(7, spans),
            Binding::read(9, focus_forward),
            Binding::read(10, focus_reverse),
            Binding::read_write(11, visible),
            Binding::read_write(12, rows),
            Binding::read_write(27, candidate_ids),
            Binding::read_write(28, candidate_flags),
            Binding::read(31, thread_info),
        ];
        m.extend(extra);
        m
    };
    node(
        g,
        "span_candidates",
        marks(Some(Binding::read(25, candidate_ends))),
        Grid::Indirect(candidate_args),
    )?;
    node(g, "span_sweep", marks(None), Grid::Indirect(sweep_args))?;
    if c.compact_visible {
        let visible_ids = import(g, "visible-ids", &b.visible_ids, s)?.1;
        // This frame's candidate rows: word 0 of `live_total`.
        let live = g.create_packed_view(live_h, VectorFormat::Uint32, 1)?;
        Compaction {
            id: "frame/visible-spans".into(),
            values: g.with_live_count(candidate_ids, live)?.into(),
            flags: candidate_flags.into(),
            output: visible_ids.into(),
            count: visible_count,
            overflow: None,
        }
        .add_to_graph(g)?;
    } else {
        let groups = count_groups(g.device());
        node(
            g,
            "count_visible",
            vec![
                fp(),
                Binding::read_write(28, candidate_flags),
                Binding::read_write(30, draw_record),
                Binding::read_write(35, live_total),
                Binding::read_write(37, thread_visible),
            ],
            Grid::Workgroups([groups, 1, 1]),
        )?;
    }
    Ok(())
}
