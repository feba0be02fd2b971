//! Semi and anti joins (`EXISTS`, `NOT EXISTS`, `IN (subquery)`, `NOT IN (subquery)`, as
//! DataFusion decorrelates them) on the GPU against DataFusion's CPU plan: random keys that
//! repeat on the set side, NULL keys on either side, empty sets, composed with filters and
//! group keys; joins with a filter comparing a set value with the kept row's (TPC-H Q21's
//! `l2.l_suppkey <> l1.l_suppkey`), decided from the set's per-key extremes; and the joins
//! the GPU does not take (several keys, other join filters) staying on the CPU with their
//! reason.

mod common;

use common::{explain, gpu, register, same, sessions, table};
use gpugraph_datafusion::datafusion::prelude::SessionContext;

/// The fact table `f` (20,000 rows, keys −50..400 with NULLs), the set tables `s` (3,000
/// rows of keys 0..300, so each repeats, with NULLs), `n` (the same without NULLs, a
/// non-nullable column), `e` (empty) and `one` (one row).
fn tables(g: &SessionContext, c: &SessionContext) {
    register([g, c], "f", table(20_000, 1, (-50, 400), 0.05));
    register([g, c], "s", table(3_000, 2, (0, 300), 0.01));
    register([g, c], "n", table(3_000, 3, (0, 300), 0.0));
    register([g, c], "e", table(0, 4, (0, 300), 0.01));
    register([g, c], "one", table(1, 5, (7, 8), 0.0));
}

/// Queries whose semi or anti join runs on the GPU, and the kind `--explain` names.
const ON_GPU: &[(&str, &str)] = &[
    (
        "SELECT g, count(*), sum(v) FROM f WHERE EXISTS (SELECT 1 FROM s WHERE s.k = f.k) \
         GROUP BY g ORDER BY g",
        "semi",
    ),
    (
        "SELECT g, count(*), sum(v) FROM f WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.k = f.k) \
         GROUP BY g ORDER BY g",
        "anti",
    ),
    (
        "SELECT g, count(*), min(v) FROM f WHERE k IN (SELECT k FROM s WHERE g > 2) AND v > 0 \
         GROUP BY g ORDER BY g",
        "semi",
    ),
    // The set holds NULL: no row.
    (
        "SELECT count(*), sum(v) FROM f WHERE k NOT IN (SELECT k FROM s)",
        "anti",
    ),
    (
        "SELECT g, count(*), sum(v) FROM f WHERE k NOT IN (SELECT k FROM s WHERE k IS NOT NULL) \
         GROUP BY g ORDER BY g",
        "anti",
    ),
    (
        "SELECT g, count(*), sum(v) FROM f WHERE k NOT IN (SELECT k FROM n WHERE v > 0) \
         AND g <> 3 GROUP BY g ORDER BY g",
        "anti",
    ),
    // An empty set: NOT IN keeps every row, NULL keys too; EXISTS none; NOT EXISTS all.
    (
        "SELECT count(*), sum(v) FROM f WHERE k NOT IN (SELECT k FROM s WHERE v > 5000000)",
        "anti",
    ),
    (
        "SELECT count(*), sum(v) FROM f WHERE k NOT IN (SELECT k FROM e)",
        "anti",
    ),
    (
        "SELECT count(*), sum(v) FROM f WHERE EXISTS (SELECT 1 FROM e WHERE e.k = f.k)",
        "semi",
    ),
    (
        "SELECT g, count(*) FROM f WHERE NOT EXISTS (SELECT 1 FROM e WHERE e.k = f.k) \
         GROUP BY g ORDER BY g",
        "anti",
    ),
    // No row kept, no row streamed.
    (
        "SELECT count(*), sum(v) FROM e WHERE k IN (SELECT k FROM s)",
        "semi",
    ),
    (
        "SELECT count(*), sum(v) FROM e WHERE k NOT IN (SELECT k FROM n)",
        "anti",
    ),
    // Int64 keys, and a key that is an expression.
    (
        "SELECT g, count(*), sum(v) FROM f WHERE CAST(k AS BIGINT) + 7 IN \
         (SELECT CAST(k AS BIGINT) FROM s) GROUP BY g ORDER BY g",
        "semi",
    ),
    // A set of one row; a set whose keys all match.
    (
        "SELECT count(*), sum(v) FROM f WHERE k IN (SELECT k FROM one)",
        "semi",
    ),
    (
        "SELECT g, count(*) FROM n WHERE k IN (SELECT k FROM n WHERE g < 3) GROUP BY g ORDER BY g",
        "semi",
    ),
    // The smaller input kept (DataFusion keeps it on the left, its build side), the larger
    // one the set.
    (
        "SELECT g, count(*), sum(v) FROM s WHERE EXISTS (SELECT 1 FROM f WHERE f.k = s.k) \
         GROUP BY g ORDER BY g",
        "semi",
    ),
    (
        "SELECT g, count(*), max(v) FROM s WHERE NOT EXISTS (SELECT 1 FROM f WHERE f.k = s.k) \
         GROUP BY g ORDER BY g",
        "anti",
    ),
    // Two semi/anti joins over one stream, and one beside an inner join's filter.
    (
        "SELECT g, count(*), sum(v) FROM f WHERE k IN (SELECT k FROM s WHERE g = 1) \
         AND k NOT IN (SELECT k FROM n WHERE g = 2) GROUP BY g ORDER BY g",
        "semi",
    ),
];

