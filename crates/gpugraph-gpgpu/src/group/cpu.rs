//! CPU oracle of keyed accumulation (group aggregation, and through `key`, grid aggregation
//! and histograms): the plain loop the kernels parallelize. Sums are exact-ish (f64) so tests
//! can bound the GPU's unordered float32 accumulation with [`sum_bound`]; the deterministic
//! fixed-point sums ([`super::Summation::Deterministic`]) are modelled bit for bit by
//! [`fixed_point_sum`].

/// Per-key statistics and the ignored-row count.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregates {
    /// Accepted rows per key.
    pub count: Vec<u32>,
    /// Sum per key in f64 (0 for empty keys).
    pub sum: Vec<f64>,
    /// Sum of absolute values per key (for error bounds).
    pub abs_sum: Vec<f64>,
    /// Minimum per key (NaN when empty); -0.0 orders below +0.0.
    pub min: Vec<f32>,
    /// Maximum per key (NaN when empty).
    pub max: Vec<f32>,
    /// The [`super::Summation::Deterministic`] sum per key, bit for bit ([`fixed_point_sum`]).
    pub fixed_sum: Vec<f32>,
    /// Included rows that had no key or a non-finite value.
    pub ignored: u32,
}

impl Aggregates {
    /// The largest |value| of key `k` (0 when empty).
    pub fn max_abs(&self, k: usize) -> f32 {
        if self.count[k] == 0 {
            return 0.0;
        }
        self.min[k].abs().max(self.max[k].abs())
    }

    /// `sum / count` per key in f64 (NaN when empty).
    pub fn mean(&self) -> Vec<f64> {
        self.sum
            .iter()
            .zip(&self.count)
            .map(|(s, &c)| if c == 0 { f64::NAN } else { s / c as f64 })
            .collect()
    }
}

/// The order-preserving u32 encoding the kernels use for min/max.
pub fn order_key(x: f32) -> u32 {
    let b = x.to_bits();
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

/// Bound on |float32 sum in any order − exact sum| for `count` terms with `abs_sum = Σ|x|`:
/// each of the count−1 additions rounds once with relative error ≤ 2⁻²⁴ of a partial sum
/// bounded by `abs_sum` (doubled for slack), plus the final rounding to f32.
pub fn sum_bound(count: u32, abs_sum: f64) -> f64 {
    (count as f64 + 1.0) * abs_sum * 2f64.powi(-23) + f32::MIN_POSITIVE as f64
}

/// Exponent `e` of a key's fixed-point unit `2^(e - 31)`, from the largest |value| of the
/// key: every |value| is below `2^e`; clamped to `[-94, 128]` so the scale factor stays a
/// normal float32 and subnormal values (below `2^-126`) always quantize to 0.
pub fn fixed_point_exponent(max_abs: f32) -> i32 {
    let biased = ((max_abs.to_bits() >> 23) & 0xff) as i32;
    (biased - 126).clamp(-94, 128)
}

/// `v` in units of `2^(e - 31)`, rounded to the nearest integer (ties to even); |result| <
/// 2^31 when |v| < 2^e.
pub fn fixed_point_term(v: f32, e: i32) -> i64 {
    let q = (v.abs() * pow2(31 - e)).round_ties_even() as i64;
    if v < 0.0 {
        -q
    } else {
        q
    }
}

/// The deterministic sum of `values` (finite, all of one key): every value is quantized to
/// the key's fixed-point unit ([`fixed_point_exponent`] of the largest |value|), the integers
/// are added exactly, and the total is rounded once to float32 (nearest, ties to even). The
/// result is independent of order, so it is the same on every run, device and policy; its
/// error is at most `count · 2^(e - 32)` plus that final rounding.
pub fn fixed_point_sum(values: &[f32]) -> f32 {
    let max_abs = values.iter().fold(0f32, |m, v| m.max(v.abs()));
    let e = fixed_point_exponent(max_abs);
    let total: i64 = values.iter().map(|&v| fixed_point_term(v, e)).sum();
    // i64 → f32 rounds to nearest (ties to even); the power-of-two scale is exact unless it
    // overflows, and then the float32 sum overflows too.
    total as f32 * pow2(e - 31)
}

/// `2^k` for a normal float32 exponent `k` in `-126..=127`, built from its bits (exact).
fn pow2(k: i32) -> f32 {
    debug_assert!((-126..=127).contains(&k));
    f32::from_bits(((k + 127) as u32) << 23)
}

/// Accumulates rows: `key(i)` is row i's key (None or ≥ `key_count`: ignored), `values` the
/// optional aligned values (non-finite: ignored), `mask` the optional inclusion mask (zero:
/// excluded, not counted as ignored).
pub fn aggregate_keys(
    rows: usize,
    key: impl Fn(usize) -> Option<u32>,
    values: Option<&[f32]>,
    mask: Option<&[u32]>,
    key_count: u32,
) -> Aggregates {
    let k = key_count as usize;
    let mut a = Aggregates {
        count: vec![0; k],
        sum: vec![0.0; k],
        abs_sum: vec![0.0; k],
        min: vec![f32::NAN; k],
        max: vec![f32::NAN; k],
        fixed_sum: vec![0.0; k],
        ignored: 0,
    };
    let mut accepted: Vec<Vec<f32>> = vec![Vec::new(); k];
    for i in 0..rows {
        if mask.is_some_and(|m| m[i] == 0) {
            continue;
        }
        let v = values.map_or(0.0, |v| v[i]);
        let key = key(i).filter(|&c| c < key_count);
        let Some(c) = key.filter(|_| v.is_finite()) else {
            a.ignored += 1;
            continue;
        };
        let c = c as usize;
        accepted[c].push(v);
        a.count[c] += 1;
        a.sum[c] += v as f64;
        a.abs_sum[c] += v.abs() as f64;
        if a.min[c].is_nan() || order_key(v) < order_key(a.min[c]) {
            a.min[c] = v;
        }
        if a.max[c].is_nan() || order_key(v) > order_key(a.max[c]) {
            a.max[c] = v;
        }
    }
    for (sum, values) in a.fixed_sum.iter_mut().zip(&accepted) {
        *sum = fixed_point_sum(values);
    }
    a
}

/// Group aggregation: dense codes (≥ `group_count`: ignored) with optional values and mask.
pub fn group(
    codes: &[u32],
    values: Option<&[f32]>,
    mask: Option<&[u32]>,
    group_count: u32,
) -> Aggregates {
    aggregate_keys(codes.len(), |i| Some(codes[i]), values, mask, group_count)
}
