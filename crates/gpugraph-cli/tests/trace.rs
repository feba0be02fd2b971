//! `gpugraph trace info|stats|pick` end to end on the committed torch.profiler-shaped trace
//! (`crates/gpugraph-trace/tests/data/torch_small.json`), checked against the Python
//! reference committed beside it (`torch_small.expected.json`, exact Decimal sums); the
//! columnar cache (a second open reads it), gzip input, and bad input as a one-line error
//! with the byte offset. Runs on the real GPU path (lavapipe on CI).

mod common;

use std::process::Command;

use common::trace::{fixture, json, run};
use common::*;
use serde_json::Value;

#[test]
fn info_counts_and_the_cache() {
    let cache = TempDir::new("trace-info-cache");
    let file = fixture("torch_small.json");
    let first = json(&cache, &["trace", "info", &file, "--json"]);
    assert_eq!(first["loaded_from_cache"], false);
    assert_eq!(first["spans"], 51);
    assert_eq!(first["flow_links"], 9);
    assert_eq!(first["processes"], 4);
    assert_eq!(first["by_kind"]["X"], 46);
    assert_eq!(first["by_category"]["kernel"], 9);
    assert_eq!(first["flow_missing_end"], 1);
    // Absolute times are exact decimals (f64 cannot hold epoch µs with their fraction).
    assert_eq!(first["start"], "1700000000001000.000");
    assert_eq!(first["end"], "1700000000016200.000");
    let second = json(&cache, &["trace", "info", &file, "--json"]);
    assert_eq!(
        second["loaded_from_cache"], true,
        "the second open reads the cache"
    );
    for k in [
        "spans",
        "flow_links",
        "by_kind",
        "by_category",
        "thread_list",
        "start",
    ] {
        assert_eq!(first[k], second[k], "{k}");
    }
    let text = run(&cache, &["trace", "info", &file]);
    assert_success(&["trace", "info"], &text);
    assert!(String::from_utf8_lossy(&text.stdout).contains("51 spans"));
}

#[test]
fn stats_match_the_python_reference() {
    let cache = TempDir::new("trace-stats-cache");
    let file = fixture("torch_small.json");
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("torch_small.expected.json")).unwrap(),
    )
    .unwrap();
    let got = json(
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
    let rows = got["rows"].as_array().unwrap();
    let exp = expected["stats"].as_object().unwrap();
    assert_eq!(rows.len(), exp.len());
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1e-9);
    for r in rows {
        let e = &exp[r["name"].as_str().unwrap()];
        assert_eq!(r["count"], e["count"]);
        let total: f64 = e["total_us"].as_str().unwrap().parse().unwrap();
        let own: f64 = e["self_us"].as_str().unwrap().parse().unwrap();
        assert!(close(r["total"].as_f64().unwrap(), total), "{r} vs {e}");
        assert!(close(r["self"].as_f64().unwrap(), own), "{r} vs {e}");
    }
    // Top first.
    let totals: Vec<f64> = rows.iter().map(|r| r["total"].as_f64().unwrap()).collect();
    assert!(totals.windows(2).all(|w| w[0] >= w[1]));
}

#[test]
fn pick_finds_the_innermost_span_with_its_args() {
    let cache = TempDir::new("trace-pick-cache");
    let file = fixture("torch_small.json");
    // Inside the first step's first addmm and its cudaLaunchKernel (absolute µs).
    let got = json(
        &cache,
        &[
            "trace",
            "pick",
            &file,
            "--at",
            "1700000000001215",
            "--thread",
            "4242:4242",
            "--json",
        ],
    );
    assert_eq!(got["name"], "cudaLaunchKernel");
    assert_eq!(got["lane"], 3);
    assert_eq!(got["ts"], "1700000000001210.500");
    assert_eq!(got["dur"].as_f64().unwrap(), 12.333);
    assert_eq!(got["args"]["correlation"], 100);
    // Relative time on a GPU stream.
    let got = json(
        &cache,
        &[
            "trace", "pick", &file, "--at", "1550", "--thread", "0:7", "--json",
        ],
    );
    assert_eq!(got["name"], "ampere_sgemm_32x32_sliced1x4_tn");
    let none = json(
        &cache,
        &[
            "trace", "pick", &file, "--at", "99999", "--thread", "0:7", "--json",
        ],
    );
    assert_eq!(none["picked"], Value::Null);
}

#[test]
fn gzip_input_and_bad_input() {
    let cache = TempDir::new("trace-bad-cache");
    let dir = TempDir::new("trace-bad");
    let gz = dir.path("t.json.gz");
    let plain = std::fs::read(fixture("torch_small.json")).unwrap();
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut e, &plain).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    let got = json(&cache, &["trace", "info", &gz, "--json", "--no-cache"]);
    assert_eq!(got["spans"], 51);
    let bad = dir.path("bad.json");
    std::fs::write(&bad, br#"[{"ph":"X","ts":12x}]"#).unwrap();
    let out = run(&cache, &["trace", "info", &bad, "--no-cache"]);
    assert!(!out.status.success());
    let err = our_stderr(&out);
    assert!(err.contains("byte 18"), "{err}");
}

