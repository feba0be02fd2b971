//! `gpugraph sql`'s file path on arbitrary bytes: a Parquet or CSV file (the first byte
//! chooses) is checked and registered as the CLI does (`query::register_file`), then queried
//! on the GPU engine (the direct Parquet scan, its host-side page parsing and the GPU
//! aggregate) and on DataFusion's CPU plan. Never a panic or an abort; errors are fine. When
//! both engines answer, they answer alike: the same rows in any order (no query orders them),
//! floating-point cells equal to 12 significant digits.
//!
//! Runs on whatever Vulkan adapter wgpu finds (Mesa lavapipe on a machine without a GPU).
#![no_main]

use std::sync::{Arc, OnceLock};

use gpugraph_command::GpuContext;
use gpugraph_datafusion::datafusion::arrow::util::pretty::pretty_format_batches;
use gpugraph_datafusion::query;
use gpugraph_datafusion::{session_context_on, Engine, SessionOptions};
use libfuzzer_sys::fuzz_target;

fn context() -> &'static Arc<GpuContext> {
    static CTX: OnceLock<Arc<GpuContext>> = OnceLock::new();
    CTX.get_or_init(|| Arc::new(GpuContext::new().expect("a Vulkan adapter (install lavapipe)")))
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| query::runtime().expect("runtime"))
}

/// The seeds' columns: TPC-H lineitem's (generate-table --tpch) and flights'.
const QUERIES: [&str; 4] = [
    "SELECT count(*) FROM t",
    "SELECT count(*), sum(l_quantity), min(l_discount) FROM t WHERE l_quantity < 24",
    "SELECT l_returnflag, count(*), sum(l_extendedprice) FROM t GROUP BY l_returnflag",
    "SELECT carrier, count(*), sum(distance) FROM t GROUP BY carrier",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let ext = if selector & 1 == 0 { "parquet" } else { "csv" };
    let dir = std::env::temp_dir().join(format!("gpugraph-fuzz-sql-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("t.{ext}"));
    std::fs::write(&path, body).expect("writes the input");
    let sql = QUERIES[(selector as usize >> 1) % QUERIES.len()];
    let mut answers = Vec::new();
    for engine in [Engine::Gpu, Engine::Cpu] {
        let options = SessionOptions {
            engine,
            target_partitions: Some(2),
            memory_limit: Some(256 << 20),
            ..SessionOptions::default()
        };
        let ctx = session_context_on(&options, Arc::clone(context()), false);
        let answer = runtime().block_on(async {
            query::register_file(&ctx, "t", &path).await.ok()?;
            let out = query::run_limited(&ctx, sql, Some(100)).await.ok()?;
            pretty_format_batches(&out.batches).ok().map(|t| t.to_string())
        });
        answers.push(answer);
    }
    if let [Some(gpu), Some(cpu)] = &answers[..] {
        assert_eq!(
            normalized(gpu),
            normalized(cpu),
            "{sql}: the engines disagree\nGPU:\n{gpu}\nCPU:\n{cpu}"
        );
    }
});

/// The printed table's rows in sorted order (a GROUP BY without ORDER BY has none), with
/// floating-point cells to 12 significant digits (the engines sum in different orders).
fn normalized(table: &str) -> Vec<String> {
    let mut rows: Vec<String> = table
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(|l| {
            l.split('|')
                .map(|cell| {
                    let c = cell.trim();
                    match c.parse::<f64>() {
                        Ok(v) if c.contains(['.', 'e', 'E']) => format!("{v:.11e}"),
                        _ => c.to_string(),
                    }
                })
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    rows.sort();
    rows
}
