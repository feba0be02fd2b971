//! What the GPU runs in place of one partial `AggregateExec`: the source below its
//! projection/filter chain, the predicates and aggregate arguments as [`Ir`] over the
//! source's columns, the group keys, and the partial-state schema DataFusion's final
//! aggregate expects. [`plan`] decides at planning time (or says why not); the program and
//! the bounds check are built at run time from the converted data (`exec.rs`).

use std::cell::RefCell;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::ExecutionPlan;

mod deferred;
mod join;
mod lower;
mod output;
mod payload;
mod semi;

pub(crate) use payload::PayloadPlan;
pub(crate) use semi::finished_extremes;

use deferred::derived_key;
use join::{join, join_sides, Columns, Sides};

use crate::codemap::CodeMap;
use crate::expr::{
    column_type, leaf_level, on_lookup, translate, Deferred, Host, Level, Scope, Ty,
};
use crate::ir::Ir;
use crate::lookup::LookupPlan;

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
    /// `count(DISTINCT x)` over numbers: state [list of the group's distinct values], from a
    /// presence bitmap per group over x's bounds ([`Span`]).
    CountDistinct,
}

/// The values a COUNT(DISTINCT) argument may take in one run: `words` bitmap words from
/// value `lo` on (bit d stands for `lo + d`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The smallest value.
    pub lo: i64,
    /// Bitmap words per group (32 values each).
    pub words: u32,
}

/// Most bitmap words one COUNT(DISTINCT) keeps per group (2^21 words: 64M values, 8 MiB);
/// a wider argument range leaves the query to DataFusion, whose hash sets grow with the
/// values seen instead of the values possible.
pub const MAX_SPAN_WORDS: u64 = 1 << 21;

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
    /// Source columns of the coded group keys, in GROUP BY order ([`Self::groups`] places
    /// them among the lookup side's).
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
    /// The lookup sides of the joins between the source and smaller inputs, in the order
    /// the chain meets them (`lookup.rs`); the lookup buffer holds one after the other.
    pub lookups: Vec<LookupPlan>,
    /// The GROUP BY keys, in order.
    pub groups: Vec<GroupKey>,
    /// The lookup side and probe key whose lookup row is a group index digit, when group
    /// keys come from a lookup side: group `source + row × S`, where `source` is the
    /// mixed-radix index of the coded keys and `S` their combinations.
    pub lookup_row: Option<(usize, Ir)>,
    /// String expressions the GPU looks up by code ([`Ir::Mapped`]), whose tables follow the
    /// joins' lookup sides in the lookup buffer.
    pub maps: Vec<CodeMap>,
    /// The lookup side an outer join preserves ([`join::Sides::preserved`]): every one of its
    /// rows is a group ([`Self::lookup_row`]), one without streamed rows holding the states
    /// of SQL's NULL-extended row (counts 0, sums, extremes and averages NULL), which
    /// `preserved_shape` made the only states such a group can have.
    pub preserved: Option<usize>,
    /// The code maps ([`Self::maps`]) whose values are group keys ([`GroupKey::Mapped`]), in
    /// GROUP BY order: their digits follow the coded keys' in the group index.
    pub key_maps: Vec<usize>,
    /// Values known when the query runs ([`Ir::Param`]), with their planned types:
    /// [`Self::resolved`] puts them in before the run.
    pub params: Vec<(Arc<dyn PhysicalExpr>, Ty)>,
    /// Key-set sides of [`Self::lookups`] (by index) whose keys the GPU finds itself: the
    /// plan of the side's `count(distinct key)`, whose presence bitmap is the set
    /// (`plan/semi.rs`). The side's input stays its CPU plan, which runs when this one
    /// cannot.
    pub sets: Vec<(usize, Arc<GpuPlan>)>,
    /// Per-key extremes sides of [`Self::lookups`] (by index) that the GPU aggregates
    /// itself: the plan of the side's partial `min`/`max` grouped by its key, and that
    /// partial aggregate for DataFusion (`plan/semi/per_key.rs`). The side's input stays
    /// its CPU plan, which runs when `GPUGRAPH_GPU_SETS=0`.
    pub extremes: Vec<(usize, Arc<GpuPlan>, Arc<dyn ExecutionPlan>)>,
    /// Lookup sides of [`Self::lookups`] (by index) with payload columns: the GPU plan that
    /// finds their keys and payload words from GPU columns (`plan/payload.rs`), or why the
    /// side is collected on the CPU (`--explain` says which). The side's input stays its
    /// CPU plan, which runs when the GPU plan refuses the data.
    pub payloads: Vec<(usize, Result<PayloadPlan, String>)>,
}

