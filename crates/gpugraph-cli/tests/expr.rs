//! `gpugraph expr` on files, run the way a user does: .npy inputs written here (no numpy),
//! results compared with values computed here, Graph and SimpleGraph byte-identical, compile
//! errors exit 2 with the diagnostic verbatim, other failures exit 1 naming the file.
//! Needs a GPU adapter; on CI that is Mesa lavapipe (no adapter is a failure, not a skip).

mod common;

use std::path::Path;

use common::*;

/// Deterministic values in [-100, 100) with fractional parts.
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x % 20_000) as f32 / 100.0 - 100.0
        })
        .collect()
}

#[test]
fn madd_over_float32x3_rows_matches_and_simple_graph_gives_the_same_bytes() {
    let dir = TempDir::new("madd");
    // Not a multiple of the kernel's rows per workgroup, so the tail is exercised.
    let n = 1500;
    let (p, o) = (values(3 * n, 1), values(3 * n, 2));
    let scale = 1.25f32;
    write_f32(&dir.path("p.npy"), &[n, 3], &p);
    write_f32(&dir.path("o.npy"), &[n, 3], &o);
    let (out, out_simple) = (dir.path("r.npy"), dir.path("r-simple.npy"));
    let pin = format!("positions={}", dir.path("p.npy"));
    let oin = format!("offset={}", dir.path("o.npy"));
    let args = [
        "expr",
        "-e",
        "positions * scale + offset",
        "--input",
        &pin,
        "--input",
        &oin,
        "--scalar",
        "scale=1.25",
        "--out",
    ];
    let full: Vec<&str> = args.iter().copied().chain([out.as_str()]).collect();
    let run = gpugraph(&full);
    assert_success(&full, &run);
    assert!(
        text(&run.stdout).contains("expr output-expression: 1500 rows of float32x3"),
        "{}",
        text(&run.stdout)
    );
    let (descr, shape, words) = read_npy(&out);
    assert_eq!((descr.as_str(), shape), ("<f4", vec![n, 3]));
    for (i, w) in words.iter().enumerate() {
        let got = f32::from_bits(*w);
        let want = p[i] * scale + o[i];
        // The GPU may fuse the multiply-add (one rounding instead of two).
        let tol = f32::EPSILON * ((p[i] * scale).abs() + o[i].abs() + want.abs());
        assert!(
            (got - want).abs() <= tol,
            "row {} component {}: got {got}, want {want}",
            i / 3,
            i % 3
        );
    }

    let simple: Vec<&str> = args
        .iter()
        .copied()
        .chain([out_simple.as_str(), "--simple"])
        .collect();
    let run = gpugraph(&simple);
    assert_success(&simple, &run);
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(&out_simple).unwrap(),
        "Graph and SimpleGraph results differ"
    );
}

