//! The physical-optimizer rule that puts partial aggregates on the GPU. It runs before
//! DataFusion's own rules, so it sees the planner's plan: `AggregateExec(Partial)` over
//! projections and filters over the scan, with no repartitioning yet.
//!
//! The CPU plan a GPU exec keeps for its run-time fallback is not its child, so DataFusion's
//! rules never see it: the rule runs them over it here, once, so that plan is the one the CPU
//! session would execute (a join's partition mode decided, repartitions in place).

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::ExecutionPlan;
use gpugraph_command::GpuContext;

use crate::cache::GpuCache;
use crate::exec::{CpuFallbackExec, FallbackReason, GpuPartialAggregateExec};
use crate::finalize::GpuFinalizeExec;
use crate::kernel::STORAGE_BUFFERS;
use crate::plan::plan as gpu_plan_of;

/// Replaces every partial `AggregateExec` (with its projection/filter chain) by a
/// [`GpuPartialAggregateExec`], or marks it with a [`CpuFallbackExec`] that says why not.
#[derive(Debug)]
pub struct GpuAggregateRule {
    gpu: Arc<GpuContext>,
    /// Every device the execs split their input over, `gpu` first (just `gpu` by default).
    devices: Vec<Arc<GpuContext>>,
    cache: GpuCache,
}

impl GpuAggregateRule {
    /// A rule whose execs run on `gpu`, sharing `cache`.
    pub fn new(gpu: Arc<GpuContext>, cache: GpuCache) -> Self {
        Self {
            devices: vec![Arc::clone(&gpu)],
            gpu,
            cache,
        }
    }

    /// The rule with execs that split their input over `devices`
    /// ([`GpuPartialAggregateExec::with_devices`]); the first becomes the rule's device. An
    /// empty list changes nothing.
    pub fn with_devices(mut self, devices: Vec<Arc<GpuContext>>) -> Self {
        if let Some(first) = devices.first() {
            self.gpu = Arc::clone(first);
            self.devices = devices;
        }
        self
    }

    /// Why one of the devices cannot run the kernel at all, if so.
    fn device_refusal(&self) -> Option<FallbackReason> {
        let have = self
            .devices
            .iter()
            .map(|g| g.device.limits().max_storage_buffers_per_shader_stage)
            .min()
            .unwrap_or(0);
        (have < STORAGE_BUFFERS).then_some(FallbackReason::StorageBuffers {
            have,
            need: STORAGE_BUFFERS,
        })
    }
}

/// `plan` through DataFusion's default physical-optimizer rules.
fn cpu_plan(
    plan: Arc<dyn ExecutionPlan>,
    config: &ConfigOptions,
) -> Result<Arc<dyn ExecutionPlan>> {
    PhysicalOptimizer::new()
        .rules
        .iter()
        .try_fold(plan, |plan, rule| rule.optimize(plan, config))
}

impl PhysicalOptimizerRule for GpuAggregateRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
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
                        (None, Err(why)) => Arc::new(CpuFallbackExec::new(
                            Arc::clone(&node),
                            FallbackReason::Unsupported(why),
                        )),
                        (None, Ok(gpu_plan)) => Arc::new(
                            GpuPartialAggregateExec::new(
                                gpu_plan,
                                cpu_plan(Arc::clone(&node), config)?,
                                Arc::clone(&self.gpu),
                                self.cache.clone(),
                            )
                            .with_devices(self.devices.clone()),
                        ),
                    })
                }
                // A final aggregate over a GPU partial aggregate whose groups are unique
                // merges nothing (`finalize.rs`); otherwise it stays DataFusion's.
                Some(agg)
                    if matches!(
                        agg.mode(),
                        AggregateMode::Final | AggregateMode::FinalPartitioned
                    ) =>
                {
                    GpuFinalizeExec::try_new(agg)
                        .ok()
                        .map(|f| Arc::new(f) as Arc<dyn ExecutionPlan>)
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
