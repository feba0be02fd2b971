//! Block summaries and the frame's blocks mode on the GPU (lavapipe in CI) against the CPU
//! oracles: the summaries the build graph writes equal `cpu::block_summaries` for threads of
//! 0, 1, 63, 64 and 65 spans, uneven threads, deep nesting (more lanes than a block
//! summarizes) and random traces; and frames of a `block_lod` frame (plain views that run in
//! blocks mode, interleaved with filtered ones that run the candidate or sweep pass) give the
//! oracle's visible count, edge endpoints and their rows, pick, and span LOD (quads, bitmap,
//! dense count) at zoom levels from the whole trace over a few pixels to a sliver.

mod common;

use common::*;
use gpugraph_command::GpuContext;
use gpugraph_testing::poison;
use gpugraph_trace::cpu;
use gpugraph_trace::frame::blocks::{block_capacity, BLOCK_LANES_OVERFLOW, BLOCK_WORDS};
use gpugraph_trace::frame::{TraceFrame, TraceFrameConfig};
use gpugraph_trace::lod::cpu::span_lod;
use gpugraph_trace::lod::{LodConfig, LodParams, SpanLod, LOD_COUNTER_WORDS};
use gpugraph_trace::*;
use rand::{Rng, SeedableRng};

/// A trace whose thread `k` has `counts[k]` spans: runs of nested spans (depth up to
/// `depth`), gaps of random size between them, some zero-duration spans.
fn threads_trace(seed: u64, counts: &[usize], depth: usize) -> TraceModel {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let mut ev = Vec::new();
    for (k, &n) in counts.iter().enumerate() {
        let (p, t) = (k % 2, k);
        ev.push(format!(
            r#"{{"ph":"M","name":"thread_name","pid":{p},"tid":{t},"args":{{"name":"t{t}"}}}}"#
        ));
        let mut ts = r.random_range(0..50u64);
        let mut placed = 0;
        while placed < n {
            let d = r.random_range(1..=depth).min(n - placed);
            let outer = r.random_range(4 * d as u64..200);
            for j in 0..d as u64 {
                let dur = if r.random_bool(0.1) { 0 } else { outer - 2 * j };
                ev.push(format!(
                    r#"{{"ph":"X","name":"n{}","pid":{p},"tid":{t},"ts":{},"dur":{dur}}}"#,
                    r.random_range(0..5),
                    ts + j
                ));
            }
            placed += d;
            ts += outer
                + match r.random_range(0..4) {
                    0 => 0,
                    1 => r.random_range(1..5),
                    _ => r.random_range(1..400),
                };
        }
    }
    for k in 0..4 {
        ev.push(format!(
            r#"{{"ph":"s","id":{k},"pid":0,"tid":0,"ts":{}}},{{"ph":"f","bp":"e","id":{k},"pid":1,"tid":1,"ts":{}}}"#,
            60 + 97 * k,
            900 + 53 * k
        ));
    }
    let text = format!("[{}]", ev.join(","));
    parse_chrome_trace(text.as_bytes(), IngestOptions::default()).unwrap()
}

fn block_frame(ctx: &GpuContext, m: &TraceModel) -> TraceFrame {
    let config = TraceFrameConfig {
        compact_visible: false,
        block_lod: true,
        ..TraceFrameConfig::exact(m, 2)
    };
    let f = TraceFrame::new(&ctx.device, &ctx.queue, m, config).unwrap();
    poison(ctx, &f.buffers().blocks);
    f
}

fn traces() -> Vec<(String, TraceModel)> {
    let mut out = Vec::new();
    for counts in [
        vec![0],
        vec![1],
        vec![63],
        vec![64],
        vec![65],
        vec![0, 1, 63, 64, 65],
        vec![130, 1, 0, 200, 7, 64],
    ] {
        out.push((
            format!("threads {counts:?}"),
            threads_trace(counts.len() as u64, &counts, 4),
        ));
    }
    out.push(("deep".into(), threads_trace(9, &[70, 140], 12)));
    for (seed, n) in [(50, 300), (51, 2000)] {
        out.push((format!("random {n}"), random_trace(seed, n)));
    }
    out
}

