//! The partial-state batch a GPU aggregation emits: its groups' keys (coded source keys by
//! mixed-radix index, lookup-side keys by lookup row) and each aggregate's state fields.

use std::sync::Arc;

use datafusion::arrow::array::{
    new_empty_array, ArrayRef, Decimal128Array, Float64Array, Int32Array, Int64Array, ListArray,
    UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;

use super::{AggKind, AggWords, GpuPlan, GroupKey, Span};
use crate::lookup::LookupTable;
use crate::program::sum96;

impl GpuPlan {
    /// Group indices of the coded keys' combinations `cards` (`S`), and all groups: `S`
    /// times the lookup rows of [`Self::lookup_row`]'s side when group keys come from
    /// there (`lookups` are the built sides). Both saturate at `usize::MAX`: a product that
    /// wrapped would index too few groups.
    pub fn group_count(&self, cards: &[u32], lookups: &[LookupTable]) -> (usize, usize) {
        let source = cards
            .iter()
            .fold(1usize, |p, &c| p.saturating_mul(c as usize))
            .max(1);
        let rows = match &self.lookup_row {
            Some((s, _)) => lookups.get(*s).map_or(1, |l| l.rows.max(1)),
            None => 1,
        };
        (source, source.saturating_mul(rows))
    }

    /// The partial-state batch from the accumulators `acc` of the groups of
    /// [`Self::group_count`]: the groups with rows (or the one group without GROUP BY,
    /// always), `key_values(k, indices)` giving coded key k's values for mixed-radix indices
    /// of the coded keys (then key map `k − keys` of [`GpuPlan::key_maps`]'s), `lookups` the built lookup sides (their group keys' values).
    pub fn output(
        &self,
        acc: &[u32],
        words: &[AggWords],
        wpg: usize,
        (source, groups): (usize, usize),
        lookups: &[LookupTable],
        key_values: &dyn Fn(usize, &[usize]) -> datafusion::common::Result<ArrayRef>,
    ) -> datafusion::common::Result<RecordBatch> {
        // A preserved lookup side's rows are every group, with streamed rows or not.
        let preserved_rows = self.preserved.map(|p| lookups.get(p).map_or(0, |l| l.rows));
        let emitted: Vec<usize> = match preserved_rows {
            Some(0) => Vec::new(),
            Some(_) => (0..groups).collect(),
            None => (0..groups)
                .filter(|g| self.groups.is_empty() || sum96(acc, g * wpg) > 0)
                .collect(),
        };
        let mut columns: Vec<ArrayRef> = Vec::new();
        for (k, group) in self.groups.iter().enumerate() {
            let dt = self.schema.field(k).data_type();
            let values = match *group {
                _ if emitted.is_empty() => new_empty_array(dt),
                GroupKey::Source(k) => {
                    let indices: Vec<usize> = emitted.iter().map(|g| g % source).collect();
                    key_values(k, &indices)?
                }
                GroupKey::Mapped(j) => {
                    let indices: Vec<usize> = emitted.iter().map(|g| g % source).collect();
                    key_values(self.keys.len() + j, &indices)?
                }
                GroupKey::Lookup(j) => {
                    let side = self.lookup_row.as_ref().and_then(|(s, _)| lookups.get(*s));
                    let side = side.ok_or_else(|| {
                        datafusion::error::DataFusionError::Internal(format!(
                            "lookup group key {j} was not collected"
                        ))
                    })?;
                    let rows: Vec<u32> = emitted.iter().map(|g| (g / source) as u32).collect();
                    side.group_values(j, &rows)
                        .map_err(datafusion::error::DataFusionError::Internal)?
                }
            };
            // A scan may deliver a key in another encoding than DataFusion's (the direct
            // Parquet scan reads strings as dictionaries): one row per group to cast.
            columns.push(if values.data_type() == dt {
                values
            } else {
                cast(&values, dt)?
            });
        }
        for (a, w) in self.aggregates.iter().zip(words) {
            let count = |g: usize| sum96(acc, g * wpg + w.count as usize);
            let sum = |g: usize| match (count(g), w.sum) {
                (c, Some(s)) if c > 0 => Some(sum96(acc, g * wpg + s as usize)),
                _ => None,
            };
            for dt in &a.state {
                let array: ArrayRef = match (a.kind, dt) {
                    // A group with no non-null argument has a NULL count, as DataFusion's own
                    // partial avg emits it: its final avg marks a group seen by a non-null
                    // count and would divide that group's NULL sum by zero.
                    (AggKind::Avg, DataType::UInt64) => Arc::new(UInt64Array::from_iter(
                        emitted
                            .iter()
                            .map(|&g| Some(count(g) as u64).filter(|&c| c > 0)),
                    )),
                    (AggKind::Count, _) => Arc::new(Int64Array::from_iter_values(
                        emitted.iter().map(|&g| count(g) as i64),
                    )),
                    (AggKind::Sum | AggKind::Avg, DataType::Decimal128(p, s)) => {
                        let limit = 10i128.checked_pow(u32::from(*p)).unwrap_or(i128::MAX);
                        let sums = emitted
                            .iter()
                            .map(|&g| match sum(g) {
                                Some(v) if v.abs() >= limit => Err(sum_overflow(v, dt)),
                                v => Ok(v),
                            })
                            .collect::<datafusion::common::Result<Vec<_>>>()?;
                        Arc::new(Decimal128Array::from_iter(sums).with_precision_and_scale(*p, *s)?)
                    }
                    (AggKind::Sum | AggKind::Avg, DataType::Int64) => {
                        // The GPU keeps 96-bit sums: a sum past Int64 is an error here, where
                        // a plain `as i64` would wrap it into a wrong number without a word.
                        let sums = emitted
                            .iter()
                            .map(|&g| {
                                sum(g)
                                    .map(|v| i64::try_from(v).map_err(|_| sum_overflow(v, dt)))
                                    .transpose()
                            })
                            .collect::<datafusion::common::Result<Vec<_>>>()?;
                        Arc::new(Int64Array::from(sums))
                    }
                    (AggKind::Sum | AggKind::Avg, DataType::Float64) => Arc::new(
                        Float64Array::from_iter(emitted.iter().map(|&g| sum(g).map(|s| s as f64))),
                    ),
                    (AggKind::Min | AggKind::Max, dt) => {
                        let e = w.extreme.unwrap_or(0) as usize;
                        let v = emitted.iter().map(|&g| {
                            (count(g) > 0).then(|| (acc[g * wpg + e] ^ 0x8000_0000) as i32)
                        });
                        match dt {
                            DataType::Decimal128(p, s) => Arc::new(
                                Decimal128Array::from_iter(v.map(|x| x.map(i128::from)))
                                    .with_precision_and_scale(*p, *s)?,
                            ),
                            _ => cast(&Int32Array::from_iter(v), dt)?,
                        }
                    }
                    (AggKind::CountDistinct, DataType::List(item)) => {
                        let (at, span) = w.bits.ok_or_else(|| {
                            datafusion::error::DataFusionError::Internal(
                                "a COUNT(DISTINCT) without its bitmap".into(),
                            )
                        })?;
                        let bitmaps = emitted.iter().map(|&g| {
                            let first = g * wpg + at as usize;
                            &acc[first..first + span.words as usize]
                        });
                        let (lengths, values) = distinct_values(bitmaps, span);
                        let values: ArrayRef = match item.data_type() {
                            DataType::Decimal128(p, s) => Arc::new(
                                Decimal128Array::from_iter_values(
                                    values.into_iter().map(i128::from),
                                )
                                .with_precision_and_scale(*p, *s)?,
                            ),
                            // Arrow casts dates from 32-bit integers only.
                            DataType::Date32 => cast(
                                &cast(&Int64Array::from(values), &DataType::Int32)?,
                                &DataType::Date32,
                            )?,
                            t => cast(&Int64Array::from(values), t)?,
                        };
                        Arc::new(ListArray::try_new(
                            Arc::clone(item),
                            OffsetBuffer::from_lengths(lengths),
                            values,
                            None,
                        )?)
                    }
                    (_, dt) => {
                        return Err(datafusion::error::DataFusionError::Internal(format!(
                            "GPU state type {dt} of {:?}",
                            a.kind
                        )))
                    }
                };
                columns.push(array);
            }
        }
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

/// Each bitmap's distinct values (bit d of word i: `span.lo + 32 i + d`), in ascending order:
/// how many per bitmap, and all of them one bitmap after the other.
fn distinct_values<'a>(
    bitmaps: impl Iterator<Item = &'a [u32]>,
    span: Span,
) -> (Vec<usize>, Vec<i64>) {
    let bitmaps: Vec<&[u32]> = bitmaps.collect();
    let total: usize = bitmaps
        .iter()
        .flat_map(|w| w.iter())
        .map(|w| w.count_ones() as usize)
        .sum();
    let mut lengths = Vec::with_capacity(bitmaps.len());
    let mut values = Vec::with_capacity(total);
    for words in bitmaps {
        let before = values.len();
        for (i, &word) in words.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                let d = rest.trailing_zeros();
                values.push(span.lo + 32 * i as i64 + d as i64);
                rest &= rest - 1;
            }
        }
        lengths.push(values.len() - before);
    }
    (lengths, values)
}

