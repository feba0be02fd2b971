//! CPU oracles of the compaction family: the plain loops the kernels parallelize.

/// A bounded stable compaction's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Compacted {
    /// The rows written to the output: the first `min(count, capacity)` survivors, in source
    /// order. Output rows past them are left untouched.
    pub written: Vec<u32>,
    /// The true number of survivors (may exceed the capacity).
    pub count: u32,
    /// `count > capacity`.
    pub overflow: bool,
}

/// Stable compaction: `values[i]` for every `i` with `flags[i] != 0`, in order, at most
/// `capacity` of them written; the count is the true survivor count.
pub fn compact(values: &[u32], flags: &[u32], capacity: usize) -> Compacted {
    bounded(
        values
            .iter()
            .zip(flags)
            .filter(|(_, &f)| f != 0)
            .map(|(&v, _)| v),
        capacity,
    )
}

fn bounded(survivors: impl Iterator<Item = u32>, capacity: usize) -> Compacted {
    let mut written = Vec::new();
    let mut count = 0u32;
    for v in survivors {
        if written.len() < capacity {
            written.push(v);
        }
        count += 1;
    }
    Compacted {
        written,
        count,
        overflow: count as usize > capacity,
    }
}

/// Splits `written` (one logical output sequence) over output chunks of `lens` rows: chunk k
/// receives the rows at its logical positions that were written (a prefix of the chunk).
pub fn split_output(written: &[u32], lens: &[usize]) -> Vec<Vec<u32>> {
    let mut at = 0;
    lens.iter()
        .map(|&len| {
            let part = written[at.min(written.len())..(at + len).min(written.len())].to_vec();
            at += len;
            part
        })
        .collect()
}

/// `[start, end)` clamped to `n` rows: `start' = min(start, n)`, `end' = clamp(end, start', n)`
/// (mirrors `range.wgsl`).
pub fn clamp_range(start: u32, end: u32, n: u32) -> (u32, u32) {
    let s = start.min(n);
    (s, end.clamp(s, n))
}

/// Whether `[start, end)` over `n` rows is invalid: reversed, or non-empty and past `n`.
pub fn range_invalid(start: u32, end: u32, n: u32) -> bool {
    end < start || (end > start && end > n)
}

/// Bit of the indexed-range overflow word: more survivors than output capacity.
pub const OVERFLOW_CAPACITY: u32 = 1;
/// Bit of the indexed-range overflow word: more candidate rows than `max_candidates` (rows
/// past the bound were not examined).
pub const OVERFLOW_CANDIDATES: u32 = 2;

/// An indexed-range compaction's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeCompacted {
    /// Output rows written, count and capacity overflow as for [`compact`].
    pub compacted: Compacted,
    /// [`OVERFLOW_CAPACITY`] | [`OVERFLOW_CANDIDATES`] bits.
    pub overflow_bits: u32,
    /// Ranges that were clamped ([`range_invalid`]).
    pub invalid_ranges: u32,
}

/// Indexed-range compaction: the source ids of every candidate row (ranges in order, each
/// clamped to `flags.len()`) whose flag is nonzero; only the first `max_candidates`
/// candidate rows are examined.
pub fn indexed_range_compact(
    ranges: &[[u32; 2]],
    flags: &[u32],
    capacity: usize,
    max_candidates: u64,
) -> RangeCompacted {
    let n = flags.len() as u32;
    let candidates: Vec<u32> = ranges
        .iter()
        .flat_map(|&[s, e]| {
            let (s, e) = clamp_range(s, e, n);
            s..e
        })
        .collect();
    let examined = candidates.len().min(max_candidates as usize);
    let compacted = bounded(
        candidates[..examined]
            .iter()
            .copied()
            .filter(|&id| flags[id as usize] != 0),
        capacity,
    );
    let mut overflow_bits = 0;
    if compacted.overflow {
        overflow_bits |= OVERFLOW_CAPACITY;
    }
    if candidates.len() as u64 > max_candidates {
        overflow_bits |= OVERFLOW_CANDIDATES;
    }
    RangeCompacted {
        compacted,
        overflow_bits,
        invalid_ranges: ranges
            .iter()
            .filter(|&&[s, e]| range_invalid(s, e, n))
            .count() as u32,
    }
}

