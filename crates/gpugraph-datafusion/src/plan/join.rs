//! The joins of a GPU plan's chain: which side the GPU streams, which columns each side
//! contributes, and how a join keyed by the lookup side moves into it.
//!
//! A join keyed by the streamed rows streams the large input (the probe side) through the
//! GPU and looks its rows up in the small one, a lookup side of its own. A join above it
//! whose probe key reads only one lookup side's columns (TPC-H Q10's `c_nationkey = n_nationkey` over `lineitem ⋈ (orders ⋈
//! customer)`) is re-associated onto that lookup side: inner joins associate, so
//! `(L ⋈ O) ⋈ N = L ⋈ (O ⋈ N)`, and DataFusion runs the dimension join on the CPU while the
//! GPU still makes one lookup per row and side.

use std::sync::Arc;

use datafusion::common::{JoinType, NullEquality};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};

use crate::expr::{Host, Level};

/// Per column of a plan level: its expression over the source, the source column it is
/// (group keys must be such), and its lookup side and expression over it when it comes
/// from one.
pub(super) type Columns = (Level, Vec<Option<usize>>, Vec<Host>);

/// [`Columns`], borrowed.
pub(super) type ColumnsRef<'a> = (&'a Level, &'a [Option<usize>], &'a [Host]);

/// `plan` without the repartitions and coalesces at its top: the lookup side is collected
/// whole, so hash-partitioning it for a partitioned join (15M TPC-H orders rows at SF 10,
/// strings included) is only cost.
pub(super) fn collected(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    let mut node = Arc::clone(plan);
    loop {
        let next = if let Some(r) = node.downcast_ref::<RepartitionExec>() {
            Arc::clone(r.input())
        } else if let Some(c) = node
            .downcast_ref::<CoalescePartitionsExec>()
            .filter(|c| c.fetch().is_none())
        {
            Arc::clone(c.input())
        } else {
            return node;
        };
        node = next;
    }
}

/// A join's level from its columns, each (whether it comes from the probe side, its index
/// there): probe columns keep their expressions, lookup columns become host expressions of
/// lookup side `side`, column `offset + at` of its input named as in `lookup`.
pub(super) fn join_level(
    columns: impl Iterator<Item = (bool, usize)>,
    (level, origin, host): ColumnsRef<'_>,
    lookup: &datafusion::arrow::datatypes::Schema,
    (side, offset): (usize, usize),
) -> Columns {
    let mut next = (Vec::new(), Vec::new(), Vec::new());
    for (probe, at) in columns {
        if probe {
            next.0.push(level[at].clone());
            next.1.push(origin[at]);
            next.2.push(host.get(at).cloned().flatten());
        } else {
            let f = lookup.field(at);
            next.0.push(Err(format!(
                "column {} of the join's lookup side has type {}, which the GPU does not gather",
                f.name(),
                f.data_type()
            )));
            next.1.push(None);
            next.2.push(Some((
                side,
                Arc::new(Column::new(f.name(), offset + at)) as Arc<dyn PhysicalExpr>,
            )));
        }
    }
    next
}

/// The probe side of `join` (the larger input, which the GPU streams) and whether it is the
/// left one, or why the GPU does not take the join: it must be an inner equi-join on one key
/// (a residual filter is one more predicate) or an outer join that preserves the probe side,
/// whose lookup side is then checked to be many-to-one at run time (`lookup.rs`).
pub(super) fn join_sides(join: &HashJoinExec) -> Result<(Arc<dyn ExecutionPlan>, bool), String> {
    if !matches!(
        join.join_type(),
        JoinType::Inner | JoinType::Left | JoinType::Right
    ) {
        return Err(format!(
            "a {} join; the GPU joins inner and left joins",
            join.join_type()
        ));
    }
    // An inner join's first key probes the lookup side and the row compares the others
    // (TPC-H Q5's `s_suppkey = l_suppkey AND s_nationkey = c_nationkey`); an outer join's
    // row keeps its lookup columns NULL on a mismatch, which a compared key cannot express.
    if join.on().len() != 1 && *join.join_type() != JoinType::Inner {
        return Err(format!(
            "a {} join on {} keys; the GPU joins outer joins on one",
            join.join_type(),
            join.on().len()
        ));
    }
    if join.null_equality() != NullEquality::NullEqualsNothing || join.fetch().is_some() {
        return Err("a join with null-equal keys or a limit is not supported on the GPU".into());
    }
    // The lookup side is the one whose base table is smaller: a fact table's rows each find
    // one dimension row (TPC-H's lineitem → part, lineitem → orders), whatever the filters
    // do to DataFusion's estimates. Unknown sizes keep DataFusion's build side (left).
    let probe_left = match (base_rows(join.left()), base_rows(join.right())) {
        (Some(l), Some(r)) => l > r,
        _ => false,
    };
    let (probe, preserves) = if probe_left {
        (join.left(), JoinType::Left)
    } else {
        (join.right(), JoinType::Right)
    };
    if *join.join_type() != JoinType::Inner && *join.join_type() != preserves {
        return Err(format!(
            "a {} join that preserves the smaller side; the GPU streams the larger one",
            join.join_type()
        ));
    }
    Ok((Arc::clone(probe), probe_left))
}

/// Rows of the largest base table under `plan`: through single-input operators to a leaf,
/// and the larger of a join's inputs (a join chain's fact table), `None` where unknown.
fn base_rows(plan: &Arc<dyn ExecutionPlan>) -> Option<usize> {
    match plan.children()[..] {
        [child] => base_rows(child),
        [left, right] if plan.downcast_ref::<HashJoinExec>().is_some() => {
            Some(base_rows(left)?.max(base_rows(right)?))
        }
        _ => StatisticsContext::new()
            .compute(plan.as_ref(), &StatisticsArgs::new())
            .ok()
            .and_then(|s| s.num_rows.get_value().copied()),
    }
}

/// The lookup input `lookup` inner-joined on the CPU with `dimension` where `key` (over
/// `lookup`) equals `dimension_key` (over `dimension`): `lookup`'s columns first, at their
/// indices, then `dimension`'s. DataFusion builds its hash table from the dimension (the
/// smaller side, collected into one partition) and streams the lookup input's partitions.
pub(super) fn associate(
    lookup: &Arc<dyn ExecutionPlan>,
    dimension: &Arc<dyn ExecutionPlan>,
    key: Arc<dyn PhysicalExpr>,
    dimension_key: &Arc<dyn PhysicalExpr>,
) -> Result<Arc<dyn ExecutionPlan>, String> {
    let dimension = collected(dimension);
    let left_width = dimension.schema().fields().len();
    let right_width = lookup.schema().fields().len();
    let projection = (left_width..left_width + right_width)
        .chain(0..left_width)
        .collect();
    let left: Arc<dyn ExecutionPlan> = Arc::new(CoalescePartitionsExec::new(dimension));
    HashJoinExec::try_new(
        left,
        Arc::clone(lookup),
        vec![(Arc::clone(dimension_key), key)],
        None,
        &JoinType::Inner,
        Some(projection),
        PartitionMode::CollectLeft,
        NullEquality::NullEqualsNothing,
        false,
    )
    .map(|j| Arc::new(j) as Arc<dyn ExecutionPlan>)
    .map_err(|e| format!("joining the lookup side with a dimension on the CPU failed: {e}"))
}
