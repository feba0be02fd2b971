//! Payload columns of `gpugraph join` as u32 words for the GPU gather, and back.
//!
//! * Fixed-width values of 4, 8 or 16 bytes (integers, floats, dates, times, timestamps,
//!   durations, `Decimal128`): their value bytes verbatim, 1, 2 or 4 words per row, rebuilt
//!   bit-exactly with the column's own type (gpugraph-arrow's upload would narrow 64-bit
//!   values or round `Float64`, which a join must not).
//! * Narrow values (`Boolean`, `Int8`, `Int16`, `UInt8`, `UInt16`, `Float16`): widened
//!   exactly to one 32-bit word and cast back.
//! * Strings and string dictionaries: `uint32` codes from gpugraph-arrow's
//!   [`DictionaryEncoder`], the strings kept on the CPU; rebuilt as the column's type.
//!
//! Nulls travel as one validity word per row (1 valid, 0 null). Anything else is refused by
//! name (column and type).

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::types::UInt32Type;
use arrow_array::{make_array, Array, ArrayRef, DictionaryArray, StringArray, UInt32Array};
use arrow_buffer::{Buffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::DataType;
use gpugraph_arrow::DictionaryEncoder;

/// How a column's words decode.
#[derive(Clone, Debug)]
pub enum Kind {
    /// Value bytes verbatim, of the column's type.
    Raw,
    /// Widened to the 32-bit type `wide`, cast back to the column's type.
    Narrow {
        /// `Int32`, `UInt32` or `Float32`.
        wide: DataType,
    },
    /// Codes into `dictionary`.
    Text {
        /// The distinct strings, by code.
        dictionary: Arc<Vec<String>>,
    },
}

/// One payload column as words.
#[derive(Debug)]
pub struct Encoded {
    /// Output name.
    pub name: String,
    /// The column's Arrow type.
    pub data_type: DataType,
    /// Words per row (1, 2 or 4).
    pub width: u32,
    /// `width` words per row, rows of all chunks in order.
    pub words: Vec<u32>,
    /// One word per row when the column has nulls.
    pub valid: Option<Vec<u32>>,
    /// How the words decode.
    pub kind: Kind,
}

fn words_of_bytes(bytes: &[u8], out: &mut Vec<u32>) {
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
    );
}

