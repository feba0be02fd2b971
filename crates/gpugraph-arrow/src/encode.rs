//! The CPU half of value upload: one Arrow array chunk → the packed bytes of its GPU rows,
//! written on demand for any range of rows ([`ValueEncoder::fill`]). Pure (no GPU); the GPU
//! half ([`crate::stage`]) calls it on many threads straight into staging memory.
//!
//! The bytes are the converted components, with every component of a null row set to zero
//! (Arrow leaves null slots undefined; the GPU contract is zero). Host cost per row:
//! `format.byte_size()` bytes written, into a cache-sized scratch, never a whole column.

use arrow_array::cast::AsArray;
use arrow_array::{make_array, Array, ArrayRef};
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

/// One value chunk checked for upload and ready to write any range of its rows: the GPU
/// bytes are produced on demand ([`ValueEncoder::fill`]), so an upload writes them straight
/// into staging and a converted column never exists whole on the host.
pub(crate) struct ValueEncoder<'c> {
    column: &'c str,
    format: VectorFormat,
    conversion: ScalarConversion,
    row_base: usize,
    rows: usize,
    /// Components per row.
    n: usize,
    /// The components (the list's values for a fixed-size list).
    scalars: ArrayRef,
    /// Row nulls; `None` or a buffer with `null_count() > 0`.
    row_nulls: Option<NullBuffer>,
}

