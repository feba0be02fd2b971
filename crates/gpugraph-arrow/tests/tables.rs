//! GPU tests of dictionaries, record batches and multi-batch tables: dictionary codes and
//! their unification across chunks, explicit string encoding, one chunk per batch (empty and
//! uneven batches kept, order preserved), masks that stay chunk-aligned, both chunk
//! placements, graph import of the uploaded values, and READBACK to Arrow record batches.
//! They run on the selected adapter (lavapipe in CI) and fail, never skip, when there is none.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int8Type, UInt32Type};
use arrow_array::{
    Array, ArrayRef, DictionaryArray, FixedSizeListArray, Float32Array, Int64Array,
    LargeStringArray, RecordBatch, StringArray, StringViewArray, UInt32Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use gpugraph_arrow::{
    dictionary_encode_utf8, dictionary_encode_utf8_chunks, read_back_dictionary,
    read_back_gpu_record_batch, read_back_gpu_table, upload_dictionary, upload_dictionary_chunks,
    upload_record_batch, upload_record_batches, ArrowAdapterError, ChunkPlacement, UploadOptions,
};
use gpugraph_command::CommandGraph;
use gpugraph_tables::{import_gpu_table, GpuRecordBatch, GpuVector, VectorFormat};
use gpugraph_testing::shared_ctx as ctx;

/// The strings of a dictionary array, row by row (`None` for null rows).
fn dictionary_rows(a: &dyn Array) -> Vec<Option<String>> {
    let d = a.as_any_dictionary();
    let values = d.values().as_string::<i32>();
    let keys = d.normalized_keys();
    (0..a.len())
        .map(|i| {
            a.logical_nulls()
                .is_none_or(|n| n.is_valid(i))
                .then(|| values.value(keys[i]).to_string())
        })
        .collect()
}

#[test]
fn dictionaries_of_every_key_type_keep_their_keys() {
    let ctx = ctx();
    let o = UploadOptions::default();
    let values: ArrayRef = Arc::new(StringArray::from(vec!["north", "east", "south", "west"]));
    let check = |a: &dyn Array, keys: Vec<Option<u32>>| {
        let d = upload_dictionary(ctx, "q", a, &o).unwrap();
        assert_eq!(d.dictionary, ["north", "east", "south", "west"]);
        assert_eq!(d.codes.format(), VectorFormat::Uint32);
        let stored: Vec<u32> = keys.iter().map(|k| k.unwrap_or(0)).collect();
        assert_eq!(d.codes.read_back::<u32>(ctx).unwrap(), stored);
        let mask: Vec<u32> = keys.iter().map(|k| u32::from(k.is_some())).collect();
        match &d.validity {
            Some(m) => assert_eq!(m.read_back::<u32>(ctx).unwrap(), mask),
            None => assert!(keys.iter().all(Option::is_some)),
        }
        let back = read_back_dictionary(ctx, "q", &d).unwrap();
        assert_eq!(dictionary_rows(&back), dictionary_rows(a));
    };
    let k8 = vec![Some(3i8), None, Some(0), Some(3), Some(1)];
    let a = DictionaryArray::<Int8Type>::try_new(k8.clone().into(), values.clone()).unwrap();
    check(&a, k8.iter().map(|k| k.map(|x| x as u32)).collect());
    let k16 = vec![Some(2i16), Some(2), Some(0)];
    let a = DictionaryArray::<Int16Type>::try_new(k16.clone().into(), values.clone()).unwrap();
    check(&a, k16.iter().map(|k| k.map(|x| x as u32)).collect());
    let k32: Vec<Option<i32>> = (0..1000).map(|i| (i % 7 != 3).then_some(i % 4)).collect();
    let a = DictionaryArray::<Int32Type>::try_new(k32.clone().into(), values.clone()).unwrap();
    check(&a, k32.iter().map(|k| k.map(|x| x as u32)).collect());
    // Null keys may hold any in-range value; the stored code is 0.
    let garbage = arrow_array::Int32Array::new(
        vec![2, 3, 1].into(),
        Some(arrow_buffer::NullBuffer::from(vec![true, false, true])),
    );
    let a = DictionaryArray::<Int32Type>::try_new(garbage, values.clone()).unwrap();
    check(&a, vec![Some(2), None, Some(1)]);
    let ku = vec![Some(1u32), Some(3)];
    let a = DictionaryArray::<UInt32Type>::try_new(ku.clone().into(), values.clone()).unwrap();
    check(&a.slice(1, 1), vec![Some(3)]);
    check(&a, ku);
    // LargeUtf8 and Utf8View dictionary values read back as Utf8 dictionaries.
    let large: ArrayRef = Arc::new(LargeStringArray::from(vec![
        "north", "east", "south", "west",
    ]));
    let a = DictionaryArray::<Int8Type>::try_new(vec![Some(1i8), None].into(), large).unwrap();
    let d = upload_dictionary(ctx, "q", &a, &o).unwrap();
    let back = read_back_dictionary(ctx, "q", &d).unwrap();
    assert_eq!(back.keys(), &UInt32Array::from(vec![Some(1), None]));
}

#[test]
fn chunked_dictionaries_share_one_dictionary() {
    let ctx = ctx();
    let d1 = DictionaryArray::<Int8Type>::try_new(
        vec![Some(0i8), Some(1), None].into(),
        Arc::new(StringArray::from(vec!["a", "b"])),
    )
    .unwrap();
    let empty = DictionaryArray::<Int8Type>::try_new(
        Vec::<Option<i8>>::new().into(),
        Arc::new(StringArray::from(Vec::<&str>::new())),
    )
    .unwrap();
    let d2 = DictionaryArray::<Int8Type>::try_new(
        vec![Some(0i8), Some(1), Some(2)].into(),
        Arc::new(StringArray::from(vec![Some("c"), Some("a"), None])),
    )
    .unwrap();
    let chunks: [&dyn Array; 3] = [&d1, &empty, &d2];
    let d = upload_dictionary_chunks(ctx, "k", d1.data_type(), &chunks, &UploadOptions::default())
        .unwrap();
    assert_eq!(d.dictionary, ["a", "b", "c"]);
    assert_eq!(d.codes.chunk_lengths(), vec![3, 0, 3]);
    assert_eq!(
        d.codes.read_back::<u32>(ctx).unwrap(),
        vec![0, 1, 0, 2, 0, 0]
    );
    let mask = d.validity.as_ref().unwrap();
    assert_eq!(mask.chunk_lengths(), vec![3, 0, 3]);
    assert_eq!(mask.read_back::<u32>(ctx).unwrap(), vec![1, 1, 0, 1, 1, 0]);
    let back = read_back_dictionary(ctx, "k", &d).unwrap();
    let expected: Vec<Option<String>> = [Some("a"), Some("b"), None, Some("c"), Some("a"), None]
        .iter()
        .map(|s| s.map(String::from))
        .collect();
    assert_eq!(dictionary_rows(&back), expected);
}

#[test]
fn strings_are_dictionary_encoded_explicitly() {
    let ctx = ctx();
    let o = UploadOptions::default();
    let s = StringArray::from(vec![Some("x"), None, Some("y"), Some("x"), Some("")]);
    let d = dictionary_encode_utf8(ctx, "s", &s, &o).unwrap();
    assert_eq!(d.dictionary, ["x", "y", ""]);
    assert_eq!(d.codes.read_back::<u32>(ctx).unwrap(), vec![0, 0, 1, 0, 2]);
    assert_eq!(
        d.validity.as_ref().unwrap().read_back::<u32>(ctx).unwrap(),
        vec![1, 0, 1, 1, 1]
    );
    let back = gpugraph_arrow::read_back_column(ctx, "s", &d.clone().into(), Some(&DataType::Utf8))
        .unwrap();
    assert_eq!(back.to_data(), s.to_data());

    let large = LargeStringArray::from(vec!["y", "z"]);
    let view = StringViewArray::from(vec!["z", "a much longer string than twelve bytes"]);
    let d = dictionary_encode_utf8(ctx, "s", &view, &o).unwrap();
    assert_eq!(d.codes.read_back::<u32>(ctx).unwrap(), vec![0, 1]);
    let chunks: [&dyn Array; 2] = [&large, &large.slice(1, 1)];
    let d = dictionary_encode_utf8_chunks(ctx, "s", &DataType::LargeUtf8, &chunks, &o).unwrap();
    assert_eq!(d.dictionary, ["y", "z"]);
    assert_eq!(d.codes.read_back::<u32>(ctx).unwrap(), vec![0, 1, 1]);
    assert!(d.validity.is_none());
    assert!(matches!(
        dictionary_encode_utf8(ctx, "s", &UInt32Array::from(vec![1]), &o),
        Err(ArrowAdapterError::UnsupportedType { .. })
    ));
    assert!(matches!(
        upload_dictionary(ctx, "s", &s, &o),
        Err(ArrowAdapterError::UnsupportedType { .. })
    ));
}

fn schema() -> SchemaRef {
    let point = DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), 3);
    let category = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::UInt32, false),
        Field::new("value", DataType::Float32, true),
        Field::new("position", point, true),
        Field::new("category", category, true),
        Field::new("label", DataType::Utf8, true),
        Field::new("count", DataType::Int64, false),
        Field::new("flag", DataType::UInt8, false),
    ]))
}

