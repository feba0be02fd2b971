//! GPU tests of the public contract of gpugraph-tables: uploads and readbacks, strided ranges,
//! chunked vectors, ownership, schemas and batches, and graph import (shared allocations,
//! rejected layouts, a compiled copy graph). They run real commands on the selected adapter
//! (lavapipe in CI) and fail, never skip, when there is none.

use gpugraph_command::{CommandGraph, EncodeOptions, GraphError};
use gpugraph_tables::{
    import_gpu_data, import_gpu_table, import_gpu_vector, import_record_batch, readback, GpuData,
    GpuField, GpuRecordBatch, GpuSchema, GpuTable, GpuVector, GraphImporter, InterleavedAttribute,
    ListKind, Ownership, TableError, VectorFormat, VectorKind,
};
use gpugraph_testing::shared_ctx as ctx;
use wgpu::BufferUsages;

const NONE: BufferUsages = BufferUsages::empty();
const GRAPH_USAGE: BufferUsages = BufferUsages::STORAGE
    .union(BufferUsages::COPY_SRC)
    .union(BufferUsages::COPY_DST);

fn seq(n: u32, salt: u32) -> Vec<u32> {
    (0..n)
        .map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(salt))
        .collect()
}

fn f16_bits(x: f32) -> u16 {
    // Exact for the small test values used here (normal, short mantissas).
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    if x == 0.0 {
        return sign;
    }
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    let mant = ((b >> 13) & 0x3ff) as u16;
    sign | ((exp as u16) << 10) | mant
}

#[test]
fn uint32_round_trip_and_empty_upload() {
    let ctx = ctx();
    let values = seq(1000, 7);
    let data = GpuData::upload(ctx, &values, VectorFormat::Uint32, NONE).unwrap();
    assert_eq!(data.len(), 1000);
    assert_eq!(data.byte_offset(), 0);
    assert_eq!(data.byte_stride(), 4);
    assert_eq!(data.ownership(), Ownership::Owned);
    let usage = data.buffer().usage();
    assert!(usage.contains(BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST));
    assert_eq!(data.read_back::<u32>(ctx).unwrap(), values);

    let empty = GpuData::upload::<u32>(ctx, &[], VectorFormat::Uint32, NONE).unwrap();
    assert!(empty.is_empty());
    assert_eq!(
        empty.buffer().size(),
        4,
        "empty uploads get a 4-byte buffer"
    );
    assert!(empty.read_back::<u32>(ctx).unwrap().is_empty());

    let vertex = GpuData::upload(
        ctx,
        &values[..3],
        VectorFormat::Uint32,
        BufferUsages::VERTEX,
    )
    .unwrap();
    assert!(vertex.buffer().usage().contains(BufferUsages::VERTEX));
    assert!(matches!(
        GpuData::upload(ctx, &values, VectorFormat::Uint32, BufferUsages::MAP_READ),
        Err(TableError::InvalidUsage { .. })
    ));
}

#[test]
fn float32x3_unorm8x4_float16_round_trips() {
    let ctx = ctx();
    let points: Vec<[f32; 3]> = (0..257)
        .map(|i| [i as f32, -(i as f32) * 0.5, 1.0 / (i as f32 + 1.0)])
        .collect();
    let data = GpuData::upload(ctx, &points, VectorFormat::Float32x3, NONE).unwrap();
    assert_eq!(data.len(), 257);
    assert_eq!(data.row_byte_length(), 12);
    assert_eq!(data.read_back::<[f32; 3]>(ctx).unwrap(), points);
    // The same bytes as flat floats.
    let flat: Vec<f32> = points.iter().flatten().copied().collect();
    assert_eq!(data.read_back::<f32>(ctx).unwrap(), flat);
    // Flat input is accepted when it is whole rows; otherwise rejected by name.
    let again = GpuData::upload(ctx, &flat, VectorFormat::Float32x3, NONE).unwrap();
    assert_eq!(again.len(), 257);
    assert!(matches!(
        GpuData::upload(ctx, &flat[..4], VectorFormat::Float32x3, NONE),
        Err(TableError::UploadSizeMismatch {
            bytes: 16,
            row_bytes: 12,
            ..
        })
    ));

    let colors: Vec<[u8; 4]> = (0..=255u8).map(|i| [i, 255 - i, i / 2, 255]).collect();
    let data = GpuData::upload(ctx, &colors, VectorFormat::Unorm8x4, NONE).unwrap();
    assert_eq!(data.len(), 256);
    assert_eq!(data.read_back::<[u8; 4]>(ctx).unwrap(), colors);

    // Three float16 rows: 6 bytes, padded to an 8-byte buffer.
    let halves: Vec<u16> = [1.0f32, -2.0, 0.5].iter().map(|&x| f16_bits(x)).collect();
    assert_eq!(halves, vec![0x3C00, 0xC000, 0x3800]);
    let data = GpuData::upload(ctx, &halves, VectorFormat::Float16, NONE).unwrap();
    assert_eq!((data.len(), data.buffer().size()), (3, 8));
    assert_eq!(data.read_back::<u16>(ctx).unwrap(), halves);
    assert!(matches!(
        data.read_back::<u32>(ctx),
        Err(TableError::ElementSizeMismatch {
            bytes: 6,
            element_bytes: 4
        })
    ));
}

