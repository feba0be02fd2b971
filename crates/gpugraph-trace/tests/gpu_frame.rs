//! The trace frame on the GPU (lavapipe in CI) against the CPU oracles: the dependency CSR,
//! whole frames (visible spans, rows, projected edges, picks) over random traces with random
//! views, corner-case traces, padded capacities, exact name statistics, and a view-only
//! change that never compiles a pipeline.

mod common;

use common::*;
use gpugraph_command::{CommandGraph, GpuContext, VectorFormat};
use gpugraph_trace::cpu;
use gpugraph_trace::frame::{TraceFrame, TraceFrameConfig};
use gpugraph_trace::stats::NameStatistics;
use gpugraph_trace::*;
use rand::SeedableRng;

/// Runs one frame of `view` and checks it against the oracle; returns whether the frame swept
/// every span slot (more candidates than half the spans) rather than its candidates.
fn check_frame(
    ctx: &GpuContext,
    f: &mut TraceFrame,
    m: &TraceModel,
    view: &TraceView,
    what: &str,
) -> bool {
    f.write_view(&ctx.queue, view).unwrap();
    submit(ctx, |e| f.encode(e).unwrap());
    // Only a view with focus encodes the focus traversals.
    let traversals = f
        .frame_graph_compiled()
        .node_order()
        .iter()
        .filter(|n| n.contains("focus"))
        .count();
    assert_eq!(
        traversals > 0,
        view.focus.is_some(),
        "{what}: traversal nodes"
    );
    let c = f.config();
    let want = cpu::frame(m, view, c.max_ancestor_depth);
    let b = f.buffers();
    let (n, d) = (m.spans.len(), m.dependencies.len());
    let visible = read(ctx, &b.visible, n);
    let rows = read(ctx, &b.rows, n);
    let args = read(ctx, &b.draw_args, 8);
    assert_eq!(
        [args[0], args[2], args[3], args[4], args[6], args[7]],
        [6, 0, 0, 2, 0, 0]
    );
    let counts = [args[1], args[5]];
    // The visible spans as flagged candidates (what a frame without the compaction offers),
    // and with the compaction its output.
    let live = read(ctx, &b.live_total, 1)[0].min(c.span_capacity) as usize;
    let candidates = read(ctx, &b.candidate_ids, live);
    let flags = read(ctx, &b.candidate_flags, live);
    let flagged: Vec<u32> = candidates
        .iter()
        .zip(&flags)
        .filter(|(_, &flag)| flag != 0)
        .map(|(&id, _)| id)
        .collect();
    assert_eq!(flagged, want.visible_ids, "{what}: flagged candidates");
    let ids = if c.compact_visible {
        read(ctx, &b.visible_ids, counts[0].min(c.span_capacity) as usize)
    } else {
        flagged
    };
    let ends = read(ctx, &b.edge_ends, 2 * d);
    let edges = read(
        ctx,
        &b.visible_edges,
        counts[1].min(c.dependency_capacity) as usize,
    );
    let pick = read(ctx, &b.pick, 2);
    let got_visible: Vec<bool> = visible.iter().map(|&v| v != 0).collect();
    assert_eq!(got_visible, want.visible, "{what}: visible {view:?}");
    assert_eq!(rows, want.rows, "{what}: rows");
    assert_eq!(counts[0] as usize, want.visible_ids.len(), "{what}: count");
    assert_eq!(
        counts[1] as usize,
        want.visible_edges.len(),
        "{what}: edge count"
    );
    assert_eq!(ids, want.visible_ids, "{what}: visible IDs");
    let got_ends: Vec<(u32, u32)> = ends.chunks(2).map(|e| (e[0], e[1])).collect();
    assert_eq!(got_ends, want.edge_ends, "{what}: edge ends");
    assert_eq!(edges, want.visible_edges, "{what}: drawn edges");
    let picked = (pick[1] != NO_SPAN).then_some(pick[1]);
    assert_eq!(picked, want.picked, "{what}: pick {:?}", view.pick);
    // The candidate ranges the visibility ran over: the oracle's, and holding every shown span.
    let t = m.threads.len();
    let info = read(ctx, &b.thread_info, 4 * t);
    let counts = read(ctx, &b.thread_counts, t);
    let got: Vec<(u32, u32)> = info.chunks(4).map(|w| (w[0], w[0] + w[1])).collect();
    let got_counts: Vec<u32> = info.chunks(4).map(|w| w[1]).collect();
    assert_eq!(counts, got_counts, "{what}: the scan's candidate counts");
    let ranges = cpu::thread_candidates(m, view.window);
    assert_eq!(got, ranges, "{what}: candidate ranges {:?}", view.window);
    for &i in &want.visible_ids {
        let (lo, hi) = ranges[m.spans[i as usize].thread as usize];
        assert!(
            (lo..hi).contains(&i),
            "{what}: visible span {i} outside [{lo}, {hi})"
        );
    }
    // The mode: the sweep's grid and the compaction's live rows.
    let candidates: u32 = ranges.iter().map(|(lo, hi)| hi - lo).sum();
    let swept = candidates > m.spans.len() as u32 / 2;
    let live = read(ctx, &b.live_total, 1)[0];
    let sweep_groups = read(ctx, &b.sweep_args, 3)[0];
    let expected = if swept {
        m.spans.len() as u32
    } else {
        candidates
    };
    assert_eq!(live, expected, "{what}: live rows");
    assert_eq!(
        sweep_groups > 0,
        swept && !m.spans.is_empty(),
        "{what}: sweep grid"
    );
    swept
}

