//! Random tables against DataFusion's CPU plan: SQL null logic in filters, BETWEEN / IN / NOT /
//! OR / CASE, group keys of each supported type, empty input, every row filtered out, one
//! group, more groups than a workgroup keeps, sums near the 64-bit term bound, and the CPU
//! fallback with its reason.

mod common;

use std::sync::Arc;

use common::{explain, gpu, same, sessions};
use gpugraph_datafusion::datafusion::arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, StringArray,
};
use gpugraph_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::datasource::MemTable;
use gpugraph_datafusion::datafusion::prelude::SessionContext;
use rand::{Rng, SeedableRng};

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("k1", DataType::Utf8, true),
        Field::new("k2", DataType::Int32, true),
        Field::new("d", DataType::Date32, true),
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Decimal128(12, 2), true),
        Field::new("c", DataType::Int64, false),
    ]))
}

/// `rows` random rows in batches of at most 1,000; about a tenth of each nullable column null.
fn table(rows: usize, seed: u64, c_range: (i64, i64)) -> Vec<RecordBatch> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut batches = Vec::new();
    let mut left = rows;
    loop {
        let n = left.min(1000);
        let mut maybe = |p: f64| rng.random_bool(1.0 - p);
        let nulls: Vec<[bool; 5]> = (0..n)
            .map(|_| [maybe(0.1), maybe(0.1), maybe(0.1), maybe(0.1), maybe(0.1)])
            .collect();
        let names = ["red", "green", "blue", "", "teal"];
        let k1: StringArray = nulls
            .iter()
            .map(|v| v[0].then(|| names[rng.random_range(0..names.len())]))
            .collect();
        let k2: Int32Array = nulls
            .iter()
            .map(|v| v[1].then(|| rng.random_range(-2..4)))
            .collect();
        let d: Date32Array = nulls
            .iter()
            .map(|v| v[2].then(|| 18_262 + rng.random_range(0..40)))
            .collect();
        let a: Int32Array = nulls
            .iter()
            .map(|v| v[3].then(|| rng.random_range(-3000..3000)))
            .collect();
        let b = nulls
            .iter()
            .map(|v| v[4].then(|| rng.random_range(-100_000i128..100_000)))
            .collect::<Decimal128Array>()
            .with_precision_and_scale(12, 2)
            .expect("decimal");
        let c: Int64Array = (0..n)
            .map(|_| rng.random_range(c_range.0..=c_range.1))
            .collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(k1),
            Arc::new(k2),
            Arc::new(d),
            Arc::new(a),
            Arc::new(b),
            Arc::new(c),
        ];
        batches.push(RecordBatch::try_new(schema(), columns).expect("batch"));
        left -= n;
        if left == 0 {
            break;
        }
    }
    batches
}

fn register(ctxs: [&SessionContext; 2], name: &str, batches: Vec<RecordBatch>) {
    for ctx in ctxs {
        let table = MemTable::try_new(schema(), vec![batches.clone()]).expect("table");
        ctx.register_table(name, Arc::new(table))
            .expect("registers");
    }
}

