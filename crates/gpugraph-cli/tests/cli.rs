//! Runs the built `gpugraph` binary the way a user does and checks its public contract:
//! exit status, output, JSON shape, and one-line errors (never a panic) on bad input.
//! Needs a GPU adapter; on CI that is Mesa lavapipe (no adapter is a failure, not a skip).

mod common;

use std::path::PathBuf;

use common::*;

/// A scratch path unique to this test process and name, removed on drop.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> Self {
        Self(std::env::temp_dir().join(format!("gpugraph-cli-{}-{name}", std::process::id())))
    }
    fn as_str(&self) -> &str {
        self.0.to_str().expect("temp dir path is UTF-8")
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn info_json_reports_capabilities() {
    let args = ["info", "--json"];
    let out = gpugraph(&args);
    assert_success(&args, &out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("info --json is not JSON ({e}):\n{}", text(&out.stdout)));
    for key in ["backend", "adapter", "device_type", "driver"] {
        assert!(
            v[key].is_string(),
            "field {key} missing or not a string: {v}"
        );
    }
    assert!(!v["adapter"].as_str().unwrap_or_default().is_empty());
    for key in [
        "max_buffer_size",
        "max_storage_buffer_binding_size",
        "max_compute_workgroups_per_dimension",
        "max_compute_invocations_per_workgroup",
    ] {
        assert!(
            v[key].as_u64().is_some_and(|n| n > 0),
            "limit {key} missing or zero: {v}"
        );
    }
    for key in ["timestamp_query", "subgroups", "shader_f16"] {
        assert!(v[key].is_boolean(), "feature flag {key} missing: {v}");
    }
}

#[test]
fn info_table_lists_sections() {
    let out = gpugraph(&["info"]);
    assert_success(&["info"], &out);
    let stdout = text(&out.stdout);
    for needle in ["adapter\n", "limits\n", "features\n", "  max_buffer_size "] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
}

#[test]
fn demo_runs_and_checks() {
    let out = gpugraph(&["demo"]);
    assert_success(&["demo"], &out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("demo: OK (100000 rows checked)"),
        "no OK line in:\n{stdout}"
    );
    assert!(
        stdout.contains("demo: node order: square -> add-one -> mix -> sum-rows"),
        "{stdout}"
    );
    assert!(
        stdout.contains("physical 2"),
        "no aliasing shown in:\n{stdout}"
    );
}

#[test]
fn demo_odd_row_count() {
    // Not a multiple of the workgroup size: the bounds checks of every kernel matter.
    let args = ["demo", "--rows", "1001", "--seed", "7"];
    let out = gpugraph(&args);
    assert_success(&args, &out);
    assert!(text(&out.stdout).contains("demo: OK (1001 rows checked)"));
}

#[test]
fn bench_graph_writes_json() {
    let json = TempPath::new("bench-graph.json");
    let args = [
        "bench",
        "graph",
        "--nodes",
        "50",
        "--repeat",
        "1",
        "--json",
        json.as_str(),
    ];
    let out = gpugraph(&args);
    assert_success(&args, &out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("chain") && stdout.contains("fan-out"),
        "{stdout}"
    );
    let body = std::fs::read_to_string(&json.0).expect("bench wrote its JSON file");
    let v: serde_json::Value = serde_json::from_str(&body).expect("bench JSON parses");
    assert_eq!(v["bench"], "graph");
    assert!(v["device"].is_string(), "{v}");
    assert!(v["capabilities"]["max_buffer_size"].is_u64(), "{v}");
    let cases = v["rows"].as_array().expect("rows array");
    assert_eq!(cases.len(), 2, "one case per shape: {v}");
    for case in cases {
        assert_eq!(case["nodes"], 50);
        assert!(case["compile_ms"]["median"].as_f64().is_some(), "{case}");
        assert_eq!(
            case["compile_ms"]["samples"].as_array().map(Vec::len),
            Some(1)
        );
        let t = &case["transients"];
        assert_eq!(t["logical_count"], 50, "{case}");
        // Both shapes let transients with disjoint lifetimes share allocations.
        assert!(
            t["physical_count"].as_u64().is_some_and(|p| p < 50),
            "no aliasing: {case}"
        );
    }
}

fn assert_clean_failure(args: &[&str]) -> String {
    let out = gpugraph(args);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "gpugraph {args:?} succeeded");
    assert!(
        !stderr.contains("panicked"),
        "gpugraph {args:?} panicked:\n{stderr}"
    );
    assert!(stderr.contains("error"), "no error message:\n{stderr}");
    stderr
}

#[test]
fn bad_arguments_fail_cleanly() {
    assert_clean_failure(&["no-such-command"]);
    assert_clean_failure(&["bench", "graph", "--nodes", "0"]);
    assert_clean_failure(&["bench", "graph", "--nodes", "ten"]);
    assert_clean_failure(&["bench", "graph", "--repeat", "0"]);
    assert_clean_failure(&["bench", "graph", "--shapes", "ring"]);
    assert_clean_failure(&["demo", "--rows", "0"]);
    assert_clean_failure(&["bench", "compact", "--selected", "101"]);
    assert_clean_failure(&["bench", "sort", "--sort-policy", "subgroups"]);
    assert_clean_failure(&["bench", "plot", "--out", "x.png"]);
}

#[test]
fn runtime_errors_are_one_line() {
    // The device cannot dispatch this many workgroups in one dimension.
    let stderr = assert_clean_failure(&["demo", "--rows", "99999999999"]);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: --rows"))
        .unwrap_or_else(|| panic!("no gpugraph error line in:\n{stderr}"));
    assert!(line.contains("workgroups"), "{line}");

    let stderr = assert_clean_failure(&[
        "bench",
        "graph",
        "--nodes",
        "5",
        "--json",
        "/nonexistent-dir/out.json",
    ]);
    assert!(stderr.contains("cannot write JSON"), "{stderr}");
}

#[test]
fn bench_plot_charts_bench_and_peer_json() {
    let json = TempPath::new("bench-compact.json");
    let peer = TempPath::new("bench-compact-peer.json");
    let png = TempPath::new("bench-chart.png");
    let args = [
        "bench",
        "compact",
        "--sizes",
        "4096",
        "--selected",
        "1,100",
        "--repeat",
        "1",
        "--json",
        json.as_str(),
    ];
    let out = gpugraph(&args);
    assert_success(&args, &out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("compact-1%") && stdout.contains("compact-100%"),
        "{stdout}"
    );
    std::fs::write(
        &peer.0,
        r#"{"device": "test", "rows": [{"op": "compact-1%", "peer": "torch.masked_select",
            "elements": 4096, "median_ms": 0.01, "min_ms": 0.01, "max_ms": 0.01}]}"#,
    )
    .unwrap();
    let args = [
        "bench",
        "plot",
        json.as_str(),
        peer.as_str(),
        "--out",
        png.as_str(),
    ];
    let out = gpugraph(&args);
    assert_success(&args, &out);
    assert!(
        text(&out.stderr).contains("2 operations"),
        "{}",
        text(&out.stderr)
    );
    // 1200 wide; 70 + 110 pixels of frame, 3 bars of 24 and 2 group gaps of 12.
    assert_chart_png(&png.0, 1200, 70 + 110 + 3 * 24 + 2 * 12);

    // Anything but bench JSON is a one-line error naming the file.
    std::fs::write(&peer.0, "{\"not\": \"rows\"}").unwrap();
    let err = assert_clean_failure(&["bench", "plot", peer.as_str(), "--out", png.as_str()]);
    assert!(err.contains(peer.as_str()), "{err}");
}
