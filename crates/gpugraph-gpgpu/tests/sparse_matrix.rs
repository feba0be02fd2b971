//! Host side of gpgpu's sparse module: CSR invariants, the Poisson generator, the Jacobi
//! preconditioner, the Matrix Market reader (symmetric mirroring, duplicates summed, every
//! refusal naming its line) and the CPU PCG oracle.

use gpugraph_gpgpu::sparse::{cpu, read_matrix_market, CsrError, CsrMatrix, MatrixMarketError};

fn mtx(text: &str) -> Result<CsrMatrix, MatrixMarketError> {
    read_matrix_market(text.as_bytes())
}

#[test]
fn poisson2d_is_the_five_point_laplacian() {
    let a = CsrMatrix::poisson2d(3).unwrap();
    assert_eq!((a.rows(), a.columns(), a.nnz()), (9, 9, 33));
    // The centre row: neighbours 1, 3, 5, 7 at -1 and itself at 4, sorted by column.
    let (s, e) = a.span(4);
    assert_eq!(&a.column_indices()[s..e], &[1, 3, 4, 5, 7]);
    assert_eq!(&a.values()[s..e], &[-1.0, -1.0, 4.0, -1.0, -1.0]);
    assert_eq!(a.jacobi_inverse().unwrap(), vec![0.25; 9]);
    // Symmetric.
    for row in 0..9 {
        let (s, e) = a.span(row);
        for k in s..e {
            let c = a.column_indices()[k];
            let (s2, e2) = a.span(c);
            assert!((s2..e2).any(|j| a.column_indices()[j] == row));
        }
    }
}

#[test]
fn csr_invariants_are_checked() {
    assert!(matches!(
        CsrMatrix::new(2, 2, vec![0, 1], vec![0], vec![1.0]),
        Err(CsrError::Offsets { .. })
    ));
    assert!(matches!(
        CsrMatrix::new(2, 2, vec![0, 2, 1], vec![0, 1], vec![1.0, 1.0]),
        Err(CsrError::Offsets { .. })
    ));
    assert!(matches!(
        CsrMatrix::new(1, 2, vec![0, 1], vec![2], vec![1.0]),
        Err(CsrError::Column {
            row: 0,
            column: 2,
            columns: 2
        })
    ));
    assert!(matches!(
        CsrMatrix::new(1, 2, vec![0, 1], vec![1], vec![f32::NAN]),
        Err(CsrError::NonFinite {
            row: 0,
            column: 1,
            ..
        })
    ));
    let a = CsrMatrix::from_triplets(2, 2, vec![(1, 1, 1.0), (0, 1, 2.0), (1, 1, 3.0)]).unwrap();
    assert_eq!(a.row_offsets(), &[0, 1, 2]);
    assert_eq!(a.values(), &[2.0, 4.0], "duplicates are summed");
    assert!(matches!(
        a.jacobi_inverse(),
        Err(CsrError::BadDiagonal { row: 0, value: 0.0 })
    ));
}

#[test]
fn matrix_market_reads_symmetric_and_general_files() {
    let a = mtx("%%MatrixMarket matrix coordinate real symmetric\n% c\n\n3 3 4\n1 1 2\n2 1 -1\n2 2 2.5e0\n3 3 1\n").unwrap();
    assert_eq!(a.nnz(), 5);
    assert_eq!(a.row_offsets(), &[0, 2, 4, 5]);
    assert_eq!(a.values(), &[2.0, -1.0, -1.0, 2.5, 1.0]);
    let g =
        mtx("%%MatrixMarket matrix coordinate integer general\n2 3 2\n1 3 7\n2 1 -2\n").unwrap();
    assert_eq!(
        (g.rows(), g.columns(), g.column_indices()),
        (2, 3, &[2u32, 0][..])
    );
}

#[test]
fn matrix_market_errors_name_the_line() {
    let line = |text: &str| match mtx(text) {
        Err(MatrixMarketError::Banner { line, .. })
        | Err(MatrixMarketError::Unsupported { line, .. })
        | Err(MatrixMarketError::Syntax { line, .. })
        | Err(MatrixMarketError::OutOfRange { line, .. })
        | Err(MatrixMarketError::UpperTriangle { line, .. }) => line,
        other => panic!("expected a located error, got {other:?}"),
    };
    assert_eq!(line("%%MatrixMarket tensor coordinate real general\n"), 1);
    assert_eq!(line("%%MatrixMarket matrix array real general\n2 2\n"), 1);
    assert_eq!(
        line("%%MatrixMarket matrix coordinate complex general\n"),
        1
    );
    assert_eq!(line("%%MatrixMarket matrix coordinate real hermitian\n"), 1);
    assert_eq!(
        line("%%MatrixMarket matrix coordinate real general\n% x\n2 2\n"),
        3
    );
    assert_eq!(
        line("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 two 1\n"),
        4
    );
    assert_eq!(
        line("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n3 1 1\n"),
        4
    );
    assert_eq!(
        line("%%MatrixMarket matrix coordinate real general\n2 2 1\n0 1 1\n"),
        3
    );
    assert_eq!(
        line("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1e39\n"),
        3
    );
    assert_eq!(
        line("%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n"),
        3
    );
    assert_eq!(
        line("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1 1\n"),
        3
    );
    assert!(matches!(
        mtx("%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n"),
        Err(MatrixMarketError::EntryCount {
            declared: 3,
            found: 1
        })
    ));
    assert!(matches!(
        mtx("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 1\n"),
        Err(MatrixMarketError::EntryCount {
            declared: 1,
            found: 2
        })
    ));
}

#[test]
fn the_cpu_pcg_converges_and_counts_like_the_gpu_program() {
    let a = CsrMatrix::poisson2d(16).unwrap();
    let b = vec![1.0f32; 256];
    let r = cpu::pcg(&a, &b, 1e-5, 1000);
    assert!(
        r.converged && r.iterations > 5 && r.iterations < 100,
        "{r:?}"
    );
    let r0 = cpu::pcg(&a, &vec![0.0; 256], 1e-5, 1000);
    assert_eq!(r0.iterations, 0);
    let capped = cpu::pcg(&a, &b, 1e-5, 3);
    assert_eq!((capped.iterations, capped.converged), (3, false));
    // A diagonal system converges in one iteration (Jacobi makes it the identity).
    let d =
        CsrMatrix::from_triplets(4, 4, (0..4).map(|i| (i, i, (i + 1) as f32)).collect()).unwrap();
    assert_eq!(cpu::pcg(&d, &[1.0, 2.0, 3.0, 4.0], 1e-6, 10).iterations, 1);
}