#[test]
fn csr_matches_the_oracle() {
    let ctx = ctx();
    for (seed, n) in [(1, 0), (2, 1), (3, 255), (4, 257), (5, 1500)] {
        let m = random_trace(seed, n);
        let mut f =
            TraceFrame::new(&ctx.device, &ctx.queue, &m, TraceFrameConfig::exact(&m, 3)).unwrap();
        submit(&ctx, |e| f.encode_build(e).unwrap());
        let c = f.config();
        let want = cpu::csr(c.span_capacity as usize, &m.dependencies);
        let b = f.buffers();
        let s = c.span_capacity as usize + 1;
        let d = m.dependencies.len();
        assert_eq!(
            read(&ctx, &b.forward_offsets, s),
            want.forward_offsets,
            "n={n}"
        );
        assert_eq!(
            read(&ctx, &b.reverse_offsets, s),
            want.reverse_offsets,
            "n={n}"
        );
        assert_eq!(
            read(&ctx, &b.forward_neighbors, d),
            want.forward_neighbors,
            "n={n}"
        );
        assert_eq!(
            read(&ctx, &b.reverse_neighbors, d),
            want.reverse_neighbors,
            "n={n}"
        );
    }
}

#[test]
fn random_frames_match_the_oracle_without_recompiling() {
    let ctx = ctx();
    let mut r = rand::rngs::StdRng::seed_from_u64(99);
    for (seed, n) in [
        (10, 0),
        (11, 1),
        (12, 2),
        (13, 255),
        (14, 256),
        (15, 257),
        (16, 2000),
        // Past one stride of count_visible's fixed grid (16 × 256 on CPU adapters).
        (17, 9000),
    ] {
        let m = random_trace(seed, n);
        for compact_visible in [true, false] {
            let config = TraceFrameConfig {
                compact_visible,
                ..TraceFrameConfig::exact(&m, 3)
            };
            let mut f = TraceFrame::new(&ctx.device, &ctx.queue, &m, config).unwrap();
            submit(&ctx, |e| f.encode_build(e).unwrap());
            check_frame(&ctx, &mut f, &m, &TraceView::default(), "default view");
            let compiled = f.pipelines_created();
            for k in 0..12 {
                let view = random_view(&mut r, &m, config.max_hops);
                let what = format!("n={n} compact {compact_visible} view {k}");
                check_frame(&ctx, &mut f, &m, &view, &what);
            }
            assert_eq!(
                f.pipelines_created(),
                compiled,
                "a view change compiled a pipeline"
            );
        }
    }
}

