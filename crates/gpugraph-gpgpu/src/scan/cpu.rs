//! The CPU oracle of `scan.wgsl`: the plain loop the kernel parallelizes.

/// Prefix sum of `values`, wrapping modulo 2^32.
///
/// `inclusive`: `out[i] = values[start..=i]` summed, otherwise `values[start..i]` (so 0 at a
/// segment start). `start` is the last segment start at or before `i`: element 0 always starts
/// a segment, and with `segment_starts` every element whose flag is nonzero does too. Flags
/// past `values.len()` are ignored; missing flags count as 0.
pub fn scan(values: &[u32], segment_starts: Option<&[u32]>, inclusive: bool) -> Vec<u32> {
    let mut out = Vec::with_capacity(values.len());
    let mut running = 0u32;
    for (i, &v) in values.iter().enumerate() {
        let flagged = segment_starts.is_some_and(|f| f.get(i).is_some_and(|&x| x != 0));
        if i == 0 || flagged {
            running = 0;
        }
        if inclusive {
            running = running.wrapping_add(v);
            out.push(running);
        } else {
            out.push(running);
            running = running.wrapping_add(v);
        }
    }
    out
}

/// [`scan`] over a sequence stored as chunks (one logical sequence; chunk boundaries do not
/// restart anything), returning one result vector per chunk with the same lengths.
/// `segment_starts`, when given, has one flag chunk per value chunk.
pub fn scan_chunks(
    chunks: &[&[u32]],
    segment_starts: Option<&[&[u32]]>,
    inclusive: bool,
) -> Vec<Vec<u32>> {
    let values: Vec<u32> = chunks.concat();
    let flags: Option<Vec<u32>> = segment_starts.map(|f| {
        chunks
            .iter()
            .enumerate()
            .flat_map(|(k, c)| {
                let fk = f.get(k).copied().unwrap_or(&[]);
                (0..c.len()).map(move |i| fk.get(i).copied().unwrap_or(0))
            })
            .collect()
    });
    let all = scan(&values, flags.as_deref(), inclusive);
    let mut out = Vec::with_capacity(chunks.len());
    let mut at = 0;
    for c in chunks {
        out.push(all[at..at + c.len()].to_vec());
        at += c.len();
    }
    out
}

/// The rows a kernel reads from a view with a live count: `values` with every row at or past
/// `min(count, len)` read as 0 (the scan, compaction and reduction contract for live counts).
pub fn live_rows(values: &[u32], count: u32) -> Vec<u32> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| if (i as u64) < u64::from(count) { v } else { 0 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example() {
        assert_eq!(scan(&[1, 0, 1, 1], None, false), [0, 1, 1, 2]);
        assert_eq!(scan(&[1, 0, 1, 1], None, true), [1, 1, 2, 3]);
        assert!(scan(&[], None, true).is_empty());
    }

    #[test]
    fn segments_restart_both_conventions() {
        let v = [1, 2, 3, 4, 5];
        let f = [0, 0, 1, 0, 1];
        assert_eq!(scan(&v, Some(&f), true), [1, 3, 3, 7, 5]);
        assert_eq!(scan(&v, Some(&f), false), [0, 1, 0, 3, 0]);
    }

    #[test]
    fn wraps() {
        assert_eq!(scan(&[u32::MAX, 2, 3], None, true), [u32::MAX, 1, 4]);
    }

    #[test]
    fn chunks_form_one_sequence() {
        let a = [1u32, 2];
        let b: [u32; 0] = [];
        let c = [3u32, 4];
        let fa = [0u32, 0];
        let fc = [0u32, 1];
        let out = scan_chunks(&[&a, &b, &c], Some(&[&fa, &[], &fc]), true);
        assert_eq!(out, vec![vec![1, 3], vec![], vec![6, 4]]);
    }
}
