//! [`GpuUnitExec`]: a subtree that runs on one executor's GPU, opaque to Ballista; and
//! [`GpuUnitRule`], the scheduler's rule that finds those subtrees.
//!
//! Each GPU exec of `gpugraph-datafusion` reads every partition of its input and writes one
//! partition. Ballista cuts a stage's plan per task, restricting every scan and shuffle read
//! to the task's partitions unless an operator declares that it needs its input whole
//! (`SinglePartition`); the GPU execs don't declare that (DataFusion would then put a
//! coalesce below them in one process, which their parallel Parquet scan avoids), so a
//! visible GPU exec over a 4-partition scan would aggregate a quarter of the table in a
//! 1-task stage: a wrong answer. A unit has no children, so Ballista neither cuts stages
//! inside it nor restricts its scans, and its task reads the subtree's whole input.

use std::fmt;
use std::sync::Arc;

use gpugraph_datafusion::datafusion::common::config::ConfigOptions;
use gpugraph_datafusion::datafusion::common::tree_node::{
    Transformed, TreeNode, TreeNodeRecursion,
};
use gpugraph_datafusion::datafusion::error::{DataFusionError, Result};
use gpugraph_datafusion::datafusion::execution::TaskContext;
use gpugraph_datafusion::datafusion::physical_expr::PhysicalExpr;
use gpugraph_datafusion::datafusion::physical_optimizer::PhysicalOptimizerRule;
use gpugraph_datafusion::datafusion::physical_plan::aggregates::AggregateExec;
use gpugraph_datafusion::datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use gpugraph_datafusion::datafusion::physical_plan::metrics::{
    ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use gpugraph_datafusion::datafusion::physical_plan::sorts::sort::SortExec;
use gpugraph_datafusion::datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use gpugraph_datafusion::datafusion::physical_plan::{
    displayable, DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties,
    PlanProperties, SendableRecordBatchStream,
};
use gpugraph_datafusion::{GpuFinalizeExec, GpuPartialAggregateExec, GpuTopKExec};

/// The physical-optimizer chain of one process's `gpugraph-datafusion` session (GPU rules,
/// DataFusion's rules, the recursion bound), run over a unit's origin where the unit is
/// planned: on the scheduler to learn its output, on each executor against that executor's
/// own device (or DataFusion's CPU rules alone where it has none).
#[derive(Clone)]
pub struct LocalPlanner {
    rules: Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>>,
    on_gpu: bool,
}

impl fmt::Debug for LocalPlanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalPlanner")
            .field("on_gpu", &self.on_gpu)
            .field("rules", &self.rules.len())
            .finish()
    }
}

impl LocalPlanner {
    /// The chain of `session`'s state (a session from `gpugraph_datafusion::session_context*`);
    /// `on_gpu` says whether it holds the GPU rules.
    pub fn of_session(
        session: &gpugraph_datafusion::datafusion::prelude::SessionContext,
        on_gpu: bool,
    ) -> Self {
        Self {
            rules: session.state().physical_optimizers().to_vec(),
            on_gpu,
        }
    }

    /// Whether the chain puts operators on a GPU.
    pub fn on_gpu(&self) -> bool {
        self.on_gpu
    }

    /// `origin` through the chain, then merged to one partition where the chain left more
    /// (a CPU plan of an aggregate the scheduler planned on a GPU): a unit writes one
    /// partition wherever it runs, since the scheduler planned the stage around that.
    pub fn plan(
        &self,
        origin: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let planned = self
            .rules
            .iter()
            .try_fold(origin, |plan, rule| rule.optimize(plan, config))?;
        if planned.output_partitioning().partition_count() == 1 {
            return Ok(planned);
        }
        Ok(match planned.output_ordering() {
            Some(order) => Arc::new(SortPreservingMergeExec::new(order.clone(), planned)),
            None => Arc::new(CoalescePartitionsExec::new(planned)),
        })
    }
}

/// Whether `plan`'s root is one of the GPU execs that read their input whole.
pub(crate) fn is_gpu_root(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.downcast_ref::<GpuPartialAggregateExec>().is_some()
        || plan.downcast_ref::<GpuFinalizeExec>().is_some()
        || plan.downcast_ref::<GpuTopKExec>().is_some()
}

/// The GPU execs in `plan` (GPU aggregates, finalizers, top-k selections), and how many of
/// them ran DataFusion's CPU plan instead at run time.
fn gpu_execs(plan: &Arc<dyn ExecutionPlan>) -> (usize, usize) {
    let mut execs = 0;
    let mut fallbacks = 0;
    let _ = plan.apply(|node| {
        if let Some(g) = node.downcast_ref::<GpuPartialAggregateExec>() {
            execs += 1;
            fallbacks += usize::from(g.fallback().is_some());
        } else if let Some(t) = node.downcast_ref::<GpuTopKExec>() {
            execs += 1;
            fallbacks += usize::from(t.fallback_reason().is_some());
        } else if node.downcast_ref::<GpuFinalizeExec>().is_some() {
            execs += 1;
        }
        Ok(TreeNodeRecursion::Continue)
    });
    (execs, fallbacks)
}

