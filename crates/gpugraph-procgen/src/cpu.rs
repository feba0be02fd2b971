//! The plain-Rust oracles of the built-in kernels and the cast, the loops the shaders
//! parallelize. Appending kernels take their slots in an order the device chooses, so their
//! oracles answer the set of what is appended (sorted) and the count.

use crate::column::Word;

/// gather over `n` slots of which `live` are live: `src[index[i]]`, 0 outside `src` and past
/// the live count.
pub fn gather(src: &[f32], index: &[i32], live: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            if i >= live {
                return 0.0;
            }
            let j = index[i];
            if j < 0 || j as usize >= src.len() {
                0.0
            } else {
                src[j as usize]
            }
        })
        .collect()
}

/// compact: the kept live slots, ascending (the kept count is its length).
pub fn compact(keep: &[u32], live: usize) -> Vec<i32> {
    (0..live)
        .filter(|&i| keep[i] != 0)
        .map(|i| i as i32)
        .collect()
}

/// Exclusive scan of the live slots, the total past them, and the total.
pub fn scan(src: &[i32], live: usize, n: usize) -> (Vec<i32>, i32) {
    let mut out = Vec::with_capacity(n);
    let mut carry = 0i32;
    for &v in &src[..live] {
        out.push(carry);
        carry = carry.wrapping_add(v);
    }
    out.resize(n, carry);
    (out, carry)
}

/// The jump step's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JumpOp {
    /// value + value of the parent.
    Rank,
    /// min(value, value of the parent).
    Min,
}

/// One pointer-jumping step (see `jump/bindings.yaml`).
pub fn jump(
    parent: &[i32],
    value: &[i32],
    live: usize,
    n: usize,
    op: JumpOp,
) -> (Vec<i32>, Vec<i32>) {
    let root = |p: i32, i: usize| p < 0 || p as usize >= live || p as usize == i;
    (0..n)
        .map(|i| {
            if i >= live {
                return (i as i32, 0);
            }
            let p = parent[i];
            if root(p, i) {
                return (i as i32, value[i]);
            }
            let pp = parent[p as usize];
            let po = if pp < 0 || pp as usize >= live { p } else { pp };
            let v = match op {
                JumpOp::Rank => value[i].wrapping_add(value[p as usize]),
                JumpOp::Min => value[i].min(value[p as usize]),
            };
            (po, v)
        })
        .unzip()
}

/// expand: every (owner, local_index) child of the live slots, sorted, and the sum of counts.
pub fn expand(counts: &[u32], live: usize) -> (Vec<(i32, i32)>, u64) {
    let mut out = Vec::new();
    let mut total = 0u64;
    for (i, &c) in counts[..live].iter().enumerate() {
        total += u64::from(c);
        out.extend((0..c).map(|t| (i as i32, t as i32)));
    }
    (out, total)
}

/// The cell of `p` for cell size `cell` (as the shaders compute it, in f32).
pub fn cell_of(p: [f32; 3], cell: f32) -> [i32; 3] {
    p.map(|x| (x / cell).floor() as i32)
}

/// Every (query, point) pair of live queries and live points within `radius` (radius ≤ cell,
/// so the 27 cells around a query hold every such point), sorted.
pub fn neighbour_pairs(queries: &[[f32; 3]], points: &[[f32; 3]], radius: f32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for (i, q) in queries.iter().enumerate() {
        for (j, p) in points.iter().enumerate() {
            let d = [p[0] - q[0], p[1] - q[1], p[2] - q[2]];
            // The shader's own f32 dot product, so boundary pairs agree.
            let dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            if dd <= radius * radius {
                out.push((i as u32, j as u32));
            }
        }
    }
    out
}

