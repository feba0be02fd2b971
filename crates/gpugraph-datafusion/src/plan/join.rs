//! The joins of a GPU plan's chain: which side the GPU streams, which columns each side
//! contributes, and how a join keyed by the lookup side moves into it.
//!
//! A join keyed by the streamed rows streams the large input (the probe side) through the
//! GPU and looks its rows up in the small one, a lookup side of its own. A join above it
//! whose probe key reads only one lookup side's columns (TPC-H Q10's `c_nationkey = n_nationkey` over `lineitem ⋈ (orders ⋈
//! customer)`) is re-associated onto that lookup side: inner joins associate, so
//! `(L ⋈ O) ⋈ N = L ⋈ (O ⋈ N)`, and DataFusion runs the dimension join on the CPU while the
//! GPU still makes one lookup per row and side. A lookup input that is an inner join with
//! an unfiltered dimension splits into two sides instead ([`split`]).

use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{JoinSide, JoinType, NullEquality};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, Column};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};

use std::cell::RefCell;

use crate::expr::{on_lookup, translate, Host, Level, LookupScope, Scope, Ty};
use crate::ir::Ir;
use crate::lookup::LookupPlan;

use super::semi::{membership, semi};

use super::project;

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

/// Where each column of a join's lookup input comes from: its lookup side and its
/// expression over that side's input.
pub(super) type Origins = Vec<(usize, Arc<dyn PhysicalExpr>)>;

/// The columns of `lookup` as lookup side `side`'s columns `offset..` (a dimension
/// associated onto the side's input lands past the input's own columns).
pub(super) fn origins(lookup: &Schema, side: usize, offset: usize) -> Origins {
    lookup
        .fields()
        .iter()
        .enumerate()
        .map(|(at, f)| {
            (
                side,
                Arc::new(Column::new(f.name(), offset + at)) as Arc<dyn PhysicalExpr>,
            )
        })
        .collect()
}

/// A join's level from its columns, each (whether it comes from the probe side, its index
/// there): probe columns keep their expressions, lookup columns become host expressions
/// ([`Origins`]) of the lookup input `lookup`.
pub(super) fn join_level(
    columns: impl Iterator<Item = (bool, usize)>,
    (level, origin, host): ColumnsRef<'_>,
    lookup: &Schema,
    origins: &Origins,
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
            next.2.push(Some(origins[at].clone()));
        }
    }
    next
}

