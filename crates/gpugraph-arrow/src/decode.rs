//! The CPU half of readback: packed row bytes of one stored format → an Arrow array of a
//! requested type. Pure (no GPU); the GPU half is [`crate::readback`].
//!
//! Supported targets per stored format (the inverse of [`crate::mapping`]): `uint8` →
//! `UInt8`; `uint32` → `UInt32`, `UInt16` (checked), `UInt64`, `Boolean` (nonzero is true),
//! or with a dictionary `Dictionary<UInt32, Utf8>` / `Utf8`; `sint32` → `Int32`, `Date32`,
//! `Time32`, `Int8`/`Int16` (checked), `Int64`, `Date64`, `Time64`, `Timestamp`, `Duration`;
//! `float16` → `Float16`; `float32` → `Float32`, `Float64`; n-component formats →
//! `FixedSizeList<T, n>` with `T` one of the above for the component.

use std::sync::Arc;

use arrow_array::{
    make_array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray, StringArray,
    UInt32Array,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;
use bytemuck::Pod;
use gpugraph_command::{ScalarKind, VectorFormat};

use crate::error::ArrowAdapterError;

/// What one decode needs to know besides the bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DecodeTarget<'a> {
    /// Column name, for errors.
    pub column: &'a str,
    /// Stored format of the bytes.
    pub stored: VectorFormat,
    /// Requested Arrow type.
    pub data_type: &'a DataType,
    /// The strings dictionary codes index, for dictionary and string targets.
    pub dictionary: Option<&'a [String]>,
}

/// Decodes `bytes` (whole rows of `target.stored`) into an array of `target.data_type` with
/// row `nulls`. Fails with `ReadbackType` when the pair is not supported and
/// `ValueOutOfRange` / `CodeOutOfRange` when a valid row does not fit.
pub(crate) fn decode(
    target: DecodeTarget<'_>,
    bytes: &[u8],
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef, ArrowAdapterError> {
    let DecodeTarget {
        column,
        stored,
        data_type,
        dictionary,
    } = target;
    let mismatch = || ArrowAdapterError::ReadbackType {
        column: column.to_string(),
        stored: stored.to_string(),
        data_type: data_type.clone(),
    };
    let n = stored.components() as usize;
    match (data_type, dictionary) {
        (DataType::FixedSizeList(child, size), _) => {
            if *size as usize != n || n < 2 {
                return Err(mismatch());
            }
            let values =
                decode_scalars(column, component_of(stored), bytes, child.data_type(), None)
                    .map_err(|e| match e {
                        ArrowAdapterError::ReadbackType { .. } => mismatch(),
                        // Rows in errors count lists, not components.
                        ArrowAdapterError::ValueOutOfRange {
                            column,
                            row,
                            value,
                            target,
                        } => ArrowAdapterError::ValueOutOfRange {
                            column,
                            row: row / n,
                            value,
                            target,
                        },
                        other => other,
                    })?;
            Ok(Arc::new(FixedSizeListArray::try_new(
                child.clone(),
                *size,
                values,
                nulls,
            )?))
        }
        _ if n != 1 => Err(mismatch()),
        (DataType::Dictionary(key, value), Some(dict))
            if **key == DataType::UInt32
                && **value == DataType::Utf8
                && stored == VectorFormat::Uint32 =>
        {
            let codes = checked_codes(column, bytes, nulls.as_ref(), dict.len())?;
            let keys = UInt32Array::new(ScalarBuffer::from(codes), nulls);
            let values = Arc::new(StringArray::from_iter_values(dict.iter()));
            Ok(Arc::new(DictionaryArray::try_new(keys, values)?))
        }
        (DataType::Utf8, Some(dict)) if stored == VectorFormat::Uint32 => {
            let codes = checked_codes(column, bytes, nulls.as_ref(), dict.len())?;
            let strings: StringArray = codes
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    nulls
                        .as_ref()
                        .is_none_or(|n| n.is_valid(i))
                        .then(|| dict[c as usize].as_str())
                })
                .collect();
            Ok(Arc::new(strings))
        }
        (_, Some(_)) => Err(mismatch()),
        (_, None) => decode_scalars(column, stored, bytes, data_type, nulls),
    }
}

