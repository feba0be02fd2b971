//! Many-to-one inner joins whose lookup side carries payload columns (TPC-H Q12's `CASE`s of
//! `o_orderpriority`, Q14's `p_type LIKE 'PROMO%'`), built on the GPU from the side's GPU
//! columns (`plan/payload.rs`: presence bitmaps over the key, one per payload value) against
//! DataFusion's CPU plan: random dimension tables of unique keys with NULL keys beside them,
//! uneven batches and boundary sizes, payloads of every listed type (booleans, `CASE`s of
//! integer, decimal and date literals, string predicates by code), an empty side; and the
//! sides the data refuses (a repeated key, a NULL payload, keys past 32 bits) collected on
//! the CPU and decided by the collected build's rule, with DataFusion's answer.

mod common;

use std::sync::Arc;

use common::{explain, gpu, register, same, sessions, table};
use gpugraph_datafusion::datafusion::arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, StringArray,
};
use gpugraph_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::prelude::SessionContext;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// A dimension table of `rows` rows with unique keys `first + d` for a random `d` in
/// `0..2 × rows` (Int64 keys when `wide`), `nulls` more rows with a NULL key, and payload
/// columns: `s` (one of five strings), `v` (an Int32), `m` (a decimal), `dt` (a date).
/// Batches of uneven sizes.
fn dimension(rows: usize, seed: u64, first: i64, wide: bool, nulls: usize) -> Table {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut offsets: Vec<i64> = (0..2 * rows as i64).collect();
    offsets.shuffle(&mut rng);
    let mut keys: Vec<Option<i64>> = offsets[..rows].iter().map(|d| Some(first + d)).collect();
    keys.extend(std::iter::repeat_n(None, nulls));
    keys.shuffle(&mut rng);
    let key_type = if wide {
        DataType::Int64
    } else {
        DataType::Int32
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", key_type, true),
        Field::new("s", DataType::Utf8, false),
        Field::new("v", DataType::Int32, false),
        Field::new("m", DataType::Decimal128(12, 2), false),
        Field::new("dt", DataType::Date32, false),
    ]));
    let mut batches = Vec::new();
    let mut at = 0;
    while at < keys.len() || batches.is_empty() {
        let n = rng.random_range(1..=700).min(keys.len() - at);
        let part = &keys[at..at + n];
        let k: ArrayRef = if wide {
            Arc::new(Int64Array::from(part.to_vec()))
        } else {
            Arc::new(Int32Array::from_iter(
                part.iter().map(|k| k.map(|k| k as i32)),
            ))
        };
        let names = ["a", "b", "c", "d", "e"];
        let s = StringArray::from_iter_values((0..n).map(|_| names[rng.random_range(0..5)]));
        let v = Int32Array::from_iter_values((0..n).map(|_| rng.random_range(-1000..1000)));
        let m =
            Decimal128Array::from_iter_values((0..n).map(|_| rng.random_range(-99_999..99_999)))
                .with_precision_and_scale(12, 2)
                .expect("decimal");
        let dt = Date32Array::from_iter_values((0..n).map(|_| rng.random_range(8000..11000)));
        let columns: Vec<ArrayRef> = vec![k, Arc::new(s), Arc::new(v), Arc::new(m), Arc::new(dt)];
        batches.push(RecordBatch::try_new(Arc::clone(&schema), columns).expect("batch"));
        at += n;
    }
    (schema, batches)
}

type Table = (Arc<Schema>, Vec<RecordBatch>);

