//! Shared by the GPU tests: a device (no adapter is a failure, never a skip), explicit
//! readback through the tables crate's helper, and random traces and views.
#![allow(dead_code)]
// Each test binary uses a part of the re-exported scaffolding.
#![allow(unused_imports)]

use std::collections::BTreeSet;

use gpugraph_command::GpuContext;
use gpugraph_trace::*;
use rand::{Rng, SeedableRng};

pub use gpugraph_testing::ctx;

pub fn read(ctx: &GpuContext, b: &wgpu::Buffer, words: usize) -> Vec<u32> {
    gpugraph_testing::read(ctx, b, 0, words)
}

pub fn submit(ctx: &GpuContext, f: impl FnOnce(&mut wgpu::CommandEncoder)) {
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    f(&mut enc);
    ctx.queue.submit([enc.finish()]);
}

/// A random Chrome trace: processes (some with metadata only), threads, nested `X` spans,
/// `B`/`E` pairs (some unbalanced), instants, zero durations, overlaps, and flows (cycles,
/// missing ends) — parsed by the real ingestion.
pub fn random_trace(seed: u64, spans: usize) -> TraceModel {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let procs = r.random_range(1..5u32);
    let mut ev = Vec::new();
    let base = 1_700_000_000_000_000u64;
    for p in 0..procs + 1 {
        ev.push(format!(
            r#"{{"ph":"M","name":"process_sort_index","pid":{p},"args":{{"sort_index":{}}}}}"#,
            r.random_range(0..3)
        ));
    }
    let mut placed = Vec::new();
    for i in 0..spans {
        let (p, t) = (r.random_range(0..procs), r.random_range(0..3u32));
        let ts = base + r.random_range(0..2_000u64);
        let dur = match r.random_range(0..10) {
            0 => 0,
            1..=3 => r.random_range(1..20),
            _ => r.random_range(1..400),
        };
        let kind = r.random_range(0..12);
        let name = format!("n{}", r.random_range(0..9));
        let ev_ = match kind {
            0 => format!(r#"{{"ph":"i","name":"{name}","pid":{p},"tid":{t},"ts":{ts}}}"#),
            1 => format!(
                r#"{{"ph":"B","name":"{name}","pid":{p},"tid":{t},"ts":{ts}}},{{"ph":"E","pid":{p},"tid":{t},"ts":{}}}"#,
                ts + dur
            ),
            2 if i % 5 == 0 => {
                format!(r#"{{"ph":"B","name":"{name}","pid":{p},"tid":{t},"ts":{ts}}}"#)
            }
            _ => format!(
                r#"{{"ph":"X","name":"{name}","pid":{p},"tid":{t},"ts":{ts}.{:03},"dur":{dur}}}"#,
                r.random_range(0..1000)
            ),
        };
        ev.push(ev_);
        placed.push((p, t, ts));
    }
    for k in 0..spans / 3 {
        let (a, b) = (
            placed[r.random_range(0..placed.len())],
            placed[r.random_range(0..placed.len())],
        );
        ev.push(format!(
            r#"{{"ph":"s","id":{k},"pid":{},"tid":{},"ts":{}}}"#,
            a.0, a.1, a.2
        ));
        if r.random_range(0..6) > 0 {
            ev.push(format!(
                r#"{{"ph":"f","bp":"e","id":{k},"pid":{},"tid":{},"ts":{}}}"#,
                b.0, b.1, b.2
            ));
        }
    }
    let text = format!("[{}]", ev.join(","));
    parse_chrome_trace(text.as_bytes(), IngestOptions::default()).unwrap()
}

pub fn random_view(r: &mut impl Rng, m: &TraceModel, max_hops: u32) -> TraceView {
    let n = m.spans.len() as u32;
    let mut v = TraceView::default();
    if r.random_bool(0.7) {
        let a = r.random_range(0..=m.end.max(1));
        let b = r.random_range(a..=m.end.max(1) + 5);
        v.window = (a, b);
    }
    if r.random_bool(0.3) {
        v.min_duration = r.random_range(0..50_000);
    }
    if r.random_bool(0.2) {
        v.max_duration = r.random_range(0..300_000);
    }
    if r.random_bool(0.3) {
        v.groups = r.random_range(0..8);
    }
    if r.random_bool(0.15) && !m.names.is_empty() {
        v.name = Some(r.random_range(0..m.names.len() as u32));
    }
    v.collapsed_processes = (0..m.processes.len() as u32)
        .filter(|_| r.random_bool(0.25))
        .collect::<BTreeSet<_>>();
    v.collapsed_threads = (0..m.threads.len() as u32)
        .filter(|_| r.random_bool(0.25))
        .collect();
    if r.random_bool(0.5) && n > 0 {
        v.focus = Some(Focus {
            seeds: (0..r.random_range(0..4))
                .map(|_| r.random_range(0..n + 2))
                .collect(),
            hops: r.random_range(0..=max_hops),
            direction: [
                FocusDirection::Forward,
                FocusDirection::Backward,
                FocusDirection::Both,
            ][r.random_range(0..3)],
        });
    }
    if n > 0 {
        let s = m.spans[r.random_range(0..n as usize)];
        let time = s.start() + r.random_range(0..=s.duration());
        v.pick = Some(if r.random_bool(0.5) {
            Pick::Thread {
                time,
                thread: s.thread,
            }
        } else {
            Pick::Row {
                time,
                row: r.random_range(0..8),
            }
        });
    }
    v
}
