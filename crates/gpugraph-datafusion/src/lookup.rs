//! The lookup side of a many-to-one inner hash join under a GPU aggregate: the smaller input
//! (TPC-H's `part` under Q14's `lineitem`), run by DataFusion on the CPU with each batch
//! evaluated on its partition's task as it arrives, then laid out as one GPU buffer that the
//! row program probes ([`crate::program::Op::Probe`]) and gathers from
//! ([`crate::program::Op::Gather`]).
//!
//! The key map is direct-addressed: word `k − first_key` holds the row of key `k`. TPC-H's
//! keys are dense, so that costs a word per key and one load per probe, where a hash table
//! would cost a probe sequence. The device builds it ([`crate::kernel::keymap`]) from each
//! row's word, which the host stages with the columns. A sparse key range (more than
//! [`MAX_SPREAD`] words per row), a repeated key (the join would not be many-to-one; the
//! device counts them), a key past i32 or a null in a lookup column refuse the GPU plan at
//! run time with the reason, and the exec runs DataFusion's plan instead.
//!
//! Lookup columns are expressions over the lookup side that the planner evaluates here, on
//! the host, once per lookup row (`p_type LIKE 'PROMO%'` becomes a boolean column), or once
//! per distinct value when they read one string column of few values: the GPU's
//! expressions compute on numbers, and the lookup side is the small input.

use std::sync::Arc;

use datafusion::arrow::array::UInt32Array;
use datafusion::arrow::array::{make_array, new_empty_array, Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::compute::{cast, concat, interleave, max, min, take, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Int64Type};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::DataFusionError;
use datafusion::common::HashMap;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::is_volatile;
use datafusion::physical_plan::execution_plan::reset_plan_states;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};
use tokio::task::JoinSet;

use std::time::Instant;

use datafusion::execution::TaskContext;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder};
use futures::StreamExt;

use crate::convert::local_codes;
use crate::ir::Bounds;
use crate::program::{LookupShape, NO_ROW};

/// Most key-map words per lookup row before the map is refused as too sparse.
pub const MAX_SPREAD: usize = 8;

/// Key-map words a lookup always may use, whatever its rows (256 MiB): a filtered dimension
/// keeps its whole key range (TPC-H Q10's orders of one quarter, 570k rows over SF 10's 60M
/// order keys), and a map that size still costs less than the CPU plan's hash join.
const MIN_KEY_WORDS: usize = 1 << 26;

/// The lookup side as planned.
#[derive(Clone, Debug)]
pub struct LookupPlan {
    /// The input DataFusion runs on the CPU.
    pub input: Arc<dyn ExecutionPlan>,
    /// Its join key, over the input's schema.
    pub key: Arc<dyn PhysicalExpr>,
    /// The lookup columns the program gathers, over the input's schema, in column order.
    pub columns: Vec<Arc<dyn PhysicalExpr>>,
    /// Group keys from the lookup side, over the input's schema (any type: the host takes
    /// their values by lookup row for the groups that have rows).
    pub groups: Vec<Arc<dyn PhysicalExpr>>,
    /// Whether the join is outer (probe rows without a match are kept, lookup columns NULL).
    pub outer: bool,
}

/// A built lookup: each batch's keys and column words, the buffer's layout and each column's
/// bounds. The key map itself is built on the device ([`crate::kernel::keymap`]): at SF 10
/// it is 60M words, which the host would fill and send over PCIe for 1.5M lookup rows.
#[derive(Clone, Debug)]
pub struct LookupTable {
    /// The lookup rows' keys and column words, batch by batch in lookup-row order.
    parts: Vec<LookupPart>,
    /// Its layout.
    pub shape: LookupShape,
    /// Smallest and largest value of each lookup column ((0, 0) without rows).
    pub bounds: Vec<Bounds>,
    /// Rows of the lookup side.
    pub rows: usize,
    /// Each lookup-side group key's values ([`LookupPlan::groups`]), batch by batch in
    /// lookup-row order ([`Self::group_values`] takes them by row): concatenating them cost
    /// TPC-H Q10 at SF 10 40 ms for 1.5M customers' seven keys, of which the groups with
    /// rows take a quarter.
    groups: Vec<Vec<ArrayRef>>,
    /// The first lookup row of each batch.
    starts: Vec<usize>,
    /// Each group key's type.
    group_types: Vec<DataType>,
    /// The join key's expression, for errors.
    pub key: String,
}