/// The error of a sum whose exact value `v` does not fit its result type `dt`: DuckDB
/// raises "Out of Range" here; DataFusion's CPU sum wraps (docs/sql.md).
fn sum_overflow(v: i128, dt: &DataType) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::Execution(format!(
        "integer overflow: a sum's exact value {v} does not fit its result type {dt}; \
         cast the argument to a wider DECIMAL to sum it exactly"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Schema;
    use datafusion::physical_plan::empty::EmptyExec;

    #[test]
    fn group_counts_saturate_instead_of_wrapping() {
        let schema = Arc::new(Schema::empty());
        let plan = GpuPlan {
            source: Arc::new(EmptyExec::new(Arc::clone(&schema))),
            predicates: Vec::new(),
            keys: Vec::new(),
            coded: Vec::new(),
            aggregates: Vec::new(),
            values: Vec::new(),
            schema,
            lookups: Vec::new(),
            groups: Vec::new(),
            lookup_row: None,
            maps: Vec::new(),
            params: Vec::new(),
            key_maps: Vec::new(),
            preserved: None,
            sets: Vec::new(),
            extremes: Vec::new(),
            payloads: Vec::new(),
        };
        assert_eq!(plan.group_count(&[3, 5], &[]), (15, 15));
        assert_eq!(plan.group_count(&[], &[]), (1, 1));
        // 2^64 combinations would wrap to 0, which `max(1)` made one group.
        let wide = plan.group_count(&[1 << 16; 4], &[]);
        assert_eq!(wide, (usize::MAX, usize::MAX));
    }

    #[test]
    fn bitmaps_list_their_values_in_order() {
        let span = Span { lo: -40, words: 2 };
        let maps: [&[u32]; 3] = [&[0b101, 1 << 31], &[0, 0], &[0, 1]];
        let (lengths, values) = distinct_values(maps.into_iter(), span);
        assert_eq!(lengths, [3, 0, 1]);
        assert_eq!(values, [-40, -38, 23, -8]);
    }
}
