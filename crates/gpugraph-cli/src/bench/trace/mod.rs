//! `bench trace`: the trace domain (issue 46) on synthetic Chrome traces of 1M / 4M / 16M
//! spans with about 10 % flow links.
//!
//! Per size n (spans; `--sizes`, default `2^20,4000000,16000000`):
//! * the trace is generated (not timed) and streamed to `trace-{n}.json` in `--dir` (default a
//!   fresh temporary directory, removed afterwards unless `--keep`): Chrome Trace Event Format
//!   in its object form, [`PROCESSES`] processes × [`THREADS_PER_PROCESS`] threads (the last
//!   [`GPU_PROCESSES`] with string thread IDs like torch.profiler's `"stream 7"`), `M`
//!   metadata (names and sort indices), nested `X` events (trees of 16 spans four levels deep:
//!   a step, three ops, two sub-ops each and one leaf each, timestamps as epoch microseconds
//!   with three decimals, durations likewise, a small `args` object), and `s`/`f` flow pairs
//!   (`f` with `bp: "e"`) from every tenth span of a thread to the root of the next tree of
//!   another thread; about 190 bytes of JSON per span, so 16M spans are ~3 GB;
//! * `json-open`: the file read and parsed into the [`TraceModel`] by the ingestion path
//!   `gpugraph trace info` uses (`parse_chrome_trace`, all threads), wall time and MB/s of
//!   JSON. Before anything is timed the model is checked: spans, flow links, processes and
//!   threads must be what was generated (a mismatch fails the bench);
//! * `cache-write` / `cache-open`: the columnar cache (`gpugraph_trace::cache`) written to
//!   a file and read back into a model (checked equal once), wall time;
//! * `frame-focus3`: one full interaction frame on the GPU ([`TraceFrame`] with a 1280 × 720
//!   picture): layout scan, dependency focus of 3 hops both ways from 4 seeds (spans with
//!   outgoing flows), span visibility, edge projection (each flow's endpoints walked up to
//!   their nearest visible ancestors), span and edge compaction into indirect draws, the pick
//!   passes and the draw. GPU time: timestamps
//!   around each frame (`throughput::time_encoded`, after its warm-up; wall clock of
//!   submit-and-wait without timestamp queries), the frame's visible span and edge counts
//!   checked once against the CPU oracle (`gpugraph_trace::cpu::frame`), and with timestamp
//!   queries the per-node GPU times of profiled frames (`TraceFrame::encode_profiled` /
//!   `read_timings`, median per node; the JSON's `nodes`). `frame-focus3-encode`: the CPU
//!   time of `TraceFrame::encode` alone (the compiled graph recorded into a command encoder),
//!   timed apart from submit and wait;
//! * `frame-pan` / `frame-pan-encode`: the same without focus over a window of 1 % of the
//!   trace (a zoomed-in pan: the graph variant without the focus traversals);
//! * with `--peer PYTHON`: `bench/peers/trace_parse.py` (Python `json` + numpy: load the same
//!   file, build start/duration/pid/tid arrays) run on the same file, a `json-open` row with
//!   `peer` set; its span count must match too.
//!
//! Issue 46's targets, printed beside each number: open a 1 GB JSON in ≤ 3 s on 16 cores (≥
//! 333 MB/s, so ≤ 3 s per GB of the file), the cache in ≤ 0.3 s (per GB of the JSON it
//! replaces), a frame ≤ 1 ms of GPU time at 16M spans, its encode ≤ 50 µs. Files are read
//! from the page cache (they were just written): the opens measure parsing, not the disk.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use gpugraph_command::wgpu;
use gpugraph_trace::cache::{read_cache, write_cache};
use gpugraph_trace::frame::{TraceFrame, TraceFrameConfig};
use gpugraph_trace::{Focus, FocusDirection, IngestOptions, SpanFlags, TraceModel, TraceView};
use serde::Serialize;

mod generate;
mod print;

#[cfg(test)]
use generate::SLOT_NS;
use generate::{Generated, Recipe};

use super::report::{self, BenchJson, Summary};
use super::throughput;
use super::BenchOptions;
use crate::gpu::Gpu;

