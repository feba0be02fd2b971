//! Semi and anti joins in a GPU plan's chain: DataFusion's decorrelation of `EXISTS`,
//! `NOT EXISTS`, `IN (subquery)` and `NOT IN (subquery)` (TPC-H Q4, Q16, Q18, Q22). The
//! kept input streams through the GPU and the other input becomes a key set: a lookup side
//! ([`LookupPlan::set`]) without columns whose key map marks the keys present, so a key may
//! repeat there (Q4's `lineitem` holds each order key up to seven times). Each streamed row
//! tests its key with one probe of the map, a predicate ([`Ir::Matched`], negated for an
//! anti join, [`Ir::NotIn`] for a null-aware one) that the row program ANDs with the plan's
//! filters before the row reaches its group.
//!
//! A semi or anti join's set side that the GPU can aggregate itself (a scan with filters,
//! projections and joins the planner takes) does not run on the CPU: its `count(distinct
//! key)` runs as a GPU plan of its own ([`set_plan`]) whose presence bitmap becomes the key
//! set on the device (`exec/set.rs`), so TPC-H Q4's lineitem is filtered on the GPU, from
//! its cached columns when warm, instead of collected, filtered and packed on the host.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::common::{JoinSide, JoinType, NullEquality};
use datafusion::functions_aggregate::count::count_udaf;
use datafusion::physical_expr::aggregate::AggregateExprBuilder;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::ExecutionPlan;

use crate::expr::{translate, Scope, Ty};
use crate::ir::{BinOp, Ir};
use crate::lookup::Membership;

use super::join::{collected, join_level, Columns, Sides};
use super::{project, GpuPlan};

mod per_key;

pub(crate) use per_key::finished as finished_extremes;

/// The GPU plan that finds the keys of a set side `set` (keyed by `key` over it): the
/// partial `count(distinct key)` over it, whose presence bitmap is the set (NULL keys are
/// in no bitmap, as they are in no key set). Why not, when the GPU does not take that
/// aggregate (then the side is collected on the CPU), or when `GPUGRAPH_GPU_SETS=0` (to
/// compare both ways on one binary).
pub(super) fn set_plan(
    set: &Arc<dyn ExecutionPlan>,
    key: &Arc<dyn PhysicalExpr>,
) -> Result<GpuPlan, String> {
    sets_on_gpu()?;
    let schema = set.schema();
    let fail = |e: datafusion::error::DataFusionError| e.to_string();
    let keys = AggregateExprBuilder::new(count_udaf(), vec![Arc::clone(key)])
        .schema(Arc::clone(&schema))
        .alias("keys")
        .distinct()
        .build()
        .map_err(fail)?;
    let agg = AggregateExec::try_new(
        AggregateMode::Partial,
        PhysicalGroupBy::new_single(Vec::new()),
        vec![Arc::new(keys)],
        vec![None],
        Arc::clone(set),
        schema,
    )
    .map_err(fail)?;
    super::plan(&agg)
}

/// Why set sides are collected on the CPU whatever their plan: `GPUGRAPH_GPU_SETS=0` (to
/// compare both ways on one binary), or not.
fn sets_on_gpu() -> Result<(), String> {
    if std::env::var("GPUGRAPH_GPU_SETS").is_ok_and(|v| v == "0") {
        return Err("GPUGRAPH_GPU_SETS=0".into());
    }
    Ok(())
}

/// The GPU plan of the per-key extremes of `value` over the set side `set` (keyed by
/// `key`), with the partial aggregate it was made from: its groups are the keys, so what
/// the run reads back is a row per key instead of the side's rows. Why not, when the GPU
/// does not take that aggregate (then DataFusion aggregates the side), or when
/// `GPUGRAPH_GPU_SETS=0`.
fn extremes_plan(
    set: &Arc<dyn ExecutionPlan>,
    key: &Arc<dyn PhysicalExpr>,
    value: &Arc<dyn PhysicalExpr>,
) -> Result<(GpuPlan, Arc<dyn ExecutionPlan>), String> {
    sets_on_gpu()?;
    let partial = per_key::partial(set, key, value).map_err(|e| e.to_string())?;
    Ok((super::plan(&partial)?, Arc::new(partial)))
}

