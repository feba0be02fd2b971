//! The CPU half of value upload: one Arrow array chunk → the packed bytes of its GPU rows.
//! Pure (no GPU); the GPU half is [`crate::upload`].
//!
//! Verbatim columns without nulls are not copied: the result shares the Arrow buffer. Any
//! other case writes one new host buffer: the converted components, with every component of
//! a null row set to zero (Arrow leaves null slots undefined; the GPU contract is zero).
//! Host cost per row: 0 bytes (shared) or `format.byte_size()` bytes written.

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_buffer::{Buffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::DataType;
use bytemuck::Pod;
use gpugraph_command::VectorFormat;

use crate::error::ArrowAdapterError;
use crate::mapping::ScalarConversion;

/// The packed bytes of one chunk's rows and the chunk's row nulls (`None`: no nulls).
#[derive(Debug)]
pub(crate) struct EncodedChunk {
    /// `rows × format.byte_size()` bytes.
    pub bytes: Buffer,
    /// Rows in the chunk.
    pub rows: usize,
    /// Row nulls; `None` or a buffer with `null_count() > 0`.
    pub nulls: Option<NullBuffer>,
}

/// Encodes a value column chunk (scalar or fixed-size list) as `format` rows using
/// `conversion` per component. `row_base` is added to row numbers in errors (the chunk's
/// first row within its column).
pub(crate) fn encode_values(
    column: &str,
    array: &dyn Array,
    format: VectorFormat,
    conversion: ScalarConversion,
    row_base: usize,
) -> Result<EncodedChunk, ArrowAdapterError> {
    let rows = array.len();
    let row_nulls = array.nulls().filter(|n| n.null_count() > 0).cloned();
    let (scalars, n): (&dyn Array, usize) = match array.data_type() {
        DataType::FixedSizeList(_, n) => {
            (array.as_fixed_size_list().values().as_ref(), *n as usize)
        }
        _ => (array, 1),
    };
    let component_nulls = if n > 1 {
        scalars.nulls().filter(|c| c.null_count() > 0)
    } else {
        None
    };
    if let Some(c) = component_nulls {
        // A null component is only allowed inside a null row; GPU vectors keep one validity
        // bit per row.
        if let Some(j) = (0..c.len())
            .find(|&j| c.is_null(j) && row_nulls.as_ref().is_none_or(|r| r.is_valid(j / n)))
        {
            return Err(ArrowAdapterError::NullComponent {
                column: column.to_string(),
                row: row_base + j / n,
                component: j % n,
            });
        }
    }
    let valid = |j: usize| row_nulls.as_ref().is_none_or(|r| r.is_valid(j / n));
    let any_null = row_nulls.is_some();
    let len = scalars.len();
    let data = scalars.to_data();
    let out_of_range = |j: usize, value: String| ArrowAdapterError::ValueOutOfRange {
        column: column.to_string(),
        row: row_base + j / n,
        value,
        target: format.to_string(),
    };

    let bytes = match conversion {
        ScalarConversion::Verbatim => {
            let size = format.component_bytes() as usize;
            let raw = raw_bytes(&data, size, column)?;
            if !any_null {
                raw
            } else {
                let mut v = raw.to_vec();
                for j in (0..len).filter(|&j| !valid(j)) {
                    v[j * size..(j + 1) * size].fill(0);
                }
                Buffer::from_vec(v)
            }
        }
        ScalarConversion::Boolean => {
            let b = scalars.as_boolean();
            let v: Vec<u32> = (0..len)
                .map(|j| u32::from(valid(j) && b.value(j)))
                .collect();
            Buffer::from_vec(v)
        }
        ScalarConversion::Widen => match scalars.data_type() {
            DataType::Int8 => convert::<i8, i32>(&data, column, &valid, |x| Ok(x.into())),
            DataType::Int16 => convert::<i16, i32>(&data, column, &valid, |x| Ok(x.into())),
            DataType::UInt16 => convert::<u16, u32>(&data, column, &valid, |x| Ok(x.into())),
            other => return Err(internal(column, other, "widen")),
        }
        .map_err(|e| relabel(e, &out_of_range))?,
        ScalarConversion::NarrowChecked => match scalars.data_type() {
            DataType::UInt64 => convert::<u64, u32>(&data, column, &valid, |x| {
                u32::try_from(x).map_err(|_| x.to_string())
            }),
            _ => convert::<i64, i32>(&data, column, &valid, |x| {
                i32::try_from(x).map_err(|_| x.to_string())
            }),
        }
        .map_err(|e| relabel(e, &out_of_range))?,
        ScalarConversion::RoundToFloat32 => convert::<f64, f32>(&data, column, &valid, |x| {
            let y = x as f32;
            if x.is_finite() && !y.is_finite() {
                Err(x.to_string())
            } else {
                Ok(y)
            }
        })
        .map_err(|e| relabel(e, &out_of_range))?,
    };
    Ok(EncodedChunk {
        bytes,
        rows,
        nulls: row_nulls,
    })
}

/// The source-aligned `uint32` validity mask of `rows` rows: 1 valid, 0 null.
pub(crate) fn validity_mask(nulls: Option<&NullBuffer>, rows: usize) -> Vec<u32> {
    match nulls {
        Some(n) => (0..rows).map(|i| u32::from(n.is_valid(i))).collect(),
        None => vec![1; rows],
    }
}

/// The first null row of a chunk, if any.
pub(crate) fn first_null(nulls: Option<&NullBuffer>) -> Option<usize> {
    nulls.and_then(|n| (0..n.len()).find(|&i| n.is_null(i)))
}

/// The value bytes of a primitive array's data (`size` bytes per value), shared, not copied.
fn raw_bytes(data: &ArrayData, size: usize, column: &str) -> Result<Buffer, ArrowAdapterError> {
    let buffer = data.buffers().first().ok_or_else(|| malformed(column))?;
    let start = data.offset() * size;
    let bytes = data.len() * size;
    if start + bytes > buffer.len() {
        return Err(malformed(column));
    }
    Ok(buffer.slice_with_length(start, bytes))
}

/// The values of a primitive array's data as `T` (borrowed when aligned).
fn typed<'a, T: Pod>(data: &'a ArrayData, column: &str) -> Result<Cow<'a, [T]>, ArrowAdapterError> {
    let size = std::mem::size_of::<T>();
    let buffer = data.buffers().first().ok_or_else(|| malformed(column))?;
    let bytes = buffer
        .as_slice()
        .get(data.offset() * size..(data.offset() + data.len()) * size)
        .ok_or_else(|| malformed(column))?;
    Ok(match bytemuck::try_cast_slice(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(bytemuck::pod_collect_to_vec(bytes)),
    })
}