#[test]
fn integer_inputs_casts_rounding_and_widths() {
    let dir = TempDir::new("ints");
    let n = 300;
    let ids: Vec<u32> = (0..n as u32).map(|i| i * 7 + 1).collect();
    let si: Vec<i32> = (0..2 * n as i32).map(|i| i * 3 - 500).collect();
    write_u32(&dir.path("ids.npy"), &[n], &ids);
    write_i32(&dir.path("si.npy"), &[n, 2], &si);
    let ids_in = format!("ids={}", dir.path("ids.npy"));
    let si_in = format!("si={}", dir.path("si.npy"));
    let out = dir.path("r.npy");

    // float32 → uint32 with halves: truncate vs nearest (halves away from zero).
    for (rounding, f) in [
        ("truncate", (|x: f32| x.trunc()) as fn(f32) -> f32),
        ("nearest", |x: f32| x.round()),
    ] {
        let args = [
            "expr",
            "-e",
            "uint32(float32(ids) * 0.5)",
            "--rounding",
            rounding,
            "--input",
            &ids_in,
            "--out",
            &out,
        ];
        let run = gpugraph(&args);
        assert_success(&args, &run);
        let (descr, shape, words) = read_npy(&out);
        assert_eq!((descr.as_str(), shape), ("<u4", vec![n]), "{rounding}");
        let want: Vec<u32> = ids.iter().map(|&v| f(v as f32 * 0.5) as u32).collect();
        assert_eq!(words, want, "{rounding}");
    }

    // A swizzle of an int32 (n, 2) input, cast and scaled by a typed scalar: (n, 2) int32.
    let args = [
        "expr",
        "-e",
        "sint32(float32(si.yx) * float32(k))",
        "--input",
        &si_in,
        "--scalar",
        "k=-3:i32",
        "--out",
        &out,
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    let (descr, shape, words) = read_npy(&out);
    assert_eq!((descr.as_str(), shape), ("<i4", vec![n, 2]));
    let want: Vec<u32> = si
        .chunks(2)
        .flat_map(|r| [r[1] * -3, r[0] * -3])
        .map(|v| v as u32)
        .collect();
    assert_eq!(words, want);
}

#[test]
fn scalar_only_expressions_write_one_row() {
    let dir = TempDir::new("scalars");
    let out = dir.path("r.npy");
    let args = [
        "expr",
        "-e",
        "vec2(s, float32(m)) * 2",
        "--scalar",
        "s=1.5",
        "--scalar",
        "m=7:u32",
        "--out",
        &out,
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    assert!(text(&run.stdout).contains("1 row of float32x2"));
    let (descr, shape, words) = read_npy(&out);
    assert_eq!((descr.as_str(), shape), ("<f4", vec![1, 2]));
    assert_eq!(words, vec![3.0f32.to_bits(), 14.0f32.to_bits()]);
}

#[test]
fn compile_errors_exit_2_with_the_diagnostic() {
    let dir = TempDir::new("compile");
    write_f32(&dir.path("p.npy"), &[4, 3], &values(12, 3));
    let p_in = format!("positions={}", dir.path("p.npy"));
    let out = dir.path("r.npy");
    for (expr, id, want, caret) in [
        (
            "positions == offset",
            None,
            "output-expression: comparison positions == ... is not supported; use equalAll(x, y)",
            "          ^^",
        ),
        (
            "positions + nope",
            Some("move"),
            "move: undeclared identifier nope",
            "            ^^^^",
        ),
        (
            "(positions",
            None,
            "output-expression: expected ')' to close '(' at offset 0",
            "          ^",
        ),
        // The spec's example diagnostic: the id once, then the message (issue 10).
        (
            "positions.w",
            Some("reorder"),
            "reorder: .w needs 4 components; positions has 3",
            "^^^^^^^^^^^",
        ),
        (
            "positions.w",
            None,
            "output-expression: .w needs 4 components; positions has 3",
            "^^^^^^^^^^^",
        ),
        (
            "------positions",
            None,
            "output-expression: decrement operator -- is not supported (expressions cannot assign); to negate a negation or subtract one, separate the signs: -(-a), a - -b",
            "^^",
        ),
    ] {
        let mut args = vec!["expr", "-e", expr, "--input", &p_in, "--out", &out];
        if let Some(id) = id {
            args.extend(["--id", id]);
        }
        let run = gpugraph(&args);
        assert_eq!(
            run.status.code(),
            Some(2),
            "{args:?}: stderr {}",
            text(&run.stderr)
        );
        // The diagnostic, the expression, a caret under the offending span.
        assert_eq!(
            our_stderr(&run),
            format!("error: {want}\n  {expr}\n  {caret}\n"),
            "{args:?}"
        );
        assert!(!Path::new(&out).exists(), "{args:?} wrote an output");
    }
}

#[test]
fn bad_files_exit_1_naming_the_file() {
    let dir = TempDir::new("badfiles");
    // float16 is outside the .npy subset the CLI reads.
    let f64_path = dir.path("f16.npy");
    std::fs::write(&f64_path, npy_bytes("<f2", &[2], &[0])).unwrap();
    let out = dir.path("r.npy");
    let x_in = format!("x={f64_path}");
    let args = ["expr", "-e", "x * 2", "--input", &x_in, "--out", &out];
    let run = gpugraph(&args);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stderr));
    let err = our_stderr(&run);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(&f64_path), "{err}");
    assert!(err.contains("unsupported dtype '<f2'"), "{err}");

    // Rows of five components.
    let wide = dir.path("wide.npy");
    write_f32(&wide, &[2, 5], &[0.0; 10]);
    let w_in = format!("x={wide}");
    let args = ["expr", "-e", "x * 2", "--input", &w_in, "--out", &out];
    let run = gpugraph(&args);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stderr));
    assert!(our_stderr(&run).contains(&wide), "{}", our_stderr(&run));

    // Inputs the expression reads row by row must have the same row count.
    let (a, b) = (dir.path("a.npy"), dir.path("b.npy"));
    write_f32(&a, &[3], &[1.0, 2.0, 3.0]);
    write_f32(&b, &[4], &[1.0, 2.0, 3.0, 4.0]);
    let (a_in, b_in) = (format!("a={a}"), format!("b={b}"));
    let args = [
        "expr", "-e", "a + b", "--input", &a_in, "--input", &b_in, "--out", &out,
    ];
    let run = gpugraph(&args);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stderr));
    let err = our_stderr(&run);
    assert!(err.contains(&b) && err.contains("4 rows"), "{err}");
    assert!(!Path::new(&out).exists());
}