/// Queries of fact `f` joined with dimension `d` whose lookup side is found on the GPU: its
/// payload columns are booleans or `CASE`s of literals (or none: a join that only filters).
const ON_GPU: &[&str] = &[
    // Q12's shape: two 0/1 CASEs over a string column, by code.
    "SELECT f.g, sum(CASE WHEN d.s = 'a' OR d.s = 'b' THEN 1 ELSE 0 END), \
     sum(CASE WHEN d.s <> 'a' AND d.s <> 'b' THEN 1 ELSE 0 END) \
     FROM f JOIN d ON f.k = d.k WHERE f.v > -500000 GROUP BY f.g ORDER BY f.g",
    // Q14's shape: a LIKE under a sum's CASE.
    "SELECT sum(CASE WHEN d.s LIKE 'c%' THEN f.v ELSE 0 END), sum(f.v) \
     FROM f JOIN d ON f.k = d.k WHERE f.g > 1",
    // A boolean payload as a sum's switch (the GPU plans compute booleans from numbers and
    // strings, not read from boolean columns).
    "SELECT f.g, sum(CASE WHEN d.m < 0 OR d.s = 'e' THEN f.v ELSE -f.v END) \
     FROM f JOIN d ON f.k = d.k GROUP BY f.g ORDER BY f.g",
    // CASEs of decimal, negative integer and date literals.
    "SELECT f.g, sum(CASE WHEN d.v > 0 THEN CAST(1.25 AS DECIMAL(10, 2)) \
     ELSE CAST(-3.5 AS DECIMAL(10, 2)) END), \
     min(CASE WHEN d.dt > DATE '1995-01-01' THEN DATE '1995-01-01' ELSE DATE '1996-03-01' END) \
     FROM f JOIN d ON f.k = d.k GROUP BY f.g ORDER BY f.g",
    "SELECT sum(CASE WHEN d.m > 0 THEN -7 WHEN d.s = 'e' THEN 2147483647 ELSE -2147483648 END) \
     FROM f JOIN d ON f.k = d.k",
    // No payload: the join only filters.
    "SELECT f.g, count(*), sum(f.v) FROM f JOIN d ON f.k = d.k GROUP BY f.g ORDER BY f.g",
    // An outer join's side (its payload expressions would be NULL on unmatched rows, so
    // they are gathered as plain columns and collected: none here).
    "SELECT f.g, count(*), sum(f.v) FROM f LEFT JOIN d ON f.k = d.k GROUP BY f.g ORDER BY f.g",
    // A filtered side.
    "SELECT f.g, sum(CASE WHEN d.s = 'd' THEN 1 ELSE 0 END) FROM f \
     JOIN (SELECT * FROM d WHERE d.v > 0) d ON f.k = d.k GROUP BY f.g ORDER BY f.g",
];

/// Registers fact `f` (keys −50..700 with NULLs) and dimension `d` in both sessions.
fn tables(g: &SessionContext, c: &SessionContext, d: Table) {
    register([g, c], "f", table(20_000, 1, (-50, 700), 0.05));
    register([g, c], "d", d);
}

/// What `EXPLAIN ANALYZE` of `q` shows after a run.
async fn analyzed(g: &SessionContext, q: &str) -> String {
    explain(g, &format!("ANALYZE {q}")).await
}

#[tokio::test]
async fn payload_sides_come_from_gpu_columns_and_match_the_cpu() {
    let gpu = gpu();
    // Boundary sizes of the side (empty, one key, a bitmap word's edges, several batches),
    // NULL keys beside them, keys from a negative first key.
    for (rows, nulls, first) in [
        (0, 0, 0),
        (1, 2, 5),
        (31, 0, -40),
        (33, 3, 0),
        (320, 17, -20),
    ] {
        let (g, c) = sessions(&gpu);
        tables(
            &g,
            &c,
            dimension(rows, rows as u64 + 7, first, false, nulls),
        );
        for q in ON_GPU {
            let placement = same(&g, &c, q).await;
            assert_eq!(placement.gpu, 1, "{rows} rows: {q}: {placement:?}");
            assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
            let text = explain(&g, q).await;
            assert!(!text.contains("HashJoinExec"), "{q}\n{text}");
            assert!(text.contains("from GPU columns]"), "{q}\n{text}");
            let text = analyzed(&g, q).await;
            assert!(text.contains("gpu_payloads=1"), "{rows} rows: {q}\n{text}");
            assert!(!text.contains("gpu_payloads_refused"), "{q}\n{text}");
            assert!(!text.contains("lookup_rows="), "{q}\n{text}");
        }
    }
}

