//! Group keys as codes: a batch codes its keys locally ([`local_codes`], strings and integers
//! hashed, or compared while there are few; dictionary arrays through their entries), and
//! the merge maps local codes into the query's [`KeyDictionary`].

use std::hash::Hash;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::HashMap;

use super::Misfit;

/// A group key's value, owned (a batch's local codes outlive the batch's borrow).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum KeyValue {
    Null,
    Str(String),
    Int(i64),
}

/// Codes of one group key across the query.
#[derive(Debug, Default)]
pub(super) struct KeyDictionary {
    pub(super) codes: HashMap<KeyValue, u32>,
    /// (array, row) of each code's first row.
    pub(super) firsts: Vec<(usize, usize)>,
    /// The arrays those rows are in.
    pub(super) arrays: Vec<ArrayRef>,
}

impl KeyDictionary {
    pub(super) fn code(
        &mut self,
        value: &KeyValue,
        first: (usize, usize),
        fresh: &mut bool,
    ) -> u32 {
        if let Some(&c) = self.codes.get(value) {
            return c;
        }
        let next = self.firsts.len() as u32;
        self.codes.insert(value.clone(), next);
        self.firsts.push(first);
        *fresh = true;
        next
    }
}

/// One batch's group key as batch-local codes.
#[derive(Debug)]
pub(super) struct LocalKey {
    pub(super) codes: Vec<u32>,
    /// Per local code: its value and its first row in the batch.
    pub(super) values: Vec<(KeyValue, usize)>,
    pub(super) array: ArrayRef,
}

/// Distinct keys a batch looks up by linear search before it switches to hashing: TPC-H's
/// flags and most GROUP BY keys have a handful of values, for which comparing a few keys is
/// several times cheaper than hashing every row.
const SMALL_KEYS: usize = 8;

/// Batch-local codes of keys of type `K`, numbered in first-seen order into `values`.
struct LocalCodes<K> {
    /// The keys while there are at most [`SMALL_KEYS`] (then `map` is empty).
    small: Vec<(K, u32)>,
    map: HashMap<K, u32>,
    null: Option<u32>,
    values: Vec<(KeyValue, usize)>,
}

impl<K: Hash + Eq> LocalCodes<K> {
    fn new() -> Self {
        Self {
            small: Vec::with_capacity(SMALL_KEYS),
            map: HashMap::default(),
            null: None,
            values: Vec::new(),
        }
    }

    fn next(values: &mut Vec<(KeyValue, usize)>, value: KeyValue, row: usize) -> u32 {
        values.push((value, row));
        values.len() as u32 - 1
    }

    fn null(&mut self, row: usize) -> u32 {
        let values = &mut self.values;
        *self
            .null
            .get_or_insert_with(|| Self::next(values, KeyValue::Null, row))
    }

    fn code(&mut self, key: K, row: usize, owned: impl FnOnce() -> KeyValue) -> u32 {
        if self.map.is_empty() {
            if let Some((_, c)) = self.small.iter().find(|(k, _)| *k == key) {
                return *c;
            }
            let c = Self::next(&mut self.values, owned(), row);
            if self.small.len() < SMALL_KEYS {
                self.small.push((key, c));
            } else {
                self.map.extend(self.small.drain(..));
                self.map.insert(key, c);
            }
            return c;
        }
        let values = &mut self.values;
        *self
            .map
            .entry(key)
            .or_insert_with(|| Self::next(values, owned(), row))
    }
}

/// Per batch-local code: its key value and its first row in the batch.
pub(crate) type LocalValues = Vec<(KeyValue, usize)>;

