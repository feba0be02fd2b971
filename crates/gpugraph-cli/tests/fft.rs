//! `gpugraph fft2d` against the built binary: complex64 and float32 (h, w, 2) fields go
//! forward and back through `.npy` files (checked against the f64 oracle), and bad inputs
//! fail naming the dtype, shape or side, leaving no output.

mod common;

use common::*;
use gpugraph_gpgpu::fft::cpu;

/// `.npy` version 1.0 bytes with any `descr` and shape text.
fn npy_any(descr: &str, shape: &str, words: &[u32]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    out
}

fn field(h: usize, w: usize) -> Vec<f32> {
    (0..2 * h * w)
        .map(|i| ((i * 7919) % 211) as f32 / 105.5 - 1.0)
        .collect()
}

fn close(got: &[u32], want: &[[f64; 2]], label: &str) {
    let max = want.iter().map(|v| v[0].hypot(v[1])).fold(1e-30, f64::max);
    let n = want.len() as f64;
    let tol = 8.0 * f64::from(f32::EPSILON) / 2.0 * n.log2().max(1.0) * max;
    for (i, w) in want.iter().enumerate() {
        let g = [f32::from_bits(got[2 * i]), f32::from_bits(got[2 * i + 1])];
        let err = (g[0] as f64 - w[0]).abs().max((g[1] as f64 - w[1]).abs());
        assert!(err <= tol, "{label}: value {i} is {g:?}, want {w:?}");
    }
}

#[test]
fn complex64_and_float_pairs_round_trip_through_files() {
    let tmp = TempDir::new("fft2d");
    let (h, w) = (8usize, 32usize);
    let x = field(h, w);
    let words: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
    let c_in = tmp.path("x.npy");
    std::fs::write(&c_in, npy_any("<c8", &format!("({h}, {w})"), &words)).unwrap();
    let (freq, back) = (tmp.path("f.npy"), tmp.path("b.npy"));
    let args = ["fft2d", "--in", &c_in, "--out", &freq];
    assert_success(&args, &gpugraph(&args));
    let (descr, shape, got) = read_npy(&freq);
    assert_eq!((descr.as_str(), shape), ("<c8", vec![h, w]));
    let xs = cpu::from_interleaved(&x);
    close(&got, &cpu::fft2d(&xs, h, w, false), "forward");
    let args = ["fft2d", "--in", &freq, "--out", &back, "--inverse"];
    let out = gpugraph(&args);
    assert_success(&args, &out);
    assert!(text(&out.stdout).contains("fft2d inverse: 8×32, 2 passes"));
    close(&read_npy(&back).2, &xs, "round trip");

    // float32 (h, w, 2) in gives float32 (h, w, 2) out.
    let f_in = tmp.path("pairs.npy");
    std::fs::write(&f_in, npy_any("<f4", &format!("({h}, {w}, 2)"), &words)).unwrap();
    let f_out = tmp.path("pairs-f.npy");
    let args = ["fft2d", "--in", &f_in, "--out", &f_out];
    assert_success(&args, &gpugraph(&args));
    let b = std::fs::read(&f_out).unwrap();
    let end = 10 + u16::from_le_bytes([b[8], b[9]]) as usize;
    let header = String::from_utf8_lossy(&b[10..end]).into_owned();
    assert!(
        header.contains("'descr': '<f4'") && header.contains("'shape': (8, 32, 2"),
        "{header}"
    );
    let c = std::fs::read(&freq).unwrap();
    let c_end = 10 + u16::from_le_bytes([c[8], c[9]]) as usize;
    assert_eq!(&b[end..], &c[c_end..], "the same values in both forms");
}

#[test]
fn bad_fields_are_named_and_leave_no_output() {
    let tmp = TempDir::new("fft2d-bad");
    let out = tmp.path("y.npy");
    let cases = [
        (
            npy_any("<i4", "(2, 2)", &[0; 4]),
            "--in must be complex64 with shape (h, w) or float32 with shape (h, w, 2), got int32 with shape [2, 2]",
        ),
        (
            npy_any("<f4", "(4, 2)", &[0; 8]),
            "got float32 with shape [4, 2]",
        ),
        (
            npy_any("<c8", "(3, 4)", &[0; 24]),
            "--in has height 3; fft2d needs power-of-two sides (non-power-of-two sizes need Bluestein",
        ),
        (
            npy_any("<c8", "(4, 0)", &[]),
            "--in has width 0",
        ),
    ];
    for (i, (bytes, want)) in cases.iter().enumerate() {
        let input = tmp.path(&format!("bad{i}.npy"));
        std::fs::write(&input, bytes).unwrap();
        let args = ["fft2d", "--in", &input, "--out", &out];
        let o = gpugraph(&args);
        assert!(!o.status.success(), "{want}");
        let err = our_stderr(&o);
        assert!(
            err.contains(&format!("bad{i}.npy")) && err.contains(want),
            "{err}"
        );
        assert!(!std::path::Path::new(&out).exists(), "output left behind");
    }
}
