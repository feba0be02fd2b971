//! `gpugraph trace info|stats|pick|render FILE`: Chrome Trace Event Format files (`.json`,
//! `.json.gz`; torch.profiler, Chromium, Perfetto JSON) through `gpugraph-trace`; `serve` and
//! `view` (the interactive viewer) are in `trace_view.rs`. `render` draws the viewer's own
//! picture headless (`gpugraph_viewer::offscreen`: lanes, process and thread labels, the
//! time axis, edges) and writes it as a PNG.
//!
//! Opening (`trace_load.rs`): the columnar cache in `$XDG_CACHE_HOME/gpugraph/traces` (else `~/.cache/...`),
//! keyed by the file's absolute path and stamped with its length and mtime, is read when it is
//! fresh; otherwise the JSON is parsed (in parallel) and the cache written. `--no-cache`
//! skips both. Times print in the file's unit (µs for Chrome JSON) unless `--unit` says
//! otherwise; sums are exact integer ticks (ns) converted once at the end.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use gpugraph_command::{wgpu, BufferDescriptor, CommandGraph, VectorFormat};
use gpugraph_trace::chrome::{args_at, gunzip, is_gzip};
use gpugraph_trace::frame::{TraceFrame, TraceFrameConfig};
use gpugraph_trace::stats::NameStatistics;
use gpugraph_trace::{Pick, TraceKey, TraceModel, TraceView, NO_SPAN};
use gpugraph_viewer::offscreen::OffscreenView;
use serde_json::json;

use crate::gpu::Gpu;
use crate::output::PendingFile;
use crate::trace_load::{load, Common, Unit};

/// `gpugraph trace ...`.
#[derive(Subcommand)]
pub enum TraceCommand {
    /// Spans, processes, threads, flow links, time range, counts by category and by event
    /// kind, and what was skipped.
    Info(InfoArgs),
    /// Count, total and self time per name, top first (an exact GPU group aggregation).
    Stats(StatsArgs),
    /// The innermost span of thread PID:TID containing TIME (GPU picking): name, ts, dur, args.
    Pick(PickArgs),
    /// Draw the viewer's picture of one frame offscreen into a PNG: spans on thread lanes,
    /// labelled processes and threads, a time axis, dependency edges; with a window,
    /// collapsed processes, dependency focus and a duration filter (and `--inspector`).
    Render(RenderArgs),
    /// Serve the interactive viewer (the web build, `make web`) and this trace on
    /// http://127.0.0.1:PORT/ (only the viewer's files and the trace are reachable).
    Serve(crate::trace_view::ServeArgs),
    /// Open the interactive viewer in a window.
    View(crate::trace_view::ViewArgs),
}

/// `trace render`.
#[derive(Args)]
pub struct RenderArgs {
    #[command(flatten)]
    common: Common,
    /// The PNG to write.
    #[arg(long)]
    out: PathBuf,
    /// Time window T0,T1 in the file's unit (absolute, or relative to the trace start).
    #[arg(long)]
    window: Option<String>,
    /// Processes to collapse into one activity row (PIDs as written, comma-separated).
    #[arg(long)]
    collapse: Option<String>,
    /// Keep only spans within --hops dependency links of this canonical span ID.
    #[arg(long)]
    focus: Option<u32>,
    /// Dependency links for --focus (both directions).
    #[arg(long, default_value_t = 2)]
    hops: u32,
    /// Duration filter: 'dur>X' or 'dur<X' with X a number and ns/us/ms/s (default us).
    #[arg(long)]
    filter: Option<String>,
    /// Picture size WIDTHxHEIGHT.
    #[arg(long, default_value = "1600x900")]
    size: String,
    /// Also draw the viewer's inspector panel (counts, compiles, the frame graph's nodes) at
    /// the right.
    #[arg(long)]
    inspector: bool,
}

/// `trace info`.
#[derive(Args)]
pub struct InfoArgs {
    #[command(flatten)]
    common: Common,
}

