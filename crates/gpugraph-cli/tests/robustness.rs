//! Hostile and edge-case inputs against the built binary (issue 12): every failure exits with
//! the right status, names what was wrong, never panics and leaves no output or temporary
//! behind; the cases that used to give silently wrong numbers give the right ones.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use arrow_array::{ArrayRef, Decimal128Array, Float32Array, RecordBatch, UInt8Array};
use arrow_schema::{DataType, Field, Schema};
use common::*;
use serde_json::Value;

/// The names in `dir`, sorted (temporaries included: they start with '.').
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Asserts the run failed with `code`, its error names every needle, and nothing panicked.
fn fails(out: &Output, code: i32, needles: &[&str]) -> String {
    let err = our_stderr(out);
    assert_eq!(out.status.code(), Some(code), "stderr:\n{err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    for n in needles {
        assert!(err.contains(n), "error does not name {n:?}:\n{err}");
    }
    err
}

fn report(dir: &str) -> Value {
    let text = std::fs::read_to_string(Path::new(dir).join("report.json")).expect("report.json");
    serde_json::from_str(&text).expect("report.json is JSON")
}

fn analyze_ok(args: &[&str]) -> Output {
    let mut all = vec!["analyze"];
    all.extend_from_slice(args);
    let out = gpugraph(&all);
    assert_success(&all, &out);
    out
}

#[test]
fn file_commands_validate_every_output_before_writing_any() {
    let dir = TempDir::new("rb-files");
    let keys = dir.path("k.npy");
    write_u32(&keys, &[3], &[3, 1, 2]);
    let out_keys = dir.path("sk.npy");
    let out = gpugraph(&[
        "sort",
        "--keys",
        &keys,
        "--values",
        &keys,
        "--out-keys",
        &out_keys,
        "--out-values",
        "/nonexistent/v.npy",
    ]);
    fails(&out, 1, &["--out-values", "/nonexistent/v.npy"]);
    assert_eq!(entries(&dir.0), ["k.npy"]);
    // Argument errors exit 2.
    let out = gpugraph(&[
        "sort",
        "--keys",
        &keys,
        "--out-keys",
        &out_keys,
        "--out-values",
        &dir.path("v.npy"),
    ]);
    fails(&out, 2, &["--values"]);
    let out = gpugraph(&[
        "sort",
        "--keys",
        &keys,
        "--values",
        &keys,
        "--out-keys",
        &out_keys,
        "--out-values",
        &out_keys,
    ]);
    fails(&out, 1, &["--out-keys", "--out-values", "both name"]);
    let out = gpugraph(&["scan", "--in", &keys, "--out", dir.dir()]);
    fails(&out, 1, &["--out", "is a directory"]);
    let bad = dir.path("bad.npy");
    std::fs::write(&bad, b"not npy").unwrap();
    for cmd in [
        vec!["scan", "--in", &bad, "--out", &out_keys],
        vec!["argsort", "--keys", &bad, "--out", &out_keys],
        vec!["mask", "--op", "not", &bad, "--out", &out_keys],
        vec![
            "compact", "--in", &keys, "--flags", &bad, "--out", &out_keys,
        ],
    ] {
        let out = gpugraph(&cmd);
        fails(&out, 1, &["bad.npy"]);
        assert_eq!(entries(&dir.0), ["bad.npy", "k.npy"], "{cmd:?}");
    }
    // A success leaves exactly its outputs, replacing an older file of the same name.
    std::fs::write(&out_keys, b"old").unwrap();
    let args = ["sort", "--keys", &keys, "--out-keys", &out_keys];
    assert_success(&args, &gpugraph(&args));
    assert_eq!(read_npy(&out_keys).2, vec![1, 2, 3]);
    assert_eq!(entries(&dir.0), ["bad.npy", "k.npy", "sk.npy"]);
}

