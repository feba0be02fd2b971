//! `offscreen::render_offscreen` (what `gpugraph trace render` draws) on a real device
//! (lavapipe in CI; no adapter is a failure): the committed torch.profiler-shaped trace
//! drawn headless, its counts checked against the CPU oracle, and the picture checked where
//! things must be: label text in both columns of the lane-label gutter, tick labels on the
//! time axis, spans in their palette colors at the rows and times the layout oracle gives,
//! and the inspector panel only when asked for.

use std::path::PathBuf;

use gpugraph_testing::ctx;
use gpugraph_trace::{cpu, Focus, FocusDirection, IngestOptions, TraceModel, TraceView};
use gpugraph_viewer::camera::{Rect, PROCESS_COLUMN};
use gpugraph_viewer::gpu::ui::span_row;
use gpugraph_viewer::offscreen::{render_offscreen, OffscreenPicture, OffscreenView};

fn fixture() -> TraceModel {
    let rel = "gpugraph-trace/tests/data/torch_small.json";
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel);
    let path = if built.exists() {
        built
    } else {
        PathBuf::from("crates").join(rel)
    };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    gpugraph_trace::parse_chrome_trace(&bytes, IngestOptions::default()).unwrap()
}

/// Pixels of `p` inside `r` (logical = physical px at scale 1) for which `f` holds.
fn count(p: &OffscreenPicture, r: Rect, f: impl Fn([u8; 4]) -> bool) -> usize {
    let (x0, y0) = (r.x.max(0.0) as u32, r.y.max(0.0) as u32);
    let x1 = (r.right() as u32).min(p.width);
    let y1 = (r.bottom() as u32).min(p.height);
    (y0..y1)
        .flat_map(|y| (x0..x1).map(move |x| (x, y)))
        .filter(|&(x, y)| f(p.pixel(x, y)))
        .count()
}

/// Dark text (the labels' gray 30 and navy 20,40,110; the axis's gray 30).
fn ink(px: [u8; 4]) -> bool {
    px[0].max(px[1]).max(px[2]) < 120
}

/// The span shader's palette for name `name` in draw group 0, as 8-bit sRGB values.
fn palette(name: u32) -> [u8; 3] {
    let h = name.wrapping_mul(2_654_435_761);
    [h & 255, (h >> 8) & 255, (h >> 16) & 255]
        .map(|c| ((0.45 + 0.45 * c as f32 / 255.0) * 255.0).round() as u8)
}

fn close(a: [u8; 4], b: [u8; 3]) -> bool {
    (0..3).all(|k| a[k].abs_diff(b[k]) <= 2)
}

