//! The lookup sides of a run, each built by its own task while the source streams in: a
//! key-set side with a GPU plan of its own ([`crate::plan::GpuPlan::sets`]) runs that plan
//! (the side's `count(distinct key)`) as a nested [`Run`] whose presence bitmap is the set
//! ([`LookupTable::from_bits`]); every other side, and a set side whose GPU plan the data
//! refuses (a value past 32 bits, a key span past a bitmap's), is collected on the CPU
//! ([`crate::lookup::LookupPlan::collect`]). A per-key extremes side with a GPU plan of its
//! own ([`crate::plan::GpuPlan::extremes`]) is collected from that plan's GPU aggregate
//! (its partial `min`/`max` grouped by the key, under DataFusion's final aggregate), so
//! only a row per key comes back instead of every set row reaching a CPU hash aggregate.
//!
//! TPC-H Q4's set side is lineitem filtered by `l_commitdate < l_receiptdate` (60M rows at
//! SF 10): collected, its rows were filtered, evaluated and packed on the host, the
//! largest share of the query's time; as a GPU plan its columns stay cached on the GPU
//! between queries and only a bit per order key comes back.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::execution_plan::reset_plan_states;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricValue};
use datafusion::physical_plan::ExecutionPlan;
use tokio::task::JoinHandle;

use super::{GpuPartialAggregateExec, Run};
use crate::finalize::GpuFinalizeExec;
use crate::lookup::{LookupPlan, LookupTable};
use crate::plan::{finished_extremes, GpuPlan};
use crate::share::Share;

/// A side's task: the input's error, or the table or why the GPU cannot join with it.
pub(super) type Side = JoinHandle<Result<Result<LookupTable, String>>>;

/// What a nested run's aggregate found: a `count(distinct …)`'s presence bitmap (the value
/// of bit 0, the bitmap) or a count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// A presence bitmap from its first value.
    Bits(i64, Vec<u32>),
    /// A count.
    Count(u64),
}

/// Where a key-set or payload run leaves what each of its aggregates found.
pub(super) type BitsOut = Arc<Mutex<Option<Vec<Found>>>>;

/// What a key-set or payload run found, aggregate by aggregate, or why its GPU plan did not
/// run.
pub(super) type KeyBits = Result<Vec<Found>, String>;

impl Run {
    /// Spawns the task building each lookup side of the plan, in side order.
    pub(super) fn lookup_tasks(&self) -> Vec<Side> {
        self.plan
            .lookups
            .iter()
            .enumerate()
            .map(|(s, l)| {
                let (l, context) = (l.clone(), Arc::clone(&self.context));
                let metrics = self.metrics.clone();
                let on_gpu = self
                    .plan
                    .sets
                    .iter()
                    .find(|(side, _)| *side == s)
                    .map(|(_, plan)| self.key_set_run(plan));
                let extremes = self
                    .plan
                    .extremes
                    .iter()
                    .find(|(side, ..)| *side == s)
                    .map(|(_, plan, partial)| self.extremes_exec(plan, partial));
                let payload = self
                    .plan
                    .payloads
                    .iter()
                    .find(|(side, _)| *side == s)
                    .and_then(|(_, p)| p.as_ref().ok())
                    .map(|p| (self.key_set_run(&p.plan), p.values.clone()));
                tokio::spawn(async move {
                    if let Some(exec) = extremes {
                        return extremes_side(&l, exec?, context, &metrics).await;
                    }
                    let started = Instant::now();
                    if let Some(run) = on_gpu {
                        if let Ok(found) = nested(run, &metrics).await? {
                            let table = match found.into_iter().next() {
                                Some(Found::Bits(first, bits)) => {
                                    LookupTable::from_bits(l.key.to_string(), first, bits)
                                }
                                _ => Err("the key set's GPU plan found no bitmap".into()),
                            };
                            return Ok(found_on_gpu(table, "gpu_key_sets", started, &metrics));
                        }
                    }
                    if let Some((run, values)) = payload {
                        if let Ok(found) = nested(run, &metrics).await? {
                            // A refusal of the data (a repeated key, a NULL value) collects
                            // the side, whose build decides as it did before.
                            if let Ok(table) = payload_table(&l, found, &values) {
                                let on_gpu =
                                    found_on_gpu(Ok(table), "gpu_payloads", started, &metrics);
                                return Ok(on_gpu);
                            }
                            MetricBuilder::new(&metrics)
                                .global_counter("gpu_payloads_refused")
                                .add(1);
                        }
                    }
                    l.collect(context, &metrics).await
                })
            })
            .collect()
    }