#[tokio::test]
async fn semi_and_anti_joins_run_on_the_gpu_and_match_the_cpu() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    let mut seen = Vec::new();
    for (q, kind) in ON_GPU {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        assert!(placement.cpu.is_empty(), "{q}: {placement:?}");
        let text = explain(&g, q).await;
        let cpu = explain(&c, q).await;
        seen.extend(
            TYPES
                .iter()
                .filter(|t| cpu.contains(&format!("join_type={t}"))),
        );
        assert!(
            text.contains(&format!("{kind} join=[set key=")),
            "{q}\n{text}"
        );
        assert!(!text.contains("HashJoinExec"), "{q}\n{text}");
    }
    // DataFusion's plans keep either input; the queries reach every kind.
    for t in TYPES {
        assert!(seen.contains(&t), "no {t} join among the queries: {seen:?}");
    }
}

/// The join types the GPU takes as key sets.
const TYPES: [&str; 4] = ["LeftSemi", "RightSemi", "LeftAnti", "RightAnti"];

/// `NOT IN` is DataFusion's null-aware anti join: the plan says so, and the GPU keeps it.
#[tokio::test]
async fn not_in_is_planned_null_aware() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    let q = "SELECT count(*) FROM f WHERE k NOT IN (SELECT k FROM s)";
    let text = explain(&c, q).await;
    assert!(text.contains("null_aware"), "{text}");
    let text = explain(&g, q).await;
    assert!(text.contains("null-aware anti join=[set key="), "{text}");
}

/// Several keys, a join filter the GPU cannot decide per key, `NOT IN` with a filter: the
/// join stays on the CPU, and the reason names it.
#[tokio::test]
async fn joins_the_key_set_does_not_take_stay_on_the_cpu() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    for (q, why) in [
        (
            "SELECT g, count(*) FROM f WHERE EXISTS (SELECT 1 FROM s WHERE s.k = f.k AND s.g = f.g) \
             GROUP BY g ORDER BY g",
            "2 keys",
        ),
        // A filter that is not one comparison of a set value with the kept row's.
        (
            "SELECT g, count(*) FROM f WHERE NOT EXISTS \
             (SELECT 1 FROM s WHERE s.k = f.k AND s.v + f.v > 0) GROUP BY g ORDER BY g",
            "join filter",
        ),
        (
            "SELECT g, count(*) FROM f WHERE k NOT IN (SELECT k FROM s WHERE s.v > f.v) \
             GROUP BY g ORDER BY g",
            "join filter",
        ),
    ] {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.gpu, 0, "{q}: {placement:?}");
        assert!(placement.cpu.iter().any(|r| r.contains(why)), "{q}: {placement:?}");
    }
}

/// A set whose keys spread wider than its key map may, or pass i32: known when the set is
/// collected, so the aggregate runs DataFusion's plan at run time and says why.
#[tokio::test]
async fn a_sparse_key_set_falls_back_at_run_time() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    for (q, why) in [
        (
            "SELECT g, count(*), sum(v) FROM f WHERE k IN (SELECT k * 1000000 FROM n) \
             GROUP BY g ORDER BY g",
            "spans",
        ),
        // Int64 set keys past i32.
        (
            "SELECT count(*) FROM f WHERE v NOT IN (SELECT v * 100000 FROM n)",
            "32 bits",
        ),
    ] {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(
            placement.fallbacks.iter().any(|r| r.contains(why)),
            "{q}: {placement:?}"
        );
    }
}