#[test]
fn block_summaries_match_the_oracle() {
    let ctx = ctx();
    let mut overflowed = false;
    for (what, m) in traces() {
        let mut f = block_frame(&ctx, &m);
        submit(&ctx, |e| f.encode_build(e).unwrap());
        let want = cpu::block_summaries(&m);
        let capacity = (block_capacity(&f.config()) * BLOCK_WORDS) as usize;
        let got = read(&ctx, &f.buffers().blocks, capacity);
        assert_eq!(got[..want.len()], want[..], "{what}: block records");
        assert!(
            got[want.len()..].iter().all(|&w| w == 0),
            "{what}: records past the blocks"
        );
        for (t, th) in m.threads.iter().enumerate() {
            let blocks = want
                .chunks(BLOCK_WORDS as usize)
                .filter(|b| b[2] == t as u32)
                .count();
            assert_eq!(blocks, th.spans.len().div_ceil(64), "{what}: thread {t}");
        }
        overflowed |= want
            .chunks(BLOCK_WORDS as usize)
            .any(|b| b[3] == BLOCK_LANES_OVERFLOW);
    }
    assert!(overflowed, "no block had more lanes than it summarizes");
}

/// Runs frame + LOD for `view` and `params` on a `block_lod` frame and checks what blocks
/// mode must keep exact against the oracle; returns whether the frame ran in blocks mode.
fn check(
    ctx: &GpuContext,
    f: &mut TraceFrame,
    lod: &mut SpanLod,
    m: &TraceModel,
    view: &TraceView,
    params: &LodParams,
    what: &str,
) -> bool {
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
    let want = cpu::frame(m, view, f.config().max_ancestor_depth);
    let (n, d) = (m.spans.len(), m.dependencies.len());
    let mode = read(ctx, &b.live_total, 3)[2];
    let candidates: u32 = cpu::thread_candidates(m, view.window)
        .iter()
        .map(|(lo, hi)| hi - lo)
        .sum();
    let blocks = view.is_plain() && candidates > n as u32 / 2;
    assert_eq!(mode == 2, blocks, "{what}: mode {mode}");
    let args = read(ctx, &b.draw_args, 8);
    assert_eq!(
        args[1] as usize,
        want.visible_ids.len(),
        "{what}: visible count"
    );
    assert_eq!(
        args[5] as usize,
        want.visible_edges.len(),
        "{what}: edge count"
    );
    let ends: Vec<(u32, u32)> = read(ctx, &b.edge_ends, 2 * d)
        .chunks(2)
        .map(|e| (e[0], e[1]))
        .collect();
    assert_eq!(ends, want.edge_ends, "{what}: edge ends");
    let pick = read(ctx, &b.pick, 2);
    assert_eq!(
        (pick[1] != NO_SPAN).then_some(pick[1]),
        want.picked,
        "{what}: pick {:?}",
        view.pick
    );
    let rows = read(ctx, &b.rows, n);
    if !blocks {
        // A per-span pass ran: `visible` is exact, `rows` for the visible spans (a hidden
        // slot a blocks frame wrote may keep its row).
        let visible = read(ctx, &b.visible, n);
        let got: Vec<bool> = visible.iter().map(|&v| v != 0).collect();
        assert_eq!(got, want.visible, "{what}: visible");
    }
    for &e in &want.visible_edges {
        let (a, z) = want.edge_ends[e as usize];
        for x in [a, z] {
            assert_eq!(
                rows[x as usize], want.rows[x as usize],
                "{what}: edge end {x}"
            );
        }
    }
    for &i in &want.visible_ids {
        if !blocks {
            assert_eq!(
                rows[i as usize], want.rows[i as usize],
                "{what}: row of {i}"
            );
        }
    }
    let words = lod.config().words() as usize;
    let lod_want = span_lod(&m.spans, &want.rows, &want.visible_ids, params, words);
    let counters = read(ctx, lod.counters(), LOD_COUNTER_WORDS as usize);
    let mut wide = read(ctx, lod.wide_ids(), counters[0] as usize);
    wide.sort_unstable();
    assert_eq!(wide, lod_want.wide, "{what}: wide spans");
    for &i in &wide {
        assert_eq!(
            rows[i as usize], want.rows[i as usize],
            "{what}: quad row {i}"
        );
    }
    assert_eq!(counters[1], lod_want.dense, "{what}: dense count");
    let used = (params.rows * params.words_per_row) as usize;
    assert_eq!(
        read(ctx, lod.occupancy(), used),
        lod_want.occupancy[..used],
        "{what}: bitmap"
    );
    assert_eq!(
        read(ctx, lod.draw_args(), 1)[0],
        6 * lod_want.wide.len() as u32,
        "{what}: quad vertices"
    );
    blocks
}

