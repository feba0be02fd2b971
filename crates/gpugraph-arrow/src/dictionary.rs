//! String columns on the GPU: `uint32` codes there, the distinct strings on the CPU.
//!
//! [`DictionaryColumn`] holds the result. [`DictionaryEncoder`] builds it chunk by chunk
//! (pure CPU): one dictionary for a whole column, so the chunks of a multi-batch table share
//! their codes even when each Arrow batch brought its own dictionary.
//!
//! The code rule: the dictionary lists the distinct non-null strings in order of first
//! appearance — over chunks in order, and within an Arrow dictionary array over its dictionary
//! positions (used or not), within a plain string array over its rows. So every code is
//! below `dictionary.len()`, duplicate dictionary entries share one code, and when every
//! chunk carries the same duplicate-free Arrow dictionary the codes equal the Arrow keys
//! (any key type: `Int8` to `UInt64`). A null key, or a key that points at a null dictionary
//! value, makes a null row: code 0 and a 0 in the validity mask.
//! Host cost: one hash lookup per dictionary entry (dictionary arrays) or per row (strings),
//! then 4 bytes per row written.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{make_array, Array, ArrayRef, LargeStringArray, StringArray, StringViewArray};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use gpugraph_tables::GpuVector;

use crate::error::ArrowAdapterError;

/// A dictionary-encoded column: `uint32` codes on the GPU (one per row, chunked like the
/// source), the strings they index on the CPU, and an optional source-aligned validity mask.
///
/// Every valid row's code is below `dictionary.len()`; null rows hold code 0 and a 0 mask
/// entry. Holds (co-owns) the code and mask buffers.
#[derive(Clone, Debug)]
pub struct DictionaryColumn {
    /// `uint32` codes, one chunk per source chunk.
    pub codes: GpuVector,
    /// The distinct strings, indexed by code.
    pub dictionary: Vec<String>,
    /// `uint32` validity mask (1 valid, 0 null) with the codes' chunk lengths, if the column
    /// has one (see [`ValidityPolicy`](crate::ValidityPolicy)).
    pub validity: Option<GpuVector>,
}

/// Builds one dictionary over the chunks of a column and the codes of each chunk.
#[derive(Clone, Debug, Default)]
pub struct DictionaryEncoder {
    index: HashMap<String, u32>,
    values: Vec<String>,
}

/// The codes of one chunk and its row nulls (`None`: no nulls).
#[derive(Clone, Debug)]
pub struct EncodedCodes {
    /// One code per row; 0 on null rows.
    pub codes: Vec<u32>,
    /// Row nulls, `None` or with at least one null.
    pub nulls: Option<NullBuffer>,
}

impl DictionaryEncoder {
    /// An encoder with an empty dictionary.
    pub fn new() -> Self {
        Self::default()
    }

    /// The dictionary so far, indexed by code.
    pub fn dictionary(&self) -> &[String] {
        &self.values
    }

    /// Consumes the encoder, returning its dictionary.
    pub fn into_dictionary(self) -> Vec<String> {
        self.values
    }

    fn code_of(&mut self, s: &str) -> u32 {
        if let Some(&c) = self.index.get(s) {
            return c;
        }
        // A dictionary beyond u32::MAX distinct strings cannot exist in memory here.
        let c = self.values.len() as u32;
        self.index.insert(s.to_string(), c);
        self.values.push(s.to_string());
        c
    }

    /// Encodes a `Dictionary<integer, Utf8 | LargeUtf8 | Utf8View>` chunk, adding its
    /// dictionary's strings. Fails naming `column` when the array is not such a dictionary.
    pub fn encode_dictionary(
        &mut self,
        column: &str,
        array: &dyn Array,
    ) -> Result<EncodedCodes, ArrowAdapterError> {
        let remap = self.remap_dictionary(column, array)?;
        Ok(codes_of_dictionary(array, &remap))
    }

