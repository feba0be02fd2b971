//! `gpugraph scheduler` and `gpugraph executor`: an Apache Ballista cluster whose executors
//! run the GPU operators ([`gpugraph_cluster`]); `gpugraph sql --cluster HOST:PORT` submits
//! to it. Both bind 127.0.0.1 unless told otherwise. `docs/cluster.md` says how to start one.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use clap::Args;
use gpugraph_cluster::{
    cpu_planner, device_planner, parse_address, run_executor, serve_scheduler, ExecutorOptions,
    SchedulerOptions,
};
use gpugraph_datafusion::{query, SessionOptions};

/// `gpugraph scheduler`.
#[derive(Args, Debug)]
pub struct SchedulerArgs {
    /// The address the scheduler listens on (only this machine by default).
    #[arg(long, value_name = "HOST", default_value = "127.0.0.1")]
    pub bind_host: String,
    /// The scheduler's port (0: a free one, printed on stdout).
    #[arg(long, value_name = "PORT")]
    pub port: u16,
    /// Seconds without a heartbeat after which an executor counts as dead and its tasks
    /// run elsewhere.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub executor_timeout: u64,
    /// Plan without a GPU: no GPU units, every executor runs DataFusion's CPU plan.
    #[arg(long)]
    pub cpu: bool,
}

/// `gpugraph executor`.
#[derive(Args, Debug)]
pub struct ExecutorArgs {
    /// The scheduler's HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub scheduler: String,
    /// The address the executor listens on for shuffle reads (only this machine by
    /// default; other executors and the client must reach it).
    #[arg(long, value_name = "HOST", default_value = "127.0.0.1")]
    pub bind_host: String,
    /// The executor's Arrow Flight port; its gRPC service takes the next one.
    #[arg(long, value_name = "PORT", default_value_t = 50051)]
    pub port: u16,
    /// The adapter (a number from `gpugraph info`) this executor runs GPU units on; one
    /// executor per GPU. Default: the best adapter.
    #[arg(long, value_name = "N")]
    pub device: Option<usize>,
    /// Run DataFusion's CPU plan only, even where a GPU is present.
    #[arg(long, conflicts_with = "device")]
    pub cpu: bool,
    /// Tasks the executor runs at once.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub concurrent_tasks: usize,
    /// Seconds between heartbeats to the scheduler (keep it below its --executor-timeout).
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub heartbeat: u64,
    /// Directory for shuffle files (default: a temporary directory).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<String>,
    /// Seconds to wait for the scheduler to accept connections (it may start after the
    /// executor) before failing with "unreachable".
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub connect_timeout: u64,
}

/// `HOST` and `PORT` as one socket address.
fn bind_address(host: &str, port: u16) -> Result<SocketAddr> {
    Ok(parse_address(&format!("{host}:{port}"))?)
}

/// Serves a scheduler until the process is stopped.
pub fn scheduler(args: &SchedulerArgs) -> Result<()> {
    let address = bind_address(&args.bind_host, args.port)?;
    let options = SessionOptions::default();
    let planner = if args.cpu {
        cpu_planner(&options)
    } else {
        let (planner, why) = device_planner(None, &options);
        if let Some(why) = why {
            eprintln!("scheduler: no GPU to plan with ({why}); every executor runs the CPU plan");
        }
        planner
    };
    let runtime = query::runtime().context("starting the scheduler's runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("binding the scheduler to {address}"))?;
        let local = listener.local_addr()?;
        // The address on stdout (flushed) for whoever started it with port 0.
        println!("scheduler: listening on {local}");
        use std::io::Write;
        std::io::stdout().flush()?;
        let options = SchedulerOptions {
            executor_timeout_seconds: args.executor_timeout.max(1),
            ..SchedulerOptions::default()
        };
        serve_scheduler(listener, planner, &options)
            .await
            .context("the scheduler stopped")
    })
}

/// Runs an executor until the process is stopped or the scheduler stops it.
pub fn executor(args: &ExecutorArgs) -> Result<()> {
    let options = ExecutorOptions {
        scheduler: parse_address(&args.scheduler).context("--scheduler")?,
        bind: bind_address(&args.bind_host, args.port)?,
        concurrent_tasks: args.concurrent_tasks,
        heartbeat_seconds: args.heartbeat,
        work_dir: args.work_dir.clone(),
        connect_timeout_seconds: args.connect_timeout,
    };
    let session = SessionOptions::default();
    let planner = if args.cpu {
        cpu_planner(&session)
    } else {
        let (planner, why) = device_planner(args.device, &session);
        if let Some(why) = why {
            eprintln!("executor: no GPU ({why}); running DataFusion's CPU plan");
        }
        planner
    };
    eprintln!(
        "executor: {} on {}, scheduler {}",
        if planner.on_gpu() { "GPU" } else { "CPU" },
        options.bind,
        options.scheduler
    );
    let runtime = query::runtime().context("starting the executor's runtime")?;
    runtime
        .block_on(run_executor(&options, planner))
        .context("the executor stopped")
}

/// A client session on the cluster of the scheduler at `address` (`gpugraph sql --cluster`).
pub fn client(address: &str) -> Result<gpugraph_datafusion::datafusion::prelude::SessionContext> {
    let scheduler = parse_address(address).context("--cluster")?;
    Ok(gpugraph_cluster::client_context(scheduler)?)
}