/// A partitioned indexed-range compaction's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionedCompacted {
    /// One result per partition (written ids, count, overflow).
    pub partitions: Vec<Compacted>,
    /// Sum of the partition counts.
    pub total: u32,
    /// Partitions whose range is reversed, or non-empty and not inside the partition.
    pub invalid_ranges: u32,
}

/// Partitioned indexed-range compaction: partition k emits the global ids
/// `i ∈ [start_k, end_k) ∩ [base_k, base_k + rows_k)` with `flags[k][i - base_k] != 0`, in
/// order, at most `capacities[k]` of them.
pub fn partitioned_compact(
    ranges: &[[u32; 2]],
    flags: &[&[u32]],
    bases: &[u32],
    capacities: &[usize],
) -> PartitionedCompacted {
    let mut out = PartitionedCompacted::default();
    for (k, &[s, e]) in ranges.iter().enumerate() {
        let (base, rows) = (bases[k], flags[k].len() as u32);
        let lo = s.clamp(base, base + rows);
        let hi = e.clamp(base, base + rows).max(lo);
        let c = bounded(
            (lo..hi).filter(|&i| flags[k][(i - base) as usize] != 0),
            capacities[k],
        );
        out.total = out.total.wrapping_add(c.count);
        if e < s || (e > s && (s < base || e > base + rows)) {
            out.invalid_ranges += 1;
        }
        out.partitions.push(c);
    }
    out
}

pub use super::partitioned::consecutive_bases;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_and_bounds() {
        let c = compact(&[10, 11, 12, 13], &[1, 0, 5, 1], 10);
        assert_eq!(c.written, [10, 12, 13]);
        assert_eq!((c.count, c.overflow), (3, false));
        let c = compact(&[10, 11, 12, 13], &[1, 0, 5, 1], 2);
        assert_eq!(c.written, [10, 12]);
        assert_eq!((c.count, c.overflow), (3, true));
        assert_eq!(
            split_output(&[1, 2, 3], &[0, 2, 4]),
            [vec![], vec![1, 2], vec![3]]
        );
    }

    #[test]
    fn ranges_clamp_and_count_invalid() {
        let flags = [1, 0, 1, 1, 0, 1];
        let r = indexed_range_compact(&[[4, 6], [0, 3], [5, 2], [3, 9], [7, 7]], &flags, 10, 100);
        assert_eq!(r.compacted.written, [5, 0, 2, 3, 5]);
        assert_eq!(r.invalid_ranges, 2);
        assert_eq!(r.overflow_bits, 0);
        let r = indexed_range_compact(&[[0, 6]], &flags, 1, 3);
        assert_eq!(r.compacted.written, [0]);
        assert_eq!(r.compacted.count, 2);
        assert_eq!(r.overflow_bits, OVERFLOW_CAPACITY | OVERFLOW_CANDIDATES);
    }

    #[test]
    fn partitions_emit_global_ids() {
        let a = [1, 1, 0];
        let b = [1, 0, 1, 1];
        let r = partitioned_compact(&[[1, 3], [0, 10]], &[&a, &b], &[0, 3], &[4, 2]);
        assert_eq!(r.partitions[0].written, [1]);
        assert_eq!(r.partitions[1].written, [3, 5]);
        assert_eq!(r.partitions[1].count, 3);
        assert!(r.partitions[1].overflow);
        assert_eq!((r.total, r.invalid_ranges), (4, 1));
        assert_eq!(consecutive_bases(&[3, 0, 4]), [0, 3, 3]);
    }
}