/// Picture size of the frame.
const PICTURE: (u32, u32) = (1280, 720);

/// `gpugraph bench trace`.
#[derive(Args, Debug)]
pub struct TraceBenchArgs {
    /// Spans per synthetic trace (counts or powers like 2^20), comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = throughput::parse_size, default_value = "2^20,4000000,16000000")]
    pub sizes: Vec<u64>,
    /// Directory for the generated JSON files and caches (default: a fresh temporary one).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the generated files (`trace-{n}.json`) after the bench.
    #[arg(long)]
    pub keep: bool,
    /// Also run the Python peer (`json` + numpy) on each file with this interpreter, e.g.
    /// `--peer python3`.
    #[arg(long, value_name = "PYTHON")]
    pub peer: Option<String>,
    /// The peer script.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "bench/peers/trace_parse.py"
    )]
    pub peer_script: PathBuf,
    /// Timed runs of the peer per file (it is slow: minutes at 16M spans).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub peer_repeat: u32,
    /// Focus hops of the frame.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub hops: u32,
    /// Focus seeds of the frame.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub seeds: u32,
    #[command(flatten)]
    pub options: BenchOptions,
}

/// A target of issue 46 and whether the median meets it.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// The target in words.
    pub what: String,
    /// The limit for this row, in milliseconds.
    pub limit_ms: f64,
    /// `median_ms <= limit_ms`.
    pub met: bool,
}

/// One node's median GPU time in a profiled frame.
#[derive(Clone, Debug, Serialize)]
pub struct NodeMs {
    /// Node id.
    pub node: String,
    /// Median GPU milliseconds.
    pub ms: f64,
}

/// One measured case (`bench/combine.py`, `bench/before_after.py` and `bench plot` read
/// `op`, `elements` and `median_ms`; `bench plot` also `bytes_per_element` and `gb_per_s`, or
/// `peer`).
#[derive(Clone, Debug, Serialize)]
pub struct TraceRow {
    /// `json-open`, `cache-write`, `cache-open`, `frame-focus3`, `frame-focus3-encode`,
    /// `frame-pan`, `frame-pan-encode`.
    pub op: String,
    /// Spans of the trace.
    pub elements: u64,
    /// Flow links (dependencies) of the trace.
    pub flows: u64,
    /// Bytes of the JSON file.
    pub json_bytes: u64,
    /// Bytes the operation reads per span: JSON for `json-open`, cache bytes for the cache
    /// rows, the 32-byte span record for frames, 0 for encode rows.
    pub bytes_per_element: f64,
    /// Median milliseconds (wall, GPU or CPU: see `timing`).
    pub median_ms: f64,
    /// Fastest run.
    pub min_ms: f64,
    /// Slowest run.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Every run, in ms.
    pub samples: Vec<f64>,
    /// `elements × bytes_per_element / median`, GB/s (10^9).
    pub gb_per_s: f64,
    /// `wall-clock`, `gpu-timestamps` or `cpu` (encode).
    pub timing: &'static str,
    /// Parser threads (`json-open`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// Bytes of the columnar cache (cache rows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_bytes: Option<u64>,
    /// Visible spans and drawn edges of the frame (checked against the CPU oracle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visible: Option<[u32; 2]>,
    /// Issue 46's target for this number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// The peer (`python-json-numpy`) for peer rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// Profiled frames: every node's median GPU ms, slowest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeMs>,
    /// Why a size was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl TraceRow {
    fn new(
        op: &str,
        g: &Generated,
        bytes_per_element: f64,
        t: &Summary,
        timing: &'static str,
    ) -> Self {
        let bytes = g.spans as f64 * bytes_per_element;
        Self {
            op: op.into(),
            elements: g.spans,
            flows: g.flows,
            json_bytes: g.bytes,
            bytes_per_element,
            median_ms: t.median,
            min_ms: t.min,
            max_ms: t.max,
            mean_ms: t.mean,
            samples: t.samples.clone(),
            gb_per_s: if t.median > 0.0 {
                bytes / (t.median * 1e-3) / 1e9
            } else {
                0.0
            },
            timing,
            threads: None,
            cache_bytes: None,
            visible: None,
            target: None,
            peer: None,
            nodes: Vec::new(),
            skipped: None,
        }
    }
    fn with_target(mut self, what: String, limit_ms: f64) -> Self {
        self.target = Some(Target {
            what,
            limit_ms,
            met: self.median_ms <= limit_ms,
        });
        self
    }
}