#[test]
fn analyze_writes_a_complete_directory_or_nothing() {
    let dir = TempDir::new("rb-outdir");
    let csv = dir.path("t.csv");
    std::fs::write(&csv, "x,y,v,g\n1,1,1,a\n2,3,4,b\n3,2,9,a\n").unwrap();
    let out_dir = dir.path("sub/out");
    // A bad column: nothing is created (not --out, not its parent).
    let out = gpugraph(&["analyze", &csv, "--out", &out_dir, "--value", "nope"]);
    fails(&out, 1, &["nope"]);
    assert_eq!(entries(&dir.0), ["t.csv"]);
    // A run with a grid writes the heatmaps ...
    analyze_ok(&[
        &csv, "--out", &out_dir, "--value", "v", "--x", "x", "--y", "y",
    ]);
    assert!(entries(Path::new(&out_dir)).contains(&"heatmap.png".to_string()));
    // ... and a later run without one leaves no stale heatmap beside its report.
    analyze_ok(&[&csv, "--out", &out_dir, "--value", "v"]);
    assert_eq!(
        entries(Path::new(&out_dir)),
        ["cdf.png", "histogram.png", "report.json"]
    );
    assert!(report(&out_dir)["grid"].is_null());
    assert_eq!(entries(&dir.0.join("sub")), ["out"]);
    // A directory holding someone else's file is refused before any work, untouched.
    std::fs::write(Path::new(&out_dir).join("notes.txt"), "mine").unwrap();
    let out = gpugraph(&["analyze", &csv, "--out", &out_dir, "--value", "v"]);
    fails(&out, 1, &["--out", "notes.txt"]);
    assert_eq!(
        entries(Path::new(&out_dir)),
        ["cdf.png", "histogram.png", "notes.txt", "report.json"]
    );
    // --out naming a file is refused.
    let out = gpugraph(&["analyze", &csv, "--out", &csv, "--value", "v"]);
    fails(&out, 1, &["--out", "not a directory"]);
    assert_eq!(entries(&dir.0), ["sub", "t.csv"]);
}

#[test]
fn a_corrupt_arrow_file_is_a_named_error_not_a_panic() {
    // Found by fuzz/ (the table target): arrow-ipc panics on this buffer length.
    let dir = TempDir::new("rb-corrupt-ipc");
    let file = crate_file("tests/data/corrupt-buffer-length.arrow");
    let file = file.to_string_lossy();
    let out_dir = dir.path("out");
    let args = [
        "analyze", &file, "--out", &out_dir, "--value", "distance", "--group", "carrier",
    ];
    let out = gpugraph(&args);
    fails(&out, 1, &["corrupt-buffer-length.arrow", "corrupt"]);
    assert!(entries(&dir.0).is_empty(), "{:?}", entries(&dir.0));
}

#[test]
fn an_arrow_file_declaring_a_body_past_its_end_is_named_before_reading() {
    // Found by fuzz/ (the table target): a 704-byte file whose footer declares a ~1 GB block
    // (a dictionary's metadata), which arrow-ipc allocated before failing with "failed to fill
    // whole buffer".
    let dir = TempDir::new("rb-declared-body");
    let file = crate_file("tests/data/declared-body-length.arrow");
    let file = file.to_string_lossy();
    let out_dir = dir.path("out");
    let args = ["analyze", &file, "--out", &out_dir, "--value", "distance"];
    let out = gpugraph(&args);
    fails(
        &out,
        1,
        &[
            "declared-body-length.arrow",
            "dictionary 0 declares 1090519232",
            "corrupt",
        ],
    );
    assert!(entries(&dir.0).is_empty(), "{:?}", entries(&dir.0));
}

#[test]
fn duplicate_column_names_are_refused_by_name() {
    let dir = TempDir::new("rb-dup");
    let csv = dir.path("d.csv");
    std::fs::write(&csv, "v,v,g\n1,2,a\n3,4,b\n").unwrap();
    let out_dir = dir.path("out");
    let out = gpugraph(&["analyze", &csv, "--out", &out_dir, "--value", "v"]);
    fails(&out, 1, &["2 columns named 'v'", "d.csv"]);
    assert_eq!(entries(&dir.0), ["d.csv"]);
}

