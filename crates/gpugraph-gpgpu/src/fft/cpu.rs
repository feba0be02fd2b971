//! The FFT oracle: a plain f64 DFT (the definition, for small sizes) and an f64 radix-2 FFT
//! (for large ones), batched rows and 2-D. Forward uses `e^{-2πi jk/n}` unscaled; inverse uses
//! `e^{+2πi jk/n}` scaled by `1/n` — the GPU contract.

use std::f64::consts::TAU;

/// A complex number as `[re, im]`.
pub type C64 = [f64; 2];

/// `e^{∓2πi m/n}` with `m` reduced exactly (`m < n`), so large arguments lose nothing.
fn root(m: u64, n: u64, inverse: bool) -> C64 {
    let a = TAU * (m % n) as f64 / n as f64;
    let s = if inverse { 1.0 } else { -1.0 };
    [a.cos(), s * a.sin()]
}

fn mul(a: C64, b: C64) -> C64 {
    [a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]]
}

/// The DFT by its definition, `O(n²)`: `X[k] = Σ x[j] e^{∓2πi jk/n}` (÷ n when inverse).
pub fn dft(x: &[C64], inverse: bool) -> Vec<C64> {
    let n = x.len() as u64;
    let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
    (0..n)
        .map(|k| {
            let mut acc = [0.0f64; 2];
            for (j, &v) in x.iter().enumerate() {
                let p = mul(v, root(j as u64 * k % n, n, inverse));
                acc[0] += p[0];
                acc[1] += p[1];
            }
            [acc[0] * scale, acc[1] * scale]
        })
        .collect()
}

/// The same transform by an iterative radix-2 FFT, `O(n log n)`; `x.len()` a power of two.
pub fn fft(x: &[C64], inverse: bool) -> Vec<C64> {
    let n = x.len();
    assert!(n.is_power_of_two(), "fft of {n} values");
    let bits = n.trailing_zeros();
    let mut a: Vec<C64> = (0..n)
        .map(|i| {
            x[if bits == 0 {
                0
            } else {
                i.reverse_bits() >> (usize::BITS - bits)
            }]
        })
        .collect();
    let mut len = 2;
    while len <= n {
        let half = len / 2;
        for start in (0..n).step_by(len) {
            for k in 0..half {
                let w = root(k as u64, len as u64, inverse);
                let u = a[start + k];
                let v = mul(a[start + k + half], w);
                a[start + k] = [u[0] + v[0], u[1] + v[1]];
                a[start + k + half] = [u[0] - v[0], u[1] - v[1]];
            }
        }
        len *= 2;
    }
    if inverse {
        let s = 1.0 / n as f64;
        for v in &mut a {
            *v = [v[0] * s, v[1] * s];
        }
    }
    a
}

/// Every contiguous row of `length` values transformed ([`fft`]).
pub fn fft_rows(x: &[C64], length: usize, inverse: bool) -> Vec<C64> {
    x.chunks(length).flat_map(|r| fft(r, inverse)).collect()
}

/// The 2-D transform of a row-major `height × width` field: rows, then columns.
pub fn fft2d(x: &[C64], height: usize, width: usize, inverse: bool) -> Vec<C64> {
    let rows = fft_rows(x, width, inverse);
    let mut out = vec![[0.0; 2]; height * width];
    for c in 0..width {
        let col: Vec<C64> = (0..height).map(|r| rows[r * width + c]).collect();
        for (r, v) in fft(&col, inverse).into_iter().enumerate() {
            out[r * width + c] = v;
        }
    }
    out
}

/// Interleaved `[re, im, …]` f32 words as complex values.
pub fn from_interleaved(v: &[f32]) -> Vec<C64> {
    v.chunks(2).map(|c| [c[0] as f64, c[1] as f64]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fft_matches_the_definition() {
        for n in [1usize, 2, 4, 8, 32, 64] {
            let x: Vec<C64> = (0..n)
                .map(|i| [(i as f64 * 0.37).sin(), (i as f64 * 1.3).cos()])
                .collect();
            for inv in [false, true] {
                let a = dft(&x, inv);
                let b = fft(&x, inv);
                for (p, q) in a.iter().zip(&b) {
                    assert!((p[0] - q[0]).abs() < 1e-12 && (p[1] - q[1]).abs() < 1e-12);
                }
            }
            let back = fft(&fft(&x, false), true);
            for (p, q) in x.iter().zip(&back) {
                assert!((p[0] - q[0]).abs() < 1e-12 && (p[1] - q[1]).abs() < 1e-12);
            }
        }
        // A tone at bin 3 of 16: one bin of height n, zero elsewhere.
        let n = 16;
        let x: Vec<C64> = (0..n).map(|j| root(3 * j as u64, n as u64, true)).collect();
        let y = fft(&x, false);
        for (k, v) in y.iter().enumerate() {
            let want = if k == 3 { n as f64 } else { 0.0 };
            assert!(
                (v[0] - want).abs() < 1e-12 && v[1].abs() < 1e-12,
                "{k}: {v:?}"
            );
        }
    }
}
