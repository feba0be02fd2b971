//! A bound on recursive queries: DataFusion runs `WITH RECURSIVE` until an iteration
//! produces no rows, so a recursion without a stopping condition runs forever (at constant
//! memory when each iteration is small). [`RecursionLimitRule`] wraps the recursive term of
//! every `RecursiveQueryExec` in an [`IterationLimitExec`] that fails the query, by name,
//! once the term has run [`RecursionLimitRule::max_iterations`] times.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::recursive_query::RecursiveQueryExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};

/// Iterations a recursive query may run by default: far past what a graph walk or a series
/// needs, and a second or so of a runaway recursion.
pub const DEFAULT_MAX_ITERATIONS: usize = 100_000;

/// Wraps every recursive term in an [`IterationLimitExec`] (see the module docs).
#[derive(Debug)]
pub struct RecursionLimitRule {
    /// Iterations a recursive query may run before it fails.
    pub max_iterations: usize,
}

impl PhysicalOptimizerRule for RecursionLimitRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let rewritten = plan.transform_up(|node| {
            if node.downcast_ref::<RecursiveQueryExec>().is_none() {
                return Ok(Transformed::no(node));
            }
            let children: Vec<Arc<dyn ExecutionPlan>> =
                node.children().into_iter().cloned().collect();
            let [static_term, recursive_term] = <[_; 2]>::try_from(children).map_err(|c| {
                DataFusionError::Internal(format!(
                    "RecursiveQueryExec with {} children, not 2",
                    c.len()
                ))
            })?;
            if recursive_term
                .downcast_ref::<IterationLimitExec>()
                .is_some()
            {
                return Ok(Transformed::no(node));
            }
            let limited: Arc<dyn ExecutionPlan> = Arc::new(IterationLimitExec {
                input: recursive_term,
                max_iterations: self.max_iterations,
                runs: Arc::new(AtomicUsize::new(0)),
            });
            #[allow(deprecated)]
            let rebuilt = node.with_new_children(vec![static_term, limited])?;
            Ok(Transformed::yes(rebuilt))
        })?;
        Ok(rewritten.data)
    }

    fn name(&self) -> &str {
        "gpugraph_recursion_limit"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The recursive term of a recursive query, counting its runs (one an iteration, shared by
/// the copies DataFusion makes of the term between iterations) and failing past the limit.
#[derive(Debug)]
pub struct IterationLimitExec {
    input: Arc<dyn ExecutionPlan>,
    max_iterations: usize,
    runs: Arc<AtomicUsize>,
}

impl DisplayAs for IterationLimitExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "IterationLimitExec: max_iterations={}",
            self.max_iterations
        )
    }
}

impl ExecutionPlan for IterationLimitExec {
    fn name(&self) -> &str {
        "IterationLimitExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
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
        let input = crate::exec::one_child("IterationLimitExec", children)?;
        Ok(Arc::new(Self {
            input,
            max_iterations: self.max_iterations,
            runs: Arc::clone(&self.runs),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let run = self.runs.fetch_add(1, Ordering::Relaxed) + 1;
        if run > self.max_iterations {
            return Err(DataFusionError::ResourcesExhausted(format!(
                "a recursive query ran {} iterations without ending (--max-recursion {}): give its recursive term a stopping condition",
                self.max_iterations, self.max_iterations
            )));
        }
        self.input.execute(partition, context)
    }
}