    /// The sequential half of [`Self::encode_dictionary`]: adds the chunk's dictionary strings
    /// (in dictionary order) and returns the code of each dictionary position (`None` for a
    /// null dictionary value). Rows are coded by [`codes_of_dictionary`], which needs no
    /// encoder, so the chunks of a column can be coded in parallel once every remap is known.
    pub(crate) fn remap_dictionary(
        &mut self,
        column: &str,
        array: &dyn Array,
    ) -> Result<Vec<Option<u32>>, ArrowAdapterError> {
        let not_strings = || {
            ArrowAdapterError::UnsupportedType {
            column: column.to_string(),
            data_type: array.data_type().clone(),
            hint: "expected a dictionary of strings (Dictionary<integer, Utf8 | LargeUtf8 | Utf8View>)"
                .into(),
        }
        };
        let dict = array.as_any_dictionary_opt().ok_or_else(not_strings)?;
        let values = Strings::of(dict.values().as_ref()).ok_or_else(not_strings)?;
        check_keys(column, dict.keys(), values.len())?;
        Ok((0..values.len())
            .map(|i| values.get(i).map(|s| self.code_of(s)))
            .collect())
    }

    /// Encodes a `Utf8`, `LargeUtf8` or `Utf8View` chunk row by row, adding new strings in
    /// order of first appearance. Fails naming `column` when the array holds no strings.
    pub fn encode_strings(
        &mut self,
        column: &str,
        array: &dyn Array,
    ) -> Result<EncodedCodes, ArrowAdapterError> {
        let strings = Strings::of(array).ok_or_else(|| ArrowAdapterError::UnsupportedType {
            column: column.to_string(),
            data_type: array.data_type().clone(),
            hint: "expected a string array (Utf8, LargeUtf8 or Utf8View)".into(),
        })?;
        let codes = (0..array.len())
            .map(|i| strings.get(i).map_or(0, |s| self.code_of(s)))
            .collect();
        Ok(EncodedCodes {
            codes,
            nulls: array.nulls().filter(|n| n.null_count() > 0).cloned(),
        })
    }
}

/// Refuses a valid key outside `0..len`: Arrow's `normalized_keys` would clamp it into the
/// dictionary and code a corrupt row as some other string without a word.
fn check_keys(column: &str, keys: &dyn Array, len: usize) -> Result<(), ArrowAdapterError> {
    use arrow_array::types::*;
    macro_rules! first_bad {
        ($t:ty) => {{
            let k = keys.as_primitive::<$t>();
            k.values()
                .iter()
                .enumerate()
                .find(|&(i, &v)| k.is_valid(i) && !(0..len as i128).contains(&(v as i128)))
                .map(|(i, &v)| (i, v as i128))
        }};
    }
    let bad = match keys.data_type() {
        DataType::Int8 => first_bad!(Int8Type),
        DataType::Int16 => first_bad!(Int16Type),
        DataType::Int32 => first_bad!(Int32Type),
        DataType::Int64 => first_bad!(Int64Type),
        DataType::UInt8 => first_bad!(UInt8Type),
        DataType::UInt16 => first_bad!(UInt16Type),
        DataType::UInt32 => first_bad!(UInt32Type),
        DataType::UInt64 => first_bad!(UInt64Type),
        _ => None,
    };
    match bad {
        None => Ok(()),
        Some((row, key)) => Err(ArrowAdapterError::CorruptDictionary {
            column: column.to_string(),
            row,
            key,
            len,
        }),
    }
}

/// Codes the rows of a dictionary chunk whose dictionary positions map to `remap` (from
/// [`DictionaryEncoder::remap_dictionary`] on the same array).
pub(crate) fn codes_of_dictionary(array: &dyn Array, remap: &[Option<u32>]) -> EncodedCodes {
    let rows = array.len();
    let Some(dict) = array.as_any_dictionary_opt() else {
        // remap_dictionary already refused other arrays.
        return EncodedCodes {
            codes: vec![0; rows],
            nulls: nulls_of(vec![false; rows]),
        };
    };
    let key_nulls = dict.keys().nulls();
    // `normalized_keys` clamps into the dictionary and needs a non-empty one; with an
    // empty dictionary every valid array has only null keys.
    let keys = if remap.is_empty() {
        vec![0; rows]
    } else {
        dict.normalized_keys()
    };
    let mut codes = Vec::with_capacity(rows);
    let mut valid = Vec::with_capacity(rows);
    for (i, &k) in keys.iter().enumerate() {
        let code = key_nulls
            .is_none_or(|n| n.is_valid(i))
            .then(|| remap.get(k).copied().flatten())
            .flatten();
        codes.push(code.unwrap_or(0));
        valid.push(code.is_some());
    }
    EncodedCodes {
        codes,
        nulls: nulls_of(valid),
    }
}

