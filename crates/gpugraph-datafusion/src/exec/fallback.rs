//! `CpuFallbackExec`: the transparent marker of a partial aggregate left on DataFusion's CPU
//! operators, which `EXPLAIN` shows with its reason.

use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};

/// A partial aggregate left on DataFusion's CPU operators, with the reason (shown by
/// `EXPLAIN`). Executes its input unchanged.
#[derive(Debug)]
pub struct CpuFallbackExec {
    input: Arc<dyn ExecutionPlan>,
    reason: String,
}

impl CpuFallbackExec {
    /// Marks `input` as staying on the CPU because of `reason`.
    pub fn new(input: Arc<dyn ExecutionPlan>, reason: String) -> Self {
        Self { input, reason }
    }

    /// Why the input stays on the CPU.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl DisplayAs for CpuFallbackExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "CpuFallbackExec: on=CPU, reason={}", self.reason)
    }
}

impl ExecutionPlan for CpuFallbackExec {
    fn name(&self) -> &str {
        "CpuFallbackExec"
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
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(Self::new(
            children.swap_remove(0),
            self.reason.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }
}
