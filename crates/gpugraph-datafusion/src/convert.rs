//! Arrow batches → the kernel's 32-bit column words, in two steps: [`BatchLayout::convert`]
//! turns one batch into words on its own (the exec runs it on DataFusion's runtime threads,
//! many batches at once), and [`Converter::append`] merges converted batches into chunks in
//! arrival order.
//!
//! Number columns (integers, Date32, Decimal128 unscaled values) travel as i32: a value that
//! does not fit is a [`Misfit`], and the caller runs the CPU plan instead. Each column's
//! minimum and maximum are kept for the bounds check. Group keys become dictionary codes in
//! first-seen order (a NULL key is a code of its own, as SQL groups NULLs together): a batch
//! codes its keys locally, and the merge maps those codes into the query's dictionary, so
//! the per-row hashing runs in parallel and the merge touches one entry per distinct key.
//! The first row of each code is kept so the key's values come back in the key's own Arrow
//! type.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveArray};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::compute::{cast, interleave};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Decimal32Type, Decimal64Type, Int32Type, Int64Type,
};
use datafusion::arrow::record_batch::RecordBatch;

pub(crate) use keys::{local_codes, KeyValue, LocalValues};
use keys::{KeyDictionary, LocalKey};

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
        other => is_integer(other) || *other == DataType::Date32,
    }
}

/// The integer types whose values the GPU takes as 64-bit integers (UInt64 can exceed i64).
pub fn is_integer(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
    )
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

impl ColumnStats {
    /// The bounds of both sets of values.
    pub fn merge(self, other: ColumnStats) -> ColumnStats {
        match (self.any, other.any) {
            (_, false) => self,
            (false, true) => other,
            (true, true) => ColumnStats {
                min: self.min.min(other.min),
                max: self.max.max(other.max),
                any: true,
            },
        }
    }
}

/// One value column of one batch as the kernel's words.
#[derive(Debug)]
struct ValueColumn {
    words: Vec<u32>,
    /// Validity words (bit `i % 32` of word `i / 32`: row `i`), when the column has nulls.
    valid: Option<Vec<u32>>,
    stats: ColumnStats,
}

/// One batch converted on its own ([`BatchLayout::convert`]), waiting for
/// [`Converter::append`].
#[derive(Debug)]
pub struct ConvertedBatch {
    rows: usize,
    values: Vec<ValueColumn>,
    keys: Vec<LocalKey>,
}

impl ConvertedBatch {
    /// The batch's rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
}

/// Which source columns a conversion reads: shared by the converter and the tasks that convert
/// batches in parallel.
#[derive(Debug)]
pub struct BatchLayout {
    values: Vec<usize>,
    keys: Vec<usize>,
    names: Vec<String>,
}

impl BatchLayout {
    /// Converts `batch` alone: value words, validity, bounds and batch-local key codes.
    pub fn convert(&self, batch: &RecordBatch) -> Result<ConvertedBatch, Misfit> {
        self.convert_columns(batch.columns(), batch.num_rows())
    }

    /// [`Self::convert`] of a batch given as its `rows`-long columns, in source order.
    pub fn convert_columns(
        &self,
        columns: &[ArrayRef],
        rows: usize,
    ) -> Result<ConvertedBatch, Misfit> {
        let values = self
            .values
            .iter()
            .map(|&c| value_column(&columns[c], &self.names[c]))
            .collect::<Result<Vec<_>, _>>()?;
        let keys = self
            .keys
            .iter()
            .map(|&c| {
                let array = &columns[c];
                let (codes, values) = local_codes(array.as_ref(), &self.names[c])?;
                Ok(LocalKey {
                    codes,
                    values,
                    array: Arc::clone(array),
                })
            })
            .collect::<Result<Vec<_>, Misfit>>()?;
        Ok(ConvertedBatch { rows, values, keys })
    }
}

/// A number column's words (i32, nulls as 0), validity and bounds.
fn value_column(array: &ArrayRef, column: &str) -> Result<ValueColumn, Misfit> {
    let widened;
    let array: &dyn Array = match array.data_type() {
        DataType::Int32
        | DataType::Int64
        | DataType::Date32
        | DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..) => array.as_ref(),
        _ => {
            widened = cast(array, &DataType::Int64).map_err(|e| Misfit {
                column: column.to_string(),
                what: e.to_string(),
            })?;
            widened.as_ref()
        }
    };
    let (words, stats) = match array.data_type() {
        DataType::Int32 => narrow(array.as_primitive::<Int32Type>(), column)?,
        DataType::Date32 => narrow(array.as_primitive::<Date32Type>(), column)?,
        DataType::Decimal128(..) => narrow(array.as_primitive::<Decimal128Type>(), column)?,
        DataType::Decimal64(..) => narrow(array.as_primitive::<Decimal64Type>(), column)?,
        DataType::Decimal32(..) => narrow(array.as_primitive::<Decimal32Type>(), column)?,
        _ => narrow(array.as_primitive::<Int64Type>(), column)?,
    };
    let valid = array
        .nulls()
        .filter(|n| n.null_count() > 0)
        .map(|n| validity_words(n.inner()));
    Ok(ValueColumn {
        words,
        valid,
        stats,
    })
}