/// How a semi or anti join keeps its rows and whether it keeps the left input's, `None` for
/// another join type, or why the GPU does not take it. The kept input is streamed (it is
/// the join's only output) and the other one becomes a key set ([`Membership`]), or, with a
/// join filter (TPC-H Q21's `l_suppkey <> l1.l_suppkey`), a lookup of per-key extremes
/// ([`per_key`]). Several keys would need a set of key tuples: they stay on the CPU.
pub(super) fn membership(join: &HashJoinExec) -> Result<Option<(Membership, bool)>, String> {
    let (kind, keeps_left) = match join.join_type() {
        JoinType::LeftSemi => (Membership::Semi, true),
        JoinType::RightSemi => (Membership::Semi, false),
        JoinType::LeftAnti => (Membership::Anti, true),
        JoinType::RightAnti => (Membership::Anti, false),
        _ => return Ok(None),
    };
    let what = join.join_type();
    if join.on().len() != 1 {
        return Err(format!(
            "a {what} join on {} keys; the GPU's key-set test takes one key",
            join.on().len()
        ));
    }
    if join.null_equality() != NullEquality::NullEqualsNothing || join.fetch().is_some() {
        return Err(format!(
            "a {what} join with null-equal keys or a limit is not supported on the GPU"
        ));
    }
    // DataFusion allows null-awareness on LeftAnti joins only (`NOT IN`).
    let kind = if join.null_aware {
        if kind != Membership::Anti || join.filter().is_some() {
            return Err(format!(
                "a null-aware {what} join{} is not supported on the GPU",
                if join.filter().is_some() {
                    " with a join filter"
                } else {
                    ""
                }
            ));
        }
        Membership::NotIn
    } else {
        kind
    };
    Ok(Some((kind, keeps_left)))
}

/// Takes semi or anti join `j` of the chain (`kind`, keeping the left input's rows when
/// `keeps_left`) into the plan: its set input becomes a key-set side, the membership test
/// one more predicate, and `current` (the kept input's columns) the join's columns.
pub(super) fn semi(
    j: &HashJoinExec,
    (kind, keeps_left): (Membership, bool),
    current: &mut Columns,
    sides: &mut Sides,
    predicates: &mut Vec<Ir>,
) -> Result<(), String> {
    let what = j.join_type();
    // A key read from an outer join's lookup side is NULL on its unmatched rows; and an
    // outer join's kept rows do not survive a key set's side being the first one.
    if sides.joins.iter().any(|(l, _)| l.outer) {
        return Err(format!(
            "a {what} join above an outer join stays on the CPU"
        ));
    }
    let (kept, set) = if keeps_left {
        (j.left(), j.right())
    } else {
        (j.right(), j.left())
    };
    let (kept_key, set_key) = if keeps_left {
        (&j.on()[0].0, &j.on()[0].1)
    } else {
        (&j.on()[0].1, &j.on()[0].0)
    };
    // The set side's keys are cast to i64 when it is collected (`lookup/evaluate.rs`), which
    // would truncate a decimal's fraction or parse a string: integer keys only.
    for (key, input) in [(kept_key, kept), (set_key, set)] {
        let dt = key.data_type(&input.schema()).map_err(|e| e.to_string())?;
        if !dt.is_integer() {
            return Err(format!(
                "a {what} join on {key} of type {dt}; the GPU's key sets take integer keys"
            ));
        }
    }
    let schemas = sides.schemas();
    let scopes = sides.scopes(&schemas);
    let key = translate(
        kept_key,
        &Scope {
            schema: &kept.schema(),
            level: &current.0,
            host: &current.2,
            lookup: &scopes,
            deferred: None,
        },
    )
    .map_err(|why| format!("{what} join key {kept_key}: {why}"))?;
    if !matches!(key.ty, Ty::Num(0)) {
        return Err(format!("the {what} join key {kept_key} is not an integer"));
    }
    drop(scopes);
    if let Some(filter) = j.filter() {
        let set_side = if keeps_left {
            JoinSide::Right
        } else {
            JoinSide::Left
        };
        let c = per_key::comparison(filter, set_side)?;
        filtered(
            kind,
            kept,
            (set, set_key),
            c,
            key.ir,
            current,
            sides,
            predicates,
        )?;
        project(j.projection.as_deref(), current);
        return Ok(());
    }
    let side = sides.push(collected(set), Arc::clone(set_key), key.ir.clone(), false);
    sides.joins[side].0.set = Some(kind);
    // A null-aware anti join's answer depends on the set's NULL keys, which no bitmap holds.
    if kind != Membership::NotIn {
        if let Ok(plan) = set_plan(set, set_key) {
            sides.sets.push((side, Arc::new(plan)));
        }
    }
    let probe = Box::new(key.ir);
    predicates.push(match kind {
        Membership::Semi => Ir::Matched(side, probe),
        Membership::Anti => Ir::Not(Box::new(Ir::Matched(side, probe))),
        Membership::NotIn => Ir::NotIn(side, probe),
    });
    // The join's columns are the kept input's, then its projection.
    project(j.projection.as_deref(), current);
    Ok(())
}

