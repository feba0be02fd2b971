//! CPU oracle of keyed accumulation (group aggregation, and through `key`, grid aggregation
//! and histograms): the plain loop the kernels parallelize. Sums are exact-ish (f64) so tests
//! can bound the GPU's unordered float32 accumulation with [`sum_bound`].

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
    /// Included rows that had no key or a non-finite value.
    pub ignored: u32,
}

impl Aggregates {
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
        ignored: 0,
    };
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
