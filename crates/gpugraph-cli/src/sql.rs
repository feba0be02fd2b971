//! `gpugraph sql`: a read-only SQL query or script through DataFusion ([`gpugraph_datafusion`]),
//! on the GPU engine (supported operators on gpugraph primitives, the rest on DataFusion's
//! CPU operators) or, with `--cpu`, on DataFusion's CPU plan alone.
//!
//! Tables are files named in `FROM` as quoted paths (`FROM 'lineitem.parquet'`) or
//! registered by `--table name=path`; the format follows the extension. The result prints as a
//! table on stdout or goes to `--out` (.parquet, .csv, .arrow); timings go to stderr. The
//! output's temporary is created before the query runs and renamed into place only when the
//! whole query succeeded ([`crate::output`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use gpugraph_datafusion::datafusion::arrow::util::pretty::pretty_format_batches_with_schema;
use gpugraph_datafusion::query;
use gpugraph_datafusion::{session_context, Engine, SessionOptions};

use crate::analyze::load::FileKind;
use crate::output::{ms, PendingFile};

/// `gpugraph sql`.
#[derive(Args, Debug)]
pub struct SqlArgs {
    /// The query (SELECT / WITH / VALUES / EXPLAIN), or a script of statements separated by
    /// semicolons that also defines views and in-memory tables (CREATE [TEMP] VIEW, CREATE
    /// [TEMP] TABLE ... AS, DROP VIEW/TABLE); the last query's rows are printed. Files are
    /// tables when quoted in FROM, e.g. FROM 'lineitem.parquet'; COPY, INSERT, CREATE
    /// EXTERNAL TABLE and SET are refused. Text that begins with a `--` comment goes after
    /// `--`: gpugraph sql --table t=t.parquet -- "$(cat q1.sql)".
    #[arg(
        required_unless_present = "file",
        conflicts_with = "file",
        allow_hyphen_values = true
    )]
    pub query: Option<String>,
    /// Read the query or script from this file instead (`-` reads standard input).
    #[arg(short = 'f', long, value_name = "FILE.sql")]
    pub file: Option<PathBuf>,
    /// Run DataFusion's CPU plan only (the reference the GPU plan is compared against).
    #[arg(long)]
    pub cpu: bool,
    /// Print the physical plan (the operators that run on the GPU and those that fall back
    /// to the CPU) instead of running the query.
    #[arg(long, conflicts_with = "out")]
    pub explain: bool,
    /// Write the result to this file (.parquet, .csv, .arrow/.ipc/.feather or .arrows)
    /// instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Register a table file under a name: --table lineitem=lineitem.parquet (repeatable;
    /// .parquet, .csv or .arrow by extension).
    #[arg(long = "table", value_name = "NAME=PATH")]
    pub tables: Vec<String>,
    /// Bytes DataFusion's operators may hold at once (sorts, joins, aggregations, recursive
    /// queries), e.g. 4GiB or 512MiB; past it the query fails naming the operator. Default:
    /// half of the machine's memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<usize>,
    /// Fail the query after this many seconds (planning and execution); 0 waits forever.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub timeout: f64,
    /// Print at most this many rows; the query stops once it has produced them (0 prints
    /// every row). --out always writes every row.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_ROWS)]
    pub max_rows: usize,
    /// Iterations a WITH RECURSIVE query may run before it fails (one without a stopping
    /// condition would run forever).
    #[arg(long, value_name = "N", default_value_t = gpugraph_datafusion::recursion::DEFAULT_MAX_ITERATIONS)]
    pub max_recursion: usize,
    /// Split each GPU aggregate's input over these GPUs: `all` (every GPU like the best one)
    /// or adapter numbers from `gpugraph info`, e.g. 0,1. Each device aggregates its share
    /// of the row groups (or batches) and DataFusion merges the groups. Default: one device.
    #[arg(long, value_name = "all|N,M", conflicts_with = "cpu")]
    pub devices: Option<gpugraph_command::DeviceSelection>,
    /// Run the query on the Ballista cluster of the scheduler at HOST:PORT (`gpugraph
    /// scheduler`); table files must be readable at the same paths on every executor.
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["cpu", "devices"])]
    pub cluster: Option<String>,
}

