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