/// `a`'s values as i32 words (nulls as 0) and their bounds, or the first value past i32.
///
/// Three simple passes (narrow with a fits flag, zero the nulls, min/max of the words) rather
/// than one with a closure over i128 bounds: each is a loop the compiler vectorizes, and this
/// runs over every value of every batch.
fn narrow<T>(a: &PrimitiveArray<T>, column: &str) -> Result<(Vec<u32>, ColumnStats), Misfit>
where
    T: ArrowPrimitiveType,
    T::Native: Into<i128> + Narrow,
{
    let (mut words, fits) = T::Native::words(a.values());
    let nulls = a.nulls().filter(|n| n.null_count() > 0);
    if let Some(nulls) = nulls {
        for (w, ok) in words.iter_mut().zip(nulls.iter()) {
            if !ok {
                *w = 0;
            }
        }
    }
    // A null slot may hold any value: only a valid row's value is a misfit.
    if let Some((i, v)) = (!fits)
        .then(|| {
            (0..a.len())
                .filter(|&i| a.is_valid(i))
                .map(|i| (i, a.value(i).into()))
                .find(|&(_, v): &(usize, i128)| i32::try_from(v).is_err())
        })
        .flatten()
    {
        return Err(Misfit {
            column: column.to_string(),
            what: format!(
                "the value {v} (row {i} of a batch) does not fit the GPU's 32-bit columns"
            ),
        });
    }
    let bounds = match nulls {
        None => (!words.is_empty()).then(|| {
            let lo = words.iter().map(|&w| w as i32).fold(i32::MAX, i32::min);
            let hi = words.iter().map(|&w| w as i32).fold(i32::MIN, i32::max);
            (lo, hi)
        }),
        Some(nulls) => words
            .iter()
            .zip(nulls.iter())
            .filter(|(_, ok)| *ok)
            .map(|(&w, _)| w as i32)
            .fold(None, |b: Option<(i32, i32)>, w| {
                Some(b.map_or((w, w), |(lo, hi)| (lo.min(w), hi.max(w))))
            }),
    };
    let stats = bounds.map_or(ColumnStats::default(), |(lo, hi)| ColumnStats {
        min: lo as i64,
        max: hi as i64,
        any: true,
    });
    Ok((words, stats))
}

/// Native values that narrow to i32 words.
trait Narrow: Sized {
    /// `values` as i32 words (each value's low 32 bits) and whether every value fits i32.
    fn words(values: &[Self]) -> (Vec<u32>, bool);
}

impl Narrow for i32 {
    fn words(values: &[i32]) -> (Vec<u32>, bool) {
        (bytemuck::cast_slice(values).to_vec(), true)
    }
}

impl Narrow for i64 {
    fn words(values: &[i64]) -> (Vec<u32>, bool) {
        // An OR of the bits that differ from the sign extension of the low word: one
        // vectorizable loop with no branch and no 128-bit arithmetic.
        let mut wide = 0u64;
        let words = values
            .iter()
            .map(|&v| {
                let w = v as i32;
                wide |= (w as i64 ^ v) as u64;
                w as u32
            })
            .collect();
        (words, wide == 0)
    }
}

impl Narrow for i128 {
    fn words(values: &[i128]) -> (Vec<u32>, bool) {
        // Decimal128 (the common SQL decimal): the value fits when both 64-bit halves are
        // the sign extension of its low word, compared as u64 halves rather than as i128.
        let mut wide = 0u64;
        let words = values
            .iter()
            .map(|&v| {
                let lo = v as u64;
                let hi = (v >> 64) as u64;
                let w = lo as i32;
                let extended = w as i64 as u64;
                wide |= (extended ^ lo) | (hi ^ ((w >> 31) as i64 as u64));
                w as u32
            })
            .collect();
        (words, wide == 0)
    }
}

/// `bits` as little-endian u32 words, bits past its length zero.
fn validity_words(bits: &BooleanBuffer) -> Vec<u32> {
    let n = bits.len();
    let buffer = bits.sliced();
    let bytes = buffer.as_slice();
    let mut words: Vec<u32> = (0..n.div_ceil(32))
        .map(|w| {
            let mut b = [0u8; 4];
            for (k, byte) in b.iter_mut().enumerate() {
                *byte = bytes.get(4 * w + k).copied().unwrap_or(0);
            }
            u32::from_le_bytes(b)
        })
        .collect();
    if !n.is_multiple_of(32) {
        if let Some(last) = words.last_mut() {
            *last &= (1u32 << (n % 32)) - 1;
        }
    }
    words
}

