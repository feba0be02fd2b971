//! What the GPU runs in place of one partial `AggregateExec`: the source below its
//! projection/filter chain, the predicates and aggregate arguments as [`Ir`] over the
//! source's columns, the group keys, and the partial-state schema DataFusion's final
//! aggregate expects. [`plan`] decides at planning time (or says why not); the program and
//! the bounds check are built at run time from the converted data (`exec.rs`).

use std::sync::Arc;

use datafusion::arrow::array::{
    new_empty_array, ArrayRef, Decimal128Array, Float64Array, Int32Array, Int64Array, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, Partitioning};

use crate::expr::{column_type, leaf_level, translate, Level, Ty};
use crate::ir::{Bounds, Ir};
use crate::program::{sum96, Layout, Op, Program};

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
    /// The aggregates, in the partial aggregate's order.
    pub aggregates: Vec<Aggregate>,
    /// Source columns read as numbers (by predicates and aggregates), in slot order.
    pub values: Vec<usize>,
    /// The partial aggregate's output schema (group columns, then state fields).
    pub schema: SchemaRef,
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
    // The chain between the aggregate and the source, top first.
    let mut chain: Vec<Arc<dyn ExecutionPlan>> = Vec::new();
    let mut node = Arc::clone(agg.input());
    loop {
        let next = if let Some(p) = node.downcast_ref::<ProjectionExec>() {
            Arc::clone(p.input())
        } else if let Some(f) = node.downcast_ref::<FilterExec>() {
            Arc::clone(f.input())
        } else if let Some(r) = node.downcast_ref::<RepartitionExec>() {
            if !matches!(r.partitioning(), Partitioning::RoundRobinBatch(_)) {
                break;
            }
            Arc::clone(r.input())
        } else {
            break;
        };
        chain.push(Arc::clone(&node));
        node = next;
    }
    let source = node;
    // Columns of each level as expressions over the source; `origin` tracks plain source
    // columns (group keys must be those).
    let mut level: Level = leaf_level(&source.schema());
    let mut origin: Vec<Option<usize>> = (0..source.schema().fields().len()).map(Some).collect();
    let mut predicates = Vec::new();
    for node in chain.iter().rev() {
        if let Some(p) = node.downcast_ref::<ProjectionExec>() {
            let schema = p.input().schema();
            let mut next_level = Vec::new();
            let mut next_origin = Vec::new();
            for e in p.expr() {
                next_level.push(translate(&e.expr, &schema, &level));
                next_origin.push(
                    e.expr
                        .downcast_ref::<Column>()
                        .and_then(|c| origin.get(c.index()).copied().flatten()),
                );
            }
            level = next_level;
            origin = next_origin;
        } else if let Some(f) = node.downcast_ref::<FilterExec>() {
            let t = translate(f.predicate(), &f.input().schema(), &level)
                .map_err(|why| format!("filter: {why}"))?;
            if t.ty != Ty::Bool {
                return Err("a filter predicate that is not boolean".into());
            }
            predicates.push(t.ir);
            if let Some(projection) = f.projection() {
                level = projection.iter().map(|&i| level[i].clone()).collect();
                origin = projection.iter().map(|&i| origin[i]).collect();
            }
        }
    }
    let input_schema = agg.input().schema();
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
                let t = translate(&args[0], &input_schema, &level)
                    .map_err(|why| format!("{}: {why}", what()))?;
                if t.ty == Ty::Bool && kind != AggKind::Count {
                    return Err(format!("{}: a boolean argument", what()));
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
    if values.len() + keys.len() > MAX_SLOTS {
        return Err(format!(
            "the query reads {} columns and {} group keys; the GPU kernel binds {MAX_SLOTS}",
            values.len(),
            keys.len()
        ));
    }
    Ok(GpuPlan {
        source,
        predicates,
        keys,
        aggregates,
        values,
        schema: agg.schema(),
    })
}

impl GpuPlan {
    /// The kernel slot of source column `c` read as a number.
    fn slot(&self, c: usize) -> u32 {
        self.values.iter().position(|&v| v == c).unwrap_or(0) as u32
    }

    /// Checks that every value the program computes fits i64 (min/max arguments i32), given
    /// the source columns' bounds.
    pub fn check_bounds(&self, column: &dyn Fn(usize) -> Bounds) -> Result<(), String> {
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
    pub fn program(&self, cards: &[u32], nullable: u32) -> (Program, Vec<AggWords>) {
        let slot = |c: usize| self.slot(c);
        let column_nullable = |c: usize| nullable >> self.slot(c) & 1 == 1;
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