#[test]
fn the_picture_has_labels_an_axis_and_spans_in_place() {
    let ctx = ctx();
    let model = fixture();
    let view = OffscreenView {
        size: (960, 360),
        ..Default::default()
    };
    let p = render_offscreen(&ctx.device, &ctx.queue, model.clone(), &view).unwrap();
    assert_eq!((p.width, p.height, p.rgba.len()), (960, 360, 960 * 360 * 4));
    let tv = TraceView {
        window: (0, model.end),
        ..Default::default()
    };
    let want = cpu::frame(&model, &tv, 64);
    assert_eq!(p.visible_spans as usize, want.visible_ids.len());
    assert_eq!(p.edges as usize, want.visible_edges.len());
    assert_eq!((p.visible_spans, p.edges), (51, 9));
    let r = p.regions;
    assert!(r.inspector.is_none(), "no inspector unless asked for");

    // Labels: navy process names in the process column, gray thread names beside them.
    let gutter = r.labels;
    let col = PROCESS_COLUMN.min(gutter.w * 0.5);
    let processes = Rect::new(gutter.x, gutter.y, col, gutter.h);
    let threads = Rect::new(gutter.x + col, gutter.y, gutter.w - col, gutter.h);
    let navy = count(&p, processes, |px| ink(px) && px[2] > px[0] + 30);
    let gray = count(&p, threads, |px| {
        ink(px) && px[0].abs_diff(px[2]) < 12 && px[0].abs_diff(px[1]) < 12
    });
    assert!(navy > 60, "process label pixels: {navy}");
    assert!(gray > 100, "thread label pixels: {gray}");
    // The axis carries tick labels.
    let axis = count(&p, r.axis, ink);
    assert!(axis > 40, "axis label pixels: {axis}");

    // Spans: every ordinary span at least 12 px wide, sampled along its middle, is in its
    // name's palette color at the row the layout oracle gives.
    let cam_w = model.end as f32;
    let plot = r.plot;
    let mut checked = 0;
    for i in 0..model.spans.len() as u32 {
        let s = model.spans[i as usize];
        if s.flags().draw_group() != 0 {
            continue;
        }
        let row = span_row(&model, &tv, i).unwrap();
        let y = plot.y + (row as f32 + 0.5) * p.row_height;
        if y >= plot.bottom() - 1.0 {
            continue;
        }
        let x0 = plot.x + s.start() as f32 / cam_w * plot.w;
        let x1 = plot.x + s.end() as f32 / cam_w * plot.w;
        if x1 - x0 < 12.0 {
            continue;
        }
        let samples: Vec<[u8; 4]> = [0.3f32, 0.5, 0.7]
            .iter()
            .map(|f| p.pixel((x0 + f * (x1 - x0)) as u32, y as u32))
            .collect();
        let want = palette(s.group);
        let hits = samples.iter().filter(|&&px| close(px, want)).count();
        assert!(
            hits >= 2,
            "span {i} ({}) on row {row}: {samples:?}, its palette color is {want:?}",
            model.name_of(i)
        );
        checked += 1;
    }
    assert!(
        checked >= 9,
        "only {checked} spans were wide enough to check"
    );
    // Colored pixels in the plot, none on the axis (gray text on gray).
    let colored = |px: [u8; 4]| px[0].max(px[1]).max(px[2]) - px[0].min(px[1]).min(px[2]) > 25;
    assert!(count(&p, plot, colored) > 2000);
    assert_eq!(count(&p, r.axis, colored), 0);
}

#[test]
fn the_inspector_collapse_focus_and_filter() {
    let ctx = ctx();
    let model = fixture();
    let base = OffscreenView {
        size: (1000, 400),
        inspector: true,
        ..Default::default()
    };
    let p = render_offscreen(&ctx.device, &ctx.queue, model.clone(), &base).unwrap();
    let panel = p.regions.inspector.expect("the inspector");
    let area = (panel.w * panel.h) as usize;
    let dark = count(&p, panel, |px| px[0] == 34 && px[1] == 34 && px[2] == 34);
    let text = count(&p, panel, |px| px[0] > 120);
    assert!(dark * 10 > area * 7, "the panel is dark: {dark} of {area}");
    assert!(text > 300, "the panel has text: {text}");

    // Collapse, focus (more hops than the viewer's keys reach) and a duration filter: the
    // counts are the CPU oracle's.
    let seed = model
        .dependencies
        .first()
        .map(|d| d.from)
        .expect("the fixture has flows");
    let cases = [
        OffscreenView {
            collapsed_processes: [0].into(),
            ..base.clone()
        },
        OffscreenView {
            focus: Some(Focus {
                seeds: vec![seed],
                hops: 12,
                direction: FocusDirection::Both,
            }),
            ..base.clone()
        },
        OffscreenView {
            min_duration: 1_000_000,
            window: Some((model.end / 4, model.end / 2)),
            ..base.clone()
        },
    ];
    for v in cases {
        let p = render_offscreen(&ctx.device, &ctx.queue, model.clone(), &v).unwrap();
        let tv = TraceView {
            window: v.window.unwrap_or((0, model.end)),
            collapsed_processes: v.collapsed_processes.clone(),
            focus: v.focus.clone(),
            min_duration: v.min_duration,
            ..Default::default()
        };
        let want = cpu::frame(&model, &tv, 64);
        assert_eq!(
            (p.visible_spans as usize, p.edges as usize),
            (want.visible_ids.len(), want.visible_edges.len()),
            "{v:?}"
        );
    }
    // An empty picture is an error, not a panic.
    let bad = OffscreenView {
        size: (0, 10),
        ..base
    };
    assert!(render_offscreen(&ctx.device, &ctx.queue, model, &bad).is_err());
}