const ON_GPU: &[&str] = &[
    // 3VL: a NULL predicate rejects the row; NULL keys form one group.
    "SELECT k1, count(*), sum(a), avg(b), min(a), max(b), count(b) FROM t \
     WHERE a > 10 OR b IS NULL GROUP BY k1 ORDER BY k1",
    "SELECT k1, k2, sum(b * a), count(a) FROM t \
     WHERE a BETWEEN -500 AND 500 AND NOT (k2 IN (1, 2)) GROUP BY k1, k2 ORDER BY k1, k2",
    "SELECT k2, sum(CASE WHEN a < 0 THEN b ELSE -b END), sum(CASE WHEN b > 1 THEN 1 END), \
     sum(CASE k2 WHEN 1 THEN a WHEN 2 THEN 2 * a ELSE 0 END) FROM t GROUP BY k2 ORDER BY k2",
    "SELECT count(*), sum(c), avg(b), min(d), max(d) FROM t WHERE d >= DATE '2020-01-10'",
    "SELECT d, sum(b - a), avg(b) FROM t WHERE NOT (a IN (1, 2, NULL)) OR a IS NULL \
     GROUP BY d ORDER BY d",
    "SELECT count(*), sum(a) FROM t WHERE a IS NOT NULL AND (b < 0 OR b > 100.5)",
    // Groups whose avg argument is always NULL (a NULL count in the partial state).
    "SELECT k1, avg(b), sum(a), count(b) FROM t WHERE b IS NULL GROUP BY k1 ORDER BY k1",
    // Every row filtered out, with and without GROUP BY.
    "SELECT k1, sum(a) FROM t WHERE a > 1000000 GROUP BY k1 ORDER BY k1",
    "SELECT sum(a), count(*), avg(b), min(a) FROM t WHERE a > 1000000",
    // One group; many groups (more than a workgroup's private accumulators hold).
    "SELECT k2, count(*), sum(a) FROM t WHERE k2 = 3 GROUP BY k2",
    "SELECT a, count(*), sum(b), max(c) FROM t GROUP BY a ORDER BY a",
    "SELECT a, k1, count(*), sum(c) FROM t GROUP BY a, k1 ORDER BY a, k1",
    // String columns compared with literals (as codes), with SQL's NULLs: a group key, a
    // column only the predicates read, a value no row has, the empty string, IS NULL.
    "SELECT k1, count(*) FROM t WHERE k1 = 'red' GROUP BY k1",
    "SELECT k2, count(*), sum(a), count(k1) FROM t \
     WHERE k1 <> 'red' AND NOT (k1 IN ('blue', '')) GROUP BY k2 ORDER BY k2",
    "SELECT k2, sum(CASE WHEN k1 = 'teal' OR k1 IS NULL THEN a ELSE 0 END), count(*) FROM t \
     WHERE k1 <> 'purple' OR k2 = 1 GROUP BY k2 ORDER BY k2",
];

#[tokio::test]
async fn random_tables_match_the_cpu() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    register([&g, &c], "t", table(20_000, 7, (-1_000_000, 1_000_000)));
    for q in ON_GPU {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        // Coded keys only: one row per group, finished without a merge.
        assert_eq!(
            (placement.finalize, placement.merged),
            (1, 0),
            "{q}: {placement:?}"
        );
    }
}

#[tokio::test]
async fn empty_and_tiny_tables_match_the_cpu() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    register([&g, &c], "t", table(0, 1, (0, 0)));
    register([&g, &c], "one", table(1, 2, (5, 5)));
    for q in ON_GPU {
        same(&g, &c, q).await;
        same(&g, &c, &q.replace("FROM t", "FROM one")).await;
    }
}

#[tokio::test]
async fn sums_near_the_term_bound_are_exact_and_past_it_fall_back() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    register(
        [&g, &c],
        "t",
        table(3000, 3, (i32::MAX as i64 - 5, i32::MAX as i64)),
    );
    // c * c * 2 reaches 2^63 - 2^33 + 2, the largest terms within i64; 3,000 of them sum
    // past 2^74 (the 96-bit accumulators' carries).
    let near =
        "SELECT k1, sum(CAST(c AS DECIMAL(38, 0)) * CAST(c AS DECIMAL(38, 0)) * 2), count(*) \
                FROM t GROUP BY k1 ORDER BY k1";
    let placement = same(&g, &c, near).await;
    assert_eq!(placement.gpu, 1, "{placement:?}");
    assert!(placement.fallbacks.is_empty(), "{placement:?}");
    // × 4 may reach 2^64: the bounds check hands the query to the CPU and says why.
    let past = near.replace("* 2)", "* 4)");
    let placement = same(&g, &c, &past).await;
    assert_eq!(placement.fallbacks.len(), 1, "{placement:?}");
    assert!(
        placement.fallbacks[0].contains("64-bit range"),
        "{placement:?}"
    );
}