/// `trace stats`.
#[derive(Args)]
pub struct StatsArgs {
    #[command(flatten)]
    common: Common,
    /// Grouping key (only `name` for now).
    #[arg(long, default_value = "name")]
    by: String,
    /// Rows printed (0: all).
    #[arg(long, default_value_t = 20)]
    top: usize,
}

/// `trace pick`.
#[derive(Args)]
pub struct PickArgs {
    #[command(flatten)]
    common: Common,
    /// Time in the file's unit: absolute as in the file, or relative to the trace start when
    /// below its first timestamp.
    #[arg(long)]
    at: String,
    /// PID:TID as written in the file (numbers or strings).
    #[arg(long)]
    thread: String,
}

/// Runs a trace command.
pub fn run(cmd: TraceCommand) -> Result<()> {
    match cmd {
        TraceCommand::Info(a) => info(&a),
        TraceCommand::Stats(a) => stats(&a),
        TraceCommand::Pick(a) => pick(&a),
        TraceCommand::Render(a) => render(&a),
        TraceCommand::Serve(a) => crate::trace_view::serve(&a),
        TraceCommand::View(a) => crate::trace_view::view(&a),
    }
}

fn print_json(v: &serde_json::Value) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn info(a: &InfoArgs) -> Result<()> {
    let c = &a.common;
    let l = load(c)?;
    let m = &l.model;
    let r = &m.report;
    let u = c.unit;
    let threads: Vec<serde_json::Value> = (0..m.threads.len() as u32)
        .map(|t| {
            let th = &m.threads[t as usize];
            json!({"thread": m.thread_label(t), "spans": th.spans.len(), "lanes": th.lanes})
        })
        .collect();
    let processes: Vec<serde_json::Value> = m
        .processes
        .iter()
        .map(|p| json!({"pid": p.pid.to_string(), "name": p.name, "threads": p.threads.len(), "spans": p.spans.len()}))
        .collect();
    let skipped: serde_json::Map<String, serde_json::Value> = r
        .skipped
        .iter()
        .map(|(k, s)| {
            (
                k.clone(),
                json!({"count": s.count, "first_offset": s.first_offset}),
            )
        })
        .collect();
    let v = json!({
        "file": c.file.display().to_string(),
        "loaded_from_cache": l.from_cache,
        "load_seconds": l.seconds,
        "events": r.events,
        "spans": m.spans.len(),
        "processes": m.processes.len(),
        "threads": m.threads.len(),
        "flow_links": m.dependencies.len(),
        "names": m.names.len(),
        "unit": u.name(),
        "start": u.exact(i128::from(m.origin)),
        "end": u.exact(i128::from(m.origin) + i128::from(m.end)),
        "duration": m.end as f64 / u.ticks(),
        "by_kind": r.by_kind,
        "by_category": r.by_category,
        "skipped": skipped,
        "unmatched_begins": r.unmatched_begins,
        "unmatched_ends": r.unmatched_ends,
        "zero_duration": r.zero_duration,
        "overlapping": r.overlapping,
        "flow_events": r.flow_events,
        "flow_missing_start": r.flow_missing_start,
        "flow_missing_end": r.flow_missing_end,
        "flow_unbound": r.flow_unbound,
        "bind_unmatched": r.bind_unmatched,
        "display_time_unit": r.display_time_unit,
        "process_list": processes,
        "thread_list": threads,
    });
    if c.json {
        return print_json(&v);
    }
    println!("{}", c.file.display());
    println!(
        "  {} events, {} spans, {} processes, {} threads, {} flow links, {} names ({} in {:.3} s)",
        r.events,
        m.spans.len(),
        m.processes.len(),
        m.threads.len(),
        m.dependencies.len(),
        m.names.len(),
        if l.from_cache { "cache" } else { "parsed" },
        l.seconds
    );
    println!(
        "  time: {} .. {} {u} ({} {u})",
        u.exact(i128::from(m.origin)),
        u.exact(i128::from(m.origin) + i128::from(m.end)),
        u.exact(i128::from(m.end)),
        u = u.name()
    );
    let line = |title: &str, map: &std::collections::BTreeMap<String, u64>| {
        let parts: Vec<String> = map.iter().map(|(k, n)| format!("{k:?}: {n}")).collect();
        println!("  {title}: {}", parts.join(", "));
    };
    line("by kind", &r.by_kind);
    line("by category", &r.by_category);
    for (k, s) in &r.skipped {
        println!(
            "  skipped {}: {k} (first at byte {})",
            s.count, s.first_offset
        );
    }
    println!(
        "  unmatched B {} / E {}, zero-duration {}, overlapping {}, flows missing start {} / end {}, unbound {}, unmatched bind IDs {}",
        r.unmatched_begins,
        r.unmatched_ends,
        r.zero_duration,
        r.overlapping,
        r.flow_missing_start,
        r.flow_missing_end,
        r.flow_unbound,
        r.bind_unmatched
    );
    Ok(())
}