#[test]
fn strided_ranges_read_back_row_payloads() {
    let ctx = ctx();
    // 100 records of four u32 words: [id, x, y, z].
    let records: Vec<[u32; 4]> = (0..100u32)
        .map(|i| [i, 1000 + i, 2000 + i, 3000 + i])
        .collect();
    let owner = GpuData::upload(ctx, &records, VectorFormat::Uint32x4, NONE).unwrap();

    let ys = GpuData::borrowed(owner.buffer(), 8, 100, VectorFormat::Uint32, 16).unwrap();
    assert_eq!(ys.ownership(), Ownership::Borrowed);
    assert!(!ys.is_packed());
    assert_eq!(ys.byte_span(), 99 * 16 + 4);
    let expected: Vec<u32> = (0..100).map(|i| 2000 + i).collect();
    assert_eq!(ys.read_back::<u32>(ctx).unwrap(), expected);

    // x and y together as uint32x2 rows, 16 bytes apart.
    let xy = owner.sibling(4, 100, VectorFormat::Uint32x2, 16).unwrap();
    assert_eq!(xy.ownership(), Ownership::Owned, "siblings share ownership");
    let got = xy.read_back::<[u32; 2]>(ctx).unwrap();
    assert_eq!(got[42], [1042, 2042]);

    // Rows 10..13 of the strided range.
    let part = ys.slice(10..13).unwrap();
    assert_eq!(part.byte_offset(), 8 + 10 * 16);
    assert_eq!(part.read_back::<u32>(ctx).unwrap(), vec![2010, 2011, 2012]);

    // A float16 field at byte offset 2 of 8-byte records (unaligned to 4 for the copy).
    let halves: Vec<u16> = (0..40).collect();
    let h = GpuData::upload(ctx, &halves, VectorFormat::Float16, NONE).unwrap();
    let odd = h.sibling(2, 10, VectorFormat::Float16, 8).unwrap();
    let want: Vec<u16> = (0..10).map(|i| 1 + 4 * i).collect();
    assert_eq!(odd.read_back::<u16>(ctx).unwrap(), want);
}

#[test]
fn ranges_that_do_not_fit_are_rejected() {
    let ctx = ctx();
    let data = GpuData::upload(ctx, &[1u32, 2, 3, 4], VectorFormat::Uint32, NONE).unwrap();
    let buffer = data.buffer();
    let err = GpuData::borrowed(buffer, 8, 3, VectorFormat::Uint32, 4).unwrap_err();
    assert!(matches!(
        err,
        TableError::RangeOutOfBounds {
            byte_offset: 8,
            byte_span: 12,
            buffer_size: 16
        }
    ));
    assert!(matches!(
        GpuData::borrowed(buffer, 0, 2, VectorFormat::Uint32x2, 4),
        Err(TableError::StrideTooSmall { .. })
    ));
    assert!(matches!(
        GpuData::borrowed(buffer, 2, 1, VectorFormat::Uint32, 4),
        Err(TableError::Misaligned {
            what: "byte offset",
            ..
        })
    ));
    assert!(matches!(
        data.slice(2..5),
        Err(TableError::RowsOutOfRange {
            start: 2,
            end: 5,
            length: 4
        })
    ));
    assert!(matches!(
        data.sibling(0, 2, VectorFormat::Uint32x4, 16),
        Err(TableError::RangeOutOfBounds { .. })
    ));
    // A buffer without COPY_SRC cannot be read back.
    let plain = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("no-copy-src"),
        size: 16,
        usage: BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let d = GpuData::borrowed_packed(&plain, 0, 4, VectorFormat::Uint32).unwrap();
    assert!(matches!(
        d.read_back::<u32>(ctx),
        Err(TableError::MissingUsage {
            operation: "readback",
            ..
        })
    ));
}