fn narrow_type(t: &DataType) -> Option<DataType> {
    use DataType::*;
    match t {
        Boolean | UInt8 | UInt16 => Some(UInt32),
        Int8 | Int16 => Some(Int32),
        Float16 => Some(Float32),
        _ => None,
    }
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// Encodes column `name` (`side` names its table in errors) of type `data_type` from its
/// record-batch `chunks`.
pub fn encode(
    side: &str,
    name: &str,
    data_type: &DataType,
    chunks: &[ArrayRef],
) -> Result<Encoded> {
    let rows: usize = chunks.iter().map(|c| c.len()).sum();
    let nulls: usize = chunks.iter().map(|c| c.null_count()).sum();
    let valid = (nulls > 0).then(|| {
        let mut v = Vec::with_capacity(rows);
        for c in chunks {
            v.extend((0..c.len()).map(|i| u32::from(c.is_valid(i))));
        }
        v
    });
    let text =
        is_string(data_type) || matches!(data_type, DataType::Dictionary(_, v) if is_string(v));
    if text {
        let mut encoder = DictionaryEncoder::new();
        let mut words = Vec::with_capacity(rows);
        for c in chunks {
            let coded = if is_string(data_type) {
                encoder.encode_strings(name, c.as_ref())
            } else {
                encoder.encode_dictionary(name, c.as_ref())
            }
            .with_context(|| format!("{side} column '{name}'"))?;
            words.extend(coded.codes);
        }
        return Ok(Encoded {
            name: name.to_string(),
            data_type: data_type.clone(),
            width: 1,
            words,
            valid,
            kind: Kind::Text {
                dictionary: Arc::new(encoder.into_dictionary()),
            },
        });
    }
    if let Some(wide) = narrow_type(data_type) {
        let mut words = Vec::with_capacity(rows);
        for c in chunks {
            let w = arrow_cast::cast(c, &wide)
                .with_context(|| format!("{side} column '{name}': widening {data_type}"))?;
            let d = w.to_data();
            words_of_bytes(
                &d.buffers()[0].as_slice()[d.offset() * 4..(d.offset() + d.len()) * 4],
                &mut words,
            );
        }
        return Ok(Encoded {
            name: name.to_string(),
            data_type: data_type.clone(),
            width: 1,
            words,
            valid,
            kind: Kind::Narrow { wide },
        });
    }
    let width = match data_type.primitive_width() {
        Some(w @ (4 | 8 | 16)) if !matches!(data_type, DataType::Dictionary(..)) => w,
        _ => bail!(
            "{side} column '{name}' has type {data_type}, which join cannot carry (fixed-width numbers, dates, times, Decimal128, booleans and strings only)"
        ),
    };
    let mut words = Vec::with_capacity(rows * width / 4);
    for c in chunks {
        let d = c.to_data();
        let bytes = &d.buffers()[0].as_slice()[d.offset() * width..(d.offset() + d.len()) * width];
        words_of_bytes(bytes, &mut words);
    }
    Ok(Encoded {
        name: name.to_string(),
        data_type: data_type.clone(),
        width: (width / 4) as u32,
        words,
        valid,
        kind: Kind::Raw,
    })
}

/// Rebuilds `rows` rows of `e`'s column from gathered `words` (`width` per row) and validity
/// flags (`None`: no nulls).
pub fn decode(
    e: &Encoded,
    words: Vec<u32>,
    valid: Option<Vec<u32>>,
    rows: usize,
) -> Result<ArrayRef> {
    let nulls = valid.map(|v| NullBuffer::from(v.iter().map(|&f| f != 0).collect::<Vec<bool>>()));
    let build = |data_type: &DataType, words: Vec<u32>| -> Result<ArrayRef> {
        let data = ArrayData::builder(data_type.clone())
            .len(rows)
            .add_buffer(Buffer::from_vec(words))
            .nulls(nulls.clone())
            .build()
            .with_context(|| format!("rebuilding column '{}'", e.name))?;
        Ok(make_array(data))
    };
    match &e.kind {
        Kind::Raw => build(&e.data_type, words),
        Kind::Narrow { wide } => {
            let w = build(wide, words)?;
            arrow_cast::cast(&w, &e.data_type)
                .with_context(|| format!("narrowing column '{}' back to {}", e.name, e.data_type))
        }
        Kind::Text { dictionary } => {
            let keys = UInt32Array::new(words.into(), nulls.clone());
            let values = StringArray::from_iter_values(dictionary.iter());
            let dict = DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(values))
                .with_context(|| format!("rebuilding column '{}'", e.name))?;
            if e.data_type == *dict.data_type() {
                return Ok(Arc::new(dict));
            }
            arrow_cast::cast(&dict, &e.data_type)
                .with_context(|| format!("rebuilding column '{}' as {}", e.name, e.data_type))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        BooleanArray, Date32Array, Decimal128Array, Float64Array, Int16Array, Int64Array,
        StringViewArray,
    };

    /// Encodes, gathers rows `picks` on the CPU (what the GPU gather does) and decodes.
    fn round_trip(array: ArrayRef, picks: &[usize]) -> ArrayRef {
        let chunks = vec![array.slice(1, array.len() - 1), array.slice(0, 0)];
        let e = encode("left", "c", array.data_type(), &chunks).unwrap();
        let w = e.width as usize;
        let mut words = Vec::new();
        let mut valid = Vec::new();
        for &p in picks {
            words.extend_from_slice(&e.words[p * w..(p + 1) * w]);
            valid.push(e.valid.as_ref().map_or(1, |v| v[p]));
        }
        decode(&e, words, e.valid.as_ref().map(|_| valid), picks.len()).unwrap()
    }

    #[test]
    fn columns_survive_encode_gather_decode_bit_exactly() {
        let picks = [2, 0, 2, 1];
        let cases: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![
                Some(9),
                Some(i64::MIN),
                None,
                Some(i64::MAX),
            ])),
            Arc::new(Float64Array::from(vec![0.0, 0.1, f64::NAN, -1e300])),
            Arc::new(
                Decimal128Array::from(vec![1, 123456789012345, -5, 7])
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
            Arc::new(Date32Array::from(vec![Some(1), None, Some(-3), Some(9000)])),
            Arc::new(Int16Array::from(vec![
                Some(-1),
                Some(i16::MAX),
                None,
                Some(4),
            ])),
            Arc::new(BooleanArray::from(vec![
                Some(true),
                None,
                Some(false),
                Some(true),
            ])),
            Arc::new(StringViewArray::from(vec![
                Some("x"),
                Some("DELIVER IN PERSON"),
                None,
                Some("x"),
            ])),
            Arc::new(StringArray::from(vec!["a", "b", "c", "a"])),
        ];
        for array in cases {
            let tail = array.slice(1, array.len() - 1);
            let expected = arrow_select::take::take(
                &tail,
                &UInt32Array::from(picks.iter().map(|&p| p as u32).collect::<Vec<_>>()),
                None,
            )
            .unwrap();
            let got = round_trip(array.clone(), &picks);
            assert_eq!(got.data_type(), array.data_type());
            assert_eq!(got.to_data(), expected.to_data(), "{}", array.data_type());
        }
    }

    #[test]
    fn other_types_are_refused_by_name() {
        let list: ArrayRef = Arc::new(arrow_array::BinaryArray::from(vec![b"ab".as_ref()]));
        let e = encode(
            "right",
            "blob",
            list.data_type(),
            std::slice::from_ref(&list),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("right column 'blob' has type Binary"),
            "{e}"
        );
    }
}
