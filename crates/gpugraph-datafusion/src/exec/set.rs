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

/// Where a key-set run leaves the first key of its presence bitmap and the bitmap.
pub(super) type BitsOut = Arc<Mutex<Option<(i64, Vec<u32>)>>>;

/// What a key-set run found: the first key of its bitmap and the bitmap, or why its GPU
/// plan did not run.
pub(super) type KeyBits = Result<(i64, Vec<u32>), String>;

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
                tokio::spawn(async move {
                    if let Some(exec) = extremes {
                        return extremes_side(&l, exec?, context, &metrics).await;
                    }
                    if let Some(run) = on_gpu {
                        let started = Instant::now();
                        let nested = run.metrics.clone();
                        // Boxed: a nested run's future holds this one's type otherwise.
                        let found: Pin<Box<dyn Future<Output = Result<KeyBits>> + Send>> =
                            Box::pin(run.key_bits());
                        let found = found.await?;
                        let nested = nested.clone_inner().aggregate_by_name();
                        copy_metrics(nested.iter().map(|m| m.value().clone()), &metrics);
                        if let Ok((first, bits)) = found {
                            let table = LookupTable::from_bits(l.key.to_string(), first, bits);
                            MetricBuilder::new(&metrics)
                                .subset_time("lookup_time", 0)
                                .add_duration(started.elapsed());
                            MetricBuilder::new(&metrics)
                                .global_counter("gpu_key_sets")
                                .add(1);
                            return Ok(table);
                        }
                    }
                    l.collect(context, &metrics).await
                })
            })
            .collect()
    }

    /// The nested run of key-set plan `plan`: this run's device, cache and context, its own
    /// metrics, and a CPU plan that never runs (a refusal collects the side instead).
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