fn stats(a: &StatsArgs) -> Result<()> {
    if a.by != "name" {
        bail!("--by {}: only 'name' is supported", a.by);
    }
    let c = &a.common;
    let m = load(c)?.model;
    let gpu = Gpu::open()?;
    let n = m.spans.len() as u64;
    let names = m.names.len().max(1) as u64;
    let spans = gpu.upload("spans", bytemuck::cast_slice(&m.spans));
    let parents = gpu.upload("parents", &m.parents);
    let outs = [names, 2 * names, 2 * names].map(|w| gpu.upload("stats", &vec![0u32; w as usize]));
    let mut g = CommandGraph::new("trace-stats", gpu.device());
    let mut view = |name: &str, b: &wgpu::Buffer, rows: u64| -> Result<_> {
        let h = g.import_buffer(BufferDescriptor::new(name, b.size(), b.usage()), b)?;
        Ok(g.create_packed_view(h, VectorFormat::Uint32, rows)?)
    };
    let node = NameStatistics {
        id: "stats".into(),
        spans: view("spans", &spans, 8 * n)?,
        parents: view("parents", &parents, n)?,
        span_count: n as u32,
        names: m.names.len() as u32,
        counts: view("counts", &outs[0], names)?,
        totals: view("totals", &outs[1], 2 * names)?,
        self_times: view("self", &outs[2], 2 * names)?,
    };
    node.add_to_graph(&mut g)?;
    let mut compiled = g.compile()?;
    gpu.run_graph(&mut compiled, "trace stats")?;
    let counts = gpu.read_back(&outs[0], names)?;
    let totals = gpu.read_back(&outs[1], 2 * names)?;
    let selfs = gpu.read_back(&outs[2], 2 * names)?;
    let wide = |v: &[u32], g: usize| u64::from(v[2 * g]) | (u64::from(v[2 * g + 1]) << 32);
    let mut rows: Vec<(usize, u32, u64, i64)> = (0..m.names.len())
        .map(|g| (g, counts[g], wide(&totals, g), wide(&selfs, g) as i64))
        .collect();
    rows.sort_by(|x, y| y.2.cmp(&x.2).then(x.0.cmp(&y.0)));
    if a.top > 0 {
        rows.truncate(a.top);
    }
    let u = c.unit;
    if c.json {
        let list: Vec<_> = rows
            .iter()
            .map(|&(g, count, total, own)| {
                json!({"name": m.names[g], "count": count, "total": total as f64 / u.ticks(), "self": own as f64 / u.ticks()})
            })
            .collect();
        return print_json(&json!({"by": "name", "unit": u.name(), "rows": list}));
    }
    println!(
        "{:>10} {:>16} {:>16}  name",
        "count",
        format!("total {}", u.name()),
        format!("self {}", u.name())
    );
    for (g, count, total, own) in rows {
        println!(
            "{count:>10} {:>16.3} {:>16.3}  {}",
            total as f64 / u.ticks(),
            own as f64 / u.ticks(),
            m.names[g]
        );
    }
    Ok(())
}

