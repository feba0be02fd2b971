//! Tables registered by file path and read-only SQL run to completion: the front end that
//! `gpugraph sql` and the Python package share on top of [`crate::session_context`].
//!
//! The SQL text may be a script of several statements ([`crate::script`]): queries, and
//! views and in-memory tables that live only in the session. Everything that would write a
//! file or change a setting (`COPY ... TO`, `INSERT`, `CREATE EXTERNAL TABLE`, `SET`) is
//! refused by kind before any statement runs, and each statement's plan passes DataFusion's
//! SQL options (no DML, no statements; DDL only for the definitions), so a script can never
//! write a file or change the session's settings behind the caller's back.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::execution::options::ArrowReadOptions;
use datafusion::physical_plan::metrics::MetricValue;
use datafusion::physical_plan::{collect, displayable, execute_stream, ExecutionPlan};
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext};
use datafusion::sql::parser::Statement as Parsed;
use futures::StreamExt;

pub use crate::query_error::QueryError;
use crate::script;

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

/// Registers the file at `path` as table `name` in `ctx`, its format from the extension.
/// The file must exist; its schema is read now, so an unreadable file fails here, naming it.
pub async fn register_file(
    ctx: &SessionContext,
    name: &str,
    path: &Path,
) -> Result<(), QueryError> {
    check_name(ctx, name)?;
    let format = TableFormat::of(path)?;
    check_table_file(path, format)?;
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

/// The physical plan of a query, or of a script's last query, and how long it took (parse,
/// logical optimization, physical planning and optimizer rules; for a script also its
/// definitions, which run here, in order: a `CREATE TABLE … AS` runs its query now).
///
/// Every statement is checked before any runs ([`crate::script::parse`]): only queries and
/// session-only definitions pass. A query before the script's last query is planned, so its
/// errors surface, but not run (it changes nothing); definitions after the last query (Q15's
/// `DROP VIEW`) run too, since the plan already holds what it reads. A script without a
/// query plans to zero rows of no columns.
pub async fn plan(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(Arc<dyn ExecutionPlan>, Duration), QueryError> {
    let started = Instant::now();
    let steps = script::parse(ctx, sql)?;
    let count = steps.len();
    for step in &steps {
        check_quoted_files(ctx, &step.statement)?;
    }
    let last_query = steps.iter().rposition(|s| s.kind == script::Kind::Query);
    let mut result = None;
    for (i, step) in steps.into_iter().enumerate() {
        let at = script::position(i, count);
        let options = step.options();
        let state = ctx.state();
        let logical = state
            .statement_to_plan(step.statement.clone())
            .await
            .map_err(|e| signature_error(&e).unwrap_or(QueryError::Query(e)))?;
        step.check_plan(&logical, &at)?;
        options.verify_plan(&logical)?;
        match step.kind {
            script::Kind::Define => {
                ctx.execute_logical_plan(logical).await?;
            }
            script::Kind::Query => {
                let frame = ctx.execute_logical_plan(logical).await?;
                let physical = frame.create_physical_plan().await?;
                if Some(i) == last_query {
                    result = Some(physical);
                }
            }
        }
    }
    let plan = result.unwrap_or_else(|| {
        Arc::new(datafusion::physical_plan::empty::EmptyExec::new(Arc::new(
            datafusion::arrow::datatypes::Schema::empty(),
        )))
    });
    Ok((plan, started.elapsed()))
}

/// DataFusion's error for a function called with argument types it has no signature for
/// runs to a thousand characters (every signature's own failure, then a request to file a
/// bug): this is the one line that says which call and which signatures exist.
fn signature_error(e: &DataFusionError) -> Option<QueryError> {
    let text = e.to_string();
    let call = text
        .split_once("No function matches the given name and argument types '")?
        .1
        .split_once('\'')?
        .0
        .to_string();
    let candidates: Vec<&str> = text
        .split_once("Candidate functions:")?
        .1
        .split(['\n', ';'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    Some(QueryError::Signature {
        call,
        candidates: candidates.join(", "),
    })
}

/// Checks every table `statement` names as a quoted file path (`FROM 'lineitem.parquet'`,
/// `'file:///data/t.csv'`) that is not a registered table, as [`register_file`] checks a
/// `--table` file. DataFusion's own errors for these say "table 'datafusion.public.x.parquet'
/// not found" for a missing file, and its Parquet footer reader can panic on a corrupt one.
/// Glob patterns are left to DataFusion's listing.
fn check_quoted_files(ctx: &SessionContext, statement: &Parsed) -> Result<(), QueryError> {
    let state = ctx.state();
    let Ok(tables) = state.resolve_table_references(statement) else {
        return Ok(());
    };
    for table in tables {
        let name = table.table();
        let path = Path::new(name.strip_prefix("file://").unwrap_or(name));
        let Ok(format) = TableFormat::of(path) else {
            continue;
        };
        let glob = name.contains(['*', '?', '[']);
        if glob || ctx.table_exist(table.clone()).unwrap_or(false) {
            continue;
        }
        check_table_file(path, format)?;
    }
    Ok(())
}

/// Checks that `path` is a regular file and, for Parquet, that its footer parses: a
/// missing, special or corrupt file fails here, naming it, before DataFusion reads it.
pub fn check_table_file(path: &Path, format: TableFormat) -> Result<(), QueryError> {
    check_regular_file(path)?;
    if format != TableFormat::Parquet {
        return Ok(());
    }
    let corrupt = |problem: String| QueryError::CorruptFile {
        path: path.to_path_buf(),
        problem,
    };
    let file = std::fs::File::open(path).map_err(|e| corrupt(format!("cannot be opened: {e}")))?;
    let parsed = crate::guard::no_panic(|| {
        datafusion::parquet::file::metadata::ParquetMetaDataReader::new().parse_and_finish(&file)
    });
    let metadata = match parsed {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => return Err(corrupt(parquet_problem(&e.to_string()))),
        Err(panic) => return Err(corrupt(format!("the footer reader gave up: {panic}"))),
    };
    // The Arrow schema the writer embedded (`ARROW:schema`, an IPC flatbuffer) is decoded by
    // schema inference, which panics on some corrupt ones (a field of type NONE: found by
    // the sql fuzz target); decode it here first, where a panic becomes a named error.
    let file_metadata = metadata.file_metadata();
    let converted = crate::guard::no_panic(|| {
        datafusion::parquet::arrow::parquet_to_arrow_schema(
            file_metadata.schema_descr(),
            file_metadata.key_value_metadata(),
        )
    });
    match converted {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(corrupt(format!(
            "its schema cannot be read as Arrow: {}",
            parquet_problem(&e.to_string())
        ))),
        Err(panic) => Err(corrupt(format!(
            "its embedded Arrow schema (ARROW:schema) is corrupt: {panic}"
        ))),
    }
}

/// Checks that `path` exists and is a regular file (after symlinks): a directory, FIFO or
/// device (a CSV symlinked to `/dev/zero`) is refused by what it is, before it is read.
pub fn check_regular_file(path: &Path) -> Result<(), QueryError> {
    let owned = || path.to_path_buf();
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(QueryError::MissingFile { path: owned() })
        }
        Err(e) => {
            return Err(QueryError::CorruptFile {
                path: owned(),
                problem: format!("cannot be read: {e}"),
            })
        }
    };
    if !meta.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        let kind = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        return Err(QueryError::NotAFile {
            path: owned(),
            kind,
        });
    }
    Ok(())
}

/// A Parquet error's text without the crate's repeated "Parquet error: " prefixes.
fn parquet_problem(text: &str) -> String {
    let mut t = text;
    while let Some(rest) = t.strip_prefix("Parquet error: ") {
        t = rest;
    }
    t.to_string()
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
    /// Whether the query had more rows than [`run_limited`] was asked to keep (the rest
    /// were never computed or were dropped).
    pub truncated: bool,
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
        truncated: false,
    })
}

