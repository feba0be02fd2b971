//! What the GPU runs in place of one partial `AggregateExec`: the source below its
//! projection/filter chain, the predicates and aggregate arguments as [`Ir`] over the
//! source's columns, the group keys, and the partial-state schema DataFusion's final
//! aggregate expects. [`plan`] decides at planning time (or says why not); the program and
//! the bounds check are built at run time from the converted data (`exec.rs`).

use std::cell::RefCell;
use std::sync::Arc;

use datafusion::arrow::array::{
    new_empty_array, ArrayRef, Decimal128Array, Float64Array, Int32Array, Int64Array, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{JoinSide, JoinType, NullEquality};
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};

use crate::expr::{column_type, leaf_level, on_lookup, translate, Level, LookupScope, Scope, Ty};
use crate::ir::{Bounds, Ir, Leaf, Lowering};
use crate::lookup::{LookupPlan, LookupTable};
use crate::program::{sum96, Layout, LookupShape, Op, Program};

/// Aggregate functions the GPU computes (partial states).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggKind {
    /// `sum`: state [sum].
    Sum,
    /// `avg`: state [count, sum].
    Avg,
    /// `count`: state [count].
    Count,
    /// `min`: state [min].
    Min,
    /// `max`: state [max].
    Max,
}

/// One aggregate of the plan.
#[derive(Clone, Debug)]
pub struct Aggregate {
    /// The function.
    pub kind: AggKind,
    /// Its argument (a non-null constant for `count(*)`).
    pub arg: Ir,
    /// Types of its state fields, in DataFusion's order.
    pub state: Vec<DataType>,
}

/// The GPU half of a partial aggregation (see the module docs).
#[derive(Clone, Debug)]
pub struct GpuPlan {
    /// The operator whose batches the GPU aggregates.
    pub source: Arc<dyn ExecutionPlan>,
    /// Predicates (all must be true) over the source's columns.
    pub predicates: Vec<Ir>,
    /// Source columns of the group keys, in GROUP BY order.
    pub keys: Vec<usize>,
    /// Source columns the kernel reads as codes: the group keys, then string columns the
    /// predicates and aggregates compare with literals.
    pub coded: Vec<usize>,
    /// The aggregates, in the partial aggregate's order.
    pub aggregates: Vec<Aggregate>,
    /// Source columns read as numbers (by predicates and aggregates), in slot order.
    pub values: Vec<usize>,
    /// The partial aggregate's output schema (group columns, then state fields).
    pub schema: SchemaRef,
    /// The lookup side of an inner join between the source and a smaller input, when the
    /// chain has one (`lookup.rs`).
    pub lookup: Option<LookupPlan>,
}

/// Accumulator words of one aggregate in a group.
#[derive(Clone, Copy, Debug)]
pub struct AggWords {
    /// Count of non-null arguments.
    pub count: u32,
    /// Sum of the arguments.
    pub sum: Option<u32>,
    /// Minimum or maximum.
    pub extreme: Option<u32>,
}

/// Kernel column slots: the value columns then one code column per key; at most this many.
pub const MAX_SLOTS: usize = 8;

