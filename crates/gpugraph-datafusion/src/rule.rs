//! The physical-optimizer rule that puts partial aggregates on the GPU. It runs before
//! DataFusion's own rules, so it sees the planner's plan: `AggregateExec(Partial)` over
//! projections and filters over the scan, with no repartitioning yet.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::ExecutionPlan;
use gpugraph_command::GpuContext;

use crate::cache::GpuCache;
use crate::exec::{CpuFallbackExec, GpuPartialAggregateExec};
use crate::kernel::STORAGE_BUFFERS;
use crate::plan::plan as gpu_plan_of;

/// Replaces every partial `AggregateExec` (with its projection/filter chain) by a
/// [`GpuPartialAggregateExec`], or marks it with a [`CpuFallbackExec`] that says why not.
#[derive(Debug)]
pub struct GpuAggregateRule {
    gpu: Arc<GpuContext>,
    cache: GpuCache,
}

impl GpuAggregateRule {
    /// A rule whose execs run on `gpu`, sharing `cache`.
    pub fn new(gpu: Arc<GpuContext>, cache: GpuCache) -> Self {
        Self { gpu, cache }
    }

    /// Why this device cannot run the kernel at all, if so.
    fn device_refusal(&self) -> Option<String> {
        let have = self
            .gpu
            .device
            .limits()
            .max_storage_buffers_per_shader_stage;
        (have < STORAGE_BUFFERS).then(|| {
            format!("the device binds {have} storage buffers per shader stage; the GPU aggregate needs {STORAGE_BUFFERS}")
        })
    }
}

impl PhysicalOptimizerRule for GpuAggregateRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let refusal = self.device_refusal();
        let rewritten = plan.transform_up(|node| {
            let decided: Option<Arc<dyn ExecutionPlan>> = match node.downcast_ref::<AggregateExec>()
            {
                Some(agg) if *agg.mode() == AggregateMode::Partial => {
                    Some(match (&refusal, gpu_plan_of(agg)) {
                        (Some(why), _) => {
                            Arc::new(CpuFallbackExec::new(Arc::clone(&node), why.clone()))
                        }
                        (None, Err(why)) => Arc::new(CpuFallbackExec::new(Arc::clone(&node), why)),
                        (None, Ok(gpu_plan)) => Arc::new(GpuPartialAggregateExec::new(
                            gpu_plan,
                            Arc::clone(&node),
                            Arc::clone(&self.gpu),
                            self.cache.clone(),
                        )),
                    })
                }
                _ => None,
            };
            Ok(match decided {
                Some(d) => Transformed::yes(d),
                None => Transformed::no(node),
            })
        })?;
        Ok(rewritten.data)
    }

    fn name(&self) -> &str {
        "gpugraph_gpu_aggregate"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