/// The probe side of `join` (the larger input, which the GPU streams) and whether it is the
/// left one, or why the GPU does not take the join: it must be an inner equi-join on one key
/// (a residual filter is one more predicate) or an outer join that preserves the probe side,
/// whose lookup side is then checked to be many-to-one at run time (`lookup.rs`).
pub(super) fn join_sides(join: &HashJoinExec) -> Result<(Arc<dyn ExecutionPlan>, bool), String> {
    if let Some((_, keeps_left)) = membership(join)? {
        let kept = if keeps_left {
            join.left()
        } else {
            join.right()
        };
        return Ok((Arc::clone(kept), keeps_left));
    }
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
    // An outer join that preserves the smaller side streams the larger one too: its
    // unmatched lookup rows are emitted as groups of their own (`join`).
    let _ = preserves;
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

/// A lookup input that is itself an inner join of a fact input and an unfiltered dimension
/// ([`split`]), as two lookup sides: the fact side probed by the streamed key, the dimension
/// probed by the fact side's join key.
pub(super) struct Split {
    /// The larger input, whose columns the outer join's key reads.
    pub fact: Arc<dyn ExecutionPlan>,
    /// The outer join's key over `fact`.
    pub fact_key: Arc<dyn PhysicalExpr>,
    /// The inner join's key over `fact` (TPC-H's `o_custkey`): the dimension's probe key.
    pub link: Arc<dyn PhysicalExpr>,
    /// The smaller input.
    pub dimension: Arc<dyn ExecutionPlan>,
    /// The inner join's key over `dimension`.
    pub dimension_key: Arc<dyn PhysicalExpr>,
    /// Each column of the lookup input: whether it comes from `fact`, its index there.
    pub columns: Vec<(bool, usize)>,
}

/// `input` as a [`Split`] when it is an inner join on one key, without a residual filter,
/// whose dimension side filters nothing (no filter under it) and whose fact side holds every
/// column of `key` (the outer join's key over `input`). Joined on the CPU, such a dimension
/// only widens the fact rows (TPC-H Q5's and Q10's `orders ⋈ customer`: DataFusion builds a
/// hash table of 1.5M customers on one thread per query), where the GPU probes a second map
/// per streamed row; a filtered dimension (Q3's `c_mktsegment = 'BUILDING'`) also drops fact
/// rows, which then never reach the GPU, so that join stays on the CPU.
pub(super) fn split(input: &Arc<dyn ExecutionPlan>, key: &Arc<dyn PhysicalExpr>) -> Option<Split> {
    // Projections of plain columns above the join (DataFusion reorders the join's columns
    // there) only renumber them: `renumber[i]` is the join output column of input column i.
    let mut node = collected(input);
    let mut renumber: Option<Vec<usize>> = None;
    while let Some(p) = node.downcast_ref::<ProjectionExec>() {
        let inner = p
            .expr()
            .iter()
            .map(|e| e.expr.downcast_ref::<Column>().map(Column::index))
            .collect::<Option<Vec<usize>>>()?;
        renumber = Some(match renumber {
            Some(outer) => outer.iter().map(|&i| inner[i]).collect(),
            None => inner,
        });
        node = collected(p.input());
    }
    let join = node.downcast_ref::<HashJoinExec>()?;
    if *join.join_type() != JoinType::Inner || join.on().len() != 1 || join.filter().is_some() {
        return None;
    }
    let (fact, fact_left) = join_sides(join).ok()?;
    let (dimension, (link, dimension_key)) = if fact_left {
        (join.right(), (&join.on()[0].0, &join.on()[0].1))
    } else {
        (join.left(), (&join.on()[0].1, &join.on()[0].0))
    };
    if filters(dimension) {
        return None;
    }
    let left_width = join.left().schema().fields().len();
    let all: Vec<(bool, usize)> = (0..join.join_schema().fields().len())
        .map(|i| {
            if i < left_width {
                (fact_left, i)
            } else {
                (!fact_left, i - left_width)
            }
        })
        .collect();
    let joined: Vec<(bool, usize)> = match join.projection.as_deref() {
        Some(p) => p.iter().map(|&i| all[i]).collect(),
        None => all,
    };
    let columns = match renumber {
        Some(r) => r.iter().map(|&i| joined[i]).collect(),
        None => joined,
    };
    let fact_schema = fact.schema();
    let fact_key = Arc::clone(key)
        .transform(|e| {
            let Some(c) = e.downcast_ref::<Column>() else {
                return Ok(Transformed::no(e));
            };
            match columns.get(c.index()) {
                Some(&(true, at)) => Ok(Transformed::yes(Arc::new(Column::new(
                    fact_schema.field(at).name(),
                    at,
                ))
                    as Arc<dyn PhysicalExpr>)),
                _ => Err(datafusion::error::DataFusionError::Plan(
                    "the key reads the dimension".into(),
                )),
            }
        })
        .ok()?
        .data;
    Some(Split {
        fact: collected(&fact),
        fact_key,
        link: Arc::clone(link),
        dimension: collected(dimension),
        dimension_key: Arc::clone(dimension_key),
        columns,
    })
}

/// Whether `plan` filters rows anywhere below its top.
fn filters(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.downcast_ref::<FilterExec>().is_some() || plan.children().into_iter().any(filters)
}

/// The lookup sides of the joins so far: each one's plan and probe key, and its lookup
/// columns as expressions translate them.
pub(super) struct Sides {
    /// Each side's plan and probe key.
    pub joins: Vec<(LookupPlan, Ir)>,
    /// Each side's lookup columns so far.
    pub columns: Vec<RefCell<Vec<Arc<dyn PhysicalExpr>>>>,
    /// The side an outer join preserves, when it is the lookup side (TPC-H Q13's customers
    /// ⟕ orders): the streamed rows join it as an inner join does, and the plan emits every
    /// lookup row's group, those without a streamed row as SQL's NULL-extended row
    /// ([`super::GpuPlan::preserved`]).
    pub preserved: Option<usize>,
    /// The key-set sides whose keys a GPU plan of their own finds ([`super::GpuPlan::sets`]).
    pub sets: Vec<(usize, Arc<super::GpuPlan>)>,
    /// The per-key extremes sides the GPU aggregates ([`super::GpuPlan::extremes`]).
    pub extremes: Vec<(usize, Arc<super::GpuPlan>, Arc<dyn ExecutionPlan>)>,
    /// Whether each join's lookup input stays one side instead of [`split`]ting (group keys
    /// from both halves need one side's rows to index their groups, [`super::plan`]).
    pub whole: bool,
}

impl Sides {
    /// Each side's input schema.
    pub(super) fn schemas(&self) -> Vec<SchemaRef> {
        self.joins.iter().map(|(l, _)| l.input.schema()).collect()
    }

    /// The scopes of expressions over the sides, by index; `schemas` are
    /// [`Self::schemas`].
    pub(super) fn scopes<'a>(&'a self, schemas: &'a [SchemaRef]) -> Vec<LookupScope<'a>> {
        self.joins
            .iter()
            .zip(schemas)
            .zip(&self.columns)
            .map(|(((lookup, key), schema), columns)| LookupScope {
                key,
                schema,
                columns,
                outer: lookup.outer,
            })
            .collect()
    }

    /// Adds a side reading `input`, keyed by `lookup_key` over it and probed by `key`, and
    /// returns its index.
    pub(super) fn push(
        &mut self,
        input: Arc<dyn ExecutionPlan>,
        lookup_key: Arc<dyn PhysicalExpr>,
        key: Ir,
        outer: bool,
    ) -> usize {
        self.joins.push((
            LookupPlan {
                input,
                key: lookup_key,
                columns: Vec::new(),
                groups: Vec::new(),
                outer,
                set: None,
            },
            key,
        ));
        self.columns.push(RefCell::new(Vec::new()));
        self.joins.len() - 1
    }

    /// Adds the lookup side(s) of a join whose lookup input `input` (keyed by `lookup_key`
    /// over it) the streamed rows probe by `key`: one side, or two when the input
    /// [`split`]s (the dimension probed by a column gathered from the fact side). Pushes
    /// an inner join's match predicates; returns where the input's columns come from.
    pub(super) fn add(
        &mut self,
        input: &Arc<dyn ExecutionPlan>,
        lookup_key: &Arc<dyn PhysicalExpr>,
        key: Ir,
        outer: bool,
        predicates: &mut Vec<Ir>,
    ) -> Origins {
        let integer = |e: &Arc<dyn PhysicalExpr>, schema: &Schema| {
            e.data_type(schema).is_ok_and(|dt| dt.is_integer())
        };
        let whole = self.whole;
        let split = split(input, lookup_key).filter(|s| {
            !outer
                && !whole
                && integer(&s.link, &s.fact.schema())
                && integer(&s.dimension_key, &s.dimension.schema())
        });
        let Some(split) = split else {
            let side = self.push(collected(input), Arc::clone(lookup_key), key.clone(), outer);
            if !outer {
                predicates.push(Ir::Matched(side, Box::new(key)));
            }
            return origins(&input.schema(), side, 0);
        };
        let fact = self.push(Arc::clone(&split.fact), split.fact_key, key.clone(), false);
        // The link is the fact side's first lookup column, gathered by the streamed key.
        self.columns[fact].borrow_mut().push(split.link);
        let link = Ir::Lookup {
            side: fact,
            key: Box::new(key.clone()),
            column: 0,
        };
        let dimension = self.push(
            Arc::clone(&split.dimension),
            split.dimension_key,
            link.clone(),
            false,
        );
        predicates.push(Ir::Matched(fact, Box::new(key)));
        predicates.push(Ir::Matched(dimension, Box::new(link)));
        let (fact_schema, dimension_schema) = (split.fact.schema(), split.dimension.schema());
        split
            .columns
            .iter()
            .map(|&(from_fact, at)| {
                let (side, schema) = if from_fact {
                    (fact, &fact_schema)
                } else {
                    (dimension, &dimension_schema)
                };
                let column = Column::new(schema.field(at).name(), at);
                (side, Arc::new(column) as Arc<dyn PhysicalExpr>)
            })
            .collect()
    }
}

/// Takes hash join `j` of the chain into the plan: `columns` (the probe side's, on entry)
/// become the join's, a join keyed by one lookup side's columns moves into that side
/// ([`associate`]), any other adds lookup sides ([`Sides::add`]), and its further keys and
/// residual filter become `predicates`.
pub(super) fn join(
    j: &HashJoinExec,
    current: &mut Columns,
    sides: &mut Sides,
    predicates: &mut Vec<Ir>,
) -> Result<(), String> {
    if let Some(m) = membership(j)? {
        return semi(j, m, current, sides, predicates);
    }
    let schemas = sides.schemas();
    let outer_scopes = sides.scopes(&schemas);
    let (probe, probe_left) = join_sides(j)?;
    let lookup_input = if probe_left { j.right() } else { j.left() };
    // Each key pair as (over the probe side, over the lookup side).
    let on: Vec<_> = j
        .on()
        .iter()
        .map(|(l, r)| if probe_left { (l, r) } else { (r, l) })
        .collect();
    // The join's columns: left then right, then its projection.
    let left_width = j.left().schema().fields().len();
    let side = |left: bool, at: usize| (left == probe_left, at);
    let columns: Vec<(bool, usize)> = (0..j.join_schema().fields().len())
        .map(|i| {
            if i < left_width {
                side(true, i)
            } else {
                side(false, i - left_width)
            }
        })
        .collect();
    let preserves_probe = if probe_left {
        JoinType::Left
    } else {
        JoinType::Right
    };
    let preserves_lookup = *j.join_type() != JoinType::Inner && *j.join_type() != preserves_probe;
    let outer = *j.join_type() != JoinType::Inner && !preserves_lookup;
    // An outer join's NULL rows neither associate nor combine with another lookup.
    if ((outer || preserves_lookup) && !sides.joins.is_empty())
        || sides.joins.iter().any(|(l, _)| l.outer)
        || sides.preserved.is_some()
    {
        return Err("an outer join with another join above or below it stays on the CPU".into());
    }
    if let Some((s, key)) = on_lookup(on[0].0, &current.2) {
        // Keyed by one lookup side's columns: the join moves into that side
        // (`plan/join.rs`).
        if on.len() != 1 || j.filter().is_some() {
            return Err(format!(
                "a join on {} keyed by a lookup side, with {} keys or a residual filter, is not supported on the GPU",
                on[0].0,
                on.len()
            ));
        }
        let lookup = &mut sides.joins[s].0;
        let offset = lookup.input.schema().fields().len();
        lookup.input = associate(&lookup.input, lookup_input, key, on[0].1)?;
        let dimension = lookup_input.schema();
        *current = join_level(
            columns.into_iter(),
            (&current.0, &current.1, &current.2),
            &dimension,
            &origins(&dimension, s, offset),
        );
        project(j.projection.as_deref(), current);
        return Ok(());
    }
    // A new lookup side, probed by the streamed row's key.
    let key = translate(
        on[0].0,
        &Scope {
            schema: &probe.schema(),
            level: &current.0,
            host: &current.2,
            lookup: &outer_scopes,
            deferred: None,
        },
    )
    .map_err(|why| format!("join key {}: {why}", on[0].0))?;
    if !matches!(key.ty, Ty::Num(_)) {
        return Err(format!("the join key {} is not a number", on[0].0));
    }
    if (outer || preserves_lookup) && j.filter().is_some() {
        return Err("an outer join with a residual filter is not supported on the GPU".into());
    }
    let lookup_schema = lookup_input.schema();
    // An outer join keeps the probe rows without a match, their lookup columns NULL.
    let origins = sides.add(lookup_input, on[0].1, key.ir, outer, predicates);
    if preserves_lookup {
        // One side, not split into a fact and a dimension: its rows are the groups.
        if sides.joins.len() != 1 {
            return Err(format!(
                "a {} join that preserves a joined lookup side stays on the CPU",
                j.join_type()
            ));
        }
        sides.preserved = Some(0);
    }
    let next = join_level(
        columns.into_iter(),
        (&current.0, &current.1, &current.2),
        &lookup_schema,
        &origins,
    );
    let schemas = sides.schemas();
    let lookups = sides.scopes(&schemas);
    // The other key pairs are equalities over the join's columns (SQL's: a NULL on
    // either side drops the row, as the hash join does).
    let join_schema = j.join_schema();
    for (p, l) in &on[1..] {
        let (left, right) = if probe_left { (*p, *l) } else { (*l, *p) };
        let eq: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
            Arc::clone(left),
            Operator::Eq,
            shifted(right, left_width),
        ));
        let scope = Scope {
            schema: join_schema,
            level: &next.0,
            host: &next.2,
            lookup: &lookups,
            deferred: None,
        };
        let t = translate(&eq, &scope).map_err(|why| format!("join key {p} = {l}: {why}"))?;
        predicates.push(t.ir);
    }
    // A residual filter (DataFusion moves an OR across both sides there), over its
    // own columns drawn from both inputs.
    if let Some(filter) = j.filter() {
        let columns = filter
            .column_indices()
            .iter()
            .map(|c| side(c.side == JoinSide::Left, c.index));
        let (f_level, _, f_host) = join_level(
            columns,
            (&current.0, &current.1, &current.2),
            &lookup_schema,
            &origins,
        );
        let scope = Scope {
            schema: filter.schema(),
            level: &f_level,
            host: &f_host,
            lookup: &lookups,
            deferred: None,
        };
        let t =
            translate(filter.expression(), &scope).map_err(|why| format!("join filter: {why}"))?;
        if t.ty != Ty::Bool {
            return Err("a join filter that is not boolean".into());
        }
        predicates.push(t.ir);
    }
    *current = next;
    project(j.projection.as_deref(), current);
    Ok(())
}

/// `expr` (over the right input of a join) with its columns moved past the left input's
/// `left_width`, so that it reads the join's columns.
fn shifted(expr: &Arc<dyn PhysicalExpr>, left_width: usize) -> Arc<dyn PhysicalExpr> {
    Arc::clone(expr)
        .transform(|e| {
            Ok(match e.downcast_ref::<Column>() {
                Some(c) => {
                    Transformed::yes(Arc::new(Column::new(c.name(), c.index() + left_width))
                        as Arc<dyn PhysicalExpr>)
                }
                None => Transformed::no(e),
            })
        })
        .map_or_else(|_| Arc::clone(expr), |t| t.data)
}