/// Semi and anti joins whose filter compares a set value with the kept row's, every
/// operator either way round: the set side becomes a lookup of its per-key `min` and `max`
/// and the GPU answers as DataFusion's pairwise join does, with NULL keys on both sides,
/// NULL set and kept values (`CASE … THEN NULL`), an empty set and a set of one row.
#[tokio::test]
async fn filtered_semi_and_anti_joins_decide_by_the_keys_extremes() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    let mut queries = Vec::new();
    for filter in [
        "s.g <> f.g",
        "s.v < f.v",
        "s.v <= f.v",
        "s.v > f.v",
        "f.v <= s.v",
        "f.g > s.g",
        "CASE WHEN s.g = 0 THEN NULL ELSE s.g END <> CASE WHEN f.g = 1 THEN NULL ELSE f.g END",
        "s.v + 5 >= f.v * 2",
    ] {
        for not in ["", "NOT "] {
            queries.push(format!(
                "SELECT g, count(*), sum(v) FROM f WHERE {not}EXISTS \
                 (SELECT 1 FROM s WHERE s.k = f.k AND {filter}) GROUP BY g ORDER BY g"
            ));
        }
    }
    for set in ["e", "one", "n"] {
        for not in ["", "NOT "] {
            queries.push(format!(
                "SELECT count(*), sum(v) FROM f WHERE {not}EXISTS \
                 (SELECT 1 FROM {set} WHERE {set}.k = f.k AND {set}.g <> f.g)"
            ));
        }
    }
    for q in &queries {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        let text = explain(&g, q).await;
        assert!(!text.contains("HashJoinExec"), "{q}\n{text}");
        assert!(text.contains("lookup=[key="), "{q}\n{text}");
    }
}

/// A set side the GPU aggregates is found from its GPU columns, which stay on the GPU for
/// the next run (the nested plan's cache hit); one whose bitmap would be too wide (the
/// bounds of `k * 300000` before the filter) is collected on the CPU instead, and the
/// aggregate still runs on the GPU with DataFusion's answer.
#[tokio::test]
async fn key_sets_come_from_gpu_columns_and_fall_back_to_collecting() {
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    let q = "SELECT g, count(*), sum(v) FROM f WHERE EXISTS \
             (SELECT 1 FROM s WHERE s.k = f.k AND s.g > 1) GROUP BY g ORDER BY g";
    let text = explain(&g, q).await;
    assert!(
        text.contains("semi join=[set key=k@0 from GPU columns]"),
        "{text}"
    );
    for run in 0..2 {
        let placement = same(&g, &c, q).await;
        assert!(placement.fallbacks.is_empty(), "{placement:?}");
        let text = explain(&g, &format!("ANALYZE {q}")).await;
        assert!(text.contains("gpu_key_sets=1"), "run {run}: {text}");
        if run == 1 {
            assert!(text.contains("set_gpu_cache_hits=1"), "{text}");
        }
    }
    let wide = "SELECT g, count(*), sum(v) FROM f WHERE k IN \
                (SELECT k * 300000 FROM n WHERE k < 60) GROUP BY g ORDER BY g";
    let placement = same(&g, &c, wide).await;
    assert_eq!(placement.gpu, 1, "{placement:?}");
    assert!(placement.fallbacks.is_empty(), "{placement:?}");
    let text = explain(&g, &format!("ANALYZE {wide}")).await;
    assert!(!text.contains("gpu_key_sets"), "{text}");
    assert!(text.contains("lookup_rows="), "{text}");
}

