//! Typed errors of the Arrow adapters: unsupported types, conversions left off, out-of-range
//! 64-bit values, rejected nulls, null list components, mismatched batches, and readback
//! requests the stored data cannot satisfy. Every error names the column (and row/value
//! where there is one); nothing panics. GPU tests run on the selected adapter (lavapipe in
//! CI) and fail, never skip, when there is none.

use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, Decimal128Array, FixedSizeListArray, Float32Array, Float64Array,
    Int32Array, Int64Array, ListArray, RecordBatch, StringArray, StructArray, TimestampSecondArray,
    UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use gpugraph_arrow::{
    read_back_column, read_back_dictionary, upload_array, upload_array_chunks, upload_record_batch,
    upload_record_batches, ArrowAdapterError, DictionaryColumn, GpuColumn, UploadOptions,
    ValidityPolicy,
};
use gpugraph_tables::{GpuVector, VectorFormat};
use gpugraph_testing::shared_ctx as ctx;

fn upload_err(array: &dyn Array, options: &UploadOptions) -> ArrowAdapterError {
    upload_array(ctx(), "col", array, options).unwrap_err()
}

#[test]
fn unsupported_types_name_the_column_and_type() {
    let o = UploadOptions::default();
    let list = ListArray::from_iter_primitive::<Float32Type, _, _>(vec![Some(vec![Some(1.0)])]);
    let fsl5 = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
        vec![Some(vec![Some(1.0); 5])],
        5,
    );
    let strukt = StructArray::from(vec![(
        Arc::new(Field::new("x", DataType::Int32, false)),
        Arc::new(Int32Array::from(vec![1])) as ArrayRef,
    )]);
    let cases: Vec<(ArrayRef, &str)> = vec![
        (Arc::new(BinaryArray::from(vec![&b"ab"[..]])), "Binary"),
        (Arc::new(list), "List"),
        (Arc::new(fsl5), "FixedSizeList"),
        (Arc::new(strukt), "Struct"),
        (Arc::new(Decimal128Array::from(vec![1i128])), "Decimal128"),
    ];
    for (array, name) in cases {
        let err = upload_err(array.as_ref(), &o);
        assert!(
            matches!(&err, ArrowAdapterError::UnsupportedType { column, data_type, .. }
                if column == "col" && data_type == array.data_type()),
            "{err}"
        );
        let text = err.to_string();
        assert!(text.contains("'col'") && text.contains(name), "{text}");
    }
}

#[test]
fn wide_types_are_rejected_unless_their_option_is_on() {
    let o = UploadOptions::default();
    let cases: Vec<(ArrayRef, &str)> = vec![
        (
            Arc::new(Int64Array::from(vec![1])),
            "Int64Policy::NarrowChecked",
        ),
        (
            Arc::new(UInt64Array::from(vec![1])),
            "Int64Policy::NarrowChecked",
        ),
        (
            Arc::new(TimestampSecondArray::from(vec![1])),
            "Int64Policy::NarrowChecked",
        ),
        (
            Arc::new(Float64Array::from(vec![1.0])),
            "Float64Policy::RoundToFloat32",
        ),
        (
            Arc::new(StringArray::from(vec!["a"])),
            "Utf8Policy::DictionaryEncode",
        ),
    ];
    for (array, option) in cases {
        let err = upload_err(array.as_ref(), &o);
        assert!(
            matches!(&err, ArrowAdapterError::ConversionNotEnabled { column, option: o, .. }
                if column == "col" && o.starts_with(option)),
            "{err}"
        );
    }
}

#[test]
fn out_of_range_values_name_the_first_offender() {
    let o = UploadOptions::default().narrow_int64().round_float64();
    let a = Int64Array::from(vec![
        Some(0),
        None,
        Some(i64::from(i32::MAX) + 1),
        Some(-1 << 40),
    ]);
    let err = upload_err(&a, &o);
    assert!(
        matches!(&err, ArrowAdapterError::ValueOutOfRange { column, row: 2, value, target }
            if column == "col" && value == "2147483648" && target == "sint32"),
        "{err}"
    );
    assert!(err.to_string().contains("row 2"), "{err}");
    let a = Int64Array::from(vec![i64::from(i32::MIN) - 1]);
    assert!(matches!(
        upload_err(&a, &o),
        ArrowAdapterError::ValueOutOfRange { row: 0, .. }
    ));
    let a = UInt64Array::from(vec![1, u64::from(u32::MAX) + 7]);
    assert!(matches!(
        upload_err(&a, &o),
        ArrowAdapterError::ValueOutOfRange { row: 1, target, .. } if target == "uint32"
    ));
    let a = TimestampSecondArray::from(vec![4_102_444_800]); // 2100-01-01
    assert!(matches!(
        upload_err(&a, &o),
        ArrowAdapterError::ValueOutOfRange { .. }
    ));
    let a = Float64Array::from(vec![1.0, -1e39]);
    assert!(matches!(
        upload_err(&a, &o),
        ArrowAdapterError::ValueOutOfRange { row: 1, target, .. } if target == "float32"
    ));

    // Rows count over all chunks of a column.
    let c0 = Int64Array::from(vec![1, 2, 3]);
    let c1 = Int64Array::from(vec![4, 1 << 33]);
    let chunks: [&dyn Array; 2] = [&c0, &c1];
    let err = upload_array_chunks(ctx(), "col", &DataType::Int64, &chunks, &o).unwrap_err();
    assert!(
        matches!(err, ArrowAdapterError::ValueOutOfRange { row: 4, .. }),
        "{err}"
    );
}