#[test]
fn render_writes_a_picture_of_the_frame() {
    let cache = TempDir::new("trace-render-cache");
    let dir = TempDir::new("trace-render");
    let file = fixture("torch_small.json");
    let png = dir.path("frame.png");
    let all = json(
        &cache,
        &[
            "trace", "render", &file, "--out", &png, "--size", "320x120", "--json",
        ],
    );
    assert_eq!(all["visible_spans"], 51);
    assert_eq!(all["edges"], 9);
    let (w, h, rgb) = read_png(std::path::Path::new(&png));
    assert_eq!((w, h), (320, 120));
    assert!(
        rgb.chunks(3).any(|p| p != [255, 255, 255]),
        "something is drawn"
    );
    // The viewer's picture: label text in the lane-label gutter (96 px wide at this size),
    // below the 26-px time axis, and colored spans right of it.
    let px = |x: u32, y: u32| {
        let at = ((y * w + x) * 3) as usize;
        [rgb[at], rgb[at + 1], rgb[at + 2]]
    };
    let ink = (26..h)
        .flat_map(|y| (0..96).map(move |x| (x, y)))
        .filter(|&(x, y)| px(x, y).iter().all(|&c| c < 120))
        .count();
    assert!(ink > 50, "label pixels in the gutter: {ink}");
    let colored = (26..h)
        .flat_map(|y| (96..w).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let p = px(x, y);
            p.iter().max().unwrap() - p.iter().min().unwrap() > 25
        })
        .count();
    assert!(colored > 300, "colored span pixels: {colored}");
    // --inspector adds the dark panel at the right (270 px of 1000).
    let inspected = json(
        &cache,
        &[
            "trace",
            "render",
            &file,
            "--out",
            &png,
            "--size",
            "1000x300",
            "--inspector",
            "--json",
        ],
    );
    assert_eq!(inspected["visible_spans"], 51);
    let (w2, h2, rgb2) = read_png(std::path::Path::new(&png));
    assert_eq!((w2, h2), (1000, 300));
    let dark = (0..h2)
        .flat_map(|y| (740..w2).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let at = ((y * w2 + x) * 3) as usize;
            rgb2[at..at + 3] == [34, 34, 34]
        })
        .count();
    assert!(
        dark > 260 * 300 * 7 / 10,
        "the inspector panel: {dark} dark pixels"
    );
    let long = json(
        &cache,
        &[
            "trace", "render", &file, "--out", &png, "--filter", "dur>1ms", "--json",
        ],
    );
    assert_eq!(
        long["visible_spans"], 6,
        "three steps and three synchronizations"
    );
    let collapsed = json(
        &cache,
        &[
            "trace",
            "render",
            &file,
            "--out",
            &png,
            "--collapse",
            "4242",
            "--json",
        ],
    );
    assert!(collapsed["visible_spans"].as_u64().unwrap() < 51);
    let focus = json(
        &cache,
        &[
            "trace", "render", &file, "--out", &png, "--focus", "0", "--hops", "2", "--json",
        ],
    );
    assert_eq!(
        focus["visible_spans"], 1,
        "span 0 (an instant) has no dependencies"
    );
    let out = run(
        &cache,
        &[
            "trace", "render", &file, "--out", &png, "--filter", "size>3",
        ],
    );
    assert!(!out.status.success());
}

#[test]
fn bench_trace_at_a_tiny_size() {
    let dir = TempDir::new("bench-trace");
    let report = dir.path("trace.json");
    let mut args = vec![
        "bench",
        "trace",
        "--sizes",
        "3000",
        "--repeat",
        "1",
        "--dir",
        dir.dir(),
        "--keep",
        "--json",
        &report,
    ];
    // The Python peer where this machine has numpy (CI may not).
    let script = crate_file("../../bench/peers/trace_parse.py")
        .to_string_lossy()
        .into_owned();
    let numpy = Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if numpy {
        args.extend(["--peer", "python3", "--peer-script", &script]);
    }
    let out = gpugraph(&args);
    assert_success(&args, &out);
    let table = text(&out.stdout);
    assert!(
        table.contains("frame-focus3") && table.contains("target:"),
        "{table}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["bench"], "trace");
    let rows = v["rows"].as_array().unwrap();
    let op = |name: &str| {
        rows.iter()
            .find(|r| r["op"] == name && r.get("peer").is_none())
            .unwrap_or_else(|| panic!("no {name} row in {v}"))
    };
    for name in [
        "json-open",
        "cache-write",
        "cache-open",
        "frame-focus3",
        "frame-focus3-encode",
        "frame-pan",
        "frame-pan-encode",
    ] {
        let r = op(name);
        assert_eq!(r["elements"], 3000, "{r}");
        assert!(r["median_ms"].as_f64().unwrap() > 0.0, "{r}");
        // 10 % of the spans start flows, but for each thread's last tree: 192 here.
        assert_eq!(r["flows"], 192, "{r}");
    }
    assert!(op("json-open")["target"]["met"].is_boolean());
    assert!(op("frame-focus3")["visible"][0].as_u64().unwrap() >= 1);
    assert_eq!(
        rows.iter().any(|r| r.get("peer").is_some()),
        numpy,
        "a peer row exactly when the peer ran"
    );
    // The kept file is a trace `trace info` reads with the same counts.
    let cache = TempDir::new("bench-trace-cache");
    let file = dir.path("trace-3000.json");
    let info = json(&cache, &["trace", "info", &file, "--json", "--no-cache"]);
    assert_eq!(info["spans"], 3000);
    assert_eq!(info["flow_links"], op("json-open")["flows"]);
    assert_eq!(info["processes"], 8);
    assert_eq!(info["threads"], 64);
    // A missing peer script is a clean error.
    let bad = [
        "bench",
        "trace",
        "--sizes",
        "100",
        "--peer",
        "python3",
        "--peer-script",
        "/nonexistent/trace_parse.py",
    ];
    let out = gpugraph(&bad);
    assert!(!out.status.success());
    assert!(
        our_stderr(&out).contains("peer script"),
        "{}",
        our_stderr(&out)
    );
}
