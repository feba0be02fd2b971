//! Where float32 on the GPU would change an answer, the loaded (host) columns decide first:
//!
//! * a `--filter` on a float64 column is evaluated here in float64 (once per row, while the
//!   batches are on the host anyway) into a 0/1 column that the GPU then tests, because
//!   rounding the column and the threshold to float32 moves rows across the threshold
//!   (`v > 0.1` on 0.10000000001, `v > 16777216` on 16777217);
//! * [`integer_bins`] gives a column of a few integers one histogram bin per integer
//!   instead of 40 bins with gaps between them;
//! * [`rounds_in_float32`] tells whether a column's float32 upload rounded any value, so the
//!   grid domain is widened to contain every original point.

use std::sync::Arc;

use anyhow::{bail, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema};

use super::args::{CmpOp, Filter};
use super::load::Loaded;

/// Prefix of the derived filter columns (a control character: no file's column name).
const DERIVED: &str = "\u{1}filter";

/// `v OP t` in float64; NaN (and, by the caller, null) never passes.
fn passes(v: f64, op: CmpOp, t: f64) -> bool {
    if v.is_nan() {
        return false;
    }
    match op {
        CmpOp::Lt => v < t,
        CmpOp::Le => v <= t,
        CmpOp::Gt => v > t,
        CmpOp::Ge => v >= t,
        CmpOp::Eq => v == t,
        CmpOp::Ne => v != t,
    }
}

/// Replaces every filter on a float64 column by `derived == 1` on a 0/1 UInt32 column
/// appended to `loaded` (the comparison made here in float64). Returns the filters to run
/// and one note per replaced filter for the report.
pub fn float64_filters(
    loaded: &mut Loaded,
    filters: &[Filter],
) -> Result<(Vec<Filter>, Vec<String>)> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for (k, f) in filters.iter().enumerate() {
        let Ok(i) = loaded.schema.index_of(&f.column) else {
            out.push(f.clone());
            continue;
        };
        if loaded.schema.field(i).data_type() != &DataType::Float64 {
            out.push(f.clone());
            continue;
        }
        let t = f.number().map_err(anyhow::Error::msg)?;
        let name = format!("{DERIVED}{k}:{}", f.column);
        let mut fields: Vec<Arc<Field>> = loaded.schema.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(&name, DataType::UInt32, false)));
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            loaded.schema.metadata().clone(),
        ));
        let mut flipped = 0u64;
        let mut batches = Vec::with_capacity(loaded.batches.len());
        for b in &loaded.batches {
            let column = b.column(i).as_primitive::<Float64Type>();
            let mask: UInt32Array = (0..column.len())
                .map(|r| {
                    let ok = column.is_valid(r) && passes(column.value(r), f.op, t);
                    let rounded = column.is_valid(r)
                        && passes(column.value(r) as f32 as f64, f.op, t as f32 as f64);
                    flipped += u64::from(ok != rounded);
                    u32::from(ok)
                })
                .collect();
            let mut columns: Vec<ArrayRef> = b.columns().to_vec();
            columns.push(Arc::new(mask));
            batches.push(RecordBatch::try_new(schema.clone(), columns)?);
        }
        loaded.schema = schema;
        loaded.batches = batches;
        notes.push(format!(
            "filter '{f}' compared in float64 (column '{}' is float64); in float32 {flipped} rows would have changed side",
            f.column
        ));
        out.push(Filter {
            column: name,
            op: CmpOp::Eq,
            value: "1".into(),
        });
    }
    Ok((out, notes))
}

/// Columns longer than this are not scanned for [`integer_bins`] (the default bin count
/// adapts for small inputs, where gaps between 40 bins are most visible).
pub const INTEGER_BINS_MAX_ROWS: u64 = 10_000_000;

/// `Some(max - min + 1)` when every non-null finite value of column `name` is an integer and
/// they span `2..=limit` integers (so equal-width bins over the extent put each integer in a
/// bin of its own); else `None`.
pub fn integer_bins(loaded: &Loaded, name: &str, limit: u32) -> Result<Option<u32>> {
    if loaded.rows > INTEGER_BINS_MAX_ROWS {
        return Ok(None);
    }
    let Ok(i) = loaded.schema.index_of(name) else {
        bail!("column '{name}' was not loaded");
    };
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for b in &loaded.batches {
        let c = arrow_cast::cast(b.column(i), &DataType::Float64)?;
        let c = c.as_primitive::<Float64Type>();
        for r in 0..c.len() {
            let v = c.value(r);
            if c.is_null(r) || !v.is_finite() {
                continue;
            }
            if v.fract() != 0.0 || v.abs() > 16_777_216.0 {
                return Ok(None);
            }
            lo = lo.min(v);
            hi = hi.max(v);
            if hi - lo >= limit as f64 {
                return Ok(None);
            }
        }
    }
    Ok((hi > lo).then(|| (hi - lo) as u32 + 1))
}

