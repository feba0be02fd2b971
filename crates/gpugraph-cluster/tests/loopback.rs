//! A Ballista cluster on loopback (CI: lavapipe, 2 cores): a scheduler and two executors,
//! each its own process on 127.0.0.1 (free ports). TPC-H SF 0.01 Q1, Q3, Q6 and Q12 from
//! Parquet submitted through the cluster client equal DataFusion's single-process answer,
//! and the executed plan's metrics (which the executors report) show that the GPU units ran
//! GPU execs there, none of them on the CPU. An executor killed (SIGKILL) while it runs
//! Q3's task: the query answers correctly (the task retried on another executor) or fails
//! with Ballista's error, never with a wrong answer.
//!
//! The scheduler and executor processes are this test binary started again with
//! `GPUGRAPH_CLUSTER_NODE` set (`harness = false`: `main` dispatches), so the test needs no
//! other binary; `gpugraph scheduler` / `gpugraph executor` run the same functions.

mod common;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpugraph_cluster::{
    device_planner, executed_plan, parse_address, run_executor, serve_scheduler, ExecutorOptions,
    SchedulerOptions,
};
use gpugraph_datafusion::datafusion::arrow::util::pretty::pretty_format_batches;
use gpugraph_datafusion::datafusion::physical_plan::collect;
use gpugraph_datafusion::datafusion::prelude::SessionContext;
use gpugraph_datafusion::tpch::{Q1, Q12, Q3, Q6};
use gpugraph_datafusion::{session_context, Engine, SessionOptions};

const NODE: &str = "GPUGRAPH_CLUSTER_NODE";

/// The scheduler's `--executor-timeout`: a killed executor's tasks move after about this.
const EXECUTOR_TIMEOUT_SECONDS: u64 = 3;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(64 << 20)
        .enable_all()
        .build()
        .expect("a runtime");
    match std::env::var(NODE) {
        Ok(role) => runtime.block_on(node(&role)),
        Err(_) => {
            // `cargo test -- FILTER` and `--list` pass arguments; this binary has one test.
            if std::env::args().any(|a| a == "--list") {
                println!("loopback: test");
                return;
            }
            runtime.block_on(tpch_through_ballista_on_gpu_executors());
            println!("test loopback ... ok");
        }
    }
}

/// The body of a node process: `scheduler` or `executor:SCHEDULER:PORT`.
async fn node(role: &str) {
    let options = SessionOptions::default();
    let (planner, why) = device_planner(None, &options);
    assert!(why.is_none(), "{role}: no GPU: {why:?}");
    if role == "scheduler" {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        println!(
            "scheduler: listening on {}",
            listener.local_addr().expect("address")
        );
        let options = SchedulerOptions {
            executor_timeout_seconds: EXECUTOR_TIMEOUT_SECONDS,
            ..SchedulerOptions::default()
        };
        serve_scheduler(listener, planner, &options)
            .await
            .expect("the scheduler runs");
        return;
    }
    let (scheduler, port) = role
        .strip_prefix("executor:")
        .and_then(|r| r.rsplit_once(':'))
        .expect("executor:SCHEDULER:PORT");
    let options = ExecutorOptions {
        scheduler: parse_address(scheduler).expect("the scheduler's address"),
        bind: parse_address(&format!("127.0.0.1:{port}")).expect("an address"),
        concurrent_tasks: 1,
        heartbeat_seconds: 1,
        work_dir: None,
        connect_timeout_seconds: 30,
    };
    run_executor(&options, planner)
        .await
        .expect("the executor runs");
}

