use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch,
    StringArray,
};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field, Int32Type, Int64Type, Schema,
};
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::{WriterProperties, WriterVersion};
use gpugraph_command::{wgpu, GpuContext};
use rand::{Rng, SeedableRng};

use super::*;

/// `values` packed LSB-first at `width` bits each, as the hybrid's bit-packed runs are.
fn pack(values: &[u32], width: u32) -> Vec<u8> {
    let mut out = vec![0u8; (values.len() * width as usize).div_ceil(8)];
    for (i, &v) in values.iter().enumerate() {
        for b in 0..width as usize {
            if v >> b & 1 == 1 {
                let bit = i * width as usize + b;
                out[bit / 8] |= 1 << (bit % 8);
            }
        }
    }
    out
}

fn uleb(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn region_of(bytes: &[u8]) -> Vec<u8> {
    let mut r = bytes.to_vec();
    r.resize(bytes.len().div_ceil(4) * 4 + 8, 0);
    r
}

#[test]
fn hybrid_runs_expand_as_the_format_says() {
    for width in [0u32, 1, 3, 7, 8, 12, 17, 31, 32] {
        let mask = if width == 32 {
            u32::MAX
        } else {
            (1u32 << width) - 1
        };
        let table: Vec<u32> = (0..=mask.min(4095))
            .map(|i| i.wrapping_mul(7) + 1)
            .collect();
        let index = |i: u32| (i.wrapping_mul(2_654_435_761) & mask) % table.len() as u32;
        // An RLE run of 300 (two pieces), a bit-packed run of 67 groups with the page's last
        // 5 values as padding, and an RLE run past the page's count.
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        uleb(&mut bytes, 300 << 1);
        let run = index(5);
        bytes.extend(&run.to_le_bytes()[..width.div_ceil(8) as usize]);
        expected.extend(std::iter::repeat_n(table[run as usize], 300));
        let packed: Vec<u32> = (0..67 * 8).map(index).collect();
        uleb(&mut bytes, (67 << 1) | 1);
        bytes.extend(pack(&packed, width));
        expected.extend(packed.iter().map(|&i| table[i as usize]));
        uleb(&mut bytes, 9 << 1);
        bytes.extend(&index(1).to_le_bytes()[..width.div_ceil(8) as usize]);
        expected.extend(std::iter::repeat_n(table[index(1) as usize], 4));
        let n = expected.len() as u32;
        let mut pieces = Vec::new();
        parse_runs(&bytes, width, n, |mut p| {
            p.table_len = table.len() as u32;
            pieces.push(p)
        })
        .expect("parses");
        assert!(pieces
            .iter()
            .all(|p| p.count >= 1 && p.count <= PIECE_VALUES));
        let got = expand_cpu(&pieces, &region_of(&bytes), &table, n as usize).expect("expands");
        assert_eq!(got, expected, "width {width}");
    }
}

#[test]
fn truncated_and_corrupt_runs_are_refused() {
    assert!(
        parse_runs(&[0x05], 4, 8, |_| {}).is_err(),
        "truncated bit-packed run"
    );
    assert!(
        parse_runs(&[0x80], 4, 8, |_| {}).is_err(),
        "truncated header"
    );
    assert!(parse_runs(&[0x00], 4, 8, |_| {}).is_err(), "empty run");
    let pieces = [Piece {
        count: 3,
        kind: KIND_RUN,
        value: 9,
        table_len: 4,
        ..Piece::default()
    }];
    let err = expand_cpu(&pieces, &[0; 8], &[1, 2, 3, 4], 3).expect_err("index past the table");
    assert!(err.contains("index 9"), "{err}");
}

/// A plain page's payload in order, 64-bit values narrowed to their low words, and pages
/// past the region the column chunk's metadata allows refused rather than written past it.
#[test]
fn plain_pages_are_narrowed_and_bounded_by_the_metadata() {
    let values: Vec<i64> = (0..600).map(|i| i * 7 - 2_000).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let page = || Page::DataPage {
        buf: bytes::Bytes::from(bytes.clone()),
        num_values: values.len() as u32,
        encoding: Encoding::PLAIN,
        def_level_encoding: Encoding::RLE,
        rep_level_encoding: Encoding::RLE,
        statistics: None,
    };
    let mut region = Vec::new();
    let mut parser = ColumnParser::new(SlotKind::Value(PhysicalType::INT64), 4096, &mut region);
    parser.page(page(), 0).expect("parses");
    let column = parser.finish(values.len()).expect("finishes");
    assert_eq!(column.region_len, 4 * values.len() + 8);
    assert_eq!(
        region.len(),
        column.region_len,
        "every region byte written once"
    );
    assert!(column.pieces.iter().all(|p| p.kind == KIND_PLAIN32));
    let got = expand_cpu(&column.pieces, &region, &[], values.len()).expect("expands");
    let want: Vec<u32> = values.iter().map(|&v| v as i32 as u32).collect();
    assert_eq!(got, want);
    assert_eq!(
        (column.stats.min, column.stats.max),
        (-2_000, 599 * 7 - 2_000)
    );

    let mut region = Vec::new();
    let mut parser = ColumnParser::new(SlotKind::Value(PhysicalType::INT64), 1_000, &mut region);
    let err = parser.page(page(), 0).expect_err("past the bound");
    assert!(err.contains("metadata states"), "{err}");
    assert!(region.is_empty(), "nothing written past the bound");
}

/// A batch of every value type the page scan takes, a string key, and a nullable column
/// without nulls.
fn batch(rows: usize, seed: u64) -> RecordBatch {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let schema = Arc::new(Schema::new(vec![
        Field::new("small", DataType::Int32, false),
        Field::new("wide", DataType::Int64, false),
        Field::new("day", DataType::Date32, false),
        Field::new("price", DataType::Decimal128(15, 2), false),
        Field::new("maybe", DataType::Int32, true),
        Field::new("key", DataType::Utf8, false),
    ]));
    let small: Int32Array = (0..rows).map(|_| rng.random_range(-3..50)).collect();
    let wide: Int64Array = (0..rows)
        .map(|_| rng.random_range(i32::MIN as i64..=i32::MAX as i64))
        .collect();
    let day = Date32Array::from_iter_values((0..rows).map(|i| 8_000 + (i as i32 / 97)));
    let price =
        Decimal128Array::from_iter_values((0..rows).map(|_| rng.random_range(100..10_000_000i128)))
            .with_precision_and_scale(15, 2)
            .expect("decimal");
    let maybe: Int32Array = (0..rows).map(|i| Some(i as i32 % 1_000)).collect();
    let key: StringArray = (0..rows)
        .map(|i| Some(["A", "N", "R", "é"][(i * 7 + i / 13) % 4]))
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(small),
        Arc::new(wide),
        Arc::new(day),
        Arc::new(price),
        Arc::new(maybe),
        Arc::new(key),
    ];
    RecordBatch::try_new(schema, columns).expect("batch")
}