#[test]
fn owned_buffers_are_destroyed_once_by_the_last_owner() {
    let ctx = ctx();
    let vector =
        GpuVector::upload_chunks_shared(ctx, &[&[1u32, 2][..], &[3, 4, 5]], VectorFormat::Uint32)
            .unwrap();
    let buffer = vector.chunks()[0].buffer().clone();
    let borrowed = vector.chunks()[1].to_borrowed();
    assert_eq!(borrowed.ownership(), Ownership::Borrowed);
    let second = vector.chunks()[1].clone();
    drop(vector);
    // One co-owner (`second`) is left: the buffer is alive.
    assert_eq!(second.read_back::<u32>(ctx).unwrap(), vec![3, 4, 5]);
    drop(borrowed); // Borrowed ranges never destroy.
    assert_eq!(
        readback::read_bytes(&ctx.device, &ctx.queue, &buffer, 0, 8).unwrap(),
        bytemuck::cast_slice::<u32, u8>(&[1, 2])
    );
    drop(second);
    // The last owner dropped: the buffer is destroyed, and reading it is a typed error.
    assert!(matches!(
        readback::read_bytes(&ctx.device, &ctx.queue, &buffer, 0, 8),
        Err(TableError::Readback { .. })
    ));

    // A caller-owned buffer wrapped as borrowed survives the wrapper.
    let own = GpuData::upload(ctx, &[9u32, 8], VectorFormat::Uint32, NONE).unwrap();
    drop(GpuData::borrowed_packed(own.buffer(), 0, 2, VectorFormat::Uint32).unwrap());
    assert_eq!(own.read_back::<u32>(ctx).unwrap(), vec![9, 8]);
}

#[test]
fn vectors_with_empty_and_uneven_chunks() {
    let ctx = ctx();
    let a = seq(3, 1);
    let c = seq(1, 2);
    let d = seq(300, 3);
    let chunks: [&[u32]; 5] = [&a, &[], &c, &d, &[]];
    let expected: Vec<u32> = chunks.concat();
    for shared in [false, true] {
        let v = if shared {
            GpuVector::upload_chunks_shared(ctx, &chunks, VectorFormat::Uint32).unwrap()
        } else {
            GpuVector::upload_chunks(ctx, &chunks, VectorFormat::Uint32).unwrap()
        };
        assert_eq!(v.num_chunks(), 5);
        assert_eq!(v.chunk_lengths(), vec![3, 0, 1, 300, 0]);
        assert_eq!(v.len(), 304);
        assert_eq!(v.kind(), VectorKind::Fixed);
        assert_eq!(
            v.read_back::<u32>(ctx).unwrap(),
            expected,
            "shared={shared}"
        );
        let one_buffer = v.chunks().iter().all(|ch| ch.shares_buffer(&v.chunks()[0]));
        assert_eq!(one_buffer, shared);
        if shared {
            let align = ctx.device.limits().min_storage_buffer_offset_alignment as u64;
            assert!(v.chunks().iter().all(|ch| ch.byte_offset() % align == 0));
        }
    }
    let empty = GpuVector::empty(VectorFormat::Float32);
    assert!(empty.is_empty());
    assert!(empty.read_back::<f32>(ctx).unwrap().is_empty());

    // Mixed formats are rejected with the chunk index.
    let u = GpuData::upload(ctx, &a, VectorFormat::Uint32, NONE).unwrap();
    let f = GpuData::upload(ctx, &[1.0f32], VectorFormat::Float32, NONE).unwrap();
    assert!(matches!(
        GpuVector::from_chunks(VectorFormat::Uint32, vec![u.clone(), u, f]),
        Err(TableError::ChunkFormatMismatch {
            chunk: 2,
            expected: VectorFormat::Uint32,
            actual: VectorFormat::Float32
        })
    ));
}

