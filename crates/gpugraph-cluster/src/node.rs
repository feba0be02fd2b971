//! The three processes of a cluster: the scheduler (Ballista's, planning with
//! [`GpuUnitRule`]), the executors (Ballista's, decoding with [`GpuCodec`] against their own
//! device) and the client session.

use std::net::SocketAddr;
use std::sync::Arc;

use ballista_core::error::BallistaError;
use ballista_core::extension::{SessionConfigExt, SessionStateExt};
use ballista_core::utils::default_session_builder;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::{create_scheduler, start_grpc_service_with_listener};
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use gpugraph_command::{ContextOptions, DeviceSelection, GpuContext};
use gpugraph_datafusion::datafusion::execution::session_state::{
    SessionState, SessionStateBuilder,
};
use gpugraph_datafusion::datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use gpugraph_datafusion::datafusion::physical_optimizer::PhysicalOptimizerRule;
use gpugraph_datafusion::datafusion::prelude::{SessionConfig, SessionContext};
use gpugraph_datafusion::{session_context, session_context_on, Engine, SessionOptions};
use tokio::net::TcpListener;

use crate::codec::GpuCodec;
use crate::unit::{GpuUnitRule, LocalPlanner};

/// Errors of starting or reaching a cluster process.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// An address that is not `HOST:PORT`, or one that cannot be bound.
    #[error("address {address}: {why}")]
    Address {
        /// The address as given.
        address: String,
        /// What is wrong with it.
        why: String,
    },
    /// Nothing answers at the scheduler's address (no scheduler running there, or a
    /// firewall between), checked before Ballista's client would report it as a transport
    /// error or, in an executor, retry for ever.
    #[error("scheduler {address}: unreachable after {seconds} s ({why}); is `gpugraph scheduler` running there?")]
    Unreachable {
        /// The scheduler's address.
        address: SocketAddr,
        /// How long connecting was tried.
        seconds: u64,
        /// The last connection error.
        why: String,
    },
    /// Ballista refused or failed (its own error, named).
    #[error("ballista: {0}")]
    Ballista(#[from] BallistaError),
    /// DataFusion refused or failed.
    #[error(transparent)]
    DataFusion(#[from] gpugraph_datafusion::datafusion::error::DataFusionError),
}

/// The planner of a process that has `gpu` (the GPU chain of a `gpugraph-datafusion`
/// session with `options`, without its column cache: a unit's scan differs per task).
pub fn gpu_planner(gpu: Arc<GpuContext>, options: &SessionOptions) -> LocalPlanner {
    let options = SessionOptions {
        engine: Engine::Gpu,
        ..options.clone()
    };
    LocalPlanner::of_session(&session_context_on(&options, gpu, false), true)
}

/// The planner of a process without a GPU: DataFusion's CPU chain.
pub fn cpu_planner(options: &SessionOptions) -> LocalPlanner {
    let options = SessionOptions {
        engine: Engine::Cpu,
        ..options.clone()
    };
    let ctx = session_context(&options).expect("a CPU session needs no device");
    LocalPlanner::of_session(&ctx, false)
}

/// The planner for adapter `device` (`gpugraph info`'s numbering; `None`: the best
/// adapter), or the CPU planner and why, where that adapter cannot be opened.
pub fn device_planner(
    device: Option<usize>,
    options: &SessionOptions,
) -> (LocalPlanner, Option<String>) {
    let gpu = match device {
        None => GpuContext::new().map_err(|e| e.to_string()),
        Some(n) => GpuContext::for_devices(
            &DeviceSelection::Indices(vec![n]),
            &ContextOptions::from_env(),
        )
        .map_err(|e| e.to_string())
        .and_then(|mut v| {
            if v.is_empty() {
                Err(format!("adapter {n} was not opened"))
            } else {
                Ok(v.swap_remove(0))
            }
        }),
    };
    match gpu {
        Ok(gpu) => (gpu_planner(Arc::new(gpu), options), None),
        Err(why) => (cpu_planner(options), Some(why)),
    }
}

/// `HOST:PORT` as a socket address (a name's IPv4 address where it has one, since
/// Ballista's executor takes IPv4 only), or an error naming it.
pub fn parse_address(address: &str) -> Result<SocketAddr, ClusterError> {
    use std::net::ToSocketAddrs;
    let all: Vec<SocketAddr> = address
        .to_socket_addrs()
        .map_err(|e| ClusterError::Address {
            address: address.into(),
            why: e.to_string(),
        })?
        .collect();
    all.iter()
        .find(|a| a.is_ipv4())
        .or(all.first())
        .copied()
        .ok_or_else(|| ClusterError::Address {
            address: address.into(),
            why: "resolves to no address".into(),
        })
}

/// Waits until something accepts TCP connections at `address` (a scheduler), trying for
/// `seconds` (at least once), or names the address and the last error.
///
/// Why not Ballista's own wait: ballista-executor 55's `scheduler_connect_timeout_seconds`
/// loop measures a fresh `Instant`'s elapsed time, so it never times out; and its client
/// reports an unreachable scheduler as a debug-printed transport error.
pub fn wait_for_scheduler(address: SocketAddr, seconds: u64) -> Result<(), ClusterError> {
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let attempt = left.clamp(Duration::from_millis(200), Duration::from_secs(2));
        match std::net::TcpStream::connect_timeout(&address, attempt) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() >= deadline => {
                return Err(ClusterError::Unreachable {
                    address,
                    seconds,
                    why: e.to_string(),
                })
            }
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

/// Settings of a scheduler.
#[derive(Clone, Debug)]
pub struct SchedulerOptions {
    /// Seconds without a heartbeat after which an executor is dead and its tasks run
    /// elsewhere (Ballista's default: 180).
    pub executor_timeout_seconds: u64,
    /// Attempts of one task before its job fails (Ballista's default: 4).
    pub task_max_failures: usize,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        Self {
            executor_timeout_seconds: 180,
            task_max_failures: 4,
        }
    }
}

/// The scheduler's session for a job's `config`: Ballista's default session with the
/// static planner (its adaptive planner runs a rule chain of its own, not the session's) and
/// [`GpuUnitRule`] with `planner` before DataFusion's rules.
pub fn scheduler_session_state(
    planner: &LocalPlanner,
    config: SessionConfig,
) -> gpugraph_datafusion::datafusion::common::Result<SessionState> {
    let state = default_session_builder(config.with_ballista_adaptive_query_planner(false))?;
    let mut rules: Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> =
        vec![Arc::new(GpuUnitRule::new(planner.clone()))];
    rules.extend(PhysicalOptimizer::new().rules);
    Ok(SessionStateBuilder::new_from_existing(state)
        .with_physical_optimizer_rules(rules)
        .build())
}

/// Serves a scheduler on `listener` until the process ends, planning GPU units with
/// `planner` (a CPU planner makes none: every executor then runs DataFusion's plan).
pub async fn serve_scheduler(
    listener: TcpListener,
    planner: LocalPlanner,
    options: &SchedulerOptions,
) -> Result<(), ClusterError> {
    let local = listener.local_addr().map_err(|e| ClusterError::Address {
        address: "scheduler listener".into(),
        why: e.to_string(),
    })?;
    let for_jobs = planner.clone();
    let config = SchedulerConfig {
        bind_host: local.ip().to_string(),
        external_host: local.ip().to_string(),
        bind_port: local.port(),
        executor_timeout_seconds: options.executor_timeout_seconds,
        no_executors_grace_period_seconds: options.executor_timeout_seconds,
        expire_dead_executor_interval_seconds: options.executor_timeout_seconds.clamp(1, 15),
        task_max_failures: options.task_max_failures,
        override_session_builder: Some(Arc::new(move |c: SessionConfig| {
            scheduler_session_state(&for_jobs, c)
        })),
        override_physical_codec: Some(Arc::new(GpuCodec::new(planner))),
        ..SchedulerConfig::default()
    };
    let cluster = BallistaCluster::new_from_config(&config).await?;
    let scheduler =
        create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, Arc::new(config)).await?;
    start_grpc_service_with_listener(listener, scheduler).await?;
    Ok(())
}

