//! `gpugraph analyze` end to end on a small committed CSV (tests/data/flights_small.csv: 40
//! rows with a text group column, nulls, NaN, infinity, values on histogram edges and on the
//! filter threshold). Every expected number is computed here, independently, from the CSV
//! text (not by calling the code under test). Also the error cases, which must be one-line
//! errors naming the problem. Runs on the real GPU path (lavapipe on CI); never downloads.

mod common;

use std::path::Path;

use common::*;

use serde_json::Value;

/// The committed CSV (found beside the carried test binaries too: [`crate_file`]).
static CSV_PATH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    crate_file("tests/data/flights_small.csv")
        .to_string_lossy()
        .into_owned()
});

/// Runs analyze of the committed CSV with `args` into a fresh directory; returns report.json.
fn analyze(name: &str, args: &[&str]) -> (Value, TempDir) {
    analyze_file(CSV_PATH.as_str(), name, args)
}

/// Runs analyze of `file` with `args` into a fresh directory `name`; returns report.json.
fn analyze_file(file: &str, name: &str, args: &[&str]) -> (Value, TempDir) {
    let dir = TempDir::new(name);
    let mut all = vec!["analyze", file, "--out", dir.dir()];
    all.extend_from_slice(args);
    let out = gpugraph(&all);
    assert_success(&all, &out);
    let json = std::fs::read_to_string(dir.0.join("report.json")).expect("report.json written");
    let v: Value = serde_json::from_str(&json).expect("report.json is JSON");
    (v, dir)
}

fn fails(args: &[&str]) -> String {
    let out = gpugraph(args);
    assert!(!out.status.success(), "gpugraph {args:?} should fail");
    let err = text(&out.stderr);
    assert!(
        !err.contains("panicked"),
        "panic instead of an error: {err}"
    );
    // The last one: the Vulkan loader may print its own "error: ..." lines first.
    let line = err
        .lines()
        .rfind(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no 'error:' line in stderr:\n{err}"));
    line.to_string()
}

// ---- the independent oracle over the CSV text -------------------------------------------

/// One CSV row: None = null (NA or empty); numbers as float32 (the GPU's type).
#[derive(Clone, Debug)]
struct Row {
    carrier: Option<String>,
    dep_time: Option<f32>,
    arr_delay: Option<f32>,
    distance: Option<f32>,
}

fn rows() -> Vec<Row> {
    let data = std::fs::read_to_string(CSV_PATH.as_str()).expect("test CSV");
    let mut lines = data.lines();
    assert_eq!(lines.next(), Some("id,carrier,dep_time,arr_delay,distance"));
    let num = |s: &str| -> Option<f32> {
        match s {
            "" | "NA" => None,
            "NaN" => Some(f32::NAN),
            "inf" => Some(f32::INFINITY),
            _ => Some(s.parse::<f64>().expect("number") as f32),
        }
    };
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 5, "{l}");
            Row {
                carrier: (!f[1].is_empty()).then(|| f[1].to_string()),
                dep_time: num(f[2]),
                arr_delay: num(f[3]),
                distance: num(f[4]),
            }
        })
        .collect()
}

/// The elements of JSON array `v`, each converted by `get` (panics naming `what` otherwise).
fn array_of<T>(v: &Value, what: &str, get: impl Fn(&Value) -> Option<T>) -> Vec<T> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| get(x).unwrap_or_else(|| panic!("not a {what}: {x}")))
        .collect()
}

fn f64s(v: &Value) -> Vec<f64> {
    array_of(v, "number", Value::as_f64)
}

fn u64s(v: &Value) -> Vec<u64> {
    array_of(v, "count", Value::as_u64)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4 * b.abs().max(1.0)
}

/// Index of the bin of `v` over sorted `edges`: `[e_i, e_i+1)`, the last bin closed.
fn bin_of(edges: &[f64], v: f64) -> Option<usize> {
    let n = edges.len() - 1;
    if !(edges[0]..=edges[n]).contains(&v) {
        return None;
    }
    Some(
        edges[1..]
            .iter()
            .take_while(|&&e| e <= v)
            .count()
            .min(n - 1),
    )
}

/// The plot `name` in `dir` is a 960 × 600 chart that is not blank.
fn check_png(dir: &Path, name: &str) {
    assert_chart_png(&dir.join(name), 960, 600);
}

/// Value, group and a 4 × 3 grid over the committed flights sample.
const ROLES: [&str; 10] = [
    "--value",
    "arr_delay",
    "--group",
    "carrier",
    "--x",
    "dep_time",
    "--y",
    "arr_delay",
    "--grid",
    "4,3",
];