#[test]
fn chunks_sharing_a_buffer_import_as_one_handle() {
    let ctx = ctx();
    let base = GpuData::upload(ctx, &seq(64, 5), VectorFormat::Uint32, NONE).unwrap();
    let other = GpuData::upload(ctx, &seq(8, 6), VectorFormat::Uint32, NONE).unwrap();
    let shared = GpuVector::from_chunks(
        VectorFormat::Uint32,
        vec![base.slice(0..10).unwrap(), base.slice(20..30).unwrap()],
    )
    .unwrap();
    let mixed = GpuVector::from_chunks(
        VectorFormat::Uint32,
        vec![
            base.slice(40..44).unwrap(),
            other.clone(),
            base.slice(50..50).unwrap(),
        ],
    )
    .unwrap();

    let mut graph = CommandGraph::new("import-test", &ctx.device);
    let view = import_gpu_vector(&mut graph, "shared", &shared, GRAPH_USAGE).unwrap();
    assert_eq!(view.chunks().len(), 2);
    assert_eq!(view.buffers().len(), 1);
    assert_eq!(view.chunks()[0].buffer(), view.chunks()[1].buffer());
    assert_eq!(
        graph.buffer_id(view.chunks()[0].buffer()).unwrap(),
        "shared"
    );
    assert_eq!(
        graph
            .buffer_descriptor(view.chunks()[0].buffer())
            .unwrap()
            .byte_length,
        base.buffer().size(),
        "the whole allocation is imported"
    );
    assert_eq!(view.chunks()[1].byte_offset(), 80);
    assert_eq!(view.chunks()[1].len(), 10);
    assert_eq!(view.len(), 20);

    let view = import_gpu_vector(&mut graph, "mixed", &mixed, GRAPH_USAGE).unwrap();
    let ids: Vec<&str> = view
        .chunks()
        .iter()
        .map(|c| graph.buffer_id(c.buffer()).unwrap())
        .collect();
    // The shared buffer was imported by the first call; the graph keeps one handle per
    // physical buffer, so the second vector's chunks in it reuse "shared".
    assert_eq!(ids, vec!["shared", "mixed-buffer-1", "shared"]);
    assert_eq!(view.chunks()[2].len(), 0, "empty chunks keep their slot");
    assert_eq!(view.chunks()[2].byte_offset(), 200);

    // One importer reuses handles across imports: data in `base` maps to the first handle.
    let mut graph = CommandGraph::new("importer-test", &ctx.device);
    let mut importer = GraphImporter::new(&mut graph);
    let a = importer.import_vector("a", &shared, GRAPH_USAGE).unwrap();
    let b = importer
        .import_data("b", &base.slice(60..64).unwrap(), GRAPH_USAGE)
        .unwrap();
    assert_eq!(a.chunks()[0].buffer(), b.buffer());
    assert_eq!(importer.handle_of(base.buffer()), Some(b.buffer()));
    assert!(matches!(
        importer.import_data("c", &base, GRAPH_USAGE | BufferUsages::VERTEX),
        Err(TableError::SharedBufferUsage { .. })
    ));
    assert_eq!(importer.graph().buffer_id(b.buffer()).unwrap(), "a");

    // Usage the buffer lacks: a wrapped graph error naming the id.
    let mut graph = CommandGraph::new("usage-test", &ctx.device);
    let err = import_gpu_data(&mut graph, "ids", &other, BufferUsages::INDEX).unwrap_err();
    assert!(
        matches!(&err, TableError::Graph(GraphError::BufferMissingUsage { id, .. }) if id == "ids"),
        "{err}"
    );
    // Ids already taken in the graph are a wrapped duplicate-id error.
    import_gpu_data(&mut graph, "ids", &other, GRAPH_USAGE).unwrap();
    assert!(matches!(
        import_gpu_data(&mut graph, "ids", &base, GRAPH_USAGE),
        Err(TableError::Graph(GraphError::DuplicateId { .. }))
    ));
}