/// How long a client waits for its scheduler to accept a connection.
const CLIENT_CONNECT_SECONDS: u64 = 5;

/// Settings of an executor.
#[derive(Clone, Debug)]
pub struct ExecutorOptions {
    /// The scheduler's `HOST:PORT`.
    pub scheduler: SocketAddr,
    /// The address the executor's Arrow Flight service (shuffle reads) binds; its gRPC
    /// service takes the next port.
    pub bind: SocketAddr,
    /// Tasks at once (Ballista's vcores); one per GPU unit is what the device holds best.
    pub concurrent_tasks: usize,
    /// Seconds between heartbeats to the scheduler.
    pub heartbeat_seconds: u64,
    /// Where shuffle files go (a temporary directory if `None`).
    pub work_dir: Option<String>,
    /// Seconds to wait for the scheduler to accept connections before giving up with
    /// [`ClusterError::Unreachable`] (0: one attempt).
    pub connect_timeout_seconds: u64,
}

/// Runs an executor until the process ends or the scheduler stops it, decoding GPU units
/// with `planner`.
pub async fn run_executor(
    options: &ExecutorOptions,
    planner: LocalPlanner,
) -> Result<(), ClusterError> {
    // Ballista 55 writes its executor's `HOST:PORT` without brackets and unwraps the parse.
    if !options.bind.is_ipv4() || options.bind.port() == 0 {
        return Err(ClusterError::Address {
            address: options.bind.to_string(),
            why: "an executor binds an IPv4 address and a fixed port (its gRPC service takes \
                  the next one)"
                .into(),
        });
    }
    let (scheduler, seconds) = (options.scheduler, options.connect_timeout_seconds);
    tokio::task::spawn_blocking(move || wait_for_scheduler(scheduler, seconds))
        .await
        .map_err(|e| ClusterError::Address {
            address: scheduler.to_string(),
            why: format!("waiting for the scheduler: {e}"),
        })??;
    let config = ExecutorProcessConfig {
        bind_host: options.bind.ip().to_string(),
        external_host: Some(options.bind.ip().to_string()),
        port: options.bind.port(),
        grpc_port: options
            .bind
            .port()
            .checked_add(1)
            .ok_or_else(|| ClusterError::Address {
                address: options.bind.to_string(),
                why: "the gRPC service takes the next port, past 65535".into(),
            })?,
        scheduler_host: options.scheduler.ip().to_string(),
        scheduler_port: options.scheduler.port(),
        // One attempt: `wait_for_scheduler` above did the waiting (Ballista's own loop with a
        // timeout never ends).
        scheduler_connect_timeout_seconds: 0,
        vcores: options.concurrent_tasks.max(1),
        work_dir: options.work_dir.clone(),
        executor_heartbeat_interval_seconds: options.heartbeat_seconds.max(1),
        override_physical_codec: Some(Arc::new(GpuCodec::new(planner))),
        ..ExecutorProcessConfig::default()
    };
    start_executor_process(Arc::new(config)).await?;
    Ok(())
}