/// A GPU session over the selected devices, each line of `gpugraph info`'s adapter list that
/// it uses named on stderr.
fn devices_session(
    options: &SessionOptions,
    selection: &gpugraph_command::DeviceSelection,
) -> Result<gpugraph_datafusion::datafusion::prelude::SessionContext> {
    use gpugraph_command::{ContextOptions, GpuContext};
    let devices = GpuContext::for_devices(selection, &ContextOptions::from_env())
        .with_context(|| format!("--devices {selection}"))?;
    let names: Vec<String> = devices
        .iter()
        .map(|d| d.capabilities().adapter.clone())
        .collect();
    let plural = if devices.len() == 1 { "" } else { "s" };
    eprintln!(
        "sql: {} device{plural}: {}",
        devices.len(),
        names.join(", ")
    );
    let devices = devices.into_iter().map(std::sync::Arc::new).collect();
    Ok(gpugraph_datafusion::session_context_on_devices(
        options,
        devices,
        gpugraph_datafusion::GpuCache::new(true),
    )?)
}

/// Rows printed unless `--max-rows` says otherwise: enough for any report, few enough that
/// `SELECT * FROM big` does not collect a whole table to print it.
pub const DEFAULT_MAX_ROWS: usize = 10_000;

/// The most operators (AND, OR, comparisons, arithmetic) a query may hold: DataFusion plans
/// expressions recursively, and 3,000 `AND`ed predicates overflowed the planner's stack
/// (which [`run`] now makes large enough for this many).
pub const MAX_OPERATORS: usize = 20_000;

/// The stack of the thread that plans and drives the query (see [`MAX_OPERATORS`]); only
/// the pages a query touches are committed.
const PLANNER_STACK: usize = 1 << 30;

/// `4GiB`, `512MiB`, `100MB`, `1e9` or a plain byte count.
fn parse_size(text: &str) -> std::result::Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024f64.powi(4),
        other => {
            return Err(format!(
                "'{text}' is not a size: unknown unit '{other}' (use B, KB, MB, GB, KiB, MiB, GiB)"
            ))
        }
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 4GiB, 512MiB, 1000000)"))?;
    let bytes = value * scale;
    if !bytes.is_finite() || bytes < 1.0 || bytes > usize::MAX as f64 {
        return Err(format!("'{text}' is not a usable memory size"));
    }
    Ok(bytes as usize)
}

/// Half of the machine's memory (`/proc/meminfo`), or 4 GiB where it cannot be read.
fn default_memory_limit() -> usize {
    let total_kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
    });
    total_kib.map_or(4 << 30, |k| k.saturating_mul(1024) / 2)
}

/// Refuses a query with more than [`MAX_OPERATORS`] operators, counted on its tokens
/// (no recursion), before anything plans it.
fn check_operators(sql: &str) -> Result<()> {
    use gpugraph_datafusion::datafusion::sql::sqlparser::dialect::GenericDialect;
    use gpugraph_datafusion::datafusion::sql::sqlparser::keywords::Keyword;
    use gpugraph_datafusion::datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    // A query that does not tokenize is the parser's to report, with its position.
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize() else {
        return Ok(());
    };
    let operators = tokens
        .iter()
        .filter(|t| match t {
            Token::Word(w) => matches!(w.keyword, Keyword::AND | Keyword::OR | Keyword::NOT),
            Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::Mod
            | Token::Eq
            | Token::Neq
            | Token::Lt
            | Token::Gt
            | Token::LtEq
            | Token::GtEq
            | Token::StringConcat
            | Token::LParen => true,
            _ => false,
        })
        .count();
    if operators > MAX_OPERATORS {
        bail!(
            "the query has {operators} operators and parentheses; at most {MAX_OPERATORS} are planned \
             (DataFusion plans expressions recursively): split the predicate or use IN (...)"
        );
    }
    Ok(())
}

/// Splits `NAME=PATH`.
fn table_spec(spec: &str) -> Result<(&str, &Path)> {
    match spec.split_once('=') {
        Some((name, path)) if !name.trim().is_empty() && !path.is_empty() => {
            Ok((name.trim(), Path::new(path)))
        }
        _ => bail!("--table '{spec}': expected NAME=PATH, e.g. --table lineitem=lineitem.parquet"),
    }
}

