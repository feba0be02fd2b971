//! The lookup side of a many-to-one inner hash join under a GPU aggregate: the smaller input
//! (TPC-H's `part` under Q14's `lineitem`), run by DataFusion on the CPU with each batch
//! evaluated by the next free worker as it arrives, then laid out as one GPU buffer that the
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
//! A semi or anti join's other input is a key set ([`LookupPlan::set`]): the same key map,
//! whose words mark the keys present, so its keys may repeat; it has no columns.
//!
//! Lookup columns are expressions over the lookup side that the planner evaluates here, on
//! the host, once per lookup row (`p_type LIKE 'PROMO%'` becomes a boolean column), or once
//! per distinct value when they read one string column of few values: the GPU's
//! expressions compute on numbers, and the lookup side is the small input.

use std::sync::Arc;

use datafusion::arrow::array::UInt32Array;
use datafusion::arrow::array::{make_array, new_empty_array, Array, ArrayRef, Int64Array};
use datafusion::arrow::compute::{concat, interleave, take};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::DataFusionError;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::execution_plan::reset_plan_states;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use std::time::{Duration, Instant};

use datafusion::execution::TaskContext;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder};
use futures::StreamExt;

mod evaluate;
mod present;
mod records;

pub use records::{Field, Records};

use evaluate::{on_cores, Column, Evaluated, ValueWords};

use crate::ir::Bounds;
use crate::program::{LookupShape, NO_ROW};

/// One batch's evaluation from the pool ([`LookupPlan::collect`]): its place (partition,
/// batch), and its result and time, or nothing when it was skipped after a refusal.
type Evaluation = (
    (usize, usize),
    Option<(Result<Evaluated, String>, Duration)>,
);

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
    /// For a semi or anti join, how the streamed rows test their key against this side's
    /// keys: the side is then a key set (no columns, no groups; a key may repeat, since a
    /// row's membership does not depend on how often its key is there).
    pub set: Option<Membership>,
}

/// How a semi or anti join keeps the streamed rows by their key's membership in a set
/// side's keys (`plan/join.rs` plans them, [`crate::ir::Ir`] tests them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Membership {
    /// Keeps a row whose key is in the set (`EXISTS`, `IN (subquery)`); a null key never is.
    Semi,
    /// Keeps a row whose key is not in the set (`NOT EXISTS`); a null key never is, so its
    /// row is kept.
    Anti,
    /// `NOT IN (subquery)`, DataFusion's null-aware anti join ([`crate::ir::Ir::NotIn`]).
    NotIn,
}

impl Membership {
    /// The CPU oracle of a semi or anti join's row mask, from SQL's definitions and a hash
    /// set (not the key map the GPU probes): whether the row of each `probe` key (`None`:
    /// NULL) is kept when the set side's keys are `set`. Semi: its key equals a set key;
    /// anti: it does not (a NULL equals nothing, so its row is kept); `NOT IN`: no row when a
    /// set key is NULL, every row when the set is empty, else a non-NULL key not in the set.
    pub fn mask(self, probe: &[Option<i64>], set: &[Option<i64>]) -> Vec<bool> {
        let keys: std::collections::HashSet<i64> = set.iter().flatten().copied().collect();
        let member = |k: &Option<i64>| k.is_some_and(|k| keys.contains(&k));
        match self {
            Membership::Semi => probe.iter().map(member).collect(),
            Membership::Anti => probe.iter().map(|k| !member(k)).collect(),
            Membership::NotIn if set.is_empty() => vec![true; probe.len()],
            Membership::NotIn if set.iter().any(Option::is_none) => vec![false; probe.len()],
            Membership::NotIn => probe.iter().map(|k| k.is_some() && !member(k)).collect(),
        }
    }
}

impl std::fmt::Display for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Membership::Semi => "semi",
            Membership::Anti => "anti",
            Membership::NotIn => "null-aware anti",
        })
    }
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
    /// Whether the side is a semi or anti join's key set ([`LookupPlan::set`]): its map words
    /// mark the keys present (0) instead of naming a row, so a repeated key is no error and
    /// the map is the same whichever thread writes last.
    pub set: bool,
    /// A key set found on the device ([`Self::from_bits`]): bit `d` of these words is set
    /// when key `first_key + d` is present. Such a side has no rows' records to stage. A
    /// payload side found on the device ([`Self::from_payload_bits`]) follows them with its
    /// columns' value bitmaps and value words ([`Self::valued`]).
    bits: Option<Vec<u32>>,
    /// A payload side found on the device: each column's bitmaps and values in [`Self::bits`]
    /// (empty for every other side).
    valued: Vec<Valued>,
}

/// Where one payload column of a side found on the device ([`LookupTable::from_payload_bits`])
/// has its value bitmaps and value words among the side's bitmap words: the key of each bit
/// set in bitmap `bitmap + i` (bitmap 0 being the keys present) has the value at word
/// `value + i`, for `i` below `values`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Valued {
    /// Its first value bitmap.
    pub bitmap: u32,
    /// Its values.
    pub values: u32,
    /// The word of its first value.
    pub value: u32,
}

/// One lookup batch's keys (nulls never match) and each lookup column's words.
#[derive(Clone, Debug)]
struct LookupPart {
    keys: Int64Array,
    columns: Vec<Column>,
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

