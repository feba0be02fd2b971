//! Tables registered by file path and read-only SQL run to completion: the front end that
//! `gpugraph sql` and the Python package share on top of [`crate::session_context`].
//!
//! Only queries run: DDL (`CREATE TABLE ... LOCATION`), DML (`INSERT`, `COPY ... TO`) and
//! statements (`SET`) are refused by DataFusion's SQL options, so a query can never write a
//! file or change the session behind the caller's back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::execution::options::ArrowReadOptions;
use datafusion::physical_plan::metrics::MetricValue;
use datafusion::physical_plan::{collect, displayable, ExecutionPlan};
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SQLOptions, SessionContext};

/// The file formats a table can be registered from, chosen by the path's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFormat {
    /// Apache Parquet (`.parquet`, `.pq`).
    Parquet,
    /// CSV with a header row (`.csv`).
    Csv,
    /// Arrow IPC file format (`.arrow`, `.ipc`, `.feather`).
    Arrow,
}

impl TableFormat {
    /// The format of `path` by its extension (case-insensitive).
    pub fn of(path: &Path) -> Result<Self, QueryError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("parquet") | Some("pq") => Ok(Self::Parquet),
            Some("csv") => Ok(Self::Csv),
            Some("arrow") | Some("ipc") | Some("feather") => Ok(Self::Arrow),
            other => Err(QueryError::UnsupportedExtension {
                path: path.to_path_buf(),
                extension: other.map_or_else(|| "(none)".to_string(), |e| format!(".{e}")),
            }),
        }
    }
}

/// Errors of registering tables and running queries.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// A table file's extension names no supported format.
    #[error(
        "{}: unsupported table file extension {extension}; use .parquet (.pq), .csv, or .arrow (.ipc, .feather)",
        path.display()
    )]
    UnsupportedExtension {
        /// The file.
        path: PathBuf,
        /// Its extension with the dot, or `(none)`.
        extension: String,
    },
    /// A table file does not exist (or is not a regular file).
    #[error("{}: no such table file", path.display())]
    MissingFile {
        /// The file.
        path: PathBuf,
    },
    /// A table path is not valid UTF-8 (DataFusion takes table locations as URLs).
    #[error("{}: table paths must be valid UTF-8", path.display())]
    NonUtf8Path {
        /// The file.
        path: PathBuf,
    },
    /// A table name is empty or already registered.
    #[error("table name '{name}': {problem}")]
    TableName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Registering table `name` failed in DataFusion (an unreadable file, a bad schema).
    #[error("table '{name}': {source}")]
    Register {
        /// The table.
        name: String,
        /// DataFusion's error.
        source: DataFusionError,
    },
    /// Planning or executing the query failed (SQL syntax, unknown column or table,
    /// unreadable data, a refused DDL/DML statement).
    #[error("{0}")]
    Query(#[from] DataFusionError),
}

/// Registers the file at `path` as table `name` in `ctx`, its format from the extension.
/// The file must exist; its schema is read now, so an unreadable file fails here, naming it.
pub async fn register_file(
    ctx: &SessionContext,
    name: &str,
    path: &Path,
) -> Result<(), QueryError> {
    check_name(ctx, name)?;
    let format = TableFormat::of(path)?;
    if !path.is_file() {
        return Err(QueryError::MissingFile {
            path: path.to_path_buf(),
        });
    }
    let location = path.to_str().ok_or_else(|| QueryError::NonUtf8Path {
        path: path.to_path_buf(),
    })?;
    // The listing filters files by extension even for a single file: use the file's own.
    let extension = format!(
        ".{}",
        path.extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default()
    );
    let registered = match format {
        TableFormat::Parquet => {
            let options = ParquetReadOptions {
                file_extension: &extension,
                ..Default::default()
            };
            ctx.register_parquet(name, location, options).await
        }
        TableFormat::Csv => {
            let options = CsvReadOptions::new().file_extension(&extension);
            ctx.register_csv(name, location, options).await
        }
        TableFormat::Arrow => {
            let options = ArrowReadOptions {
                file_extension: &extension,
                ..Default::default()
            };
            ctx.register_arrow(name, location, options).await
        }
    };
    registered.map_err(|source| QueryError::Register {
        name: name.to_string(),
        source,
    })
}