/// ORs the `n` validity bits `src` (all set when `None`) into `dst` from bit `base` on.
fn append_bits(dst: &mut Vec<u32>, base: usize, n: usize, src: Option<&[u32]>) {
    let total = (base + n).div_ceil(32);
    dst.resize(total, 0);
    let Some(src) = src else {
        // All valid: set bits base..base + n in place (no mask to build for the common case).
        for (w, word) in dst.iter_mut().enumerate().skip(base / 32) {
            let lo = (w * 32).max(base) - w * 32;
            let hi = ((w + 1) * 32).min(base + n) - w * 32;
            if hi > lo {
                *word |= ((u64::MAX >> (64 - (hi - lo))) << lo) as u32;
            }
        }
        return;
    };
    let (w0, shift) = (base / 32, base % 32);
    for (j, &w) in src.iter().enumerate() {
        dst[w0 + j] |= w << shift;
        if shift != 0 && w0 + j + 1 < total {
            dst[w0 + j + 1] |= w >> (32 - shift);
        }
    }
}

/// One part of a chunk's column: words as they go to the GPU, or a batch's local key codes
/// with the map into the query's codes, applied while the upload fills its staging buffers
/// (on the upload's threads, so the merge never walks a key column's rows).
#[derive(Clone, Debug)]
pub enum Part {
    /// Words as they are.
    Words(Vec<u32>),
    /// `map[code]` for each code.
    Codes {
        /// Batch-local codes.
        codes: Vec<u32>,
        /// Local code → the query's code.
        map: Vec<u32>,
    },
}

impl Part {
    /// Words in the part.
    pub fn len(&self) -> usize {
        match self {
            Part::Words(w) => w.len(),
            Part::Codes { codes, .. } => codes.len(),
        }
    }

    /// Whether the part has no words.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Words `at ..` of the part into `out` (mapped codes for [`Part::Codes`]).
    pub fn write(&self, at: usize, out: &mut [u32]) {
        match self {
            Part::Words(w) => out.copy_from_slice(&w[at..at + out.len()]),
            Part::Codes { codes, map } => {
                let n = out.len();
                for (o, &c) in out.iter_mut().zip(&codes[at..at + n]) {
                    *o = map[c as usize];
                }
            }
        }
    }
}

/// One chunk of rows as the kernel binds it.
#[derive(Debug, Default)]
pub struct Chunk {
    /// Rows.
    pub rows: usize,
    /// Per slot, its words in consecutive parts (one per merged batch, so merging never copies
    /// a batch's words; the upload packs the parts back to back): `rows` values in all, then
    /// `ceil(rows / 32)` validity words where bit `slot` of `has_valid` is set.
    pub columns: Vec<Vec<Part>>,
    /// Bit s: slot s carries validity words.
    pub has_valid: u32,
    /// Per slot, the smallest and largest word of its `rows` values as i32 (null rows' zeros
    /// included), when known: the upload packs a slot whose values span less than 2^16 into
    /// 8- or 16-bit offsets from the minimum. `None` (or a missing entry): 32-bit words.
    pub bounds: Vec<Option<(i32, i32)>>,
}