impl<'c> ValueEncoder<'c> {
    /// Checks the chunk (a null component is only allowed inside a null row; the value buffer
    /// covers the rows) without converting anything.
    pub(crate) fn new(
        column: &'c str,
        array: &dyn Array,
        format: VectorFormat,
        conversion: ScalarConversion,
        row_base: usize,
    ) -> Result<Self, ArrowAdapterError> {
        let rows = array.len();
        let row_nulls = array.nulls().filter(|n| n.null_count() > 0).cloned();
        let (scalars, n): (ArrayRef, usize) = match array.data_type() {
            DataType::FixedSizeList(_, n) => {
                (array.as_fixed_size_list().values().clone(), *n as usize)
            }
            _ => (make_array(array.to_data()), 1),
        };
        let component_nulls = if n > 1 {
            scalars.nulls().filter(|c| c.null_count() > 0)
        } else {
            None
        };
        if let Some(c) = component_nulls {
            // GPU vectors keep one validity bit per row.
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
        if scalars.len() < rows * n {
            return Err(malformed(column));
        }
        if conversion != ScalarConversion::Boolean {
            let size = match conversion {
                ScalarConversion::Verbatim => format.component_bytes() as usize,
                _ => scalars
                    .data_type()
                    .primitive_width()
                    .ok_or_else(|| internal(column, scalars.data_type(), "component"))?,
            };
            component_bytes(&scalars.to_data(), size, 0..rows * n, column)?;
        }
        Ok(Self {
            column,
            format,
            conversion,
            row_base,
            rows,
            n,
            scalars,
            row_nulls,
        })
    }

    /// Rows in the chunk.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Row nulls; `None` when the chunk has none.
    pub(crate) fn nulls(&self) -> Option<&NullBuffer> {
        self.row_nulls.as_ref()
    }

    /// Writes rows `first ..` (as many as `out` holds whole: `out.len()` is a multiple of the
    /// row size, `out` 4-byte aligned) as GPU bytes: converted components, null rows zero.
    /// Fails naming the first row (in order) whose value the conversion rejects.
    pub(crate) fn fill(&self, first: usize, out: &mut [u8]) -> Result<(), ArrowAdapterError> {
        let row = self.format.byte_size() as usize;
        let count = out.len() / row;
        let (j0, j1) = (first * self.n, (first + count) * self.n);
        let n = self.n;
        let valid = |j: usize| self.row_nulls.as_ref().is_none_or(|r| r.is_valid(j / n));
        let out_of_range = |j: usize, value: String| ArrowAdapterError::ValueOutOfRange {
            column: self.column.to_string(),
            row: self.row_base + j / n,
            value,
            target: self.format.to_string(),
        };
        let data = self.scalars.to_data();
        let column = self.column;
        match self.conversion {
            ScalarConversion::Verbatim => {
                let size = self.format.component_bytes() as usize;
                out.copy_from_slice(component_bytes(&data, size, j0..j1, column)?);
                if let Some(nulls) = &self.row_nulls {
                    for_each_null(nulls, first, count, |r| out[r * row..(r + 1) * row].fill(0));
                }
                Ok(())
            }
            ScalarConversion::Boolean => {
                let b = self.scalars.as_boolean();
                let out: &mut [u32] = bytemuck::cast_slice_mut(out);
                for (o, j) in out.iter_mut().zip(j0..j1) {
                    *o = u32::from(valid(j) && b.value(j));
                }
                Ok(())
            }
            ScalarConversion::Widen => match self.scalars.data_type() {
                DataType::Int8 => convert::<i8, i32>(&data, j0..j1, out, &valid, |x| Ok(x.into())),
                DataType::Int16 => {
                    convert::<i16, i32>(&data, j0..j1, out, &valid, |x| Ok(x.into()))
                }
                DataType::UInt16 => {
                    convert::<u16, u32>(&data, j0..j1, out, &valid, |x| Ok(x.into()))
                }
                other => return Err(internal(column, other, "widen")),
            }
            .map_err(|e| relabel(e, column, &out_of_range)),
            ScalarConversion::NarrowChecked => match self.scalars.data_type() {
                DataType::UInt64 => convert::<u64, u32>(&data, j0..j1, out, &valid, |x| {
                    u32::try_from(x).map_err(|_| x.to_string())
                }),
                _ => convert::<i64, i32>(&data, j0..j1, out, &valid, |x| {
                    i32::try_from(x).map_err(|_| x.to_string())
                }),
            }
            .map_err(|e| relabel(e, column, &out_of_range)),
            ScalarConversion::RoundToFloat32 => {
                convert::<f64, f32>(&data, j0..j1, out, &valid, |x| {
                    let y = x as f32;
                    if x.is_finite() && !y.is_finite() {
                        Err(x.to_string())
                    } else {
                        Ok(y)
                    }
                })
                .map_err(|e| relabel(e, column, &out_of_range))
            }
        }
    }
}

/// Calls `f(k)` for every null row `first + k` of `first .. first + count`, 64 rows per
/// bitmap word (the all-valid words of a mostly-valid column cost one compare each).
pub(crate) fn for_each_null(
    nulls: &NullBuffer,
    first: usize,
    count: usize,
    mut f: impl FnMut(usize),
) {
    let bits = nulls.inner().slice(first, count);
    let chunks = bits.bit_chunks();
    let mut visit = |base: usize, word: u64, len: usize| {
        let mut missing = !word & (u64::MAX >> (64 - len.max(1)));
        while missing != 0 {
            f(base + missing.trailing_zeros() as usize);
            missing &= missing - 1;
        }
    };
    let mut base = 0;
    for word in chunks.iter() {
        if word != u64::MAX {
            visit(base, word, 64);
        }
        base += 64;
    }
    if chunks.remainder_len() > 0 {
        visit(base, chunks.remainder_bits(), chunks.remainder_len());
    }
}

/// The `uint32` validity mask (1 valid, 0 null) of rows `first .. first + out.len()`.
pub(crate) fn write_validity(nulls: Option<&NullBuffer>, first: usize, out: &mut [u32]) {
    out.fill(1);
    if let Some(nulls) = nulls {
        for_each_null(nulls, first, out.len(), |k| out[k] = 0);
    }
}

/// The first null row of a chunk, if any.
pub(crate) fn first_null(nulls: Option<&NullBuffer>) -> Option<usize> {
    nulls.and_then(|n| (0..n.len()).find(|&i| n.is_null(i)))
}

/// Bytes of components `range` of a primitive array's data (`size` bytes each), borrowed.
fn component_bytes<'d>(
    data: &'d ArrayData,
    size: usize,
    range: std::ops::Range<usize>,
    column: &str,
) -> Result<&'d [u8], ArrowAdapterError> {
    let buffer = data.buffers().first().ok_or_else(|| malformed(column))?;
    buffer
        .as_slice()
        .get((data.offset() + range.start) * size..(data.offset() + range.end) * size)
        .ok_or_else(|| malformed(column))
}

/// A conversion failure inside [`convert`]: the element index and the value spelled.
#[derive(Debug)]
enum ConvertError {
    Value(usize, String),
    Malformed,
}

