//! Headless frame timings of the viewer: `frame_bench [SPANS] [FRAMES]` generates a trace of
//! about SPANS spans (4 processes × 8 threads of nested spans, as tests/browser/gen_trace.py
//! does), then draws FRAMES frames of a scripted zoom offscreen (1280 × 760) through
//! `Viewer::render`, each waited for, and prints the median full frame (frame graph + span
//! draw + UI), the median of the frame graph alone and the median redraw (a frame with
//! unchanged graph inputs: the span draw and UI on the graphs' kept results; the span LOD
//! graph is then about full − graph − redraw). Where the adapter has timestamp
//! queries, one more frame graph and span LOD graph are profiled: the JSON's `nodes` holds
//! the twelve slowest nodes' GPU milliseconds of both, `graph_gpu_ms` the frame graph's sum
//! over all its nodes and `lod_gpu_ms` the LOD graph's. Uses the adapter
//! `GpuContext::new` picks (`WGPU_BACKEND`, `GPUGRAPH_ADAPTER`).

use std::time::Instant;

use gpugraph_command::GpuContext;
use gpugraph_trace::{parse_chrome_trace, IngestOptions};
use gpugraph_viewer::{InputEvent, Viewer};

fn trace(spans: usize) -> String {
    let (processes, threads) = (4u64, 8u64);
    let steps = (spans as u64 / (processes * threads) / 7).max(1);
    let names = ["phase", "kernel", "copy"];
    let mut ev = Vec::with_capacity(spans + 64);
    fn children(
        ev: &mut Vec<String>,
        names: &[&str; 3],
        p: u64,
        t: u64,
        start: u64,
        dur: u64,
        depth: usize,
    ) {
        if depth > 2 {
            return;
        }
        let half = dur / 2;
        for c in 0..2 {
            let s = start + c * half + 1;
            let d = half.saturating_sub(3).max(1);
            ev.push(format!(
                r#"{{"ph":"X","name":"{}","pid":{p},"tid":{t},"ts":{s},"dur":{d}}}"#,
                names[(depth + c as usize) % 3]
            ));
            children(ev, names, p, t, s, d, depth + 1);
        }
    }
    for p in 1..=processes {
        for t in 1..=threads {
            let offset = (p * 7 + t * 3) % 20;
            for k in 0..steps {
                let ts = offset + k * 100;
                ev.push(format!(
                    r#"{{"ph":"X","name":"step","pid":{p},"tid":{t},"ts":{ts},"dur":90}}"#
                ));
                children(&mut ev, &names, p, t, ts, 90, 1);
            }
        }
    }
    format!("[{}]", ev.join(","))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let spans: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let frames: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(12);
    let t = Instant::now();
    let model = parse_chrome_trace(trace(spans).as_bytes(), IngestOptions::default())?;
    let parse_ms = t.elapsed().as_secs_f64() * 1e3;
    let ctx = GpuContext::new()?;
    let (w, h) = (1280, 760);
    let target = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("target"),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        view_formats: &[],
    });
    let view = target.create_view(&Default::default());
    let n = model.spans.len();
    let t = Instant::now();
    let mut v = Viewer::new(
        ctx.device.clone(),
        ctx.queue.clone(),
        wgpu::TextureFormat::Rgba8Unorm,
        model,
        (w, h),
        1.0,
    )?;
    let wait = |v: &mut Viewer| {
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .expect("poll");
        v.poll();
    };
    v.render(&view)?;
    wait(&mut v);
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let plot = v.regions().plot;
    let (mut full, mut graph, mut visible) = (Vec::new(), Vec::new(), Vec::new());
    let mut redraw = Vec::new();
    for i in 0..frames {
        let dy = if i < frames / 2 { -150.0 } else { 150.0 };
        v.handle(InputEvent::Wheel {
            x: plot.x + plot.w * 0.5,
            y: plot.y + 40.0,
            dx: 0.0,
            dy,
        });
        let t = Instant::now();
        v.render(&view)?;
        wait(&mut v);
        full.push(t.elapsed().as_secs_f64() * 1e3);
        visible.push(v.stats().visible.unwrap_or(0));
        let t = Instant::now();
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        v.frame_mut().encode(&mut enc)?;
        ctx.queue.submit([enc.finish()]);
        wait(&mut v);
        graph.push(t.elapsed().as_secs_f64() * 1e3);
        // Unchanged inputs: the graphs' results are reused, so this is the span draw and UI.
        v.state_mut();
        let t = Instant::now();
        v.render(&view)?;
        wait(&mut v);
        redraw.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut nodes = String::new();
    if ctx
        .device
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY)
    {
        // The frame graph, then the span LOD graph over its results, in one submission.
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        v.frame_mut().encode_profiled(&mut enc)?;
        v.span_lod_mut().encode_profiled(&mut enc)?;
        ctx.queue.submit([enc.finish()]);
        let times = |t: Vec<gpugraph_command::NodeTiming>| -> Vec<(String, f64)> {
            t.into_iter()
                .filter_map(|n| Some((n.node, n.gpu_ns? / 1e6)))
                .collect()
        };
        let mut t = times(v.frame_mut().read_timings(&ctx.queue)?);
        let lod = times(v.span_lod_mut().read_timings(&ctx.queue)?);
        let total: f64 = t.iter().map(|n| n.1).sum();
        let lod_total: f64 = lod.iter().map(|n| n.1).sum();
        t.extend(lod);
        t.sort_by(|a, b| b.1.total_cmp(&a.1));
        let top: Vec<String> = t
            .iter()
            .take(12)
            .map(|(k, ms)| format!("{k:?}:{ms:.4}"))
            .collect();
        nodes = format!(
            ",\"graph_gpu_ms\":{total:.4},\"lod_gpu_ms\":{lod_total:.4},\"nodes\":{{{}}}",
            top.join(",")
        );
    }
    println!(
        "{{\"adapter\":{:?},\"spans\":{n},\"parse_ms\":{parse_ms:.1},\"new_and_first_frame_ms\":{first_ms:.1},\"frame_median_ms\":{:.2},\"frame_max_ms\":{:.2},\"graph_only_median_ms\":{:.2},\"redraw_median_ms\":{:.2},\"visible\":{visible:?}{nodes}}}",
        ctx.adapter.get_info().name,
        median(full.clone()),
        full.iter().copied().fold(0.0, f64::max),
        median(graph),
        median(redraw),
    );
    Ok(())
}
