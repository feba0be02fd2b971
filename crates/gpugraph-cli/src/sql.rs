//! `gpugraph sql`: one read-only SQL query through DataFusion ([`gpugraph_datafusion`]),
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
    /// The query (SELECT / WITH / EXPLAIN). Files are tables when quoted in FROM, e.g.
    /// FROM 'lineitem.parquet'; DDL, DML and SET are refused.
    pub query: String,
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

/// Runs the query and prints or writes its result.
pub fn run(args: &SqlArgs) -> Result<()> {
    let out = match &args.out {
        Some(path) => Some((PendingFile::new(path, "--out")?, path, FileKind::of(path)?)),
        None => None,
    };
    let tables = args
        .tables
        .iter()
        .map(|s| table_spec(s))
        .collect::<Result<Vec<_>>>()?;
    let engine = if args.cpu { Engine::Cpu } else { Engine::Gpu };
    let options = SessionOptions {
        engine,
        ..SessionOptions::default()
    };
    let runtime = query::runtime().context("starting the query runtime")?;
    runtime.block_on(async {
        let ctx = session_context(&options)?.enable_url_table();
        for (name, path) in &tables {
            query::register_file(&ctx, name, path).await?;
        }
        if args.explain {
            let (plan, plan_time) = query::plan(&ctx, &args.query).await?;
            print!("{}", query::explain(plan.as_ref()));
            eprintln!(
                "sql ({}): plan {:.1} ms",
                engine_name(engine),
                ms(plan_time)
            );
            return Ok(());
        }
        let result = query::run(&ctx, &args.query).await?;
        eprintln!(
            "sql ({}): plan {:.1} ms, execute {:.1} ms, {} rows",
            engine_name(engine),
            ms(result.plan_time),
            ms(result.execute_time),
            result.rows()
        );
        match out {
            Some((pending, path, kind)) => {
                let rows = result.rows();
                crate::join::write::write(pending, path, kind, result.schema, &result.batches)?;
                println!("sql: {rows} rows -> {}", path.display());
            }
            None => {
                let table = pretty_format_batches_with_schema(result.schema, &result.batches)
                    .context("formatting the result")?;
                println!("{table}");
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