#[tokio::test]
async fn values_past_i32_fall_back_to_the_cpu_and_say_why() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    register(
        [&g, &c],
        "t",
        table(5000, 4, (-5_000_000_000, 5_000_000_000)),
    );
    let q = "SELECT k1, sum(c), count(*) FROM t GROUP BY k1 ORDER BY k1";
    let placement = same(&g, &c, q).await;
    assert_eq!(placement.gpu, 1, "{placement:?}");
    assert_eq!(placement.fallbacks.len(), 1, "{placement:?}");
    assert!(placement.fallbacks[0].contains("column c"), "{placement:?}");
    assert!(
        placement.fallbacks[0].contains("does not fit"),
        "{placement:?}"
    );
    // DataFusion's partial states repeat groups across partitions: the final step merges.
    assert_eq!(
        (placement.finalize, placement.merged),
        (1, 1),
        "{placement:?}"
    );
}

/// A lone COUNT(DISTINCT) becomes a grouping by the counted column (DataFusion's
/// single-distinct rewrite), which the GPU aggregates. Several over different columns keep
/// DataFusion's distinct accumulators, whose partial states (each group's distinct values)
/// the GPU builds from presence bitmaps over the arguments' bounds: integers with NULLs,
/// dates, decimals, derived values, beside other aggregates, with and without GROUP BY,
/// and every row filtered out. SUM(DISTINCT) stays on the CPU and says why; an argument
/// range wider than a bitmap covers falls back at run time and says why.
#[tokio::test]
async fn count_distinct_runs_on_the_gpu() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    register([&g, &c], "t", table(8000, 11, (-50, 50)));
    for q in [
        "SELECT k1, count(DISTINCT k2) FROM t GROUP BY k1 ORDER BY k1",
        "SELECT count(DISTINCT c) FROM t WHERE a > 0",
        "SELECT k1, count(DISTINCT k2), count(DISTINCT a) FROM t GROUP BY k1 ORDER BY k1",
        "SELECT count(DISTINCT a), count(DISTINCT d), count(DISTINCT b), count(*), sum(a) \
         FROM t WHERE c > 0",
        "SELECT k2, count(DISTINCT a + c), count(DISTINCT d), max(b) FROM t \
         WHERE k1 <> 'red' GROUP BY k2 ORDER BY k2",
        "SELECT k1, count(DISTINCT a), count(DISTINCT c) FROM t WHERE a > 100000 \
         GROUP BY k1 ORDER BY k1",
        "SELECT count(DISTINCT a), count(DISTINCT c) FROM t WHERE a > 100000",
    ] {
        let placement = same(&g, &c, q).await;
        assert!(placement.gpu >= 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        assert!(placement.cpu.is_empty(), "{q}: {placement:?}");
        // Coded keys: each state row is its group's, its lists counted without a merge.
        assert!(
            placement.finalize >= 1 && placement.merged == 0,
            "{q}: {placement:?}"
        );
        let text = explain(&g, q).await;
        assert!(text.contains("GpuPartialAggregateExec: on=GPU"), "{text}");
    }
    let q = "SELECT k2, count(DISTINCT a), sum(DISTINCT a) FROM t GROUP BY k2 ORDER BY k2";
    let placement = same(&g, &c, q).await;
    assert!(
        placement.cpu.iter().any(|why| why.contains("count only")),
        "{q}: {placement:?}"
    );
    // c × 10^6 spans 10^8 values: more than a bitmap covers.
    let q = "SELECT k1, count(DISTINCT c * 1000000), count(DISTINCT a) FROM t \
             GROUP BY k1 ORDER BY k1";
    let placement = same(&g, &c, q).await;
    assert_eq!(placement.fallbacks.len(), 1, "{q}: {placement:?}");
    assert!(
        placement.fallbacks[0].contains("presence bitmap"),
        "{q}: {placement:?}"
    );
}