/// A batch of `rows` rows starting at global row `start`; nulls only when `with_nulls`.
fn batch(
    schema: &SchemaRef,
    start: u32,
    rows: u32,
    with_nulls: bool,
    dict: &[&str],
) -> RecordBatch {
    let range = start..start + rows;
    let null = |i: u32| with_nulls && i % 4 == 2;
    let ids: UInt32Array = range.clone().collect();
    let values: Float32Array = range
        .clone()
        .map(|i| (!null(i)).then_some(i as f32 * 0.25))
        .collect();
    let points = FixedSizeListArray::from_iter_primitive::<arrow_array::types::Float32Type, _, _>(
        range
            .clone()
            .map(|i| (!null(i + 1)).then(|| vec![Some(i as f32), Some(-(i as f32)), Some(0.5)])),
        3,
    );
    let keys: arrow_array::Int8Array = range
        .clone()
        .map(|i| (!null(i + 2)).then_some((i as usize % dict.len()) as i8))
        .collect();
    let category =
        DictionaryArray::<Int8Type>::try_new(keys, Arc::new(StringArray::from(dict.to_vec())))
            .unwrap();
    let labels: StringArray = range
        .clone()
        .map(|i| (!null(i + 3)).then(|| format!("label-{}", i % 5)))
        .collect();
    let counts: Int64Array = range
        .clone()
        .map(|i| i64::from(i) * 1000 - 50_000)
        .collect();
    let flags: UInt8Array = range.map(|i| (i % 256) as u8).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(ids),
        Arc::new(values),
        Arc::new(points),
        Arc::new(category),
        Arc::new(labels),
        Arc::new(counts),
        Arc::new(flags),
    ];
    RecordBatch::try_new(schema.clone(), columns).unwrap()
}

