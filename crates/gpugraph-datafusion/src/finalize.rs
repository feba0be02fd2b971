//! The final aggregate over a GPU partial aggregate whose groups are unique: no merge.
//!
//! DataFusion finishes a partial aggregate by hash-repartitioning its state rows on the group
//! keys and merging the rows of each group. The GPU's partial output already has one row per
//! group when [`GpuPartialAggregateExec::unique_groups`] holds (TPC-H Q10: one row per
//! customer, keyed by seven columns, five of them strings, which DataFusion re-hashed and
//! repartitioned for 300 ms of Q10's 270 at SF 10 on the H200). [`GpuFinalizeExec`] replaces
//! such a final `AggregateExec`: each aggregate's own `GroupsAccumulator` merges state row `i`
//! into group `i` and evaluates, so the results (avg's decimal rounding included) are
//! DataFusion's own, without hashing a key. When the partial ran DataFusion's CPU plan
//! instead (its run-time fallback), whose partitions may repeat a group, the exec runs
//! DataFusion's final aggregate over the collected states.
//!
//! A COUNT(DISTINCT)'s state row already lists its group's distinct values once each (the
//! GPU's presence bitmap), so its count is the list's length: DataFusion's accumulator would
//! hash every value again (SF 10's 15M order keys over Q1's groups) to find no duplicate.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::EmitTo;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::{
    collect, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;

use crate::exec::{all_partitions, batches_of, one_partition, GpuPartialAggregateExec};