/// One lookup batch's keys (nulls never match) and each lookup column's words.
#[derive(Clone, Debug)]
struct LookupPart {
    keys: Int64Array,
    columns: Vec<Vec<u32>>,
}

impl LookupTable {
    /// Words of the buffer past the key map: each column's words, one per lookup row.
    pub fn column_words(&self) -> usize {
        self.shape.columns.len() * self.rows
    }

    /// Words of the whole lookup buffer (key map, then the columns).
    pub fn buffer_words(&self) -> usize {
        self.shape.keys as usize + self.column_words()
    }

    /// Each lookup row's key-map word (its key less the first key; [`NO_ROW`] for a null
    /// key), batch by batch, computed on every core; an error if a thread failed.
    pub fn offsets(&self) -> Result<Vec<Vec<u32>>, String> {
        let first = self.shape.first_key;
        on_cores(self.parts.iter().collect(), |_, part| {
            Ok((0..part.keys.len())
                .map(|r| {
                    if part.keys.is_null(r) {
                        NO_ROW
                    } else {
                        (part.keys.value(r) - first) as u32
                    }
                })
                .collect())
        })
    }

    /// Group key `j`'s values at lookup rows `rows` (each below [`Self::rows`]).
    pub fn group_values(&self, j: usize, rows: &[u32]) -> Result<ArrayRef, String> {
        let (Some(batches), Some(dt)) = (self.groups.get(j), self.group_types.get(j)) else {
            return Err(format!("lookup group key {j} was not collected"));
        };
        let arrays: Vec<&dyn Array> = batches.iter().map(|a| a.as_ref()).collect();
        if arrays.is_empty() || rows.is_empty() {
            return Ok(new_empty_array(dt));
        }
        let fail = |e: datafusion::arrow::error::ArrowError| {
            format!("taking the lookup side's group keys: {e}")
        };
        // Groups come in lookup-row order (the row is the group index's top digit), so each
        // batch's rows are one run: a `take` per batch copies values in bulk where
        // `interleave` picks them one by one (TPC-H Q10 at SF 10: 108 ms for seven keys of
        // 380k groups on the H200).
        if rows.is_sorted() {
            let mut parts = Vec::new();
            let mut from = 0;
            for (b, array) in batches.iter().enumerate() {
                let end = self.starts.get(b + 1).copied().unwrap_or(usize::MAX);
                let to = from + rows[from..].partition_point(|&r| (r as usize) < end);
                if to > from {
                    let local = UInt32Array::from_iter_values(
                        rows[from..to].iter().map(|&r| r - self.starts[b] as u32),
                    );
                    parts.push(take(array.as_ref(), &local, None).map_err(fail)?);
                }
                from = to;
            }
            let parts: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            return match parts[..] {
                [one] => Ok(make_array(one.to_data())),
                _ => concat(&parts).map_err(fail),
            };
        }
        let at: Vec<(usize, usize)> = rows
            .iter()
            .map(|&r| {
                let b = self.starts.partition_point(|&s| s <= r as usize) - 1;
                (b, r as usize - self.starts[b])
            })
            .collect();
        interleave(&arrays, &at).map_err(fail)
    }

    /// Lookup column `j`'s words, batch by batch in lookup-row order.
    pub fn column(&self, j: usize) -> impl Iterator<Item = &[u32]> {
        self.parts.iter().map(move |p| p.columns[j].as_slice())
    }

    /// This side's part of the lookup buffer built on the host (from its key map on), or
    /// why the join is not many-to-one (the smallest repeated key): the oracle of the
    /// device's build.
    pub fn words(&self) -> Result<Vec<u32>, String> {
        let mut words = vec![NO_ROW; self.shape.keys as usize];
        let mut repeated = None;
        for (row, &d) in self.offsets()?.iter().flatten().enumerate() {
            if d == NO_ROW {
                continue;
            }
            if words[d as usize] != NO_ROW {
                repeated = Some(repeated.map_or(d, |r: u32| r.min(d)));
            }
            words[d as usize] = row as u32;
        }
        // The smallest repeated key, as the device reports it.
        if let Some(d) = repeated {
            return Err(self.repeated(self.shape.first_key + d as i64));
        }
        for j in 0..self.shape.columns.len() {
            self.column(j).for_each(|c| words.extend_from_slice(c));
        }
        Ok(words)
    }