#[test]
fn float64_filters_compare_in_float64() {
    let dir = TempDir::new("rb-f64");
    let csv = dir.path("f.csv");
    std::fs::write(
        &csv,
        "v,w\n0.1,1\n0.10000000001,2\n0.2,3\n16777216,4\n16777217,5\nNA,6\n",
    )
    .unwrap();
    let out_dir = dir.path("out");
    analyze_ok(&[
        &csv, "--out", &out_dir, "--value", "w", "--filter", "v > 0.1",
    ]);
    let r = report(&out_dir);
    // numpy: 0.10000000001, 0.2, 16777216, 16777217.
    assert_eq!(r["selected"], 4, "{r}");
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("float64") && notes.contains("1 rows"),
        "{notes}"
    );
    analyze_ok(&[
        &csv,
        "--out",
        &out_dir,
        "--value",
        "w",
        "--filter",
        "v > 16777216",
    ]);
    assert_eq!(report(&out_dir)["selected"], 1);
}

#[test]
fn grid_counts_do_not_depend_on_the_value_and_the_domain_holds_every_point() {
    let dir = TempDir::new("rb-grid");
    let csv = dir.path("g.csv");
    let mut text = String::from("x,y,v\n");
    let xs = [0.1f64, 0.7, 0.30000000000000004, 16777217.5, 3.3];
    for i in 0..200 {
        let v = match i % 10 {
            0 => "NaN".to_string(),
            1 => "inf".to_string(),
            2 => "NA".to_string(),
            _ => format!("{}", i as f64 * 0.5),
        };
        text.push_str(&format!(
            "{},{},{v}\n",
            xs[i % xs.len()],
            (i % 7) as f64 * 0.1
        ));
    }
    std::fs::write(&csv, text).unwrap();
    let out_dir = dir.path("out");
    analyze_ok(&[
        &csv, "--out", &out_dir, "--value", "v", "--x", "x", "--y", "y", "--grid", "5,4",
    ]);
    let r = report(&out_dir);
    let g = &r["grid"];
    let total: u64 = g["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(total, 200, "every x/y point counts, whatever v is");
    let valued: u64 = g["value_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(valued, 140, "NaN, inf and null values leave only the means");
    let xd: Vec<f64> = g["x_domain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    for x in xs {
        assert!(xd[0] <= x && x <= xd[1], "{x} outside the x domain {xd:?}");
    }
    let yd: Vec<f64> = g["y_domain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(yd[0] <= 0.0 && yd[1] >= 0.6000000000000001, "{yd:?}");
    assert_eq!(r["schema_version"], 3);
    assert!(r["count_scopes"]["grid.counts"].is_string(), "{r}");
}

#[test]
fn grid_cell_order_is_row_major_from_the_lowest_y() {
    let dir = TempDir::new("rb-order");
    let csv = dir.path("o.csv");
    // One point at the lowest x and the highest y, two at the highest x and lowest y.
    std::fs::write(&csv, "x,y\n0,10\n5,0\n5,0\n").unwrap();
    let out_dir = dir.path("out");
    analyze_ok(&[
        &csv, "--out", &out_dir, "--x", "x", "--y", "y", "--grid", "3,2",
    ]);
    let counts = report(&out_dir)["grid"]["counts"].clone();
    // cell (cx, cy) at cy * nx + cx: (0, 1) -> 3, (2, 0) -> 2.
    assert_eq!(counts, serde_json::json!([0, 0, 2, 1, 0, 0]));
}

#[test]
fn value_ranges_wider_than_float32_still_get_edges() {
    let dir = TempDir::new("rb-wide");
    let csv = dir.path("w.csv");
    std::fs::write(&csv, "v\n-2e38\n2e38\n0\n5e37\n").unwrap();
    let out_dir = dir.path("out");
    let out = analyze_ok(&[&csv, "--out", &out_dir, "--value", "v", "--bins", "4"]);
    let r = report(&out_dir);
    let h = &r["value"]["histogram"];
    assert_eq!(h["invalid_edges"], false, "{r}");
    assert_eq!(h["counts"], serde_json::json!([1, 0, 2, 1]), "{r}");
    assert!(h["edges"].as_array().unwrap().iter().all(Value::is_f64));
    assert!(!text(&out.stdout).contains("too narrow"));
}

#[test]
fn a_huge_group_value_prints_whole() {
    let dir = TempDir::new("rb-longkey");
    let csv = dir.path("l.csv");
    let key = "k".repeat(70_000);
    std::fs::write(&csv, format!("g,v\n{key},1\nb,2\n")).unwrap();
    let out_dir = dir.path("out");
    let out = analyze_ok(&[&csv, "--out", &out_dir, "--group", "g", "--value", "v"]);
    assert!(text(&out.stdout).contains(&key));
}

/// Writes `batch` as an Arrow IPC file, LZ4-compressed when `lz4`.
fn write_ipc(path: &str, batch: &RecordBatch, lz4: bool) {
    use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
    let mut options = IpcWriteOptions::default();
    if lz4 {
        options = options
            .try_with_compression(Some(arrow_ipc::CompressionType::LZ4_FRAME))
            .unwrap();
    }
    let file = std::fs::File::create(path).unwrap();
    let mut w = FileWriter::try_new_with_options(file, &batch.schema(), options).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
}

#[test]
fn uint8_float16_and_decimal_columns_convert_and_lz4_feather_reads() {
    let dir = TempDir::new("rb-types");
    let half = arrow_cast::cast(
        &(Arc::new(Float32Array::from(vec![0.5, 1.5, -2.0])) as ArrayRef),
        &DataType::Float16,
    )
    .unwrap();
    let decimal = Decimal128Array::from(vec![125, -250, 1000])
        .with_precision_and_scale(10, 2)
        .unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("u8", DataType::UInt8, false),
        Field::new("f16", DataType::Float16, false),
        Field::new("dec", DataType::Decimal128(10, 2), false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt8Array::from(vec![7, 255, 0])),
            half,
            Arc::new(decimal),
        ],
    )
    .unwrap();
    let file = dir.path("t.feather");
    write_ipc(&file, &batch, true);
    let out_dir = dir.path("out");
    for (column, extent) in [
        ("u8", [0.0, 255.0]),
        ("f16", [-2.0, 1.5]),
        ("dec", [-2.5, 10.0]),
    ] {
        analyze_ok(&[&file, "--out", &out_dir, "--value", column]);
        let r = report(&out_dir);
        assert_eq!(
            r["value"]["extent"],
            serde_json::json!(extent),
            "{column}: {r}"
        );
    }
}

fn with_env(args: &[&str], set: &[(&str, &str)], remove: &[&str]) -> Output {
    let mut c = Command::new(binary());
    c.args(args);
    for (k, v) in set {
        c.env(k, v);
    }
    for k in remove {
        c.env_remove(k);
    }
    c.output().expect("start gpugraph")
}

#[test]
fn environment_is_checked_and_the_loader_stays_quiet() {
    let out = with_env(&["info"], &[("WGPU_BACKEND", "garbage")], &[]);
    fails(&out, 1, &["WGPU_BACKEND", "garbage", "invalid"]);
    let out = with_env(&["info"], &[], &["XDG_RUNTIME_DIR"]);
    assert_success(&["info"], &out);
    assert!(
        !text(&out.stderr).contains("XDG_RUNTIME_DIR"),
        "{}",
        text(&out.stderr)
    );
    let help = text(&gpugraph(&["--help"]).stdout);
    assert!(
        help.contains("WGPU_BACKEND") && help.contains("GPUGRAPH_ADAPTER"),
        "{help}"
    );
}

#[test]
fn an_oversized_grid_is_named() {
    let dir = TempDir::new("rb-bigrid");
    let csv = dir.path("b.csv");
    std::fs::write(&csv, "x,y,v\n1,2,3\n2,3,4\n").unwrap();
    let out_dir = dir.path("out");
    let out = gpugraph(&[
        "analyze",
        &csv,
        "--out",
        &out_dir,
        "--x",
        "x",
        "--y",
        "y",
        "--value",
        "v",
        "--grid",
        "4096,4096",
    ]);
    if !out.status.success() {
        fails(&out, 1, &["--grid 4096,4096"]);
        assert_eq!(entries(&dir.0), ["b.csv"]);
    }
}

#[test]
fn generate_table_checks_disk_and_leaves_nothing_on_error_or_sigterm() {
    let dir = TempDir::new("rb-gen");
    let out = gpugraph(&[
        "generate-table",
        "--rows",
        "100000000000000",
        "--out",
        &dir.path("huge.parquet"),
    ]);
    fails(&out, 1, &["--out", "free", "--rows"]);
    let out = gpugraph(&["generate-table", "--rows", "5", "--out", &dir.path("t.csv")]);
    fails(&out, 1, &["not CSV"]);
    assert!(entries(&dir.0).is_empty(), "{:?}", entries(&dir.0));
    // 40M rows need at most 560 MB (the free-space check's bound): small enough for a CI disk,
    // and still about forty batches, so the run is mid-write when the signal lands.
    let mut child = Command::new(binary())
        .args([
            "generate-table",
            "--rows",
            "40000000",
            "--out",
            &dir.path("big.arrow"),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start generate-table");
    // Wait for the first progress line: the temporary exists by then.
    {
        use std::io::BufRead;
        let stderr = child.stderr.take().unwrap();
        let mut lines = std::io::BufReader::new(stderr).lines();
        let first = lines.next().expect("no progress line").unwrap_or_default();
        assert!(
            first.starts_with("generate-table: "),
            "not progress: {first}"
        );
        std::thread::spawn(move || lines.for_each(drop));
    }
    assert!(!entries(&dir.0).is_empty(), "a temporary while writing");
    let pid = child.id().to_string();
    let kill = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15), "{status}");
    assert!(entries(&dir.0).is_empty(), "{:?}", entries(&dir.0));
}

#[test]
fn csv_type_errors_give_the_file_line() {
    let dir = TempDir::new("rb-csvline");
    let csv = dir.path("c.csv");
    // Past the 1,000,000 rows schema inference reads, so the column is inferred as Int64.
    let mut text = String::from("v\n");
    text.push_str(&"1\n".repeat(1_000_005));
    text.push_str("abc\n");
    std::fs::write(&csv, text).unwrap();
    let out_dir = dir.path("out");
    let out = gpugraph(&["analyze", &csv, "--out", &out_dir, "--value", "v"]);
    // Header on line 1, then 1,000,005 rows of 1: 'abc' is on line 1,000,007.
    fails(&out, 1, &["c.csv", "'abc'", "at line 1000007"]);
    assert_eq!(entries(&dir.0), ["c.csv"]);
}

#[test]
fn few_integer_values_get_one_bin_each_by_default() {
    let dir = TempDir::new("rb-intbins");
    let csv = dir.path("i.csv");
    std::fs::write(&csv, "v\n1\n2\n2\n5\n3\nNA\n").unwrap();
    let out_dir = dir.path("out");
    analyze_ok(&[&csv, "--out", &out_dir, "--value", "v"]);
    let r = report(&out_dir);
    assert_eq!(
        r["value"]["histogram"]["counts"],
        serde_json::json!([1, 2, 1, 0, 1]),
        "{r}"
    );
    assert!(r["notes"].to_string().contains("one per integer"), "{r}");
    analyze_ok(&[&csv, "--out", &out_dir, "--value", "v", "--bins", "2"]);
    assert_eq!(
        report(&out_dir)["value"]["histogram"]["counts"],
        serde_json::json!([3, 2])
    );
}
