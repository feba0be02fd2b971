//! What a keyed accumulation writes: the public per-key result views and summation mode of its
//! front-ends, and the engine's full output set.

use gpugraph_command::DataView;

/// How float sums (and the means built on them) are accumulated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Summation {
    /// One pass; float32 compare-exchange additions in whatever order the device runs them:
    /// results may differ in the last bits from run to run (error bound: [`crate::group::cpu::sum_bound`]).
    #[default]
    Atomic,
    /// Bit-identical on every run, and for the sum also on every device and policy: a first
    /// pass finds each key's largest |value|, a second adds every value as a 64-bit integer
    /// in units of `2^(e-31)` (`2^e` above that largest |value|) with integer atomics, whose
    /// total does not depend on order, and finalize rounds it once to float32 (nearest, ties
    /// to even; modelled bit for bit by [`crate::group::cpu::fixed_point_sum`]). Error ≤ `count · 2^(e-32)`
    /// plus that rounding, at most about 2⁻³¹ of `count · max|v|`; values below 2⁻¹²⁵ of a
    /// key with tiny values count as 0. Mean is that sum divided by the count on the device.
    /// Cost: the keys and values are read twice (an extra `{id}/scale` pass) and the sum
    /// takes three accumulator words instead of one.
    Deterministic,
}

/// Caller-owned per-key result views (groups or grid cells); each has exactly one row per key.
/// Give at least one. `count` is uint32; the others are float32 and need values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AggregateOutputs {
    /// Accepted rows per key.
    pub count: Option<DataView>,
    /// Sum of accepted values (0 when empty).
    pub sum: Option<DataView>,
    /// Minimum accepted value (NaN when empty).
    pub min: Option<DataView>,
    /// Maximum accepted value (NaN when empty).
    pub max: Option<DataView>,
    /// `sum / count` (NaN when empty).
    pub mean: Option<DataView>,
    /// How `sum` and `mean` are accumulated.
    pub summation: Summation,
}

impl AggregateOutputs {
    pub(crate) fn keyed(self, ignored: Option<DataView>) -> KeyedOutputs {
        KeyedOutputs {
            count: self.count,
            sum: self.sum,
            min: self.min,
            max: self.max,
            mean: self.mean,
            ignored,
            flag: None,
            summation: self.summation,
        }
    }
}

/// Caller-owned result views of a keyed accumulation. Per-key views have `key_count` rows;
/// `ignored` and `flag` are one uint32 row each.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KeyedOutputs {
    pub count: Option<DataView>,
    pub sum: Option<DataView>,
    pub min: Option<DataView>,
    pub max: Option<DataView>,
    pub mean: Option<DataView>,
    pub ignored: Option<DataView>,
    pub flag: Option<DataView>,
    pub summation: Summation,
}