/// A payload the planner cannot list (a plain integer column) is collected on the CPU, and
/// `--explain` says why; `GPUGRAPH_GPU_LOOKUPS=0` is tested in `tests/tpch_queries.rs`.
#[tokio::test]
async fn unlisted_payloads_are_collected() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c, dimension(300, 3, 0, false, 4));
    let q = "SELECT f.g, sum(d.v), count(*) FROM f JOIN d ON f.k = d.k GROUP BY f.g ORDER BY f.g";
    let placement = same(&g, &c, q).await;
    assert_eq!(placement.gpu, 1, "{placement:?}");
    assert!(placement.fallbacks.is_empty(), "{placement:?}");
    let text = explain(&g, q).await;
    assert!(
        text.contains("v@1 AS Int64) is not a boolean or a CASE of literals"),
        "{text}"
    );
    let text = analyzed(&g, q).await;
    assert!(!text.contains("gpu_payloads"), "{text}");
    // 300 keys and 4 NULL keys.
    assert!(text.contains("lookup_rows=304"), "{text}");
}

/// Sides the GPU plan finds but the data refuses are collected, and the collected build
/// decides as before: a repeated key and a NULL payload refuse the GPU join (DataFusion's
/// plan answers), keys past 32 bits too; every answer is DataFusion's.
#[tokio::test]
async fn refused_payload_sides_fall_back_to_collecting() {
    let gpu = gpu();
    let q12 = ON_GPU[0];
    // A repeated key: the join is not many-to-one.
    let (g, c) = sessions(&gpu);
    let (schema, mut batches) = dimension(200, 11, 0, false, 2);
    batches.push(batches[0].slice(0, 1));
    tables(&g, &c, (schema, batches));
    let placement = same(&g, &c, q12).await;
    assert!(
        placement
            .fallbacks
            .iter()
            .any(|f| f.contains("repeats the value")),
        "{placement:?}"
    );
    let text = analyzed(&g, q12).await;
    assert!(text.contains("gpu_payloads_refused=1"), "{text}");
    // A NULL payload: a CASE without ELSE.
    let (g, c) = sessions(&gpu);
    tables(&g, &c, dimension(200, 12, 0, false, 0));
    let q = "SELECT f.g, sum(CASE WHEN d.s = 'a' THEN 1 END) FROM f JOIN d ON f.k = d.k \
             GROUP BY f.g ORDER BY f.g";
    let placement = same(&g, &c, q).await;
    assert!(
        placement.fallbacks.iter().any(|f| f.contains("nulls")),
        "{placement:?}"
    );
    assert!(analyzed(&g, q).await.contains("gpu_payloads_refused=1"));
    // A side key past 32 bits (the streamed keys within them).
    let (g, c) = sessions(&gpu);
    let (schema, mut wide) = dimension(100, 13, 0, true, 1);
    wide.extend(dimension(1, 14, 1 << 33, true, 0).1);
    let (_, facts) = table(5_000, 2, (0, 250), 0.05);
    let fact_schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("g", DataType::Int32, false),
        Field::new("v", DataType::Int64, false),
    ]));
    let facts = facts
        .iter()
        .map(|b| {
            let k = b
                .column(0)
                .as_any()
                .downcast_ref::<Int32Array>()
                .expect("keys");
            let k: Int64Array = k.iter().map(|k| k.map(i64::from)).collect();
            let columns = vec![
                Arc::new(k) as ArrayRef,
                b.column(1).clone(),
                b.column(2).clone(),
            ];
            RecordBatch::try_new(Arc::clone(&fact_schema), columns).expect("batch")
        })
        .collect();
    register([&g, &c], "f", (fact_schema, facts));
    register([&g, &c], "d", (schema, wide));
    let placement = same(&g, &c, q12).await;
    assert!(
        placement
            .fallbacks
            .iter()
            .any(|f| f.contains("past the GPU's 32 bits")),
        "{placement:?}"
    );
    let text = analyzed(&g, q12).await;
    assert!(!text.contains("gpu_payloads"), "{text}");
}