    /// The nested run of key-set or payload plan `plan`: this run's device, cache and
    /// context, its own metrics, and a CPU plan that never runs (a refusal collects the side
    /// instead).
    fn key_set_run(&self, plan: &Arc<GpuPlan>) -> Run {
        Run {
            plan: GpuPlan::clone(plan),
            cpu: Arc::clone(&plan.source),
            gpu: Arc::clone(&self.gpu),
            cache: self.cache.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
            fallback: Arc::new(Mutex::new(None)),
            pages: Arc::new(Mutex::new(None)),
            context: Arc::clone(&self.context),
            bits: Some(Arc::new(Mutex::new(None))),
            share: Share::WHOLE,
        }
    }

    /// The GPU aggregate of a per-key extremes side's partial `min`/`max` (`plan`, made from
    /// `partial`) under the final aggregate of its states: this run's device and cache, a
    /// fresh copy of the source (its states run once). Its CPU plan is empty: when the GPU
    /// refuses the data (more distinct keys than the kernel's groups, a value past 32 bits),
    /// the side's own CPU plan runs instead ([`extremes_side`]), whose final aggregate runs
    /// on every core per hash partition; under this one final aggregate it would run on one.
    fn extremes_exec(
        &self,
        plan: &Arc<GpuPlan>,
        partial: &Arc<dyn ExecutionPlan>,
    ) -> Result<ExtremesExec> {
        // The source is the one input the run executes itself (lookup sides are collected
        // from fresh copies).
        let mut plan = GpuPlan::clone(plan);
        plan.source = reset_plan_states(plan.source)?;
        let gpu: Arc<dyn ExecutionPlan> = Arc::new(GpuPartialAggregateExec::new(
            plan,
            Arc::new(EmptyExec::new(partial.schema())),
            Arc::clone(&self.gpu),
            self.cache.clone(),
        ));
        let partial = partial.downcast_ref::<AggregateExec>().ok_or_else(|| {
            DataFusionError::Internal("an extremes side's partial is not an aggregate".into())
        })?;
        let fin = finished_extremes(partial, AggregateMode::Final, Arc::clone(&gpu))?;
        let fin = match fin
            .downcast_ref::<AggregateExec>()
            .map(GpuFinalizeExec::try_new)
        {
            Some(Ok(f)) => Arc::new(f),
            _ => fin,
        };
        Ok((gpu, fin))
    }

    /// Runs a key-set run ([`Self::key_set_run`]) to its presence bitmap.
    async fn key_bits(self) -> Result<KeyBits> {
        let (Some(out), fallback) = (self.bits.clone(), Arc::clone(&self.fallback)) else {
            return Err(DataFusionError::Internal(
                "a key-set run without its bitmap's place".into(),
            ));
        };
        self.run().await?;
        let found = out.lock().ok().and_then(|mut b| b.take());
        Ok(found.ok_or_else(|| {
            fallback
                .lock()
                .ok()
                .and_then(|f| f.as_ref().map(ToString::to_string))
                .unwrap_or_else(|| "the key set's GPU plan found no bitmap".into())
        }))
    }
}

/// Runs nested run `run` ([`Run::key_set_run`]) to what its aggregates found, adding its
/// metrics to `metrics` as `set_…`.
async fn nested(run: Run, metrics: &ExecutionPlanMetricsSet) -> Result<KeyBits> {
    let inner = run.metrics.clone();
    // Boxed: a nested run's future holds this one's type otherwise.
    let found: Pin<Box<dyn Future<Output = Result<KeyBits>> + Send>> = Box::pin(run.key_bits());
    let found = found.await?;
    let inner = inner.clone_inner().aggregate_by_name();
    copy_metrics(inner.iter().map(|m| m.value().clone()), metrics);
    Ok(found)
}

/// `table`, a side built from what a nested run found, after adding the time since `started`
/// to `lookup_time` and 1 to `counter` in `metrics`.
fn found_on_gpu(
    table: std::result::Result<LookupTable, String>,
    counter: &'static str,
    started: Instant,
    metrics: &ExecutionPlanMetricsSet,
) -> std::result::Result<LookupTable, String> {
    MetricBuilder::new(metrics)
        .subset_time("lookup_time", 0)
        .add_duration(started.elapsed());
    MetricBuilder::new(metrics).global_counter(counter).add(1);
    table
}

