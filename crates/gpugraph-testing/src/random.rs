//! Seeded inputs: the same seed gives the same input on every machine, so a failure names a
//! reproducible case.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The generator of seed `seed`.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// `n` words uniform in `0..max_exclusive` (which must be above 0).
pub fn random_u32s(rng: &mut impl Rng, n: usize, max_exclusive: u32) -> Vec<u32> {
    (0..n).map(|_| rng.random_range(0..max_exclusive)).collect()
}

/// Splits `total` into `parts` chunk lengths (at least one), empty and uneven ones included.
pub fn uneven_chunks(rng: &mut impl Rng, total: usize, parts: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..parts.saturating_sub(1))
        .map(|_| rng.random_range(0..=total))
        .collect();
    cuts.push(0);
    cuts.push(total);
    cuts.sort();
    cuts.windows(2).map(|w| w[1] - w[0]).collect()
}

/// 0, 1, then one below, at and one above each of `edges` (tile or workgroup widths, in
/// order): `boundary_sizes(&[256, 2048])` is `[0, 1, 255, 256, 257, 2047, 2048, 2049]`.
pub fn boundary_sizes(edges: &[usize]) -> Vec<usize> {
    let mut sizes = vec![0, 1];
    for &e in edges {
        sizes.extend([e.saturating_sub(1), e, e + 1]);
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_sizes_straddle_each_edge() {
        assert_eq!(
            boundary_sizes(&[256, 2048]),
            [0, 1, 255, 256, 257, 2047, 2048, 2049]
        );
        assert_eq!(boundary_sizes(&[]), [0, 1]);
    }

    #[test]
    fn uneven_chunks_cover_the_total() {
        let mut r = rng(7);
        for (total, parts) in [(0, 1), (0, 4), (1, 3), (1000, 7)] {
            let c = uneven_chunks(&mut r, total, parts);
            assert_eq!(c.len(), parts.max(1));
            assert_eq!(c.iter().sum::<usize>(), total);
        }
    }
}