/// A client session whose queries run on the cluster of the scheduler at `scheduler`;
/// [`ClusterError::Unreachable`] if nothing answers there within a few seconds.
pub fn client_context(scheduler: SocketAddr) -> Result<SessionContext, ClusterError> {
    wait_for_scheduler(scheduler, CLIENT_CONNECT_SECONDS)?;
    let config = SessionConfig::new_with_ballista().with_ballista_adaptive_query_planner(false);
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .build()
        .upgrade_for_ballista(format!("http://{scheduler}"))?;
    Ok(SessionContext::new_with_state(state))
}

/// The plan a client's query ran on the cluster, stage by stage, with each operator's
/// metrics as the executors reported them (Ballista's `EXPLAIN ANALYZE`); `plan` is the
/// client's physical plan of the query after it ran. An error if it is not a cluster query
/// or has not run.
pub async fn executed_plan(
    plan: &Arc<dyn gpugraph_datafusion::datafusion::physical_plan::ExecutionPlan>,
    config: &SessionConfig,
) -> Result<String, ClusterError> {
    use ballista_core::execution_plans::DistributedQueryExec;
    let query = plan
        .downcast_ref::<DistributedQueryExec<LogicalPlanNode>>()
        .ok_or_else(|| {
            gpugraph_datafusion::datafusion::error::DataFusionError::Execution(format!(
                "{} is not a query on a cluster",
                plan.name()
            ))
        })?;
    Ok(query.explain_executed_plan(config, true).await?)
}
