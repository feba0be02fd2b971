//! The lookup sides of a run, each built by its own task while the source streams in: a
//! key-set side with a GPU plan of its own ([`crate::plan::GpuPlan::sets`]) runs that plan
//! (the side's `count(distinct key)`) as a nested [`Run`] whose presence bitmap is the set
//! ([`LookupTable::from_bits`]); every other side, and a set side whose GPU plan the data
//! refuses (a value past 32 bits, a key span past a bitmap's), is collected on the CPU
//! ([`crate::lookup::LookupPlan::collect`]).
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
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricValue};
use tokio::task::JoinHandle;

use super::Run;
use crate::lookup::LookupTable;
use crate::plan::GpuPlan;

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
                tokio::spawn(async move {
                    if let Some(run) = on_gpu {
                        let started = Instant::now();
                        let nested = run.metrics.clone();
                        // Boxed: a nested run's future holds this one's type otherwise.
                        let found: Pin<Box<dyn Future<Output = Result<KeyBits>> + Send>> =
                            Box::pin(run.key_bits());
                        let found = found.await?;
                        copy_metrics(&nested, &metrics);
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
        }
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

/// Adds the time metrics and counters of a nested key-set run (`nested`) to `metrics` as
/// `set_…` (`set_gpu_time`, `set_convert_time`, `set_gpu_cache_hits`, …), so the
/// operator's metrics include its sides'.
fn copy_metrics(nested: &ExecutionPlanMetricsSet, metrics: &ExecutionPlanMetricsSet) {
    for m in nested.clone_inner().aggregate_by_name().iter() {
        match m.value() {
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