#[test]
fn padded_capacity_and_reload_give_the_same_frames() {
    let ctx = ctx();
    let m = random_trace(21, 600);
    let small = random_trace(22, 100);
    let mut config = TraceFrameConfig::exact(&m, 4);
    config.span_capacity += 300;
    config.dependency_capacity += 77;
    config.thread_capacity += 5;
    config.process_capacity += 3;
    let mut f = TraceFrame::new(&ctx.device, &ctx.queue, &m, config).unwrap();
    submit(&ctx, |e| f.encode_build(e).unwrap());
    let mut r = rand::rngs::StdRng::seed_from_u64(5);
    for k in 0..6 {
        let view = random_view(&mut r, &m, 4);
        check_frame(&ctx, &mut f, &m, &view, &format!("padded view {k}"));
    }
    // A smaller trace loaded into the same frame: an explicit reload, no recompilation.
    let compiled = f.pipelines_created();
    f.load(&ctx.queue, &small).unwrap();
    submit(&ctx, |e| f.encode_build(e).unwrap());
    for k in 0..6 {
        let view = random_view(&mut r, &small, 4);
        check_frame(&ctx, &mut f, &small, &view, &format!("reloaded view {k}"));
    }
    assert_eq!(f.pipelines_created(), compiled);
    // Beyond the capacity: a named error, never a silent reallocation.
    let big = random_trace(23, 1000);
    assert!(matches!(
        f.load(&ctx.queue, &big),
        Err(TraceGpuError::Capacity { what: "spans", .. })
    ));
    let too_many_hops = TraceView {
        focus: Some(Focus {
            seeds: vec![0],
            hops: 5,
            direction: FocusDirection::Both,
        }),
        ..Default::default()
    };
    assert!(matches!(
        f.write_view(&ctx.queue, &too_many_hops),
        Err(TraceGpuError::Capacity {
            what: "focus hops",
            ..
        })
    ));
}

#[test]
fn corner_cases_window_edges_collapse_focus_and_pick() {
    let ctx = ctx();
    // Two processes (one metadata-only), nested spans, a zero-duration span, an overlap,
    // an unfinished B, a flow cycle and a flow to a nested span.
    let m = parse_chrome_trace(
        br#"[
        {"ph":"X","name":"root","pid":1,"tid":1,"ts":0,"dur":100},
        {"ph":"X","name":"child","pid":1,"tid":1,"ts":10,"dur":20},
        {"ph":"X","name":"leaf","pid":1,"tid":1,"ts":12,"dur":5},
        {"ph":"X","name":"zero","pid":1,"tid":2,"ts":50,"dur":0},
        {"ph":"X","name":"a","pid":1,"tid":2,"ts":60,"dur":10},
        {"ph":"X","name":"b","pid":1,"tid":2,"ts":65,"dur":10},
        {"ph":"B","name":"open","pid":2,"tid":1,"ts":80},
        {"ph":"M","name":"process_name","pid":3,"args":{"name":"empty"}},
        {"ph":"s","id":1,"pid":1,"tid":1,"ts":13},
        {"ph":"f","bp":"e","id":1,"pid":1,"tid":2,"ts":60},
        {"ph":"s","id":2,"pid":1,"tid":2,"ts":61},
        {"ph":"f","bp":"e","id":2,"pid":1,"tid":1,"ts":14},
        {"ph":"s","id":3,"pid":1,"tid":2,"ts":50},
        {"ph":"f","bp":"e","id":3,"pid":2,"tid":1,"ts":90}
        ]"#,
        IngestOptions::default(),
    )
    .unwrap();
    let id = |n: &str| {
        let g = m.names.iter().position(|x| x == n).unwrap() as u32;
        m.spans.iter().position(|s| s.group == g).unwrap() as u32
    };
    let mut f =
        TraceFrame::new(&ctx.device, &ctx.queue, &m, TraceFrameConfig::exact(&m, 2)).unwrap();
    submit(&ctx, |e| f.encode_build(e).unwrap());
    let compiled = f.pipelines_created();
    let us = 1000u64;
    let views = [
        // Spans exactly on the window edges are in: root ends at 100, "open" starts at 80.
        TraceView {
            window: (100 * us, 100 * us),
            ..Default::default()
        },
        TraceView {
            window: (17 * us, 50 * us),
            ..Default::default()
        },
        // Collapsed thread: only lane 0; the leaf's edge routes to the root.
        TraceView {
            collapsed_threads: [0].into(),
            ..Default::default()
        },
        // Collapsed process: one activity row of lane-0 spans.
        TraceView {
            collapsed_processes: [0].into(),
            pick: Some(Pick::Row {
                time: 66 * us,
                row: 0,
            }),
            ..Default::default()
        },
        // Focus one hop forward from the leaf, then both ways.
        TraceView {
            focus: Some(Focus {
                seeds: vec![id("leaf")],
                hops: 1,
                direction: FocusDirection::Forward,
            }),
            ..Default::default()
        },
        TraceView {
            focus: Some(Focus {
                seeds: vec![id("a"), 999],
                hops: 2,
                direction: FocusDirection::Both,
            }),
            pick: Some(Pick::Thread {
                time: 13 * us,
                thread: 0,
            }),
            ..Default::default()
        },
        TraceView {
            groups: 0b101,
            min_duration: 5 * us,
            pick: Some(Pick::Thread {
                time: 12 * us,
                thread: 0,
            }),
            ..Default::default()
        },
    ];
    for (k, v) in views.iter().enumerate() {
        check_frame(&ctx, &mut f, &m, v, &format!("corner view {k}"));
    }
    // The innermost span under the pointer is the leaf.
    let want = cpu::frame(&m, &views[6], 64);
    assert_eq!(want.picked, Some(id("leaf")));
    assert_eq!(f.pipelines_created(), compiled);
}