/// Issue 12: literal zeros gave 0 on lavapipe. Both graph kinds now follow IEEE-754 like the
/// CPU evaluator (and numpy).
#[test]
fn literal_zeros_follow_ieee_on_both_graph_kinds() {
    let dir = TempDir::new("ieee");
    let e = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3.4e38,
    ];
    write_f32(&dir.path("e.npy"), &[e.len()], &e);
    let a_in = format!("a={}", dir.path("e.npy"));
    let out = dir.path("o.npy");
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let same = |x: f32| x;
    let cases: [(&str, Vec<f32>); 5] = [
        ("a / 0", vec![nan, nan, inf, -inf, nan, inf, -inf, inf]),
        (
            "a / (1 - 1)",
            vec![nan, nan, inf, -inf, nan, inf, -inf, inf],
        ),
        ("a * 0", e.iter().map(|&x| same(x) * 0.0).collect()),
        ("a - a", e.iter().map(|&x| x - x).collect()),
        (
            "select(a - a, 1, 2)",
            vec![2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 2.0],
        ),
    ];
    for simple in [false, true] {
        for (expr, want) in &cases {
            let mut args = vec!["expr", "-e", expr, "--input", &a_in, "--out", &out];
            if simple {
                args.push("--simple");
            }
            let run = gpugraph(&args);
            assert_success(&args, &run);
            let (_, _, words) = read_npy(&out);
            let got: Vec<f32> = words.into_iter().map(f32::from_bits).collect();
            for (g, w) in got.iter().zip(want) {
                assert!(
                    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                    "{args:?}: got {got:?}, want {want:?}"
                );
            }
        }
        // sint32 of ±inf saturates; NaN is 0.
        let mut args = vec![
            "expr",
            "-e",
            "sint32(a / 0)",
            "--input",
            &a_in,
            "--out",
            &out,
        ];
        if simple {
            args.push("--simple");
        }
        let run = gpugraph(&args);
        assert_success(&args, &run);
        let (_, _, words) = read_npy(&out);
        let (max, min) = (i32::MAX as u32, i32::MIN as u32);
        assert_eq!(words, vec![0, 0, max, min, 0, max, min, max], "{args:?}");
    }
}

#[test]
fn comparison_functions_select_values() {
    let dir = TempDir::new("compare");
    let b = [1.0f32, 2.0, 3.0, f32::NAN, 5.0, -7.0];
    write_f32(&dir.path("b.npy"), &[b.len()], &b);
    let b_in = format!("b={}", dir.path("b.npy"));
    let out = dir.path("o.npy");
    let args = [
        "expr",
        "-e",
        "select(greaterThan(b, 2), b, 0)",
        "--input",
        &b_in,
        "--out",
        &out,
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    let (descr, _, words) = read_npy(&out);
    assert_eq!(descr, "<f4");
    let want: Vec<u32> = b
        .iter()
        .map(|&x| if x > 2.0 { x } else { 0.0 }.to_bits())
        .collect();
    assert_eq!(words, want);
    let args = [
        "expr",
        "-e",
        "and(notEqual(b, b), not(lessThan(b, 0)))",
        "--input",
        &b_in,
        "--out",
        &out,
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    let (descr, _, words) = read_npy(&out);
    assert_eq!(descr, "<u4");
    assert_eq!(
        words,
        vec![0, 0, 0, 1, 0, 0],
        "only NaN differs from itself"
    );
}

#[test]
fn help_lists_every_function() {
    let run = gpugraph(&["expr", "--help"]);
    assert_success(&["expr", "--help"], &run);
    let help = text(&run.stdout);
    for f in [
        "abs(x)",
        "pow(x, exponent)",
        "select(condition, whenTrue, whenFalse)",
        "equalAll(x, y)",
        "lessThan(x, y)",
        "greaterThanEqual(x, y)",
        "notEqual(x, y)",
        "and(a, b)",
        "not(a)",
        "docs/expressions.md",
    ] {
        assert!(help.contains(f), "{f} missing from:\n{help}");
    }
}