/// Why the GPU frame of `n` spans cannot run here (`None`: it can): the span buffer against
/// the device's buffer and storage-binding limits (the JSON and cache rows are measured
/// anyway).
fn frame_too_large(gpu: &Gpu, n: u64) -> Option<String> {
    let limits = gpu.device().limits();
    let span_bytes = n.saturating_mul(32);
    if span_bytes > limits.max_storage_buffer_binding_size || span_bytes > limits.max_buffer_size {
        return Some(format!(
            "{span_bytes} bytes of spans exceed max_storage_buffer_binding_size {} or max_buffer_size {}",
            limits.max_storage_buffer_binding_size, limits.max_buffer_size
        ));
    }
    None
}

/// Why `n` spans cannot be benched here (`None`: they can): the host's memory and the
/// directory's free space.
fn too_large(n: u64, dir: &Path) -> Option<String> {
    if n == 0 {
        return Some("no spans".into());
    }
    // The JSON in memory, the parser's events and two models (the cache's and the parse's).
    let json = n.saturating_mul(160);
    let host = json + n.saturating_mul(400);
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        let line = t.lines().find(|l| l.starts_with("MemAvailable:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    });
    if let Some(kib) = available {
        if host > kib * 1024 {
            return Some(format!(
                "about {} MiB of host memory needed, {} MiB available",
                host >> 20,
                kib >> 10
            ));
        }
    }
    if let Ok(st) = rustix::fs::statvfs(dir) {
        let free = st.f_bavail.saturating_mul(st.f_frsize);
        let need = json + n.saturating_mul(60);
        if need > free {
            return Some(format!(
                "about {} MiB of disk needed in {}, {} MiB free",
                need >> 20,
                dir.display(),
                free >> 20
            ));
        }
    }
    None
}

/// The bench's working directory: `--dir` (created if missing) or a fresh temporary one
/// (removed on drop unless kept).
struct WorkDir {
    path: PathBuf,
    remove: bool,
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Runs `bench trace`.
pub fn run(args: &TraceBenchArgs) -> Result<()> {
    if let Some(path) = &args.options.json {
        report::check_writable(path)?;
    }
    if args.peer.is_some() && !args.peer_script.is_file() {
        bail!(
            "--peer: the peer script {} does not exist (run from the repository root or pass --peer-script)",
            args.peer_script.display()
        );
    }
    let work = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .with_context(|| format!("creating --dir {}", d.display()))?;
            WorkDir {
                path: d.clone(),
                remove: false,
            }
        }
        None => {
            let d = tempfile::Builder::new()
                .prefix("gpugraph-bench-trace-")
                .tempdir()
                .context("creating a temporary directory")?;
            WorkDir {
                path: d.keep(),
                remove: !args.keep,
            }
        }
    };
    let gpu = Gpu::open()?;
    let mut rows: Vec<TraceRow> = Vec::new();
    for &n in &args.sizes {
        if let Some(reason) = too_large(n, &work.path) {
            report::progress(format_args!("bench trace: n = {n}: skipped: {reason}"));
            let g = Generated {
                spans: n,
                ..Default::default()
            };
            let mut row = TraceRow::new("json-open", &g, 0.0, &Summary::default(), "wall-clock");
            row.skipped = Some(reason);
            rows.push(row);
            continue;
        }
        let path = work.path.join(format!("trace-{n}.json"));
        report::progress(format_args!(
            "bench trace: n = {n}: generating {}",
            path.display()
        ));
        let t0 = Instant::now();
        let generated = Recipe { spans: n }.write(&path)?;
        report::progress(format_args!(
            "bench trace: n = {n}: {:.1} MB, {} flows, generated in {:.1} s",
            generated.bytes as f64 / 1e6,
            generated.flows,
            t0.elapsed().as_secs_f64()
        ));
        let result = size_rows(&gpu, args, &path, &generated, &work.path);
        if !args.keep {
            let _ = std::fs::remove_file(&path);
        }
        rows.extend(result?);
    }
    print::print_rows(&rows);
    if args.keep {
        println!("files kept in {}", work.path.display());
    }
    if let Some(path) = &args.options.json {
        let caps = gpu.ctx.capabilities().clone();
        report::write_json(
            path,
            &BenchJson::new("trace", &caps, args.options.repeat, &rows),
        )?;
    }
    Ok(())
}

/// Checks the parsed model against what was generated.
fn check_model(m: &TraceModel, g: &Generated, what: &str) -> Result<()> {
    let got = (
        m.spans.len() as u64,
        m.dependencies.len() as u64,
        m.processes.len() as u64,
        m.threads.len() as u64,
    );
    let want = (g.spans, g.flows, g.processes, g.threads);
    if got != want {
        bail!(
            "bench trace: {what} has (spans, flow links, processes, threads) = {got:?}, the generator wrote {want:?}"
        );
    }
    Ok(())
}

fn size_rows(
    gpu: &Gpu,
    args: &TraceBenchArgs,
    path: &Path,
    g: &Generated,
    dir: &Path,
) -> Result<Vec<TraceRow>> {
    let n = g.spans;
    let repeat = args.options.repeat;
    let gb = g.bytes as f64 / 1e9;
    let mut rows = Vec::new();

    // (a) JSON open: the checked, untimed first open, then the timed ones.
    let open = || -> Result<TraceModel> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        gpugraph_trace::parse_chrome_trace(&bytes, IngestOptions::default())
            .with_context(|| format!("parsing {}", path.display()))
    };
    report::progress(format_args!("bench trace: n = {n}: opening the JSON"));
    let mut model = open()?;
    check_model(&model, g, "the parsed model")?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut samples = Vec::new();
    for _ in 0..repeat {
        drop(model);
        let t0 = Instant::now();
        model = open()?;
        samples.push(report::ms(t0.elapsed()));
    }
    let t = Summary::of(&samples);
    let mut row = TraceRow::new("json-open", g, g.bytes as f64 / n as f64, &t, "wall-clock")
        .with_target(
            "1 GB of JSON in ≤ 3 s on 16 cores (≥ 333 MB/s)".into(),
            3000.0 * gb,
        );
    row.threads = Some(threads);
    rows.push(row);

    // (b) The columnar cache: write, then open.
    report::progress(format_args!("bench trace: n = {n}: the columnar cache"));
    let cache = dir.join(format!("trace-{n}.ggtrace"));
    let stamp = [g.bytes, 0];
    let mut write_ms = Vec::new();
    for _ in 0..repeat {
        let t0 = Instant::now();
        let bytes = write_cache(&model, stamp);
        std::fs::write(&cache, &bytes).with_context(|| format!("writing {}", cache.display()))?;
        drop(bytes);
        write_ms.push(report::ms(t0.elapsed()));
    }
    let cache_bytes = std::fs::metadata(&cache)?.len();
    let (cached, s) = read_cache(&std::fs::read(&cache)?).context("reading the cache back")?;
    check_model(&cached, g, "the cached model")?;
    if s != stamp
        || cached.spans != model.spans
        || cached.dependencies != model.dependencies
        || cached.parents != model.parents
    {
        bail!("bench trace: the cache read back differs from the model written");
    }
    drop(cached);
    let mut open_ms = Vec::new();
    for _ in 0..repeat {
        let t0 = Instant::now();
        let bytes = std::fs::read(&cache)?;
        let (m, _) = read_cache(&bytes)?;
        open_ms.push(report::ms(t0.elapsed()));
        drop((m, bytes));
    }
    let _ = std::fs::remove_file(&cache);
    let per_span = cache_bytes as f64 / n as f64;
    let mut row = TraceRow::new(
        "cache-write",
        g,
        per_span,
        &Summary::of(&write_ms),
        "wall-clock",
    );
    row.cache_bytes = Some(cache_bytes);
    rows.push(row);
    let mut row = TraceRow::new(
        "cache-open",
        g,
        per_span,
        &Summary::of(&open_ms),
        "wall-clock",
    )
    .with_target(
        "the cache of a 1 GB JSON in ≤ 0.3 s (0.3 s per GB of JSON)".into(),
        300.0 * gb,
    );
    row.cache_bytes = Some(cache_bytes);
    rows.push(row);

    // (c) Frames on the GPU.
    match frame_too_large(gpu, n) {
        None => rows.extend(frame_rows(gpu, args, &model, g)?),
        Some(reason) => {
            report::progress(format_args!(
                "bench trace: n = {n}: the frame is skipped: {reason}"
            ));
            let op = format!("frame-focus{}", args.hops);
            let mut row = TraceRow::new(&op, g, 32.0, &Summary::default(), "-");
            row.skipped = Some(reason);
            rows.push(row);
        }
    }

    // (d) The peer on the same file.
    if let Some(python) = &args.peer {
        rows.push(peer_row(python, args, path, g)?);
    }
    Ok(rows)
}