#[test]
fn imported_views_drive_a_compiled_copy_graph() {
    let ctx = ctx();
    let src_values = seq(200, 11);
    let chunks: [&[u32]; 3] = [&src_values[..50], &src_values[50..120], &src_values[120..]];
    let src = GpuVector::upload_chunks_shared(ctx, &chunks, VectorFormat::Uint32).unwrap();
    let poison = vec![0xDEAD_BEEFu32; 80];
    let dst = GpuData::upload(ctx, &poison, VectorFormat::Uint32, NONE).unwrap();
    // Copy chunk 1 (70 rows) into rows 5..75 of dst.
    let dst_range = dst.slice(5..75).unwrap();

    let mut graph = CommandGraph::new("copy-chunk", &ctx.device);
    let src_view = import_gpu_vector(&mut graph, "src", &src, GRAPH_USAGE).unwrap();
    let dst_view = import_gpu_data(&mut graph, "dst", &dst_range, GRAPH_USAGE).unwrap();
    assert_eq!(dst_view.byte_offset(), 20);
    assert_eq!(dst_view.format(), VectorFormat::Uint32);
    graph
        .add_view_copy("copy-chunk-1", src_view.chunks()[1], dst_view)
        .unwrap();
    let mut compiled = graph.compile().unwrap();
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    compiled
        .encode(&mut encoder, &EncodeOptions::default())
        .unwrap();
    ctx.queue.submit([encoder.finish()]);
    drop(compiled); // The graph borrows imports: dropping it destroys nothing of ours.

    let mut expected = poison.clone();
    expected[5..75].copy_from_slice(&src_values[50..120]);
    assert_eq!(dst.read_back::<u32>(ctx).unwrap(), expected);
    assert_eq!(src.read_back::<u32>(ctx).unwrap(), src_values);
}