    /// Why the GPU cannot join when the lookup side holds key `value` twice.
    pub fn repeated(&self, value: i64) -> String {
        format!(
            "the join key {} repeats the value {value} on the lookup side, so the join is not many-to-one",
            self.key
        )
    }
}

/// Places `tables` one after the other in one lookup buffer: each shape's key map starts
/// where the previous side's columns end, and its column words move with it.
pub fn place(tables: &mut [LookupTable]) {
    let mut base = 0u32;
    for t in tables {
        let shift = base - t.shape.base;
        t.shape.base = base;
        for c in &mut t.shape.columns {
            *c += shift;
        }
        base += t.buffer_words() as u32;
    }
}

/// The i32 words of `array` (integers, dates, decimals' unscaled values, booleans as 0/1),
/// or why they cannot be gathered.
fn words(array: &ArrayRef, what: &str) -> Result<Vec<u32>, String> {
    if array.null_count() > 0 {
        return Err(format!(
            "the lookup column {what} has {} nulls, which the GPU's lookups do not carry",
            array.null_count()
        ));
    }
    let narrow = |v: i128| {
        i32::try_from(v)
            .map(|v| v as u32)
            .map_err(|_| format!("the lookup column {what} holds {v}, past the GPU's 32 bits"))
    };
    match array.data_type() {
        DataType::Boolean => Ok(array
            .as_boolean()
            .values()
            .iter()
            .map(|b| b as u32)
            .collect()),
        DataType::Decimal128(..) => array
            .as_primitive::<Decimal128Type>()
            .values()
            .iter()
            .map(|&v| narrow(v))
            .collect(),
        dt if crate::expr::column_type(dt).is_some() => {
            let wide = cast(array, &DataType::Int64).map_err(|e| e.to_string())?;
            wide.as_primitive::<Int64Type>()
                .values()
                .iter()
                .map(|&v| narrow(v as i128))
                .collect()
        }
        dt => Err(format!("the lookup column {what} has type {dt}")),
    }
}

/// A batch's rows as codes of one column's distinct values ([`local_codes`]): each row's code
/// and each code's first row; `None` when the column is not a string column or has too many
/// distinct values to pay off.
type Coded = Option<(Vec<u32>, Vec<u32>)>;

/// The words of `e` over `batch` evaluated once per distinct value, when `e` reads one string
/// column of few distinct values (Q12's two `CASE`s over `o_orderpriority`: five values over
/// 15M rows at SF 10, where evaluating per row cost most of the query), and `None` otherwise.
/// Deterministic expressions of one column agree on equal values, so each row takes the
/// words of its value's first row. `coded` keeps each column's codes for the batch's other
/// expressions.
fn by_values(
    e: &Arc<dyn PhysicalExpr>,
    batch: &RecordBatch,
    coded: &mut HashMap<usize, Coded>,
) -> Result<Option<Vec<u32>>, String> {
    let read = collect_columns(e);
    let [column] = read.iter().collect::<Vec<_>>()[..] else {
        return Ok(None);
    };
    if is_volatile(e) || batch.num_rows() < 64 {
        return Ok(None);
    }
    let array = batch.column(column.index());
    let string = match array.data_type() {
        DataType::Dictionary(_, v) => v.as_ref(),
        dt => dt,
    };
    if !matches!(
        string,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        return Ok(None);
    }
    let rows = batch.num_rows();
    let Some((codes, firsts)) = coded.entry(column.index()).or_insert_with(|| {
        let (codes, values) = local_codes(array.as_ref(), column.name()).ok()?;
        (values.len() * 8 <= rows).then(|| (codes, values.iter().map(|v| v.1 as u32).collect()))
    }) else {
        return Ok(None);
    };
    let firsts = UInt32Array::from(firsts.clone());
    let distinct = take_record_batch(batch, &firsts)
        .map_err(|err| format!("taking the lookup side's distinct values failed: {err}"))?;
    let values = e
        .evaluate(&distinct)
        .and_then(|v| v.into_array(distinct.num_rows()))
        .map_err(|err| format!("evaluating {e} over the lookup side failed: {err}"))?;
    if values.null_count() > 0 {
        // The row-wise evaluation names the nulls' count.
        return Ok(None);
    }
    let words = words(&values, &e.to_string())?;
    Ok(Some(codes.iter().map(|&c| words[c as usize]).collect()))
}