#[tokio::test]
async fn unsupported_expressions_stay_on_the_cpu_and_explain_says_why() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    register([&g, &c], "t", table(3000, 5, (-10, 10)));
    for (q, why) in [
        (
            "SELECT k1, sum(a / 2) FROM t GROUP BY k1 ORDER BY k1",
            "operator /",
        ),
        (
            // A string expression over two columns (one column's runs by code).
            "SELECT k1, sum(a) FROM t WHERE concat(k1, CAST(a AS VARCHAR)) LIKE 'r%' \
             GROUP BY k1 ORDER BY k1",
            "not supported",
        ),
        (
            "SELECT k2, sum(CAST(a AS DOUBLE)) FROM t GROUP BY k2 ORDER BY k2",
            "Float64",
        ),
    ] {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.gpu, 0, "{q}: {placement:?}");
        assert_eq!(placement.cpu.len(), 1, "{q}: {placement:?}");
        assert!(placement.cpu[0].contains(why), "{q}: {placement:?}");
        let text = explain(&g, q).await;
        assert!(text.contains("CpuFallbackExec: on=CPU, reason="), "{text}");
    }
}

/// Writes `batches` as Parquet files of `rows_per_file` rows each (the last one shorter),
/// in row groups of `group_rows`; odd files without dictionary encoding (so string keys
/// come back from plain pages as well as from dictionary pages).
fn parquet_files(
    dir: &std::path::Path,
    batches: &[RecordBatch],
    rows_per_file: usize,
    group_rows: usize,
) {
    use gpugraph_datafusion::datafusion::arrow::compute::concat_batches;
    use gpugraph_datafusion::datafusion::parquet::arrow::ArrowWriter;
    use gpugraph_datafusion::datafusion::parquet::file::properties::WriterProperties;
    let all = concat_batches(&batches[0].schema(), batches).expect("concat");
    let mut start = 0;
    let mut file = 0;
    while start < all.num_rows() {
        let n = rows_per_file.min(all.num_rows() - start);
        let path = dir.join(format!("part-{file}.parquet"));
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(group_rows))
            .set_dictionary_enabled(file % 2 == 0)
            .build();
        let out = std::fs::File::create(&path).expect("creates");
        let mut writer = ArrowWriter::try_new(out, all.schema(), Some(props)).expect("writer");
        writer.write(&all.slice(start, n)).expect("writes");
        writer.close().expect("closes");
        start += n;
        file += 1;
    }
}

#[tokio::test]
async fn parquet_files_read_by_the_gpu_scan_match_the_cpu() {
    use gpugraph_datafusion::datafusion::prelude::ParquetReadOptions;
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    let dir = tempfile::tempdir().expect("tempdir");
    // Two files, row groups of 2,500 rows and a shorter last one in each, nulls in every
    // nullable column; b is a DECIMAL(12, 2), stored as INT64 and read back as Decimal64.
    parquet_files(
        dir.path(),
        &table(20_000, 11, (-1_000, 1_000)),
        12_000,
        2_500,
    );
    let path = format!("{}/", dir.path().display());
    for ctx in [&g, &c] {
        ctx.register_parquet("t", &path, ParquetReadOptions::default())
            .await
            .expect("registers");
    }
    for q in ON_GPU {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
    }
    let text = explain(&g, &format!("ANALYZE {}", ON_GPU[0])).await;
    assert!(text.contains("direct_scan=1"), "{text}");
    assert!(text.contains("input_rows=20.00 K"), "{text}");
}