/// `submit_and_read` reads what the caller's recorded work wrote, in that one submission
/// (the copy and the readback share it), widens unaligned ranges like `read_bytes`, still
/// submits the work when every range is empty, and rejects a bad range before submitting.
#[test]
fn submit_and_read_reads_after_the_recorded_work_in_one_submission() {
    // A device of its own: the other tests' submissions would take numbers meanwhile.
    let ctx = &gpugraph_testing::ctx();
    let values = seq(64, 3);
    let src = GpuData::upload(ctx, &values, VectorFormat::Uint32, NONE).unwrap();
    let dst = GpuData::upload(ctx, &[0xDEAD_BEEFu32; 64], VectorFormat::Uint32, NONE).unwrap();
    let record = || {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(src.buffer(), 0, dst.buffer(), 0, 256);
        encoder
    };
    let index = |i: wgpu::SubmissionIndex| -> u64 {
        format!("{i:?}")
            .chars()
            .filter(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap()
    };
    let empty = || {
        ctx.queue.submit([ctx
            .device
            .create_command_encoder(&Default::default())
            .finish()])
    };
    let before = index(empty());
    let read = readback::submit_and_read(
        &ctx.device,
        &ctx.queue,
        record(),
        &[(dst.buffer(), 4, 8), (dst.buffer(), 250, 6)],
    )
    .unwrap();
    // wgpu numbers map requests like submissions: one submission, one map, this empty one.
    assert_eq!(
        index(empty()) - before,
        3,
        "one submission for the work and its readback"
    );
    let bytes: Vec<u8> = bytemuck::cast_slice(&values).to_vec();
    assert_eq!(read, vec![bytes[4..12].to_vec(), bytes[250..256].to_vec()]);

    // No range to read: the work still runs.
    let dst2 = GpuData::upload(ctx, &[0u32; 64], VectorFormat::Uint32, NONE).unwrap();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(src.buffer(), 0, dst2.buffer(), 0, 256);
    let none =
        readback::submit_and_read(&ctx.device, &ctx.queue, encoder, &[(dst2.buffer(), 0, 0)])
            .unwrap();
    assert_eq!(none, vec![Vec::<u8>::new()]);
    assert_eq!(dst2.read_back::<u32>(ctx).unwrap(), values);

    // A range past the buffer is an error, and nothing was submitted.
    let before = index(empty());
    assert!(matches!(
        readback::submit_and_read(&ctx.device, &ctx.queue, record(), &[(dst.buffer(), 252, 8)]),
        Err(TableError::RangeOutOfBounds { .. })
    ));
    assert_eq!(index(empty()) - before, 1);
}

#[test]
fn record_batches_validate_columns_and_row_counts() {
    let ctx = ctx();
    let ids =
        GpuVector::from(GpuData::upload(ctx, &[1u32, 2, 3], VectorFormat::Uint32, NONE).unwrap());
    let xs = GpuVector::upload_chunks(
        ctx,
        &[&[1.0f32, 2.0][..], &[3.0, 4.0]],
        VectorFormat::Float32,
    )
    .unwrap();
    let err = GpuRecordBatch::from_columns([("id", ids.clone()), ("x", xs.clone())]).unwrap_err();
    assert!(
        matches!(&err, TableError::RowCountMismatch { column, rows: 4, reference, expected: 3 } if column == "x" && reference == "id"),
        "{err}"
    );
    assert!(err.to_string().contains("column x has 4 rows"), "{err}");

    let schema = GpuSchema::new(vec![
        GpuField::new("id", VectorFormat::Uint32),
        GpuField::new("x", VectorFormat::Uint32),
    ])
    .unwrap();
    let xs3 = GpuVector::from(
        GpuData::upload(ctx, &[1.0f32, 2.0, 3.0], VectorFormat::Float32, NONE).unwrap(),
    );
    assert!(matches!(
        GpuRecordBatch::new(schema.clone(), vec![ids.clone(), xs3.clone()]),
        Err(TableError::ColumnTypeMismatch { column, .. }) if column == "x"
    ));
    assert!(matches!(
        GpuRecordBatch::new(schema, vec![ids.clone()]),
        Err(TableError::ColumnCountMismatch {
            fields: 2,
            columns: 1
        })
    ));

    let batch = GpuRecordBatch::from_columns([("id", ids.clone()), ("x", xs3.clone())]).unwrap();
    assert_eq!(batch.num_rows(), 3);
    assert!(matches!(
        batch.column("y"),
        Err(TableError::MissingColumn { column, .. }) if column == "y"
    ));
    let ids2 =
        GpuVector::from(GpuData::upload(ctx, &[4u32, 5], VectorFormat::Uint32, NONE).unwrap());
    let xs2 =
        GpuVector::from(GpuData::upload(ctx, &[4.0f32, 5.0], VectorFormat::Float32, NONE).unwrap());
    let empty = GpuRecordBatch::from_columns([
        ("id", GpuVector::empty(VectorFormat::Uint32)),
        ("x", GpuVector::empty(VectorFormat::Float32)),
    ])
    .unwrap();
    let batch2 = GpuRecordBatch::from_columns([("id", ids2), ("x", xs2)]).unwrap();
    let table = GpuTable::new(batch.schema().clone(), vec![batch.clone(), empty, batch2]).unwrap();
    assert_eq!(table.num_rows(), 5);
    assert_eq!(table.batch_row_offsets(), vec![0, 3, 3]);
    let ids_all = table.column("id").unwrap();
    assert_eq!(
        ids_all.num_chunks(),
        2,
        "the empty batch's column has no chunks"
    );
    assert_eq!(ids_all.read_back::<u32>(ctx).unwrap(), vec![1, 2, 3, 4, 5]);
    assert!(matches!(
        table.column("z"),
        Err(TableError::MissingColumn { column, available }) if column == "z" && available == vec!["id", "x"]
    ));
    let swapped = GpuRecordBatch::from_columns([("x", xs3), ("id", ids)]).unwrap();
    assert!(matches!(
        GpuTable::new(batch.schema().clone(), vec![batch.clone(), swapped]),
        Err(TableError::BatchSchemaMismatch { batch: 1, .. })
    ));

    let mut graph = CommandGraph::new("table-import", &ctx.device);
    let imported = import_gpu_table(&mut graph, "t", &table, Some(&["x"]), GRAPH_USAGE).unwrap();
    assert_eq!(imported.len(), 3);
    let x0 = imported[0].column("x").unwrap();
    assert_eq!(
        graph.buffer_id(x0.chunks()[0].buffer()).unwrap(),
        "t-batch-0-x"
    );
    assert_eq!(imported[1].column("x").unwrap().chunks().len(), 0);
    assert!(matches!(
        imported[0].column("id"),
        Err(TableError::MissingColumn { .. })
    ));
    let mut graph = CommandGraph::new("batch-import", &ctx.device);
    let all = import_record_batch(&mut graph, "b", &batch, None, GRAPH_USAGE).unwrap();
    assert_eq!(all.num_rows(), 3);
    assert_eq!(all.columns().len(), 2);
}

#[test]
fn interleaved_and_variable_length_vectors_are_rejected_on_import() {
    let ctx = ctx();
    // 10 records of 16 bytes: id: uint32 @0, pos: float32x2 @4, flags: uint32 @12.
    let mut words = Vec::new();
    for i in 0..10u32 {
        words.extend_from_slice(&[i, (i as f32).to_bits(), (-(i as f32)).to_bits(), i * 3]);
    }
    let records = GpuData::upload(ctx, &words, VectorFormat::Uint32, NONE).unwrap();
    let attrs = vec![
        InterleavedAttribute::new("id", VectorFormat::Uint32, 0),
        InterleavedAttribute::new("pos", VectorFormat::Float32x2, 4),
        InterleavedAttribute::new("flags", VectorFormat::Uint32, 12),
    ];
    let first = records.sibling(0, 6, VectorFormat::Uint32, 16).unwrap();
    let second = records.sibling(96, 4, VectorFormat::Uint32, 16).unwrap();
    let inter = GpuVector::interleaved(vec![first.clone(), second], attrs.clone()).unwrap();
    assert_eq!(inter.kind(), VectorKind::Interleaved);
    assert_eq!(inter.len(), 10);

    let mut graph = CommandGraph::new("reject", &ctx.device);
    let err = import_gpu_vector(&mut graph, "records", &inter, GRAPH_USAGE).unwrap_err();
    assert!(
        matches!(&err, TableError::InterleavedVector { column } if column == "records"),
        "{err}"
    );
    assert!(matches!(
        inter.read_back::<u32>(ctx),
        Err(TableError::NotFixedWidth { .. })
    ));
    // The adapter: one attribute as a strided fixed-width vector, importable and readable.
    let flags = inter.attribute("flags").unwrap();
    assert_eq!(
        flags.read_back::<u32>(ctx).unwrap(),
        (0..10).map(|i| i * 3).collect::<Vec<_>>()
    );
    let pos = inter.attribute("pos").unwrap();
    assert_eq!(pos.read_back::<[f32; 2]>(ctx).unwrap()[7], [7.0, -7.0]);
    // The rejected import left the graph untouched: the id is still free.
    let view = import_gpu_vector(&mut graph, "records", &flags, GRAPH_USAGE).unwrap();
    assert_eq!(view.chunks()[1].byte_offset(), 96 + 12);
    assert_eq!(view.chunks()[1].byte_stride(), 16);
    assert!(matches!(
        inter.attribute("color"),
        Err(TableError::UnknownAttribute { attribute, .. }) if attribute == "color"
    ));
    // Layout errors: attribute past the stride, wrong chunk format.
    let wide = vec![
        InterleavedAttribute::new("id", VectorFormat::Uint32, 0),
        InterleavedAttribute::new("big", VectorFormat::Uint32x4, 8),
    ];
    assert!(matches!(
        GpuVector::interleaved(vec![first.clone()], wide),
        Err(TableError::InvalidLayout {
            layout: "interleaved",
            ..
        })
    ));
    let mut bad = attrs.clone();
    bad.swap(0, 1);
    assert!(matches!(
        GpuVector::interleaved(vec![first], bad),
        Err(TableError::ChunkFormatMismatch { .. })
    ));

    // A vertex list: 3 rows with 2, 0 and 3 float32x3 vertices.
    let values = GpuData::upload(ctx, &[[0.0f32; 3]; 5], VectorFormat::Float32x3, NONE).unwrap();
    let offsets = GpuData::upload(ctx, &[0u32, 2, 2, 5], VectorFormat::Uint32, NONE).unwrap();
    let paths = GpuVector::variable_length(
        ListKind::VertexList,
        VectorFormat::Float32x3,
        vec![values.clone()],
        vec![offsets],
    )
    .unwrap();
    assert_eq!((paths.len(), paths.value_count()), (3, 5));
    let err = import_gpu_vector(&mut graph, "paths", &paths, GRAPH_USAGE).unwrap_err();
    assert!(
        matches!(&err, TableError::VariableLengthVector { column, format } if column == "paths" && format == "vertex-list<float32x3>"),
        "{err}"
    );
    assert!(matches!(
        GpuVector::variable_length(
            ListKind::List,
            VectorFormat::Float32x3,
            vec![values.clone()],
            vec![values]
        ),
        Err(TableError::InvalidLayout {
            layout: "variable-length",
            ..
        })
    ));

    // In a batch, the rejection names the column and happens before any import.
    let batch = GpuRecordBatch::from_columns([("flags", flags), ("records", inter)]).unwrap();
    let mut graph = CommandGraph::new("batch-reject", &ctx.device);
    assert!(matches!(
        import_record_batch(&mut graph, "b", &batch, None, GRAPH_USAGE),
        Err(TableError::InterleavedVector { column }) if column == "records"
    ));
    let only_flags =
        import_record_batch(&mut graph, "b", &batch, Some(&["flags"]), GRAPH_USAGE).unwrap();
    assert_eq!(
        graph
            .buffer_id(only_flags.column("flags").unwrap().chunks()[0].buffer())
            .unwrap(),
        "b-flags"
    );
}