fn write(path: &std::path::Path, batch: &RecordBatch, props: WriterProperties) {
    let file = std::fs::File::create(path).expect("creates");
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("writer");
    writer.write(batch).expect("writes");
    writer.close().expect("closes");
}

/// Value columns as the words the GPU expands them to.
fn words(array: &dyn Array) -> Vec<u32> {
    match array.data_type() {
        DataType::Int32 => array
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .map(|&v| v as u32)
            .collect(),
        DataType::Int64 => array
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .map(|&v| v as u32)
            .collect(),
        DataType::Date32 => array
            .as_primitive::<Date32Type>()
            .values()
            .iter()
            .map(|&v| v as u32)
            .collect(),
        _ => array
            .as_primitive::<Decimal128Type>()
            .values()
            .iter()
            .map(|&v| v as u32)
            .collect(),
    }
}

const VALUES: [&str; 5] = ["small", "wide", "day", "price", "maybe"];

fn scan_of(
    path: &std::path::Path,
    batch: &RecordBatch,
    key: bool,
) -> Result<(PageScan, Arc<ParquetMetaData>), String> {
    let file = std::fs::File::open(path).expect("opens");
    let loaded = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).expect("metadata");
    let mut slots: Vec<(String, DataType)> = VALUES
        .iter()
        .map(|n| {
            (
                n.to_string(),
                batch
                    .schema()
                    .field_with_name(n)
                    .expect("field")
                    .data_type()
                    .clone(),
            )
        })
        .collect();
    if key {
        slots.push(("key".into(), DataType::Utf8));
    }
    let scan = PageScan::of(
        &[(Arc::clone(loaded.metadata()), Arc::clone(loaded.schema()))],
        &slots,
        usize::from(key),
    )?;
    Ok((scan, Arc::clone(loaded.metadata())))
}