#[tokio::test]
async fn parquet_decimals_of_every_width_and_misfits_match_the_cpu() {
    use gpugraph_datafusion::datafusion::arrow::array::Decimal128Array;
    use gpugraph_datafusion::datafusion::prelude::ParquetReadOptions;
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        // Stored as INT32, INT64 and FIXED_LEN_BYTE_ARRAY: read as Decimal32, Decimal64 and
        // Decimal128.
        Field::new("p", DataType::Decimal128(9, 2), true),
        Field::new("q", DataType::Decimal128(18, 0), false),
        Field::new("r", DataType::Decimal128(20, 1), true),
    ]));
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    let n = 9_000;
    let k: StringArray = (0..n)
        .map(|i| (i % 7 != 0).then(|| ["x", "y", "z"][i % 3]))
        .collect();
    let decimal = |values: Vec<Option<i128>>, p, s| {
        Decimal128Array::from(values)
            .with_precision_and_scale(p, s)
            .expect("decimal")
    };
    let p = decimal(
        (0..n)
            .map(|i| (i % 5 != 0).then(|| rng.random_range(-9_999_999i128..9_999_999)))
            .collect(),
        9,
        2,
    );
    // q fits i32 except in one row past the middle of the second file's first row group.
    let q = decimal(
        (0..n)
            .map(|i| {
                Some(if i == 6_100 {
                    1 << 40
                } else {
                    i as i128 - 4_000
                })
            })
            .collect(),
        18,
        0,
    );
    let r = decimal(
        (0..n)
            .map(|i| (i % 3 != 0).then(|| rng.random_range(-1_000_000i128..1_000_000)))
            .collect(),
        20,
        1,
    );
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(k), Arc::new(p), Arc::new(q), Arc::new(r)],
    )
    .expect("batch");
    parquet_files(dir.path(), &[batch], 5_000, 1_000);
    let path = format!("{}/", dir.path().display());
    for ctx in [&g, &c] {
        ctx.register_parquet("u", &path, ParquetReadOptions::default())
            .await
            .expect("registers");
    }
    let fits = "SELECT k, sum(p), min(p), max(p), count(p), avg(r), sum(p * r) FROM u \
                WHERE p > -5000000 OR r IS NULL GROUP BY k ORDER BY k";
    let placement = same(&g, &c, fits).await;
    assert_eq!(placement.gpu, 1, "{placement:?}");
    assert!(placement.fallbacks.is_empty(), "{placement:?}");
    let misfit = "SELECT k, sum(q), count(*) FROM u GROUP BY k ORDER BY k";
    let placement = same(&g, &c, misfit).await;
    assert_eq!(placement.fallbacks.len(), 1, "{placement:?}");
    assert!(placement.fallbacks[0].contains("column q"), "{placement:?}");
    assert!(
        placement.fallbacks[0].contains("1099511627776"),
        "{placement:?}"
    );
}

/// Non-null columns the GPU page scan expands (`pages.rs`): strings keys, 32- and 64-bit
/// integers, dates and INT64 decimals, in several files and row groups.
fn dense(rows: usize, seed: u64, key_names: usize) -> RecordBatch {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let schema = Arc::new(Schema::new(vec![
        Field::new("k1", DataType::Utf8, false),
        Field::new("d", DataType::Date32, false),
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Decimal128(12, 2), false),
        Field::new("c", DataType::Int64, false),
    ]));
    let k1: StringArray = (0..rows)
        .map(|i| Some(format!("key-{}", (i * 31 + i / 7) % key_names)))
        .collect();
    let d = Date32Array::from_iter_values((0..rows).map(|_| 18_262 + rng.random_range(0..40)));
    let a: Int32Array = (0..rows)
        .map(|_| Some(rng.random_range(-3000..3000)))
        .collect();
    let b = (0..rows)
        .map(|_| rng.random_range(-100_000i128..100_000))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(12, 2)
        .expect("decimal");
    let c: Int64Array = (0..rows)
        .map(|_| rng.random_range(-1 << 30..1 << 30))
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(k1),
        Arc::new(d),
        Arc::new(a),
        Arc::new(b),
        Arc::new(c),
    ];
    RecordBatch::try_new(schema, columns).expect("batch")
}

