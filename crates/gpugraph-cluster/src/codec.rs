//! [`GpuCodec`]: Ballista's physical codec, plus the GPU units.
//!
//! A [`GpuUnitExec`] travels as its origin (plain DataFusion nodes through
//! `datafusion-proto`) behind a tag that no protobuf message starts with (field number 0 is
//! invalid in protobuf), and is planned again where it is decoded, against that process's own
//! device. Everything else goes to Ballista's codec unchanged.

use std::sync::Arc;

use ballista_core::serde::BallistaPhysicalExtensionCodec;
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use gpugraph_datafusion::datafusion::error::{DataFusionError, Result};
use gpugraph_datafusion::datafusion::execution::TaskContext;
use gpugraph_datafusion::datafusion::physical_plan::ExecutionPlan;

use crate::unit::{GpuUnitExec, LocalPlanner};

/// The first bytes of an encoded [`GpuUnitExec`], then a format version.
const TAG: &[u8] = b"\0gpugraph-unit\x01";

/// Ballista's physical extension codec, extended with [`GpuUnitExec`]: the scheduler's and
/// every executor's (`override_physical_codec`); each decodes units with its own planner.
#[derive(Debug)]
pub struct GpuCodec {
    planner: LocalPlanner,
    ballista: BallistaPhysicalExtensionCodec,
}

impl GpuCodec {
    /// A codec that plans the units it decodes with `planner`.
    pub fn new(planner: LocalPlanner) -> Self {
        Self {
            planner,
            ballista: BallistaPhysicalExtensionCodec::default(),
        }
    }

    /// The planner units decoded here are planned with.
    pub fn planner(&self) -> &LocalPlanner {
        &self.planner
    }
}

impl PhysicalExtensionCodec for GpuCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(body) = buf.strip_prefix(TAG) else {
            if buf.starts_with(&TAG[..TAG.len() - 1]) {
                return Err(DataFusionError::Internal(format!(
                    "a GPU unit of format {} (this build reads {})",
                    buf.get(TAG.len() - 1).copied().unwrap_or(0),
                    TAG[TAG.len() - 1]
                )));
            }
            return self.ballista.try_decode(buf, inputs, ctx, proto_converter);
        };
        if !inputs.is_empty() {
            return Err(DataFusionError::Internal(format!(
                "a GPU unit has no inputs, given {}",
                inputs.len()
            )));
        }
        let origin = physical_plan_from_bytes_with_extension_codec(body, ctx, self)?;
        let unit = GpuUnitExec::plan(origin, &self.planner, ctx.session_config().options())?;
        Ok(Arc::new(unit))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(unit) = node.downcast_ref::<GpuUnitExec>() else {
            return self.ballista.try_encode(node, buf, proto_converter);
        };
        let origin = physical_plan_to_bytes_with_extension_codec(Arc::clone(unit.origin()), self)?;
        buf.extend_from_slice(TAG);
        buf.extend_from_slice(&origin);
        Ok(())
    }
}