/// A conversion failure inside [`convert`]: the element index and the value spelled.
#[derive(Debug)]
enum ConvertError {
    Value(usize, String),
    Adapter(ArrowAdapterError),
}

/// Maps every valid element through `f` (invalid elements become zero); stops at the first
/// value `f` rejects.
fn convert<I: Pod, O: Pod + arrow_buffer::ArrowNativeType>(
    data: &ArrayData,
    column: &str,
    valid: &dyn Fn(usize) -> bool,
    f: impl Fn(I) -> Result<O, String>,
) -> Result<Buffer, ConvertError> {
    let values = typed::<I>(data, column).map_err(ConvertError::Adapter)?;
    let mut out = Vec::with_capacity(values.len());
    for (j, &x) in values.iter().enumerate() {
        if valid(j) {
            out.push(f(x).map_err(|v| ConvertError::Value(j, v))?);
        } else {
            out.push(O::zeroed());
        }
    }
    Ok(Buffer::from_vec(out))
}

fn relabel(
    e: ConvertError,
    out_of_range: &dyn Fn(usize, String) -> ArrowAdapterError,
) -> ArrowAdapterError {
    match e {
        ConvertError::Value(j, v) => out_of_range(j, v),
        ConvertError::Adapter(a) => a,
    }
}

fn malformed(column: &str) -> ArrowAdapterError {
    ArrowAdapterError::Arrow(arrow_schema::ArrowError::InvalidArgumentError(format!(
        "column '{column}': the value buffer is shorter than its offset and length"
    )))
}

