//! `bench tpch`: TPC-H Q1 and Q6 over lineitem, Q12 over lineitem and orders, Q14 over
//! lineitem and part, Q3 and Q10 over lineitem, orders, customer (and nation), Q5 over those,
//! supplier and region, `topk` (not TPC-H: an `ORDER BY … LIMIT 10` over lineitem, the
//! GPU top-k) and `distinct` (not TPC-H: three COUNT(DISTINCT)s over Q1's groups)
//! (tpchgen-arrow at `--scale`) through
//! `gpugraph-datafusion`, GPU plans against DataFusion's CPU operators in the same process.
//!
//! Rows per query: `gpu-warm` (in-memory table, GPU column cache on: after one warm-up run the
//! columns are GPU-resident, so a run is the kernel, the readback and DataFusion's final
//! aggregate), `gpu-host` (in-memory table, cache off: every run converts and uploads),
//! `gpu-parquet` (from a Parquet file: decode, convert, upload, aggregate), and the peers
//! `cpu-memory` / `cpu-parquet` (DataFusion's CPU plan on the same tables). Every GPU answer
//! is compared with the CPU answer before timing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use gpugraph_command::GpuContext;
use gpugraph_datafusion::datafusion::arrow::compute::concat_batches;
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::arrow::util::pretty::pretty_format_batches;
use gpugraph_datafusion::datafusion::datasource::MemTable;
use gpugraph_datafusion::datafusion::parquet::arrow::ArrowWriter;
use gpugraph_datafusion::datafusion::physical_plan::collect;
use gpugraph_datafusion::datafusion::prelude::{ParquetReadOptions, SessionContext};
pub use gpugraph_datafusion::tpch::{DISTINCT, Q1, Q10, Q12, Q14, Q3, Q5, Q6, TOPK};
use gpugraph_datafusion::{query, session_context_on, Engine, SessionOptions};
use serde::Serialize;

use crate::analyze::tpch::{check_scale, generate, TpchTable};

use super::report::{self, BenchJson, Summary, Table};
use super::BenchOptions;

/// The queries `bench tpch` knows: name, text, the tables besides lineitem it joins.
const QUERIES: [(&str, &str, &[&str]); 9] = [
    ("q1", Q1, &[]),
    ("q6", Q6, &[]),
    ("q12", Q12, &["orders"]),
    ("q14", Q14, &["part"]),
    ("q3", Q3, &["orders", "customer"]),
    ("q10", Q10, &["orders", "customer", "nation"]),
    (
        "q5",
        Q5,
        &["orders", "customer", "supplier", "nation", "region"],
    ),
    ("topk", TOPK, &[]),
    ("distinct", DISTINCT, &[]),
];

/// Arguments of `bench tpch`.
#[derive(Args, Clone, Debug)]
pub struct TpchBenchArgs {
    /// TPC-H scale factor of lineitem (1 = 6M rows).
    #[arg(long, default_value_t = 0.01)]
    pub scale: f64,
    /// Queries, comma-separated: q1, q6, q12, q14, q3, q10, q5, topk (not TPC-H: the ten
    /// costliest line items from 1995 on, a GPU top-k) and distinct (not TPC-H: Q1's groups
    /// with three COUNT(DISTINCT)s).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "q1,q6,q12,q14,q3,q10,q5,topk,distinct"
    )]
    pub query: Vec<String>,
    /// Read lineitem from this Parquet file instead of writing one from the generated table.
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<PathBuf>,
    /// Read part (Q14) from this Parquet file instead of writing one from the generated table.
    #[arg(long, value_name = "FILE")]
    pub part_parquet: Option<PathBuf>,
    /// Read orders (Q12, Q3, Q10) from this Parquet file instead of writing one from the
    /// generated table.
    #[arg(long, value_name = "FILE")]
    pub orders_parquet: Option<PathBuf>,
    /// Read customer (Q3, Q10) from this Parquet file instead of writing one from the
    /// generated table.
    #[arg(long, value_name = "FILE")]
    pub customer_parquet: Option<PathBuf>,
    /// DataFusion target partitions (CPU threads); default: the number of cores.
    #[arg(long)]
    pub partitions: Option<usize>,
    /// Variants to time, comma-separated (gpu-warm, gpu-host, gpu-parquet, cpu-memory,
    /// cpu-parquet); default: all. A GPU variant's `x cpu` needs its CPU peer in the list.
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<String>,
    #[command(flatten)]
    pub options: BenchOptions,
}

