//! The oracle of [`super::DotProduct`]: the plain sum of products, accumulated in f64 so the
//! reference is more accurate than either float32 evaluation order.

/// `Σ a[i] · b[i]` over float32 components, in f64.
pub fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
}

/// A bound on the float32 rounding error of any summation order of `Σ a[i]·b[i]`:
/// `n·ε·Σ|a[i]·b[i]|` (the classic recursive-summation bound, ε = 2⁻²⁴), plus slack.
pub fn error_bound(a: &[f32], b: &[f32]) -> f64 {
    let magnitude: f64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| (x as f64 * y as f64).abs())
        .sum();
    let n = a.len().max(1) as f64;
    (n + 2.0) * f32::EPSILON as f64 * 0.5 * magnitude + 1e-30
}