/// The payload side `l` from what its GPU plan found (`plan/payload.rs`): the keys'
/// presence bitmap, the count of non-null keys, then each value's bitmap, column by column
/// (`values[j]` the words of column `j`'s). A value bitmap from another first key is moved
/// onto the keys' (its bits are keys present, so none falls below their first).
fn payload_table(
    l: &LookupPlan,
    found: Vec<Found>,
    values: &[Vec<u32>],
) -> std::result::Result<LookupTable, String> {
    let mut found = found.into_iter();
    let (Some(Found::Bits(first, present)), Some(Found::Count(rows))) =
        (found.next(), found.next())
    else {
        return Err("the payload side's GPU plan found no key bitmap".into());
    };
    let mut columns = Vec::new();
    for words in values {
        let mut column = Vec::new();
        for &w in words {
            let Some(Found::Bits(lo, bits)) = found.next() else {
                return Err("the payload side's GPU plan found no value bitmap".into());
            };
            column.push((w, moved(&bits, lo, first)));
        }
        columns.push(column);
    }
    LookupTable::from_payload_bits(l.key.to_string(), first, present, rows, columns)
}

/// Bitmap `bits` of values from `lo` on as a bitmap of values from `first` on (bits of
/// values below `first` dropped).
fn moved(bits: &[u32], lo: i64, first: i64) -> Vec<u32> {
    if lo == first {
        return bits.to_vec();
    }
    let mut out = Vec::new();
    for (w, &word) in bits.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            let b = word.trailing_zeros() as i64;
            word &= word - 1;
            let d = lo + 32 * w as i64 + b - first;
            if d >= 0 {
                let d = d as usize;
                if out.len() <= d / 32 {
                    out.resize(d / 32 + 1, 0);
                }
                out[d / 32] |= 1 << (d % 32);
            }
        }
    }
    out
}

/// An extremes side's GPU partial aggregate and the final aggregate over it
/// ([`Run::extremes_exec`]).
type ExtremesExec = (Arc<dyn ExecutionPlan>, Arc<dyn ExecutionPlan>);

/// The lookup table of extremes side `l` from its GPU aggregate `(gpu, fin)`: the final
/// aggregate's rows (one per key) are collected as the side's input, or, when the GPU
/// aggregate fell back (to no rows, [`Run::extremes_exec`]), the side's own CPU plan is.
/// Adds the GPU aggregate's metrics as `set_…` and counts `gpu_extremes` when it ran.
async fn extremes_side(
    l: &LookupPlan,
    (gpu, fin): ExtremesExec,
    context: Arc<TaskContext>,
    metrics: &ExecutionPlanMetricsSet,
) -> Result<Result<LookupTable, String>> {
    let table = l.collect_from(fin, Arc::clone(&context), metrics).await?;
    if let Some(nested) = gpu.metrics() {
        copy_metrics(nested.iter().map(|m| m.value().clone()), metrics);
    }
    let on_gpu = gpu
        .downcast_ref::<GpuPartialAggregateExec>()
        .is_some_and(|g| g.fallback().is_none());
    if !on_gpu {
        return l.collect(context, metrics).await;
    }
    MetricBuilder::new(metrics)
        .global_counter("gpu_extremes")
        .add(1);
    Ok(table)
}

/// Adds the time metrics and counters of a nested key-set run or extremes aggregate
/// (`nested`) to `metrics` as
/// `set_…` (`set_gpu_time`, `set_convert_time`, `set_gpu_cache_hits`, …), so the
/// operator's metrics include its sides'.
fn copy_metrics(nested: impl Iterator<Item = MetricValue>, metrics: &ExecutionPlanMetricsSet) {
    for m in nested {
        match &m {
            MetricValue::Time { name, time } => MetricBuilder::new(metrics)
                .subset_time(format!("set_{name}"), 0)
                .add_duration(std::time::Duration::from_nanos(time.value() as u64)),
            MetricValue::Count { name, count } => MetricBuilder::new(metrics)
                .global_counter(format!("set_{name}"))
                .add(count.value()),
            _ => {}
        }
    }
}
