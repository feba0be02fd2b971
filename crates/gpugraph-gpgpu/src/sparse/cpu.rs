//! The oracles of the sparse kernels: the plain loops they parallelize, and a
//! Jacobi-preconditioned conjugate gradient with the GPU program's exact control flow.

use super::csr::CsrMatrix;

/// `y = A·x`, each row summed in column order in float32 (the thread-row order).
pub fn spmv(a: &CsrMatrix, x: &[f32]) -> Vec<f32> {
    (0..a.rows())
        .map(|row| {
            let (s, e) = a.span(row);
            (s..e).fold(0.0f32, |acc, k| {
                acc + a.values()[k] * x[a.column_indices()[k] as usize]
            })
        })
        .collect()
}

/// `Σ a[i]·b[i]`, accumulated in f64 and rounded once: the reference the GPU's fixed-order
/// float32 tree sums are compared against with a stated tolerance.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum::<f64>() as f32
}

/// What [`pcg`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct PcgResult {
    /// The iterate.
    pub x: Vec<f32>,
    /// Iterations run (loop bodies executed).
    pub iterations: u32,
    /// `|r|²` of the recursively updated residual at exit.
    pub rr: f32,
    /// Whether `|r| ≤ tol·|b|` was reached.
    pub converged: bool,
}

/// Jacobi-preconditioned CG from `x = 0` with the GPU program's control flow: stop before an
/// iteration when `r·r ≤ (tol·|b|)²` or after `max_iterations`; a non-positive `p·Ap` stops
/// (breakdown). Vectors are float32, dot products as in [`dot`].
pub fn pcg(a: &CsrMatrix, b: &[f32], tol: f32, max_iterations: u32) -> PcgResult {
    let n = b.len();
    let dinv = a
        .jacobi_inverse()
        .unwrap_or_else(|_| vec![1.0; a.rows() as usize]);
    let tol2 = {
        let t = f64::from(tol) * f64::from(dot(b, b)).sqrt();
        (t * t) as f32
    };
    let mut x = vec![0.0f32; n];
    let mut r = b.to_vec();
    let mut z: Vec<f32> = r.iter().zip(&dinv).map(|(r, d)| d * r).collect();
    let mut p = z.clone();
    let mut rz = dot(&r, &z);
    let mut rr = dot(&r, &r);
    let mut going = rr > tol2;
    let mut iterations = 0;
    while going && iterations < max_iterations {
        iterations += 1;
        let q = spmv(a, &p);
        let pq = dot(&p, &q);
        let mut alpha = rz / pq;
        if !(pq > 0.0 && alpha.is_finite()) {
            alpha = 0.0;
            going = false;
        }
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
            z[i] = dinv[i] * r[i];
        }
        let rz_new = dot(&r, &z);
        rr = dot(&r, &r);
        let beta = if rz != 0.0 { rz_new / rz } else { 0.0 };
        rz = rz_new;
        going = going && rr > tol2;
        for i in 0..n {
            p[i] = z[i] + beta * p[i];
        }
    }
    PcgResult {
        x,
        iterations,
        rr,
        converged: rr <= tol2,
    }
}