/// Every row group of `path` parsed and expanded by the oracle equals the batch's values.
fn check_file(path: &std::path::Path, batch: &RecordBatch, key: bool) -> Vec<HostChunk> {
    let (scan, metadata) = scan_of(path, batch, key).expect("the page scan takes the file");
    let mut start = 0;
    let mut chunks = Vec::new();
    for rg in 0..metadata.num_row_groups() {
        let task = RowGroupTask {
            path: path.to_path_buf(),
            metadata: Arc::clone(&metadata),
            row_group: rg,
        };
        let host = read_row_group(&scan, &task)
            .expect("reads")
            .expect("expandable");
        let rows = host.rows;
        for (s, column) in host.columns.iter().enumerate() {
            let region = &host.regions[s];
            if s < VALUES.len() {
                let Table::Words(table) = &column.table else {
                    panic!("a value slot with strings");
                };
                let got = expand_cpu(&column.pieces, region, table, rows).expect("expands");
                let want = words(
                    batch
                        .column_by_name(VALUES[s])
                        .expect("column")
                        .slice(start, rows)
                        .as_ref(),
                );
                assert_eq!(got, want, "{} of row group {rg}", VALUES[s]);
                let (lo, hi) = want.iter().fold((i64::MAX, i64::MIN), |(lo, hi), &w| {
                    (lo.min(w as i32 as i64), hi.max(w as i32 as i64))
                });
                assert!(
                    column.stats.min <= lo && column.stats.max >= hi,
                    "{} bounds",
                    VALUES[s]
                );
            } else {
                let Table::Strings(strings) = &column.table else {
                    panic!("a key slot with words");
                };
                let identity: Vec<u32> = (0..strings.len() as u32).collect();
                let got = expand_cpu(&column.pieces, region, &identity, rows).expect("expands");
                let strings = strings.as_string::<i32>();
                let want = batch.column_by_name("key").expect("key").slice(start, rows);
                let want = want.as_string::<i32>();
                for (r, &i) in got.iter().enumerate() {
                    assert_eq!(
                        strings.value(i as usize),
                        want.value(r),
                        "key row {r} of {rg}"
                    );
                }
            }
        }
        start += rows;
        chunks.push(host);
    }
    assert_eq!(start, batch.num_rows());
    chunks
}

fn configurations() -> Vec<(&'static str, WriterProperties, bool)> {
    let base = || {
        WriterProperties::builder()
            .set_max_row_group_row_count(Some(4_096))
            .set_data_page_row_count_limit(1_000)
            .set_write_batch_size(333)
    };
    vec![
        ("v1 dictionary pages", base().build(), true),
        (
            "v2 dictionary pages",
            base()
                .set_writer_version(WriterVersion::PARQUET_2_0)
                .build(),
            true,
        ),
        (
            "plain pages",
            base().set_dictionary_enabled(false).build(),
            false,
        ),
        (
            "dictionaries that overflow into plain pages",
            base()
                .set_dictionary_page_size_limit(256)
                .set_column_dictionary_enabled("key".into(), true)
                .build(),
            true,
        ),
    ]
}

#[test]
fn pages_of_written_files_expand_to_the_arrow_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    for rows in [1, 4_096, 10_007] {
        let batch = batch(rows, rows as u64);
        for (name, props, key) in configurations() {
            let path = dir.path().join(format!("{rows}.parquet"));
            write(&path, &batch, props);
            let chunks = check_file(&path, &batch, key);
            assert_eq!(chunks.len(), rows.div_ceil(4_096), "{name}");
            if !key {
                let refused =
                    scan_of(&path, &batch, true).expect_err("strings without a dictionary");
                assert!(refused.contains("key"), "{refused}");
            }
        }
    }
}

#[test]
fn nulls_wide_values_and_foreign_types_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.parquet");
    // A null in `maybe`: its statistics say so, and the scan refuses at planning.
    let mut b = batch(2_000, 3);
    let mut columns = b.columns().to_vec();
    columns[4] = Arc::new(Int32Array::from_iter(
        (0..2_000).map(|i| (i != 1_500).then_some(i)),
    ));
    b = RecordBatch::try_new(b.schema(), columns).expect("batch");
    write(&path, &b, WriterProperties::builder().build());
    let refused = scan_of(&path, &b, true).expect_err("a nullable column with nulls");
    assert!(refused.contains("maybe"), "{refused}");
    // A value past i32 in a 64-bit column, dictionary-encoded and plain.
    for dictionary in [true, false] {
        let mut b = batch(3_000, 4);
        let mut columns = b.columns().to_vec();
        columns[1] = Arc::new(Int64Array::from_iter_values((0..3_000).map(|i| {
            if i == 2_999 {
                1 << 33
            } else {
                i
            }
        })));
        b = RecordBatch::try_new(b.schema(), columns).expect("batch");
        write(
            &path,
            &b,
            WriterProperties::builder()
                .set_dictionary_enabled(dictionary)
                .build(),
        );
        let (scan, metadata) = scan_of(&path, &b, dictionary).expect("plans");
        let task = RowGroupTask {
            path: path.clone(),
            metadata,
            row_group: 0,
        };
        let misfit = read_row_group(&scan, &task)
            .expect("reads")
            .expect_err("a misfit");
        assert_eq!(misfit.column, "wide");
        assert!(misfit.what.contains("8589934592"), "{misfit}");
    }
}