#[test]
fn name_statistics_are_exact() {
    let ctx = ctx();
    let torch = parse_chrome_trace(
        include_bytes!("data/torch_small.json"),
        IngestOptions::default(),
    )
    .unwrap();
    for m in [torch, random_trace(31, 0), random_trace(32, 3000)] {
        let f =
            TraceFrame::new(&ctx.device, &ctx.queue, &m, TraceFrameConfig::exact(&m, 1)).unwrap();
        let names = m.names.len().max(1) as u64;
        let out = |label: &str, words: u64| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: words * 4,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        };
        let (cb, tb, sb) = (out("c", names), out("t", 2 * names), out("s", 2 * names));
        let mut g = CommandGraph::new("stats", &ctx.device);
        let n = m.spans.len() as u64;
        let mut view = |name: &str, b: &wgpu::Buffer, rows: u64| {
            let h = g
                .import_buffer(
                    gpugraph_command::BufferDescriptor::new(name, b.size(), b.usage()),
                    b,
                )
                .unwrap();
            g.create_packed_view(h, VectorFormat::Uint32, rows).unwrap()
        };
        let stats = NameStatistics {
            id: "stats".into(),
            spans: view("spans", &f.buffers().spans, 8 * n),
            parents: view("parents", &f.buffers().parents, n),
            span_count: n as u32,
            names: m.names.len() as u32,
            counts: view("counts", &cb, names),
            totals: view("totals", &tb, 2 * names),
            self_times: view("self", &sb, 2 * names),
        };
        stats.add_to_graph(&mut g).unwrap();
        let mut compiled = g.compile().unwrap();
        submit(&ctx, |e| {
            compiled.encode(e, &Default::default()).unwrap();
        });
        let want = cpu::name_stats(&m);
        let (c, t, s) = (
            read(&ctx, &cb, m.names.len()),
            read(&ctx, &tb, 2 * m.names.len()),
            read(&ctx, &sb, 2 * m.names.len()),
        );
        for (g, w) in want.iter().enumerate() {
            let wide = |v: &[u32]| u64::from(v[2 * g]) | (u64::from(v[2 * g + 1]) << 32);
            assert_eq!(c[g], w.count, "{}", m.names[g]);
            assert_eq!(wide(&t), w.total, "{}", m.names[g]);
            assert_eq!(wide(&s) as i64, w.self_time, "{}", m.names[g]);
        }
    }
}

