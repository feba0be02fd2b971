//! The integer encodings inside a data page that the host walks: the RLE / bit-packed
//! hybrid runs of dictionary indices and definition levels (parsed into [`Piece`]s, never
//! expanded; the GPU expands them), and the bounds of plain little-endian integers.

use super::{Piece, KIND_PACKED, KIND_RUN, PIECE_VALUES};
use crate::convert::ColumnStats;

/// Bounds of little-endian integers of `size` bytes, or the first that does not fit i32.
pub(super) fn plain_stats(bytes: &[u8], size: usize) -> Result<ColumnStats, String> {
    if bytes.len() < size {
        return Ok(ColumnStats::default());
    }
    let (lo, hi) = if size == 4 {
        bounds::<4, 8>(bytes, |b| {
            i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64
        })
    } else {
        bounds::<8, 4>(bytes, |b| {
            i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        })
    };
    if lo < i32::MIN as i64 || hi > i32::MAX as i64 {
        let v = if lo < i32::MIN as i64 { lo } else { hi };
        return Err(format!(
            "the value {v} does not fit the GPU's 32-bit columns"
        ));
    }
    Ok(ColumnStats {
        min: lo,
        max: hi,
        any: true,
    })
}

/// Smallest and largest of the `SIZE`-byte values of `bytes` as `value` reads them. `LANES`
/// independent minima and maxima, merged at the end, let the compiler keep them in vector
/// registers: one running pair made the bounds 7% of the host's page decoding, four lanes
/// 4% (TPC-H Q6's columns at SF 1, one thread, `examples/page_decode` under perf; Snappy is
/// most of the rest).
fn bounds<const SIZE: usize, const LANES: usize>(
    bytes: &[u8],
    value: impl Fn(&[u8]) -> i64,
) -> (i64, i64) {
    let (mut lo, mut hi) = ([i64::MAX; LANES], [i64::MIN; LANES]);
    let mut blocks = bytes.chunks_exact(SIZE * LANES);
    for block in &mut blocks {
        for (l, b) in block.chunks_exact(SIZE).enumerate() {
            let v = value(b);
            lo[l] = lo[l].min(v);
            hi[l] = hi[l].max(v);
        }
    }
    for b in blocks.remainder().chunks_exact(SIZE) {
        let v = value(b);
        lo[0] = lo[0].min(v);
        hi[0] = hi[0].max(v);
    }
    (
        lo.into_iter().min().unwrap_or(i64::MAX),
        hi.into_iter().max().unwrap_or(i64::MIN),
    )
}

/// Reads a ULEB128 varint at `*at`.
fn varint(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at).ok_or("a truncated run header")?;
        *at += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("an overlong run header".into())
}

/// Walks the RLE / bit-packed hybrid runs of `n` values of `width` bits in `bytes`, emitting
/// pieces with `src` relative to `bytes` and `row` relative to the first value.
pub(super) fn parse_runs(
    bytes: &[u8],
    width: u32,
    n: u32,
    mut emit: impl FnMut(Piece),
) -> Result<(), String> {
    let mut at = 0usize;
    let mut row = 0u32;
    while row < n {
        let header = varint(bytes, &mut at)?;
        if header & 1 == 1 {
            let groups = header >> 1;
            let data = (groups * width as u64) as usize;
            if at + data > bytes.len() {
                return Err("a truncated bit-packed run".into());
            }
            // Values past the page's count pad the last group.
            let values = (groups * 8).min((n - row) as u64) as u32;
            let mut done = 0u32;
            while done < values {
                let count = (values - done).min(PIECE_VALUES);
                emit(Piece {
                    row: row + done,
                    count,
                    // PIECE_VALUES is a multiple of 8: a piece starts on a byte.
                    src: (at + (done / 8 * width) as usize) as u32,
                    kind: KIND_PACKED,
                    width,
                    ..Piece::default()
                });
                done += count;
            }
            at += data;
            row += values;
        } else {
            let count = header >> 1;
            if count == 0 {
                return Err("an empty run".into());
            }
            let size = width.div_ceil(8) as usize;
            let b = bytes.get(at..at + size).ok_or("a truncated run")?;
            let mut value = 0u32;
            for (k, byte) in b.iter().enumerate() {
                value |= (*byte as u32) << (8 * k);
            }
            at += size;
            let values = count.min((n - row) as u64) as u32;
            let mut done = 0u32;
            while done < values {
                let c = (values - done).min(PIECE_VALUES);
                emit(Piece {
                    row: row + done,
                    count: c,
                    kind: KIND_RUN,
                    width,
                    value,
                    ..Piece::default()
                });
                done += c;
            }
            row += values;
        }
    }
    Ok(())
}

/// Checks that `n` definition levels (RLE / bit-packed hybrid, no length prefix) all equal
/// `max_def`: the kernel has no nulls to place.
pub(super) fn all_set(levels: &[u8], max_def: i16, n: usize) -> Result<(), String> {
    let width = 16 - (max_def as u16).leading_zeros();
    let mut bad = false;
    let mut packed = false;
    parse_runs(levels, width, n as u32, |p| {
        if p.kind == KIND_RUN {
            bad |= p.value != max_def as u32;
        } else {
            packed = true;
        }
    })?;
    if packed {
        // Bit-packed levels: check each (rare; writers emit runs when nothing is null).
        let mut at = 0usize;
        let mut row = 0usize;
        while row < n {
            let header = varint(levels, &mut at)?;
            if header & 1 == 1 {
                let groups = (header >> 1) as usize;
                let values = (groups * 8).min(n - row);
                for i in 0..values {
                    let bit = i * width as usize;
                    let mut v = 0u32;
                    for k in 0..width as usize {
                        let b = levels.get(at + (bit + k) / 8).copied().unwrap_or(0);
                        v |= ((b >> ((bit + k) % 8)) as u32 & 1) << k;
                    }
                    bad |= v != max_def as u32;
                }
                at += groups * width as usize;
                row += values;
            } else {
                at += width.div_ceil(8) as usize;
                row += (header >> 1) as usize;
            }
        }
    }
    if bad {
        return Err("a null value (definition levels below the maximum)".into());
    }
    Ok(())
}