/// A dictionary chunk whose rows code on demand: [`CodeEncoder::fill`] writes the codes of
/// any range of rows (into staging, so the codes never exist whole on the host). Only for
/// chunks whose dictionary holds no null value, so the row nulls are the key nulls.
pub(crate) struct CodeEncoder {
    keys: ArrayRef,
    remap: Vec<u32>,
    nulls: Option<NullBuffer>,
}

impl CodeEncoder {
    /// `None` (code it with [`codes_of_dictionary`]) when `array` is no dictionary, a
    /// dictionary value is null, or the dictionary is empty.
    pub(crate) fn new(array: &dyn Array, remap: &[Option<u32>]) -> Option<Self> {
        let dict = array.as_any_dictionary_opt()?;
        let remap = remap.iter().copied().collect::<Option<Vec<u32>>>()?;
        if remap.is_empty() {
            return None;
        }
        let keys = make_array(dict.keys().to_data());
        let nulls = keys.nulls().filter(|n| n.null_count() > 0).cloned();
        Some(Self { keys, remap, nulls })
    }

    /// Rows in the chunk.
    pub(crate) fn rows(&self) -> usize {
        self.keys.len()
    }

    /// Row nulls; `None` when the chunk has none.
    pub(crate) fn nulls(&self) -> Option<&NullBuffer> {
        self.nulls.as_ref()
    }

    /// Writes the codes of rows `first ..` (as many as `out` holds: 4 bytes each, 4-byte
    /// aligned); null rows code 0.
    pub(crate) fn fill(&self, first: usize, out: &mut [u8]) {
        use arrow_array::types::*;
        let out: &mut [u32] = bytemuck::cast_slice_mut(out);
        let (keys, remap, nulls) = (self.keys.as_ref(), &self.remap, self.nulls.as_ref());
        match keys.data_type() {
            DataType::Int8 => codes_into::<Int8Type>(keys, remap, nulls, first, out),
            DataType::Int16 => codes_into::<Int16Type>(keys, remap, nulls, first, out),
            DataType::Int32 => codes_into::<Int32Type>(keys, remap, nulls, first, out),
            DataType::Int64 => codes_into::<Int64Type>(keys, remap, nulls, first, out),
            DataType::UInt8 => codes_into::<UInt8Type>(keys, remap, nulls, first, out),
            DataType::UInt16 => codes_into::<UInt16Type>(keys, remap, nulls, first, out),
            DataType::UInt32 => codes_into::<UInt32Type>(keys, remap, nulls, first, out),
            // Arrow dictionary keys are integers; UInt64 is the last kind.
            _ => codes_into::<UInt64Type>(keys, remap, nulls, first, out),
        }
    }
}

/// The codes of rows `first .. first + out.len()` of typed `keys` (a valid key is in range of
/// its dictionary, as Arrow validates; one that is not codes 0 like a null row).
fn codes_into<K: arrow_array::ArrowPrimitiveType>(
    keys: &dyn Array,
    remap: &[u32],
    nulls: Option<&NullBuffer>,
    first: usize,
    out: &mut [u32],
) {
    use arrow_buffer::ArrowNativeType;
    let keys = &keys.as_primitive::<K>().values()[first..first + out.len()];
    for (k, (o, key)) in out.iter_mut().zip(keys).enumerate() {
        *o = if nulls.is_none_or(|n| n.is_valid(first + k)) {
            key.to_usize()
                .and_then(|i| remap.get(i).copied())
                .unwrap_or(0)
        } else {
            0
        };
    }
}

fn nulls_of(valid: Vec<bool>) -> Option<NullBuffer> {
    if valid.iter().all(|&v| v) {
        None
    } else {
        Some(NullBuffer::from(valid))
    }
}

/// The string arrays the dictionary adapters read.
enum Strings<'a> {
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
}

impl<'a> Strings<'a> {
    fn of(array: &'a dyn Array) -> Option<Self> {
        match array.data_type() {
            DataType::Utf8 => Some(Strings::Utf8(array.as_string::<i32>())),
            DataType::LargeUtf8 => Some(Strings::Large(array.as_string::<i64>())),
            DataType::Utf8View => Some(Strings::View(array.as_string_view())),
            _ => None,
        }
    }

