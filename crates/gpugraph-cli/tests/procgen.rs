//! `gpugraph procgen run`: the sprout_tail example's play report names its planning wait (the
//! expression, the node, the number) every frame and counts the re-plan when the number moves;
//! a graph that fails is one error line and leaves no report behind.

mod common;

use common::*;

fn example(name: &str) -> String {
    crate_file(&format!("../gpugraph-procgen/examples/graph/{name}"))
        .display()
        .to_string()
}

#[test]
fn the_play_report_lists_planning_waits_and_replans() {
    let dir = TempDir::new("procgen-run");
    let report = dir.path("report.json");
    let graph = example("sprout_tail.luau");
    let args = [
        "procgen", "run", &graph, "--frames", "4", "--report", &report,
    ];
    let out = gpugraph(&args);
    assert_success(&args, &out);
    let stdout = text(&out.stdout);
    let waits = stdout
        .lines()
        .filter(|l| l.contains("planning wait: `(kept.indices_count - 3)` read back = "))
        .filter(|l| l.contains("for the domain of sprouts#"))
        .count();
    assert_eq!(waits, 5, "{stdout}");
    assert!(stdout.contains("planned again"), "{stdout}");
    assert!(
        stdout.contains(
            "recordings 2, replays 5, guarded 0, measured 0, planning waits 5 (replans 1)"
        ),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["counts"]["replans"], 1);
    assert_eq!(json["counts"]["plan_waits"], 5);
    assert_eq!(json["frames"].as_array().unwrap().len(), 4);
}

#[test]
fn a_failing_graph_is_one_error_line_and_writes_no_report() {
    let dir = TempDir::new("procgen-fail");
    let report = dir.path("report.json");
    let graph = dir.path("bad.luau");
    std::fs::write(
        &graph,
        "function cook(frame)\n  device.kernel({ kernel = \"gather\", domain = 1 })\n  return transfer.readback({ columns = {} })\nend\n",
    )
    .unwrap();
    let args = ["procgen", "run", &graph, "--report", &report];
    let out = gpugraph(&args);
    assert_eq!(out.status.code(), Some(1), "{}", our_stderr(&out));
    let err = our_stderr(&out);
    assert!(
        err.starts_with("error: ") && err.contains("gather") && !err.contains("panicked"),
        "{err}"
    );
    assert!(!std::path::Path::new(&report).exists());
}

/// Runs `procgen run` on `script` with `flags`; answers the exit code and our stderr.
fn run_script(name: &str, script: &[u8], flags: &[&str]) -> (Option<i32>, String) {
    let dir = TempDir::new(name);
    let graph = dir.path("graph.luau");
    std::fs::write(&graph, script).unwrap();
    let mut args = vec!["procgen", "run", &graph];
    args.extend_from_slice(flags);
    let out = gpugraph(&args);
    (out.status.code(), our_stderr(&out))
}

#[test]
fn an_assets_root_that_is_not_there_is_one_error_naming_it() {
    let dir = TempDir::new("procgen-assets");
    let missing = dir.path("no-such-assets");
    let graph = example("sprout_tail.luau");
    let args = ["procgen", "run", &graph, "--assets", &missing];
    let out = gpugraph(&args);
    assert_eq!(out.status.code(), Some(1), "{}", our_stderr(&out));
    assert_eq!(
        our_stderr(&out).trim_end(),
        format!("error: --assets: asset root `{missing}` does not exist")
    );
    let file = dir.path("file");
    std::fs::write(&file, "").unwrap();
    let args = ["procgen", "run", &graph, "--assets", &file];
    let out = gpugraph(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        our_stderr(&out).contains("is not a directory"),
        "{}",
        our_stderr(&out)
    );
}

#[test]
fn a_script_that_never_ends_stops_at_its_ceiling_naming_the_flag() {
    let t0 = std::time::Instant::now();
    let (code, err) = run_script(
        "procgen-busy",
        b"function cook(frame) while true do end end\n",
        &["--script-timeout", "0.5"],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with(
            "error: script exceeded its 0.5 s CPU-time ceiling (--script-timeout) in cook(frame 0)"
        ) && err.lines().count() == 1,
        "{err}"
    );
    assert!(t0.elapsed().as_secs() < 60, "{:?}", t0.elapsed());
    let (code, err) = run_script(
        "procgen-bomb",
        b"local t = {} for i = 1, 1e9 do t[i] = { i } end\n",
        &["--script-memory", "32"],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("error: script exceeded its 32 MiB memory limit (--script-memory)"),
        "{err}"
    );
    for (flag, value) in [
        ("--script-timeout", "0"),
        ("--script-timeout", "-1"),
        ("--script-timeout", "NaN"),
        ("--script-memory", "0"),
    ] {
        let (code, err) = run_script("procgen-flag", b"x = 1\n", &[flag, value]);
        assert_eq!(code, Some(1), "{flag} {value}: {err}");
        assert!(err.contains(flag) && err.contains(value), "{err}");
    }
}

#[test]
fn a_bytecode_script_is_refused_by_name() {
    let (code, err) = run_script("procgen-bytecode", b"\x03\x01\x00garbage\xff", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("error: script `") && err.contains("is not Luau source text"),
        "{err}"
    );
}
