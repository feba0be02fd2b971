//! `ORDER BY … LIMIT k` on the GPU against DataFusion's CPU plan: every supported key type,
//! both directions and null placements, keys with ties (then only the key columns are
//! compared: which tied rows a top-k keeps is unspecified in SQL), OFFSET, a limit past the
//! rows, empty input, a top-k over a GPU aggregate, and a string key left on the CPU with its
//! reason.

mod common;

use std::sync::Arc;

use common::{explain, gpu, run, same, sessions};
use gpugraph_datafusion::datafusion::arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array, StringArray,
};
use gpugraph_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::datasource::MemTable;
use gpugraph_datafusion::datafusion::prelude::SessionContext;
use gpugraph_datafusion::{session_context_on, Engine, SessionOptions};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// `rows` rows with a unique shuffled `id`, a few-valued `g`, nullable `d`, `b` and `f`
/// (with NaN and ±0) and a unique string `s`, in uneven batches.
fn register(ctxs: [&SessionContext; 2], rows: usize) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("g", DataType::Int32, false),
        Field::new("d", DataType::Date32, true),
        Field::new("b", DataType::Decimal128(15, 2), true),
        Field::new("f", DataType::Float64, true),
        Field::new("s", DataType::Utf8, false),
    ]));
    let mut ids: Vec<i64> = (0..rows as i64).map(|i| i * 7 - 1000).collect();
    ids.shuffle(&mut rng);
    let mut batches = Vec::new();
    let mut at = 0;
    while at < rows {
        let n = rng.random_range(1..=(rows - at).min(700));
        let id = &ids[at..at + n];
        let specials = [f64::NAN, -0.0, 0.0, f64::INFINITY, -1.5];
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(id.to_vec())),
            Arc::new(Int32Array::from_iter_values(
                (0..n).map(|_| rng.random_range(0..4)),
            )),
            Arc::new(Date32Array::from_iter((0..n).map(|_| {
                (rng.random_range(0..5) != 0).then(|| 19_000 + rng.random_range(0..30))
            }))),
            Arc::new(
                Decimal128Array::from_iter(
                    id.iter().map(|&i| (i % 11 != 0).then_some(i as i128 * 37)),
                )
                .with_precision_and_scale(15, 2)
                .expect("decimal"),
            ),
            Arc::new(Float64Array::from_iter(id.iter().map(|&i| match i % 13 {
                0 => None,
                1..=5 => Some(specials[(i % 13) as usize - 1]),
                _ => Some(i as f64 / 3.0),
            }))),
            Arc::new(StringArray::from_iter_values(
                id.iter().map(|i| format!("s{i:08}")),
            )),
        ];
        batches.push(RecordBatch::try_new(Arc::clone(&schema), columns).expect("batch"));
        at += n;
    }
    for ctx in ctxs {
        let table = MemTable::try_new(Arc::clone(&schema), vec![batches.clone()]).expect("table");
        ctx.register_table("t", Arc::new(table)).expect("registers");
    }
}

/// Queries whose order is total (ties broken by `id`): the whole rows must match.
const EXACT: &[&str] = &[
    "SELECT * FROM t ORDER BY id DESC LIMIT 7",
    "SELECT id, b FROM t ORDER BY b DESC NULLS LAST, id LIMIT 50",
    "SELECT id, b FROM t ORDER BY b NULLS FIRST, id DESC LIMIT 50",
    "SELECT id, f FROM t ORDER BY f, id LIMIT 40",
    "SELECT id, f FROM t ORDER BY f DESC NULLS LAST, id LIMIT 40",
    "SELECT g, d, id FROM t ORDER BY g, d NULLS FIRST, id DESC LIMIT 100",
    "SELECT id, g FROM t WHERE g = 1 ORDER BY id LIMIT 5 OFFSET 3",
    "SELECT id + 1 AS j, s FROM t ORDER BY j DESC LIMIT 3",
    // Past the rows; no rows.
    "SELECT id FROM t ORDER BY id LIMIT 100000",
    "SELECT id FROM t WHERE id < -5000 ORDER BY id LIMIT 3",
];

#[tokio::test]
async fn top_k_on_the_gpu_matches_the_cpu() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    register([&g, &c], 5000);
    for q in EXACT {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.topk, 1, "{q}: {placement:?}");
        assert!(placement.cpu.is_empty(), "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
    }
    let text = explain(&g, EXACT[0]).await;
    assert!(
        text.contains("GpuTopKExec: on=GPU, fetch=7, expr=[id@0 DESC]"),
        "{text}"
    );
}

#[tokio::test]
async fn ties_keep_some_rows_with_the_same_keys() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    register([&g, &c], 3000);
    for q in [
        "SELECT g FROM t ORDER BY g LIMIT 10",
        "SELECT g, d FROM t ORDER BY g DESC, d LIMIT 333",
    ] {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.topk, 1, "{q}: {placement:?}");
    }
    // The top-k of a GPU aggregate's groups.
    let q =
        "SELECT g, count(*) AS n, sum(b) AS total FROM t GROUP BY g ORDER BY total DESC LIMIT 2";
    let placement = same(&g, &c, q).await;
    assert_eq!((placement.gpu, placement.topk), (1, 1), "{placement:?}");
}

/// By default a sort fed from the host stays DataFusion's (its heap and dynamic scan filter),
/// unmarked, and a sort over a GPU aggregate's groups runs on the GPU.
#[tokio::test]
async fn host_fed_sorts_stay_datafusions_by_default() {
    let gpu = gpu();
    let (_, c) = sessions(&gpu);
    let g = session_context_on(
        &SessionOptions {
            engine: Engine::Gpu,
            target_partitions: Some(2),
            ..SessionOptions::default()
        },
        Arc::clone(&gpu),
        true,
    );
    register([&g, &c], 2000);
    let q = EXACT[0];
    let placement = same(&g, &c, q).await;
    assert_eq!(
        (placement.topk, placement.cpu.len()),
        (0, 0),
        "{placement:?}"
    );
    let q =
        "SELECT g, count(*) AS n, sum(b) AS total FROM t GROUP BY g ORDER BY total DESC LIMIT 2";
    let placement = same(&g, &c, q).await;
    assert_eq!((placement.gpu, placement.topk), (1, 1), "{placement:?}");
}

#[tokio::test]
async fn string_keys_stay_on_the_cpu_and_explain_says_why() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    register([&g, &c], 2000);
    let q = "SELECT s, id FROM t ORDER BY s DESC LIMIT 4";
    let placement = same(&g, &c, q).await;
    assert_eq!(placement.topk, 0, "{placement:?}");
    assert!(
        placement
            .cpu
            .iter()
            .any(|r| r.contains("sort key s@0") && r.contains("Utf8")),
        "{placement:?}"
    );
    let text = explain(&g, q).await;
    assert!(
        text.contains("CpuFallbackExec: on=CPU, reason=sort key"),
        "{text}"
    );
    // A sort without LIMIT is DataFusion's, unmarked.
    let (_, placement) = run(&g, "SELECT id FROM t ORDER BY id").await;
    assert_eq!(
        (placement.topk, placement.cpu.len()),
        (0, 0),
        "{placement:?}"
    );
}