fn pcg(v: u32) -> u32 {
    let state = v.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// scatter_points: point `i` of `seed` in [0, extent)^3; (0, 0, 0) past the live count.
pub fn scatter_point(i: u32, seed: u32, extent: f32, live: bool) -> [f32; 3] {
    if !live {
        return [0.0; 3];
    }
    let h = pcg(i ^ pcg(seed));
    let hx = pcg(h);
    let hy = pcg(hx);
    let hz = pcg(hy);
    let unit = |v: u32| (v >> 8) as f32 / 16_777_216.0;
    [unit(hx) * extent, unit(hy) * extent, unit(hz) * extent]
}

/// predicate_keep: 1 when x + y + z < threshold (summed as the shader does).
pub fn keep(p: [f32; 3], threshold: f32) -> u32 {
    u32::from(p[0] + p[1] + p[2] < threshold)
}

/// The cast by value of one word (see `cast.wgsl`).
pub fn cast(bits: u32, from: Word, to: Word) -> u32 {
    match (from, to) {
        (Word::F32, Word::I32) => {
            let f = f32::from_bits(bits);
            // Rust's `as` saturates and maps NaN to 0, as the shader does.
            (f as i32) as u32
        }
        (Word::F32, Word::U32) => f32::from_bits(bits) as u32,
        (Word::I32, Word::F32) => (bits as i32 as f32).to_bits(),
        (Word::U32, Word::F32) => (bits as f32).to_bits(),
        (Word::I32, Word::U32) => {
            if (bits as i32) < 0 {
                0
            } else {
                bits
            }
        }
        (Word::U32, Word::I32) => bits.min(i32::MAX as u32),
        _ => bits,
    }
}

/// The fold of scatter's fold pass and of reduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// Sum (i32 wraps).
    Add,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

/// scatter's fold pass: `dst` with `src[i]` folded into `dst[index[i]]` for each live slot `i`
/// (`live` of them); an index outside `dst` reaches no place.
pub fn scatter(src: &[i32], index: &[i32], dst: &[i32], live: usize, op: Fold) -> Vec<i32> {
    let mut out = dst.to_vec();
    for i in 0..live {
        let Ok(j) = usize::try_from(index[i]) else {
            continue;
        };
        if let Some(d) = out.get_mut(j) {
            *d = match op {
                Fold::Add => d.wrapping_add(src[i]),
                Fold::Min => (*d).min(src[i]),
                Fold::Max => (*d).max(src[i]),
            };
        }
    }
    out
}

/// The slot ranges of the live segments (`segments` of them, at most `starts.len()`): segment
/// `s` spans `[starts[s], starts[s+1])`, the last ends at `live`, every bound clamped to
/// `[0, live]`; an end at or below its start is an empty segment.
pub fn segments(starts: &[i32], segments: usize, live: usize) -> Vec<std::ops::Range<usize>> {
    let count = segments.min(starts.len());
    let at = |s: usize| (starts[s].max(0) as usize).min(live);
    (0..count)
        .map(|s| {
            let a = at(s);
            let b = if s + 1 < count { at(s + 1) } else { live };
            a..b.max(a)
        })
        .collect()
}

/// Segmented reduce of f32 in slot order: one value per live segment (the identity, 0, +inf
/// or -inf, for an empty one).
pub fn reduce(
    src: &[f32],
    starts: &[i32],
    segments_live: usize,
    live: usize,
    op: Fold,
) -> Vec<f32> {
    segments(starts, segments_live, live)
        .into_iter()
        .map(|r| {
            let id = match op {
                Fold::Add => 0.0f32,
                Fold::Min => f32::INFINITY,
                Fold::Max => f32::NEG_INFINITY,
            };
            src[r].iter().fold(id, |a, &b| match op {
                Fold::Add => a + b,
                Fold::Min => a.min(b),
                Fold::Max => a.max(b),
            })
        })
        .collect()
}

/// Segmented exclusive scan over `n` slots: each live segment scanned on its own, slots past
/// `live` holding the last live segment's total, slots before the first start `None` (not
/// written); and each live segment's total.
pub fn segmented_scan(
    src: &[i32],
    starts: &[i32],
    segments_live: usize,
    live: usize,
    n: usize,
) -> (Vec<Option<i32>>, Vec<i32>) {
    let mut out = vec![None; n];
    let mut totals = Vec::new();
    for r in segments(starts, segments_live, live) {
        let mut sum = 0i32;
        for i in r {
            out[i] = Some(sum);
            sum = sum.wrapping_add(src[i]);
        }
        totals.push(sum);
    }
    let last = totals.last().copied().unwrap_or(0);
    for o in &mut out[live..] {
        *o = Some(last);
    }
    (out, totals)
}