#[test]
fn candidate_ranges_hold_every_visible_span_in_hard_layouts() {
    let ctx = ctx();
    // Thread 1: one huge span covering everything first (its running max end makes every
    // later span a candidate), then short ones; thread 2: zero-duration spans exactly on the
    // window edges; thread 3 of process 2: metadata only (no spans); process 3: one thread of
    // many spans beside threads of one span (uneven partitions).
    let mut ev = vec![
        r#"{"ph":"X","name":"huge","pid":1,"tid":1,"ts":0,"dur":10000}"#.to_string(),
        r#"{"ph":"M","name":"thread_name","pid":2,"tid":3,"args":{"name":"empty"}}"#.into(),
    ];
    for k in 0..40u64 {
        ev.push(format!(
            r#"{{"ph":"X","name":"short","pid":1,"tid":1,"ts":{},"dur":5}}"#,
            10 + k * 200
        ));
    }
    for ts in [100u64, 100, 200, 200, 300] {
        ev.push(format!(
            r#"{{"ph":"X","name":"zero","pid":1,"tid":2,"ts":{ts},"dur":0}}"#
        ));
    }
    for k in 0..300u64 {
        ev.push(format!(
            r#"{{"ph":"X","name":"many","pid":3,"tid":1,"ts":{},"dur":7}}"#,
            k * 31
        ));
    }
    for tid in 2..6 {
        ev.push(format!(
            r#"{{"ph":"X","name":"one","pid":3,"tid":{tid},"ts":{},"dur":3}}"#,
            tid * 1000
        ));
    }
    let json = format!("[{}]", ev.join(","));
    let m = parse_chrome_trace(json.as_bytes(), IngestOptions::default()).unwrap();
    assert!(
        m.threads.iter().any(|t| t.spans.is_empty()),
        "an empty thread"
    );
    let us = 1000u64;
    let (min, max) = m.spans.iter().fold((u64::MAX, 0), |(a, b), s| {
        (a.min(s.start()), b.max(s.end()))
    });
    let mut windows = vec![
        (100 * us, 200 * us),
        (200 * us, 200 * us),
        (100 * us, 100 * us - 1),
        (0, 0),
        (min, max),
        (max, max),
        (max + 1, u64::MAX),
        (5000 * us, 5005 * us),
        (300 * us + 1, 310 * us),
    ];
    let mut r = rand::rngs::StdRng::seed_from_u64(77);
    for _ in 0..8 {
        let a = rand::Rng::random_range(&mut r, min..=max + 10);
        let w = rand::Rng::random_range(&mut r, 0..3000 * us);
        windows.push((a, a.saturating_add(w)));
    }
    // With and without the visible-ID compaction: the windows switch between the candidate
    // and the sweep passes, so each unmark clears the previous frame's flagged candidates.
    for compact_visible in [true, false] {
        let config = TraceFrameConfig {
            compact_visible,
            ..TraceFrameConfig::exact(&m, 1)
        };
        let mut f = TraceFrame::new(&ctx.device, &ctx.queue, &m, config).unwrap();
        submit(&ctx, |e| f.encode_build(e).unwrap());
        let compiled = f.pipelines_created();
        let mut modes = [0, 0];
        for (k, &window) in windows.iter().enumerate() {
            for collapse in [false, true] {
                let view = TraceView {
                    window,
                    collapsed_processes: if collapse { [0].into() } else { [].into() },
                    ..Default::default()
                };
                let what = format!("compact {compact_visible} hard window {k} {window:?}");
                modes[usize::from(check_frame(&ctx, &mut f, &m, &view, &what))] += 1;
            }
        }
        assert!(modes[0] > 0 && modes[1] > 0, "both passes ran: {modes:?}");
        assert_eq!(f.pipelines_created(), compiled, "a window change compiled");
    }
}

