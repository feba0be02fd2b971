//! Semi and anti joins with a join filter that compares one set-side value with the kept
//! row (TPC-H Q21's `EXISTS (… l2.l_suppkey <> l1.l_suppkey)` and its `NOT EXISTS`): whether
//! some set row of the key passes the filter depends on the set rows only through two
//! facts per key, the smallest and largest value, so the set side becomes a many-to-one
//! lookup of its per-key `min` and `max` ([`extremes`]) and the filter a row predicate
//! over them ([`decided`]):
//!
//! | filter (set value `s`, kept value `v`) | some row of the key passes ⇔ |
//! |---|---|
//! | `s < v`, `s <= v` | `min(s) < v`, `min(s) <= v` |
//! | `s > v`, `s >= v` | `max(s) > v`, `max(s) >= v` |
//! | `s <> v` | `min(s) <> v OR max(s) <> v` (not every value equals `v`) |
//!
//! A NULL `s` passes no comparison and is in neither extreme; a key whose values are all
//! NULL has NULL extremes, which the lookup refuses at run time (its columns hold no
//! NULLs: DataFusion's plan answers then). A NULL `v` makes every comparison NULL: the semi
//! join drops the row, the anti join keeps it, as SQL's `EXISTS` over no passing row does.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::JoinSide;
use datafusion::error::Result as DfResult;
use datafusion::functions_aggregate::min_max::{max_udaf, min_udaf};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::aggregate::AggregateExprBuilder;
use datafusion::physical_expr::expressions::{BinaryExpr, Column};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion::physical_plan::joins::utils::JoinFilter;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};

/// A join filter `s op v` (after flipping `v op s`): `set` over the set input's filter
/// columns, `kept` over the kept input's, `op` a comparison other than `=`.
pub(in crate::plan) struct Comparison {
    /// The set side's operand, over the set input's schema.
    pub set: Arc<dyn PhysicalExpr>,
    /// The comparison, with the set operand on the left.
    pub op: Operator,
    /// The kept side's operand, over the kept input's schema.
    pub kept: Arc<dyn PhysicalExpr>,
}

/// `expr` (over the filter's columns) over input `side`'s own columns, or `None` when it
/// reads a column of the other side.
fn on_side(
    expr: &Arc<dyn PhysicalExpr>,
    filter: &JoinFilter,
    side: JoinSide,
) -> Option<Arc<dyn PhysicalExpr>> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    let mut other = false;
    let moved = Arc::clone(expr)
        .transform(|e| {
            let Some(c) = e.downcast_ref::<Column>() else {
                return Ok(Transformed::no(e));
            };
            let Some(at) = filter.column_indices().get(c.index()) else {
                other = true;
                return Ok(Transformed::no(e));
            };
            if at.side != side {
                other = true;
            }
            Ok(Transformed::yes(
                Arc::new(Column::new(c.name(), at.index)) as Arc<dyn PhysicalExpr>
            ))
        })
        .ok()?
        .data;
    (!other).then_some(moved)
}

/// The comparison `filter` is when the set input is `set_side` (see the module docs), or
/// why the GPU cannot decide it per key.
pub(in crate::plan) fn comparison(
    filter: &JoinFilter,
    set_side: JoinSide,
) -> Result<Comparison, String> {
    let refuse = || {
        format!(
            "the join filter {} is not one comparison (<, <=, >, >=, <>) of a set-side value with the kept row's; the GPU decides only those per key",
            filter.expression()
        )
    };
    let b = filter
        .expression()
        .downcast_ref::<BinaryExpr>()
        .ok_or_else(refuse)?;
    let kept_side = match set_side {
        JoinSide::Left => JoinSide::Right,
        _ => JoinSide::Left,
    };
    let sided = |set: &Arc<dyn PhysicalExpr>, kept: &Arc<dyn PhysicalExpr>| {
        Some((
            on_side(set, filter, set_side)?,
            on_side(kept, filter, kept_side)?,
        ))
    };
    let (set, kept, flipped) = match sided(b.left(), b.right()) {
        Some((s, k)) => (s, k, false),
        None => {
            let (s, k) = sided(b.right(), b.left()).ok_or_else(refuse)?;
            (s, k, true)
        }
    };
    // The extremes are lookup columns of 32 bits: a decimal of scale 10 or more fits them
    // only below 0.22 (TPC-H Q17's `0.2 * avg(l_quantity)` as DECIMAL(30, 15) would refuse
    // every run after collecting its side).
    // Both operands have one type: DataFusion coerced them.
    if let Ok(DataType::Decimal128(_, scale) | DataType::Decimal256(_, scale)) =
        b.left().data_type(filter.schema())
    {
        if scale >= 10 {
            return Err(format!(
                "the join filter {} compares decimals of scale {scale}, whose per-key extremes do not fit the GPU's 32-bit lookup columns",
                filter.expression()
            ));
        }
    }
    let op = match (b.op(), flipped) {
        (Operator::NotEq, _) => Operator::NotEq,
        (Operator::Lt, false) | (Operator::Gt, true) => Operator::Lt,
        (Operator::LtEq, false) | (Operator::GtEq, true) => Operator::LtEq,
        (Operator::Gt, false) | (Operator::Lt, true) => Operator::Gt,
        (Operator::GtEq, false) | (Operator::LtEq, true) => Operator::GtEq,
        _ => return Err(refuse()),
    };
    Ok(Comparison { set, op, kept })
}