/// Whether uploading column `name` as float32 rounded any non-null finite value (float64
/// values not exact in float32, integers beyond 2^24). Bails for a column not loaded.
pub fn rounds_in_float32(loaded: &Loaded, name: &str) -> Result<bool> {
    let Ok(i) = loaded.schema.index_of(name) else {
        bail!("column '{name}' was not loaded");
    };
    fn any<T: arrow_array::ArrowPrimitiveType>(
        batches: &[RecordBatch],
        i: usize,
        lossy: impl Fn(T::Native) -> bool,
    ) -> bool {
        batches.iter().any(|b| {
            let c = b.column(i).as_primitive::<T>();
            // First a branch-free pass over every slot, nulls included (it vectorizes: this
            // scan ran at ~0.1 G rows/s row by row, on every analyze with a grid); only when
            // some slot rounds do the nulls matter, and the exact row-by-row test decides.
            let values = c.values();
            let some_slot = values
                .chunks(4096)
                .any(|block| block.iter().fold(false, |acc, &v| acc | lossy(v)));
            some_slot && (0..c.len()).any(|r| c.is_valid(r) && lossy(c.value(r)))
        })
    }
    let b = &loaded.batches;
    Ok(match loaded.schema.field(i).data_type() {
        DataType::Float64 => any::<Float64Type>(b, i, |v| v.is_finite() && (v as f32) as f64 != v),
        DataType::Int32 => any::<Int32Type>(b, i, |v| (v as f32) as i64 != v as i64),
        DataType::Int64 => any::<Int64Type>(b, i, |v| (v as f32) as i128 != v as i128),
        DataType::UInt32 => any::<UInt32Type>(b, i, |v| (v as f32) as u64 != v as u64),
        DataType::UInt64 => any::<UInt64Type>(b, i, |v| (v as f32) as u128 != v as u128),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Float64Array;

    fn loaded(values: Vec<Option<f64>>) -> Loaded {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Float64, true)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Float64Array::from(values)) as ArrayRef],
        )
        .unwrap();
        Loaded {
            kind: super::super::load::FileKind::Csv,
            rows: batch.num_rows() as u64,
            schema,
            batches: vec![batch],
        }
    }

    #[test]
    fn float64_filters_compare_in_float64() {
        let mut l = loaded(vec![
            Some(0.1),
            Some(0.10000000001),
            Some(0.2),
            None,
            Some(f64::NAN),
            Some(16777217.0),
        ]);
        let f = super::super::args::parse_filter("v > 0.1").unwrap();
        let (filters, notes) = float64_filters(&mut l, &[f]).unwrap();
        assert_eq!(filters[0].op, CmpOp::Eq);
        let mask = l.batches[0].column(1).as_primitive::<UInt32Type>();
        assert_eq!(mask.values().to_vec(), vec![0, 1, 1, 0, 0, 1]);
        // float32: 0.10000000001 rounds to 0.1f32 and no longer passes.
        assert!(
            notes[0].contains("1 rows would have changed side"),
            "{notes:?}"
        );
        let mut l = loaded(vec![Some(16777217.0), Some(16777216.0)]);
        let f = super::super::args::parse_filter("v > 16777216").unwrap();
        float64_filters(&mut l, &[f]).unwrap();
        let mask = l.batches[0].column(1).as_primitive::<UInt32Type>();
        assert_eq!(mask.values().to_vec(), vec![1, 0]);
    }

    #[test]
    fn few_integers_get_a_bin_each() {
        let ints = loaded(vec![Some(3.0), Some(1.0), None, Some(f64::NAN), Some(5.0)]);
        assert_eq!(integer_bins(&ints, "v", 40).unwrap(), Some(5));
        assert_eq!(integer_bins(&ints, "v", 4).unwrap(), None);
        assert_eq!(
            integer_bins(&loaded(vec![Some(1.5), Some(2.0)]), "v", 40).unwrap(),
            None
        );
        assert_eq!(
            integer_bins(&loaded(vec![Some(2.0), Some(2.0)]), "v", 40).unwrap(),
            None
        );
    }

    #[test]
    fn rounding_is_detected() {
        assert!(rounds_in_float32(&loaded(vec![Some(0.1)]), "v").unwrap());
        assert!(!rounds_in_float32(&loaded(vec![Some(0.5), None, Some(f64::NAN)]), "v").unwrap());
        assert!(rounds_in_float32(&loaded(vec![Some(16777217.0)]), "v").unwrap());
        // A null slot holding a value that would round does not count (the fast pass sees
        // it, the exact pass rules it out); a valid one after 5,000 exact rows does.
        let values = Float64Array::from(vec![0.5, 0.1, 2.0]);
        let null_second = arrow_array::BooleanArray::from(vec![false, true, false]);
        let array = arrow_select::nullif::nullif(&values, &null_second).unwrap();
        assert_eq!(array.as_primitive::<Float64Type>().values()[1], 0.1);
        let mut l = loaded(Vec::new());
        l.batches = vec![RecordBatch::try_new(l.schema.clone(), vec![array]).unwrap()];
        assert!(!rounds_in_float32(&l, "v").unwrap());
        let mut late = vec![Some(1.0); 5000];
        late.push(Some(0.1));
        assert!(rounds_in_float32(&loaded(late), "v").unwrap());
    }
}