#[test]
fn thread_ranges_out_of_order_are_a_named_error() {
    let ctx = ctx();
    let mut m = random_trace(31, 50);
    let config = TraceFrameConfig::exact(&m, 1);
    // Starts within a thread that decrease: the binary searches would skip spans.
    let start = |i: u32| m.spans[i as usize].start();
    let t = m
        .threads
        .iter()
        .position(|t| t.spans.len() >= 2 && start(t.spans.start) < start(t.spans.end - 1))
        .unwrap();
    let r = m.threads[t].spans.clone();
    m.spans.swap(r.start as usize, r.end as usize - 1);
    let err = TraceFrame::new(&ctx.device, &ctx.queue, &m, config).err();
    assert!(
        matches!(
            err,
            Some(TraceGpuError::View {
                what: "thread span ranges",
                ..
            })
        ),
        "{err:?}"
    );
}

#[test]
fn edge_endpoints_walk_to_visible_ancestors_within_the_bound() {
    let ctx = ctx();
    // Thread 1: a chain five deep (root ⊃ a ⊃ b ⊃ c ⊃ leaf); thread 2: one long span. Flows
    // leaf → other and other → c (at 70 µs: in c, past the leaf's end), so both edge
    // directions start or end deep in the chain.
    let m = parse_chrome_trace(
        br#"[
        {"ph":"X","name":"root","pid":1,"tid":1,"ts":0,"dur":100},
        {"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":90},
        {"ph":"X","name":"b","pid":1,"tid":1,"ts":2,"dur":80},
        {"ph":"X","name":"c","pid":1,"tid":1,"ts":3,"dur":70},
        {"ph":"X","name":"leaf","pid":1,"tid":1,"ts":4,"dur":60},
        {"ph":"X","name":"other","pid":1,"tid":2,"ts":0,"dur":100},
        {"ph":"s","id":1,"pid":1,"tid":1,"ts":5},
        {"ph":"f","bp":"e","id":1,"pid":1,"tid":2,"ts":50},
        {"ph":"s","id":2,"pid":1,"tid":2,"ts":60},
        {"ph":"f","bp":"e","id":2,"pid":1,"tid":1,"ts":70}
        ]"#,
        IngestOptions::default(),
    )
    .unwrap();
    let id = |n: &str| {
        let g = m.names.iter().position(|x| x == n).unwrap() as u32;
        m.spans.iter().position(|s| s.group == g).unwrap() as u32
    };
    assert_eq!(m.dependencies.len(), 2, "{:?}", m.dependencies);
    let chain = m.spans[id("leaf") as usize].thread;
    let us = 1000u64;
    let views = [
        TraceView::default(),
        // Only lane 0 of the chain's thread: the leaf is four hidden links below the root.
        TraceView {
            collapsed_threads: [chain].into(),
            ..Default::default()
        },
        // Short spans hidden: the leaf and c route to b (two and one links).
        TraceView {
            min_duration: 75 * us,
            ..Default::default()
        },
        // Everything of the chain hidden (its root too): no visible ancestor at any bound.
        TraceView {
            min_duration: 95 * us,
            max_duration: 99 * us,
            ..Default::default()
        },
    ];
    for depth in 0..=5 {
        let mut config = TraceFrameConfig::exact(&m, 1);
        config.max_ancestor_depth = depth;
        let mut f = TraceFrame::new(&ctx.device, &ctx.queue, &m, config).unwrap();
        submit(&ctx, |e| f.encode_build(e).unwrap());
        for (k, v) in views.iter().enumerate() {
            check_frame(&ctx, &mut f, &m, v, &format!("depth {depth} view {k}"));
        }
        // The bound decides: the collapsed chain reaches its root from the leaf at 4 links.
        let want = cpu::frame(&m, &views[1], depth);
        let leaf_end = want.edge_ends[0].0;
        assert_eq!(
            leaf_end,
            if depth >= 4 { id("root") } else { NO_SPAN },
            "depth {depth}: {:?}",
            want.edge_ends
        );
    }
}

#[test]
fn a_picture_needs_the_visible_id_compaction() {
    let ctx = ctx();
    let m = random_trace(32, 20);
    let config = TraceFrameConfig {
        picture: Some((64, 32)),
        compact_visible: false,
        ..TraceFrameConfig::exact(&m, 1)
    };
    let err = TraceFrame::new(&ctx.device, &ctx.queue, &m, config).err();
    assert!(
        matches!(err, Some(TraceGpuError::View { what: "config", .. })),
        "{err:?}"
    );
}