/// One measured row.
#[derive(Clone, Debug, Serialize)]
pub struct TpchRow {
    /// Query.
    pub query: String,
    /// Variant (`gpu-warm`, `gpu-host`, `gpu-parquet`, `cpu-memory`, `cpu-parquet`).
    pub variant: String,
    /// lineitem rows.
    pub rows: u64,
    /// Milliseconds per run.
    pub ms: Summary,
    /// Of which planning (parse, optimize, physical planning), milliseconds per run.
    pub plan_ms: Summary,
    /// The GPU aggregate's time on the GPU's clock, milliseconds per run (GPU variants where
    /// the device has timestamp queries).
    pub gpu_ms: Option<Summary>,
    /// Rows per second at the median.
    pub rows_per_s: f64,
    /// The same source's CPU median over this median (> 1: the GPU is faster).
    pub speedup_vs_cpu: Option<f64>,
    /// Per-operator times of one more run (GPU variants): DataFusion's metrics, with the GPU
    /// aggregate's `gpu_time` from GPU timestamps.
    pub operators: Vec<OperatorRow>,
}

/// One operator's time metric in one run.
#[derive(Clone, Debug, Serialize)]
pub struct OperatorRow {
    /// The operator.
    pub operator: String,
    /// The metric (`elapsed_compute`, `gpu_time`, `upload_time`, ...).
    pub metric: String,
    /// Milliseconds.
    pub ms: f64,
}

/// Runs `sql` once more and reads every operator's time metrics.
async fn operators(ctx: &SessionContext, sql: &str) -> Result<Vec<OperatorRow>> {
    let (plan, _) = query::plan(ctx, sql).await?;
    collect(Arc::clone(&plan), ctx.task_ctx()).await?;
    Ok(query::operator_times(plan.as_ref())
        .into_iter()
        .flat_map(|op| {
            op.times.into_iter().map(move |(metric, t)| OperatorRow {
                operator: op.operator.clone(),
                metric,
                ms: t.as_secs_f64() * 1e3,
            })
        })
        .collect())
}

/// Rows per in-memory batch of the benched table.
const MEMORY_BATCH_ROWS: usize = 1 << 20;

/// A TPC-H table at `scale`, in memory: the same generator and part order as
/// `generate-table --tpch`, in batches of [`MEMORY_BATCH_ROWS`] rows.
///
/// Why not the generator's 8,192-row batches: DataFusion's physical optimizer computes an
/// in-memory table's statistics over every column of every batch, several times per query;
/// at SF 10 (7,300 batches) that made planning alone cost 6–9 ms on the H200's host, more
/// than TPC-H Q6's whole GPU run. Both engines plan over the same batches.
fn table(which: TpchTable, scale: f64) -> Result<Vec<RecordBatch>> {
    check_scale(scale)?;
    let mut out = Vec::new();
    let mut pending: Vec<RecordBatch> = Vec::new();
    let mut rows = 0;
    let flush = |pending: &mut Vec<RecordBatch>, out: &mut Vec<RecordBatch>| -> Result<()> {
        if let Some(first) = pending.first() {
            out.push(concat_batches(&first.schema(), pending.iter())?);
            pending.clear();
        }
        Ok(())
    };
    generate(which, scale, &mut |batch| {
        rows += batch.num_rows();
        pending.push(batch);
        if rows >= MEMORY_BATCH_ROWS {
            flush(&mut pending, &mut out)?;
            rows = 0;
        }
        Ok(())
    })?;
    flush(&mut pending, &mut out)?;
    Ok(out)
}

async fn answer(ctx: &SessionContext, sql: &str) -> Result<String> {
    let batches = ctx.sql(sql).await?.collect().await?;
    Ok(pretty_format_batches(&batches)?.to_string())
}

/// Per-run times of one variant: the whole query, and its parts.
struct Samples {
    /// Plan and execute, as a user waits for it.
    total: Vec<f64>,
    /// Parse, optimize and physical planning.
    plan: Vec<f64>,
    /// The GPU aggregate's dispatches on the GPU's clock (GPU variants with timestamps).
    gpu: Vec<f64>,
}

/// The sum of metric `name` over the operators of an executed plan, in milliseconds.
fn metric_ms(
    plan: &dyn gpugraph_datafusion::datafusion::physical_plan::ExecutionPlan,
    name: &str,
) -> Option<f64> {
    let times: Vec<f64> = query::operator_times(plan)
        .into_iter()
        .flat_map(|op| op.times)
        .filter(|(metric, _)| metric == name)
        .map(|(_, t)| t.as_secs_f64() * 1e3)
        .collect();
    (!times.is_empty()).then(|| times.iter().sum())
}

/// Untimed runs before a variant's samples: at least [`WARMUP_RUNS`], and until
/// [`WARMUP_MS`] have passed. A GPU left idle while the CPU engines ran drops its clocks (the
/// H200 idles at a sixth of its boost clock, device/KINDS.md) and a few short runs do not bring
/// them back; the CPU variants' caches and thread pools warm up the same way.
const WARMUP_MS: f64 = 500.0;
/// See [`WARMUP_MS`].
const WARMUP_RUNS: u32 = 2;
/// Most untimed runs, whatever [`WARMUP_MS`] says.
const WARMUP_MAX_RUNS: u32 = 200;

