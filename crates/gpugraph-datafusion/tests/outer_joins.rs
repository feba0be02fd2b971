//! Outer joins that preserve the smaller side (TPC-H Q13's `customer left outer join orders`)
//! under a GPU aggregate, against DataFusion's CPU plan: the larger input streams and joins
//! the smaller one's key map, and every row of the smaller side is a group, those without a
//! match as SQL's NULL-extended row (counts 0; sums, minima and maxima NULL); NULL keys on
//! either side, an empty side, filters in the join's ON clause; and what the GPU does not
//! take (count(*), a filter above the join, a repeated key) on the CPU with its reason.

mod common;

use std::sync::Arc;

use common::{explain, gpu, register, same, sessions, table};
use gpugraph_datafusion::datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array};
use gpugraph_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::prelude::SessionContext;

/// `d`: 400 rows of unique even keys (one NULL key), the preserved side.
fn dimension() -> (Arc<Schema>, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int32, true),
        Field::new("g", DataType::Int32, false),
        Field::new("v", DataType::Int64, false),
    ]));
    // Keys 0, 2, …, 798: those past 600 (and the odd ones) match no `f` row.
    let k: Int32Array = (0..400).map(|i| (i != 7).then_some(2 * i)).collect();
    let g: Int32Array = (0..400).map(|i| Some(i % 3)).collect();
    let v: Int64Array = (0..400).map(|i| Some(i64::from(i) * 10)).collect();
    let columns: Vec<ArrayRef> = vec![Arc::new(k), Arc::new(g), Arc::new(v)];
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).expect("batch");
    (schema, vec![batch.slice(0, 150), batch.slice(150, 250)])
}

/// `f` (20,000 rows, keys −50..600 with NULLs, so some match no `d` row and some `d`
/// rows none), `d`, `e` (empty), `s` (keys repeat).
fn tables(g: &SessionContext, c: &SessionContext) {
    register([g, c], "f", table(20_000, 1, (-50, 600), 0.05));
    register([g, c], "d", dimension());
    register([g, c], "e", table(0, 4, (0, 300), 0.01));
    register([g, c], "s", table(3_000, 2, (0, 300), 0.01));
}

const ON_GPU: &[&str] = &[
    "SELECT d.k, count(f.v) FROM d LEFT JOIN f ON d.k = f.k GROUP BY d.k ORDER BY d.k",
    "SELECT d.k, count(f.v), sum(f.v), min(f.v), max(f.g) FROM d LEFT JOIN f \
     ON d.k = f.k AND f.v > 0 GROUP BY d.k ORDER BY d.k",
    "SELECT d.k, d.g, count(f.v) FROM f RIGHT JOIN d ON d.k = f.k AND f.g <> 2 \
     GROUP BY d.k, d.g ORDER BY d.k",
    // An empty preserved side: no group.
    "SELECT e.k, count(f.v) FROM e LEFT JOIN f ON e.k = f.k GROUP BY e.k ORDER BY e.k",
    // TPC-H Q13's shape: the outer count over the inner counts.
    "SELECT c_count, count(*) AS custdist FROM (SELECT d.k, count(f.v) AS c_count \
     FROM d LEFT JOIN f ON d.k = f.k AND f.g <> 2 GROUP BY d.k) AS c_orders \
     GROUP BY c_count ORDER BY custdist DESC, c_count DESC",
];

#[tokio::test]
async fn joins_preserving_the_smaller_side_run_on_the_gpu_and_match_the_cpu() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    for q in ON_GPU {
        let placement = same(&g, &c, q).await;
        assert!(placement.gpu >= 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        assert!(placement.cpu.is_empty(), "{q}: {placement:?}");
        let text = explain(&g, q).await;
        assert!(!text.contains("HashJoinExec"), "{q}\n{text}");
    }
}

#[tokio::test]
async fn what_the_preserved_side_does_not_take_stays_on_the_cpu() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    for (q, why) in [
        (
            "SELECT d.k, count(*) FROM d LEFT JOIN f ON d.k = f.k GROUP BY d.k ORDER BY d.k",
            "NULL-extended",
        ),
        (
            "SELECT d.k, count(f.v) FROM d LEFT JOIN f ON d.k = f.k WHERE f.v IS NULL OR f.v > 0 \
             GROUP BY d.k ORDER BY d.k",
            "filter above",
        ),
        (
            "SELECT f.g, count(f.v) FROM d LEFT JOIN f ON d.k = f.k GROUP BY f.g ORDER BY f.g",
            "group keys",
        ),
        // The streamed side's join key is NULL where nothing matched, not the side's key.
        (
            "SELECT f.k, count(f.v) FROM d LEFT JOIN f ON d.k = f.k GROUP BY f.k ORDER BY f.k",
            "streamed side's",
        ),
    ] {
        let placement = same(&g, &c, q).await;
        assert!(
            placement.cpu.iter().any(|r| r.contains(why)),
            "{q}: {placement:?}"
        );
    }
    // A repeated key on the preserved side: known when it is collected.
    let q = "SELECT s.k, count(f.v) FROM s LEFT JOIN f ON s.k = f.k GROUP BY s.k ORDER BY s.k";
    let placement = same(&g, &c, q).await;
    assert!(
        placement.fallbacks.iter().any(|r| r.contains("repeats")),
        "{q}: {placement:?}"
    );
}
