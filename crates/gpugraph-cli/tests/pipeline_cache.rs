//! The command line's persisted driver pipeline cache: `analyze` writes it under
//! `$XDG_CACHE_HOME/gpugraph/pipelines` and the next run offers it to the driver;
//! `GPUGRAPH_PIPELINE_CACHE=off` writes nothing; a bad value is an error naming the variable.
//! Runs on the real GPU path (lavapipe on CI, Vulkan on the H200).

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

/// Runs analyze of the committed CSV into `out` with `XDG_CACHE_HOME=cache` and, when given,
/// `GPUGRAPH_PIPELINE_CACHE=setting`.
fn analyze(cache: &Path, out: &Path, setting: Option<&str>) -> Output {
    let csv = crate_file("tests/data/flights_small.csv");
    let mut cmd = Command::new(binary());
    cmd.arg("analyze")
        .arg(&csv)
        .args(["--value", "arr_delay", "--group", "carrier", "--out"])
        .arg(out)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("GPUGRAPH_PIPELINE_CACHE");
    if let Some(s) = setting {
        cmd.env("GPUGRAPH_PIPELINE_CACHE", s);
    }
    cmd.output().expect("gpugraph starts")
}

fn report(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
}

/// The files in the pipeline-cache directory under `cache` (none when it does not exist).
fn cache_files(cache: &Path) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(cache.join("gpugraph").join("pipelines")) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn analyze_saves_the_pipeline_cache_and_the_next_run_offers_it() {
    let dir = TempDir::new("pipeline-cache-on");
    let cache = dir.0.join("cache");
    let out1 = analyze(&cache, &dir.0.join("out1"), None);
    assert_success(&["analyze (first)"], &out1);
    let files = cache_files(&cache);
    assert_eq!(files.len(), 1, "one cache file, no temporaries: {files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("wgpu_pipeline_cache_vulkan_"), "{name}");
    let bytes = std::fs::metadata(&files[0]).unwrap().len();
    assert!(bytes > 0);
    let r1 = report(&dir.0.join("out1"));
    assert_eq!(r1["graph"]["pipeline_cache"]["loaded"], "missing");
    assert_eq!(
        r1["graph"]["pipeline_cache"]["file"],
        files[0].to_string_lossy().as_ref()
    );
    assert!(r1["graph"]["pipelines_created"].as_u64().unwrap() > 0);
    assert!(r1["timings_ms"]["compile"].as_f64().unwrap() > 0.0);
    let err = our_stderr(&out1);
    assert!(
        err.lines()
            .any(|l| l.starts_with("analyze: compiled ") && l.contains(" ms (pipeline cache ")),
        "no compile timing line on stderr:\n{err}"
    );

    let out2 = analyze(&cache, &dir.0.join("out2"), Some("on"));
    assert_success(&["analyze (second)"], &out2);
    let r2 = report(&dir.0.join("out2"));
    assert_eq!(
        r2["graph"]["pipeline_cache"]["loaded"]["offered"]["bytes"].as_u64(),
        Some(bytes)
    );
    assert_eq!(r1["groups"], r2["groups"], "the cache changed a result");
}

#[test]
fn off_writes_no_pipeline_cache_and_bad_values_are_named() {
    let dir = TempDir::new("pipeline-cache-off");
    let cache = dir.0.join("cache");
    for off in ["off", "OFF", "0"] {
        let out = analyze(&cache, &dir.0.join(format!("out-{off}")), Some(off));
        assert_success(&["analyze", off], &out);
        assert!(
            cache_files(&cache).is_empty() && !cache.join("gpugraph").exists(),
            "GPUGRAPH_PIPELINE_CACHE={off} wrote a cache"
        );
        let r = report(&dir.0.join(format!("out-{off}")));
        assert!(r["graph"]["pipeline_cache"].is_null());
        assert!(our_stderr(&out).contains("(no pipeline cache)"));
    }
    let out = analyze(&cache, &dir.0.join("out-bad"), Some("sometimes"));
    assert!(!out.status.success());
    let err = our_stderr(&out);
    assert!(
        err.contains("GPUGRAPH_PIPELINE_CACHE='sometimes' is invalid"),
        "{err}"
    );
    assert!(!dir.0.join("out-bad").exists(), "a failed run left output");
}

#[test]
fn help_names_the_variable() {
    let out = gpugraph(&["--help"]);
    assert_success(&["--help"], &out);
    assert!(text(&out.stdout).contains("GPUGRAPH_PIPELINE_CACHE"));
}
