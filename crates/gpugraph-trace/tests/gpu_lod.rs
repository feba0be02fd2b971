//! The span LOD on the GPU (lavapipe in CI) against its CPU oracle: wide sets, bitmaps and
//! draw records over random traces, views and plots, with the LOD off, selected spans, plots
//! scrolled past rows, empty traces and a window far from the trace origin, over frames with
//! and without the visible-ID compaction (the LOD reads the frame's candidates either way).

mod common;

use common::*;
use gpugraph_trace::frame::{TraceFrame, TraceFrameConfig};
use gpugraph_trace::lod::cpu::span_lod;
use gpugraph_trace::lod::{LodConfig, LodParams, SpanLod, LOD_COUNTER_WORDS};
use gpugraph_trace::*;
use rand::{Rng, SeedableRng};

use gpugraph_testing::poison;

/// Runs frame + LOD for `view` and `params`; checks everything against the oracle.
fn check(
    ctx: &gpugraph_command::GpuContext,
    f: &mut TraceFrame,
    lod: &mut SpanLod,
    m: &TraceModel,
    view: &TraceView,
    params: &LodParams,
    what: &str,
) {
    for b in [
        lod.wide_ids(),
        lod.occupancy(),
        lod.counters(),
        lod.draw_args(),
    ] {
        poison(ctx, b);
    }
    f.write_view(&ctx.queue, view).unwrap();
    lod.write(&ctx.queue, params);
    submit(ctx, |e| {
        f.encode(e).unwrap();
        lod.encode(e).unwrap();
    });
    let b = f.buffers();
    let frame_args = read(ctx, &b.draw_args, 8);
    // The visible spans as the LOD reads them: the frame's flagged candidates, which are the
    // oracle's visible spans in canonical order, and their count is the frame's.
    let live = read(ctx, &b.live_total, 1)[0] as usize;
    let candidates = read(ctx, &b.candidate_ids, live);
    let flags = read(ctx, &b.candidate_flags, live);
    let visible_ids: Vec<u32> = candidates
        .iter()
        .zip(&flags)
        .filter(|(_, &flag)| flag != 0)
        .map(|(&id, _)| id)
        .collect();
    let oracle = gpugraph_trace::cpu::frame(m, view, f.config().max_ancestor_depth);
    assert_eq!(
        visible_ids, oracle.visible_ids,
        "{what}: visible candidates"
    );
    assert_eq!(
        frame_args[1] as usize,
        visible_ids.len(),
        "{what}: visible count"
    );
    if f.config().compact_visible {
        assert_eq!(
            read(ctx, &b.visible_ids, visible_ids.len()),
            visible_ids,
            "{what}: compacted IDs"
        );
    }
    let rows = read(ctx, &b.rows, m.spans.len());
    let words = lod.config().words() as usize;
    let want = span_lod(&m.spans, &rows, &visible_ids, params, words);

    let counters = read(ctx, lod.counters(), LOD_COUNTER_WORDS as usize);
    let mut wide = read(ctx, lod.wide_ids(), counters[0] as usize);
    wide.sort_unstable();
    assert_eq!(wide, want.wide, "{what}: wide spans");
    assert_eq!(counters[1], want.dense, "{what}: dense count");
    // The frame's part of the bitmap (row slots × this plot's row stride); past it the
    // words are unspecified (the poison stays: nothing clears the whole bitmap per frame).
    let used = (params.rows * params.words_per_row) as usize;
    assert!(
        used <= words,
        "{what}: the plot's bitmap exceeds the compiled one"
    );
    assert_eq!(
        read(ctx, lod.occupancy(), used),
        want.occupancy[..used],
        "{what}: bitmap"
    );
    assert!(
        want.occupancy[used..].iter().all(|&w| w == 0),
        "{what}: the oracle marked past the plot's rows"
    );
    let args = read(ctx, lod.draw_args(), 8);
    assert_eq!(
        args,
        [
            6 * want.wide.len() as u32,
            1,
            0,
            0,
            frame_args[4] * frame_args[5],
            1,
            0,
            0
        ],
        "{what}: draw records"
    );
    // Every visible span on a row slot is drawn either way.
    let on_plot = visible_ids
        .iter()
        .filter(|&&id| {
            let r = rows[id as usize];
            params.columns == 0
                || id == params.selected
                || (r >= params.first_row && r - params.first_row < params.rows)
        })
        .count();
    assert!(
        want.wide.len() + want.dense as usize <= on_plot,
        "{what}: more drawn than on the plot"
    );
}