fn internal(column: &str, data_type: &DataType, conversion: &str) -> ArrowAdapterError {
    ArrowAdapterError::UnsupportedType {
        column: column.to_string(),
        data_type: data_type.clone(),
        hint: format!("no {conversion} conversion exists for this type"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Float32Type;
    use arrow_array::{
        BooleanArray, FixedSizeListArray, Float64Array, Int16Array, Int64Array, UInt32Array,
    };

    fn u32s(b: &Buffer) -> Vec<u32> {
        bytemuck::pod_collect_to_vec(b.as_slice())
    }

    #[test]
    fn verbatim_without_nulls_shares_the_arrow_buffer() {
        let a = UInt32Array::from(vec![1, 2, 3, 4, 5]).slice(1, 3);
        let e =
            encode_values("c", &a, VectorFormat::Uint32, ScalarConversion::Verbatim, 0).unwrap();
        assert_eq!(u32s(&e.bytes), vec![2, 3, 4]);
        assert!(e.nulls.is_none());
        assert_eq!(
            e.bytes.as_ptr(),
            a.values().inner().as_ptr(),
            "no copy for verbatim columns without nulls"
        );
    }

    #[test]
    fn null_rows_hold_zero() {
        let a = UInt32Array::from(vec![Some(7), None, Some(9)]);
        let e =
            encode_values("c", &a, VectorFormat::Uint32, ScalarConversion::Verbatim, 0).unwrap();
        assert_eq!(u32s(&e.bytes), vec![7, 0, 9]);
        assert_eq!(validity_mask(e.nulls.as_ref(), 3), vec![1, 0, 1]);
        assert_eq!(first_null(e.nulls.as_ref()), Some(1));
        let b = BooleanArray::from(vec![Some(true), None, Some(false), Some(true)]);
        let e = encode_values("b", &b, VectorFormat::Uint32, ScalarConversion::Boolean, 0).unwrap();
        assert_eq!(u32s(&e.bytes), vec![1, 0, 0, 1]);
        let w = Int16Array::from(vec![Some(-3), None]);
        let e = encode_values("w", &w, VectorFormat::Sint32, ScalarConversion::Widen, 0).unwrap();
        assert_eq!(
            bytemuck::pod_collect_to_vec::<u8, i32>(&e.bytes),
            vec![-3, 0]
        );
    }

    #[test]
    fn narrowing_names_the_first_offending_row() {
        let a = Int64Array::from(vec![Some(1), None, Some(-5), Some(1 << 40), Some(i64::MIN)]);
        let err = encode_values(
            "ts",
            &a,
            VectorFormat::Sint32,
            ScalarConversion::NarrowChecked,
            10,
        )
        .unwrap_err();
        assert!(
            matches!(&err, ArrowAdapterError::ValueOutOfRange { column, row: 13, value, .. } if column == "ts" && value == "1099511627776"),
            "{err}"
        );
        let ok = Int64Array::from(vec![Some(i32::MIN as i64), None, Some(i32::MAX as i64)]);
        let e = encode_values(
            "ts",
            &ok,
            VectorFormat::Sint32,
            ScalarConversion::NarrowChecked,
            0,
        )
        .unwrap();
        assert_eq!(
            bytemuck::pod_collect_to_vec::<u8, i32>(&e.bytes),
            vec![i32::MIN, 0, i32::MAX]
        );
        // A null slot may hold any value: it is not checked.
        let masked = Int64Array::new(vec![5, i64::MAX].into(), Some(vec![true, false].into()));
        encode_values(
            "m",
            &masked,
            VectorFormat::Sint32,
            ScalarConversion::NarrowChecked,
            0,
        )
        .unwrap();
    }

    #[test]
    fn float64_rounds_and_rejects_overflow() {
        let a = Float64Array::from(vec![0.1, f64::NAN, f64::INFINITY, -1e-50]);
        let e = encode_values(
            "f",
            &a,
            VectorFormat::Float32,
            ScalarConversion::RoundToFloat32,
            0,
        )
        .unwrap();
        let v: Vec<f32> = bytemuck::pod_collect_to_vec(&e.bytes);
        assert_eq!(v[0], 0.1f32);
        assert!(v[1].is_nan() && v[2] == f32::INFINITY && v[3] == 0.0);
        let big = Float64Array::from(vec![1.0, 1e300]);
        assert!(matches!(
            encode_values(
                "f",
                &big,
                VectorFormat::Float32,
                ScalarConversion::RoundToFloat32,
                0
            ),
            Err(ArrowAdapterError::ValueOutOfRange { row: 1, .. })
        ));
    }

    #[test]
    fn fixed_size_lists_zero_null_rows_and_reject_null_components() {
        let rows = vec![
            Some(vec![Some(1.0), Some(2.0)]),
            None,
            Some(vec![Some(5.0), Some(6.0)]),
        ];
        let a = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(rows, 2);
        let e = encode_values(
            "p",
            &a,
            VectorFormat::Float32x2,
            ScalarConversion::Verbatim,
            0,
        )
        .unwrap();
        let v: Vec<f32> = bytemuck::pod_collect_to_vec(&e.bytes);
        assert_eq!(v, vec![1.0, 2.0, 0.0, 0.0, 5.0, 6.0]);
        let sliced = a.slice(2, 1);
        let e = encode_values(
            "p",
            &sliced,
            VectorFormat::Float32x2,
            ScalarConversion::Verbatim,
            0,
        )
        .unwrap();
        assert_eq!(
            bytemuck::pod_collect_to_vec::<u8, f32>(&e.bytes),
            vec![5.0, 6.0]
        );

        let bad = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
            vec![
                Some(vec![Some(1.0), Some(2.0)]),
                Some(vec![Some(3.0), None]),
            ],
            2,
        );
        assert!(matches!(
            encode_values(
                "p",
                &bad,
                VectorFormat::Float32x2,
                ScalarConversion::Verbatim,
                0
            ),
            Err(ArrowAdapterError::NullComponent {
                row: 1,
                component: 1,
                ..
            })
        ));
    }
}
