//! The oracle of [`super::SpMV`]: the plain CSR loop with the kernel's guards (offsets
//! clamped to nnz, out-of-range columns skipped), accumulating in float32 in row order.

/// `y = A · x` for the CSR matrix (`row_offsets` has `rows + 1` entries).
pub fn spmv(row_offsets: &[u32], cols: &[u32], values: &[f32], x: &[f32]) -> Vec<f32> {
    let nnz = cols.len().min(values.len()) as u32;
    row_offsets
        .windows(2)
        .map(|w| {
            let (start, end) = (w[0].min(nnz), w[1].min(nnz));
            let mut acc = 0.0f32;
            for k in start..end {
                let c = cols[k as usize] as usize;
                if c < x.len() {
                    acc += values[k as usize] * x[c];
                }
            }
            acc
        })
        .collect()
}