#[test]
fn blocks_mode_frames_match_the_oracle() {
    let ctx = ctx();
    let mut r = rand::rngs::StdRng::seed_from_u64(11);
    let config = LodConfig {
        max_columns: 2048,
        max_rows: 64,
        min_px: 1.5,
    };
    let mut ran_blocks = 0;
    for (what, m) in traces() {
        let mut f = block_frame(&ctx, &m);
        submit(&ctx, |e| f.encode_build(e).unwrap());
        let mut lod = SpanLod::new(&ctx.device, f.buffers(), config).unwrap();
        let pipelines = f.pipelines_created();
        let end = m.end.max(1);
        let n = m.spans.len() as u32;
        for k in 0..14 {
            let mut view = TraceView::default();
            match k % 7 {
                0 => {}
                1 => view.window = (0, end),
                2 => view.window = (end / 5, end - end / 7),
                3 => {
                    let a = r.random_range(0..=end);
                    view.window = (a, r.random_range(a..=end + 5));
                }
                4 => view = random_view(&mut r, &m, 2),
                5 => view.window = (end / 2, end / 2 + end / 50),
                _ => view.window = (end / 3, end / 3),
            }
            if n > 0 && r.random_bool(0.5) {
                let i = r.random_range(0..n as usize);
                let s = m.spans[i];
                let time = s.start() + r.random_range(0..=s.duration());
                view.pick = Some(if r.random_bool(0.5) {
                    Pick::Thread {
                        time,
                        thread: s.thread,
                    }
                } else {
                    let row = cpu::frame(&m, &view, 64).rows[i];
                    Pick::Row {
                        time,
                        row: if row == NO_SPAN { 0 } else { row },
                    }
                });
            }
            let width = view.window.1.min(end).saturating_sub(view.window.0).max(1);
            let columns = [3, 64, 700, 1500, 2049][r.random_range(0..5)];
            let selected = (n > 0 && r.random_bool(0.3)).then(|| r.random_range(0..n));
            let params = LodParams::new(
                &config,
                view.window.0,
                width,
                columns,
                r.random_range(0.0..3.0f32),
                r.random_range(2.0..60.0f32),
                selected,
            );
            if check(
                &ctx,
                &mut f,
                &mut lod,
                &m,
                &view,
                &params,
                &format!("{what} case {k}"),
            ) {
                ran_blocks += 1;
            }
        }
        assert_eq!(
            f.pipelines_created(),
            pipelines,
            "{what}: a view change compiled"
        );
    }
    assert!(ran_blocks > 20, "blocks mode ran {ran_blocks} times");
}

#[test]
fn block_lod_needs_the_candidates() {
    let ctx = ctx();
    let m = random_trace(52, 50);
    for (compact_visible, scene_records) in [(true, false), (false, true)] {
        let config = TraceFrameConfig {
            compact_visible,
            scene_records,
            block_lod: true,
            ..TraceFrameConfig::exact(&m, 1)
        };
        let err = TraceFrame::new(&ctx.device, &ctx.queue, &m, config).err();
        assert!(
            matches!(err, Some(TraceGpuError::View { what: "config", .. })),
            "{err:?}"
        );
    }
}
