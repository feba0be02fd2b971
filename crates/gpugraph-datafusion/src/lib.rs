//! GPU execution plans for Apache DataFusion.
//!
//! [`session_context`] builds a DataFusion `SessionContext` whose physical plans run supported
//! operators on gpugraph primitives ([`Engine::Gpu`]) or DataFusion's own CPU operators
//! ([`Engine::Cpu`], the same SQL front-end and logical optimizer, for comparison).

pub mod query;

pub use datafusion;

use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

/// Which operators a session's physical plans use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Supported operators run on the GPU; the rest fall back to DataFusion's CPU operators.
    Gpu,
    /// DataFusion's CPU operators only.
    Cpu,
}

/// Options of [`session_context`].
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// GPU plans or DataFusion's CPU plans.
    pub engine: Engine,
    /// DataFusion's `target_partitions` (CPU threads of scans and CPU operators); `None` keeps
    /// DataFusion's default (the number of cores).
    pub target_partitions: Option<usize>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self { engine: Engine::Gpu, target_partitions: None }
    }
}

/// Errors of building a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The GPU engine was asked for but its plans are not available.
    #[error("the GPU engine is not available: {0}")]
    GpuUnavailable(String),
}

/// A DataFusion session for `options`: register tables on it (`register_parquet`,
/// `register_batch`, ...) and run SQL with `sql(...)`.
pub fn session_context(options: &SessionOptions) -> Result<SessionContext, SessionError> {
    let mut config = SessionConfig::new();
    if let Some(partitions) = options.target_partitions {
        config = config.with_target_partitions(partitions.max(1));
    }
    let builder = SessionStateBuilder::new().with_config(config).with_default_features();
    match options.engine {
        Engine::Cpu => Ok(SessionContext::new_with_state(builder.build())),
        Engine::Gpu => Err(SessionError::GpuUnavailable("GPU plans are being built".into())),
    }
}