/// Takes a semi or anti join (`kind`) whose filter is the comparison `c` ([`per_key`]):
/// the set input `set` (keyed by `set_key`) becomes a lookup of its per-key extremes,
/// probed by the kept row's `key`, and the join one predicate over the kept input `kept`'s
/// columns `current` and the extremes: semi, the key matches and the extremes pass; anti,
/// not both (a NULL comparison, from a NULL kept value, counts as not passing).
#[allow(clippy::too_many_arguments)]
fn filtered(
    kind: Membership,
    kept: &Arc<dyn ExecutionPlan>,
    (set, set_key): (&Arc<dyn ExecutionPlan>, &Arc<dyn PhysicalExpr>),
    c: per_key::Comparison,
    key: Ir,
    current: &Columns,
    sides: &mut Sides,
    predicates: &mut Vec<Ir>,
) -> Result<(), String> {
    let input = per_key::extremes(set, set_key, &c.set).map_err(|e| e.to_string())?;
    let k: Arc<dyn PhysicalExpr> = Arc::new(Column::new("k", 0));
    let origins = sides.add(&input, &k, key, false, predicates);
    let (matched, side) = match predicates.pop() {
        Some(m @ Ir::Matched(side, _)) => (m, side),
        _ => return Err("an extremes side without its match predicate".into()),
    };
    if let Ok((plan, partial)) = extremes_plan(set, set_key, &c.set) {
        sides.extremes.push((side, Arc::new(plan), partial));
    }
    // The filter's level: the kept input's columns, then the extremes `lo` and `hi`.
    let kept_schema = kept.schema();
    let width = kept_schema.fields().len();
    let extremes = input.schema();
    let mut fields = kept_schema.fields().to_vec();
    fields.extend([extremes.fields()[1].clone(), extremes.fields()[2].clone()]);
    let schema = Schema::new(fields);
    let columns = (0..width)
        .map(|i| (true, i))
        .chain([(false, 1), (false, 2)]);
    let (level, _, host) = join_level(
        columns,
        (&current.0, &current.1, &current.2),
        &extremes,
        &origins,
    );
    let decided = per_key::decided(
        c.op,
        Arc::new(Column::new("lo", width)),
        Arc::new(Column::new("hi", width + 1)),
        c.kept,
    );
    let schemas = sides.schemas();
    let scopes = sides.scopes(&schemas);
    let t = translate(
        &decided,
        &Scope {
            schema: &schema,
            level: &level,
            host: &host,
            lookup: &scopes,
            deferred: None,
        },
    )
    .map_err(|why| format!("join filter {decided}: {why}"))?;
    if t.ty != Ty::Bool {
        return Err("a join filter that is not boolean".into());
    }
    let passes = Box::new(t.ir);
    predicates.push(match kind {
        Membership::Semi => Ir::binary(BinOp::And, matched, *passes),
        _ => {
            let sure = Ir::binary(BinOp::And, *passes.clone(), Ir::IsNotNull(passes));
            Ir::Not(Box::new(Ir::binary(BinOp::And, matched, sure)))
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests;
