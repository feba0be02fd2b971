//! String expressions over one column on dictionary codes (`LIKE`, `substr(…) IN (…)`,
//! `starts_with`, `upper`, `length`, CASEs over them), evaluated once per distinct string and
//! looked up by code on the GPU, against DataFusion's CPU plan: random strings with NULLs,
//! an all-NULL column, an empty table, filters and aggregate arguments, beside group keys of
//! the same column; and the expressions it does not take staying on the CPU with a reason.

mod common;

use std::sync::Arc;

use common::{explain, gpu, same, sessions};
use gpugraph_datafusion::datafusion::arrow::array::{
    ArrayRef, Int32Array, Int64Array, StringArray,
};
use gpugraph_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::datasource::MemTable;
use gpugraph_datafusion::datafusion::prelude::SessionContext;
use rand::{Rng, SeedableRng};

/// `rows` rows of (s, t, g, v) in batches of at most 1,000: s and t phone-like strings of a
/// few prefixes (NULL with probability `nulls`), g in 0..5, v in ±10^6.
fn table(rows: usize, seed: u64, nulls: f64) -> (Arc<Schema>, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("s", DataType::Utf8, true),
        Field::new("t", DataType::Utf8, true),
        Field::new("g", DataType::Int32, false),
        Field::new("v", DataType::Int64, false),
    ]));
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let prefixes = ["13", "31", "23", "ab", "2", "", "17"];
    let string = |rng: &mut rand::rngs::StdRng| {
        (!rng.random_bool(nulls)).then(|| {
            let p = prefixes[rng.random_range(0..prefixes.len())];
            format!("{p}-{}", rng.random_range(0..300))
        })
    };
    let mut batches = Vec::new();
    let mut left = rows;
    while left > 0 || batches.is_empty() {
        let n = left.min(1000);
        let s: StringArray = (0..n).map(|_| string(&mut rng)).collect();
        let t: StringArray = (0..n).map(|_| string(&mut rng)).collect();
        let g: Int32Array = (0..n).map(|_| Some(rng.random_range(0..5))).collect();
        let v: Int64Array = (0..n)
            .map(|_| Some(rng.random_range(-1_000_000..1_000_000)))
            .collect();
        let columns: Vec<ArrayRef> = vec![Arc::new(s), Arc::new(t), Arc::new(g), Arc::new(v)];
        batches.push(RecordBatch::try_new(Arc::clone(&schema), columns).expect("batch"));
        left -= n;
    }
    (schema, batches)
}

/// `f` (20,000 rows, 5% NULL strings), `n` (strings all NULL), `e` (empty).
fn tables(g: &SessionContext, c: &SessionContext) {
    for (name, (schema, batches)) in [
        ("f", table(20_000, 1, 0.05)),
        ("n", table(3_000, 2, 1.0)),
        ("e", table(0, 3, 0.05)),
    ] {
        for ctx in [g, c] {
            let t = MemTable::try_new(Arc::clone(&schema), vec![batches.clone()]).expect("table");
            ctx.register_table(name, Arc::new(t)).expect("registers");
        }
    }
}

const IN: &str = "('13', '31', '23', '29', '30', '18', '17')";