/// The GPU plan of `agg`, a partial aggregate, or why it stays on the CPU.
pub fn plan(agg: &AggregateExec) -> Result<GpuPlan, String> {
    if *agg.mode() != AggregateMode::Partial {
        return Err("only partial aggregates run on the GPU".into());
    }
    let group = agg.group_expr();
    if group.has_grouping_set() || !group.null_expr().is_empty() {
        return Err("grouping sets are not supported on the GPU".into());
    }
    if agg.filter_expr().iter().any(Option::is_some) {
        return Err("aggregate FILTER clauses are not supported on the GPU".into());
    }
    if agg.limit_options().is_some() {
        return Err("limited aggregation is left to DataFusion".into());
    }
    // The chain between the aggregate and the source, top first: repartitions and
    // coalesces go (the GPU reads every partition), and a join continues into its probe side.
    let mut chain: Vec<Arc<dyn ExecutionPlan>> = Vec::new();
    let mut node = Arc::clone(agg.input());
    let mut joins = 0;
    loop {
        let next = if let Some(p) = node.downcast_ref::<ProjectionExec>() {
            Arc::clone(p.input())
        } else if let Some(f) = node.downcast_ref::<FilterExec>() {
            Arc::clone(f.input())
        } else if let Some(r) = node.downcast_ref::<RepartitionExec>() {
            Arc::clone(r.input())
        } else if let Some(c) = node.downcast_ref::<CoalescePartitionsExec>() {
            if c.fetch().is_some() {
                break;
            }
            Arc::clone(c.input())
        } else if let Some(j) = node.downcast_ref::<HashJoinExec>() {
            joins += 1;
            if joins > 1 {
                return Err(
                    "more than one join below the aggregate; the GPU joins one lookup side".into(),
                );
            }
            let (probe, _) = join_sides(j)?;
            probe
        } else {
            break;
        };
        chain.push(Arc::clone(&node));
        node = next;
    }
    let source = node;
    // Columns of each level as expressions over the source; `origin` tracks plain source
    // columns (group keys must be those), `host` columns of the join's lookup side.
    let mut level: Level = leaf_level(&source.schema());
    let mut origin: Vec<Option<usize>> = (0..source.schema().fields().len()).map(Some).collect();
    let mut host: Vec<Option<Arc<dyn PhysicalExpr>>> = vec![None; origin.len()];
    let mut predicates = Vec::new();
    let lookup_columns = RefCell::new(Vec::new());
    let mut join: Option<(LookupPlan, Ir)> = None;
    for node in chain.iter().rev() {
        let lookup_schema = join.as_ref().map(|(l, _)| l.input.schema());
        let lookup_scope = join
            .as_ref()
            .zip(lookup_schema.as_ref())
            .map(|((_, key), schema)| LookupScope {
                key,
                schema,
                columns: &lookup_columns,
            });
        let scope = |schema| Scope {
            schema,
            level: &level,
            host: &host,
            lookup: lookup_scope.as_ref(),
        };
        if let Some(p) = node.downcast_ref::<ProjectionExec>() {
            let schema = p.input().schema();
            let mut next_level = Vec::new();
            let mut next_origin = Vec::new();
            let mut next_host = Vec::new();
            for e in p.expr() {
                next_level.push(translate(&e.expr, &scope(&schema)));
                next_origin.push(
                    e.expr
                        .downcast_ref::<Column>()
                        .and_then(|c| origin.get(c.index()).copied().flatten()),
                );
                next_host.push(on_lookup(&e.expr, &host));
            }
            level = next_level;
            origin = next_origin;
            host = next_host;
        } else if let Some(f) = node.downcast_ref::<FilterExec>() {
            let t = translate(f.predicate(), &scope(&f.input().schema()))
                .map_err(|why| format!("filter: {why}"))?;
            if t.ty != Ty::Bool {
                return Err("a filter predicate that is not boolean".into());
            }
            predicates.push(t.ir);
            if let Some(projection) = f.projection() {
                level = projection.iter().map(|&i| level[i].clone()).collect();
                origin = projection.iter().map(|&i| origin[i]).collect();
                host = projection.iter().map(|&i| host[i].clone()).collect();
            }
        } else if let Some(j) = node.downcast_ref::<HashJoinExec>() {
            let (probe, probe_left) = join_sides(j)?;
            let (lookup_input, on) = if probe_left {
                (j.right(), (&j.on()[0].0, &j.on()[0].1))
            } else {
                (j.left(), (&j.on()[0].1, &j.on()[0].0))
            };
            let key = translate(on.0, &Scope::plain(&probe.schema(), &level))
                .map_err(|why| format!("join key {}: {why}", on.0))?;
            if !matches!(key.ty, Ty::Num(_)) {
                return Err(format!("the join key {} is not a number", on.0));
            }
            // The join's columns: left then right, then its projection.
            let left_width = j.left().schema().fields().len();
            let lookup_schema = lookup_input.schema();
            let side = |left: bool, at: usize| (left == probe_left, at);
            let columns = (0..j.join_schema().fields().len()).map(|i| {
                if i < left_width {
                    side(true, i)
                } else {
                    side(false, i - left_width)
                }
            });
            let next = join_level(columns, &level, &origin, &lookup_schema);
            predicates.push(Ir::Matched(Box::new(key.ir.clone())));
            // A residual filter (DataFusion moves an OR across both sides there), over its
            // own columns drawn from both inputs.
            if let Some(filter) = j.filter() {
                let columns = filter
                    .column_indices()
                    .iter()
                    .map(|c| side(c.side == JoinSide::Left, c.index));
                let (f_level, _, f_host) = join_level(columns, &level, &origin, &lookup_schema);
                let lookup = LookupScope {
                    key: &key.ir,
                    schema: &lookup_schema,
                    columns: &lookup_columns,
                };
                let scope = Scope {
                    schema: filter.schema(),
                    level: &f_level,
                    host: &f_host,
                    lookup: Some(&lookup),
                };
                let t = translate(filter.expression(), &scope)
                    .map_err(|why| format!("join filter: {why}"))?;
                if t.ty != Ty::Bool {
                    return Err("a join filter that is not boolean".into());
                }
                predicates.push(t.ir);
            }
            (level, origin, host) = next;
            if let Some(projection) = &j.projection {
                level = projection.iter().map(|&i| level[i].clone()).collect();
                origin = projection.iter().map(|&i| origin[i]).collect();
                host = projection.iter().map(|&i| host[i].clone()).collect();
            }
            let plan = LookupPlan {
                input: collected(lookup_input),
                key: Arc::clone(on.1),
                columns: Vec::new(),
            };
            join = Some((plan, key.ir));
        }
    }
    let input_schema = agg.input().schema();
    let lookup_schema = join.as_ref().map(|(l, _)| l.input.schema());
    let lookup_scope = join
        .as_ref()
        .zip(lookup_schema.as_ref())
        .map(|((_, key), schema)| LookupScope {
            key,
            schema,
            columns: &lookup_columns,
        });
    let scope = Scope {
        schema: &input_schema,
        level: &level,
        host: &host,
        lookup: lookup_scope.as_ref(),
    };
    let mut keys = Vec::new();
    for (e, name) in group.expr() {
        let c = e
            .downcast_ref::<Column>()
            .and_then(|c| origin.get(c.index()).copied().flatten())
            .ok_or_else(|| format!("group key {name} is not a plain column"))?;
        let dt = source.schema().field(c).data_type().clone();
        if !crate::convert::key_type_supported(&dt) {
            return Err(format!(
                "group key {name} has type {dt}, not supported on the GPU"
            ));
        }
        keys.push(c);
    }
    let mut aggregates = Vec::new();
    for a in agg.aggr_expr() {
        let name = a.fun().name().to_ascii_lowercase();
        let what = || format!("aggregate {}", a.name());
        if a.is_distinct() {
            return Err(format!("{}: DISTINCT is not supported on the GPU", what()));
        }
        let args = a.expressions();
        let kind = match name.as_str() {
            "sum" => AggKind::Sum,
            "avg" => AggKind::Avg,
            "count" => AggKind::Count,
            "min" => AggKind::Min,
            "max" => AggKind::Max,
            other => return Err(format!("{}: {other} is not supported on the GPU", what())),
        };
        if args.len() != 1 {
            return Err(format!("{}: {} arguments", what(), args.len()));
        }
        let arg = match args[0].downcast_ref::<Literal>() {
            // count(*) is count(1): every row counts.
            Some(l) if kind == AggKind::Count && !l.value().is_null() => Ir::Const(1),
            _ => {
                let t = translate(&args[0], &scope).map_err(|why| format!("{}: {why}", what()))?;
                if t.ty == Ty::Bool && kind != AggKind::Count {
                    return Err(format!("{}: a boolean argument", what()));
                }
                if t.ty == Ty::Str && kind != AggKind::Count {
                    return Err(format!("{}: a string argument", what()));
                }
                t.ir
            }
        };
        let state: Vec<DataType> = a
            .state_fields()
            .map_err(|e| e.to_string())?
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let supported = match (kind, state.as_slice()) {
            (AggKind::Sum, [DataType::Decimal128(..) | DataType::Int64]) => true,
            (AggKind::Avg, [DataType::UInt64, DataType::Decimal128(..) | DataType::Float64]) => {
                true
            }
            (AggKind::Count, [DataType::Int64]) => true,
            (AggKind::Min | AggKind::Max, [t]) => column_type(t).is_some(),
            _ => false,
        };
        if !supported {
            return Err(format!(
                "{}: state {state:?} is not supported on the GPU",
                what()
            ));
        }
        aggregates.push(Aggregate { kind, arg, state });
    }
    let mut values = Vec::new();
    for p in &predicates {
        p.columns(&mut values);
    }
    for a in &aggregates {
        a.arg.columns(&mut values);
    }
    // String columns compared with literals are coded like group keys, after them.
    let mut coded = keys.clone();
    for p in &predicates {
        p.strings(&mut coded);
    }
    for a in &aggregates {
        a.arg.strings(&mut coded);
    }
    if values.len() + coded.len() > MAX_SLOTS {
        return Err(format!(
            "the query reads {} number columns and {} group keys or string columns; the GPU kernel binds {MAX_SLOTS}",
            values.len(),
            coded.len()
        ));
    }
    let lookup = join.map(|(mut plan, _)| {
        plan.columns = lookup_columns.into_inner();
        plan
    });
    Ok(GpuPlan {
        source,
        predicates,
        keys,
        coded,
        aggregates,
        values,
        schema: agg.schema(),
        lookup,
    })
}

