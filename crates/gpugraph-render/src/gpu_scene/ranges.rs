//! Sorted, disjoint range lists: the dirty byte ranges of a transaction (one queue write or
//! one staged run each) and the runs of slots whose packed rows change.

use std::ops::Range;

/// Sorted, disjoint ranges covering exactly the union of `ranges` (empty ones dropped);
/// touching ranges join, so each result is one queue write.
pub fn merge<T: Ord + Copy>(mut ranges: Vec<Range<T>>) -> Vec<Range<T>> {
    ranges.retain(|r| r.start < r.end);
    if !ranges.is_sorted_by_key(|r| r.start) {
        ranges.sort_unstable_by_key(|r| r.start);
    }
    let mut kept = 0usize;
    for i in 0..ranges.len() {
        let r = ranges[i].clone();
        match kept.checked_sub(1).map(|k| &mut ranges[k]) {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => {
                ranges[kept] = r;
                kept += 1;
            }
        }
    }
    ranges.truncate(kept);
    ranges
}

/// Whether two sorted, disjoint range lists share a byte.
pub(crate) fn intersects(a: &[Range<u64>], b: &[Range<u64>]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].end <= b[j].start {
            i += 1;
        } else if b[j].end <= a[i].start {
            j += 1;
        } else {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Merging sorts when needed, joins touching and overlapping ranges, drops empty ones.
    #[test]
    fn merge_joins_what_touches() {
        assert_eq!(
            merge(vec![8..12, 0..4, 4..6, 20..20, 10..16, 30..40]),
            vec![0..6, 8..16, 30..40]
        );
        assert_eq!(merge(vec![0..4, 4..8, 16..20]), vec![0..8, 16..20]);
        assert_eq!(merge(vec![]), Vec::<Range<u64>>::new());
    }

    // Lists of one byte range are the input here, not ranges meant as element lists.
    #[allow(clippy::single_range_in_vec_init)]
    #[test]
    fn intersection_needs_a_shared_byte() {
        assert!(intersects(&[0..4, 8..12], &[10..20]));
        assert!(!intersects(&[0..4, 8..12], &[4..8, 12..16]));
        assert!(!intersects(&[], &[0..4]));
    }
}
