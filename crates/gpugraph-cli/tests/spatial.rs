//! `gpugraph spatial` over `.npy` and Parquet points: grid, BVH and scan give the IDs the
//! exact float32 predicate (`SpatialQuery::matches`, the library's oracle) selects, for radius
//! and box queries in 2-D and 3-D; bad arguments and files are one-line errors naming what was
//! wrong, and leave no output behind.

mod common;

use common::*;
use gpugraph_gpgpu::spatial::SpatialQuery;

fn run_ok(args: &[&str]) -> String {
    let out = gpugraph(args);
    assert_success(args, &out);
    text(&out.stdout)
}

fn fails_naming(args: &[&str], needle: &str) {
    let out = gpugraph(args);
    assert_ne!(out.status.code(), Some(0), "{args:?} succeeded");
    let err = our_stderr(&out);
    assert!(
        err.contains(needle) && !err.contains("panicked"),
        "{args:?}: {err}"
    );
}

/// Clustered points with dyadic offsets (exact float32 distances), NaN and inf rows, and
/// duplicates: 4 columns, the last one unused.
fn points(n: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(4 * n);
    let mut s = 0x1234_5678u32;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        s
    };
    for row in 0..n {
        let c = (row % 3) as f32 * 10.0;
        for k in 0..4 {
            let r = next();
            out.push(match r % 97 {
                0 => f32::NAN,
                1 => f32::INFINITY,
                _ => c + (r >> 8) as f32 % 1024.0 / 128.0 - 4.0 + k as f32,
            });
        }
    }
    for row in (0..n).step_by(17).skip(1) {
        let (a, b) = out.split_at_mut(4 * row);
        b[..4].copy_from_slice(&a[..4]);
    }
    out
}

fn expected(pts: &[f32], cols: &[usize], q: &SpatialQuery) -> Vec<u32> {
    pts.chunks_exact(4)
        .enumerate()
        .filter(|(_, p)| {
            let v: Vec<f32> = cols.iter().map(|&c| p[c]).collect();
            q.matches(cols.len(), &v)
        })
        .map(|(i, _)| i as u32)
        .collect()
}

#[test]
fn grid_bvh_and_scan_return_the_exact_matches_in_2d_and_3d() {
    let dir = TempDir::new("spatial");
    let input = dir.path("points.npy");
    let n = 20_000;
    let pts = points(n);
    write_f32(&input, &[n, 4], &pts);
    let out = dir.path("ids.npy");
    let cases: [(&[&str], SpatialQuery, &[usize]); 4] = [
        (
            &["--radius", "10.5,11,2.25"],
            SpatialQuery::Radius {
                center: [10.5, 11.0, 0.0],
                radius: 2.25,
            },
            &[0, 1],
        ),
        (
            &["--box", "-1,0,3,2.5"],
            SpatialQuery::Bounds {
                min: [-1.0, 0.0, 0.0],
                max: [3.0, 2.5, 0.0],
            },
            &[0, 1],
        ),
        (
            &["--radius", "20,21,22,3", "--z", "2"],
            SpatialQuery::Radius {
                center: [20.0, 21.0, 22.0],
                radius: 3.0,
            },
            &[0, 1, 2],
        ),
        (
            &["--box", "0,1,2,4,5,6", "--z", "2"],
            SpatialQuery::Bounds {
                min: [0.0, 1.0, 2.0],
                max: [4.0, 5.0, 6.0],
            },
            &[0, 1, 2],
        ),
    ];
    for (query_args, q, cols) in cases {
        let want = expected(&pts, cols, &q);
        assert!(!want.is_empty(), "{q:?} selects something");
        for index in ["grid", "bvh", "scan"] {
            let mut args = vec![
                "spatial", &input, "--x", "0", "--y", "1", "--index", index, "--out", &out,
            ];
            args.extend_from_slice(query_args);
            let stdout = run_ok(&args);
            assert!(
                stdout.contains(&format!("{} matches", want.len())),
                "{index} {q:?}: {stdout}"
            );
            assert!(
                stdout.contains("build") && stdout.contains("query"),
                "{stdout}"
            );
            let (descr, shape, ids) = read_npy(&out);
            assert_eq!((descr.as_str(), shape), ("<u4", vec![want.len()]));
            assert_eq!(ids, want, "{index} {q:?}");
        }
    }
}

