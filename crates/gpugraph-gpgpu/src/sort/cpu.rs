//! CPU oracle of the sort family: the plain loops the kernels parallelize. Tests compare GPU
//! results with these.

use super::keys::{KeyType, SortOptions};
use super::policy::{PASSES, RADIX, RADIX_BITS, SEGMENT_WIDTHS};

pub use super::code::{KeyCode, CANONICAL_NAN, NAN_CODE};

/// Oracle of [`super::Sort`] with options: the stable order (source rows) of `keys` (their
/// bits) as `key_type` under `options`, and the sorted keys as the GPU writes them (NaNs
/// canonical).
pub fn sort_typed(keys: &[u32], key_type: KeyType, options: SortOptions) -> (Vec<u32>, Vec<u32>) {
    let code = KeyCode::new(key_type, options);
    let codes: Vec<u32> = keys.iter().map(|&k| code.encode(k)).collect();
    let order = argsort(&codes);
    let sorted = order
        .iter()
        .map(|&i| code.decode(codes[i as usize]))
        .collect();
    (order, sorted)
}

/// Stable ascending sort of `keys`, values moving with their keys.
pub fn sort_pairs(keys: &[u32], values: &[u32]) -> (Vec<u32>, Vec<u32>) {
    assert_eq!(keys.len(), values.len(), "one value per key");
    let order = argsort(keys);
    (
        order.iter().map(|&i| keys[i as usize]).collect(),
        order.iter().map(|&i| values[i as usize]).collect(),
    )
}

/// The sorted keys of [`sort_typed`] alone: equal codes are equal output bits (NaNs are
/// canonical), so an unstable sort of the codes gives them without the argsort's random
/// accesses (the bench oracle at 2^28 keys).
pub fn sort_keys_typed(keys: &[u32], key_type: KeyType, options: SortOptions) -> Vec<u32> {
    let code = KeyCode::new(key_type, options);
    let mut codes: Vec<u32> = keys.iter().map(|&k| code.encode(k)).collect();
    codes.sort_unstable();
    codes.iter_mut().for_each(|c| *c = code.decode(*c));
    codes
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
    use crate::sort::keys::SortOrder;

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
    fn key_codes_order_and_round_trip() {
        let asc = SortOptions::default();
        let desc = SortOptions::descending();
        let f = |x: f32| x.to_bits();
        let floats = [
            f(f32::NEG_INFINITY),
            f(-1.5),
            f(-f32::MIN_POSITIVE / 4.0),
            f(-0.0),
            f(0.0),
            f(1e-45),
            f(2.0),
            f(f32::INFINITY),
        ];
        for o in [asc, desc] {
            let c = KeyCode::new(KeyType::Float32, o);
            let codes: Vec<u32> = floats.iter().map(|&b| c.encode(b)).collect();
            let ordered = codes.windows(2).all(|w| match o.order {
                SortOrder::Ascending => w[0] < w[1],
                SortOrder::Descending => w[0] > w[1],
            });
            assert!(ordered, "{o:?}: {codes:x?}");
            for (&b, &k) in floats.iter().zip(&codes) {
                assert_eq!(c.decode(k), b);
            }
            for nan in [0x7fc0_0000, 0xffc0_0001, 0x7f80_0001, 0xffff_ffff] {
                assert_eq!(c.encode(nan), NAN_CODE);
                assert_eq!(c.decode(NAN_CODE), CANONICAL_NAN);
            }
        }
        let ints = [i32::MIN, -5, -1, 0, 1, 7, i32::MAX].map(|x| x as u32);
        let small = [-128i32, -1, 0, 1, 127].map(|x| x as u32);
        for o in [asc, desc] {
            for (keys, kb) in [(&ints[..], 32), (&small[..], 8)] {
                let c = KeyCode::new(KeyType::Int32, o.with_key_bits(kb));
                let codes: Vec<u32> = keys.iter().map(|&b| c.encode(b)).collect();
                assert!(codes.iter().all(|&k| kb == 32 || k < 1 << kb), "{codes:x?}");
                let sorted = codes.windows(2).all(|w| (w[0] < w[1]) == (o == asc));
                assert!(sorted, "{o:?} {kb}: {codes:x?}");
                assert!(keys.iter().all(|&b| c.decode(c.encode(b)) == b));
            }
        }
        let c = KeyCode::new(KeyType::Uint32, desc.with_key_bits(4));
        assert_eq!((c.encode(0), c.encode(15)), (15, 0));
        assert_eq!(
            c.decode(c.encode(1000)),
            1000,
            "outside key_bits: bits kept"
        );
        let (order, sorted) = sort_typed(
            &[f(1.0), 0x7fc0_0001, f(-0.0), 0xffff_ffff, f(0.0)],
            KeyType::Float32,
            desc,
        );
        assert_eq!(order, vec![0, 4, 2, 1, 3]);
        assert_eq!(sorted[3..], [CANONICAL_NAN, CANONICAL_NAN]);
        let keys = [f(1.0), 0x7fc0_0001, f(-0.0), 0xffff_ffff, f(0.0), f(-3.0)];
        for o in [asc, desc] {
            let want = sort_typed(&keys, KeyType::Float32, o).1;
            assert_eq!(sort_keys_typed(&keys, KeyType::Float32, o), want);
        }
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