fn frame_rows(
    gpu: &Gpu,
    args: &TraceBenchArgs,
    model: &TraceModel,
    g: &Generated,
) -> Result<Vec<TraceRow>> {
    let n = g.spans;
    let repeat = args.options.repeat;
    report::progress(format_args!("bench trace: n = {n}: building the frame"));
    let mut config = TraceFrameConfig::exact(model, args.hops);
    config.picture = Some(PICTURE);
    let mut frame = TraceFrame::new(gpu.device(), gpu.queue(), model, config)?;
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    frame.encode_build(&mut enc)?;
    gpu.submit_and_wait(enc.finish())?;
    gpu.check("building the trace frame")?;

    // Seeds: spans with outgoing flows, spread over the trace.
    let sources: Vec<u32> = (0..model.spans.len() as u32)
        .filter(|&i| model.spans[i as usize].flags().has(SpanFlags::FLOW_OUT))
        .collect();
    let seeds: Vec<u32> = if sources.is_empty() {
        vec![0]
    } else {
        let k = (args.seeds as usize).min(sources.len());
        (0..k).map(|i| sources[i * sources.len() / k]).collect()
    };
    let focus_view = TraceView {
        window: (0, model.end),
        focus: Some(Focus {
            seeds,
            hops: args.hops,
            direction: FocusDirection::Both,
        }),
        ..Default::default()
    };
    let pan_view = TraceView {
        window: (model.end / 2, model.end / 2 + (model.end / 100).max(1)),
        ..Default::default()
    };
    let profile = gpu
        .device()
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY);
    let mut rows = Vec::new();
    let focus_op = format!("frame-focus{}", args.hops);
    for (op, view) in [(focus_op.as_str(), &focus_view), ("frame-pan", &pan_view)] {
        report::progress(format_args!("bench trace: n = {n}: {op}"));
        frame.write_view(gpu.queue(), view)?;
        // Check once against the CPU oracle.
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        frame.encode(&mut enc)?;
        gpu.submit_and_wait(enc.finish())?;
        let draw = gpu.read_back(&frame.buffers().draw_args, 8)?;
        let want = gpugraph_trace::cpu::frame(model, view, frame.config().max_ancestor_depth);
        let got = [draw[1], draw[5]];
        let expected = [
            want.visible_ids.len() as u32,
            want.visible_edges.len() as u32,
        ];
        if got != expected {
            bail!(
                "bench trace: {op} at n = {n}: the GPU frame shows (spans, edges) = {got:?}, the CPU oracle {expected:?}"
            );
        }
        drop(want);
        // GPU time per frame.
        let (t, timing) = throughput::time_encoded(gpu, repeat, |enc| {
            frame.encode(enc).context("encoding the frame")
        })?;
        // Encode alone (after the warm-up above), each frame then submitted and waited for.
        let mut encode_ms = Vec::new();
        for _ in 0..repeat.max(5) {
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            let t0 = Instant::now();
            frame.encode(&mut enc)?;
            encode_ms.push(report::ms(t0.elapsed()));
            gpu.submit_and_wait(enc.finish())?;
        }
        // Per-node GPU times.
        let mut nodes = Vec::new();
        if profile {
            let mut per: Vec<(String, Vec<f64>)> = Vec::new();
            for _ in 0..repeat.clamp(3, 20) {
                let mut enc = gpu.device().create_command_encoder(&Default::default());
                frame.encode_profiled(&mut enc)?;
                gpu.submit_and_wait(enc.finish())?;
                for tm in frame.read_timings(gpu.queue())? {
                    let Some(ns) = tm.gpu_ns else { continue };
                    match per.iter_mut().find(|(name, _)| *name == tm.node) {
                        Some((_, v)) => v.push(ns / 1e6),
                        None => per.push((tm.node, vec![ns / 1e6])),
                    }
                }
            }
            nodes = per
                .into_iter()
                .map(|(node, v)| NodeMs {
                    node,
                    ms: report::median(&v),
                })
                .collect();
            nodes.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        }
        let mut row = TraceRow::new(op, g, 32.0, &t, timing).with_target(
            "a full interaction frame ≤ 1 ms of GPU time at 16M spans".into(),
            1.0,
        );
        row.visible = Some(got);
        row.nodes = nodes;
        if !op.starts_with("frame-focus") {
            row.target = None;
        }
        rows.push(row);
        rows.push(
            TraceRow::new(
                &format!("{op}-encode"),
                g,
                0.0,
                &Summary::of(&encode_ms),
                "cpu",
            )
            .with_target("frame encode ≤ 50 µs".into(), 0.05),
        );
    }
    Ok(rows)
}

