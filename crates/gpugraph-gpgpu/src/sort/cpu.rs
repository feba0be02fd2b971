//! CPU oracle of the sort family: the plain loops the kernels parallelize. Tests compare GPU
//! results with these.

use super::policy::{PASSES, RADIX, RADIX_BITS, SEGMENT_WIDTHS};

/// Stable ascending sort of `keys`, values moving with their keys.
pub fn sort_pairs(keys: &[u32], values: &[u32]) -> (Vec<u32>, Vec<u32>) {
    assert_eq!(keys.len(), values.len(), "one value per key");
    let order = argsort(keys);
    (
        order.iter().map(|&i| keys[i as usize]).collect(),
        order.iter().map(|&i| values[i as usize]).collect(),
    )
}

/// Ascending sort of `keys`.
pub fn sort_keys(keys: &[u32]) -> Vec<u32> {
    let mut k = keys.to_vec();
    k.sort_unstable();
    k
}

/// Source rows of `keys` in stable ascending key order.
pub fn argsort(keys: &[u32]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_by_key(|&i| keys[i as usize]);
    order
}

/// Twin of `radix_histogram.wgsl`: per pass, the first output row of each digit (exclusive
/// prefix sums of the digit counts).
pub fn digit_histograms(keys: &[u32]) -> Vec<[u32; RADIX as usize]> {
    (0..PASSES)
        .map(|p| {
            let mut h = [0u32; RADIX as usize];
            for &k in keys {
                h[digit(k, p * RADIX_BITS)] += 1;
            }
            let mut run = 0;
            for c in h.iter_mut() {
                let n = *c;
                *c = run;
                run += n;
            }
            h
        })
        .collect()
}

/// Twin of `radix_pass.wgsl`: one stable counting-sort pass by the digit at bit `shift`.
pub fn radix_pass(keys: &[u32], values: &[u32], shift: u32) -> (Vec<u32>, Vec<u32>) {
    let mut next = [0u32; RADIX as usize];
    for &k in keys {
        next[digit(k, shift)] += 1;
    }
    let mut run = 0;
    for c in next.iter_mut() {
        let n = *c;
        *c = run;
        run += n;
    }
    let mut out_k = vec![0; keys.len()];
    let mut out_v = vec![0; values.len()];
    for (i, &k) in keys.iter().enumerate() {
        let slot = &mut next[digit(k, shift)];
        out_k[*slot as usize] = k;
        if !values.is_empty() {
            out_v[*slot as usize] = values[i];
        }
        *slot += 1;
    }
    (out_k, out_v)
}

fn digit(key: u32, shift: u32) -> usize {
    ((key >> shift) & (RADIX - 1)) as usize
}

/// What [`classify_segments`] decided for one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentClass {
    /// 0 or 1 rows: already sorted.
    Trivial,
    /// Longer than the declared maximum width or reaching past the keys: left untouched.
    Rejected,
    /// Sorted by the dispatch of this width class.
    Width(u32),
}

/// Twin of `classify.wgsl`: the class of each segment (`rows` = rows of the keys view).
pub fn classify_segments(
    offsets: &[u32],
    lengths: &[u32],
    rows: u32,
    max_width: u32,
) -> Vec<SegmentClass> {
    offsets
        .iter()
        .zip(lengths)
        .map(|(&start, &len)| {
            if len == 0 {
                SegmentClass::Trivial
            } else if len > max_width || start > rows || len > rows - start {
                SegmentClass::Rejected
            } else if len == 1 {
                SegmentClass::Trivial
            } else {
                let w = SEGMENT_WIDTHS
                    .into_iter()
                    .find(|&w| w >= len)
                    .unwrap_or(SEGMENT_WIDTHS[SEGMENT_WIDTHS.len() - 1]);
                SegmentClass::Width(w)
            }
        })
        .collect()
}

/// Twin of the segmented sort: each accepted segment of `keys` (and `values`, when not empty)
/// sorted stably in place; gaps and rejected segments untouched. Returns the rejected count.
/// Segments must not overlap (as on the GPU, overlapping segments give unspecified rows).
pub fn sort_segments(
    keys: &mut [u32],
    values: &mut [u32],
    offsets: &[u32],
    lengths: &[u32],
    max_width: u32,
) -> u32 {
    let classes = classify_segments(offsets, lengths, keys.len() as u32, max_width);
    let mut rejected = 0;
    for (s, class) in classes.iter().enumerate() {
        match class {
            SegmentClass::Rejected => rejected += 1,
            SegmentClass::Trivial => {}
            SegmentClass::Width(_) => {
                let r = offsets[s] as usize..(offsets[s] + lengths[s]) as usize;
                let vals = if values.is_empty() {
                    vec![0; r.len()]
                } else {
                    values[r.clone()].to_vec()
                };
                let (k, v) = sort_pairs(&keys[r.clone()], &vals);
                keys[r.clone()].copy_from_slice(&k);
                if !values.is_empty() {
                    values[r].copy_from_slice(&v);
                }
            }
        }
    }
    rejected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_radix_passes_equal_the_stable_sort() {
        let keys: Vec<u32> = (0..5000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) ^ (i >> 3))
            .map(|k| k & 0xff00_ff0f)
            .collect();
        let values: Vec<u32> = (0..keys.len() as u32).collect();
        let (mut k, mut v) = (keys.clone(), values.clone());
        for p in 0..PASSES {
            (k, v) = radix_pass(&k, &v, p * RADIX_BITS);
        }
        assert_eq!((k, v), sort_pairs(&keys, &values));
        let h = digit_histograms(&keys);
        assert_eq!(h[0][0], 0);
        assert!(h.iter().all(|p| p.windows(2).all(|w| w[0] <= w[1])));
    }

    #[test]
    fn segments_sort_in_place_and_reject_bad_ones() {
        let mut keys = vec![9, 8, 7, 100, 3, 3, 1, 5, 4];
        let mut vals: Vec<u32> = (0..9).collect();
        // [0..3) sorted, row 3 a gap, [4..7) sorted, [7..9) too long for max 3? no: 2 rows.
        let rejected = sort_segments(&mut keys, &mut vals, &[0, 4, 7, 8], &[3, 3, 2, 5], 3);
        assert_eq!(rejected, 1, "the last segment reaches past the keys");
        assert_eq!(keys, vec![7, 8, 9, 100, 1, 3, 3, 4, 5]);
        assert_eq!(vals, vec![2, 1, 0, 3, 6, 4, 5, 8, 7]);
        assert_eq!(
            classify_segments(&[0, 0, 0, 0], &[0, 1, 33, 300], 1000, 256),
            vec![
                SegmentClass::Trivial,
                SegmentClass::Trivial,
                SegmentClass::Width(64),
                SegmentClass::Rejected
            ]
        );
    }
}