pub(crate) use gpugraph_testing::ctx as gpu;

/// The first `words` words of `buffer` (`COPY_SRC`), after the queue's work.
pub(crate) fn read_back(ctx: &GpuContext, buffer: &wgpu::Buffer, words: usize) -> Vec<u32> {
    gpugraph_testing::read(ctx, buffer, 0, words)
}

#[test]
fn gpu_expansion_matches_the_oracle() {
    let ctx = gpu();
    let dir = tempfile::tempdir().expect("tempdir");
    let batch = batch(10_007, 5);
    // One pool for every row group: later ones expand from slabs holding earlier ones' bytes.
    let pool = UploadPool::new();
    let mut acquired = 0;
    for (name, props, key) in configurations() {
        let path = dir.path().join("g.parquet");
        write(&path, &batch, props);
        let status = DecodeStatus::new(&ctx);
        for host in check_file(&path, &batch, key) {
            acquired += 2 * host.columns.len() as u64;
            let rows = host.rows;
            let tables: Vec<Vec<u32>> = host
                .columns
                .iter()
                .map(|c| match &c.table {
                    Table::Words(w) => w.clone(),
                    Table::Strings(s) => (0..s.len() as u32).map(|i| 1_000 + i).collect(),
                })
                .collect();
            let want: Vec<Vec<u32>> = host
                .columns
                .iter()
                .zip(&host.regions)
                .zip(&tables)
                .map(|((c, r), t)| expand_cpu(&c.pieces, r, t, rows).expect("expands"))
                .collect();
            let chunk = stage(&ctx, &pool, host, &tables)
                .expect("stages")
                .expand(&ctx, &status)
                .expect("expands");
            assert_eq!(chunk.rows as usize, rows);
            for (s, w) in want.iter().enumerate() {
                assert_eq!(
                    &read_back(&ctx, &chunk.buffers[s], rows),
                    w,
                    "{name}: slot {s}"
                );
            }
        }
        status.check(&ctx).expect("no index past a dictionary");
    }
    assert!(
        pool.created() < acquired / 2,
        "{} slabs created for {acquired} acquired: completed row groups' slabs are reused",
        pool.created()
    );
}

#[test]
fn gpu_flags_an_index_past_the_dictionary() {
    let ctx = gpu();
    let host = HostChunk {
        rows: 300,
        regions: vec![vec![0xff; 40]],
        columns: vec![HostColumn {
            region_len: 48,
            pieces: vec![
                Piece {
                    row: 0,
                    count: 256,
                    kind: KIND_RUN,
                    value: 1,
                    table_len: 2,
                    ..Piece::default()
                },
                Piece {
                    row: 256,
                    count: 44,
                    kind: KIND_PACKED,
                    width: 3,
                    table_len: 2,
                    ..Piece::default()
                },
            ],
            table: Table::Words(vec![5, 6]),
            stats: ColumnStats::default(),
            read_time: std::time::Duration::ZERO,
        }],
    };
    let status = DecodeStatus::new(&ctx);
    let chunk = stage(&ctx, &UploadPool::new(), host, &[vec![5, 6]])
        .expect("stages")
        .expand(&ctx, &status)
        .expect("expands");
    assert_eq!(read_back(&ctx, &chunk.buffers[0], 256), vec![6; 256]);
    let err = status
        .check(&ctx)
        .expect_err("index 7 past a dictionary of 2");
    assert!(err.to_string().contains("corrupt"), "{err}");
}

