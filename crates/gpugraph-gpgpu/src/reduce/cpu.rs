//! CPU oracle of [`super::Reduction`]: plain loops for the exact results, and the kernel's
//! fixed float summation order for bit-exact checks of the deterministic sum.

use super::ChunkPlan;
use crate::group::cpu::order_key;

/// Float32 reduction results (sum in f64; the GPU's float32 sum is
/// [`fixed_order_sum`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatReduction {
    /// Exact-ish sum of accepted values.
    pub sum: f64,
    /// Minimum accepted value (NaN when none; −0 below +0).
    pub min: f32,
    /// Maximum accepted value (NaN when none).
    pub max: f32,
    /// Accepted values (included and finite).
    pub count: u32,
    /// Included non-finite values.
    pub ignored: u32,
}

/// Uint32 reduction results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UintReduction {
    /// Sum modulo 2⁶⁴.
    pub sum: u64,
    /// Minimum (`u32::MAX` when none).
    pub min: u32,
    /// Maximum (0 when none).
    pub max: u32,
    /// Included values.
    pub count: u32,
}

fn included(mask: Option<&[u32]>, i: usize) -> bool {
    mask.is_none_or(|m| m[i] != 0)
}

/// Reduces float32 `values` (mask zero: excluded; non-finite: ignored).
pub fn reduce_f32(values: &[f32], mask: Option<&[u32]>) -> FloatReduction {
    let mut r = FloatReduction {
        sum: 0.0,
        min: f32::NAN,
        max: f32::NAN,
        count: 0,
        ignored: 0,
    };
    for (i, &v) in values.iter().enumerate() {
        if !included(mask, i) {
            continue;
        }
        if !v.is_finite() {
            r.ignored += 1;
            continue;
        }
        r.sum += v as f64;
        r.count += 1;
        if r.min.is_nan() || order_key(v) < order_key(r.min) {
            r.min = v;
        }
        if r.max.is_nan() || order_key(v) > order_key(r.max) {
            r.max = v;
        }
    }
    r
}

/// Reduces uint32 `values` (mask zero: excluded).
pub fn reduce_u32(values: &[u32], mask: Option<&[u32]>) -> UintReduction {
    let mut r = UintReduction {
        sum: 0,
        min: u32::MAX,
        max: 0,
        count: 0,
    };
    for (i, &v) in values.iter().enumerate() {
        if included(mask, i) {
            r.sum = r.sum.wrapping_add(v as u64);
            r.min = r.min.min(v);
            r.max = r.max.max(v);
            r.count += 1;
        }
    }
    r
}

/// The workgroup tree: stride WG/2, WG/4, ..., 1, lower slot first.
fn tree(mut v: Vec<f32>) -> f32 {
    let mut s = v.len() / 2;
    while s > 0 {
        for lane in 0..s {
            v[lane] += v[lane + s];
        }
        s /= 2;
    }
    v[0]
}

/// One chunk for [`fixed_order_sum`]: its values, optional mask, and plan.
pub type SumChunk<'a> = (&'a [f32], Option<&'a [u32]>, ChunkPlan);

/// The float32 sum exactly as the kernels order it, for chunks in vector order (see the
/// module documentation of [`super`]).
pub fn fixed_order_sum(chunks: &[SumChunk<'_>]) -> f32 {
    let wg = chunks.first().map_or(256, |c| c.2.workgroup_size as usize);
    let mut partials = Vec::new();
    for &(values, mask, plan) in chunks {
        let vpt = plan.vec4_per_thread as usize;
        let tile = wg * vpt;
        let ok = |i: usize| included(mask, i) && values[i].is_finite();
        let val = |i: usize| if ok(i) { values[i] } else { 0.0 };
        let (head, body) = (plan.head as usize, plan.body_vecs as usize);
        for w in 0..plan.workgroups as usize {
            let mut totals = vec![0f32; wg];
            for (lane, total) in totals.iter_mut().enumerate() {
                let mut s = [0f32; 4];
                let mut t = w;
                while t < plan.tiles as usize {
                    for j in 0..vpt {
                        let q = t * tile + j * wg + lane;
                        if q < body {
                            for (c, sc) in s.iter_mut().enumerate() {
                                *sc += val(head + 4 * q + c);
                            }
                        }
                    }
                    t += plan.workgroups as usize;
                }
                *total = (s[0] + s[1]) + (s[2] + s[3]);
                if w == 0 && lane == 0 {
                    for i in (0..head).chain(head + 4 * body..values.len()) {
                        if ok(i) {
                            *total += values[i];
                        }
                    }
                }
            }
            partials.push(tree(totals));
        }
    }
    let mut totals = vec![0f32; wg];
    for (lane, total) in totals.iter_mut().enumerate() {
        *total = partials
            .iter()
            .skip(lane)
            .step_by(wg)
            .fold(0.0, |a, &p| a + p);
    }
    tree(totals)
}