#[test]
fn filtered_analysis_matches_an_independent_oracle() {
    let args: Vec<&str> = ROLES
        .iter()
        .copied()
        .chain(["--filter", "distance >= 500", "--bins", "8"])
        .collect();
    let (r, dir) = analyze("full", &args);
    let data = rows();
    // NaN and null distances never pass; 500 itself passes >=.
    let sel: Vec<&Row> = data
        .iter()
        .filter(|r| r.distance.is_some_and(|d| d >= 500.0))
        .collect();
    assert_eq!(r["rows"], 40);
    assert_eq!(r["selected"].as_u64(), Some(sel.len() as u64));
    assert_eq!(r["filters"][0], "distance >= 500");

    // Value: extent, non-finite, nulls.
    let values: Vec<f32> = sel.iter().filter_map(|r| r.arr_delay).collect();
    let finite: Vec<f64> = values
        .iter()
        .filter(|v| v.is_finite())
        .map(|&v| v as f64)
        .collect();
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let v = &r["value"];
    assert_eq!(f64s(&v["extent"]), vec![lo, hi]);
    assert_eq!(
        v["nonfinite"].as_u64(),
        Some((values.len() - finite.len()) as u64)
    );
    assert_eq!(
        v["nulls"].as_u64(),
        Some(data.iter().filter(|r| r.arr_delay.is_none()).count() as u64)
    );
    assert_eq!(v["count"].as_u64(), Some(finite.len() as u64));

    // Histogram: 8 equal bins over the extent; values on interior edges go up, the maximum
    // into the last bin.
    let edges: Vec<f64> = (0..=8).map(|i| lo + (hi - lo) * i as f64 / 8.0).collect();
    let h = &v["histogram"];
    assert_eq!(h["kind"], "uniform");
    assert_eq!(f64s(&h["edges"]), edges);
    let mut counts = vec![0u64; 8];
    for &x in &finite {
        counts[bin_of(&edges, x).expect("inside the extent")] += 1;
    }
    assert!(
        finite.iter().filter(|x| edges.contains(x)).count() >= 5,
        "test data has values on edges"
    );
    assert_eq!(u64s(&h["counts"]), counts);
    let cumulative: Vec<u64> = counts
        .iter()
        .scan(0, |s, c| {
            *s += c;
            Some(*s)
        })
        .collect();
    assert_eq!(u64s(&h["cumulative"]), cumulative);
    let total = *cumulative.last().unwrap() as f64;
    let cdf: Vec<f64> = cumulative.iter().map(|&c| c as f64 / total).collect();
    for (got, want) in f64s(&h["cdf"]).into_iter().zip(&cdf) {
        assert!(close(got, *want), "cdf {got} vs {want}");
    }
    assert_eq!(h["outside"], 0);
    assert_eq!(h["invalid_edges"], false);

    // Groups: every string of the column with a selected row, sorted (ZZ, filtered out
    // entirely, is left out and named, as pandas' groupby after filtering); rows with a null
    // carrier or a null / non-finite value do not count.
    let mut keys: Vec<String> = sel.iter().filter_map(|r| r.carrier.clone()).collect();
    keys.sort();
    keys.dedup();
    assert!(!keys.contains(&"ZZ".to_string()));
    assert_eq!(r["groups_without_selected_rows"], serde_json::json!(["ZZ"]));
    let groups = r["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), keys.len());
    for (g, key) in groups.iter().zip(&keys) {
        let members: Vec<f64> = sel
            .iter()
            .filter(|r| r.carrier.as_ref() == Some(key))
            .filter_map(|r| r.arr_delay)
            .filter(|v| v.is_finite())
            .map(|v| v as f64)
            .collect();
        assert_eq!(g["key"].as_str(), Some(key.as_str()));
        assert_eq!(
            g["count"].as_u64(),
            Some(members.len() as u64),
            "group {key}"
        );
        if members.is_empty() {
            assert!(g["mean"].is_null(), "empty group {key} mean: {}", g["mean"]);
        } else {
            let mean = members.iter().sum::<f64>() / members.len() as f64;
            let got = g["mean"].as_f64().expect("mean");
            assert!(close(got, mean), "group {key}: mean {got} vs {mean}");
        }
    }
    assert_ne!(groups.last().unwrap()["key"], "ZZ", "ZZ is filtered out");

    // Grid: rows whose x, y and value are non-null and finite; domain = their extent.
    let pts: Vec<(f64, f64)> = sel
        .iter()
        .filter_map(|r| Some((r.dep_time? as f64, r.arr_delay? as f64)))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let ext = |k: fn(&(f64, f64)) -> f64| {
        let it = pts.iter().map(k);
        [
            it.clone().fold(f64::INFINITY, f64::min),
            it.fold(f64::NEG_INFINITY, f64::max),
        ]
    };
    let (xd, yd) = (ext(|p| p.0), ext(|p| p.1));
    let g = &r["grid"];
    assert_eq!(f64s(&g["x_domain"]).as_slice(), &xd);
    assert_eq!(f64s(&g["y_domain"]).as_slice(), &yd);
    assert_eq!(u64s(&g["bins"]), vec![4, 3]);
    let (nx, ny) = (4usize, 3usize);
    let mut cells = vec![Vec::new(); nx * ny];
    for &(x, y) in &pts {
        let tx = (x - xd[0]) / (xd[1] - xd[0]) * nx as f64;
        let ty = (y - yd[0]) / (yd[1] - yd[0]) * ny as f64;
        // The data keeps every point away from interior cell edges (float32 rounding there
        // could pick either neighbour).
        for t in [tx, ty] {
            assert!(
                t.fract().min(1.0 - t.fract()) > 1e-3
                    || t == 0.0
                    || t == nx as f64
                    || t == ny as f64
            );
        }
        let (cx, cy) = ((tx as usize).min(nx - 1), (ty as usize).min(ny - 1));
        cells[cy * nx + cx].push(y);
    }
    let counts: Vec<u64> = cells.iter().map(|c| c.len() as u64).collect();
    assert_eq!(u64s(&g["counts"]), counts);
    for (i, (c, m)) in cells
        .iter()
        .zip(g["mean"].as_array().expect("grid mean"))
        .enumerate()
    {
        if c.is_empty() {
            assert!(m.is_null(), "cell {i}");
        } else {
            let want = c.iter().sum::<f64>() / c.len() as f64;
            assert!(
                close(m.as_f64().expect("mean"), want),
                "cell {i}: {m} vs {want}"
            );
        }
    }

    for phase in ["load", "upload", "compile", "gpu", "readback", "total"] {
        let t = r["timings_ms"][phase].as_f64().unwrap_or(-1.0);
        assert!(t >= 0.0, "timing {phase}: {}", r["timings_ms"]);
    }
    for png in [
        "histogram.png",
        "cdf.png",
        "heatmap.png",
        "heatmap_mean.png",
    ] {
        check_png(&dir.0, png);
    }
}

#[test]
fn deterministic_means_agree_with_the_default_and_repeat_bit_for_bit() {
    let with_flag: Vec<&str> = ROLES.iter().copied().chain(["--deterministic"]).collect();
    let (atomic, _d0) = analyze("atomic", &ROLES);
    let (first, _d1) = analyze("det-1", &with_flag);
    let (second, _d2) = analyze("det-2", &with_flag);
    assert_eq!(atomic["summation"], "atomic");
    assert_eq!(first["summation"], "deterministic");
    // The same rows count; means agree to float32 accuracy; repeated runs are identical.
    assert_eq!(first["groups"], second["groups"]);
    assert_eq!(first["grid"], second["grid"]);
    let groups = |r: &Value| r["groups"].as_array().expect("groups").clone();
    for (a, d) in groups(&atomic).iter().zip(&groups(&first)) {
        assert_eq!(a["count"], d["count"]);
        match (a["mean"].as_f64(), d["mean"].as_f64()) {
            (Some(x), Some(y)) => assert!(close(x, y), "group {}: {x} vs {y}", a["key"]),
            (x, y) => assert_eq!(x, y, "group {}", a["key"]),
        }
    }
    assert_eq!(atomic["grid"]["counts"], first["grid"]["counts"]);
}

#[test]
fn explicit_edges_and_combined_filters() {
    let data = rows();
    // Literal edges, no filter: values below/above the edges are "outside"; the top edge 100
    // is included in the last bin.
    let (r, _dir) = analyze(
        "edges",
        &[
            "--value",
            "arr_delay",
            "--group",
            "carrier",
            "--edges",
            "-50,0,50,100",
        ],
    );
    assert_eq!(r["selected"], 40);
    let edges = [-50.0, 0.0, 50.0, 100.0];
    let finite: Vec<f64> = data
        .iter()
        .filter_map(|r| r.arr_delay)
        .filter(|v| v.is_finite())
        .map(|v| v as f64)
        .collect();
    let mut counts = vec![0u64; 3];
    let mut outside = 0;
    for &x in &finite {
        match bin_of(&edges, x) {
            Some(b) => counts[b] += 1,
            None => outside += 1,
        }
    }
    let h = &r["value"]["histogram"];
    assert_eq!(h["kind"], "edges");
    assert_eq!(f64s(&h["edges"]), edges.to_vec());
    assert_eq!(u64s(&h["counts"]), counts);
    assert_eq!(h["outside"].as_u64(), Some(outside));
    assert!(outside >= 3, "test data has values outside the edges");
    assert_eq!(r["value"]["count"].as_u64(), Some(finite.len() as u64));
    assert!(r["grid"].is_null());

    // Two filters ANDed: an integer column against a fractional threshold (exact integer
    // semantics) and a text column.
    let (r, _dir) = analyze(
        "filters",
        &[
            "--group",
            "carrier",
            "--filter",
            "dep_time < 1000.5",
            "--filter",
            "carrier != 'UA'",
        ],
    );
    let sel: Vec<&Row> = data
        .iter()
        .filter(|r| r.dep_time.is_some_and(|d| d < 1000.5))
        .filter(|r| r.carrier.as_ref().is_some_and(|c| c != "UA"))
        .collect();
    assert_eq!(r["selected"].as_u64(), Some(sel.len() as u64));
    assert!(r["value"].is_null());
    for g in r["groups"].as_array().expect("groups") {
        let key = g["key"].as_str().expect("key");
        let n = sel
            .iter()
            .filter(|r| r.carrier.as_deref() == Some(key))
            .count();
        assert_eq!(g["count"].as_u64(), Some(n as u64), "group {key}");
        assert!(g["mean"].is_null());
    }
}

#[test]
fn bad_input_gives_named_errors() {
    let dir = TempDir::new("errors");
    let out = dir.dir();
    // The CSV analyzed with `args`.
    let fails_with = |args: &[&str]| {
        let mut all = vec!["analyze", CSV_PATH.as_str(), "--out", out];
        all.extend_from_slice(args);
        fails(&all)
    };
    let e = fails_with(&["--value", "delay"]);
    assert!(
        e.contains("no column 'delay'") && e.contains("arr_delay (Float64)"),
        "{e}"
    );
    let e = fails_with(&["--value", "carrier"]);
    assert!(
        e.contains("'carrier'")
            && e.contains("Utf8")
            && e.contains("numeric")
            && e.contains("distance"),
        "{e}"
    );
    let e = fails_with(&["--group", "distance"]);
    assert!(
        e.contains("'distance'") && e.contains("Float64") && e.contains("carrier (Utf8"),
        "{e}"
    );
    let e = fails_with(&["--value", "arr_delay", "--filter", "distance => 5"]);
    assert!(e.contains("bad --filter") && e.contains("use =="), "{e}");
    let e = fails_with(&["--value", "arr_delay", "--filter", "distance < far"]);
    assert!(e.contains("'far' is not a number"), "{e}");
    let e = fails_with(&["--value", "arr_delay", "--filter", "carrier < UA"]);
    assert!(e.contains("only == and !="), "{e}");
    let e = fails_with(&["--value", "arr_delay", "--edges", "3,1"]);
    assert!(e.contains("strictly increasing"), "{e}");
    let xlsx = dir.0.with_extension("xlsx");
    std::fs::write(&xlsx, "not a table").expect("scratch file");
    let e = fails(&[
        "analyze",
        xlsx.to_str().expect("UTF-8"),
        "--out",
        out,
        "--value",
        "x",
    ]);
    let _ = std::fs::remove_file(&xlsx);
    assert!(
        e.contains("unsupported file type '.xlsx'") && e.contains(".parquet"),
        "{e}"
    );
    let e = fails_with(&[]);
    assert!(e.contains("nothing to analyze"), "{e}");
}

#[test]
fn generated_tables_round_trip_through_parquet_and_ipc() {
    let dir = TempDir::new("generate");
    std::fs::create_dir_all(&dir.0).expect("scratch dir");
    let mut reports = Vec::new();
    for name in ["t.parquet", "t.arrow"] {
        let file = dir.0.join(name);
        let file = file.to_str().expect("UTF-8");
        let out = gpugraph(&[
            "generate-table",
            "--rows",
            "3000",
            "--out",
            file,
            "--seed",
            "5",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let (r, _d) = analyze_file(
            file,
            &format!("generate-{name}"),
            &[
                "--value",
                "arr_delay",
                "--group",
                "carrier",
                "--x",
                "dep_time",
                "--y",
                "distance",
                "--filter",
                "carrier != OO",
            ],
        );
        assert_eq!(r["rows"], 3000);
        reports.push(r);
    }
    // Same seed, same table: both formats give the same numbers. (Parquet keeps only the
    // dictionary strings that occur, IPC the whole dictionary: compare non-empty groups.)
    for key in ["selected", "value"] {
        assert_eq!(reports[0][key], reports[1][key], "{key}");
    }
    let occurring = |r: &Value| -> Vec<Value> {
        let groups = r["groups"].as_array().expect("groups").iter();
        groups.filter(|g| g["count"] != 0).cloned().collect()
    };
    assert_eq!(occurring(&reports[0]), occurring(&reports[1]));
    assert_eq!(reports[0]["grid"]["counts"], reports[1]["grid"]["counts"]);
    let v = &reports[0]["value"];
    assert!(
        v["nulls"].as_u64().unwrap() > 0 && v["nonfinite"].as_u64().unwrap() > 0,
        "{v}"
    );
}

/// `--z`: the mean heatmap averages a third column (distance) over the dep_time × arr_delay
/// cells, checked against the CSV oracle; z may not be an axis of the grid.
#[test]
fn z_means_average_a_third_column_per_cell() {
    let args = [
        "--x",
        "dep_time",
        "--y",
        "arr_delay",
        "--z",
        "distance",
        "--grid",
        "4,3",
        "--filter",
        "distance >= 500",
    ];
    let (r, dir) = analyze("z-mean", &args);
    let g = &r["grid"];
    assert_eq!(g["z"], "distance");
    // NaN and null distances never pass the filter: every selected z is finite.
    let pts: Vec<(f64, f64, f64)> = rows()
        .iter()
        .filter(|r| r.distance.is_some_and(|d| d >= 500.0))
        .filter_map(|r| Some((r.dep_time? as f64, r.arr_delay? as f64, r.distance? as f64)))
        .filter(|(x, y, _)| x.is_finite() && y.is_finite())
        .collect();
    let ext = |k: fn(&(f64, f64, f64)) -> f64| {
        let it = pts.iter().map(k);
        [
            it.clone().fold(f64::INFINITY, f64::min),
            it.fold(f64::NEG_INFINITY, f64::max),
        ]
    };
    let (xd, yd) = (ext(|p| p.0), ext(|p| p.1));
    assert_eq!(f64s(&g["x_domain"]).as_slice(), &xd);
    assert_eq!(f64s(&g["y_domain"]).as_slice(), &yd);
    let (nx, ny) = (4usize, 3usize);
    let mut cells = vec![Vec::new(); nx * ny];
    for &(x, y, z) in &pts {
        let tx = (x - xd[0]) / (xd[1] - xd[0]) * nx as f64;
        let ty = (y - yd[0]) / (yd[1] - yd[0]) * ny as f64;
        let (cx, cy) = ((tx as usize).min(nx - 1), (ty as usize).min(ny - 1));
        cells[cy * nx + cx].push(z);
    }
    let counts: Vec<u64> = cells.iter().map(|c| c.len() as u64).collect();
    assert_eq!(u64s(&g["value_counts"]), counts);
    let means = g["mean"].as_array().expect("grid mean");
    for (i, (c, m)) in cells.iter().zip(means).enumerate() {
        if c.is_empty() {
            assert!(m.is_null(), "cell {i}");
        } else {
            let want = c.iter().sum::<f64>() / c.len() as f64;
            let got = m.as_f64().expect("mean");
            assert!(close(got, want), "cell {i}: {got} vs {want}");
        }
    }
    check_png(&dir.0, "heatmap_mean.png");
    for axis in ["dep_time", "arr_delay"] {
        let e = fails(&[
            "analyze",
            CSV_PATH.as_str(),
            "--x",
            "dep_time",
            "--y",
            "arr_delay",
            "--z",
            axis,
        ]);
        assert!(
            e.contains(&format!("--z '{axis}' is also the grid's")),
            "{e}"
        );
    }
}

/// `--log-y` draws the histogram's counts on a log axis: a valid, non-blank chart that
/// differs from the linear one of the same data (the pixel-level check of the scale is the
/// plot module's unit test).
#[test]
fn log_y_histogram() {
    let base = ["--value", "arr_delay", "--bins", "8"];
    let (_, linear) = analyze("hist-linear", &base);
    let with_log: Vec<&str> = base.iter().copied().chain(["--log-y"]).collect();
    let (_, log) = analyze("hist-log", &with_log);
    check_png(&linear.0, "histogram.png");
    check_png(&log.0, "histogram.png");
    let (_, _, a) = read_png(&linear.0.join("histogram.png"));
    let (_, _, b) = read_png(&log.0.join("histogram.png"));
    assert_ne!(a, b, "--log-y changed nothing");
    // The CDF does not depend on the count axis.
    assert_eq!(
        read_png(&linear.0.join("cdf.png")).2,
        read_png(&log.0.join("cdf.png")).2
    );
}