/// A file cut short after its metadata was read (or metadata that places a column chunk past
/// the file's end) is a read error naming the column, not a panic, a huge allocation or a
/// short column.
#[test]
fn column_chunks_past_the_files_end_are_named_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("full.parquet");
    let batch = batch(4_096, 9);
    write(&path, &batch, WriterProperties::builder().build());
    let (scan, metadata) = scan_of(&path, &batch, true).expect("plans");
    let cut = dir.path().join("cut.parquet");
    let bytes = std::fs::read(&path).expect("reads");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("writes");
    let task = RowGroupTask {
        path: cut,
        metadata,
        row_group: 0,
    };
    let err = read_row_group(&scan, &task).expect_err("a read error");
    assert!(
        err.contains("claims bytes") && err.contains("of a"),
        "{err}"
    );

    let file = std::fs::File::open(&path).expect("opens");
    let loaded = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).expect("metadata");
    let chunk = loaded.metadata().row_group(0).column(0).clone();
    let huge = chunk
        .into_builder()
        .set_total_compressed_size(i64::MAX / 2)
        .build()
        .expect("builds");
    let mut file = std::fs::File::open(&path).expect("opens");
    let err =
        chunk::ChunkBytes::read(&mut file, bytes.len() as u64, &huge).expect_err("past the end");
    assert!(
        err.contains("small") || err.contains("claims bytes"),
        "{err}"
    );
}

#[test]
fn plain_bounds_match_a_plain_fold_at_every_remainder() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(19);
    for n in (0..80).chain([1000, 4099]) {
        let narrow: Vec<i32> = (0..n).map(|_| rng.random_range(-1000..1000)).collect();
        let bytes: Vec<u8> = narrow.iter().flat_map(|v| v.to_le_bytes()).collect();
        let got = runs::plain_stats(&bytes, 4).expect("fits");
        let want = (
            narrow.iter().min().map_or(0, |&v| v as i64),
            narrow.iter().max().map_or(0, |&v| v as i64),
        );
        assert_eq!(
            (got.min, got.max, got.any),
            (want.0, want.1, n > 0),
            "i32 x {n}"
        );
        let wide: Vec<i64> = (0..n)
            .map(|_| rng.random_range(i32::MIN as i64..=i32::MAX as i64))
            .collect();
        let bytes: Vec<u8> = wide.iter().flat_map(|v| v.to_le_bytes()).collect();
        let got = runs::plain_stats(&bytes, 8).expect("fits");
        let want = (
            wide.iter().min().copied().unwrap_or(0),
            wide.iter().max().copied().unwrap_or(0),
        );
        assert_eq!(
            (got.min, got.max, got.any),
            (want.0, want.1, n > 0),
            "i64 x {n}"
        );
        // One value past i32 anywhere (here in the remainder or a full block) is refused.
        if n > 0 {
            let mut past = wide.clone();
            past[n as usize - 1] = i32::MAX as i64 + 1;
            let bytes: Vec<u8> = past.iter().flat_map(|v| v.to_le_bytes()).collect();
            let err = runs::plain_stats(&bytes, 8).expect_err("past i32");
            assert!(err.contains("2147483648"), "{err}");
        }
    }
}

/// A scan that reads no column (`count(*)`) still hands every row group to `prepare`, once
/// (issue 52: with no column slot no part was scheduled, no row group completed, and the GPU
/// aggregate counted 0 rows).
#[tokio::test]
async fn a_scan_of_no_column_prepares_every_row_group_once() {
    use futures::StreamExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.parquet");
    let rows = 1_050;
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(100))
        .build();
    write(&path, &batch(rows, 5), props);
    let file = std::fs::File::open(&path).expect("opens");
    let loaded = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).expect("metadata");
    let metadata = Arc::clone(loaded.metadata());
    let groups = metadata.num_row_groups();
    assert_eq!(groups, 11);
    let scan = PageScan::of(
        &[(Arc::clone(&metadata), Arc::clone(loaded.schema()))],
        &[],
        0,
    )
    .expect("a scan of no column");
    let tasks: Vec<RowGroupTask> = (0..groups)
        .map(|row_group| RowGroupTask {
            path: path.clone(),
            metadata: Arc::clone(&metadata),
            row_group,
        })
        .collect();
    let stream = crate::scan::DirectScan::page_stream(
        scan,
        tasks,
        2,
        |_: &PageScan, _: &RowGroupTask, s: usize| -> crate::scan::Outcome<()> {
            Err(format!("slot {s} read, but the scan has no column"))
        },
        |rows: usize, columns: Vec<()>| -> crate::scan::Outcome<(usize, usize)> {
            Ok(Ok((rows, columns.len())))
        },
    );
    let mut got: Vec<(usize, usize)> = stream
        .map(|r| r.expect("no read error").0.expect("no misfit"))
        .collect()
        .await;
    got.sort_unstable();
    let mut want = vec![(100, 0); 10];
    want.insert(0, (50, 0));
    assert_eq!(got, want);
}
