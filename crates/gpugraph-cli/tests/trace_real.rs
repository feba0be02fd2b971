//! `gpugraph trace info|stats|pick|render` on real traces, each answer checked against the
//! standard-library Python reference `scripts/trace_reference.py` run on the same file:
//! - a torch.profiler trace recorded on an NVIDIA H100 (`bench/torch_trace.py`: CPU ops,
//!   CUDA runtime calls, kernels on streams, `ac2g` flow links, flows cut at the window's edges;
//!   committed gzipped with the reference's answer beside it);
//! - a Chromium startup trace made here by `chromium --headless --trace-startup`
//!   (~100K spans, B/E pairs left open, thousands of instants, 18K flow links). Chromium is
//!   found at `GPUGRAPH_CHROMIUM` or Debian's path; `make test` installs it and sets
//!   `GPUGRAPH_REQUIRE_CHROMIUM=1`, so a missing browser fails there instead of skipping.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::trace::{fixture, json};
use common::*;
use serde_json::Value;

/// `scripts/trace_reference.py ARGS` as JSON.
fn reference(args: &[&str]) -> Value {
    let script = crate_file("../../scripts/trace_reference.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("python3 {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "the Python reference failed: {}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the reference prints JSON")
}

/// Every name's count, total and self time within 1e-6 relative of the exact reference.
fn assert_stats_match(got: &Value, expected: &Value) {
    let rows = got["rows"].as_array().expect("rows");
    let exp = expected["stats"].as_object().expect("stats");
    assert_eq!(rows.len(), exp.len(), "names");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1e-9);
    for r in rows {
        let name = r["name"].as_str().unwrap();
        let e = exp
            .get(name)
            .unwrap_or_else(|| panic!("{name}: not in the reference"));
        assert_eq!(r["count"], e["count"], "{name}");
        let total: f64 = e["total_us"].as_str().unwrap().parse().unwrap();
        let own: f64 = e["self_us"].as_str().unwrap().parse().unwrap();
        assert!(close(r["total"].as_f64().unwrap(), total), "{r} vs {e}");
        assert!(close(r["self"].as_f64().unwrap(), own), "{r} vs {e}");
    }
}

/// Picks at `at` on `thread` and compares name, start and duration with the reference.
fn assert_pick_matches(cache: &TempDir, file: &str, thread: &str, at: &str) -> Value {
    let got = json(
        cache,
        &[
            "trace", "pick", file, "--at", at, "--thread", thread, "--json",
        ],
    );
    let want = reference(&[file, "--pick", thread, "--at", at]);
    assert!(!want.is_null(), "the reference finds no span at {at}");
    assert_eq!(got["name"], want["name"], "pick at {at} on {thread}");
    let num = |v: &Value| -> f64 {
        v.as_str()
            .map(|s| s.parse().unwrap())
            .unwrap_or_else(|| v.as_f64().unwrap())
    };
    assert_eq!(num(&got["ts"]), num(&want["ts"]), "start");
    assert!(
        (num(&got["dur"]) - num(&want["dur"])).abs() <= 1e-3,
        "duration"
    );
    got
}

/// The middle (plus half a tick, so no integer-timed instant sits on it) of the longest `X`
/// event of category `cat` (any category when `None`) on the thread with the most `X` events.
fn longest_event_midpoint(events: &[Value], cat: Option<&str>) -> (String, String) {
    let key = |e: &Value| format!("{}:{}", e["pid"], e["tid"]).replace('"', "");
    let xs: Vec<&Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["dur"].as_f64().unwrap_or(0.0) > 2.0)
        .filter(|e| cat.is_none_or(|c| e["cat"] == c))
        .collect();
    let mut counts = std::collections::HashMap::<String, usize>::new();
    for e in &xs {
        *counts.entry(key(e)).or_default() += 1;
    }
    let thread = counts
        .into_iter()
        .max_by_key(|(k, n)| (*n, k.clone()))
        .unwrap()
        .0;
    let e = xs
        .iter()
        .filter(|e| key(e) == thread)
        .max_by(|a, b| a["dur"].as_f64().partial_cmp(&b["dur"].as_f64()).unwrap())
        .unwrap();
    let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
    (thread, format!("{:.1}", (ts + (dur / 2.0).floor()) + 0.5))
}

fn assert_renders(cache: &TempDir, dir: &TempDir, file: &str, spans: u64) {
    let png = dir.path("frame.png");
    let got = json(
        cache,
        &[
            "trace", "render", file, "--out", &png, "--json", "--size", "640x360",
        ],
    );
    assert!(got["visible_spans"].as_u64().unwrap() > 0, "{got}");
    assert!(got["visible_spans"].as_u64().unwrap() <= spans, "{got}");
    let (w, h, pixels) = read_png(Path::new(&png));
    assert_eq!((w, h), (640, 360));
    let first = &pixels[..3];
    assert!(
        pixels.chunks(3).any(|p| p != first),
        "the picture is one flat color"
    );
}