/// The one-component format holding one component of `format` (`unorm8x4` → `uint8`).
pub(crate) fn component_of(format: VectorFormat) -> VectorFormat {
    match (format.scalar(), format.component_bytes()) {
        (ScalarKind::Uint | ScalarKind::Unorm, 1) => VectorFormat::Uint8,
        (ScalarKind::Uint, _) => VectorFormat::Uint32,
        (ScalarKind::Sint, _) => VectorFormat::Sint32,
        (ScalarKind::Float, 2) => VectorFormat::Float16,
        _ => VectorFormat::Float32,
    }
}

/// Codes as `u32`, each valid row's code checked against the dictionary length; null rows
/// are set to 0 so the Arrow dictionary array stays valid whatever the GPU left there.
fn checked_codes(
    column: &str,
    bytes: &[u8],
    nulls: Option<&NullBuffer>,
    len: usize,
) -> Result<Vec<u32>, ArrowAdapterError> {
    let mut codes: Vec<u32> = bytemuck::pod_collect_to_vec(bytes);
    for (row, c) in codes.iter_mut().enumerate() {
        if nulls.is_some_and(|n| n.is_null(row)) {
            *c = 0;
        } else if *c as usize >= len {
            return Err(ArrowAdapterError::CodeOutOfRange {
                column: column.to_string(),
                row,
                code: *c,
                len,
            });
        }
    }
    Ok(codes)
}