#[tokio::test]
async fn parquet_pages_expanded_on_the_gpu_match_the_cpu() {
    use gpugraph_datafusion::datafusion::parquet::arrow::ArrowWriter;
    use gpugraph_datafusion::datafusion::parquet::file::properties::{
        WriterProperties, WriterVersion,
    };
    use gpugraph_datafusion::datafusion::prelude::ParquetReadOptions;
    let gpu = gpu();
    let queries = [
        "SELECT k1, count(*), sum(a), avg(b), min(c), max(d) FROM t \
         WHERE a > 10 OR b < 0 GROUP BY k1 ORDER BY k1",
        "SELECT sum(b * a), count(*), min(b) FROM t \
         WHERE d BETWEEN DATE '2020-01-05' AND DATE '2020-01-30' AND c > 0",
    ];
    // Few key names stay dictionary-encoded; many overflow a small dictionary page into
    // plain strings, which the page scan refuses at run time for the Arrow reader's path.
    for (key_names, refused) in [(9, false), (5_000, true)] {
        let (g, c) = sessions(&gpu);
        let dir = tempfile::tempdir().expect("tempdir");
        let batch = dense(23_001, key_names as u64, key_names);
        for (f, version) in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0]
            .into_iter()
            .enumerate()
        {
            // A small dictionary page overflows into plain pages in version 1 files, and
            // into DELTA_BINARY_PACKED integers (which the page scan refuses) in version 2.
            let dictionary = if f == 0 || refused { 4_096 } else { 1 << 20 };
            let props = WriterProperties::builder()
                .set_writer_version(version)
                .set_max_row_group_row_count(Some(5_000))
                .set_data_page_row_count_limit(1_500)
                .set_write_batch_size(700)
                .set_dictionary_page_size_limit(dictionary)
                .build();
            let path = dir.path().join(format!("part-{f}.parquet"));
            let out = std::fs::File::create(&path).expect("creates");
            let mut writer =
                ArrowWriter::try_new(out, batch.schema(), Some(props)).expect("writer");
            let half = batch.num_rows() / 2;
            let rows = if f == 0 {
                batch.slice(0, half)
            } else {
                batch.slice(half, batch.num_rows() - half)
            };
            writer.write(&rows).expect("writes");
            writer.close().expect("closes");
        }
        let path = format!("{}/", dir.path().display());
        for ctx in [&g, &c] {
            ctx.register_parquet("t", &path, ParquetReadOptions::default())
                .await
                .expect("registers");
        }
        for q in queries {
            let placement = same(&g, &c, q).await;
            assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
            assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        }
        let text = explain(&g, &format!("ANALYZE {}", queries[0])).await;
        assert!(text.contains("input_rows=23.00 K"), "{text}");
        if refused {
            assert!(text.contains("page_decode_refused=1"), "{text}");
            // Both files hold pages the scan refuses (k1's plain strings in the version 1
            // file, the value columns' DELTA_BINARY_PACKED in the version 2 one); the worker
            // threads decide which refusal arrives first (k1 on lavapipe's 2 cores, a or b on
            // the H200 host's 16).
            let named = |why: &str| text.contains(&format!("pages decoded on the host: {why}"));
            let delta = |c: &str| {
                named(&format!(
                    "column {c}: a data page encoded DELTA_BINARY_PACKED"
                ))
            };
            assert!(
                named("column k1") || ["a", "b", "c", "d"].into_iter().any(delta),
                "{text}"
            );
        } else {
            assert!(text.contains("page_decode=1"), "{text}");
            // Without group keys the program does not depend on the scan: each of the six
            // row groups (three a file) is aggregated as it arrives.
            let text = explain(&g, &format!("ANALYZE {}", queries[1])).await;
            assert!(text.contains("streamed_chunks=6"), "{text}");
        }
    }
}