fn parse_key(s: &str) -> TraceKey {
    s.parse::<i64>()
        .map(TraceKey::Num)
        .unwrap_or_else(|_| TraceKey::Str(s.to_string()))
}

fn pick(a: &PickArgs) -> Result<()> {
    let c = &a.common;
    let m = load(c)?.model;
    let Some((pid, tid)) = a.thread.split_once(':') else {
        bail!("--thread {}: expected PID:TID", a.thread);
    };
    let Some(thread) = m.find_thread(&parse_key(pid), &parse_key(tid)) else {
        bail!(
            "--thread {}: no such thread in {}",
            a.thread,
            c.file.display()
        );
    };
    let rel = relative_ticks(&m, &a.at, c.unit).context("--at")?;
    let gpu = Gpu::open()?;
    let mut frame = TraceFrame::new(
        gpu.device(),
        gpu.queue(),
        &m,
        TraceFrameConfig::exact(&m, 1),
    )?;
    let view = TraceView {
        pick: Some(Pick::Thread { time: rel, thread }),
        ..Default::default()
    };
    frame.write_view(gpu.queue(), &view)?;
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    frame.encode(&mut enc)?;
    gpu.submit_and_wait(enc.finish())?;
    let picked = gpu.read_back(&frame.buffers().pick, 2)?[1];
    let u = c.unit;
    if picked == NO_SPAN {
        if c.json {
            return print_json(&json!({"picked": null}));
        }
        println!("no span of {} contains {}", m.thread_label(thread), a.at);
        return Ok(());
    }
    let s = m.spans[picked as usize];
    let bytes = std::fs::read(&c.file)?;
    let text = if is_gzip(&bytes) {
        gunzip(&bytes)?
    } else {
        bytes
    };
    let args = args_at(&text, m.source_offsets[picked as usize]).unwrap_or_else(|| "{}".into());
    let args: serde_json::Value = serde_json::from_str(&args).unwrap_or(serde_json::Value::Null);
    let v = json!({
        "span": picked,
        "name": m.name_of(picked),
        "thread": m.thread_label(thread),
        "lane": s.lane(),
        "ts": u.exact(i128::from(m.origin) + i128::from(s.start())),
        "dur": s.duration() as f64 / u.ticks(),
        "unit": u.name(),
        "args": args,
    });
    if c.json {
        return print_json(&v);
    }
    println!(
        "{} (span {picked}, lane {}) on {}: ts {} dur {} {}",
        m.name_of(picked),
        s.lane(),
        m.thread_label(thread),
        u.exact(i128::from(m.origin) + i128::from(s.start())),
        u.exact(i128::from(s.duration())),
        u.name()
    );
    println!("  args: {}", v["args"]);
    Ok(())
}

/// Ticks since the origin of the time `text` in `unit`, parsed exactly (absolute when at
/// or past the first timestamp, else relative to it).
fn relative_ticks(m: &TraceModel, text: &str, unit: Unit) -> Result<u64> {
    // Exact decimal → ns as if microseconds, then scaled to the unit.
    let us = gpugraph_trace::chrome::event::micros_to_ticks(text)
        .with_context(|| format!("'{text}' is not a time"))?;
    let at = match unit {
        Unit::Ns => i128::from(us) / 1000,
        Unit::Us => i128::from(us),
        Unit::Ms => i128::from(us) * 1000,
        Unit::S => i128::from(us) * 1_000_000,
    };
    let rel = if at >= i128::from(m.origin) {
        at - i128::from(m.origin)
    } else {
        at
    };
    if rel < 0 {
        bail!("'{text}' is before the trace start");
    }
    Ok(u64::try_from(rel).unwrap_or(u64::MAX))
}