#[test]
fn parquet_columns_by_name_agree_across_indexes() {
    let dir = TempDir::new("spatial-parquet");
    let table = dir.path("t.parquet");
    run_ok(&["generate-table", "--rows", "30000", "--out", &table]);
    let out = dir.path("ids.npy");
    let mut results = Vec::new();
    for index in ["grid", "bvh", "scan"] {
        run_ok(&[
            "spatial",
            &table,
            "--x",
            "distance",
            "--y",
            "distance",
            "--box",
            "200,300,900,1000",
            "--index",
            index,
            "--out",
            &out,
        ]);
        results.push(read_npy(&out).2);
    }
    assert!(!results[0].is_empty(), "the box selects rows");
    assert_eq!(results[0], results[2], "grid vs scan");
    assert_eq!(results[1], results[2], "bvh vs scan");
}

#[test]
fn bad_arguments_and_files_are_named_and_leave_no_output() {
    let dir = TempDir::new("spatial-errors");
    let input = dir.path("points.npy");
    write_f32(&input, &[4, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    let flat = dir.path("flat.npy");
    write_f32(&flat, &[4], &[0.0, 1.0, 2.0, 3.0]);
    let out = dir.path("ids.npy");
    let base = |extra: &[&'static str]| -> Vec<String> {
        let mut v: Vec<String> = ["spatial", &input, "--x", "0", "--y", "1", "--out", &out]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let check = |args: Vec<String>, needle: &str| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_naming(&refs, needle);
        assert!(
            !std::path::Path::new(&out).exists(),
            "no output after {args:?}"
        );
    };
    check(
        base(&["--radius", "1,2"]),
        "--radius '1,2' has 2 numbers; expected 3",
    );
    check(base(&["--radius", "1,2,x"]), "'x' is not a number");
    check(base(&["--radius", "1,2,-1"]), "negative");
    check(base(&["--box", "3,0,1,1"]), "min > max");
    check(base(&["--box", "0,0,1,inf"]), "not finite");
    check(
        base(&["--radius", "1,2,3,4", "--z", "5"]),
        "column '5' is not an index below the array's 2 columns",
    );
    let mut flat_args = base(&["--radius", "1,2,3"]);
    flat_args[1] = flat.clone();
    check(flat_args, "2-D float32/float64 array");
    let table = dir.path("t.parquet");
    run_ok(&["generate-table", "--rows", "1000", "--out", &table]);
    let mut missing = base(&["--radius", "1,2,3"]);
    missing[1] = table.clone();
    missing[3] = "no_such".into();
    check(missing, "no column 'no_such'");
    let mut text_col = base(&["--radius", "1,2,3"]);
    text_col[1] = table;
    text_col[3] = "carrier".into();
    check(text_col, "column 'carrier' has type");
}

/// Rows with a null coordinate (the generated table's cancelled flights) match no query, with
/// a note on stderr; every path still agrees and excludes them.
#[test]
fn null_coordinates_match_nothing() {
    let dir = TempDir::new("spatial-nulls");
    let table = dir.path("t.parquet");
    run_ok(&["generate-table", "--rows", "3000", "--out", &table]);
    let mut ids = Vec::new();
    for index in ["scan", "grid", "bvh"] {
        let out_path = dir.path(&format!("ids-{index}.npy"));
        let args = [
            "spatial",
            &table,
            "--x",
            "dep_time",
            "--y",
            "distance",
            "--box",
            "-1e9,-1e9,1e9,1e9",
            "--index",
            index,
            "--out",
            &out_path,
        ];
        let out = gpugraph(&args);
        assert_success(&args, &out);
        let err = our_stderr(&out);
        assert!(
            err.contains("have a null coordinate; they match no query"),
            "{err}"
        );
        ids.push(read_npy(&out_path).2);
    }
    assert_eq!(ids[0], ids[1], "grid and scan differ");
    assert_eq!(ids[0], ids[2], "bvh and scan differ");
    // Every row but the null ones lies inside the huge box: fewer IDs than rows, more than none.
    let count = ids[0].len();
    assert!(count > 0 && count < 3000, "{count} IDs");
}