/// `plan` without the repartitions and coalesces at its top: the lookup side is collected
/// whole, so hash-partitioning it for a partitioned join (15M TPC-H orders rows at SF 10,
/// strings included) is only cost.
fn collected(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
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
/// there): probe columns keep their expressions, lookup columns become host expressions.
#[allow(clippy::type_complexity)] // the three per-column vectors `plan` carries
fn join_level(
    columns: impl Iterator<Item = (bool, usize)>,
    level: &Level,
    origin: &[Option<usize>],
    lookup: &SchemaRef,
) -> (
    Level,
    Vec<Option<usize>>,
    Vec<Option<Arc<dyn PhysicalExpr>>>,
) {
    let mut next = (Vec::new(), Vec::new(), Vec::new());
    for (probe, at) in columns {
        if probe {
            next.0.push(level[at].clone());
            next.1.push(origin[at]);
            next.2.push(None);
        } else {
            let f = lookup.field(at);
            next.0.push(Err(format!(
                "column {} of the join's lookup side has type {}, which the GPU does not gather",
                f.name(),
                f.data_type()
            )));
            next.1.push(None);
            next.2.push(Some(
                Arc::new(Column::new(f.name(), at)) as Arc<dyn PhysicalExpr>
            ));
        }
    }
    next
}

/// The probe side of `join` (the larger input, which the GPU streams) and whether it is the
/// left one, or why the GPU does not take the join: it must be an inner equi-join on one key
/// (a residual filter is one more predicate), whose lookup side is then checked to be many-to-one at run
/// time (`lookup.rs`).
fn join_sides(join: &HashJoinExec) -> Result<(Arc<dyn ExecutionPlan>, bool), String> {
    if *join.join_type() != JoinType::Inner {
        return Err(format!(
            "a {} join; the GPU joins inner joins",
            join.join_type()
        ));
    }
    if join.on().len() != 1 {
        return Err(format!(
            "a join on {} keys; the GPU joins on one",
            join.on().len()
        ));
    }
    if join.null_equality() != NullEquality::NullEqualsNothing || join.fetch().is_some() {
        return Err("a join with null-equal keys or a limit is not supported on the GPU".into());
    }
    // The lookup side is the one whose base table is smaller: a fact table's rows each find
    // one dimension row (TPC-H's lineitem → part, lineitem → orders), whatever the filters
    // do to DataFusion's estimates. Unknown sizes keep DataFusion's build side (left).
    let base_rows = |plan: &Arc<dyn ExecutionPlan>| {
        let mut node = Arc::clone(plan);
        while node.children().len() == 1 {
            node = Arc::clone(node.children()[0]);
        }
        StatisticsContext::new()
            .compute(node.as_ref(), &StatisticsArgs::new())
            .ok()
            .and_then(|s| s.num_rows.get_value().copied())
    };
    let probe_left = match (base_rows(join.left()), base_rows(join.right())) {
        (Some(l), Some(r)) => l > r,
        _ => false,
    };
    let probe = if probe_left {
        join.left()
    } else {
        join.right()
    };
    Ok((Arc::clone(probe), probe_left))
}

impl GpuPlan {
    /// The kernel slot of source column `c` read as a number.
    /// The kernel slot of source column `c`: a number slot, else a code slot after them.
    fn slot(&self, c: usize) -> u32 {
        let at = match self.values.iter().position(|&v| v == c) {
            Some(s) => s,
            None => self.values.len() + self.coded.iter().position(|&k| k == c).unwrap_or(0),
        };
        at as u32
    }

    /// Checks that every value the program computes fits i64 (min/max arguments i32), given
    /// the source columns' bounds.
    /// `lookup` is the join's built lookup side.
    pub fn check_bounds(
        &self,
        source: &dyn Fn(usize) -> Bounds,
        lookup: Option<&LookupTable>,
    ) -> Result<(), String> {
        let column = |leaf: Leaf| match leaf {
            Leaf::Column(c) => source(c),
            Leaf::Lookup(j) => lookup
                .and_then(|l| l.bounds.get(j))
                .copied()
                .unwrap_or((0, 0)),
        };
        let column: &dyn Fn(Leaf) -> Bounds = &column;
        for p in &self.predicates {
            p.bounds(column).map_err(|e| e.to_string())?;
        }
        for a in &self.aggregates {
            let (lo, hi) = a.arg.bounds(column).map_err(|e| e.to_string())?;
            if matches!(a.kind, AggKind::Min | AggKind::Max)
                && (lo < i32::MIN as i128 || hi > i32::MAX as i128)
            {
                return Err(format!(
                    "a min/max argument may reach [{lo}, {hi}], past the 32-bit range the GPU keeps extremes in"
                ));
            }
        }
        Ok(())
    }

    /// The program for key cardinalities `cards` (codes per key), with the word layout of
    /// the row count (word 0) and of each aggregate. `nullable` has bit s set when kernel slot
    /// s may hold nulls. Aggregates that would accumulate the same thing share words: the
    /// count of an argument that cannot be null is the row count, and equal arguments share
    /// their sum (TPC-H Q1's `sum(l_quantity)` and `avg(l_quantity)`), so the kernel does each
    /// accumulation once.
    /// `lookup` is the layout of the join's lookup buffer, `code(k, s)` the code of string
    /// `s` (`None`: NULL) in coded column `k` ([`Self::coded`]), if any row has it.
    pub fn program(
        &self,
        cards: &[u32],
        nullable: u32,
        lookup: Option<&LookupShape>,
        code: &dyn Fn(usize, Option<&str>) -> Option<u32>,
    ) -> (Program, Vec<AggWords>) {
        let slot = |c: usize| self.slot(c);
        let source_code = |c: usize, s: Option<&str>| {
            let k = self.coded.iter().position(|&k| k == c)?;
            code(k, s)
        };
        let slot = Lowering {
            slot: &slot,
            code: &source_code,
            lookup,
        };
        // Lookup columns hold no nulls (`lookup.rs`), and the join's match filter runs first.
        let column_nullable = |leaf: Leaf| match leaf {
            Leaf::Column(c) => nullable >> self.slot(c) & 1 == 1,
            Leaf::Lookup(_) => false,
        };
        let mut ops = Vec::new();
        for p in &self.predicates {
            p.lower(&slot, &mut ops);
            ops.push(Op::Filter);
        }
        // Mixed-radix group index: key k's code times the product of the earlier
        // cardinalities.
        ops.push(Op::Const(0));
        let mut stride = 1i64;
        for (k, card) in cards.iter().enumerate() {
            ops.push(Op::Load((self.values.len() + k) as u32));
            ops.push(Op::Const(stride));
            ops.push(Op::Mul);
            ops.push(Op::Add);
            stride *= *card as i64;
        }
        ops.push(Op::Group);
        let mut layout = Layout::default();
        let rows = layout.sum();
        ops.push(Op::Const(1));
        ops.push(Op::Count(rows));
        // (kind, argument) → word, where kind 0 is a count, 1 a sum, 2 a min, 3 a max.
        let mut shared: Vec<(u8, Ir, u32)> = Vec::new();
        let mut word = |kind: u8, arg: &Ir, ops: &mut Vec<Op>| -> u32 {
            if kind == 0 && !arg.nullable(&column_nullable) {
                return rows;
            }
            if let Some((_, _, w)) = shared.iter().find(|(k, a, _)| *k == kind && a == arg) {
                return *w;
            }
            let w = match kind {
                0 | 1 => layout.sum(),
                _ => layout.extreme(kind == 3),
            };
            arg.lower(&slot, ops);
            ops.push(match kind {
                0 => Op::Count(w),
                1 => Op::Sum(w),
                2 => Op::Min(w),
                _ => Op::Max(w),
            });
            shared.push((kind, arg.clone(), w));
            w
        };
        let mut words = Vec::new();
        for a in &self.aggregates {
            let count = word(0, &a.arg, &mut ops);
            let mut w = AggWords {
                count,
                sum: None,
                extreme: None,
            };
            match a.kind {
                AggKind::Sum | AggKind::Avg => w.sum = Some(word(1, &a.arg, &mut ops)),
                AggKind::Min => w.extreme = Some(word(2, &a.arg, &mut ops)),
                AggKind::Max => w.extreme = Some(word(3, &a.arg, &mut ops)),
                AggKind::Count => {}
            }
            words.push(w);
        }
        (
            Program {
                ops,
                kinds: layout.into_kinds(),
            },
            words,
        )
    }

    /// The partial-state batch from the accumulators `acc` of `groups` groups: the groups
    /// with rows (or the one group without GROUP BY, always), `key_values(k, groups)` giving
    /// key k's values for the emitted group indices.
    pub fn output(
        &self,
        acc: &[u32],
        words: &[AggWords],
        wpg: usize,
        groups: usize,
        key_values: &dyn Fn(usize, &[usize]) -> datafusion::common::Result<ArrayRef>,
    ) -> datafusion::common::Result<RecordBatch> {
        let emitted: Vec<usize> = (0..groups)
            .filter(|g| self.keys.is_empty() || sum96(acc, g * wpg) > 0)
            .collect();
        let mut columns: Vec<ArrayRef> = Vec::new();
        for k in 0..self.keys.len() {
            let dt = self.schema.field(k).data_type();
            columns.push(if emitted.is_empty() {
                new_empty_array(dt)
            } else {
                // A scan may deliver a key in another encoding than DataFusion's (the
                // direct Parquet scan reads strings as dictionaries): one row per group to cast.
                let values = key_values(k, &emitted)?;
                if values.data_type() == dt {
                    values
                } else {
                    cast(&values, dt)?
                }
            });
        }
        for (a, w) in self.aggregates.iter().zip(words) {
            let count = |g: usize| sum96(acc, g * wpg + w.count as usize);
            let sum = |g: usize| match (count(g), w.sum) {
                (c, Some(s)) if c > 0 => Some(sum96(acc, g * wpg + s as usize)),
                _ => None,
            };
            for dt in &a.state {
                let array: ArrayRef = match (a.kind, dt) {
                    // A group with no non-null argument has a NULL count, as DataFusion's own
                    // partial avg emits it: its final avg marks a group seen by a non-null
                    // count and would divide that group's NULL sum by zero.
                    (AggKind::Avg, DataType::UInt64) => Arc::new(UInt64Array::from_iter(
                        emitted
                            .iter()
                            .map(|&g| Some(count(g) as u64).filter(|&c| c > 0)),
                    )),
                    (AggKind::Count, _) => Arc::new(Int64Array::from_iter_values(
                        emitted.iter().map(|&g| count(g) as i64),
                    )),
                    (AggKind::Sum | AggKind::Avg, DataType::Decimal128(p, s)) => Arc::new(
                        Decimal128Array::from_iter(emitted.iter().map(|&g| sum(g)))
                            .with_precision_and_scale(*p, *s)?,
                    ),
                    (AggKind::Sum | AggKind::Avg, DataType::Int64) => Arc::new(
                        Int64Array::from_iter(emitted.iter().map(|&g| sum(g).map(|s| s as i64))),
                    ),
                    (AggKind::Sum | AggKind::Avg, DataType::Float64) => Arc::new(
                        Float64Array::from_iter(emitted.iter().map(|&g| sum(g).map(|s| s as f64))),
                    ),
                    (AggKind::Min | AggKind::Max, dt) => {
                        let e = w.extreme.unwrap_or(0) as usize;
                        let v = emitted.iter().map(|&g| {
                            (count(g) > 0).then(|| (acc[g * wpg + e] ^ 0x8000_0000) as i32)
                        });
                        match dt {
                            DataType::Decimal128(p, s) => Arc::new(
                                Decimal128Array::from_iter(v.map(|x| x.map(i128::from)))
                                    .with_precision_and_scale(*p, *s)?,
                            ),
                            _ => cast(&Int32Array::from_iter(v), dt)?,
                        }
                    }
                    (_, dt) => {
                        return Err(datafusion::error::DataFusionError::Internal(format!(
                            "GPU state type {dt} of {:?}",
                            a.kind
                        )))
                    }
                };
                columns.push(array);
            }
        }
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}
