//! Semi and anti joins in a GPU plan's chain: DataFusion's decorrelation of `EXISTS`,
//! `NOT EXISTS`, `IN (subquery)` and `NOT IN (subquery)` (TPC-H Q4, Q16, Q18, Q22). The
//! kept input streams through the GPU and the other input becomes a key set: a lookup side
//! ([`LookupPlan::set`]) without columns whose key map marks the keys present, so a key may
//! repeat there (Q4's `lineitem` holds each order key up to seven times). Each streamed row
//! tests its key with one probe of the map, a predicate ([`Ir::Matched`], negated for an
//! anti join, [`Ir::NotIn`] for a null-aware one) that the row program ANDs with the plan's
//! filters before the row reaches its group.

use std::sync::Arc;

use datafusion::common::{JoinType, NullEquality};
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::ExecutionPlan;

use crate::expr::{translate, Scope, Ty};
use crate::ir::Ir;
use crate::lookup::Membership;

use super::join::{collected, Columns, Sides};
use super::project;

/// How a semi or anti join keeps its rows and whether it keeps the left input's, `None` for
/// another join type, or why the GPU does not take it. The kept input is streamed (it is
/// the join's only output) and the other one becomes a key set ([`Membership`]). A join
/// filter (TPC-H Q21's `l_suppkey <> l1.l_suppkey`) decides per matching pair, which a key
/// set cannot, and several keys would need a set of key tuples: both stay on the CPU.
pub(super) fn membership(join: &HashJoinExec) -> Result<Option<(Membership, bool)>, String> {
    let (kind, keeps_left) = match join.join_type() {
        JoinType::LeftSemi => (Membership::Semi, true),
        JoinType::RightSemi => (Membership::Semi, false),
        JoinType::LeftAnti => (Membership::Anti, true),
        JoinType::RightAnti => (Membership::Anti, false),
        _ => return Ok(None),
    };
    let what = join.join_type();
    if join.filter().is_some() {
        return Err(format!(
            "a {what} join with a join filter; the GPU's key-set test takes equi-joins without one"
        ));
    }
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
        if kind != Membership::Anti {
            return Err(format!(
                "a null-aware {what} join is not supported on the GPU"
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
    let side = sides.push(collected(set), Arc::clone(set_key), key.ir.clone(), false);
    sides.joins[side].0.set = Some(kind);
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

#[cfg(test)]
mod tests;