/// `dur>X` / `dur<X` → (min, max) ticks.
fn duration_filter(f: &str) -> Result<(u64, u64)> {
    let f = f.replace(' ', "");
    let Some(rest) = f.strip_prefix("dur") else {
        bail!("--filter {f}: expected 'dur>X' or 'dur<X'");
    };
    let (greater, value) = match rest.strip_prefix('>') {
        Some(v) => (true, v.trim_start_matches('=')),
        None => match rest.strip_prefix('<') {
            Some(v) => (false, v.trim_start_matches('=')),
            None => bail!("--filter {f}: expected 'dur>X' or 'dur<X'"),
        },
    };
    let split = value
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let scale = match unit {
        "ns" => 1.0,
        "" | "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        u => bail!("--filter {f}: unknown unit '{u}' (ns, us, ms, s)"),
    };
    let x: f64 = number
        .parse()
        .with_context(|| format!("--filter {f}: '{number}' is not a number"))?;
    let ticks = (x * scale).round().max(0.0) as u64;
    Ok(if greater {
        (ticks, u64::MAX)
    } else {
        (0, ticks)
    })
}

fn render(a: &RenderArgs) -> Result<()> {
    let c = &a.common;
    let (w, h) = a
        .size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)))
        .filter(|&(w, h)| (1..=8192).contains(&w) && (1..=8192).contains(&h))
        .with_context(|| format!("--size {}: expected WIDTHxHEIGHT within 1..=8192", a.size))?;
    let out = PendingFile::new(&a.out, "--out")?;
    let m = load(c)?.model;
    let mut view = TraceView {
        window: (0, m.end),
        ..Default::default()
    };
    if let Some(win) = &a.window {
        let (t0, t1) = win
            .split_once(',')
            .with_context(|| format!("--window {win}: expected T0,T1"))?;
        let at = |t: &str| relative_ticks(&m, t.trim(), c.unit).context("--window");
        view.window = (at(t0)?, at(t1)?);
        if view.window.1 <= view.window.0 {
            bail!("--window {win}: T1 must be after T0");
        }
    }
    if let Some(list) = &a.collapse {
        for pid in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let key = parse_key(pid);
            let Some(p) = m.processes.iter().position(|p| p.pid == key) else {
                bail!("--collapse {pid}: no such process");
            };
            view.collapsed_processes.insert(p as u32);
        }
    }
    if let Some(seed) = a.focus {
        if seed as usize >= m.spans.len() {
            bail!("--focus {seed}: the trace has {} spans", m.spans.len());
        }
        view.focus = Some(gpugraph_trace::Focus {
            seeds: vec![seed],
            hops: a.hops,
            direction: gpugraph_trace::FocusDirection::Both,
        });
    }
    if let Some(f) = &a.filter {
        (view.min_duration, view.max_duration) = duration_filter(f)?;
    }
    let gpu = Gpu::open()?;
    let picture = gpugraph_viewer::offscreen::render_offscreen(
        gpu.device(),
        gpu.queue(),
        m,
        &OffscreenView {
            size: (w, h),
            window: Some(view.window),
            collapsed_processes: view.collapsed_processes,
            focus: view.focus,
            min_duration: view.min_duration,
            max_duration: view.max_duration,
            inspector: a.inspector,
            ..Default::default()
        },
    )
    .context("drawing the picture")?;
    gpu.check("drawing the picture")?;
    // RGB: the picture is opaque.
    let rgb: Vec<u8> = picture
        .rgba
        .chunks_exact(4)
        .flat_map(|px| [px[0], px[1], px[2]])
        .collect();
    let mut enc = png::Encoder::new(std::io::BufWriter::new(out.file()), w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().context("writing the PNG header")?;
    writer
        .write_image_data(&rgb)
        .context("writing the PNG image")?;
    writer.finish().context("finishing the PNG")?;
    out.commit()?;
    let (visible, edges) = (picture.visible_spans, picture.edges);
    let v = json!({"out": a.out.display().to_string(), "width": w, "height": h,
        "visible_spans": visible, "edges": edges});
    if c.json {
        return print_json(&v);
    }
    println!(
        "{}: {w}x{h}, {visible} visible spans, {edges} edges",
        a.out.display()
    );
    Ok(())
}
