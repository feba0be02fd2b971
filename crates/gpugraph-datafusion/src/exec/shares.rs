//! One GPU partial aggregate over several devices: a run per device over its
//! [`Share`] of the source (`crate::share`), all or nothing.
//!
//! The shares run at once, each on its own device with its own lookup sides. Their state rows
//! are the exec's output only when every share ran on its GPU: a share that would fall back
//! (a value its kernel cannot hold, too many groups) cannot run "its part" of the CPU plan,
//! whose partitions split the rows another way, so the exec then runs the whole CPU plan once
//! and reports the share's reason.

use std::sync::{Arc, Mutex};

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::execution_plan::reset_plan_states;
use datafusion::physical_plan::metrics::MetricBuilder;
use datafusion::physical_plan::ExecutionPlan;

use super::{GpuPartialAggregateExec, Run};
use crate::plan::GpuPlan;
use crate::share::{memory_share, Share};

/// The plan a run of `share` reads its source from, and the share of that plan's partitions
/// it takes: an in-memory table split by batches (all of the split table's partitions), or
/// the source itself (the share's partitions of it).
pub(super) fn source_of(
    source: &Arc<dyn ExecutionPlan>,
    share: Share,
) -> Result<(Arc<dyn ExecutionPlan>, Share)> {
    if share.is_whole() {
        return Ok((Arc::clone(source), share));
    }
    match memory_share(source, share) {
        Some(split) => Ok((split?, Share::WHOLE)),
        None => Ok((Arc::clone(source), share)),
    }
}

/// `plan` with fresh instances of every plan its lookup sides execute: DataFusion's operators
/// keep per-execution state (a repartition hands each output partition out once), and each
/// share executes its lookup sides itself.
fn fresh_sides(plan: &GpuPlan) -> Result<GpuPlan> {
    let mut plan = plan.clone();
    for l in plan.lookups.iter_mut() {
        l.input = reset_plan_states(Arc::clone(&l.input))?;
    }
    for (_, set) in plan.sets.iter_mut() {
        *set = fresh_plan(set)?;
    }
    for (_, extremes, partial) in plan.extremes.iter_mut() {
        *extremes = fresh_plan(extremes)?;
        *partial = reset_plan_states(Arc::clone(partial))?;
    }
    for (_, payload) in plan.payloads.iter_mut() {
        if let Ok(payload) = payload {
            payload.plan = fresh_plan(&payload.plan)?;
        }
    }
    Ok(plan)
}

/// A nested GPU plan with a fresh source and fresh sides ([`fresh_sides`]).
fn fresh_plan(plan: &Arc<GpuPlan>) -> Result<Arc<GpuPlan>> {
    let mut fresh = fresh_sides(plan)?;
    fresh.source = reset_plan_states(Arc::clone(&fresh.source))?;
    Ok(Arc::new(fresh))
}

impl GpuPartialAggregateExec {
    /// One run per device, share `i` on device `i`, each with its own fallback slot; the
    /// first keeps the planned lookup sides, the others get fresh instances of them.
    pub(super) fn share_runs(&self, context: &Arc<TaskContext>) -> Result<Vec<Run>> {
        let of = self.devices.len();
        MetricBuilder::new(&self.metrics)
            .global_counter("devices")
            .add(of);
        self.devices
            .iter()
            .enumerate()
            .map(|(index, gpu)| {
                let plan = if index == 0 {
                    self.plan.clone()
                } else {
                    fresh_sides(&self.plan)?
                };
                Ok(Run {
                    plan,
                    gpu: Arc::clone(gpu),
                    fallback: Arc::new(Mutex::new(None)),
                    share: Share { index, of },
                    ..self.whole_run(Arc::clone(context))
                })
            })
            .collect()
    }
}

/// The shares' tasks, aborted when dropped: a query stopped early (its `--timeout`, an error
/// in another share) stops every device's run instead of leaving the others running detached.
struct Tasks<T>(Vec<tokio::task::JoinHandle<T>>);

impl<T> Drop for Tasks<T> {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Runs `shares` at once and returns their state rows, or, when any share refused its GPU
/// run, the whole CPU plan's rows through `whole` (which records that share's reason).
pub(super) async fn run_shares(shares: Vec<Run>, whole: Run) -> Result<Vec<RecordBatch>> {
    if let Ok(mut f) = whole.fallback.lock() {
        *f = None;
    }
    let slots: Vec<_> = shares.iter().map(|s| Arc::clone(&s.fallback)).collect();
    let mut tasks = Tasks(
        shares
            .into_iter()
            .map(|run| tokio::spawn(run.run()))
            .collect(),
    );
    let mut out = Vec::new();
    for task in tasks.0.iter_mut() {
        let batches = task
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))??;
        out.extend(batches);
    }
    drop(tasks);
    let refused = slots
        .iter()
        .find_map(|slot| slot.lock().ok().and_then(|f| f.clone()));
    match refused {
        Some(why) => whole.cpu(why).await,
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[tokio::test]
    async fn dropped_shares_stop_their_runs() {
        struct Flag(Arc<AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = Flag(Arc::clone(&dropped));
        let tasks = Tasks(vec![tokio::spawn(async move {
            let _flag = flag;
            futures::future::pending::<()>().await
        })]);
        tokio::task::yield_now().await;
        assert!(!dropped.load(Ordering::SeqCst), "the run started and waits");
        drop(tasks);
        for _ in 0..1000 {
            if dropped.load(Ordering::SeqCst) {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("a dropped share's run kept running");
    }
}
