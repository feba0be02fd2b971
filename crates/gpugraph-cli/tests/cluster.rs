//! `gpugraph scheduler`, `gpugraph executor` and `gpugraph sql --cluster` end to end, each
//! its own `gpugraph` process on loopback (CI: lavapipe, 2 cores): a scheduler on a free port
//! (bound to 127.0.0.1 unless told otherwise) and two executors, TPC-H SF 0.01 Q1 and Q6 over
//! `generate-table`'s lineitem through the cluster equal to the single-process answers (GPU and
//! `--cpu`), a relative `--table` path made absolute for the executors; and the named errors:
//! malformed addresses, an unreachable scheduler (client and executor, within their time
//! limits, never a hang), a port already taken.
//!
//! `gpugraph-cluster`'s own tests check the rest through the library: the executed plan's
//! metrics (GPU execs ran on the executors), an executor killed mid-query, the codec.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use gpugraph_datafusion::tpch::{Q1, Q6};

/// A child process killed when the test ends, however it ends.
struct Node(Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    listener.local_addr().expect("address").port()
}

/// `gpugraph scheduler --port 0` (default bind): the process and the address it printed.
fn scheduler(t: &TempDir) -> (Node, String) {
    let mut child = Command::new(binary())
        .args(["scheduler", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(t.path("scheduler.err")).expect("creates"))
        .spawn()
        .expect("starts gpugraph scheduler");
    let stdout = child.stdout.take().expect("stdout");
    let node = Node(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reads the scheduler's address");
    let address = line
        .trim()
        .strip_prefix("scheduler: listening on ")
        .unwrap_or_else(|| {
            panic!(
                "unexpected scheduler output {line:?}; stderr:\n{}",
                std::fs::read_to_string(t.path("scheduler.err")).unwrap_or_default()
            )
        })
        .to_string();
    assert!(
        address.starts_with("127.0.0.1:"),
        "the scheduler binds 127.0.0.1 by default, not {address}"
    );
    (node, address)
}

/// `gpugraph executor` number `n` on a free port pair, once its task service accepts
/// connections (it binds that after registering with the scheduler).
fn executor(t: &TempDir, scheduler: &str, n: usize) -> Node {
    let port = free_port_pair();
    let err = t.path(&format!("executor{n}.err"));
    let child = Command::new(binary())
        .args(["executor", "--scheduler", scheduler, "--heartbeat", "1"])
        .args(["--port", &port.to_string(), "--concurrent-tasks", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("creates"))
        .spawn()
        .expect("starts gpugraph executor");
    let mut node = Node(child);
    let began = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port + 1)).is_err() {
        let log = std::fs::read_to_string(&err).unwrap_or_default();
        if let Some(status) = node.0.try_wait().expect("polls") {
            panic!("executor {n} exited with {status}:\n{log}");
        }
        assert!(
            began.elapsed() < Duration::from_secs(120),
            "executor {n} not serving after 2 minutes:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(
        log.contains(&format!("executor: GPU on 127.0.0.1:{port}")),
        "executor {n} should run GPU units on lavapipe:\n{log}"
    );
    node
}

/// `gpugraph` with `args` in `dir`; stdout, after checking it succeeded.
fn run_in(dir: &str, args: &[&str]) -> String {
    let out = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("could not start gpugraph {args:?}: {e}"));
    assert_success(args, &out);
    text(&out.stdout)
}

#[test]
fn tpch_q1_q6_through_scheduler_and_two_executors() {
    let t = TempDir::new("cluster-tpch");
    let path = t.path("lineitem.parquet");
    let args = [
        "generate-table",
        "--tpch",
        "lineitem",
        "--scale",
        "0.01",
        "--out",
        &path,
    ];
    assert_success(&args, &gpugraph(&args));

    let (_scheduler, address) = scheduler(&t);
    let _executors = [executor(&t, &address, 1), executor(&t, &address, 2)];

    let table = format!("lineitem={path}");
    for (name, sql) in [("Q1", Q1), ("Q6", Q6)] {
        let single = run_in(t.dir(), &["sql", "--table", &table, sql]);
        let cpu = run_in(t.dir(), &["sql", "--cpu", "--table", &table, sql]);
        assert_eq!(
            single, cpu,
            "{name}: GPU and CPU single-process answers differ"
        );
        // A relative path: the client makes it absolute, so the executors (whose working
        // directory differs) open the same file.
        let relative = "lineitem=lineitem.parquet";
        let cluster = run_in(
            t.dir(),
            &["sql", "--cluster", &address, "--table", relative, sql],
        );
        assert_eq!(cluster, single, "{name} through the cluster");
        assert!(cluster.lines().count() > 4, "{name}: no rows?\n{cluster}");
    }
}

/// A failing run within `limit`: its stderr.
fn fails_within(args: &[&str], limit: Duration) -> String {
    let (code, stderr, took) = run_within(args, limit);
    assert!(
        code.is_some_and(|c| c != 0),
        "gpugraph {args:?} should fail, exited {code:?}:\n{stderr}"
    );
    eprintln!("gpugraph {args:?}: failed in {took:?}");
    stderr
}

#[test]
fn bad_and_unreachable_addresses_are_named_errors() {
    let t = TempDir::new("cluster-errors");
    let table = format!("lineitem={}", t.path("none.parquet"));
    let limit = Duration::from_secs(60);
    for bad in ["127.0.0.1", "127.0.0.1:port", ":::"] {
        let err = fails_within(&["sql", "--cluster", bad, "--table", &table, Q6], limit);
        assert!(
            err.contains("--cluster") && err.contains(bad),
            "--cluster {bad}: {err}"
        );
        let err = fails_within(&["executor", "--scheduler", bad], limit);
        assert!(
            err.contains("--scheduler") && err.contains(bad),
            "--scheduler {bad}: {err}"
        );
    }
    let nobody = format!("127.0.0.1:{}", closed_port());
    let err = fails_within(&["sql", "--cluster", &nobody, "--table", &table, Q6], limit);
    assert!(
        err.contains("unreachable") && err.contains(&nobody),
        "{err}"
    );
    let port = free_port_pair().to_string();
    let err = fails_within(
        &[
            "executor",
            "--scheduler",
            &nobody,
            "--port",
            &port,
            "--connect-timeout",
            "2",
        ],
        limit,
    );
    assert!(
        err.contains("unreachable") && err.contains(&nobody),
        "{err}"
    );
    let err = fails_within(&["executor", "--scheduler", &nobody, "--port", "0"], limit);
    assert!(err.contains("fixed port"), "{err}");
    let err = fails_within(
        &["scheduler", "--bind-host", "not an address", "--port", "1"],
        limit,
    );
    assert!(err.contains("not an address"), "{err}");
    // A port already taken.
    let taken = TcpListener::bind("127.0.0.1:0").expect("binds");
    let port = taken.local_addr().expect("address").port().to_string();
    let err = fails_within(&["scheduler", "--port", &port], limit);
    assert!(err.contains("binding the scheduler"), "{err}");
}