/// One lookup batch evaluated.
struct Evaluated {
    /// Its keys, as i64.
    keys: Int64Array,
    /// Its smallest and largest non-null key, if it has one (found here, on the batch's
    /// own task, rather than over every batch after the last arrives).
    key_bounds: Option<(i64, i64)>,
    /// Each lookup column's words.
    columns: Vec<Vec<u32>>,
    /// Each lookup column's smallest and largest value (i32), if the batch has rows.
    bounds: Vec<Option<(i32, i32)>>,
    /// Each group key's values.
    groups: Vec<ArrayRef>,
}

/// `f` of every item, in order, over the cores: the lookup side is 15M rows for TPC-H's
/// orders at SF 10, and one thread would spend most of a query on it.
fn on_cores<T: Send, R: Send>(
    items: Vec<T>,
    f: impl Fn(usize, T) -> Result<R, String> + Sync,
) -> Result<Vec<R>, String> {
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(items.len().max(1));
    let per_thread = items.len().div_ceil(threads).max(1);
    let mut groups: Vec<Vec<T>> = Vec::new();
    for item in items {
        match groups.last_mut() {
            Some(g) if g.len() < per_thread => g.push(item),
            _ => groups.push(vec![item]),
        }
    }
    let f = &f;
    std::thread::scope(|scope| {
        let tasks: Vec<_> = groups
            .into_iter()
            .enumerate()
            .map(|(t, group)| {
                scope.spawn(move || {
                    group
                        .into_iter()
                        .enumerate()
                        .map(|(i, item)| f(t * per_thread + i, item))
                        .collect::<Result<Vec<R>, String>>()
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.extend(
                t.join()
                    .map_err(|_| "a lookup thread panicked".to_string())??,
            );
        }
        Ok(out)
    })
}

impl LookupPlan {
    /// `batch`'s keys and lookup-column words.
    fn evaluate(&self, batch: &RecordBatch) -> Result<Evaluated, String> {
        let eval = |e: &Arc<dyn PhysicalExpr>| -> Result<ArrayRef, String> {
            e.evaluate(batch)
                .and_then(|v| v.into_array(batch.num_rows()))
                .map_err(|err| format!("evaluating {e} over the lookup side failed: {err}"))
        };
        let key = cast(&eval(&self.key)?, &DataType::Int64).map_err(|e| e.to_string())?;
        let key = key.as_primitive::<Int64Type>().clone();
        let mut coded = HashMap::new();
        let columns: Vec<Vec<u32>> = self
            .columns
            .iter()
            .map(|e| match by_values(e, batch, &mut coded)? {
                Some(words) => Ok(words),
                None => words(&eval(e)?, &e.to_string()),
            })
            .collect::<Result<_, String>>()?;
        let groups = self.groups.iter().map(eval).collect::<Result<_, _>>()?;
        let bounds = columns
            .iter()
            .map(|c: &Vec<u32>| {
                c.iter().fold(None, |b, &v| {
                    let v = v as i32;
                    Some(b.map_or((v, v), |(lo, hi): (i32, i32)| (lo.min(v), hi.max(v))))
                })
            })
            .collect();
        let key_bounds = min(&key).zip(max(&key));
        Ok(Evaluated {
            keys: key,
            key_bounds,
            columns,
            bounds,
            groups,
        })
    }

    /// Runs the input on DataFusion's CPU operators (every partition) and builds its table:
    /// the outer error is the input's, the inner one why the GPU cannot join with it.
    /// Records `lookup_rows`, `lookup_time` and (its part after the input is collected)
    /// `lookup_build_time` in `metrics`.
    pub async fn collect(
        &self,
        context: Arc<TaskContext>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> datafusion::common::Result<Result<LookupTable, String>> {
        let time = MetricBuilder::new(metrics).subset_time("lookup_time", 0);
        let started = Instant::now();
        // A fresh copy of the input: its joins' build sides and dynamic filters are state
        // that DataFusion cannot run twice, and the exec's CPU fallback runs the original
        // (an empty Q10 answer from Parquet before this copy).
        let input = reset_plan_states(Arc::clone(&self.input))?;
        // Batches evaluate where they arrive, on each partition's task: an input of fewer
        // partitions than cores (an in-memory table is one) is dealt round-robin over them
        // first, so the evaluation runs beside the scan instead of after it.
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        let input: Arc<dyn ExecutionPlan> = if input.output_partitioning().partition_count() < cores
        {
            Arc::new(RepartitionExec::try_new(
                input,
                Partitioning::RoundRobinBatch(cores),
            )?)
        } else {
            input
        };
        let mut tasks = JoinSet::new();
        for p in 0..input.output_partitioning().partition_count() {
            let (input, context, plan) = (Arc::clone(&input), Arc::clone(&context), self.clone());
            tasks.spawn(async move {
                let mut stream = input.execute(p, context)?;
                let mut evaluated = Vec::new();
                while let Some(batch) = stream.next().await {
                    match plan.evaluate(&batch?) {
                        Ok(e) => evaluated.push(e),
                        Err(why) => return Ok(Err(why)),
                    }
                }
                Ok::<_, DataFusionError>(Ok((p, evaluated)))
            });
        }
        let mut parts = Vec::new();
        let mut refused = None;
        while let Some(done) = tasks.join_next().await {
            match done.map_err(|e| DataFusionError::External(Box::new(e)))?? {
                Ok(part) => parts.push(part),
                Err(why) => refused = Some(why),
            }
        }
        if let Some(why) = refused {
            time.add_duration(started.elapsed());
            return Ok(Err(why));
        }
        // Partition order, whichever task finished first: the lookup rows' numbering is
        // then the same from run to run.
        parts.sort_by_key(|(p, _)| *p);
        let evaluated = parts.into_iter().flat_map(|(_, e)| e).collect();
        let keyed = Instant::now();
        let table = self.assemble(evaluated);
        MetricBuilder::new(metrics)
            .subset_time("lookup_build_time", 0)
            .add_duration(keyed.elapsed());
        if let Ok(t) = &table {
            MetricBuilder::new(metrics)
                .counter("lookup_rows", 0)
                .add(t.rows);
        }
        time.add_duration(started.elapsed());
        Ok(table)
    }

    /// The lookup buffer of the collected input `batches`, or why the GPU cannot join with
    /// it.
    pub fn build(&self, batches: &[RecordBatch]) -> Result<LookupTable, String> {
        // Every batch evaluates its key and lookup columns on its own (15M TPC-H orders
        // rows' string CASEs are most of a lookup's cost), with its bounds.
        let evaluated = on_cores(batches.iter().collect(), |_, b| self.evaluate(b))?;
        self.assemble(evaluated)
    }

    /// The lookup table of the evaluated batches `evaluated`, in lookup-row order, or why the
    /// GPU cannot join with it.
    fn assemble(&self, evaluated: Vec<Evaluated>) -> Result<LookupTable, String> {
        let rows: usize = evaluated.iter().map(|e| e.keys.len()).sum();
        // Null keys never match (SQL equality); the others must fit i32 like probe keys.
        let (first, last) = evaluated
            .iter()
            .filter_map(|e| e.key_bounds)
            .fold((i64::MAX, i64::MIN), |(lo, hi), (l, h)| {
                (lo.min(l), hi.max(h))
            });
        let (first, keys) = if first > last {
            (0, 0)
        } else {
            if first < i32::MIN as i64 || last > i32::MAX as i64 {
                return Err(format!(
                    "the join key {} reaches [{first}, {last}], past the GPU's 32 bits",
                    self.key
                ));
            }
            (first, (last - first + 1) as usize)
        };
        let allowed = (rows * MAX_SPREAD).max(MIN_KEY_WORDS);
        if keys > allowed {
            return Err(format!(
                "the join key {} spans {keys} values over {rows} rows; the GPU's direct-addressed lookup takes at most {allowed}",
                self.key
            ));
        }
        let mut columns = Vec::new();
        let mut bounds = Vec::new();
        for j in 0..self.columns.len() {
            let (lo, hi) = evaluated
                .iter()
                .filter_map(|e| e.bounds[j])
                .reduce(|(lo, hi), (l, h)| (lo.min(l), hi.max(h)))
                .unwrap_or((0, 0));
            bounds.push((lo as i128, hi as i128));
            columns.push((keys + j * rows) as u32);
        }
        let group_types = self
            .groups
            .iter()
            .map(|g| g.data_type(&self.input.schema()).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, String>>()?;
        let groups = (0..self.groups.len())
            .map(|j| evaluated.iter().map(|e| Arc::clone(&e.groups[j])).collect())
            .collect();
        let starts = evaluated
            .iter()
            .scan(0, |at, e| {
                let s = *at;
                *at += e.keys.len();
                Some(s)
            })
            .collect();
        let parts = evaluated
            .into_iter()
            .map(|e| LookupPart {
                keys: e.keys,
                columns: e.columns,
            })
            .collect();
        Ok(LookupTable {
            parts,
            groups,
            starts,
            group_types,
            shape: LookupShape {
                base: 0,
                first_key: first,
                keys: keys as u32,
                columns,
            },
            bounds,
            rows,
            key: self.key.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;
    use datafusion::arrow::datatypes::SchemaRef;
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::physical_expr::expressions::{col, like, lit};
    use datafusion::physical_plan::empty::EmptyExec;

    fn plan(schema: &SchemaRef, columns: Vec<Arc<dyn PhysicalExpr>>) -> LookupPlan {
        LookupPlan {
            input: Arc::new(EmptyExec::new(Arc::clone(schema))),
            key: col("k", schema).expect("k"),
            columns,
            groups: Vec::new(),
            outer: false,
        }
    }

    fn batch(keys: Vec<Option<i64>>, names: Vec<&str>) -> (SchemaRef, RecordBatch) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("name", DataType::Utf8, false),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from(keys)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .expect("batch");
        (schema, batch)
    }

    /// Key `k` maps to its row; host-evaluated columns follow the map.
    #[test]
    fn keys_map_to_rows_and_columns_follow() {
        let (schema, b) = batch(
            vec![Some(12), Some(10), None, Some(15)],
            vec!["PROMO A", "B", "PROMO C", "D"],
        );
        let promo = like(
            false,
            false,
            col("name", &schema).unwrap(),
            lit("PROMO%"),
            &schema,
        )
        .expect("like");
        let p = plan(&schema, vec![promo, col("k", &schema).unwrap()]);
        // Two batches, as partitions deliver them.
        let t = p.build(&[b.slice(0, 1), b.slice(1, 3)]).unwrap_err();
        assert!(t.contains("nulls"), "{t}");
        let p = plan(&schema, vec![p.columns[0].clone()]);
        let t = p.build(&[b.slice(0, 1), b.slice(1, 3)]).expect("builds");
        assert_eq!(t.shape.first_key, 10);
        assert_eq!(t.shape.keys, 6);
        let words = t.words().expect("many-to-one");
        assert_eq!(&words[..6], &[1, NO_ROW, 0, NO_ROW, NO_ROW, 3]);
        assert_eq!(t.shape.columns, vec![6]);
        assert_eq!(&words[6..], &[1, 0, 1, 0]);
        assert_eq!(t.buffer_words(), words.len());
        assert_eq!(t.bounds, vec![(0, 1)]);
    }

    #[test]
    fn group_keys_follow_the_lookup_rows_across_batches() {
        let (schema, b) = batch(vec![Some(3), Some(1), Some(2)], vec!["three", "one", "two"]);
        let mut p = plan(&schema, vec![]);
        p.groups = vec![col("name", &schema).unwrap()];
        let t = p.build(&[b.slice(0, 2), b.slice(2, 1)]).expect("builds");
        // Row r's key maps to r and its group value is row r's, whichever batch held it.
        assert_eq!(&t.words().expect("many-to-one")[..3], &[1, 2, 0]);
        let strings = |rows: &[u32]| -> Vec<String> {
            let names = t.group_values(0, rows).expect("takes");
            let names = names.as_string::<i32>();
            (0..names.len())
                .map(|i| names.value(i).to_string())
                .collect()
        };
        // Rows in any order (interleaved), in order across both batches (a take per batch),
        // and within one batch.
        assert_eq!(strings(&[2, 0, 1, 2]), ["two", "three", "one", "two"]);
        assert_eq!(strings(&[0, 0, 1, 2]), ["three", "three", "one", "two"]);
        assert_eq!(strings(&[2]), ["two"]);
        // No batches: empty key values of the key's type, no rows.
        let t = p.build(&[]).expect("builds");
        let none = t.group_values(0, &[]).expect("takes");
        assert_eq!((t.rows, none.len()), (0, 0));
        assert_eq!(none.data_type(), &DataType::Utf8);
    }

    #[test]
    fn repeated_sparse_and_wide_keys_are_refused_by_name() {
        let (schema, b) = batch(vec![Some(3), Some(3)], vec!["a", "b"]);
        let e = plan(&schema, vec![]).build(&[b]).expect("builds").words();
        let e = e.unwrap_err();
        assert!(e.contains("k@0 repeats the value 3"), "{e}");
        let (schema, b) = batch(vec![Some(0), Some(1 << 28)], vec!["a", "b"]);
        let e = plan(&schema, vec![]).build(&[b]).unwrap_err();
        assert!(e.contains("spans 268435457 values over 2 rows"), "{e}");
        let (schema, b) = batch(vec![Some(1 << 40)], vec!["a"]);
        let e = plan(&schema, vec![]).build(&[b]).unwrap_err();
        assert!(e.contains("past the GPU's 32 bits"), "{e}");
        let (schema, b) = batch(vec![], vec![]);
        let t = plan(&schema, vec![]).build(&[b]).expect("empty");
        assert_eq!((t.shape.keys, t.rows), (0, 0));
    }

    /// An expression of one string column of few values evaluates once per value and agrees
    /// with the row-wise evaluation (plain, view and dictionary strings, short and long);
    /// nulls in the result, many distinct values or two columns take the row-wise path.
    #[test]
    fn few_valued_string_expressions_evaluate_once_per_value() {
        use datafusion::arrow::array::{DictionaryArray, StringViewArray};
        use datafusion::arrow::datatypes::Int32Type;
        use datafusion::common::ScalarValue;
        let names = [
            "PROMO A",
            "B",
            "PROMO C",
            "a PROMO value past twelve bytes",
            "PROMO long enough to be out of line",
        ];
        let column: Vec<&str> = (0..1000).map(|i| names[(i * 7) % names.len()]).collect();
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(column.clone())),
            Arc::new(StringViewArray::from(column.clone())),
            Arc::new(
                column
                    .iter()
                    .copied()
                    .collect::<DictionaryArray<Int32Type>>(),
            ),
        ];
        for array in arrays {
            let schema = Arc::new(Schema::new(vec![
                Field::new("name", array.data_type().clone(), true),
                Field::new("k", DataType::Int64, false),
            ]));
            let keys = Arc::new(Int64Array::from_iter_values(0..1000));
            let b = RecordBatch::try_new(Arc::clone(&schema), vec![array, keys]).expect("batch");
            let pattern = match schema.field(0).data_type() {
                DataType::Utf8View => ScalarValue::Utf8View(Some("PROMO%".into())),
                _ => ScalarValue::Utf8(Some("PROMO%".into())),
            };
            let promo = like(
                false,
                false,
                col("name", &schema).unwrap(),
                lit(pattern),
                &schema,
            )
            .expect("like");
            let row_wise =
                words(&promo.evaluate(&b).unwrap().into_array(1000).unwrap(), "p").unwrap();
            let mut coded = HashMap::new();
            let got = by_values(&promo, &b, &mut coded).expect("evaluates");
            assert_eq!(
                got.as_ref(),
                Some(&row_wise),
                "{}",
                schema.field(0).data_type()
            );
            assert_eq!(row_wise.iter().filter(|&&w| w == 1).count(), 600);
            // Two columns: row by row.
            let two = datafusion::physical_expr::expressions::binary(
                col("k", &schema).unwrap(),
                datafusion::logical_expr::Operator::Lt,
                lit(3i64),
                &schema,
            )
            .unwrap();
            assert_eq!(by_values(&two, &b, &mut coded).unwrap(), None);
        }
        // Nulls in the result, or mostly distinct values: row by row.
        let (schema, b) = batch(
            (0..100).map(Some).collect(),
            (0..100)
                .map(|i| if i % 2 == 0 { "x" } else { "y" })
                .collect(),
        );
        let nulls = StringArray::from_iter((0..100).map(|i| (i % 2 == 0).then_some("x")));
        let nullable = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        let b2 =
            RecordBatch::try_new(nullable, vec![Arc::clone(b.column(0)), Arc::new(nulls)]).unwrap();
        let e = like(
            false,
            false,
            col("name", &schema).unwrap(),
            lit("x%"),
            &schema,
        )
        .unwrap();
        assert!(by_values(&e, &b, &mut HashMap::new()).unwrap().is_some());
        assert_eq!(by_values(&e, &b2, &mut HashMap::new()).unwrap(), None);
        let distinct: Vec<String> = (0..100).map(|i| format!("v{i}")).collect();
        let (_, b3) = batch(
            (0..100).map(Some).collect(),
            distinct.iter().map(String::as_str).collect(),
        );
        assert_eq!(by_values(&e, &b3, &mut HashMap::new()).unwrap(), None);
    }
}
