//! The oracle of [`super::VectorMadd`]: the plain loop over float32 components.

/// `x[i] * scale + addend[i]` for every component (`x` and `addend` have equal lengths).
pub fn madd(x: &[f32], scale: f32, addend: &[f32]) -> Vec<f32> {
    x.iter().zip(addend).map(|(&v, &a)| v * scale + a).collect()
}