#[test]
fn a_torch_profiler_trace_from_an_h100() {
    let cache = TempDir::new("trace-torch-real-cache");
    let dir = TempDir::new("trace-torch-real");
    let file = fixture("torch_profiler_h100.json.gz");
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("torch_profiler_h100.expected.json")).unwrap(),
    )
    .unwrap();
    let info = json(&cache, &["trace", "info", &file, "--json", "--no-cache"]);
    assert_eq!(info["spans"], expected["spans"]);
    assert!(info["flow_links"].as_u64().unwrap() > 100, "{info}");
    // The profiler's window cut some launch → kernel flows: counted, not fatal.
    assert!(info["flow_missing_start"].as_u64().unwrap() > 0, "{info}");
    let stats = json(
        &cache,
        &[
            "trace",
            "stats",
            &file,
            "--by",
            "name",
            "--top",
            "0",
            "--json",
            "--no-cache",
        ],
    );
    assert_stats_match(&stats, &expected);
    assert_stats_match(&stats, &reference(&[&file]));

    let mut events = Vec::new();
    let raw = std::fs::read(&file).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&raw[..]), &mut text).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    events.extend(doc["traceEvents"].as_array().unwrap().iter().cloned());
    // A kernel on its stream and a CPU op on the Python thread.
    let (thread, at) = longest_event_midpoint(&events, Some("kernel"));
    assert_pick_matches(&cache, &file, &thread, &at);
    let (thread, at) = longest_event_midpoint(&events, Some("cpu_op"));
    assert_pick_matches(&cache, &file, &thread, &at);
    assert_renders(&cache, &dir, &file, expected["spans"].as_u64().unwrap());
}

fn chromium() -> Option<String> {
    if let Ok(p) = std::env::var("GPUGRAPH_CHROMIUM") {
        return Some(p);
    }
    ["/usr/lib/chromium/chromium", "/usr/bin/chromium"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .map(String::from)
}

/// Records a startup trace of a small page: JSON (Chromium writes Perfetto's protobuf unless
/// told otherwise), every default category, two seconds.
fn chromium_startup_trace(browser: &str, dir: &TempDir) -> String {
    let file = dir.path("startup.json");
    let page = "data:text/html,<h1>gpugraph</h1><canvas id=c></canvas><script>\
        let s=0;for(let i=0;i<2e6;i++)s+=i;document.title=s</script>";
    let mut child = Command::new(browser)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--trace-startup=*",
            "--trace-startup-format=json",
            "--trace-startup-duration=2",
            &format!("--trace-startup-file={file}"),
            &format!("--user-data-dir={}", dir.path("profile")),
            "--virtual-time-budget=3000",
            "--dump-dom",
            page,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{browser}: {e}"));
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("{browser} did not exit within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        Path::new(&file).exists(),
        "{browser} wrote no trace at {file}"
    );
    file
}

#[test]
fn a_chromium_startup_trace() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var("GPUGRAPH_REQUIRE_CHROMIUM").is_err(),
            "GPUGRAPH_REQUIRE_CHROMIUM is set but no Chromium was found"
        );
        eprintln!("no Chromium here: the Chromium trace test did not run");
        return;
    };
    let cache = TempDir::new("trace-chromium-cache");
    let dir = TempDir::new("trace-chromium");
    let file = chromium_startup_trace(&browser, &dir);
    let expected = reference(&[&file]);
    let spans = expected["spans"].as_u64().unwrap();
    assert!(
        spans > 1_000,
        "a startup trace has thousands of spans: {spans}"
    );
    let info = json(&cache, &["trace", "info", &file, "--json"]);
    assert_eq!(info["spans"], expected["spans"]);
    assert_eq!(info["loaded_from_cache"], false);
    assert!(info["processes"].as_u64().unwrap() >= 2, "{info}");
    assert!(info["flow_links"].as_u64().unwrap() > 0, "{info}");
    // The second open reads the columnar cache and agrees.
    let again = json(&cache, &["trace", "info", &file, "--json"]);
    assert_eq!(again["loaded_from_cache"], true);
    assert_eq!(again["spans"], info["spans"]);
    let stats = json(
        &cache,
        &[
            "trace", "stats", &file, "--by", "name", "--top", "0", "--json",
        ],
    );
    assert_stats_match(&stats, &expected);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let (thread, at) = longest_event_midpoint(doc["traceEvents"].as_array().unwrap(), None);
    assert_pick_matches(&cache, &file, &thread, &at);
    assert_renders(&cache, &dir, &file, spans);
}