/// Where a group key's values come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKey {
    /// Coded source column `keys[k]`.
    Source(usize),
    /// Lookup-side expression `groups[j]` of the [`GpuPlan::lookup_row`] side: one group per
    /// lookup row (and coded keys'
    /// combination), so a partial state may repeat a key (several orders of one customer);
    /// DataFusion's final aggregate merges them.
    Lookup(usize),
    /// Code map [`GpuPlan::key_maps`]`[j]`: an expression over one coded source string
    /// column, whose distinct values the host codes ([`CodeMap::key_table`]); the code of
    /// the row's string's value is a group index digit.
    Mapped(usize),
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
    /// The presence bitmap of a COUNT(DISTINCT): its first word and its span.
    pub bits: Option<(u32, Span)>,
}

/// Kernel column slots: the value columns then one code column per key; at most this many.
pub const MAX_SLOTS: usize = 8;

/// Why group keys from two lookup sides refuse a plan (the start of the reason).
const TWO_SIDES: &str = "come from two joins' lookup sides";

/// The GPU plan of `agg`, a partial aggregate, or why it stays on the CPU. Group keys from
/// both halves of a lookup input that splits into a fact and a dimension side (TPC-H Q18's
/// `o_orderkey` of orders and `c_name` of the customers joined to them) index their groups
/// by one side's rows when that input is kept whole: one lookup side, collected with its
/// join on the CPU, whose row is the group.
pub fn plan(agg: &AggregateExec) -> Result<GpuPlan, String> {
    match plan_sides(agg, false) {
        Err(why) if why.contains(TWO_SIDES) => plan_sides(agg, true).map_err(|whole| {
            if whole == why {
                why
            } else {
                format!("{why} (with the lookup inputs kept whole: {whole})")
            }
        }),
        planned => planned,
    }
}