/// Registers in-memory record batches (all of `schema`) as table `name` in `ctx`, without
/// copying them.
pub fn register_batches(
    ctx: &SessionContext,
    name: &str,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<(), QueryError> {
    check_name(ctx, name)?;
    let register = |schema, batches| -> Result<(), DataFusionError> {
        let table = MemTable::try_new(schema, vec![batches])?;
        ctx.register_table(name, Arc::new(table))?;
        Ok(())
    };
    register(schema, batches).map_err(|source| QueryError::Register {
        name: name.to_string(),
        source,
    })
}

fn check_name(ctx: &SessionContext, name: &str) -> Result<(), QueryError> {
    let problem = if name.trim().is_empty() {
        "is empty"
    } else if ctx.table_exist(name).unwrap_or(false) {
        "is given twice"
    } else {
        return Ok(());
    };
    Err(QueryError::TableName {
        name: name.to_string(),
        problem,
    })
}

/// A query's physical plan (read-only SQL only; see the module docs) and how long planning
/// took (parse, logical optimization, physical planning and optimizer rules).
pub async fn plan(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(Arc<dyn ExecutionPlan>, Duration), QueryError> {
    let started = Instant::now();
    let options = SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false);
    let frame = match ctx.sql_with_options(sql, options).await {
        Ok(frame) => frame,
        Err(e) => return Err(missing_file(ctx, sql).unwrap_or(QueryError::Query(e))),
    };
    let plan = frame.create_physical_plan().await?;
    Ok((plan, started.elapsed()))
}

/// The first table `sql` names as a quoted file path (`FROM 'lineitem.parquet'`) that is
/// neither a registered table nor a file: DataFusion's own error for it is "table
/// 'datafusion.public.lineitem.parquet' not found", which does not say a file is missing.
fn missing_file(ctx: &SessionContext, sql: &str) -> Option<QueryError> {
    let state = ctx.state();
    let dialect = state.config().options().sql_parser.dialect;
    let statement = state.sql_to_statement(sql, &dialect).ok()?;
    let tables = state.resolve_table_references(&statement).ok()?;
    tables.into_iter().find_map(|t| {
        let path = Path::new(t.table());
        let registered = ctx.table_exist(t.clone()).unwrap_or(false);
        (!registered && TableFormat::of(path).is_ok() && !path.is_file()).then(|| {
            QueryError::MissingFile {
                path: path.to_path_buf(),
            }
        })
    })
}

/// The indented text of a physical plan, one operator a line (what `EXPLAIN` prints for
/// the physical plan, including the GPU operators' own descriptions).
pub fn explain(plan: &dyn ExecutionPlan) -> String {
    displayable(plan).indent(true).to_string()
}

/// A query run to completion.
#[derive(Debug)]
pub struct QueryOutput {
    /// The result's schema (also for zero batches).
    pub schema: SchemaRef,
    /// The result rows.
    pub batches: Vec<RecordBatch>,
    /// Parse, optimize and physical planning time.
    pub plan_time: Duration,
    /// Execution time (all partitions, until the last batch arrived).
    pub execute_time: Duration,
}

impl QueryOutput {
    /// Rows over all batches.
    pub fn rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// Plans and executes `sql` on `ctx`, collecting every result batch.
pub async fn run(ctx: &SessionContext, sql: &str) -> Result<QueryOutput, QueryError> {
    let (plan, plan_time) = plan(ctx, sql).await?;
    let schema = plan.schema();
    let started = Instant::now();
    let batches = collect(plan, ctx.task_ctx()).await?;
    Ok(QueryOutput {
        schema,
        batches,
        plan_time,
        execute_time: started.elapsed(),
    })
}

/// A Tokio runtime for blocking callers (the CLI, Python) to drive DataFusion's async API on.
///
/// Multi-threaded, one worker per core: DataFusion runs one task per partition, so the CPU
/// engine (`--cpu`, the comparison baseline) gets all cores and the GPU engine's CPU-side
/// operators (Parquet decode, final aggregation) overlap with each other.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

/// One operator's time metrics after a run: its name and its (metric, time) pairs, each
/// summed over partitions (`elapsed_compute` is DataFusion's CPU time; the GPU aggregate adds
/// `gpu_time` from GPU timestamps, `gpu_kernel_time` (submission to accumulators on the
/// host), `upload_time`, `merge_time` (batches into chunks, one thread) and `convert_time`,
/// the last summed over the threads that converted batches). Its Parquet page scan adds
/// `decode_time` (reading, decompressing and staging column chunks, summed over the
/// workers; of it, `chunk_read_time` reads column chunks from their files,
/// `stage_alloc_time` takes upload slabs from the session's pool, creating them when none is
/// idle, and `stage_write_time` writes into them), `page_wait_time` (the submitting thread
/// waiting for row groups; `upload_time` is its submissions) and wall-clock milestones from
/// the run's start: `first_page_at`,
/// `scan_done_at`, `kernel_done_at`.
#[derive(Clone, Debug)]
pub struct OperatorTimes {
    /// The operator (`ExecutionPlan::name`).
    pub operator: String,
    /// Its non-zero time metrics.
    pub times: Vec<(String, Duration)>,
}

/// The time metrics of every operator of an executed `plan`, depth first from the root;
/// operators without a non-zero time are left out.
pub fn operator_times(plan: &dyn ExecutionPlan) -> Vec<OperatorTimes> {
    fn walk(plan: &dyn ExecutionPlan, out: &mut Vec<OperatorTimes>) {
        if let Some(metrics) = plan.metrics() {
            let times: Vec<(String, Duration)> = metrics
                .aggregate_by_name()
                .iter()
                .filter_map(|m| match m.value() {
                    MetricValue::ElapsedCompute(t) => Some(("elapsed_compute".to_string(), t)),
                    MetricValue::Time { name, time } => Some((name.to_string(), time)),
                    _ => None,
                })
                .map(|(name, t)| (name, Duration::from_nanos(t.value() as u64)))
                .filter(|(_, d)| !d.is_zero())
                .collect();
            if !times.is_empty() {
                out.push(OperatorTimes {
                    operator: plan.name().to_string(),
                    times,
                });
            }
        }
        for child in plan.children() {
            walk(child.as_ref(), out);
        }
    }
    let mut out = Vec::new();
    walk(plan, &mut out);
    out
}