/// Filtered semi and anti joins over random sets, operators, set filters and kept columns:
/// the per-key extremes side is aggregated on the GPU from the set's columns (`from GPU
/// columns`, counted `gpu_extremes`), and the answer is DataFusion's. Table `b` holds keys
/// at i32's top (span 8), values at i32's minimum and maximum, NULL values beside them, and
/// a key of one row; `e` is empty, `one` a single row.
#[tokio::test]
async fn per_key_extremes_come_from_gpu_columns() {
    use rand::{Rng, SeedableRng};
    let gpu = gpu();
    let (g, c) = sessions(&gpu);
    tables(&g, &c);
    let top = i32::MAX;
    let b = format!(
        "CREATE TABLE b (k INT, g INT, v INT) AS VALUES \
         ({top}, 1, -2147483648), ({top}, 2, 2147483647), ({top}, 3, NULL), \
         ({}, 4, 2147483647), ({}, 0, NULL), ({}, 0, -2147483648), ({}, 1, 5), (NULL, 2, 7)",
        top - 7,
        top - 3,
        top - 3,
        top - 5,
    );
    let fb = format!(
        "CREATE TABLE fb (k INT, g INT, v INT) AS VALUES \
         ({top}, 1, 0), ({top}, 2, -2147483648), ({top}, 3, 2147483647), ({top}, 4, NULL), \
         ({}, 0, 2147483647), ({}, 1, -2147483648), ({}, 3, 1), ({}, 2, 5), (NULL, 0, 1)",
        top - 7,
        top - 3,
        top - 5,
        top - 1,
    );
    for ctx in [&g, &c] {
        for create in [&b, &fb] {
            ctx.sql(create)
                .await
                .expect("plans")
                .collect()
                .await
                .expect("creates");
        }
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(49);
    let ops = ["<", "<=", ">", ">=", "<>"];
    let mut queries = vec![
        "SELECT g, count(*), sum(v) FROM fb WHERE EXISTS \
         (SELECT 1 FROM b WHERE b.k = fb.k AND b.v <> fb.v) GROUP BY g ORDER BY g"
            .to_string(),
        "SELECT g, count(*), sum(v) FROM fb WHERE NOT EXISTS \
         (SELECT 1 FROM b WHERE b.k = fb.k AND b.v > fb.v) GROUP BY g ORDER BY g"
            .to_string(),
    ];
    for _ in 0..14 {
        let (kept, set) =
            [("f", "s"), ("f", "n"), ("f", "e"), ("f", "one"), ("s", "f")][rng.random_range(0..5)];
        let col = ["g", "v"][rng.random_range(0..2)];
        let op = ops[rng.random_range(0..ops.len())];
        let filter = if rng.random_bool(0.5) {
            format!("{set}.{col} {op} {kept}.{col}")
        } else {
            format!("{kept}.{col} {op} {set}.{col}")
        };
        let narrow = [
            String::new(),
            format!(" AND {set}.g > {}", rng.random_range(0..4)),
            format!(" AND {set}.v < {}", rng.random_range(-500_000..500_000)),
        ][rng.random_range(0..3)]
        .clone();
        let not = ["", "NOT "][rng.random_range(0..2)];
        queries.push(format!(
            "SELECT g, count(*), sum(v) FROM {kept} WHERE {not}EXISTS (SELECT 1 FROM {set} \
             WHERE {set}.k = {kept}.k AND {filter}{narrow}) GROUP BY g ORDER BY g"
        ));
    }
    for q in &queries {
        let placement = same(&g, &c, q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        let text = explain(&g, q).await;
        // Only the extremes the operator reads are gathered (`hi@2` alone for `>`).
        let side = text
            .split("lookup=[key=k@0, columns=[")
            .nth(1)
            .unwrap_or_default();
        assert!(
            side.split(']')
                .nth(1)
                .is_some_and(|s| s.starts_with(" from GPU columns")),
            "{q}\n{text}"
        );
        let text = explain(&g, &format!("ANALYZE {q}")).await;
        assert!(text.contains("gpu_extremes=1"), "{q}\n{text}");
    }
    // A set column past 32 bits (on rows the filter drops): the nested GPU aggregate falls
    // back to its CPU plan at run time, DataFusion's final aggregate merges its partitions,
    // and the join still runs on the GPU with the same answer.
    let wide = "CREATE TABLE w (k INT, g INT, v BIGINT) AS VALUES \
                (1, 0, 5000000000), (1, 1, 3), (2, 2, -4), (2, 3, 9), (3, 0, -5000000000), \
                (3, 4, 0), (4, 1, 1)";
    for ctx in [&g, &c] {
        ctx.sql(wide)
            .await
            .expect("plans")
            .collect()
            .await
            .expect("creates");
    }
    for not in ["", "NOT "] {
        let q = format!(
            "SELECT g, count(*), sum(v) FROM f WHERE {not}EXISTS (SELECT 1 FROM w \
             WHERE w.k = f.k AND w.v > f.g AND w.g > 0) GROUP BY g ORDER BY g"
        );
        let placement = same(&g, &c, &q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        let text = explain(&g, &format!("ANALYZE {q}")).await;
        assert!(text.contains(" from GPU columns]"), "{q}\n{text}");
        assert!(!text.contains("gpu_extremes"), "{q}\n{text}");
        assert!(text.contains("lookup_rows="), "{q}\n{text}");
    }
}
