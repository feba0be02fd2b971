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
use gpugraph_datafusion::tpch::{QUERIES as SPEC, TABLES};
use gpugraph_datafusion::{
    query, session_context_on, session_context_on_devices, Engine, GpuCache, SessionOptions,
};
use serde::Serialize;

use crate::analyze::tpch::{check_scale, generate, TpchTable};

use super::report::{self, BenchJson, Summary, Table};
use super::BenchOptions;

/// The queries `bench tpch` names on its own: DataFusion's benchmark texts of the queries
/// the GPU plans were built for, and two that are not TPC-H. Every other `qN` (and `tpch`,
/// all 22) is the specification's text as the files in `gpugraph_datafusion::tpch::QUERIES`
/// hold it.
const NAMED: [(&str, &str); 9] = [
    ("q1", Q1),
    ("q6", Q6),
    ("q12", Q12),
    ("q14", Q14),
    ("q3", Q3),
    ("q10", Q10),
    ("q5", Q5),
    ("topk", TOPK),
    ("distinct", DISTINCT),
];

/// The text of query `name` (`q1` … `q22`, `topk`, `distinct`), with its canonical name.
fn query_text(name: &str) -> Option<(String, &'static str)> {
    let name = name.to_ascii_lowercase();
    if let Some(&(_, sql)) = NAMED.iter().find(|(n, _)| *n == name) {
        return Some((name, sql));
    }
    let n: usize = name.strip_prefix('q')?.parse().ok()?;
    let sql = SPEC.get(n.checked_sub(1)?)?;
    Some((name, sql))
}

/// The TPC-H tables besides lineitem that `sql` reads (its identifiers naming one).
fn tables_of(sql: &str) -> Vec<&'static str> {
    let words: std::collections::HashSet<String> = sql
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map(str::to_ascii_lowercase)
        .collect();
    TABLES
        .into_iter()
        .filter(|t| *t != "lineitem" && words.contains(*t))
        .collect()
}