/// Maps every valid element of `range` through `f` into `out` (invalid elements become
/// zero); stops at the first value `f` rejects.
fn convert<I: Pod, O: Pod>(
    data: &ArrayData,
    range: std::ops::Range<usize>,
    out: &mut [u8],
    valid: &dyn Fn(usize) -> bool,
    f: impl Fn(I) -> Result<O, String>,
) -> Result<(), ConvertError> {
    let size = std::mem::size_of::<I>();
    let j0 = range.start;
    let bytes = data
        .buffers()
        .first()
        .and_then(|b| {
            b.as_slice()
                .get((data.offset() + range.start) * size..(data.offset() + range.end) * size)
        })
        .ok_or(ConvertError::Malformed)?;
    let values: std::borrow::Cow<'_, [I]> = match bytemuck::try_cast_slice(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => std::borrow::Cow::Owned(bytemuck::pod_collect_to_vec(bytes)),
    };
    let out: &mut [O] = bytemuck::cast_slice_mut(out);
    for (k, (o, &x)) in out.iter_mut().zip(values.iter()).enumerate() {
        *o = if valid(j0 + k) {
            f(x).map_err(|v| ConvertError::Value(j0 + k, v))?
        } else {
            O::zeroed()
        };
    }
    Ok(())
}

fn relabel(
    e: ConvertError,
    column: &str,
    out_of_range: &dyn Fn(usize, String) -> ArrowAdapterError,
) -> ArrowAdapterError {
    match e {
        ConvertError::Value(j, v) => out_of_range(j, v),
        ConvertError::Malformed => malformed(column),
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

    /// The whole chunk through [`ValueEncoder::fill`], and (checking that a fill of any row
    /// range writes the same bytes) in ranges of 1, 2 and 3 rows.
    fn encode_values(
        column: &str,
        array: &dyn Array,
        format: VectorFormat,
        conversion: ScalarConversion,
        row_base: usize,
    ) -> Result<EncodedChunk, ArrowAdapterError> {
        let e = ValueEncoder::new(column, array, format, conversion, row_base)?;
        let row = format.byte_size() as usize;
        let mut words = vec![0u32; e.rows() * row / 4];
        let whole: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        e.fill(0, whole)?;
        for step in 1..=3 {
            let mut part = vec![0xAAu32; e.rows() * row / 4];
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut part);
            for (k, piece) in bytes.chunks_mut(step * row).enumerate() {
                e.fill(k * step, piece)?;
            }
            assert_eq!(
                part, words,
                "fills of {step} rows differ from the whole fill"
            );
        }
        Ok(EncodedChunk {
            bytes: Buffer::from_vec(words),
            rows: e.rows(),
            nulls: e.nulls().cloned(),
        })
    }

    /// The source-aligned `uint32` validity mask of `rows` rows: 1 valid, 0 null.
    fn validity_mask(nulls: Option<&NullBuffer>, rows: usize) -> Vec<u32> {
        match nulls {
            Some(n) => (0..rows).map(|i| u32::from(n.is_valid(i))).collect(),
            None => vec![1; rows],
        }
    }

    fn u32s(b: &Buffer) -> Vec<u32> {
        bytemuck::pod_collect_to_vec(b.as_slice())
    }

    #[test]
    fn nulls_by_bitmap_word_match_row_by_row() {
        // Sliced bitmaps (offsets inside a word), ranges shorter and longer than a word, an
        // all-valid word and an all-null word.
        let valid: Vec<bool> = (0..517)
            .map(|i| !(i % 5 == 1 || (200..264).contains(&i)) || (300..364).contains(&i))
            .collect();
        let whole = NullBuffer::from(valid.clone());
        for offset in [0usize, 3, 64, 70] {
            let nulls = whole.slice(offset, valid.len() - offset);
            for (first, count) in [(0, 0), (0, 1), (5, 63), (1, 64), (7, 200), (0, 447)] {
                let mut seen = Vec::new();
                for_each_null(&nulls, first, count, |k| seen.push(k));
                let expect: Vec<usize> =
                    (0..count).filter(|&k| !valid[offset + first + k]).collect();
                assert_eq!(seen, expect, "offset {offset}, rows {first}+{count}");
                let mut mask = vec![7u32; count];
                write_validity(Some(&nulls), first, &mut mask);
                let expect: Vec<u32> = (0..count)
                    .map(|k| u32::from(valid[offset + first + k]))
                    .collect();
                assert_eq!(mask, expect);
            }
        }
    }

    #[test]
    fn verbatim_rows_of_a_slice() {
        let a = UInt32Array::from(vec![1, 2, 3, 4, 5]).slice(1, 3);
        let e =
            encode_values("c", &a, VectorFormat::Uint32, ScalarConversion::Verbatim, 0).unwrap();
        assert_eq!(u32s(&e.bytes), vec![2, 3, 4]);
        assert!(e.nulls.is_none());
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