    fn len(&self) -> usize {
        match self {
            Strings::Utf8(a) => a.len(),
            Strings::Large(a) => a.len(),
            Strings::View(a) => a.len(),
        }
    }

    /// The string at `i`, `None` when null.
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Strings::Utf8(a) => a.is_valid(i).then(|| a.value(i)),
            Strings::Large(a) => a.is_valid(i).then(|| a.value(i)),
            Strings::View(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::{Int8Type, UInt32Type};
    use arrow_array::{DictionaryArray, Int8Array, UInt32Array};
    use std::sync::Arc;

    #[test]
    fn distinct_dictionary_keeps_the_keys() {
        let keys = Int8Array::from(vec![Some(2), None, Some(0), Some(2)]);
        let values = Arc::new(StringArray::from(vec!["a", "b", "c"]));
        let d = DictionaryArray::<Int8Type>::try_new(keys, values).unwrap();
        let mut e = DictionaryEncoder::new();
        let out = e.encode_dictionary("d", &d).unwrap();
        assert_eq!(out.codes, vec![2, 0, 0, 2]);
        assert_eq!(out.nulls.unwrap().null_count(), 1);
        assert_eq!(e.dictionary(), ["a", "b", "c"]);
    }

    #[test]
    fn a_key_past_the_dictionary_names_the_column_and_row() {
        // As a corrupt file decodes: Arrow's checked constructor would refuse these keys.
        let keys = Int8Array::from(vec![Some(1), None, Some(5), Some(-1)]);
        let values = Arc::new(StringArray::from(vec!["a", "b", "c"]));
        // SAFETY: the keys are only read through `check_keys` and never index `values`.
        let d = unsafe { DictionaryArray::<Int8Type>::new_unchecked(keys, values) };
        let err = DictionaryEncoder::new()
            .encode_dictionary("carrier", &d)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "column 'carrier' row 2: dictionary index 5 is past its 3-entry dictionary (the data is corrupt)"
        );
    }

    #[test]
    fn batches_with_different_dictionaries_share_codes() {
        let mut e = DictionaryEncoder::new();
        let d1 = DictionaryArray::<UInt32Type>::try_new(
            UInt32Array::from(vec![0, 1]),
            Arc::new(StringArray::from(vec!["x", "y"])),
        )
        .unwrap();
        // Duplicates and a null value in the dictionary; keys point at both.
        let d2 = DictionaryArray::<UInt32Type>::try_new(
            UInt32Array::from(vec![0, 1, 2, 3]),
            Arc::new(StringArray::from(vec![
                Some("z"),
                Some("x"),
                None,
                Some("z"),
            ])),
        )
        .unwrap();
        assert_eq!(e.encode_dictionary("d", &d1).unwrap().codes, vec![0, 1]);
        let out = e.encode_dictionary("d", &d2).unwrap();
        assert_eq!(out.codes, vec![2, 0, 0, 2]);
        let nulls = out.nulls.unwrap();
        assert!(nulls.is_null(2) && nulls.null_count() == 1);
        assert_eq!(e.into_dictionary(), vec!["x", "y", "z"]);
    }

    #[test]
    fn empty_dictionary_with_null_keys() {
        let d = DictionaryArray::<Int8Type>::try_new(
            Int8Array::from(vec![None, None]),
            Arc::new(StringArray::from(Vec::<&str>::new())),
        )
        .unwrap();
        let out = DictionaryEncoder::new().encode_dictionary("d", &d).unwrap();
        assert_eq!(out.codes, vec![0, 0]);
        assert_eq!(out.nulls.unwrap().null_count(), 2);
    }

    #[test]
    fn strings_encode_in_first_appearance_order() {
        let mut e = DictionaryEncoder::new();
        let a = StringArray::from(vec![Some("b"), None, Some("a"), Some("b")]);
        let out = e.encode_strings("s", &a).unwrap();
        assert_eq!(out.codes, vec![0, 0, 1, 0]);
        assert!(out.nulls.unwrap().is_null(1));
        let v = StringViewArray::from(vec!["c", "a"]);
        assert_eq!(e.encode_strings("s", &v).unwrap().codes, vec![2, 1]);
        assert_eq!(e.dictionary(), ["b", "a", "c"]);
        assert!(matches!(
            e.encode_strings("s", &UInt32Array::from(vec![1])),
            Err(ArrowAdapterError::UnsupportedType { .. })
        ));
    }
}