fn random_params(r: &mut impl Rng, m: &TraceModel, config: &LodConfig) -> LodParams {
    let end = m.end.max(1);
    let start = r.random_range(0..end);
    let width = match r.random_range(0..4) {
        0 => 1,
        1 => r.random_range(1..1000),
        _ => r.random_range(1..=end.max(2) * 2),
    };
    let columns = match r.random_range(0..6) {
        0 => 1,
        1 => config.max_columns,
        2 => config.max_columns + 1,
        _ => r.random_range(1..2000),
    };
    let scroll = r.random_range(0.0..6.0f32);
    let rows_in_view = r.random_range(0.5..40.0f32);
    let selected = (r.random_bool(0.3) && !m.spans.is_empty())
        .then(|| r.random_range(0..m.spans.len() as u32));
    LodParams::new(
        config,
        start,
        width,
        columns,
        scroll,
        rows_in_view,
        selected,
    )
}

#[test]
fn random_lods_match_the_oracle() {
    let ctx = ctx();
    let mut r = rand::rngs::StdRng::seed_from_u64(7);
    let config = LodConfig {
        max_columns: 2048,
        max_rows: 48,
        min_px: 1.5,
    };
    for (seed, n, compact_visible) in [
        (30, 0, true),
        (31, 1, false),
        (32, 255, true),
        (33, 257, false),
        (34, 3000, true),
        (35, 3000, false),
    ] {
        let m = random_trace(seed, n);
        let frame_config = TraceFrameConfig {
            compact_visible,
            ..TraceFrameConfig::exact(&m, 2)
        };
        let mut f = TraceFrame::new(&ctx.device, &ctx.queue, &m, frame_config).unwrap();
        submit(&ctx, |e| f.encode_build(e).unwrap());
        let mut lod = SpanLod::new(&ctx.device, f.buffers(), config).unwrap();
        let pipelines = lod.graph().cache().stats().pipelines_created;
        for k in 0..10 {
            let view = if k % 3 == 0 {
                TraceView::default()
            } else {
                random_view(&mut r, &m, 2)
            };
            let params = random_params(&mut r, &m, &config);
            check(
                &ctx,
                &mut f,
                &mut lod,
                &m,
                &view,
                &params,
                &format!("n={n} compact {compact_visible} case {k}"),
            );
        }
        assert_eq!(
            lod.graph().cache().stats().pipelines_created,
            pipelines,
            "a parameter change compiled a pipeline"
        );
    }
}

#[test]
fn zoomed_out_spans_fold_into_the_bitmap_and_zoomed_in_ones_are_quads() {
    let ctx = ctx();
    let m = random_trace(40, 2000);
    let mut f =
        TraceFrame::new(&ctx.device, &ctx.queue, &m, TraceFrameConfig::exact(&m, 1)).unwrap();
    submit(&ctx, |e| f.encode_build(e).unwrap());
    let config = LodConfig::default();
    let mut lod = SpanLod::new(&ctx.device, f.buffers(), config).unwrap();
    let view = TraceView::default();
    // The whole trace over 100 px: nearly everything is narrower than 1.5 px.
    let out = LodParams::new(&config, 0, m.end.max(1), 100, 0.0, 64.0, None);
    check(&ctx, &mut f, &mut lod, &m, &view, &out, "zoomed out");
    let counters = read(&ctx, lod.counters(), 2);
    assert!(counters[1] > counters[0], "zoomed out: {counters:?}");
    // A thousandth of it over 4,000 px: every span in the window is a quad.
    let zoom = LodParams::new(
        &config,
        m.end / 2,
        (m.end / 1000).max(1),
        4000,
        0.0,
        64.0,
        None,
    );
    check(&ctx, &mut f, &mut lod, &m, &view, &zoom, "zoomed in");
    // The LOD off draws every visible span, whatever its width.
    let off = LodParams::new(
        &config,
        0,
        m.end.max(1),
        config.max_columns + 1,
        0.0,
        64.0,
        None,
    );
    assert_eq!(off.columns, 0);
    check(&ctx, &mut f, &mut lod, &m, &view, &off, "off");
    let frame_args = read(&ctx, &f.buffers().draw_args, 8);
    assert_eq!(read(&ctx, lod.counters(), 2), [frame_args[1], 0]);
}

#[test]
fn a_window_far_from_the_origin_keeps_exact_columns() {
    let ctx = ctx();
    let m = random_trace(41, 500);
    let mut f =
        TraceFrame::new(&ctx.device, &ctx.queue, &m, TraceFrameConfig::exact(&m, 1)).unwrap();
    submit(&ctx, |e| f.encode_build(e).unwrap());
    let config = LodConfig::default();
    let mut lod = SpanLod::new(&ctx.device, f.buffers(), config).unwrap();
    // Windows that start after the spans (negative pixel x) and at 2^40 ticks.
    for (k, start) in [m.end + 10, 1 << 40, m.end / 3].into_iter().enumerate() {
        let p = LodParams::new(&config, start, m.end.max(1), 1500, 0.0, 64.0, None);
        check(
            &ctx,
            &mut f,
            &mut lod,
            &m,
            &TraceView::default(),
            &p,
            &format!("far {k}"),
        );
    }
}