async fn warm_up(ctx: &SessionContext, sql: &str) -> Result<()> {
    let start = Instant::now();
    let mut runs = 0;
    while runs < WARMUP_MAX_RUNS
        && (runs < WARMUP_RUNS || start.elapsed().as_secs_f64() * 1e3 < WARMUP_MS)
    {
        let (plan, _) = query::plan(ctx, sql).await?;
        collect(plan, ctx.task_ctx()).await?;
        runs += 1;
    }
    Ok(())
}

async fn time(ctx: &SessionContext, sql: &str, repeat: u32) -> Result<Samples> {
    warm_up(ctx, sql).await?;
    let mut samples = Samples {
        total: Vec::new(),
        plan: Vec::new(),
        gpu: Vec::new(),
    };
    for _ in 0..repeat {
        let start = Instant::now();
        let (plan, planning) = query::plan(ctx, sql).await?;
        collect(Arc::clone(&plan), ctx.task_ctx()).await?;
        samples.total.push(start.elapsed().as_secs_f64() * 1e3);
        samples.plan.push(planning.as_secs_f64() * 1e3);
        if let Some(gpu) = metric_ms(plan.as_ref(), "gpu_time") {
            samples.gpu.push(gpu);
        }
    }
    Ok(samples)
}

/// Runs the bench.
pub fn run(args: &TpchBenchArgs) -> Result<()> {
    let runtime = gpugraph_datafusion::query::runtime().context("a tokio runtime")?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: &TpchBenchArgs) -> Result<()> {
    const VARIANTS: [&str; 5] = [
        "gpu-warm",
        "gpu-host",
        "gpu-parquet",
        "cpu-memory",
        "cpu-parquet",
    ];
    if let Some(v) = args
        .variants
        .iter()
        .find(|v| !VARIANTS.contains(&v.as_str()))
    {
        bail!("unknown variant {v} ({})", VARIANTS.join(", "));
    }
    let gpu = Arc::new(GpuContext::new().context("a GPU adapter")?);
    report::progress(format!("generating lineitem at scale {}", args.scale));
    let batches = table(TpchTable::Lineitem, args.scale)?;
    let Some(first) = batches.first() else {
        bail!("scale {} generates no lineitem rows", args.scale);
    };
    let schema = first.schema();
    let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
    // The dimension tables the queries join, generated and written only when asked for.
    let mut sqls = Vec::new();
    for q in &args.query {
        let known = QUERIES
            .iter()
            .find(|(name, ..)| name.eq_ignore_ascii_case(q));
        let Some(&(name, sql, tables)) = known else {
            let names: Vec<&str> = QUERIES.iter().map(|q| q.0).collect();
            bail!("unknown query {q} ({})", names.join(", "));
        };
        sqls.push((name, sql, tables));
    }
    let wanted = |t: &str| sqls.iter().any(|(_, _, tables)| tables.contains(&t));
    let dimensions = [
        (TpchTable::Part, "part", &args.part_parquet),
        (TpchTable::Orders, "orders", &args.orders_parquet),
        (TpchTable::Customer, "customer", &args.customer_parquet),
        (TpchTable::Supplier, "supplier", &None),
        (TpchTable::Nation, "nation", &None),
        (TpchTable::Region, "region", &None),
    ];
    let mut others = Vec::new();
    for (which, name, _) in &dimensions {
        if wanted(name) {
            report::progress(format!("generating {name} at scale {}", args.scale));
            let batches = table(*which, args.scale)?;
            if batches.is_empty() {
                bail!("scale {} generates no {name} rows", args.scale);
            }
            others.push((*name, batches));
        }
    }
    let dir = tempfile::tempdir().context("a temporary directory")?;
    let write = |name: &str, given: &Option<PathBuf>, batches: &[RecordBatch]| -> Result<PathBuf> {
        if let Some(p) = given {
            return Ok(p.clone());
        }
        let path = dir.path().join(format!("{name}.parquet"));
        report::progress(format!("writing {}", path.display()));
        let file = std::fs::File::create(&path)?;
        let mut writer = ArrowWriter::try_new(file, batches[0].schema(), None)?;
        for b in batches {
            writer.write(b)?;
        }
        writer.close()?;
        Ok(path)
    };
    let mut files = vec![("lineitem", write("lineitem", &args.parquet, &batches)?)];
    for (name, batches) in &others {
        let given = dimensions
            .iter()
            .find(|d| d.1 == *name)
            .and_then(|d| d.2.clone());
        files.push((name, write(name, &given, batches)?));
    }
    let options = |engine| SessionOptions {
        engine,
        target_partitions: args.partitions,
        ..SessionOptions::default()
    };
    let memory_session = |engine, cache| -> Result<SessionContext> {
        let ctx = session_context_on(&options(engine), Arc::clone(&gpu), cache);
        let table = MemTable::try_new(Arc::clone(&schema), vec![batches.clone()])?;
        ctx.register_table("lineitem", Arc::new(table))?;
        for (name, batches) in &others {
            let table = MemTable::try_new(batches[0].schema(), vec![batches.clone()])?;
            ctx.register_table(*name, Arc::new(table))?;
        }
        Ok(ctx)
    };
    let warm = memory_session(Engine::Gpu, true)?;
    let host = memory_session(Engine::Gpu, false)?;
    let cpu_memory = memory_session(Engine::Cpu, false)?;
    let gpu_parquet = session_context_on(&options(Engine::Gpu), Arc::clone(&gpu), false);
    let cpu_parquet = session_context_on(&options(Engine::Cpu), Arc::clone(&gpu), false);
    for (name, path) in &files {
        let path = path.to_str().context("a UTF-8 Parquet path")?;
        for ctx in [&gpu_parquet, &cpu_parquet] {
            ctx.register_parquet(*name, path, ParquetReadOptions::default())
                .await?;
        }
    }
    let mut table = Table::new([
        "query", "variant", "ms", "plan ms", "GPU ms", "rows/s", "x cpu",
    ]);
    let mut out = Vec::new();
    let mut breakdown = Vec::new();
    for &(q, sql, _) in &sqls {
        let expected = answer(&cpu_memory, sql).await?;
        for (name, ctx) in [
            ("gpu-warm", &warm),
            ("gpu-host", &host),
            ("gpu-parquet", &gpu_parquet),
        ] {
            let got = answer(ctx, sql).await?;
            if got != expected {
                bail!("{q} {name}: the GPU answer differs from the CPU's\nGPU:\n{got}\nCPU:\n{expected}");
            }
        }
        let variants = [
            ("cpu-memory", &cpu_memory, None),
            ("cpu-parquet", &cpu_parquet, None),
            ("gpu-warm", &warm, Some(0)),
            ("gpu-host", &host, Some(0)),
            ("gpu-parquet", &gpu_parquet, Some(1)),
        ];
        let mut cpu_medians = [f64::NAN; 2];
        for (name, ctx, peer) in variants {
            if !args.variants.is_empty() && !args.variants.iter().any(|v| v == name) {
                continue;
            }
            report::progress(format!("{q} {name}"));
            let samples = time(ctx, sql, args.options.repeat).await?;
            let ms = Summary::of(&samples.total);
            let plan_ms = Summary::of(&samples.plan);
            let gpu_ms = (!samples.gpu.is_empty()).then(|| Summary::of(&samples.gpu));
            if name == "cpu-memory" {
                cpu_medians[0] = ms.median;
            } else if name == "cpu-parquet" {
                cpu_medians[1] = ms.median;
            }
            let speedup = peer
                .map(|p: usize| cpu_medians[p] / ms.median)
                .filter(|s| s.is_finite());
            let rows_per_s = rows as f64 / (ms.median / 1e3);
            let operators = if peer.is_some() {
                operators(ctx, sql).await?
            } else {
                Vec::new()
            };
            if !operators.is_empty() {
                // The table shows what took time; the JSON keeps every metric.
                let line: Vec<String> = operators
                    .iter()
                    .filter(|o| o.ms >= 0.05)
                    .map(|o| format!("{}.{} {:.2}", o.operator, o.metric, o.ms))
                    .collect();
                breakdown.push(format!("{q} {name}: {}", line.join(", ")));
            }
            table.row([
                q.to_string(),
                name.to_string(),
                ms.show(2),
                format!("{:.2}", plan_ms.median),
                gpu_ms
                    .as_ref()
                    .map_or(String::new(), |g| format!("{:.3}", g.median)),
                format!("{rows_per_s:.3e}"),
                speedup.map_or(String::new(), |s| format!("{s:.2}")),
            ]);
            out.push(TpchRow {
                query: q.to_string(),
                variant: name.into(),
                rows,
                ms,
                plan_ms,
                gpu_ms,
                rows_per_s,
                speedup_vs_cpu: speedup,
                operators,
            });
        }
    }
    println!(
        "TPC-H lineitem scale {} ({rows} rows), {}",
        args.scale,
        gpu.capabilities().adapter
    );
    println!("{table}");
    println!("operator times of one more run, ms (convert_time: CPU time summed over threads):");
    for line in &breakdown {
        println!("  {line}");
    }
    if let Some(path) = &args.options.json {
        report::write_json(
            path,
            &BenchJson::new("tpch", gpu.capabilities(), args.options.repeat, &out),
        )?;
    }
    Ok(())
}