/// Queries whose string expressions run on the GPU by code.
fn on_gpu() -> Vec<String> {
    let mut queries: Vec<String> = [
        "SELECT g, count(*), sum(v) FROM f WHERE s LIKE '%3%' GROUP BY g ORDER BY g",
        "SELECT g, count(*), sum(v) FROM f WHERE s NOT LIKE '1%' GROUP BY g ORDER BY g",
        "SELECT g, count(*) FROM f WHERE NOT (s LIKE '1%') OR s IS NULL GROUP BY g ORDER BY g",
        "SELECT count(*), sum(v) FROM f WHERE starts_with(s, '2') AND v > 0",
        "SELECT g, count(*) FROM f WHERE upper(s) = 'AB-7' OR t LIKE 'ab%' GROUP BY g ORDER BY g",
        "SELECT g, sum(character_length(s)), count(length(s)) FROM f GROUP BY g ORDER BY g",
        "SELECT sum(CASE WHEN s LIKE '1%' THEN v ELSE 0 END), min(length(t)) FROM f",
        "SELECT s, count(*) FROM f WHERE length(s) > 5 GROUP BY s ORDER BY s",
        "SELECT count(*), sum(v) FROM e WHERE s LIKE '%3%'",
        "SELECT g, count(*), sum(v) FROM n WHERE s NOT LIKE '1%' GROUP BY g ORDER BY g",
        "SELECT g, count(*) FROM n WHERE coalesce(s, 'x') = 'x' GROUP BY g ORDER BY g",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    // TPC-H Q22's filters: the subquery's and the outer query's.
    queries.push(format!(
        "SELECT sum(v), count(*) FROM f WHERE v > 0 AND substring(s from 1 for 2) IN {IN}"
    ));
    queries.push(format!(
        "SELECT g, count(*), sum(v) FROM f WHERE substr(s, 1, 2) IN {IN} \
         AND substr(t, 1, 2) NOT IN {IN} GROUP BY g ORDER BY g"
    ));
    // Group keys that are string expressions (Q22's `cntrycode`), NULL's group included,
    // beside a plain key; an integer one.
    queries
        .push("SELECT substr(s, 1, 2) AS p, count(*), sum(v) FROM f GROUP BY p ORDER BY p".into());
    queries.push(
        "SELECT substr(s, 1, 2) AS p, g, count(*) FROM f WHERE t LIKE '%3%' \
         GROUP BY p, g ORDER BY p, g"
            .into(),
    );
    queries.push("SELECT length(s) AS l, count(*) FROM f GROUP BY l ORDER BY l".into());
    queries.push("SELECT upper(s) AS u, count(*) FROM n GROUP BY u ORDER BY u".into());
    queries.push("SELECT upper(s) AS u, count(*) FROM e GROUP BY u ORDER BY u".into());
    // Values known when the query runs: an uncorrelated scalar subquery's, NULL over no
    // rows.
    queries.push(
        "SELECT g, count(*), sum(v) FROM f WHERE v > (SELECT max(v) FROM f WHERE g = 1) - 500000 \
         AND s LIKE '1%' GROUP BY g ORDER BY g"
            .into(),
    );
    queries.push(
        "SELECT count(*), sum(v) FROM f WHERE v > (SELECT max(v) FROM e) OR s LIKE '2%'".into(),
    );
    // TPC-H Q22's shape whole: the outer aggregate by code, with the subquery's value and
    // the NOT EXISTS anti join.
    queries.push(format!(
        "SELECT substr(s, 1, 2) AS p, count(*), sum(v) FROM f \
         WHERE substr(s, 1, 2) IN {IN} \
         AND v > (SELECT min(v) FROM f WHERE v > 0 AND substr(s, 1, 2) IN {IN}) \
         AND NOT EXISTS (SELECT 1 FROM f AS o WHERE o.v = f.v + 1) \
         GROUP BY p ORDER BY p"
    ));
    queries
}

#[tokio::test]
async fn string_expressions_run_by_code_and_match_the_cpu() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    for q in on_gpu() {
        let placement = same(&g, &c, &q).await;
        assert!(placement.gpu >= 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        assert!(placement.cpu.is_empty(), "{q}: {placement:?}");
        let text = explain(&g, &q).await;
        assert!(
            text.contains("by code=[") || text.contains(" by code, "),
            "{q}\n{text}"
        );
        if q.contains("(SELECT") {
            assert!(
                text.contains("values at run time=[scalar_subquery("),
                "{q}\n{text}"
            );
        }
        if q.contains(" AS p") {
            assert!(
                text.contains("gby=[substr(s@0, 1, 2) by code"),
                "{q}\n{text}"
            );
        }
    }
}

/// A comparison with a literal needs no table: it stays a code comparison.
#[tokio::test]
async fn a_literal_comparison_needs_no_map() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    let q =
        "SELECT g, count(*) FROM f WHERE s = '13-7' OR s IN ('2-1', '17-5') GROUP BY g ORDER BY g";
    let placement = same(&g, &c, q).await;
    assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
    let text = explain(&g, q).await;
    assert!(!text.contains("by code=["), "{q}\n{text}");
}

/// Two columns in one string expression, a string-valued result compared with a column: on
/// the CPU, with the reason; a mapped value past 32 bits: the CPU at run time, with it.
#[tokio::test]
async fn what_the_maps_do_not_take_stays_on_the_cpu() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    for q in [
        "SELECT count(*) FROM f WHERE concat(s, t) LIKE '13%2%'",
        "SELECT count(*) FROM f WHERE upper(s) = t",
    ] {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.gpu, 0, "{q}: {placement:?}");
        assert!(!placement.cpu.is_empty(), "{q}: {placement:?}");
    }
    let q = "SELECT g, sum(CAST(length(s) AS BIGINT) * 10000000000) FROM f GROUP BY g ORDER BY g";
    let placement = same(&g, &c, q).await;
    assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
    assert!(
        placement
            .fallbacks
            .iter()
            .any(|r| r.contains("looked up by code") && r.contains("32 bits")),
        "{q}: {placement:?}"
    );
}