/// [`plan`], with each join's lookup input kept as one side when `whole`.
fn plan_sides(agg: &AggregateExec, whole: bool) -> Result<GpuPlan, String> {
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
    let mut host: Vec<Host> = vec![None; origin.len()];
    let mut predicates = Vec::new();
    let deferred = RefCell::new(Deferred::default());
    // The top projection's columns that are expressions over one source string column
    // (TPC-H Q22's `substring(c_phone from 1 for 2) as cntrycode`): group keys by code.
    let mut derived: Vec<Option<CodeMap>> = Vec::new();
    let mut sides = Sides {
        joins: Vec::new(),
        columns: Vec::new(),
        preserved: None,
        sets: Vec::new(),
        extremes: Vec::new(),
        whole,
    };
    for node in chain.iter().rev() {
        let schemas = sides.schemas();
        let lookups = sides.scopes(&schemas);
        let scope = |schema| Scope {
            schema,
            level: &level,
            host: &host,
            lookup: &lookups,
            deferred: Some(&deferred),
        };
        if let Some(p) = node.downcast_ref::<ProjectionExec>() {
            let schema = p.input().schema();
            let mut next_level = Vec::new();
            let mut next_origin = Vec::new();
            let mut next_host = Vec::new();
            derived = p
                .expr()
                .iter()
                .map(|e| derived_key(&e.expr, &schema, &origin))
                .collect();
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
            derived.clear();
            let t = translate(f.predicate(), &scope(&f.input().schema()))
                .map_err(|why| format!("filter: {why}"))?;
            if t.ty != Ty::Bool {
                return Err("a filter predicate that is not boolean".into());
            }
            predicates.push(t.ir);
            let mut columns = (level, origin, host);
            project(f.projection().as_deref(), &mut columns);
            (level, origin, host) = columns;
        } else if let Some(j) = node.downcast_ref::<HashJoinExec>() {
            derived.clear();
            let mut columns = (level, origin, host);
            join(j, &mut columns, &mut sides, &mut predicates)?;
            (level, origin, host) = columns;
        }
    }
    let input_schema = agg.input().schema();
    let schemas = sides.schemas();
    let lookups = sides.scopes(&schemas);
    let scope = Scope {
        schema: &input_schema,
        level: &level,
        host: &host,
        lookup: &lookups,
        deferred: Some(&deferred),
    };
    // Group keys: coded source columns, or one lookup side's columns, whose groups are then
    // indexed by its lookup row (a source column a join key equals is that side's key: TPC-H
    // Q3 groups by l_orderkey, o_orderdate, o_shippriority, one order each).
    let mut keys = Vec::new();
    let mut groups = Vec::new();
    let mut lookup_groups = Vec::new();
    let mut key_maps = Vec::new();
    let mut row_side: Option<(usize, String)> = None;
    for (e, name) in group.expr() {
        // A group expression over one source string column, here or in the projection
        // below (Q22's `cntrycode`), groups by its values' codes.
        let mapped = match e.downcast_ref::<Column>() {
            None => derived_key(e, &input_schema, &origin),
            Some(c) if origin.get(c.index()).copied().flatten().is_none() => {
                derived.get(c.index()).cloned().flatten()
            }
            Some(_) => None,
        };
        if let Some(map) = mapped {
            let mut deferred = deferred.borrow_mut();
            deferred.maps.push(map);
            key_maps.push(deferred.maps.len() - 1);
            groups.push(GroupKey::Mapped(key_maps.len() - 1));
            continue;
        }
        let i = e
            .downcast_ref::<Column>()
            .map(|c| c.index())
            .ok_or_else(|| format!("group key {name} is not a plain column"))?;
        let from_source = origin.get(i).copied().flatten();
        let joined = from_source.and_then(|c| {
            // A key set's map names no rows to index groups by.
            let s = sides
                .joins
                .iter()
                .position(|(l, key)| l.set.is_none() && *key == Ir::Column(c))?;
            Some((s, Arc::clone(&sides.joins[s].0.key)))
        });
        if joined.is_some() && sides.preserved.is_some() {
            // The streamed column is NULL in a NULL-extended row, not the side's key.
            return Err(format!(
                "an outer join that preserves its lookup side: group key {name} is the streamed side's"
            ));
        }
        if let Some((s, h)) = joined.or_else(|| host.get(i).cloned().flatten()) {
            if sides.joins[s].0.outer {
                // Rows without a match have no lookup row to index their group by.
                return Err(format!(
                    "group key {name} comes from an outer join's lookup side"
                ));
            }
            match &row_side {
                Some((r, other)) if *r != s => {
                    return Err(format!(
                        "group keys {other} and {name} {TWO_SIDES}; the GPU indexes groups by one side's rows"
                    ))
                }
                Some(_) => {}
                None => row_side = Some((s, name.clone())),
            }
            lookup_groups.push(h);
            groups.push(GroupKey::Lookup(lookup_groups.len() - 1));
            continue;
        }
        let c = from_source.ok_or_else(|| format!("group key {name} is not a plain column"))?;
        let dt = source.schema().field(c).data_type().clone();
        if !crate::convert::key_type_supported(&dt) {
            return Err(format!(
                "group key {name} has type {dt}, not supported on the GPU"
            ));
        }
        keys.push(c);
        groups.push(GroupKey::Source(keys.len() - 1));
    }
    let mut aggregates = Vec::new();
    for a in agg.aggr_expr() {
        let name = a.fun().name().to_ascii_lowercase();
        let what = || format!("aggregate {}", a.name());
        if a.is_distinct() && name != "count" {
            return Err(format!(
                "{}: DISTINCT is supported on the GPU for count only",
                what()
            ));
        }
        let args = a.expressions();
        let kind = match name.as_str() {
            "count" if a.is_distinct() => AggKind::CountDistinct,
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
                if kind == AggKind::CountDistinct {
                    let item = a.state_fields().ok().and_then(|f| match f[0].data_type() {
                        DataType::List(item) => column_type(item.data_type()),
                        _ => None,
                    });
                    if item != Some(t.ty) {
                        return Err(format!(
                            "{}: DISTINCT over a {:?} argument (numbers, dates and decimals are counted on the GPU)",
                            what(),
                            t.ty
                        ));
                    }
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
            (AggKind::CountDistinct, [DataType::List(item)]) => {
                column_type(item.data_type()).is_some()
            }
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
    for &m in &key_maps {
        Ir::Mapped {
            map: m,
            column: deferred.borrow().maps[m].column,
        }
        .strings(&mut coded);
    }
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
    if let Some(p) = sides.preserved {
        preserved_shape(&chain, p, &row_side, &keys, &key_maps, &aggregates)?;
    }
    let deferred = deferred.into_inner();
    let mut lookup_row = row_side.map(|(s, _)| (s, sides.joins[s].1.clone()));
    let mut exprs: Vec<&mut Ir> = predicates
        .iter_mut()
        .chain(aggregates.iter_mut().map(|a| &mut a.arg))
        .chain(lookup_row.as_mut().map(|(_, key)| key))
        .collect();
    let used = used_lookups(
        sides.columns.into_iter().map(RefCell::into_inner).collect(),
        &mut exprs,
    );
    let lookups = sides
        .joins
        .into_iter()
        .zip(used)
        .enumerate()
        .map(|(s, ((mut plan, _), columns))| {
            plan.columns = columns;
            if lookup_row.as_ref().is_some_and(|(r, _)| *r == s) {
                plan.groups = std::mem::take(&mut lookup_groups);
            }
            plan
        })
        .collect::<Vec<LookupPlan>>();
    let payloads = lookups
        .iter()
        .enumerate()
        // A side whose rows index groups (group keys, a preserved outer side) keeps its rows:
        // `payload_plan` refuses it by its group keys.
        .filter(|(s, l)| l.set.is_none() && !sides.extremes.iter().any(|e| e.0 == *s))
        .map(|(s, l)| (s, payload::payload_plan(l)))
        .collect();
    Ok(GpuPlan {
        source,
        predicates,
        keys,
        coded,
        aggregates,
        values,
        schema: agg.schema(),
        lookups,
        groups,
        lookup_row,
        preserved: sides.preserved,
        sets: sides.sets,
        extremes: sides.extremes,
        payloads,
        maps: deferred.maps,
        key_maps,
        params: deferred.params,
    })
}

/// Each lookup side's columns that `exprs` read, renumbered in `columns`' order: translating
/// a level derives a lookup column for each of its lookup-side columns, used or not (Q3's
/// group keys are taken by lookup row, not gathered), and an unused one would cost a column
/// of the lookup buffer and could refuse the plan (a null in it).
fn used_lookups(
    columns: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    exprs: &mut [&mut Ir],
) -> Vec<Vec<Arc<dyn PhysicalExpr>>> {
    let mut used: Vec<Vec<bool>> = columns.iter().map(|c| vec![false; c.len()]).collect();
    for e in exprs.iter_mut() {
        e.walk_mut(&mut |n| {
            if let Ir::Lookup { side, column, .. } = n {
                used[*side][*column] = true;
            }
        });
    }
    let number: Vec<Vec<usize>> = used
        .iter()
        .map(|u| {
            u.iter()
                .scan(0, |next, &u| {
                    let at = *next;
                    *next += usize::from(u);
                    Some(at)
                })
                .collect()
        })
        .collect();
    for e in exprs.iter_mut() {
        e.walk_mut(&mut |n| {
            if let Ir::Lookup { side, column, .. } = n {
                *column = number[*side][*column];
            }
        });
    }
    columns
        .into_iter()
        .zip(used)
        .map(|(c, u)| {
            c.into_iter()
                .zip(u)
                .filter_map(|(c, u)| u.then_some(c))
                .collect()
        })
        .collect()
}

/// Keeps the columns `projection` names, in its order (all without one).
fn project(projection: Option<&[usize]>, (level, origin, host): &mut Columns) {
    if let Some(projection) = projection {
        *level = projection.iter().map(|&i| level[i].clone()).collect();
        *origin = projection.iter().map(|&i| origin[i]).collect();
        *host = projection.iter().map(|&i| host[i].clone()).collect();
    }
}

impl GpuPlan {
    /// Whether no two rows of a GPU run's output share their group values, so the final
    /// aggregate above has nothing to merge: every group key is a coded source column (one
    /// row per key combination; codes are one per value, NULL included), or the keys include
    /// the join key of the lookup side whose rows index the groups (one row per lookup row,
    /// and a run refuses a side that repeats a key). TPC-H Q1 and Q12 are the first kind, Q3
    /// (`l_orderkey`) and Q10 (`c_custkey`) the second; Q5 groups by `n_name` of many
    /// suppliers and is neither.
    pub fn unique_groups(&self) -> bool {
        match &self.lookup_row {
            None => true,
            Some((s, _)) => {
                let side = &self.lookups[*s];
                side.groups.iter().any(|g| g.as_ref() == side.key.as_ref())
            }
        }
    }
}

/// Why a plan whose join preserves its lookup side `p` cannot emit that side's unmatched
/// rows exactly, if it cannot: they must be its groups' only source (every group key from
/// side `p`, by lookup row), no filter may sit above the join (it would see the
/// NULL-extended rows), and each aggregate over a NULL-extended row must be its empty
/// state: a count, sum, min, max or avg of an argument that is NULL whenever the streamed
/// columns are ([`Ir::strict`]; `count(*)` would count the row).
fn preserved_shape(
    chain: &[Arc<dyn ExecutionPlan>],
    p: usize,
    row_side: &Option<(usize, String)>,
    keys: &[usize],
    key_maps: &[usize],
    aggregates: &[Aggregate],
) -> Result<(), String> {
    let refuse = |why: &str| {
        Err(format!(
            "an outer join that preserves its lookup side: {why}"
        ))
    };
    let join_at = chain
        .iter()
        .position(|n| n.downcast_ref::<HashJoinExec>().is_some())
        .unwrap_or(0);
    if chain[..join_at]
        .iter()
        .any(|n| n.downcast_ref::<FilterExec>().is_some())
    {
        return refuse("a filter above the join");
    }
    if !keys.is_empty() || !key_maps.is_empty() || row_side.as_ref().map(|(s, _)| *s) != Some(p) {
        return refuse("group keys not all from the preserved side");
    }
    for a in aggregates {
        if a.kind == AggKind::CountDistinct || !a.arg.strict() {
            return refuse(&format!(
                "an aggregate of {:?} whose state over a NULL-extended row is not empty",
                a.arg
            ));
        }
    }
    Ok(())
}