/// Like [`run`], but keeps at most `max_rows` rows (all with `None`): the result streams in
/// and the query stops once it has produced them, so printing the first rows of a huge
/// result neither computes nor collects the rest. [`QueryOutput::truncated`] tells whether
/// there were more.
pub async fn run_limited(
    ctx: &SessionContext,
    sql: &str,
    max_rows: Option<usize>,
) -> Result<QueryOutput, QueryError> {
    let Some(max_rows) = max_rows else {
        return run(ctx, sql).await;
    };
    let (plan, plan_time) = plan(ctx, sql).await?;
    let schema = plan.schema();
    let started = Instant::now();
    let mut stream = execute_stream(plan, ctx.task_ctx())?;
    let (mut batches, mut rows, mut truncated) = (Vec::new(), 0usize, false);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if rows == max_rows {
            truncated = batch.num_rows() > 0;
            if truncated {
                break;
            }
            continue;
        }
        let keep = batch.num_rows().min(max_rows - rows);
        truncated = keep < batch.num_rows();
        rows += keep;
        batches.push(batch.slice(0, keep));
        if truncated {
            break;
        }
    }
    // Dropping the stream here stops every partition still running.
    drop(stream);
    Ok(QueryOutput {
        schema,
        batches,
        plan_time,
        execute_time: started.elapsed(),
        truncated,
    })
}

/// Runs `work`, or gives `None` once `limit` has passed; the future is dropped then, which
/// stops a query's streams and its workers.
pub async fn within<F: std::future::Future>(limit: Duration, work: F) -> Option<F::Output> {
    tokio::time::timeout(limit, work).await.ok()
}

/// A Tokio runtime for blocking callers (the CLI, Python) to drive DataFusion's async API on.
///
/// Multi-threaded, one worker per core: DataFusion runs one task per partition, so the CPU
/// engine (`--cpu`, the comparison baseline) gets all cores and the GPU engine's CPU-side
/// operators (Parquet decode, final aggregation) overlap with each other.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // DataFusion evaluates and plans expressions recursively: a query with thousands
        // of AND-ed predicates needs more than the 2 MiB default (only touched pages are
        // committed).
        .thread_stack_size(64 << 20)
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
