//! Arrow batches → the kernel's 32-bit column words, batch by batch as the source yields
//! them.
//!
//! Number columns (integers, Date32, Decimal128 unscaled values) travel as i32: a value that
//! does not fit is a [`Misfit`], and the caller runs the CPU plan instead. Each column's
//! minimum and maximum are kept for the bounds check. Group keys become dictionary codes in
//! first-seen order (a NULL key is a code of its own, as SQL groups NULLs together); the
//! first row of each code is kept so the key's values come back in the key's own Arrow type.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::{cast, interleave};
use datafusion::arrow::datatypes::{DataType, Date32Type, Decimal128Type, Int32Type, Int64Type};
use datafusion::arrow::record_batch::RecordBatch;

/// A value that does not fit the GPU's 32-bit columns (or a column it cannot convert).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {what}")]
pub struct Misfit {
    /// The column's name.
    pub column: String,
    /// What did not fit.
    pub what: String,
}

/// Whether a group key of type `dt` becomes dictionary codes.
pub fn key_type_supported(dt: &DataType) -> bool {
    match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => key_type_supported(v),
        other => matches!(
            other,
            DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::UInt8
                | DataType::UInt16
                | DataType::UInt32
                | DataType::Date32
        ),
    }
}

/// Codes of one group key.
#[derive(Debug, Default)]
struct KeyDictionary {
    strings: HashMap<String, u32>,
    ints: HashMap<i64, u32>,
    null: Option<u32>,
    /// (array, row) of each code's first row.
    firsts: Vec<(usize, usize)>,
    /// The arrays those rows are in.
    arrays: Vec<ArrayRef>,
}

impl KeyDictionary {
    fn code(&mut self, fresh: &mut bool, first: (usize, usize), value: Option<Key<'_>>) -> u32 {
        let next = self.firsts.len() as u32;
        let found = match value {
            None => self.null,
            Some(Key::Str(s)) => self.strings.get(s).copied(),
            Some(Key::Int(i)) => self.ints.get(&i).copied(),
        };
        if let Some(c) = found {
            return c;
        }
        match value {
            None => self.null = Some(next),
            Some(Key::Str(s)) => {
                self.strings.insert(s.to_owned(), next);
            }
            Some(Key::Int(i)) => {
                self.ints.insert(i, next);
            }
        }
        *fresh = true;
        self.firsts.push(first);
        next
    }
}

enum Key<'a> {
    Str(&'a str),
    Int(i64),
}

/// Bounds of a number column's non-null values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColumnStats {
    /// Smallest value (0 when there is none).
    pub min: i64,
    /// Largest value (0 when there is none).
    pub max: i64,
    /// Whether any non-null value was seen.
    pub any: bool,
}

/// One chunk of rows as the kernel binds it.
#[derive(Debug, Default)]
pub struct Chunk {
    /// Rows.
    pub rows: usize,
    /// Per slot: `rows` values, then `ceil(rows / 32)` validity words where bit `slot` of
    /// `has_valid` is set.
    pub columns: Vec<Vec<u32>>,
    /// Bit s: slot s carries validity words.
    pub has_valid: u32,
}

/// Converts a stream of batches into [`Chunk`]s (see the module docs).
#[derive(Debug)]
pub struct Converter {
    values: Vec<usize>,
    keys: Vec<usize>,
    names: Vec<String>,
    dictionaries: Vec<KeyDictionary>,
    stats: Vec<ColumnStats>,
    pending: Chunk,
    valid: Vec<Vec<u32>>,
    any_null: Vec<bool>,
}

impl Converter {
    /// A converter of source columns `values` (numbers) and `keys` (group keys) of a source
    /// whose column names are `names`.
    pub fn new(values: &[usize], keys: &[usize], names: Vec<String>) -> Self {
        let slots = values.len() + keys.len();
        Self {
            values: values.to_vec(),
            keys: keys.to_vec(),
            names,
            dictionaries: keys.iter().map(|_| KeyDictionary::default()).collect(),
            stats: vec![ColumnStats::default(); values.len()],
            pending: Chunk {
                rows: 0,
                columns: vec![Vec::new(); slots],
                has_valid: 0,
            },
            valid: vec![Vec::new(); values.len()],
            any_null: vec![false; values.len()],
        }
    }

    /// Rows waiting in the current chunk.
    pub fn pending_rows(&self) -> usize {
        self.pending.rows
    }

    /// Statistics of value slot `s` (source column `values[s]`).
    pub fn stats(&self, slot: usize) -> ColumnStats {
        self.stats[slot]
    }

    /// Codes per key so far.
    pub fn cardinalities(&self) -> Vec<u32> {
        self.dictionaries
            .iter()
            .map(|d| d.firsts.len() as u32)
            .collect()
    }