/// A child process killed when the test ends, however it ends.
struct Node(Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(role: &str, stdout: Stdio) -> Child {
    Command::new(std::env::current_exe().expect("this test's binary"))
        .env(NODE, role)
        .stdin(Stdio::null())
        .stdout(stdout)
        .spawn()
        .expect("starts a node")
}

/// A port `p` with `p + 1` free too (an executor's Flight and gRPC services).
fn free_port_pair() -> u16 {
    for _ in 0..100 {
        let first = TcpListener::bind("127.0.0.1:0").expect("binds");
        let port = first.local_addr().expect("address").port();
        if port < u16::MAX && TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
    panic!("no two free adjacent ports on 127.0.0.1");
}

/// Starts the scheduler on a free port: the process and its address.
fn scheduler() -> (Node, SocketAddr) {
    let mut child = start("scheduler", Stdio::piped());
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reads the scheduler's address");
    let address = line
        .trim()
        .strip_prefix("scheduler: listening on ")
        .unwrap_or_else(|| panic!("unexpected scheduler output: {line:?}"))
        .parse()
        .expect("an address");
    (Node(child), address)
}

fn executor(scheduler: SocketAddr) -> Node {
    let role = format!("executor:{scheduler}:{}", free_port_pair());
    Node(start(&role, Stdio::inherit()))
}

/// The single-process answer of `sql` (DataFusion's CPU plan).
async fn reference(dir: &Path, sql: &str) -> String {
    let options = SessionOptions {
        engine: Engine::Cpu,
        ..SessionOptions::default()
    };
    let ctx = session_context(&options).expect("a CPU session");
    common::register(&ctx, dir).await;
    let batches = ctx
        .sql(sql)
        .await
        .expect("plans")
        .collect()
        .await
        .expect("runs");
    pretty_format_batches(&batches)
        .expect("formats")
        .to_string()
}

/// The `NAME=N` metric of the `GpuUnitExec` lines of an executed plan, summed, from the
/// metrics the executors reported (not the scheduler's description of the operator).
fn unit_metric(executed: &str, name: &str) -> Option<usize> {
    let mut total = None;
    for line in executed.lines().filter(|l| l.contains("GpuUnitExec")) {
        let metrics = &line[line.rfind(", metrics=[")?..];
        let at = metrics.find(&format!("{name}="))? + name.len() + 1;
        let digits: String = metrics[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        *total.get_or_insert(0) += digits.parse::<usize>().ok()?;
    }
    total
}

async fn run(ctx: &SessionContext, sql: &str) -> (String, String) {
    let plan = ctx
        .sql(sql)
        .await
        .expect("plans")
        .create_physical_plan()
        .await
        .expect("plans");
    let batches = collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .expect("runs");
    let got = pretty_format_batches(&batches)
        .expect("formats")
        .to_string();
    let executed = executed_plan(&plan, &ctx.copied_config())
        .await
        .expect("the executed plan");
    (got, executed)
}

async fn tpch_through_ballista_on_gpu_executors() {
    let began = Instant::now();
    let (_scheduler, address) = scheduler();
    let mut first = Some(executor(address));
    let second = executor(address);
    // The tables while the executors start and register.
    let dir = tempfile::tempdir().expect("temp dir");
    common::write_tpch(dir.path());
    let ctx = gpugraph_cluster::client_context(address).expect("a client session");
    common::register(&ctx, dir.path()).await;

    for (name, sql) in [("Q1", Q1), ("Q3", Q3), ("Q6", Q6), ("Q12", Q12)] {
        let (got, executed) = run(&ctx, sql).await;
        assert_eq!(got, reference(dir.path(), sql).await, "{name}");
        assert!(
            unit_metric(&executed, "gpu_execs").is_some_and(|n| n > 0),
            "{name}: no GPU exec ran on an executor:\n{executed}"
        );
        assert_eq!(
            unit_metric(&executed, "gpu_fallbacks"),
            Some(0),
            "{name}: a GPU exec fell back:\n{executed}"
        );
        eprintln!("loopback: {name} ok ({:?})", began.elapsed());
    }

    // The executor holding Q3's task killed while it runs: one started after the kill
    // answers it, or the job fails with Ballista's error; never a wrong answer. The second
    // executor goes first and the scheduler forgets it, so the first, the only one left,
    // takes the task.
    drop(second);
    tokio::time::sleep(Duration::from_secs(2 * EXECUTOR_TIMEOUT_SECONDS + 1)).await;
    let want = reference(dir.path(), Q3).await;
    let started = Instant::now();
    let query = {
        let ctx = ctx.clone();
        tokio::spawn(async move { ctx.sql(Q3).await?.collect().await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !query.is_finished(),
        "Q3 ended before the kill: nothing was killed mid-query"
    );
    drop(first.take());
    let killed_at = started.elapsed();
    let _third = executor(address);
    let outcome = tokio::time::timeout(Duration::from_secs(60), query)
        .await
        .expect("the query ends within a minute of the kill")
        .expect("the query task");
    eprintln!(
        "loopback: executor killed {killed_at:?} into Q3, which ended after {:?}",
        started.elapsed()
    );
    match outcome {
        Ok(batches) => {
            let got = pretty_format_batches(&batches)
                .expect("formats")
                .to_string();
            assert_eq!(got, want, "Q3 with its executor killed");
        }
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.contains("Job") || text.contains("executor") || text.contains("Ballista"),
                "not Ballista's error: {text}"
            );
            eprintln!("loopback: Q3 failed by name after the kill: {text}");
        }
    }
    // The third executor answers on its own.
    let (got, _) = run(&ctx, Q6).await;
    assert_eq!(got, reference(dir.path(), Q6).await, "Q6 after the kill");
    eprintln!("loopback: done in {:?}", began.elapsed());
}