/// The peer's output (`bench/peers/trace_parse.py --json -`).
#[derive(serde::Deserialize)]
struct PeerDoc {
    rows: Vec<PeerRow>,
}

#[derive(serde::Deserialize)]
struct PeerRow {
    peer: String,
    elements: u64,
    samples: Vec<f64>,
}

fn peer_row(python: &str, args: &TraceBenchArgs, path: &Path, g: &Generated) -> Result<TraceRow> {
    report::progress(format_args!(
        "bench trace: n = {}: the peer ({python} {})",
        g.spans,
        args.peer_script.display()
    ));
    let out = Command::new(python)
        .arg(&args.peer_script)
        .arg(path)
        .args(["--repeat", &args.peer_repeat.to_string(), "--json", "-"])
        .output()
        .with_context(|| format!("running the peer {python}"))?;
    if !out.status.success() {
        bail!(
            "the peer {python} {} failed ({}): {}",
            args.peer_script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let doc: PeerDoc = serde_json::from_slice(&out.stdout).context("the peer's JSON")?;
    let Some(p) = doc.rows.into_iter().next() else {
        bail!("the peer printed no row");
    };
    if p.elements != g.spans {
        bail!(
            "bench trace: the peer found {} spans, the generator wrote {}",
            p.elements,
            g.spans
        );
    }
    let mut row = TraceRow::new(
        "json-open",
        g,
        g.bytes as f64 / g.spans as f64,
        &Summary::of(&p.samples),
        "wall-clock",
    )
    .with_target(
        "1 GB of JSON in ≤ 3 s on 16 cores (≥ 333 MB/s)".into(),
        3000.0 * g.bytes as f64 / 1e9,
    );
    row.peer = Some(p.peer);
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_nest_and_flows_point_forward() {
        let r = Recipe { spans: 64 * 40 + 5 };
        assert_eq!(
            (0..r.threads()).map(|g| r.spans_of(g)).sum::<u64>(),
            r.spans
        );
        for g in [0, 13, 63] {
            for j in 0..3 {
                let t = Recipe::tree(g, j);
                // Depth-first: each span lies inside the nearest earlier span one level up.
                for (k, &(d, s, du)) in t.iter().enumerate() {
                    assert!(du > 0);
                    if d > 0 {
                        let p = t[..k].iter().rev().find(|x| x.0 == d - 1).unwrap();
                        assert!(s > p.1 && s + du < p.1 + p.2, "{g} {j} {k}");
                    }
                }
                assert!(t[0].1 + t[0].2 < (j + 1) * SLOT_NS);
                assert!(t[0].1 >= j * SLOT_NS);
            }
        }
        let (b, jb) = r.flow_target(5, 7).unwrap();
        assert_ne!(b, 5);
        assert_eq!(jb, 1);
        assert!(r.flow_target(5, 8).is_none());
    }
}