fn options() -> UploadOptions {
    UploadOptions::default().narrow_int64().encode_utf8()
}

/// Compares a read-back batch with its source: dictionary columns by their strings (their
/// key type and dictionary change), every other column exactly.
fn assert_same(back: &RecordBatch, source: &RecordBatch) {
    assert_eq!(back.num_rows(), source.num_rows());
    for (i, field) in source.schema().fields().iter().enumerate() {
        let (b, s) = (back.column(i), source.column(i));
        if matches!(field.data_type(), DataType::Dictionary(_, _)) {
            assert_eq!(
                b.data_type(),
                &gpugraph_arrow::readback_data_type(field.data_type())
            );
            assert_eq!(
                dictionary_rows(b),
                dictionary_rows(s),
                "column {}",
                field.name()
            );
        } else {
            assert_eq!(b.to_data(), s.to_data(), "column {}", field.name());
        }
    }
}

#[test]
fn record_batch_round_trip() {
    let ctx = ctx();
    let schema = schema();
    let source = batch(&schema, 0, 301, true, &["a", "b", "c"]);
    let up = upload_record_batch(ctx, &source, &options()).unwrap();
    assert_eq!(up.num_rows(), 301);
    let formats: Vec<VectorFormat> = up
        .values()
        .columns()
        .iter()
        .map(GpuVector::format)
        .collect();
    use VectorFormat::*;
    assert_eq!(
        formats,
        vec![Uint32, Float32, Float32x3, Uint32, Uint32, Sint32, Uint8]
    );
    assert!(up.validity("id").unwrap().is_none());
    assert!(up.validity("value").unwrap().is_some());
    assert_eq!(up.dictionary("category").unwrap().unwrap(), ["a", "b", "c"]);
    assert_eq!(up.dictionary("label").unwrap().unwrap().len(), 5);
    assert!(up.dictionary("value").unwrap().is_none());
    assert!(matches!(
        up.column("missing"),
        Err(ArrowAdapterError::Table(
            gpugraph_tables::TableError::MissingColumn { .. }
        ))
    ));
    let back = up.read_back(ctx).unwrap();
    assert_eq!(
        back.schema(),
        gpugraph_arrow::readback_schema(up.arrow_schema())
    );
    assert_same(&back, &source);
}