#[test]
fn null_policies_and_null_components() {
    let reject = UploadOptions::default().with_validity(ValidityPolicy::RejectNulls);
    let a = UInt32Array::from(vec![Some(1), Some(2), None]);
    assert!(matches!(
        upload_err(&a, &reject),
        ArrowAdapterError::NullsRejected { column, row: 2 } if column == "col"
    ));
    let ok = UInt32Array::from(vec![1, 2]);
    assert!(upload_array(ctx(), "col", &ok, &reject)
        .unwrap()
        .validity
        .is_none());
    let fsl = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
        vec![
            Some(vec![Some(1.0), Some(2.0)]),
            Some(vec![None, Some(4.0)]),
        ],
        2,
    );
    assert!(matches!(
        upload_err(&fsl, &UploadOptions::default()),
        ArrowAdapterError::NullComponent {
            row: 1,
            component: 0,
            ..
        }
    ));
}

#[test]
fn mismatched_batches_and_chunks() {
    let ctx = ctx();
    let o = UploadOptions::default();
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::UInt32, false)]));
    let good =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(UInt32Array::from(vec![1]))]).unwrap();
    let other = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)]));
    let bad = RecordBatch::try_new(other, vec![Arc::new(Int32Array::from(vec![1]))]).unwrap();
    let err = upload_record_batches(ctx, schema, &[good.clone(), bad], &o).unwrap_err();
    assert!(
        matches!(&err, ArrowAdapterError::SchemaMismatch { batch: 1, reason } if reason.contains("'x'")),
        "{err}"
    );
    let f = Float32Array::from(vec![1.0]);
    let chunks: [&dyn Array; 2] = [&UInt32Array::from(vec![1]), &f];
    let err = upload_array_chunks(ctx, "x", &DataType::UInt32, &chunks, &o).unwrap_err();
    assert!(
        matches!(err, ArrowAdapterError::SchemaMismatch { batch: 1, .. }),
        "{err}"
    );
    // A record batch with an unsupported column names it.
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::UInt32, false),
        Field::new("name", DataType::Utf8, false),
    ]));
    let rb = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt32Array::from(vec![1])),
            Arc::new(StringArray::from(vec!["a"])),
        ],
    )
    .unwrap();
    assert!(matches!(
        upload_record_batch(ctx, &rb, &o),
        Err(ArrowAdapterError::ConversionNotEnabled { column, .. }) if column == "name"
    ));
}

#[test]
fn readback_rejects_what_the_data_cannot_hold() {
    let ctx = ctx();
    let o = UploadOptions::default();
    let col = upload_array(ctx, "n", &Int32Array::from(vec![1, 300, -2]), &o).unwrap();
    let err = read_back_column(ctx, "n", &col, Some(&DataType::Float32)).unwrap_err();
    assert!(
        matches!(&err, ArrowAdapterError::ReadbackType { column, stored, .. } if column == "n" && stored == "sint32"),
        "{err}"
    );
    let err = read_back_column(ctx, "n", &col, Some(&DataType::Int8)).unwrap_err();
    assert!(
        matches!(&err, ArrowAdapterError::ValueOutOfRange { row: 1, value, .. } if value == "300"),
        "{err}"
    );
    // A mask whose chunks do not line up with the values.
    let bad_mask = GpuColumn {
        validity: Some(
            GpuVector::upload_chunks(ctx, &[&[1u32, 1][..]], VectorFormat::Uint32).unwrap(),
        ),
        ..col.clone()
    };
    assert!(matches!(
        read_back_column(ctx, "n", &bad_mask, None),
        Err(ArrowAdapterError::ValidityMismatch { .. })
    ));
    let float_mask = GpuColumn {
        validity: Some(
            GpuVector::upload_chunks(ctx, &[&[1.0f32; 3][..]], VectorFormat::Float32).unwrap(),
        ),
        ..col
    };
    assert!(matches!(
        read_back_column(ctx, "n", &float_mask, None),
        Err(ArrowAdapterError::ValidityMismatch { .. })
    ));
    // Codes beyond the dictionary (e.g. written by a GPU kernel) are caught on readback.
    let codes = GpuVector::upload_chunks(ctx, &[&[0u32, 5][..]], VectorFormat::Uint32).unwrap();
    let d = DictionaryColumn {
        codes,
        dictionary: vec!["a".into(), "b".into()],
        validity: None,
    };
    assert!(matches!(
        read_back_dictionary(ctx, "d", &d),
        Err(ArrowAdapterError::CodeOutOfRange {
            row: 1,
            code: 5,
            len: 2,
            ..
        })
    ));
}