/// Widens `bounds` to hold `lo ..= hi`.
fn widen_bounds(bounds: &mut Option<(i32, i32)>, lo: i32, hi: i32) {
    *bounds = Some(bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
}

impl Chunk {
    /// Slot `s`'s words, concatenated (codes mapped).
    pub fn words(&self, s: usize) -> Vec<u32> {
        let mut out = Vec::new();
        for part in &self.columns[s] {
            let start = out.len();
            out.resize(start + part.len(), 0);
            part.write(0, &mut out[start..]);
        }
        out
    }
}

/// Converts a stream of batches into [`Chunk`]s (see the module docs).
#[derive(Debug)]
pub struct Converter {
    layout: Arc<BatchLayout>,
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
            layout: Arc::new(BatchLayout {
                values: values.to_vec(),
                keys: keys.to_vec(),
                names,
            }),
            dictionaries: keys.iter().map(|_| KeyDictionary::default()).collect(),
            stats: vec![ColumnStats::default(); values.len()],
            pending: Chunk {
                rows: 0,
                columns: vec![Vec::new(); slots],
                has_valid: 0,
                bounds: vec![None; slots],
            },
            valid: vec![Vec::new(); values.len()],
            any_null: vec![false; values.len()],
        }
    }

    /// The columns this converter reads, for converting batches elsewhere (other threads).
    pub fn layout(&self) -> Arc<BatchLayout> {
        Arc::clone(&self.layout)
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

    /// Appends `batch`'s rows to the current chunk (converts it here; see [`Self::append`]).
    pub fn push(&mut self, batch: &RecordBatch) -> Result<(), Misfit> {
        let converted = self.layout.convert(batch)?;
        self.append(converted);
        Ok(())
    }

    /// Appends a batch converted by [`BatchLayout::convert`] (of this converter's layout) to
    /// the current chunk, mapping its local key codes into the query's dictionaries.
    pub fn append(&mut self, batch: ConvertedBatch) {
        let base = self.pending.rows;
        let n = batch.rows;
        for (s, column) in batch.values.into_iter().enumerate() {
            self.stats[s] = self.stats[s].merge(column.stats);
            if n > 0 {
                let bounds = &mut self.pending.bounds[s];
                if column.stats.any {
                    widen_bounds(bounds, column.stats.min as i32, column.stats.max as i32);
                }
                if column.valid.is_some() || !column.stats.any {
                    // Null rows hold 0.
                    widen_bounds(bounds, 0, 0);
                }
                self.pending.columns[s].push(Part::Words(column.words));
            }
            self.any_null[s] |= column.valid.is_some();
            append_bits(&mut self.valid[s], base, n, column.valid.as_deref());
        }
        let values = self.layout.values.len();
        for (k, local) in batch.keys.into_iter().enumerate() {
            let global = self.code_local(k, &local.values, local.array);
            if n > 0 {
                let top = global.iter().copied().max().unwrap_or(0);
                widen_bounds(&mut self.pending.bounds[values + k], 0, top as i32);
                self.pending.columns[values + k].push(Part::Codes {
                    codes: local.codes,
                    map: global,
                });
            }
        }
        self.pending.rows += n;
    }

    /// The query's code of each batch-local code of key `k` (`values`: per local code, its
    /// value and first row in `array`), coding new values.
    fn code_local(
        &mut self,
        k: usize,
        values: &[(keys::KeyValue, usize)],
        array: ArrayRef,
    ) -> Vec<u32> {
        let dict = &mut self.dictionaries[k];
        let index = dict.arrays.len();
        let mut fresh = false;
        // In order of first row, so the query's codes stay in first-seen row order.
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_unstable_by_key(|&i| values[i].1);
        let mut global = vec![0u32; values.len()];
        for i in order {
            let (value, row) = &values[i];
            global[i] = dict.code(value, (index, *row), &mut fresh);
        }
        if fresh {
            dict.arrays.push(array);
        }
        global
    }

    /// The query's code of every entry of `dictionary`, the values of key `k` a page scan
    /// found (`pages.rs`), coding new ones.
    pub fn code_entries(&mut self, k: usize, dictionary: ArrayRef) -> Result<Vec<u32>, Misfit> {
        let name = &self.layout.names[self.layout.keys[k]];
        let (codes, values) = local_codes(dictionary.as_ref(), name)?;
        let global = self.code_local(k, &values, dictionary);
        Ok(codes.iter().map(|&c| global[c as usize]).collect())
    }

    /// Widens value slot `s`'s bounds by `stats` (values a page scan uploaded itself).
    pub fn note_stats(&mut self, s: usize, stats: ColumnStats) {
        self.stats[s] = self.stats[s].merge(stats);
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
                bounds: vec![None; slots],
            },
        );
        for s in 0..self.layout.values.len() {
            let valid = std::mem::take(&mut self.valid[s]);
            if std::mem::take(&mut self.any_null[s]) {
                chunk.columns[s].push(Part::Words(valid));
                chunk.has_valid |= 1 << s;
            }
        }
        chunk
    }

    /// Key `k`'s code of the string `value` (`None`: of SQL NULL), if a row had it.
    pub fn code_of(&self, k: usize, value: Option<&str>) -> Option<u32> {
        let key = match value {
            Some(v) => keys::KeyValue::Str(v.to_owned()),
            None => keys::KeyValue::Null,
        };
        self.dictionaries.get(k)?.codes.get(&key).copied()
    }

    /// Key `k`'s distinct values in code order (code `c` at index `c`; NULL's code, where a
    /// row was NULL, a null), in the arrays' own encoding; `None` before any row.
    pub fn dictionary(&self, k: usize) -> datafusion::common::Result<Option<ArrayRef>> {
        let Some(dict) = self.dictionaries.get(k) else {
            return Ok(None);
        };
        if dict.firsts.is_empty() {
            return Ok(None);
        }
        let arrays: Vec<&dyn Array> = dict.arrays.iter().map(|a| a.as_ref()).collect();
        Ok(Some(interleave(&arrays, &dict.firsts)?))
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

mod keys;

#[cfg(test)]
mod tests;