/// A subtree planned by the process that holds it (see the module docs): `origin` is the
/// planner's plan of the subtree before any physical-optimizer rule (what travels to the
/// executors, plain DataFusion nodes), `planned` what [`LocalPlanner::plan`] made of it here.
///
/// Reads: every partition of `origin`'s input, on the executor that runs its one task.
/// Writes: one partition. Its metrics are those of the GPU execs in `planned`, plus
/// `gpu_execs` (how many GPU execs the local plan holds) and `gpu_fallbacks` (how many of
/// them ran on the CPU after all), so `EXPLAIN ANALYZE` through Ballista shows where it ran.
#[derive(Debug)]
pub struct GpuUnitExec {
    origin: Arc<dyn ExecutionPlan>,
    planned: Arc<dyn ExecutionPlan>,
}

impl GpuUnitExec {
    /// The unit of `origin` as `planner` plans it here (DataFusion's planning errors pass
    /// through).
    pub fn plan(
        origin: Arc<dyn ExecutionPlan>,
        planner: &LocalPlanner,
        config: &ConfigOptions,
    ) -> Result<Self> {
        let planned = planner.plan(Arc::clone(&origin), config)?;
        Ok(Self { origin, planned })
    }

    /// The subtree as the planner made it, before any physical-optimizer rule (what the
    /// codec ships).
    pub fn origin(&self) -> &Arc<dyn ExecutionPlan> {
        &self.origin
    }

    /// The subtree as this process runs it.
    pub fn planned(&self) -> &Arc<dyn ExecutionPlan> {
        &self.planned
    }
}

impl DisplayAs for GpuUnitExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match t {
            DisplayFormatType::TreeRender => write!(f, "{}", self.planned.name()),
            _ => {
                // The local plan on one line, so Ballista's stage display (one line an
                // operator) shows what runs inside. No counts here: the metrics carry them.
                let inner = displayable(self.planned.as_ref()).indent(false).to_string();
                let inner: Vec<&str> = inner.lines().map(str::trim).collect();
                write!(f, "GpuUnitExec: plan=[{}]", inner.join(" <- "))
            }
        }
    }
}

impl ExecutionPlan for GpuUnitExec {
    fn name(&self) -> &str {
        "GpuUnitExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.planned.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
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
        if children.is_empty() {
            return Ok(self);
        }
        Err(DataFusionError::Internal(format!(
            "GpuUnitExec has no children, given {}",
            children.len()
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.planned.execute(partition, context)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        let (execs, fallbacks) = gpu_execs(&self.planned);
        let own = ExecutionPlanMetricsSet::new();
        MetricBuilder::new(&own)
            .global_counter("gpu_execs")
            .add(execs);
        MetricBuilder::new(&own)
            .global_counter("gpu_fallbacks")
            .add(fallbacks);
        let mut set = own.clone_inner();
        let _ = self.planned.apply(|node| {
            if is_gpu_root(node) {
                for m in node.metrics().iter().flat_map(|s| s.iter()) {
                    set.push(Arc::clone(m));
                }
            }
            Ok(TreeNodeRecursion::Continue)
        });
        Some(set)
    }
}

/// The scheduler's first physical-optimizer rule: each outermost subtree whose root the GPU
/// chain turns into a GPU exec (a partial or final aggregate, a sort with a limit) becomes a
/// [`GpuUnitExec`]; everything else stays for DataFusion's rules and Ballista's stages.
#[derive(Debug)]
pub struct GpuUnitRule {
    planner: LocalPlanner,
}

impl GpuUnitRule {
    /// A rule that plans units with `planner` (the scheduler's GPU chain).
    pub fn new(planner: LocalPlanner) -> Self {
        Self { planner }
    }
}

/// Whether the GPU chain may turn `plan`'s root into a GPU exec: worth planning it to see.
fn may_be_gpu(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.downcast_ref::<AggregateExec>().is_some()
        || plan
            .downcast_ref::<SortExec>()
            .is_some_and(|s| s.fetch().is_some())
}

impl PhysicalOptimizerRule for GpuUnitRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !self.planner.on_gpu() {
            return Ok(plan);
        }
        let rewritten = plan.transform_down(|node| {
            if !may_be_gpu(&node) {
                return Ok(Transformed::no(node));
            }
            // A subtree the chain cannot plan on its own stays for the whole plan's rules,
            // which report their own errors.
            let Ok(unit) = GpuUnitExec::plan(Arc::clone(&node), &self.planner, config) else {
                return Ok(Transformed::no(node));
            };
            // The chain may put a coalesce above a GPU root; the root decides.
            let root = strip_merge(unit.planned());
            if !is_gpu_root(&root) {
                return Ok(Transformed::no(node));
            }
            Ok(Transformed::new(
                Arc::new(unit) as Arc<dyn ExecutionPlan>,
                true,
                TreeNodeRecursion::Jump,
            ))
        })?;
        Ok(rewritten.data)
    }

    fn name(&self) -> &str {
        "gpugraph_cluster_units"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` without the merge [`LocalPlanner::plan`] may have put on top.
fn strip_merge(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    if plan.downcast_ref::<CoalescePartitionsExec>().is_some()
        || plan.downcast_ref::<SortPreservingMergeExec>().is_some()
    {
        if let Some(child) = plan.children().first() {
            return Arc::clone(child);
        }
    }
    Arc::clone(plan)
}
