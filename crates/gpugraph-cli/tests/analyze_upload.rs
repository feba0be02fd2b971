//! `analyze` uploads its columns on one thread each: when several columns fail to upload, the
//! error is always the first failing column in file order (not whichever thread lost the
//! race), no output is left behind, and the timing line names the device wait.

mod common;

use common::*;

#[test]
fn the_first_failing_column_in_file_order_is_the_error_every_time() {
    let dir = TempDir::new("upload-errors");
    let csv = dir.path("big.csv");
    // Both int64 columns hold a value beyond int32; 'a' comes first in the file.
    std::fs::write(&csv, "a,b,g\n1,2,x\n10000000000,20000000000,y\n3,4,x\n").unwrap();
    let out = dir.path("out");
    for (value, xy) in [("b", ["a", "b"]), ("a", ["b", "a"])] {
        for _ in 0..3 {
            let args = [
                "analyze", &csv, "--value", value, "--x", xy[0], "--y", xy[1], "--group", "g",
                "--out", &out,
            ];
            let run = gpugraph(&args);
            assert!(!run.status.success(), "{args:?} succeeded");
            let err = our_stderr(&run);
            let last = err
                .lines()
                .rfind(|l| l.starts_with("error: "))
                .unwrap_or("");
            assert_eq!(
                last,
                format!("error: uploading {csv}: column 'a' row 1: value 10000000000 does not fit sint32"),
                "{args:?}"
            );
            assert!(!std::path::Path::new(&out).exists());
        }
    }
}

#[test]
fn timings_name_the_device_wait() {
    let dir = TempDir::new("upload-timings");
    let csv = dir.path("t.csv");
    std::fs::write(&csv, "v,g\n1.5,x\n2.5,y\n").unwrap();
    let out = dir.path("out");
    let args = [
        "analyze", &csv, "--value", "v", "--group", "g", "--out", &out,
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    assert!(text(&run.stdout).contains(", device wait "));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.0.join("out/report.json")).unwrap())
            .unwrap();
    assert!(report["timings_ms"]["device_wait"].as_f64().unwrap() >= 0.0);
}