/// Arguments of `bench tpch`.
#[derive(Args, Clone, Debug)]
pub struct TpchBenchArgs {
    /// TPC-H scale factor of lineitem (1 = 6M rows).
    #[arg(long, default_value_t = 0.01)]
    pub scale: f64,
    /// Queries, comma-separated: q1 … q22 (q1, q3, q5, q6, q10, q12, q14 in DataFusion's
    /// benchmark texts, the others as the specification writes them), `tpch` (all 22), topk
    /// (not TPC-H: the ten costliest line items from 1995 on, a GPU top-k) and distinct (not
    /// TPC-H: Q1's groups with three COUNT(DISTINCT)s).
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
    /// Read each table from DIR/<table>.parquet where that file exists (`generate-table
    /// --tpch T --out DIR/T.parquet`); the flags above win for their tables.
    #[arg(long, value_name = "DIR")]
    pub parquet_dir: Option<PathBuf>,
    /// DataFusion target partitions (CPU threads); default: the number of cores.
    #[arg(long)]
    pub partitions: Option<usize>,
    /// Variants to time, comma-separated (gpu-warm, gpu-host, gpu-parquet, cpu-memory,
    /// cpu-parquet); default: all. A GPU variant's `x cpu` needs its CPU peer in the list.
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<String>,
    /// Also time the GPU variants with every GPU aggregate split over these devices (`all` or
    /// adapter numbers from `gpugraph info`, as `gpugraph sql --devices` takes them): rows
    /// `gpu-warm-Nd` and `gpu-parquet-Nd` for N devices, beside the one-device rows.
    #[arg(long, value_name = "all|N,M")]
    pub devices: Option<gpugraph_command::DeviceSelection>,
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

/// The answer of `sql` (a query or a script, as Q15 is) as a table of text.
async fn answer(ctx: &SessionContext, sql: &str) -> Result<String> {
    let out = query::run(ctx, sql).await?;
    Ok(pretty_format_batches(&out.batches)?.to_string())
}

/// Whether two answers printed by [`answer`] hold the same rows: the same header, the same
/// rows in any order (rows whose sort keys tie may come in either order), text cells equal
/// and numeric cells within 1e-9 relative (float sums depend on their order). Says why not.
fn same_answer(a: &str, b: &str) -> std::result::Result<(), String> {
    if a == b {
        return Ok(());
    }
    let rows = |t: &str| -> Vec<Vec<String>> {
        let mut rows: Vec<Vec<String>> = t
            .lines()
            .filter(|l| l.starts_with('|'))
            .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
            .collect();
        // The header stays first; the rows sort.
        if rows.len() > 1 {
            rows[1..].sort();
        }
        rows
    };
    let (ra, rb) = (rows(a), rows(b));
    if ra.len() != rb.len() {
        return Err(format!("{} rows against {}", ra.len() - 1, rb.len() - 1));
    }
    let close = |x: &str, y: &str| match (x.parse::<f64>(), y.parse::<f64>()) {
        (Ok(x), Ok(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => x == y,
    };
    for (i, (x, y)) in ra.iter().zip(&rb).enumerate() {
        if x.len() != y.len() || x.iter().zip(y).any(|(p, q)| !close(p, q)) {
            return Err(format!("row {i}: {x:?} against {y:?}"));
        }
    }
    Ok(())
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
        let names: Vec<String> = if q.eq_ignore_ascii_case("tpch") {
            (1..=SPEC.len()).map(|n| format!("q{n}")).collect()
        } else {
            vec![q.clone()]
        };
        for q in names {
            let Some((name, sql)) = query_text(&q) else {
                bail!("unknown query {q} (q1 … q22, tpch, topk, distinct)");
            };
            sqls.push((name, sql, tables_of(sql)));
        }
    }
    let wanted = |t: &str| sqls.iter().any(|(_, _, tables)| tables.contains(&t));
    let in_dir = |t: &str| {
        let p = args.parquet_dir.as_ref()?.join(format!("{t}.parquet"));
        p.exists().then_some(p)
    };
    let given = |flag: &Option<PathBuf>, t: &str| flag.clone().or_else(|| in_dir(t));
    let dimensions = [
        (TpchTable::Part, "part", given(&args.part_parquet, "part")),
        (
            TpchTable::Orders,
            "orders",
            given(&args.orders_parquet, "orders"),
        ),
        (
            TpchTable::Customer,
            "customer",
            given(&args.customer_parquet, "customer"),
        ),
        (TpchTable::Partsupp, "partsupp", in_dir("partsupp")),
        (TpchTable::Supplier, "supplier", in_dir("supplier")),
        (TpchTable::Nation, "nation", in_dir("nation")),
        (TpchTable::Region, "region", in_dir("region")),
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
    let lineitem = given(&args.parquet, "lineitem");
    let mut files = vec![("lineitem", write("lineitem", &lineitem, &batches)?)];
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
    let devices: Vec<Arc<GpuContext>> = match &args.devices {
        None => Vec::new(),
        Some(selection) => {
            GpuContext::for_devices(selection, &gpugraph_command::ContextOptions::from_env())
                .with_context(|| format!("--devices {selection}"))?
                .into_iter()
                .map(Arc::new)
                .collect()
        }
    };
    let on_devices = |cache| {
        session_context_on_devices(&options(Engine::Gpu), devices.clone(), GpuCache::new(cache))
    };
    let with_tables = |ctx: SessionContext| -> Result<SessionContext> {
        let table = MemTable::try_new(Arc::clone(&schema), vec![batches.clone()])?;
        ctx.register_table("lineitem", Arc::new(table))?;
        for (name, batches) in &others {
            let table = MemTable::try_new(batches[0].schema(), vec![batches.clone()])?;
            ctx.register_table(*name, Arc::new(table))?;
        }
        Ok(ctx)
    };
    let memory_session = |engine, cache| {
        with_tables(session_context_on(
            &options(engine),
            Arc::clone(&gpu),
            cache,
        ))
    };
    let warm = memory_session(Engine::Gpu, true)?;
    let host = memory_session(Engine::Gpu, false)?;
    let cpu_memory = memory_session(Engine::Cpu, false)?;
    let gpu_parquet = session_context_on(&options(Engine::Gpu), Arc::clone(&gpu), false);
    let cpu_parquet = session_context_on(&options(Engine::Cpu), Arc::clone(&gpu), false);
    // The split variants: (name, in-memory session with the cache, Parquet session).
    let split = match devices.len() {
        0 => None,
        n => Some((
            format!("-{n}d"),
            with_tables(on_devices(true)?)?,
            on_devices(false)?,
        )),
    };
    for (name, path) in &files {
        let path = path.to_str().context("a UTF-8 Parquet path")?;
        let split_parquet = split.as_ref().map(|(_, _, p)| p);
        for ctx in [&gpu_parquet, &cpu_parquet]
            .into_iter()
            .chain(split_parquet)
        {
            ctx.register_parquet(*name, path, ParquetReadOptions::default())
                .await?;
        }
    }
    let mut table = Table::new([
        "query", "variant", "ms", "plan ms", "GPU ms", "rows/s", "x cpu",
    ]);
    let mut out = Vec::new();
    let mut breakdown = Vec::new();
    for (q, sql, _) in &sqls {
        let (q, sql) = (q.as_str(), *sql);
        let expected = answer(&cpu_memory, sql).await?;
        let mut variants: Vec<(String, &SessionContext, Option<usize>)> = vec![
            ("cpu-memory".into(), &cpu_memory, None),
            ("cpu-parquet".into(), &cpu_parquet, None),
            ("gpu-warm".into(), &warm, Some(0)),
            ("gpu-host".into(), &host, Some(0)),
            ("gpu-parquet".into(), &gpu_parquet, Some(1)),
        ];
        if let Some((suffix, memory, parquet)) = &split {
            variants.push((format!("gpu-warm{suffix}"), memory, Some(0)));
            variants.push((format!("gpu-parquet{suffix}"), parquet, Some(1)));
        }
        // A split variant is asked for by its one-device name too.
        let wanted = |name: &str| {
            args.variants.is_empty()
                || args.variants.iter().any(|v| {
                    name == v
                        || name
                            .strip_prefix(v.as_str())
                            .is_some_and(|r| r.ends_with('d') && r.starts_with('-'))
                })
        };
        for (name, ctx, peer) in &variants {
            if peer.is_none() || !wanted(name) {
                continue;
            }
            let got = answer(ctx, sql).await?;
            if let Err(why) = same_answer(&got, &expected) {
                bail!("{q} {name}: the GPU answer differs from the CPU's ({why})\nGPU:\n{got}\nCPU:\n{expected}");
            }
        }
        let mut cpu_medians = [f64::NAN; 2];
        for (name, ctx, peer) in variants {
            let (name, peer) = (name.as_str(), peer);
            if !wanted(name) {
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
                // The printout shows what took time in the GPU operators; the JSON keeps
                // every operator's metrics.
                let line: Vec<String> = operators
                    .iter()
                    .filter(|o| o.ms >= 0.05 && o.operator.starts_with("Gpu"))
                    .map(|o| format!("{}.{} {:.2}", o.operator, o.metric, o.ms))
                    .collect();
                if line.is_empty() {
                    breakdown.push(format!("{q} {name}: no GPU operator (see the plan)"));
                } else {
                    breakdown.push(format!("{q} {name}: {}", line.join(", ")));
                }
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
    println!("GPU operator times of one more run, ms (convert_time: CPU time summed over threads; the JSON has every operator's):");
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

#[cfg(test)]
mod tests {
    use super::{query_text, same_answer, tables_of};

    const A: &str = "+---+-----+\n| k | v   |\n+---+-----+\n| a | 0.1 |\n| b | 2   |\n+---+-----+";

    #[test]
    fn answers_match_in_any_row_order_with_floats_within_1e9() {
        let permuted = "+---+-----+\n| k | v   |\n+---+-----+\n| b | 2   |\n| a | 0.10000000000000002 |\n+---+-----+";
        assert_eq!(same_answer(A, permuted), Ok(()));
        let off = A.replace("0.1 ", "0.11");
        assert!(same_answer(A, &off).unwrap_err().contains("row"));
        let short = "+---+-----+\n| k | v   |\n+---+-----+\n| a | 0.1 |\n+---+-----+";
        assert!(same_answer(A, short)
            .unwrap_err()
            .contains("2 rows against 1"));
        assert!(same_answer(A, &A.replace("| b", "| c")).is_err());
    }

    #[test]
    fn queries_and_their_tables() {
        let (name, q15) = query_text("Q15").unwrap();
        assert_eq!(name, "q15");
        assert!(q15.contains("create view"));
        assert_eq!(tables_of(q15), ["supplier"]);
        assert_eq!(
            tables_of(query_text("q2").unwrap().1),
            ["part", "supplier", "partsupp", "nation", "region"]
        );
        assert!(
            query_text("q23").is_none() && query_text("q0").is_none() && query_text("x").is_none()
        );
        assert!(query_text("topk").is_some());
    }
}
