//! `gpugraph solve`: PCG on a generated Poisson matrix and on a Matrix Market file writes x
//! (checked against the CPU PCG oracle and the true residual), prints iterations and the
//! decisions; bad matrices and arguments are one-line errors naming the file line, and leave
//! no output behind.

mod common;

use common::*;
use gpugraph_gpgpu::sparse::{cpu, CsrMatrix};

fn read_f32_npy(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8_lossy(&bytes[10..10 + header_len]).to_string();
    assert!(header.contains("'<f4'"), "{header}");
    bytes[10 + header_len..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn solves_poisson_like_the_cpu_pcg() {
    let dir = TempDir::new("solve-poisson");
    let out = dir.path("x.npy");
    let report = dir.path("report.json");
    let args = [
        "solve",
        "--matrix",
        "poisson2d:24",
        "--tol",
        "1e-5",
        "--max-iter",
        "300",
        "--precond",
        "jacobi",
        "--out",
        &out,
        "--report",
        &report,
    ];
    let o = gpugraph(&args);
    assert_success(&args, &o);
    let stdout = text(&o.stdout);
    let a = CsrMatrix::poisson2d(24).unwrap();
    let oracle = cpu::pcg(&a, &vec![1.0; 576], 1e-5, 300);
    let iterations: u32 = stdout
        .split("iterations ")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no iteration count in {stdout}"));
    assert!(iterations.abs_diff(oracle.iterations) <= 1, "{stdout}");
    assert!(stdout.contains("gpu-gated bounded sequence"), "{stdout}");
    let x = read_f32_npy(&out);
    assert_eq!(x.len(), 576);
    for (g, c) in x.iter().zip(&oracle.x) {
        assert!(
            (g - c).abs() <= 1e-3 * c.abs().max(1.0),
            "GPU {g} vs CPU {c}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["tree"]["id"], "pcg");
}

#[test]
fn solves_a_symmetric_matrix_market_file() {
    let dir = TempDir::new("solve-mtx");
    let m = dir.path("a.mtx");
    std::fs::write(
        &m,
        "%%MatrixMarket matrix coordinate real symmetric\n% 1-D Laplacian\n4 4 7\n1 1 2\n2 1 -1\n2 2 2\n3 2 -1\n3 3 2\n4 3 -1\n4 4 2\n",
    )
    .unwrap();
    let out = dir.path("x.npy");
    let args = [
        "solve",
        "--matrix",
        &m,
        "--tol",
        "1e-6",
        "--max-iter",
        "20",
        "--out",
        &out,
    ];
    let o = gpugraph(&args);
    assert_success(&args, &o);
    // The 1-D Laplacian with b = ones: x = (2, 3, 3, 2).
    let x = read_f32_npy(&out);
    for (g, want) in x.iter().zip([2.0f32, 3.0, 3.0, 2.0]) {
        assert!((g - want).abs() < 1e-4, "{x:?}");
    }
}

#[test]
fn bad_matrices_name_the_line_and_leave_no_output() {
    let dir = TempDir::new("solve-bad");
    let out = dir.path("x.npy");
    for (i, (body, needle)) in [
        (
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 x 1\n",
            "line 4",
        ),
        (
            "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n",
            "line 3: entry (1, 2) is above the diagonal",
        ),
        (
            "%%MatrixMarket matrix array real general\n2 2\n",
            "line 1: format 'array'",
        ),
        (
            "%%MatrixMarket matrix coordinate real general\n2 3 1\n1 1 1\n",
            "square",
        ),
        (
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 0\n",
            "diagonal",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let m = dir.path(&format!("bad{i}.mtx"));
        std::fs::write(&m, body).unwrap();
        let args = [
            "solve",
            "--matrix",
            &m,
            "--precond",
            "jacobi",
            "--out",
            &out,
        ];
        let o = gpugraph(&args);
        assert_ne!(o.status.code(), Some(0), "{body}");
        let err = our_stderr(&o);
        assert!(
            err.contains(needle) && !err.contains("panicked"),
            "{body}: {err}"
        );
        assert!(!std::path::Path::new(&out).exists());
    }
    for spec in ["poisson2d:0", "poisson2d:x", "matrix.txt"] {
        let o = gpugraph(&["solve", "--matrix", spec, "--out", &out]);
        assert_ne!(o.status.code(), Some(0), "{spec}");
        assert!(our_stderr(&o).contains(spec));
    }
    let o = gpugraph(&[
        "solve",
        "--matrix",
        "poisson2d:4",
        "--tol",
        "0",
        "--out",
        &out,
    ]);
    assert!(our_stderr(&o).contains("--tol"));
    assert!(!std::path::Path::new(&out).exists());
}
