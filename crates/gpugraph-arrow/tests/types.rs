//! GPU round trips of every supported Arrow type through `upload_array` and
//! `read_back_column`: stored format, stored bits (null rows hold zero), the validity mask,
//! sliced inputs, odd `uint8` lengths, and the default readback types. They run on the
//! selected adapter (lavapipe in CI) and fail, never skip, when there is none.

use std::sync::Arc;

use arrow_array::types::{
    Date64Type, DurationSecondType, Float16Type, Float32Type, Float64Type, Int32Type, Int64Type,
    Int8Type, Time64MicrosecondType, TimestampMillisecondType, UInt32Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, FixedSizeListArray, Float16Array, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, Time32MillisecondArray,
    UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow_array::{ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::DataType;
use gpugraph_arrow::{
    read_back_array, read_back_column, upload_array, ChunkPlacement, GpuColumn, UploadOptions,
    ValidityPolicy,
};
use gpugraph_tables::VectorFormat;
use gpugraph_testing::shared_ctx as ctx;
use half::f16;

/// Deterministic pseudo-random words (splitmix64).
fn words(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .collect()
}

/// Every third row null, starting at row 1.
fn null_pattern(n: usize) -> Vec<bool> {
    (0..n).map(|i| i % 3 != 1).collect()
}

/// Sizes that cross word and workgroup-ish boundaries, including 0 and odd lengths.
const SIZES: [usize; 6] = [0, 1, 3, 5, 257, 1001];

/// Uploads `array`, checks the stored format, the stored bytes (`expected` gives the stored
/// value of row `i` with zeros at nulls), the mask, and that readback as the source type
/// gives `array` back.
fn round_trip<T: bytemuck::Pod + PartialEq + std::fmt::Debug>(
    array: &dyn Array,
    options: &UploadOptions,
    format: VectorFormat,
    expected: &[T],
) -> GpuColumn {
    let ctx = ctx();
    let col = upload_array(ctx, "c", array, options).unwrap();
    assert_eq!(col.values.format(), format, "{}", array.data_type());
    assert_eq!(col.values.len(), array.len() as u64);
    assert_eq!(col.values.num_chunks(), 1);
    assert_eq!(
        col.values.read_back::<T>(ctx).unwrap(),
        expected,
        "stored values of {}",
        array.data_type()
    );
    match &col.validity {
        Some(mask) => {
            let valid: Vec<u32> = (0..array.len())
                .map(|i| u32::from(array.is_valid(i)))
                .collect();
            assert_eq!(mask.read_back::<u32>(ctx).unwrap(), valid);
        }
        None => assert_eq!(array.null_count(), 0, "a column with nulls needs a mask"),
    }
    let back = read_back_column(ctx, "c", &col, Some(array.data_type())).unwrap();
    assert_eq!(back.to_data(), array.to_data(), "{}", array.data_type());
    col
}

/// A primitive array whose null slots keep their (nonzero) values: Arrow leaves null slots
/// undefined, so the upload must zero them itself.
fn masked<T: ArrowPrimitiveType>(values: &[T::Native], valid: &[bool]) -> PrimitiveArray<T> {
    PrimitiveArray::new(
        values.to_vec().into(),
        Some(NullBuffer::from(valid.to_vec())),
    )
}

fn zero_nulls<T: Copy + Default>(values: &[T], valid: &[bool]) -> Vec<T> {
    values
        .iter()
        .zip(valid)
        .map(|(&v, &ok)| if ok { v } else { T::default() })
        .collect()
}

#[test]
fn uint8_uses_packed_bytes_in_a_padded_buffer() {
    let o = UploadOptions::default();
    for n in SIZES {
        let v: Vec<u8> = words(n, 1).iter().map(|&w| w as u8).collect();
        let col = round_trip(&UInt8Array::from(v.clone()), &o, VectorFormat::Uint8, &v);
        let buffer = col.values.chunks()[0].buffer().size();
        assert_eq!(buffer, (n as u64).div_ceil(4).max(1) * 4, "n = {n}");
        let valid = null_pattern(n);
        let a = masked::<UInt8Type>(&v, &valid);
        round_trip(&a, &o, VectorFormat::Uint8, &zero_nulls(&v, &valid));
    }
}

#[test]
fn verbatim_32_bit_types() {
    let o = UploadOptions::default();
    for n in SIZES {
        let w = words(n, 2);
        let valid = null_pattern(n);
        let u: Vec<u32> = w.iter().map(|&x| x as u32).collect();
        let i: Vec<i32> = w.iter().map(|&x| x as i32).collect();
        let f: Vec<f32> = w.iter().map(|&x| (x as i32) as f32 / 7.0).collect();
        round_trip(&UInt32Array::from(u.clone()), &o, VectorFormat::Uint32, &u);
        round_trip(&Int32Array::from(i.clone()), &o, VectorFormat::Sint32, &i);
        round_trip(
            &Float32Array::from(f.clone()),
            &o,
            VectorFormat::Float32,
            &f,
        );
        round_trip(&Date32Array::from(i.clone()), &o, VectorFormat::Sint32, &i);
        round_trip(
            &Time32MillisecondArray::from(i.clone()),
            &o,
            VectorFormat::Sint32,
            &i,
        );
        round_trip(
            &masked::<UInt32Type>(&u, &valid),
            &o,
            VectorFormat::Uint32,
            &zero_nulls(&u, &valid),
        );
        round_trip(
            &masked::<Int32Type>(&i, &valid),
            &o,
            VectorFormat::Sint32,
            &zero_nulls(&i, &valid),
        );
        round_trip(
            &masked::<Float32Type>(&f, &valid),
            &o,
            VectorFormat::Float32,
            &zero_nulls(&f, &valid),
        );
    }
}

#[test]
fn widened_types_and_booleans() {
    let o = UploadOptions::default();
    let n = 1001;
    let w = words(n, 3);
    let valid = null_pattern(n);
    let i8s: Vec<i8> = w.iter().map(|&x| (x as i8) | 1).collect();
    let stored: Vec<i32> = zero_nulls(&i8s, &valid).iter().map(|&x| x.into()).collect();
    round_trip(
        &masked::<Int8Type>(&i8s, &valid),
        &o,
        VectorFormat::Sint32,
        &stored,
    );
    let i16s: Vec<i16> = w.iter().map(|&x| x as i16).collect();
    let stored: Vec<i32> = i16s.iter().map(|&x| x.into()).collect();
    round_trip(&Int16Array::from(i16s), &o, VectorFormat::Sint32, &stored);
    let u16s: Vec<u16> = w.iter().map(|&x| x as u16).collect();
    let stored: Vec<u32> = u16s.iter().map(|&x| x.into()).collect();
    round_trip(&UInt16Array::from(u16s), &o, VectorFormat::Uint32, &stored);
    let bits: Vec<bool> = w.iter().map(|&x| x & 1 == 1).collect();
    let stored: Vec<u32> = zero_nulls(&bits, &valid)
        .iter()
        .map(|&b| u32::from(b))
        .collect();
    let bools = BooleanArray::new(
        BooleanBuffer::from(bits),
        Some(NullBuffer::from(valid.clone())),
    );
    round_trip(&bools, &o, VectorFormat::Uint32, &stored);
}

#[test]
fn float16_keeps_raw_bits() {
    let o = UploadOptions::default();
    let values: Vec<f16> = [0.0f32, -1.5, 65504.0, 1e-7, f32::INFINITY, 3.25, -0.0]
        .iter()
        .map(|&x| f16::from_f32(x))
        .collect();
    let bits: Vec<u16> = values.iter().map(|v| v.to_bits()).collect();
    round_trip(
        &Float16Array::from(values.clone()),
        &o,
        VectorFormat::Float16,
        &bits,
    );
    let valid = null_pattern(values.len());
    let a = masked::<Float16Type>(&values, &valid);
    round_trip(&a, &o, VectorFormat::Float16, &zero_nulls(&bits, &valid));
}

#[test]
fn checked_narrowing_of_64_bit_types() {
    let o = UploadOptions::default().narrow_int64();
    let w = words(500, 4);
    let valid = null_pattern(w.len());
    let small: Vec<i64> = w.iter().map(|&x| i64::from(x as i32)).collect();
    let stored: Vec<i32> = small.iter().map(|&x| x as i32).collect();
    round_trip(
        &Int64Array::from(small.clone()),
        &o,
        VectorFormat::Sint32,
        &stored,
    );
    // Null slots hold values that would not fit: they are neither checked nor stored.
    let wide: Vec<i64> = small
        .iter()
        .zip(&valid)
        .map(|(&x, &ok)| if ok { x } else { (1i64 << 40) + x })
        .collect();
    let expected = zero_nulls(&stored, &valid);
    round_trip(
        &masked::<Int64Type>(&wide, &valid),
        &o,
        VectorFormat::Sint32,
        &expected,
    );
    let ts = masked::<TimestampMillisecondType>(&wide, &valid).with_timezone("UTC");
    round_trip(&ts, &o, VectorFormat::Sint32, &expected);
    round_trip(
        &masked::<Date64Type>(&wide, &valid),
        &o,
        VectorFormat::Sint32,
        &expected,
    );
    round_trip(
        &masked::<Time64MicrosecondType>(&wide, &valid),
        &o,
        VectorFormat::Sint32,
        &expected,
    );
    round_trip(
        &masked::<DurationSecondType>(&wide, &valid),
        &o,
        VectorFormat::Sint32,
        &expected,
    );
    let u: Vec<u64> = w.iter().map(|&x| u64::from(x as u32)).collect();
    let stored: Vec<u32> = u.iter().map(|&x| x as u32).collect();
    round_trip(&UInt64Array::from(u), &o, VectorFormat::Uint32, &stored);
}

#[test]
fn float64_rounds_to_float32() {
    let o = UploadOptions::default().round_float64();
    let values = [
        Some(0.1f64),
        None,
        Some(-1e30),
        Some(f64::NAN),
        Some(1.0 / 3.0),
    ];
    // The null slot holds a value beyond float32: unchecked, stored as zero.
    let raw: Vec<f64> = values.iter().map(|v| v.unwrap_or(1e300)).collect();
    let valid: Vec<bool> = values.iter().map(Option::is_some).collect();
    let a = masked::<Float64Type>(&raw, &valid);
    let col = upload_array(ctx(), "f", &a, &o).unwrap();
    assert_eq!(col.values.format(), VectorFormat::Float32);
    let stored: Vec<f32> = col.values.read_back(ctx()).unwrap();
    let expected: Vec<f32> = values.iter().map(|v| v.map_or(0.0, |x| x as f32)).collect();
    assert_eq!(
        stored.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        expected.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
    // Readback widens the stored float32 values: exactly the rounded values, as Float64.
    let back = read_back_column(ctx(), "f", &col, Some(&DataType::Float64)).unwrap();
    let rounded: Float64Array = values
        .iter()
        .map(|v| v.map(|x| f64::from(x as f32)))
        .collect();
    assert_eq!(back.to_data(), rounded.to_data());
}

/// A fixed-size list array whose null rows keep nonzero component values (7).
fn fsl<T: ArrowPrimitiveType>(rows: &[Option<Vec<T::Native>>], n: i32) -> FixedSizeListArray {
    use arrow_buffer::ArrowNativeType;
    let fill = vec![T::Native::usize_as(7); n as usize];
    let flat: Vec<T::Native> = rows
        .iter()
        .flat_map(|r| r.clone().unwrap_or_else(|| fill.clone()))
        .collect();
    let values = Arc::new(PrimitiveArray::<T>::new(flat.into(), None));
    let valid: Vec<bool> = rows.iter().map(Option::is_some).collect();
    let field = Arc::new(arrow_schema::Field::new("item", T::DATA_TYPE, true));
    FixedSizeListArray::new(field, n, values, Some(NullBuffer::from(valid)))
}

#[test]
fn fixed_size_lists_become_vector_formats() {
    let o = UploadOptions::default();
    for (n, format) in [
        (2, VectorFormat::Float32x2),
        (3, VectorFormat::Float32x3),
        (4, VectorFormat::Float32x4),
    ] {
        for rows in [0usize, 1, 5, 300] {
            let w = words(rows * n, 5 + n as u64);
            let valid = null_pattern(rows);
            let flat: Vec<f32> = w.iter().map(|&x| (x % 1000) as f32 * 0.5).collect();
            let lists: Vec<Option<Vec<f32>>> = flat
                .chunks(n)
                .zip(&valid)
                .map(|(c, &ok)| ok.then(|| c.to_vec()))
                .collect();
            let stored: Vec<f32> = lists
                .iter()
                .flat_map(|l| l.clone().unwrap_or_else(|| vec![0.0; n]))
                .collect();
            round_trip(&fsl::<Float32Type>(&lists, n as i32), &o, format, &stored);
        }
    }
    let ints: Vec<Option<Vec<i32>>> = vec![Some(vec![1, -2, 3]), None, Some(vec![7, 8, -9])];
    round_trip(
        &fsl::<Int32Type>(&ints, 3),
        &o,
        VectorFormat::Sint32x3,
        &[1, -2, 3, 0, 0, 0, 7, 8, -9],
    );
    let uints: Vec<Option<Vec<u32>>> = vec![Some(vec![1, 2]), Some(vec![3, 4])];
    round_trip(
        &fsl::<UInt32Type>(&uints, 2),
        &o,
        VectorFormat::Uint32x2,
        &[1u32, 2, 3, 4],
    );
    let rgba: Vec<Option<Vec<u8>>> = vec![Some(vec![255, 0, 10, 20]), None, Some(vec![1, 2, 3, 4])];
    round_trip(
        &fsl::<UInt8Type>(&rgba, 4),
        &o,
        VectorFormat::Uint8x4,
        &[255u8, 0, 10, 20, 0, 0, 0, 0, 1, 2, 3, 4],
    );
    // Float64 components narrow per component under the same option.
    let f64s: Vec<Option<Vec<f64>>> = vec![Some(vec![0.5, 1.5]), None];
    let a = fsl::<arrow_array::types::Float64Type>(&f64s, 2);
    let col = upload_array(ctx(), "p", &a, &UploadOptions::default().round_float64()).unwrap();
    assert_eq!(col.values.format(), VectorFormat::Float32x2);
    assert_eq!(
        col.values.read_back::<f32>(ctx()).unwrap(),
        vec![0.5, 1.5, 0.0, 0.0]
    );
}

#[test]
fn sliced_arrays_upload_only_their_rows() {
    let o = UploadOptions::default();
    let u = UInt32Array::from((0..100).collect::<Vec<u32>>());
    let s = u.slice(37, 20);
    round_trip(
        &s,
        &o,
        VectorFormat::Uint32,
        &(37..57).collect::<Vec<u32>>(),
    );
    let b = BooleanArray::from((0..100).map(|i| i % 3 == 0).collect::<Vec<_>>()).slice(5, 9);
    let stored: Vec<u32> = (5..14).map(|i| u32::from(i % 3 == 0)).collect();
    round_trip(&b, &o, VectorFormat::Uint32, &stored);
    let lists: Vec<Option<Vec<f32>>> = (0..10)
        .map(|i| (i != 4).then(|| vec![i as f32; 3]))
        .collect();
    let a = fsl::<Float32Type>(&lists, 3).slice(3, 4);
    let stored: Vec<f32> = [3.0, 3.0, 3.0, 0.0, 0.0, 0.0, 5.0, 5.0, 5.0, 6.0, 6.0, 6.0].to_vec();
    round_trip(&a, &o, VectorFormat::Float32x3, &stored);
}

#[test]
fn validity_policies_and_placement() {
    let ctx = ctx();
    let a = UInt32Array::from(vec![1, 2, 3]);
    let always = UploadOptions::default().with_validity(ValidityPolicy::Always);
    let col = upload_array(ctx, "c", &a, &always).unwrap();
    assert_eq!(
        col.validity.unwrap().read_back::<u32>(ctx).unwrap(),
        vec![1, 1, 1]
    );
    assert!(upload_array(ctx, "c", &a, &UploadOptions::default())
        .unwrap()
        .validity
        .is_none());
    let shared = UploadOptions::default().with_placement(ChunkPlacement::SharedPerColumn);
    let col = round_trip(&a, &shared, VectorFormat::Uint32, &[1u32, 2, 3]);
    assert_eq!(
        col.values.chunks()[0].ownership(),
        gpugraph_tables::Ownership::Owned
    );
    let vertex = UploadOptions::default().with_extra_usage(wgpu::BufferUsages::VERTEX);
    let col = upload_array(ctx, "c", &a, &vertex).unwrap();
    assert!(col.values.chunks()[0]
        .buffer()
        .usage()
        .contains(wgpu::BufferUsages::VERTEX));
}

#[test]
fn default_readback_types_follow_the_format() {
    let ctx = ctx();
    let o = UploadOptions::default();
    let cases: Vec<(ArrayRef, DataType)> = vec![
        (Arc::new(UInt16Array::from(vec![1, 2])), DataType::UInt32),
        (Arc::new(Int8Array::from(vec![-1, 2])), DataType::Int32),
        (Arc::new(Float32Array::from(vec![0.5])), DataType::Float32),
        (Arc::new(UInt8Array::from(vec![9, 8, 7])), DataType::UInt8),
    ];
    for (array, t) in cases {
        let col = upload_array(ctx, "c", array.as_ref(), &o).unwrap();
        let back = read_back_array(ctx, &col.values).unwrap();
        assert_eq!(back.data_type(), &t);
        assert_eq!(back.len(), array.len());
    }
    let lists: Vec<Option<Vec<f32>>> = vec![Some(vec![1.0, 2.0, 3.0]), None];
    let col = upload_array(ctx, "p", &fsl::<Float32Type>(&lists, 3), &o).unwrap();
    let plain = read_back_array(ctx, &col.values).unwrap();
    assert_eq!(
        plain.data_type(),
        &gpugraph_arrow::default_data_type(VectorFormat::Float32x3)
    );
    assert_eq!(plain.null_count(), 0, "read_back_array applies no mask");
    let masked = read_back_column(ctx, "p", &col, None).unwrap();
    assert_eq!(masked.null_count(), 1);
}
