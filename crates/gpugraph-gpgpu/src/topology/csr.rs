//! Host-side CSR helpers the traversal's callers need (the reverse adjacency of a forward one)
//! and the kernels' edge-range clamp; the oracle (`cpu`) builds on them.

/// The clamped edge range of `o0..o1` in a chunk of `edges` neighbours, and whether it was
/// malformed (the shader's `edge_range`).
pub fn edge_range(o0: u32, o1: u32, edges: u32) -> (u32, u32, bool) {
    let lo = o0.min(edges);
    let hi = o1.clamp(lo, edges);
    (lo, hi, o0 > o1 || o1 > edges)
}

/// The reverse CSR (incoming edges, sources in ascending order) of a packed CSR over `n`
/// nodes; out-of-range neighbours and malformed ranges are dropped.
pub fn reverse_csr(offsets: &[u32], neighbors: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = offsets.len().saturating_sub(1);
    let mut counts = vec![0u32; n + 1];
    let mut edges = Vec::new();
    for v in 0..n {
        let (lo, hi, _) = edge_range(offsets[v], offsets[v + 1], neighbors.len() as u32);
        for &u in &neighbors[lo as usize..hi as usize] {
            if (u as usize) < n {
                counts[u as usize + 1] += 1;
                edges.push((u, v as u32));
            }
        }
    }
    for i in 0..n {
        counts[i + 1] += counts[i];
    }
    let mut fill = counts.clone();
    let mut out = vec![0u32; edges.len()];
    for (u, v) in edges {
        out[fill[u as usize] as usize] = v;
        fill[u as usize] += 1;
    }
    (counts, out)
}