/// Decodes one-component values of `stored` as `data_type`.
fn decode_scalars(
    column: &str,
    stored: VectorFormat,
    bytes: &[u8],
    data_type: &DataType,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef, ArrowAdapterError> {
    let mismatch = || ArrowAdapterError::ReadbackType {
        column: column.to_string(),
        stored: stored.to_string(),
        data_type: data_type.clone(),
    };
    let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
    let out_of_range = |row: usize, value: String| ArrowAdapterError::ValueOutOfRange {
        column: column.to_string(),
        row,
        value,
        target: data_type.to_string(),
    };
    let values: Buffer = match (stored, data_type) {
        (VectorFormat::Uint8, DataType::UInt8) => Buffer::from_vec(bytes.to_vec()),
        (VectorFormat::Uint32, DataType::UInt32)
        | (VectorFormat::Sint32, DataType::Int32 | DataType::Date32 | DataType::Time32(_))
        | (VectorFormat::Float32, DataType::Float32) => {
            Buffer::from_vec(bytemuck::pod_collect_to_vec::<u8, u32>(bytes))
        }
        (VectorFormat::Float16, DataType::Float16) => {
            Buffer::from_vec(bytemuck::pod_collect_to_vec::<u8, u16>(bytes))
        }
        (VectorFormat::Uint32, DataType::UInt64) => {
            map::<u32, u64>(bytes, &valid, |x| Ok(x.into())).map_err(|(r, v)| out_of_range(r, v))?
        }
        (VectorFormat::Uint32, DataType::UInt16) => map::<u32, u16>(bytes, &valid, |x| {
            u16::try_from(x).map_err(|_| x.to_string())
        })
        .map_err(|(r, v)| out_of_range(r, v))?,
        (VectorFormat::Uint32, DataType::Boolean) => {
            let words: Vec<u32> = bytemuck::pod_collect_to_vec(bytes);
            let bits: BooleanBuffer = words.iter().map(|&w| w != 0).collect();
            return Ok(Arc::new(BooleanArray::new(bits, nulls)));
        }
        (VectorFormat::Sint32, DataType::Int8) => map::<i32, i8>(bytes, &valid, |x| {
            i8::try_from(x).map_err(|_| x.to_string())
        })
        .map_err(|(r, v)| out_of_range(r, v))?,
        (VectorFormat::Sint32, DataType::Int16) => map::<i32, i16>(bytes, &valid, |x| {
            i16::try_from(x).map_err(|_| x.to_string())
        })
        .map_err(|(r, v)| out_of_range(r, v))?,
        (
            VectorFormat::Sint32,
            DataType::Int64
            | DataType::Date64
            | DataType::Time64(_)
            | DataType::Timestamp(_, _)
            | DataType::Duration(_),
        ) => {
            map::<i32, i64>(bytes, &valid, |x| Ok(x.into())).map_err(|(r, v)| out_of_range(r, v))?
        }
        (VectorFormat::Float32, DataType::Float64) => {
            map::<f32, f64>(bytes, &valid, |x| Ok(x.into())).map_err(|(r, v)| out_of_range(r, v))?
        }
        _ => return Err(mismatch()),
    };
    let rows = bytes.len() / stored.byte_size() as usize;
    let data = ArrayDataBuilder::new(data_type.clone())
        .len(rows)
        .add_buffer(values)
        .nulls(nulls)
        .build()?;
    Ok(make_array(data))
}

/// Maps each valid element through `f` (invalid elements become zero); the error carries
/// the element index and the value spelled.
fn map<I: Pod, O: Pod + arrow_buffer::ArrowNativeType>(
    bytes: &[u8],
    valid: &dyn Fn(usize) -> bool,
    f: impl Fn(I) -> Result<O, String>,
) -> Result<Buffer, (usize, String)> {
    let input: Vec<I> = bytemuck::pod_collect_to_vec(bytes);
    let mut out = Vec::with_capacity(input.len());
    for (i, &x) in input.iter().enumerate() {
        out.push(if valid(i) {
            f(x).map_err(|v| (i, v))?
        } else {
            O::zeroed()
        });
    }
    Ok(Buffer::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::default_data_type;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Int8Type, TimestampMillisecondType};
    use arrow_array::Array;
    use arrow_schema::TimeUnit;

    fn target<'a>(stored: VectorFormat, t: &'a DataType) -> DecodeTarget<'a> {
        DecodeTarget {
            column: "c",
            stored,
            data_type: t,
            dictionary: None,
        }
    }

    #[test]
    fn scalars_and_lists_decode() {
        let t = DataType::Int8;
        let bytes = bytemuck::cast_slice(&[1i32, -2, 300]).to_vec();
        let err = decode(target(VectorFormat::Sint32, &t), &bytes, None).unwrap_err();
        assert!(
            matches!(err, ArrowAdapterError::ValueOutOfRange { row: 2, .. }),
            "{err}"
        );
        let nulls = NullBuffer::from(vec![true, true, false]);
        let a = decode(target(VectorFormat::Sint32, &t), &bytes, Some(nulls)).unwrap();
        let a = a.as_primitive::<Int8Type>();
        assert_eq!((a.value(0), a.value(1), a.is_null(2)), (1, -2, true));

        let ts = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
        let a = decode(target(VectorFormat::Sint32, &ts), &bytes, None).unwrap();
        assert_eq!(a.data_type(), &ts);
        assert_eq!(a.as_primitive::<TimestampMillisecondType>().value(2), 300);

        let f3 = default_data_type(VectorFormat::Float32x3);
        let v = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let a = decode(
            target(VectorFormat::Float32x3, &f3),
            bytemuck::cast_slice(&v),
            None,
        )
        .unwrap();
        let l = a.as_fixed_size_list();
        assert_eq!(l.len(), 2);
        assert_eq!(
            l.value(1).as_primitive::<Float32Type>().values(),
            &[4.0, 5.0, 6.0]
        );
        assert!(matches!(
            decode(
                target(VectorFormat::Float32x2, &f3),
                bytemuck::cast_slice(&v),
                None
            ),
            Err(ArrowAdapterError::ReadbackType { .. })
        ));
        assert!(matches!(
            decode(
                target(VectorFormat::Float32, &DataType::Int32),
                &bytes,
                None
            ),
            Err(ArrowAdapterError::ReadbackType { .. })
        ));
    }

    #[test]
    fn codes_decode_to_dictionaries_and_strings() {
        let dict = vec!["a".to_string(), "b".to_string()];
        let dt = crate::mapping::code_dictionary_type();
        let codes = [1u32, 7, 0];
        let nulls = NullBuffer::from(vec![true, false, true]);
        let t = DecodeTarget {
            column: "d",
            stored: VectorFormat::Uint32,
            data_type: &dt,
            dictionary: Some(&dict),
        };
        let a = decode(t, bytemuck::cast_slice(&codes), Some(nulls.clone())).unwrap();
        assert_eq!(a.len(), 3);
        assert!(a.is_null(1));
        let err = decode(t, bytemuck::cast_slice(&codes), None).unwrap_err();
        assert!(
            matches!(
                err,
                ArrowAdapterError::CodeOutOfRange {
                    row: 1,
                    code: 7,
                    len: 2,
                    ..
                }
            ),
            "{err}"
        );
        let utf8 = DataType::Utf8;
        let s = decode(
            DecodeTarget {
                data_type: &utf8,
                ..t
            },
            bytemuck::cast_slice(&codes),
            Some(nulls),
        )
        .unwrap();
        let s = s.as_string::<i32>();
        assert_eq!((s.value(0), s.is_null(1), s.value(2)), ("b", true, "a"));
    }
}
