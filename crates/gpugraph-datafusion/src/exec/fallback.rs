//! `CpuFallbackExec`: the transparent marker of a partial aggregate (or a top-k) left on
//! DataFusion's CPU operators, which `EXPLAIN` shows with its reason; and [`FallbackReason`],
//! every reason a GPU aggregate runs DataFusion's CPU plan instead, decided when the plan is
//! made or when the data arrives.

use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};

use crate::convert::Misfit;

/// Why a partial aggregate (or a top-k) runs on DataFusion's CPU operators. Its `Display`
/// is the sentence `EXPLAIN` shows; tests and tools match the variant instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FallbackReason {
    /// The device binds fewer storage buffers per shader stage than the aggregate kernel
    /// (planning).
    StorageBuffers {
        /// Storage buffers the device binds per shader stage.
        have: u32,
        /// Storage buffers the kernel binds.
        need: u32,
    },
    /// The planner cannot express the operator on the GPU: what it met (planning).
    Unsupported(String),
    /// A value the GPU's 32-bit columns cannot hold, or a column they cannot convert (run
    /// time).
    Misfit(Misfit),
    /// The data's bounds overflow the kernel's exact integer arithmetic: which value or
    /// intermediate (run time).
    Bounds(String),
    /// A join's lookup side cannot be a GPU lookup (a repeated key, keys too sparse, nulls
    /// in a link): which and why (run time).
    Lookup(String),
    /// A string expression over one coded column ([`crate::codemap::CodeMap`]) that the GPU
    /// cannot look up by code for this data (a value past 32 bits, an evaluation DataFusion
    /// fails on some distinct value): which and why (run time).
    CodeMap(String),
    /// A value known only when the query runs (a scalar subquery's) that the GPU cannot
    /// compute with: which and why (run time).
    Value(String),
    /// More groups than the GPU aggregates (run time).
    TooManyGroups {
        /// Groups the data has.
        groups: usize,
        /// Whether the groups are key combinations and lookup rows (else key combinations).
        lookup_rows: bool,
        /// Accumulator words per group, when the program's size was the limit.
        words_per_group: Option<usize>,
        /// Most groups.
        max: usize,
    },
    /// The lookup sides' buffer is larger than one storage binding (run time).
    LookupBinding {
        /// Bytes of the lookup buffer.
        bytes: usize,
        /// Bytes one storage binding holds.
        binding: usize,
    },
}

impl fmt::Display for FallbackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FallbackReason::StorageBuffers { have, need } => write!(
                f,
                "the device binds {have} storage buffers per shader stage; the GPU aggregate needs {need}"
            ),
            FallbackReason::Unsupported(why)
            | FallbackReason::Bounds(why)
            | FallbackReason::Lookup(why) => f.write_str(why),
            FallbackReason::Value(why) => {
                write!(f, "a value known when the query runs: {why}")
            }
            FallbackReason::CodeMap(why) => {
                write!(f, "a string expression looked up by code: {why}")
            }
            FallbackReason::Misfit(misfit) => write!(f, "{misfit}"),
            FallbackReason::TooManyGroups {
                groups,
                lookup_rows,
                words_per_group,
                max,
            } => {
                let what = if *lookup_rows {
                    "key combinations and lookup rows"
                } else {
                    "key combinations"
                };
                match words_per_group {
                    None => write!(
                        f,
                        "{groups} {what}, more than the {max} groups the GPU aggregates"
                    ),
                    Some(words) => write!(
                        f,
                        "{groups} {what} of {words} accumulator words each, more than the {max} groups the GPU aggregates"
                    ),
                }
            }
            FallbackReason::LookupBinding { bytes, binding } => write!(
                f,
                "the lookup buffer takes {bytes} bytes, past the {binding} bytes a GPU binding holds"
            ),
        }
    }
}

/// A partial aggregate left on DataFusion's CPU operators, with the reason (shown by
/// `EXPLAIN`). Executes its input unchanged.
#[derive(Debug)]
pub struct CpuFallbackExec {
    input: Arc<dyn ExecutionPlan>,
    reason: FallbackReason,
}

impl CpuFallbackExec {
    /// Marks `input` as staying on the CPU because of `reason`.
    pub fn new(input: Arc<dyn ExecutionPlan>, reason: FallbackReason) -> Self {
        Self { input, reason }
    }

    /// Why the input stays on the CPU.
    pub fn reason(&self) -> &FallbackReason {
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
        let exec = Arc::new(CpuFallbackExec::new(
            Arc::clone(&input),
            FallbackReason::Unsupported("why".into()),
        ));
        for given in [0, 2] {
            let children = vec![Arc::clone(&input); given];
            let err = Arc::clone(&exec)
                .with_new_children(children)
                .expect_err("one child only");
            assert!(err.to_string().contains(&format!("given {given}")), "{err}");
        }
        assert!(exec.with_new_children(vec![input]).is_ok());
    }

    /// Each reason reads as the sentence `EXPLAIN` showed before reasons were an enum.
    #[test]
    fn reasons_display_their_sentences() {
        let cases = [
            (
                FallbackReason::StorageBuffers { have: 8, need: 11 },
                "the device binds 8 storage buffers per shader stage; the GPU aggregate needs 11",
            ),
            (FallbackReason::Unsupported("a filter on x".into()), "a filter on x"),
            (
                FallbackReason::Misfit(Misfit {
                    column: "a".into(),
                    what: "a value past i32".into(),
                }),
                "column a: a value past i32",
            ),
            (
                FallbackReason::TooManyGroups {
                    groups: 9,
                    lookup_rows: true,
                    words_per_group: None,
                    max: 4,
                },
                "9 key combinations and lookup rows, more than the 4 groups the GPU aggregates",
            ),
            (
                FallbackReason::TooManyGroups {
                    groups: 9,
                    lookup_rows: false,
                    words_per_group: Some(3),
                    max: 4,
                },
                "9 key combinations of 3 accumulator words each, more than the 4 groups the GPU aggregates",
            ),
            (
                FallbackReason::LookupBinding {
                    bytes: 10,
                    binding: 8,
                },
                "the lookup buffer takes 10 bytes, past the 8 bytes a GPU binding holds",
            ),
        ];
        for (reason, text) in cases {
            assert_eq!(reason.to_string(), text);
        }
    }
}