#[test]
fn multi_batch_tables_keep_one_chunk_per_batch() {
    let ctx = ctx();
    let schema = schema();
    // Uneven batches, an empty one, nulls only in some, and a different dictionary each.
    let batches = vec![
        batch(&schema, 0, 7, false, &["a", "b"]),
        batch(&schema, 7, 0, false, &["a"]),
        batch(&schema, 7, 300, true, &["c", "a", "d"]),
        batch(&schema, 307, 1, false, &["b"]),
    ];
    for placement in [
        ChunkPlacement::BufferPerChunk,
        ChunkPlacement::SharedPerColumn,
    ] {
        let o = options().with_placement(placement);
        let table = upload_record_batches(ctx, schema.clone(), &batches, &o).unwrap();
        assert_eq!(table.num_batches(), 4);
        assert_eq!(table.num_rows(), 308);
        let value = table.column("value").unwrap();
        assert_eq!(value.values.chunk_lengths(), vec![7, 0, 300, 1]);
        let mask = value.validity.as_ref().unwrap();
        assert_eq!(mask.chunk_lengths(), vec![7, 0, 300, 1]);
        let m: Vec<u32> = mask.read_back(ctx).unwrap();
        assert!(
            m[..7].iter().all(|&x| x == 1),
            "batches without nulls get all-ones chunks"
        );
        assert_eq!(m.iter().filter(|&&x| x == 0).count(), 75);
        assert_eq!(
            table.dictionary("category").unwrap().unwrap(),
            ["a", "b", "c", "d"]
        );
        let ids = table.column("id").unwrap().values;
        assert_eq!(
            ids.read_back::<u32>(ctx).unwrap(),
            (0..308).collect::<Vec<u32>>()
        );
        let shared = ids.chunks()[0].shares_buffer(&ids.chunks()[2]);
        assert_eq!(shared, placement == ChunkPlacement::SharedPerColumn);
        let back = table.read_back(ctx).unwrap();
        assert_eq!(back.len(), 4);
        for (b, s) in back.iter().zip(&batches) {
            assert_same(b, s);
        }
        assert_eq!(table.batch(2).unwrap().read_back(ctx).unwrap(), back[2]);
        assert!(table.batch(4).is_none());

        // The values table imports into a graph: one hazard chain per allocation.
        let mut graph = CommandGraph::new("arrow-import", &ctx.device);
        let usage = wgpu::BufferUsages::STORAGE;
        let imported = import_gpu_table(&mut graph, "t", table.values(), None, usage).unwrap();
        assert_eq!(imported.len(), 4);
        assert_eq!(imported[2].column("position").unwrap().len(), 300);
    }
}

#[test]
fn empty_tables_and_plain_gpu_readback() {
    let ctx = ctx();
    let schema = schema();
    let table = upload_record_batches(ctx, schema.clone(), &[], &options()).unwrap();
    assert_eq!(table.num_batches(), 0);
    assert!(table.read_back(ctx).unwrap().is_empty());
    assert_eq!(
        table.column("position").unwrap().values.format(),
        VectorFormat::Float32x3
    );

    // Plain GPU containers read back with default types, one record batch per chunk.
    let batches = vec![
        batch(&schema, 0, 5, false, &["a"]),
        batch(&schema, 5, 0, false, &["a"]),
        batch(&schema, 5, 3, false, &["a"]),
    ];
    let table = upload_record_batches(ctx, schema.clone(), &batches, &options()).unwrap();
    let plain = read_back_gpu_table(ctx, table.values()).unwrap();
    assert_eq!(
        plain.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(),
        vec![5, 0, 3]
    );
    assert_eq!(
        plain[0].schema().field(2).data_type(),
        &gpugraph_arrow::default_data_type(VectorFormat::Float32x3)
    );
    assert_eq!(
        plain[2].column(0).as_primitive::<UInt32Type>().values(),
        &[5, 6, 7]
    );
    assert_eq!(
        plain[2].column(5).as_primitive::<Int32Type>().values(),
        &[-45_000, -44_000, -43_000]
    );

    let ids = GpuVector::upload_chunks(ctx, &[&[1u32, 2][..], &[3u32][..]], VectorFormat::Uint32)
        .unwrap();
    let vals = GpuVector::upload_chunks(
        ctx,
        &[&[0.5f32, 1.5][..], &[2.5f32][..]],
        VectorFormat::Float32,
    )
    .unwrap();
    let gb = GpuRecordBatch::from_columns([("id", ids.clone()), ("v", vals)]).unwrap();
    let rbs = read_back_gpu_record_batch(ctx, &gb).unwrap();
    assert_eq!(rbs.len(), 2);
    assert_eq!(
        rbs[1]
            .column(1)
            .as_primitive::<arrow_array::types::Float32Type>()
            .values(),
        &[2.5]
    );
    let uneven =
        GpuVector::upload_chunks(ctx, &[&[1u32][..], &[2u32, 3][..]], VectorFormat::Uint32)
            .unwrap();
    let gb = GpuRecordBatch::from_columns([("id", ids), ("w", uneven)]).unwrap();
    assert!(matches!(
        read_back_gpu_record_batch(ctx, &gb),
        Err(ArrowAdapterError::ChunkTopologyMismatch { column, .. }) if column == "w"
    ));
}