/// A final `AggregateExec` over a [`GpuPartialAggregateExec`], finishing each state row as
/// its own group.
///
/// Reads: every partition of its input (the GPU partial aggregate: one). Writes: one
/// partition of the final aggregate's schema, one row per input row (a run whose partial
/// fell back to the CPU: DataFusion's final aggregate of the rows). Owns: the input's state
/// rows while it finishes them.
#[derive(Debug)]
pub struct GpuFinalizeExec {
    input: Arc<dyn ExecutionPlan>,
    /// The final aggregate as planned (its input is `input`).
    aggregate: Arc<AggregateExec>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl GpuFinalizeExec {
    /// The exec for `aggregate` (a final aggregate whose input is a GPU partial aggregate
    /// with unique groups), or why not.
    pub fn try_new(aggregate: &AggregateExec) -> Result<Self, String> {
        if !matches!(
            aggregate.mode(),
            AggregateMode::Final | AggregateMode::FinalPartitioned
        ) {
            return Err("not a final aggregate".into());
        }
        let partial = aggregate
            .input()
            .downcast_ref::<GpuPartialAggregateExec>()
            .ok_or("its input is not a GPU partial aggregate")?;
        if !partial.unique_groups() {
            return Err("the GPU partial aggregate may repeat a group".into());
        }
        if aggregate.group_expr().has_grouping_set() {
            return Err("grouping sets".into());
        }
        if aggregate.filter_expr().iter().any(Option::is_some) {
            return Err("aggregate filters".into());
        }
        if let Some(a) = aggregate
            .aggr_expr()
            .iter()
            .find(|a| !a.groups_accumulator_supported() && !counts_distinct(a))
        {
            return Err(format!("{} has no groups accumulator", a.name()));
        }
        let properties = Arc::new(PlanProperties::new(
            aggregate.properties().eq_properties.clone(),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Ok(Self {
            input: Arc::clone(aggregate.input()),
            aggregate: Arc::new(aggregate.clone()),
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

/// Each state row of `batch` (the partial aggregate's schema) finished as its own group by
/// `aggregate`'s accumulators.
fn finish_rows(aggregate: &AggregateExec, batch: &RecordBatch) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let groups: Vec<usize> = (0..rows).collect();
    let mut columns: Vec<ArrayRef> = aggregate
        .group_expr()
        .expr()
        .iter()
        .map(|(e, _)| e.evaluate(batch)?.into_array(rows))
        .collect::<Result<_>>()?;
    // State columns follow the group columns, each aggregate's fields in order (how the
    // final aggregate itself reads them).
    let mut at = columns.len();
    for a in aggregate.aggr_expr() {
        let fields = a.state_fields()?.len();
        let state: Vec<ArrayRef> = batch.columns()[at..at + fields].to_vec();
        at += fields;
        if counts_distinct(a) {
            if let Some(lists) = state[0].as_list_opt::<i32>() {
                let counts = (0..rows).map(|i| {
                    if lists.is_null(i) {
                        0
                    } else {
                        lists.value_length(i) as i64
                    }
                });
                columns.push(Arc::new(Int64Array::from_iter_values(counts)));
                continue;
            }
        }
        let mut accumulator = a.create_groups_accumulator()?;
        accumulator.merge_batch(&state, &groups, rows)?;
        columns.push(accumulator.evaluate(EmitTo::All)?);
    }
    Ok(RecordBatch::try_new(aggregate.schema(), columns)?)
}

/// Whether `a` is a COUNT(DISTINCT) (its state: one list of distinct values per group).
fn counts_distinct(a: &datafusion::physical_expr::aggregate::AggregateFunctionExpr) -> bool {
    a.is_distinct() && a.fun().name().eq_ignore_ascii_case("count")
}

/// One run.
struct Run {
    input: Arc<dyn ExecutionPlan>,
    aggregate: Arc<AggregateExec>,
    metrics: ExecutionPlanMetricsSet,
    context: Arc<TaskContext>,
}

impl Run {
    async fn run(self) -> Result<Vec<RecordBatch>> {
        let mut stream = all_partitions(&self.input, &self.context);
        let mut batches = Vec::new();
        while let Some(batch) = stream.next().await {
            batches.push(batch?);
        }
        let started = Instant::now();
        let unique = self
            .input
            .downcast_ref::<GpuPartialAggregateExec>()
            .is_some_and(|p| p.fallback().is_none() && p.unique_groups());
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        // Without group keys the final aggregate has one row even for no state rows.
        let keyed = !self.aggregate.group_expr().expr().is_empty();
        let out = if unique && (keyed || rows == 1) {
            let batch = concat_batches(&self.input.schema(), &batches)?;
            // No groups, no batch (as DataFusion's final aggregate answers).
            let finished = finish_rows(&self.aggregate, &batch)?;
            if finished.num_rows() == 0 {
                Vec::new()
            } else {
                vec![finished]
            }
        } else {
            MetricBuilder::new(&self.metrics)
                .global_counter("merged_on_cpu")
                .add(1);
            let states = MemorySourceConfig::try_new_exec(&[batches], self.input.schema(), None)?;
            let merge = AggregateExec::try_new(
                AggregateMode::Final,
                self.aggregate.group_expr().clone(),
                self.aggregate.aggr_expr().to_vec(),
                self.aggregate.filter_expr().to_vec(),
                states,
                self.input.schema(),
            )?;
            collect(Arc::new(merge), Arc::clone(&self.context)).await?
        };
        MetricBuilder::new(&self.metrics)
            .subset_time("finalize_time", 0)
            .add_duration(started.elapsed());
        Ok(out)
    }
}

impl DisplayAs for GpuFinalizeExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let groups: Vec<String> = self
            .aggregate
            .group_expr()
            .expr()
            .iter()
            .map(|(_, name)| name.clone())
            .collect();
        let aggregates: Vec<&str> = self
            .aggregate
            .aggr_expr()
            .iter()
            .map(|a| a.name())
            .collect();
        write!(
            f,
            "GpuFinalizeExec: groups unique, no merge, gby=[{}], aggr=[{}]",
            groups.join(", "),
            aggregates.join(", ")
        )
    }
}

impl ExecutionPlan for GpuFinalizeExec {
    fn name(&self) -> &str {
        "GpuFinalizeExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = crate::exec::one_child("GpuFinalizeExec", children)?;
        let aggregate = Arc::clone(&self.aggregate).with_new_children(vec![Arc::clone(&input)])?;
        let aggregate = aggregate
            .downcast_ref::<AggregateExec>()
            .ok_or_else(|| DataFusionError::Internal("an aggregate that is not one".into()))?
            .clone();
        Ok(Arc::new(Self {
            input,
            aggregate: Arc::new(aggregate),
            properties: Arc::clone(&self.properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        one_partition("GpuFinalizeExec", partition)?;
        let run = Run {
            input: Arc::clone(&self.input),
            aggregate: Arc::clone(&self.aggregate),
            metrics: self.metrics.clone(),
            context,
        };
        Ok(batches_of(self.aggregate.schema(), run.run()))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