/// Codes `view`'s rows (strings or integers) batch-locally.
pub(crate) fn local_codes(
    view: &dyn Array,
    column: &str,
) -> Result<(Vec<u32>, LocalValues), Misfit> {
    let n = view.len();
    if let DataType::Dictionary(..) = view.data_type() {
        return dictionary_codes(view, column);
    }
    let mut codes = Vec::with_capacity(n);
    macro_rules! strings {
        ($a:expr) => {{
            let a = $a;
            let mut local = LocalCodes::<&str>::new();
            for i in 0..n {
                codes.push(if a.is_null(i) {
                    local.null(i)
                } else {
                    let s = a.value(i);
                    local.code(s, i, || KeyValue::Str(s.to_owned()))
                });
            }
            local.values
        }};
    }
    let values = match view.data_type() {
        DataType::Utf8 => strings!(view.as_string::<i32>()),
        DataType::LargeUtf8 => strings!(view.as_string::<i64>()),
        DataType::Utf8View => {
            // A string of at most 12 bytes lives inside its 16-byte view (length, then the
            // bytes, zero-padded), so equal views are equal strings: hash the view, not the text.
            let a = view.as_string_view();
            let views = a.views();
            let mut short = LocalCodes::<u128>::new();
            let mut long = LocalCodes::<&str>::new();
            let mut which = Vec::with_capacity(n);
            for i in 0..n {
                let v = views[i];
                let null = a.is_null(i);
                let is_short = null || (v as u32) <= 12;
                which.push(is_short);
                codes.push(if null {
                    short.null(i)
                } else if is_short {
                    short.code(v, i, || KeyValue::Str(a.value(i).to_owned()))
                } else {
                    let s = a.value(i);
                    long.code(s, i, || KeyValue::Str(s.to_owned()))
                });
            }
            if long.values.is_empty() {
                short.values
            } else {
                // Long strings got codes of their own numbering: shift them past the short ones.
                let offset = short.values.len() as u32;
                for (c, &is_short) in codes.iter_mut().zip(&which) {
                    if !is_short {
                        *c += offset;
                    }
                }
                let mut values = short.values;
                values.extend(long.values);
                values
            }
        }
        _ => {
            let ints = cast(view, &DataType::Int64).map_err(|e| Misfit {
                column: column.to_string(),
                what: e.to_string(),
            })?;
            let a = ints.as_primitive::<Int64Type>();
            let mut local = LocalCodes::<i64>::new();
            for i in 0..n {
                codes.push(if a.is_null(i) {
                    local.null(i)
                } else {
                    let v = a.value(i);
                    local.code(v, i, || KeyValue::Int(v))
                });
            }
            local.values
        }
    };
    Ok((codes, values))
}

/// [`local_codes`] of a dictionary array: its entries are coded once (equal entries share a
/// code), then each row takes its entry's code through a table, so a dictionary-encoded key
/// (TPC-H's flags, read from Parquet as dictionaries) costs a lookup a row instead of a hash.
/// Codes go to entries in the order of their first row, and a row's value is its first row
/// in the batch, as for plain arrays.
pub(super) fn dictionary_codes(
    view: &dyn Array,
    column: &str,
) -> Result<(Vec<u32>, LocalValues), Misfit> {
    let dict = view.as_any_dictionary();
    let (entry_codes, entries) = local_codes(dict.values().as_ref(), column)?;
    let nulls = view.logical_nulls().filter(|n| n.null_count() > 0);
    // An all-NULL column comes as an empty dictionary, which `normalized_keys` refuses with
    // a panic; every row is then null (a valid key into nothing would be corrupt data).
    if entry_codes.is_empty() {
        if nulls.as_ref().is_none_or(|n| n.null_count() < view.len()) && !view.is_empty() {
            return Err(Misfit {
                column: column.to_string(),
                what: "a dictionary key into an empty dictionary (corrupt data)".to_string(),
            });
        }
        let values = if view.is_empty() {
            Vec::new()
        } else {
            vec![(KeyValue::Null, 0)]
        };
        return Ok((vec![0; view.len()], values));
    }
    let keys = dict.normalized_keys();
    let mut remap = vec![u32::MAX; entries.len()];
    let mut values: LocalValues = Vec::new();
    let mut null = None;
    let codes = (0..view.len())
        .map(|i| {
            if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                return *null.get_or_insert_with(|| {
                    values.push((KeyValue::Null, i));
                    values.len() as u32 - 1
                });
            }
            let e = entry_codes[keys[i]] as usize;
            if remap[e] == u32::MAX {
                remap[e] = values.len() as u32;
                values.push((entries[e].0.clone(), i));
            }
            remap[e]
        })
        .collect();
    Ok((codes, values))
}
