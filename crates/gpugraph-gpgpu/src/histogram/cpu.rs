//! CPU oracle of [`super::Histogram`]: the plain loop, with the kernel's bin arithmetic.

use super::{uniform_scale, HistogramBins};

/// The uniform bin of `x`: `floor((x − min) · scale)` in float32, clamped to the last bin;
/// `None` outside `[min, max]` or for non-finite `x`.
pub fn uniform_bin(min: f32, max: f32, bins: u32, x: f32) -> Option<u32> {
    if !(x >= min && x <= max) {
        return None;
    }
    let y = ((x - min) * uniform_scale(min, max, bins)).floor();
    Some(if y >= bins as f32 { bins - 1 } else { y as u32 })
}

/// The bin `i` with `edges[i] ≤ x < edges[i+1]`, the last bin also taking the last edge;
/// `None` outside the edges or for non-finite `x`.
pub fn edge_bin(edges: &[f32], x: f32) -> Option<u32> {
    let last = edges.len() - 1;
    if !(x >= edges[0] && x <= edges[last]) {
        return None;
    }
    let i = edges.partition_point(|&e| e <= x);
    Some((i - 1).min(last - 1) as u32)
}

/// Whether edges are usable: at least two, finite, strictly increasing.
pub fn edges_valid(edges: &[f32]) -> bool {
    edges.len() >= 2 && edges.iter().all(|e| e.is_finite()) && edges.windows(2).all(|w| w[0] < w[1])
}

/// Counts per bin and the ignored count (included values outside the bins or non-finite).
/// `gpu_edges` holds the GPU edges' current contents when `bins` is `GpuEdges` (its view is
/// not read); invalid edges give all-zero counts and 0 ignored.
pub fn histogram(
    values: &[f32],
    mask: Option<&[u32]>,
    bins: &HistogramBins,
    gpu_edges: Option<&[f32]>,
) -> (Vec<u32>, u32) {
    let n = match (bins, gpu_edges) {
        (HistogramBins::GpuEdges(_), Some(e)) => e.len().saturating_sub(1),
        _ => bins.bin_count() as usize,
    };
    let mut counts = vec![0u32; n];
    let mut ignored = 0;
    let bin_of: Box<dyn Fn(f32) -> Option<u32>> = match bins {
        HistogramBins::Uniform { min, max, bins } => {
            let (min, max, bins) = (*min, *max, *bins);
            Box::new(move |x| uniform_bin(min, max, bins, x))
        }
        HistogramBins::Edges(e) => Box::new(move |x| edge_bin(e, x)),
        HistogramBins::GpuEdges(_) => {
            let e = gpu_edges.expect("the GPU edges' contents");
            if !edges_valid(e) {
                return (counts, 0);
            }
            Box::new(move |x| edge_bin(e, x))
        }
    };
    for (i, &x) in values.iter().enumerate() {
        if mask.is_some_and(|m| m[i] == 0) {
            continue;
        }
        match bin_of(x) {
            Some(b) => counts[b as usize] += 1,
            None => ignored += 1,
        }
    }
    (counts, ignored)
}

/// Inclusive prefix sums, wrapping modulo 2³².
pub fn cumulative(counts: &[u32]) -> Vec<u32> {
    counts
        .iter()
        .scan(0u32, |s, &c| {
            *s = s.wrapping_add(c);
            Some(*s)
        })
        .collect()
}
