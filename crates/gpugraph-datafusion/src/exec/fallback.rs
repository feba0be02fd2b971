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
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::one_child("CpuFallbackExec", children)?;
        Ok(Arc::new(Self::new(input, self.reason.clone())))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Schema;
    use datafusion::physical_plan::empty::EmptyExec;

    // The method the exec implements (DataFusion still calls it under `replace_children`).
    #[allow(deprecated)]
    #[test]
    fn a_wrong_number_of_children_is_an_error_not_a_panic() {
        let input: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(Arc::new(Schema::empty())));
        let exec = Arc::new(CpuFallbackExec::new(Arc::clone(&input), "why".into()));
        for given in [0, 2] {
            let children = vec![Arc::clone(&input); given];
            let err = Arc::clone(&exec)
                .with_new_children(children)
                .expect_err("one child only");
            assert!(err.to_string().contains(&format!("given {given}")), "{err}");
        }
        assert!(exec.with_new_children(vec![input]).is_ok());
    }
}