    /// Appends `batch`'s rows to the current chunk.
    pub fn push(&mut self, batch: &RecordBatch) -> Result<(), Misfit> {
        let base = self.pending.rows;
        let n = batch.num_rows();
        for (s, &c) in self.values.iter().enumerate() {
            let misfit = |what: String| Misfit {
                column: self.names[c].clone(),
                what,
            };
            let array = batch.column(c);
            let widened;
            let array: &dyn Array = match array.data_type() {
                DataType::Int32 | DataType::Int64 | DataType::Date32 | DataType::Decimal128(..) => {
                    array.as_ref()
                }
                _ => {
                    widened = cast(array, &DataType::Int64).map_err(|e| misfit(e.to_string()))?;
                    widened.as_ref()
                }
            };
            let stats = &mut self.stats[s];
            let mut fit = |i: usize, v: i128| -> Result<u32, Misfit> {
                let Ok(x) = i32::try_from(v) else {
                    return Err(misfit(format!(
                        "the value {v} (row {i} of a batch) does not fit the GPU's 32-bit columns"
                    )));
                };
                let wide = x as i64;
                if stats.any {
                    stats.min = stats.min.min(wide);
                    stats.max = stats.max.max(wide);
                } else {
                    *stats = ColumnStats {
                        min: wide,
                        max: wide,
                        any: true,
                    };
                }
                Ok(x as u32)
            };
            let out = &mut self.pending.columns[s];
            out.reserve(n);
            // Nulls hold a 0 (never read as a value: the validity bit says null).
            macro_rules! each {
                ($prim:ty) => {{
                    let a = array.as_primitive::<$prim>();
                    for i in 0..n {
                        out.push(if a.is_null(i) {
                            0
                        } else {
                            fit(i, a.value(i) as i128)?
                        });
                    }
                }};
            }
            match array.data_type() {
                DataType::Int32 => each!(Int32Type),
                DataType::Date32 => each!(Date32Type),
                DataType::Decimal128(..) => each!(Decimal128Type),
                _ => each!(Int64Type),
            }
            if array.null_count() > 0 {
                self.any_null[s] = true;
            }
            let valid = &mut self.valid[s];
            valid.resize((base + n).div_ceil(32), 0);
            for i in 0..n {
                if array.is_valid(i) {
                    let r = base + i;
                    valid[r / 32] |= 1 << (r % 32);
                }
            }
        }
        for (k, &c) in self.keys.iter().enumerate() {
            let slot = self.values.len() + k;
            let array = batch.column(c);
            let dict = &mut self.dictionaries[k];
            let index = dict.arrays.len();
            let mut fresh = false;
            let codes = &mut self.pending.columns[slot];
            let flat;
            let view: &dyn Array = match array.data_type() {
                DataType::Dictionary(_, v) => {
                    flat = cast(array, v).map_err(|e| Misfit {
                        column: self.names[c].clone(),
                        what: e.to_string(),
                    })?;
                    flat.as_ref()
                }
                _ => array.as_ref(),
            };
            macro_rules! strings {
                ($a:expr) => {
                    for (i, v) in $a.iter().enumerate() {
                        codes.push(dict.code(&mut fresh, (index, i), v.map(Key::Str)));
                    }
                };
            }
            match view.data_type() {
                DataType::Utf8 => strings!(view.as_string::<i32>()),
                DataType::LargeUtf8 => strings!(view.as_string::<i64>()),
                DataType::Utf8View => strings!(view.as_string_view()),
                _ => {
                    let ints = cast(view, &DataType::Int64).map_err(|e| Misfit {
                        column: self.names[c].clone(),
                        what: e.to_string(),
                    })?;
                    for (i, v) in ints.as_primitive::<Int64Type>().iter().enumerate() {
                        codes.push(dict.code(&mut fresh, (index, i), v.map(Key::Int)));
                    }
                }
            }
            if fresh {
                dict.arrays.push(array.clone());
            }
        }
        self.pending.rows += n;
        Ok(())
    }

    /// The current chunk (validity words appended to columns with nulls); a new one starts.
    pub fn take_chunk(&mut self) -> Chunk {
        let slots = self.pending.columns.len();
        let mut chunk = std::mem::replace(
            &mut self.pending,
            Chunk {
                rows: 0,
                columns: vec![Vec::new(); slots],
                has_valid: 0,
            },
        );
        for s in 0..self.values.len() {
            let valid = std::mem::take(&mut self.valid[s]);
            if std::mem::take(&mut self.any_null[s]) {
                chunk.columns[s].extend(valid);
                chunk.has_valid |= 1 << s;
            }
        }
        chunk
    }

    /// Key `k`'s values of the group indices `groups` (mixed radix over the keys' codes).
    pub fn key_values(&self, k: usize, groups: &[usize]) -> datafusion::common::Result<ArrayRef> {
        let cards = self.cardinalities();
        let stride: usize = cards[..k].iter().map(|&c| c as usize).product();
        let dict = &self.dictionaries[k];
        let indices: Vec<(usize, usize)> = groups
            .iter()
            .map(|g| dict.firsts[(g / stride) % cards[k] as usize])
            .collect();
        let arrays: Vec<&dyn Array> = dict.arrays.iter().map(|a| a.as_ref()).collect();
        Ok(interleave(&arrays, &indices)?)
    }
}