/// The per-key extremes of `value` over `set`, keyed by `key` (both over `set`'s schema):
/// columns `k`, `lo` (`min`), `hi` (`max`), one row per key, as DataFusion aggregates it
/// (partial per partition, then final per hash partition of the key, so each key is in one
/// output partition once), on every core: the set input's own partitions, or round-robin
/// batches where it has fewer (Q21's `NOT EXISTS` side arrives coalesced into one, and a
/// one-thread partial aggregate of SF 10's lineitem would be the query's longest step).
pub(in crate::plan) fn extremes(
    set: &Arc<dyn ExecutionPlan>,
    key: &Arc<dyn PhysicalExpr>,
    value: &Arc<dyn PhysicalExpr>,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut set = super::collected(set);
    let partitions = set.output_partitioning().partition_count();
    if partitions < cores {
        set = Arc::new(RepartitionExec::try_new(
            set,
            Partitioning::RoundRobinBatch(cores),
        )?);
    }
    let partitions = partitions.max(cores);
    let partial = partial(&set, key, value)?;
    let hashed = RepartitionExec::try_new(
        Arc::new(partial.clone()),
        Partitioning::Hash(vec![Arc::new(Column::new("k", 0))], partitions),
    )?;
    finished(&partial, AggregateMode::FinalPartitioned, Arc::new(hashed))
}

/// The partial aggregate of the per-key extremes of `value` over `set`, grouped by `key`
/// ([`extremes`]' first half; columns `k`, then `lo` and `hi`'s states).
pub(in crate::plan) fn partial(
    set: &Arc<dyn ExecutionPlan>,
    key: &Arc<dyn PhysicalExpr>,
    value: &Arc<dyn PhysicalExpr>,
) -> DfResult<AggregateExec> {
    let schema = set.schema();
    let group = PhysicalGroupBy::new_single(vec![(Arc::clone(key), "k".to_string())]);
    let extreme = |f, name: &str| {
        AggregateExprBuilder::new(f, vec![Arc::clone(value)])
            .schema(Arc::clone(&schema))
            .alias(name)
            .build()
            .map(Arc::new)
    };
    let aggregates = vec![extreme(min_udaf(), "lo")?, extreme(max_udaf(), "hi")?];
    AggregateExec::try_new(
        AggregateMode::Partial,
        group,
        aggregates,
        vec![None, None],
        Arc::clone(set),
        schema,
    )
}

/// The final aggregate (`mode`: `Final` over one partition, `FinalPartitioned` over hash
/// partitions of the key) of `partial`'s states in `states`: columns `k`, `lo`, `hi`.
pub(crate) fn finished(
    partial: &AggregateExec,
    mode: AggregateMode,
    states: Arc<dyn ExecutionPlan>,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    Ok(Arc::new(AggregateExec::try_new(
        mode,
        partial.group_expr().as_final(),
        partial.aggr_expr().to_vec(),
        vec![None, None],
        states,
        partial.input_schema(),
    )?))
}