    /// This side's part of the lookup buffer built on the host (from its key map on), or
    /// why the join is not many-to-one (the smallest repeated key): the oracle of the
    /// device's build. A key set's map holds 0 for each key present.
    pub fn words(&self) -> Result<Vec<u32>, String> {
        if let Some(bits) = &self.bits {
            return Ok(present::map_words(
                bits,
                self.shape.keys,
                &self.valued,
                self.set,
            ));
        }
        let mut words = vec![NO_ROW; self.shape.keys as usize];
        let mut repeated = None;
        for (row, &d) in self.offsets()?.iter().flatten().enumerate() {
            if d == NO_ROW {
                continue;
            }
            if self.set {
                words[d as usize] = 0;
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
            for p in &self.parts {
                words.extend(p.columns[j].to_words());
            }
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

impl LookupPlan {
    /// Runs the input on DataFusion's CPU operators (every partition) and builds its table:
    /// the outer error is the input's, the inner one why the GPU cannot join with it.
    /// Records `lookup_rows`, `lookup_time`, `lookup_eval_time` (the batches' evaluation,
    /// summed over the workers) and (its part after the input is collected)
    /// `lookup_build_time` in `metrics`.
    pub async fn collect(
        &self,
        context: Arc<TaskContext>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> datafusion::common::Result<Result<LookupTable, String>> {
        // A fresh copy of the input: its joins' build sides and dynamic filters are state
        // that DataFusion cannot run twice, and the exec's CPU fallback runs the original
        // (an empty Q10 answer from Parquet before this copy).
        let input = reset_plan_states(Arc::clone(&self.input))?;
        self.collect_from(input, context, metrics).await
    }

    /// [`Self::collect`] of `input`, a plan fresh from its states with the schema of this
    /// side's input, in its place (a per-key extremes side aggregated on the GPU,
    /// `exec/set.rs`).
    pub async fn collect_from(
        &self,
        input: Arc<dyn ExecutionPlan>,
        context: Arc<TaskContext>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> datafusion::common::Result<Result<LookupTable, String>> {
        let time = MetricBuilder::new(metrics).subset_time("lookup_time", 0);
        let eval_time = MetricBuilder::new(metrics).subset_time("lookup_eval_time", 0);
        let started = Instant::now();
        // Each partition's task only pulls its batches and hands each to Rayon's pool, whose
        // threads take the next batch as they finish the last, so the evaluation runs beside
        // the scan and every core works whatever the partitions (an in-memory table is one).
        // Tried first, on the H200 at SF 10 (Q12: 15M orders rows, 1,831 batches): async
        // workers evaluated one batch at a time (309 ms: a task woken from a runtime worker
        // waits in that worker's unstealable LIFO slot while the waker evaluates), and
        // blocking threads sharing one receiver behind a mutex handed batches over one thread
        // wake-up at a time (72 ms for 415 ms of evaluation). Each batch keeps its place
        // (partition, then batch), so the lookup rows' numbering is the same from run to run.
        let stop = Arc::new(AtomicBool::new(false));
        let known = Arc::new(RwLock::new(ValueWords::default()));
        let (sender, mut results) = mpsc::unbounded_channel::<Evaluation>();
        let mut producers = JoinSet::new();
        for p in 0..input.output_partitioning().partition_count() {
            let (input, context, plan) = (Arc::clone(&input), Arc::clone(&context), self.clone());
            let (stop, known, sender) = (Arc::clone(&stop), Arc::clone(&known), sender.clone());
            producers.spawn(async move {
                let mut stream = input.execute(p, context)?;
                let mut at = 0;
                while let Some(batch) = stream.next().await {
                    // A refusal: the GPU plan is off, so the rest is not read.
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let batch = batch?;
                    let (plan, stop, known, sender) = (
                        plan.clone(),
                        Arc::clone(&stop),
                        Arc::clone(&known),
                        sender.clone(),
                    );
                    rayon::spawn(move || {
                        let done = (!stop.load(Ordering::Relaxed)).then(|| {
                            let start = Instant::now();
                            let done = plan.evaluate(&batch, &known);
                            (done, start.elapsed())
                        });
                        // A closed receiver: the query was dropped.
                        let _ = sender.send(((p, at), done));
                    });
                    at += 1;
                }
                Ok::<_, DataFusionError>(())
            });
        }
        // Every sender is a producer's or a pending batch's: the results end with the last.
        drop(sender);
        let mut parts = Vec::new();
        let mut refused = None;
        while let Some((at, done)) = results.recv().await {
            match done {
                Some((Ok(e), busy)) => {
                    parts.push((at, e));
                    eval_time.add_duration(busy);
                }
                Some((Err(why), _)) => {
                    stop.store(true, Ordering::Relaxed);
                    refused = refused.or(Some(why));
                }
                None => {}
            }
        }
        while let Some(done) = producers.join_next().await {
            done.map_err(|e| DataFusionError::External(Box::new(e)))??;
        }
        if let Some(why) = refused {
            time.add_duration(started.elapsed());
            return Ok(Err(why));
        }
        parts.sort_unstable_by_key(|(at, _)| *at);
        let evaluated = parts.into_iter().map(|(_, e)| e).collect();
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
        let known = RwLock::new(ValueWords::default());
        let evaluated = on_cores(batches.iter().collect(), |_, b| self.evaluate(b, &known))?;
        self.assemble(evaluated)
    }

    /// The lookup table of the evaluated batches `evaluated`, in lookup-row order, or why the
    /// GPU cannot join with it.
    fn assemble(&self, evaluated: Vec<Evaluated>) -> Result<LookupTable, String> {
        let rows: usize = evaluated.iter().map(|e| e.keys.len()).sum();
        let null_keys = evaluated.iter().any(|e| e.keys.null_count() > 0);
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
                null_keys,
                empty: rows == 0,
            },
            bounds,
            rows,
            key: self.key.to_string(),
            set: self.set.is_some(),
            bits: None,
            valued: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests;