/// Runs the query and prints or writes its result, on a thread with a large stack (see
/// [`MAX_OPERATORS`]).
pub fn run(args: &SqlArgs) -> Result<()> {
    let query = match (&args.query, &args.file) {
        (Some(q), _) => q.clone(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .context("--file -: cannot read the query from standard input")?;
            text
        }
        (None, Some(path)) => std::fs::read_to_string(path)
            .with_context(|| format!("--file {}: cannot read the query", path.display()))?,
        (None, None) => bail!("give a query, or --file FILE.sql"),
    };
    // The query argument takes text that begins with `-` (a `--` comment), so a mistyped
    // option lands here as SQL that is only a comment: say what it looks like.
    if args.file.is_none() && query.starts_with("--") && !query.trim_end().contains('\n') {
        bail!(
            "'{}' is no option of gpugraph sql, and as SQL only a comment (see gpugraph sql --help)",
            query.trim_end()
        );
    }
    check_operators(&query)?;
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("gpugraph-sql".into())
            .stack_size(PLANNER_STACK)
            .spawn_scoped(scope, || run_query(args, &query))
            .context("starting the query thread")?
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn run_query(args: &SqlArgs, sql: &str) -> Result<()> {
    let out = match &args.out {
        Some(path) => Some((PendingFile::new(path, "--out")?, path, FileKind::of(path)?)),
        None => None,
    };
    let mut tables = args
        .tables
        .iter()
        .map(|s| table_spec(s).map(|(name, path)| (name, path.to_path_buf())))
        .collect::<Result<Vec<_>>>()?;
    if args.cluster.is_some() {
        // The executors open the files, from their own working directories.
        for (name, path) in &mut tables {
            *path = std::path::absolute(&*path)
                .with_context(|| format!("--table {name}={}", path.display()))?;
        }
    }
    if !(args.timeout.is_finite() && args.timeout >= 0.0) {
        bail!(
            "--timeout {}: expected a number of seconds >= 0",
            args.timeout
        );
    }
    let engine = if args.cpu { Engine::Cpu } else { Engine::Gpu };
    let options = SessionOptions {
        engine,
        memory_limit: Some(args.memory_limit.unwrap_or_else(default_memory_limit)),
        max_recursion: args.max_recursion,
        ..SessionOptions::default()
    };
    let label = match &args.cluster {
        Some(_) => "cluster",
        None => engine_name(engine),
    };
    let runtime = query::runtime().context("starting the query runtime")?;
    runtime.block_on(async {
        let work = async {
            let ctx = match (&args.cluster, &args.devices) {
                (Some(address), _) => crate::cluster::client(address)?,
                (None, None) => session_context(&options)?,
                (None, Some(selection)) => devices_session(&options, selection)?,
            }
            .enable_url_table();
            for (name, path) in &tables {
                query::register_file(&ctx, name, path).await?;
            }
            if args.explain {
                let (plan, plan_time) = query::plan(&ctx, sql).await?;
                print!("{}", query::explain(plan.as_ref()));
                eprintln!(
                    "sql ({}): plan {:.1} ms",
                    label,
                    ms(plan_time)
                );
                return Ok(None);
            }
            let limit = match (&out, args.max_rows) {
                (None, n) if n > 0 => Some(n),
                _ => None,
            };
            let result = query::run_limited(&ctx, sql, limit).await?;
            anyhow::Ok(Some(result))
        };
        let result = if args.timeout > 0.0 {
            let limit = std::time::Duration::from_secs_f64(args.timeout);
            match query::within(limit, work).await {
                Some(result) => result?,
                None => bail!(
                    "the query ran past its --timeout of {} s and was stopped",
                    args.timeout
                ),
            }
        } else {
            work.await?
        };
        let Some(result) = result else {
            return Ok(());
        };
        eprintln!(
            "sql ({}): plan {:.1} ms, execute {:.1} ms, {} rows{}",
            label,
            ms(result.plan_time),
            ms(result.execute_time),
            result.rows(),
            if result.truncated { " (more not read)" } else { "" }
        );
        match out {
            Some((pending, path, kind)) => {
                let rows = result.rows();
                crate::join::write::write(pending, path, kind, result.schema, &result.batches)?;
                println!("sql: {rows} rows -> {}", path.display());
            }
            None => {
                let (rows, truncated) = (result.rows(), result.truncated);
                let table = pretty_format_batches_with_schema(result.schema, &result.batches)
                    .context("formatting the result")?;
                println!("{table}");
                if truncated {
                    println!(
                        "(the first {rows} rows; the query has more: raise --max-rows, or 0 for all)"
                    );
                }
            }
        }
        Ok(())
    })
}

fn engine_name(engine: Engine) -> &'static str {
    match engine {
        Engine::Gpu => "gpu",
        Engine::Cpu => "cpu",
    }
}