/// Whether some set row passes `op` against kept value `v`, from the key's extremes `lo`
/// and `hi` (module docs' table): an expression over columns `lo`, `hi` and `v`.
pub(in crate::plan) fn decided(
    op: Operator,
    lo: Arc<dyn PhysicalExpr>,
    hi: Arc<dyn PhysicalExpr>,
    v: Arc<dyn PhysicalExpr>,
) -> Arc<dyn PhysicalExpr> {
    let cmp = |a, op, b| Arc::new(BinaryExpr::new(a, op, b)) as Arc<dyn PhysicalExpr>;
    match op {
        Operator::Lt | Operator::LtEq => cmp(lo, op, v),
        Operator::Gt | Operator::GtEq => cmp(hi, op, v),
        _ => cmp(
            cmp(lo, Operator::NotEq, Arc::clone(&v)),
            Operator::Or,
            cmp(hi, Operator::NotEq, v),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The CPU oracle of a filtered semi or anti join's row mask, from SQL's definitions over
    /// every pair (not the extremes the GPU uses): each `probe` row (key, value; `None`: NULL)
    /// is kept by a semi join when some `set` row has its key and passes `s op v`, by an anti
    /// join when none does.
    fn filtered_mask(
        anti: bool,
        op: Operator,
        probe: &[(Option<i64>, Option<i64>)],
        set: &[(Option<i64>, Option<i64>)],
    ) -> Vec<bool> {
        let passes = |s: i64, v: i64| match op {
            Operator::Lt => s < v,
            Operator::LtEq => s <= v,
            Operator::Gt => s > v,
            Operator::GtEq => s >= v,
            _ => s != v,
        };
        probe
            .iter()
            .map(|&(k, v)| {
                let some = set.iter().any(|&(sk, s)| match (k, sk, s, v) {
                    (Some(k), Some(sk), Some(s), Some(v)) => k == sk && passes(s, v),
                    _ => false,
                });
                some != anti
            })
            .collect()
    }

    /// The GPU's decision from the key's extremes, in SQL's three-valued logic as the row
    /// program evaluates it: semi keeps `matched AND passes`, anti `NOT (matched AND
    /// passes AND passes IS NOT NULL)`.
    fn by_extremes(
        anti: bool,
        op: Operator,
        probe: &[(Option<i64>, Option<i64>)],
        set: &[(Option<i64>, Option<i64>)],
    ) -> Vec<bool> {
        let mut extremes: std::collections::HashMap<i64, (Option<i64>, Option<i64>)> =
            Default::default();
        for &(k, s) in set {
            let Some(k) = k else { continue };
            let e = extremes.entry(k).or_insert((None, None));
            if let Some(s) = s {
                e.0 = Some(e.0.map_or(s, |m: i64| m.min(s)));
                e.1 = Some(e.1.map_or(s, |m: i64| m.max(s)));
            }
        }
        let cmp = |a: Option<i64>, f: fn(&i64, &i64) -> bool, v: Option<i64>| Some(f(&a?, &v?));
        probe
            .iter()
            .map(|&(k, v)| {
                let Some(&(lo, hi)) = k.and_then(|k| extremes.get(&k)) else {
                    return anti;
                };
                let passes = match op {
                    Operator::Lt => cmp(lo, i64::lt, v),
                    Operator::LtEq => cmp(lo, i64::le, v),
                    Operator::Gt => cmp(hi, i64::gt, v),
                    Operator::GtEq => cmp(hi, i64::ge, v),
                    // SQL OR: true if either is, NULL if neither is and one is NULL.
                    _ => match (cmp(lo, i64::ne, v), cmp(hi, i64::ne, v)) {
                        (Some(true), _) | (_, Some(true)) => Some(true),
                        (Some(false), Some(false)) => Some(false),
                        _ => None,
                    },
                };
                if anti {
                    passes != Some(true)
                } else {
                    passes == Some(true)
                }
            })
            .collect()
    }

    /// Every operator's extremes decision equals the definition over all pairs, for random
    /// keys and values with NULLs on both sides, keys whose values are all NULL, empty sets
    /// and sets of one row.
    #[test]
    fn extremes_decide_like_every_pair() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(21);
        let ops = [
            Operator::Lt,
            Operator::LtEq,
            Operator::Gt,
            Operator::GtEq,
            Operator::NotEq,
        ];
        for (rows, set_rows) in [(0, 5), (50, 0), (200, 1), (500, 40), (2_000, 600)] {
            let mut draw = |n: usize, nulls: f64| -> Vec<(Option<i64>, Option<i64>)> {
                (0..n)
                    .map(|_| {
                        let k = (!rng.random_bool(nulls)).then(|| rng.random_range(0..30));
                        let v = (!rng.random_bool(nulls)).then(|| rng.random_range(-3..4));
                        (k, v)
                    })
                    .collect()
            };
            let probe = draw(rows, 0.1);
            let set = draw(set_rows, 0.2);
            for op in ops {
                for anti in [false, true] {
                    assert_eq!(
                        by_extremes(anti, op, &probe, &set),
                        filtered_mask(anti, op, &probe, &set),
                        "{op} anti={anti}, {rows} × {set_rows}"
                    );
                }
            }
        }
    }
}
