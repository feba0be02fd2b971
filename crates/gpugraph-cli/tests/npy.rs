//! `.npy` inputs as NumPy writes them, against the built binary: NumPy's default dtypes
//! (int64, uint64, float64, bool) work when every value converts exactly; a value that would
//! not is named with the `astype` to use; hostile headers and endless inputs fail fast with one
//! line naming the file, and no output is written.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

/// Version 1.0 `.npy` bytes: `descr` and `shape` as NumPy spells them, then `body`.
fn npy_raw(header_dict: &str, body: &[u8]) -> Vec<u8> {
    let mut header = header_dict.to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(body);
    out
}

fn npy(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
    npy_raw(
        &format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"),
        body,
    )
}

fn i64s(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The words of a `.npy` the CLI wrote (its header is NumPy's own layout).
fn words(path: &str) -> (String, Vec<u32>) {
    let bytes = std::fs::read(path).unwrap();
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8_lossy(&bytes[10..10 + len]).into_owned();
    let descr = header.split('\'').nth(3).unwrap().to_string();
    let body = bytes[10 + len..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    (descr, body)
}

fn run_ok(args: &[&str]) {
    let out = gpugraph(args);
    assert_success(args, &out);
}

/// Exit 1, one `error:` line containing every needle, no panic, and `out` not written.
fn fails(args: &[&str], needles: &[&str], out: &str) {
    let run = gpugraph(args);
    let err = our_stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{args:?}: {err}");
    assert!(
        err.starts_with("error: ") && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
    }
    assert!(!Path::new(out).exists(), "{args:?} wrote {out}");
}

#[test]
fn numpy_default_dtypes_work_when_values_convert_exactly() {
    let dir = TempDir::new("npy-defaults");
    let (keys, sorted) = (dir.path("k.npy"), dir.path("sorted.npy"));
    // np.array([5, 3, 9]) is int64.
    std::fs::write(&keys, npy("<i8", "(3,)", &i64s(&[5, 3, 9]))).unwrap();
    run_ok(&["sort", "--keys", &keys, "--out-keys", &sorted]);
    assert_eq!(words(&sorted), ("<i4".into(), vec![3, 5, 9]));

    // Masks as NumPy's bool.
    let (a, b, m) = (dir.path("a.npy"), dir.path("b.npy"), dir.path("m.npy"));
    std::fs::write(&a, npy("|b1", "(4,)", &[1, 1, 0, 0])).unwrap();
    std::fs::write(&b, npy("|b1", "(4,)", &[1, 0, 1, 0])).unwrap();
    run_ok(&["mask", "--op", "and", &a, &b, "--out", &m]);
    assert_eq!(words(&m).1, vec![1, 0, 0, 0]);

    // uint64 values up to 2^32 - 1 scan as uint32 (wrapping sums).
    let (u, s) = (dir.path("u.npy"), dir.path("s.npy"));
    let big = u64::from(u32::MAX);
    let body: Vec<u8> = [1u64, big, 2]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    std::fs::write(&u, npy("<u8", "(3,)", &body)).unwrap();
    run_ok(&["scan", "--in", &u, "--out", &s, "--inclusive"]);
    assert_eq!(words(&s).1, vec![1, 0, 2]);

    // float64 that float32 holds exactly (as np.linspace or halves give) feeds expressions.
    let (x, y) = (dir.path("x.npy"), dir.path("y.npy"));
    std::fs::write(&x, npy("<f8", "(3,)", &f64s(&[0.5, -1.25, 3e9]))).unwrap();
    let x_in = format!("x={x}");
    run_ok(&["expr", "-e", "x * 2", "--input", &x_in, "--out", &y]);
    let (descr, got) = words(&y);
    let got: Vec<f32> = got.into_iter().map(f32::from_bits).collect();
    assert_eq!((descr.as_str(), got), ("<f4", vec![1.0, -2.5, 6e9]));
}

#[test]
fn a_value_that_would_not_convert_is_named_with_the_astype_to_use() {
    let dir = TempDir::new("npy-inexact");
    let (keys, out) = (dir.path("keys.npy"), dir.path("out.npy"));
    std::fs::write(&keys, npy("<i8", "(4,)", &i64s(&[3, 1, -7, 1 << 40]))).unwrap();
    fails(
        &["sort", "--keys", &keys, "--out-keys", &out],
        &["keys.npy: the int64 value 1099511627776 at index 3"],
        &out,
    );
    let f = dir.path("f.npy");
    std::fs::write(&f, npy("<f8", "(2,)", &f64s(&[0.5, 0.1]))).unwrap();
    let f_in = format!("x={f}");
    fails(
        &["expr", "-e", "x + 1", "--input", &f_in, "--out", &out],
        &[
            "f.npy: the float64 value 0.1 at index 1 is not exactly a float32",
            "a.astype(np.float32)",
        ],
        &out,
    );
    // Float keys are float32 keys: never rounded.
    fails(
        &["argsort", "--keys", &f, "--out", &out],
        &["f.npy: the float64 value 0.1 at index 1 is not exactly a float32"],
        &out,
    );
}

#[test]
fn hostile_headers_are_refused_by_name() {
    let dir = TempDir::new("npy-headers");
    let out = dir.path("out.npy");
    let body = [0u8; 12];
    let cases: [(&str, &str); 6] = [
        (
            "{'descr': '<u4', 'fortran_order': 1, 'shape': (3,), }",
            "'fortran_order' must be True or False, got 1",
        ),
        (
            "{'descr': '<u4', 'fortran_order': True, 'shape': (3,), }",
            "Fortran-ordered arrays are not supported",
        ),
        (
            "{'descr': '<u4', 'fortran_order': False, 'shape': (3,), 'extra': 0, }",
            "unexpected key \"extra\"",
        ),
        (
            "{'descr': '<u4', 'fortran_order': False, 'note': \"'shape': (3,)\", }",
            "unexpected key \"note\"",
        ),
        (
            "{'descr': [('a', '<u4'), ('b', '<f8')], 'fortran_order': False, 'shape': (3,), }",
            "structured dtype with 2 field(s) is not supported",
        ),
        (
            "{'descr': '>f2', 'fortran_order': False, 'shape': (6,), }",
            "unsupported dtype '>f2'",
        ),
    ];
    for (k, (header, needle)) in cases.iter().enumerate() {
        let f = dir.path(&format!("h{k}.npy"));
        std::fs::write(&f, npy_raw(header, &body)).unwrap();
        fails(&["scan", "--in", &f, "--out", &out], &[&f, needle], &out);
    }
}

/// Big-endian files (`a.astype('>u4')`, `'>f8'`) read as their values: the bytes are swapped,
/// then converted like little-endian ones.
#[test]
fn big_endian_arrays_read_as_their_values() {
    let dir = TempDir::new("npy-big-endian");
    let (f, out) = (dir.path("be.npy"), dir.path("out.npy"));
    let body: Vec<u8> = [1u32, 2, 0x0102_0304]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    std::fs::write(&f, npy(">u4", "(3,)", &body)).unwrap();
    run_ok(&["scan", "--in", &f, "--out", &out, "--inclusive"]);
    assert_eq!(words(&out).1, vec![1, 3, 3 + 0x0102_0304]);
    let (x, y) = (dir.path("x.npy"), dir.path("y.npy"));
    let body: Vec<u8> = [0.5f64, -3.0]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    std::fs::write(&x, npy(">f8", "(2,)", &body)).unwrap();
    let x_in = format!("x={x}");
    run_ok(&["expr", "-e", "x * 2", "--input", &x_in, "--out", &y]);
    let got: Vec<f32> = words(&y).1.into_iter().map(f32::from_bits).collect();
    assert_eq!(got, vec![1.0, -6.0]);
}

#[test]
fn endless_and_oversized_inputs_fail_on_their_header() {
    let dir = TempDir::new("npy-endless");
    let out = dir.path("out.npy");
    let limit = Duration::from_secs(20);
    let (code, err, _) = run_within(&["scan", "--in", "/dev/zero", "--out", &out], limit);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/dev/zero: not an .npy file"), "{err}");
    // A header claiming a terabyte over a 12-byte body: refused by the file's length.
    let f = dir.path("tb.npy");
    std::fs::write(&f, npy("<u4", "(274877906944,)", &[0; 12])).unwrap();
    let (code, err, _) = run_within(&["scan", "--in", &f, "--out", &out], limit);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("data has 12 bytes but shape [274877906944] of uint32 needs 1099511627776"),
        "{err}"
    );
    assert!(!Path::new(&out).exists());
}
