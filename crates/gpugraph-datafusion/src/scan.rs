//! The GPU aggregate's own Parquet scan: when its source is a plain Parquet `DataSourceExec`
//! over local files, it reads the row groups itself instead of streaming DataFusion's batches.
//!
//! Why: the GPU aggregate only needs each column's values once, in any order, as 32-bit
//! words. DataFusion's scan decodes 8,192-row batches in file order per partition and widens
//! every INT64-backed decimal to `Decimal128` (16 bytes a value) that the conversion then
//! narrows back. Here every worker thread takes whole row groups from a shared queue (no
//! partition waits for another), asks the Parquet reader for `Decimal64`/`Decimal32` (the
//! file's own integers, reinterpreted without a copy) for value columns and dictionaries for
//! string keys, converts each batch on the same thread while it is still in cache, and hands
//! it to the aggregate's merge.
//!
//! Anything this does not cover keeps DataFusion's scan ([`DirectScan::of`] says `None`):
//! another source or object store, pushed-down row filters, a limit, partition columns,
//! projections that are not plain columns, nested schemas, or a file that lacks a column.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSource, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::basic::Type as PhysicalType;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::ExecutionPlan;
use futures::Stream;

use crate::convert::{BatchLayout, ConvertedBatch, Misfit};
use crate::pages::{PageScan, RowGroupTask};
use crate::share::Share;

/// Rows per batch the reader hands out. 64K rows keep a decoded column (512 KiB of i64) in
/// the worker's cache until it is converted; at 1M rows (the H200 host, 2026-12-02) decoding
/// and converting TPC-H Q6's columns cost 5.7 and 4.2 ns a value summed over 16 threads.
const BATCH_ROWS: usize = 1 << 16;

/// One converted batch and the time its worker spent decoding and converting it.
pub type Scanned = Result<(Result<ConvertedBatch, Misfit>, Duration, Duration)>;

/// One row group as the page scan's `prepare` made it (`pages.rs`), and the time its workers
/// spent reading, parsing and staging it, and preparing it.
pub type PageScanned<T> = Result<(Result<T, Misfit>, Duration, Duration)>;

/// What a page scan's callbacks return: a read error outside, a misfit inside.
pub type Outcome<T> = std::result::Result<std::result::Result<T, Misfit>, String>;

/// A row group's columns as the page scan's workers parse them.
struct Assembly<C> {
    columns: Vec<Option<C>>,
    /// Columns still to parse.
    left: usize,
    /// Reading and parsing time so far, summed over the columns.
    read: Duration,
}

/// A local Parquet scan the GPU aggregate runs itself (see the module docs).
#[derive(Debug, Clone)]
pub struct DirectScan {
    files: Vec<PathBuf>,
    /// Per source output column: its name in the files.
    columns: Vec<String>,
    /// The source's output types (what DataFusion's scan would produce).
    types: Vec<DataType>,
    /// Source output columns read as values (decimals may come back as `Decimal64`).
    values: Vec<usize>,
    /// Source output columns read as group keys (strings come back as dictionaries).
    keys: Vec<usize>,
    /// The row groups this scan reads ([`Share::row_groups`] over every file's row groups in
    /// file order).
    share: Share,
}

impl DirectScan {
    /// The direct form of `source` when it is a plain local Parquet scan reading `values`
    /// and `keys` (source column indices), or `None` to keep DataFusion's scan.
    pub fn of(source: &Arc<dyn ExecutionPlan>, values: &[usize], keys: &[usize]) -> Option<Self> {
        let exec = source.downcast_ref::<DataSourceExec>()?;
        let config = exec.data_source().downcast_ref::<FileScanConfig>()?;
        let parquet = config.file_source().downcast_ref::<ParquetSource>()?;
        if parquet.table_parquet_options().global.pushdown_filters
            || config.limit.is_some()
            || !config.table_partition_cols().is_empty()
            || config.object_store_url.as_str() != "file:///"
        {
            return None;
        }
        let table = config.file_schema();
        let columns = match parquet.projection() {
            None => table.fields().iter().map(|f| f.name().clone()).collect(),
            Some(projection) => projection
                .iter()
                .map(|p| {
                    let column = p.expr.downcast_ref::<Column>()?;
                    (column.index() < table.fields().len())
                        .then(|| table.field(column.index()).name().clone())
                })
                .collect::<Option<Vec<_>>>()?,
        };
        let schema = source.schema();
        if columns.len() != schema.fields().len() {
            return None;
        }
        let mut files: Vec<PathBuf> = config
            .file_groups
            .iter()
            .flat_map(|g| g.iter())
            .map(|f| PathBuf::from(format!("/{}", f.path())))
            .collect();
        // A large file is split into byte ranges over several groups: read each file once.
        files.sort();
        files.dedup();
        Some(Self {
            files,
            columns,
            types: schema
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect(),
            values: values
                .iter()
                .copied()
                .filter(|v| !keys.contains(v))
                .collect(),
            keys: keys.to_vec(),
            share: Share::WHOLE,
        })
    }

    /// This scan reading only `share`'s row groups.
    pub fn shared(mut self, share: Share) -> Self {
        self.share = share;
        self
    }

    /// `tasks` (one per row group, every file's in file order) less those of other shares.
    fn keep_share<T>(&self, tasks: Vec<T>, rows: impl Fn(&T) -> u64) -> Vec<T> {
        let counts: Vec<u64> = tasks.iter().map(rows).collect();
        let mine = self.share.row_groups(&counts);
        tasks
            .into_iter()
            .zip(mine)
            .filter_map(|(t, m)| m.then_some(t))
            .collect()
    }

    /// Reads every row group of every file on `threads` blocking workers, converting each
    /// batch with `layout`; batches arrive in no particular order. Errors (a file that cannot
    /// be read, a column it lacks) end the stream.
    pub fn stream(
        self,
        layout: Arc<BatchLayout>,
        threads: usize,
    ) -> impl Stream<Item = Scanned> + Send {
        let this = Arc::new(self);
        let planner = Arc::clone(&this);
        pool(
            move || planner.plan(),
            threads,
            move |task: &Task, tx| this.read(task, &layout, tx),
        )
    }

    /// The page-decoding form of this scan (`pages.rs`) with its row groups, largest first,
    /// for slots `values` then `keys` (source columns), or why not.
    pub fn pages(
        &self,
        values: &[usize],
        keys: &[usize],
    ) -> std::result::Result<(PageScan, Vec<RowGroupTask>), String> {
        let mut files = Vec::new();
        for path in &self.files {
            let file = open(path).map_err(|e| e.to_string())?;
            let loaded = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
                .map_err(|e| e.to_string())?;
            files.push((
                path.clone(),
                Arc::clone(loaded.metadata()),
                Arc::clone(loaded.schema()),
            ));
        }
        let slots: Vec<(String, DataType)> = values
            .iter()
            .chain(keys)
            .map(|&c| (self.columns[c].clone(), self.types[c].clone()))
            .collect();
        let schemas: Vec<_> = files
            .iter()
            .map(|(_, m, s)| (Arc::clone(m), Arc::clone(s)))
            .collect();
        let scan = PageScan::of(&schemas, &slots, keys.len())?;
        let mut tasks = Vec::new();
        for (path, metadata, _) in files {
            for row_group in 0..metadata.num_row_groups() {
                tasks.push(RowGroupTask {
                    path: path.clone(),
                    metadata: Arc::clone(&metadata),
                    row_group,
                });
            }
        }
        let mut tasks = self.keep_share(tasks, |t| {
            t.metadata.row_group(t.row_group).num_rows() as u64
        });
        tasks.sort_by_key(|t| std::cmp::Reverse(t.metadata.row_group(t.row_group).num_rows()));
        Ok((scan, tasks))
    }

    /// Reads `tasks` on `threads` blocking workers (see `pages.rs`): `column` reads and
    /// stages one column slot of one row group, and the worker that finishes a row group's
    /// last slot hands the slots to `prepare` (recording the row group's expansion) and
    /// sends what it returns. Both return a read error as the outer error and a misfit as
    /// the inner one. Chunks arrive in no particular order.
    ///
    /// The workers take (row group, column slot) pairs, row groups in the given order. Why not
    /// whole row groups: TPC-H SF 10's lineitem has 58 for the H200 host's 16 cores, so the
    /// last round of row groups left 6 of them idle (58 / 16 = 3.6 rounds of ~25 ms), and one
    /// column chunk is a quarter of such a task for Q6.
    pub fn page_stream<C, T, R, P>(
        scan: PageScan,
        tasks: Vec<RowGroupTask>,
        threads: usize,
        column: R,
        prepare: P,
    ) -> impl Stream<Item = PageScanned<T>> + Send
    where
        C: Send + 'static,
        T: Send + 'static,
        R: Fn(&PageScan, &RowGroupTask, usize) -> Outcome<C> + Send + Sync + 'static,
        P: Fn(usize, Vec<C>) -> Outcome<T> + Send + Sync + 'static,
    {
        let slots = scan.slots();
        // A scan that reads no column (`count(*)`) still has one part per row group, or no
        // row group would ever reach `prepare` and the scan would count no rows.
        let parts_per_task = slots.max(1);
        let parts: Vec<(usize, usize)> = (0..tasks.len())
            .flat_map(|t| (0..parts_per_task).map(move |s| (t, s)))
            .collect();
        let assembly: Vec<Mutex<Assembly<C>>> = tasks
            .iter()
            .map(|_| {
                Mutex::new(Assembly {
                    columns: (0..slots).map(|_| None).collect(),
                    left: parts_per_task,
                    read: Duration::ZERO,
                })
            })
            .collect();
        pool(
            move || Ok(parts),
            threads,
            move |&(t, s): &(usize, usize), tx: &tokio::sync::mpsc::Sender<PageScanned<T>>| {
                let task = &tasks[t];
                let start = Instant::now();
                let staged = match (slots > 0).then(|| column(&scan, task, s)) {
                    None => None,
                    Some(Err(e)) => {
                        let _ = tx.blocking_send(Err(external(&task.path, e)));
                        return false;
                    }
                    Some(Ok(Err(misfit))) => {
                        let _ =
                            tx.blocking_send(Ok((Err(misfit), start.elapsed(), Duration::ZERO)));
                        return false;
                    }
                    Some(Ok(Ok(c))) => Some(c),
                };
                let read = start.elapsed();
                let complete = {
                    let mut a = assembly[t].lock().unwrap_or_else(|e| e.into_inner());
                    if staged.is_some() {
                        a.columns[s] = staged;
                    }
                    a.read += read;
                    a.left -= 1;
                    (a.left == 0).then(|| (std::mem::take(&mut a.columns), a.read))
                };
                let Some((columns, read)) = complete else {
                    return true;
                };
                let start = Instant::now();
                let columns = columns.into_iter().flatten().collect();
                let item = match prepare(task.rows(), columns) {
                    Ok(prepared) => Ok((prepared, read, start.elapsed())),
                    Err(e) => Err(external(&task.path, e)),
                };
                let go_on = item.is_ok();
                tx.blocking_send(item).is_ok() && go_on
            },
        )
    }

    /// Every (file, metadata, row group) to read, the largest row groups first so the last
    /// ones to finish are short.
    fn plan(&self) -> Result<Vec<Task>> {
        let mut tasks = Vec::new();
        for path in &self.files {
            let file = open(path)?;
            let loaded = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
                .map_err(|e| external(path, e))?;
            let (metadata, projection) = self.hinted(path, &loaded)?;
            for rg in 0..metadata.metadata().num_row_groups() {
                let rows = metadata.metadata().row_group(rg).num_rows() as usize;
                tasks.push(Task {
                    path: path.clone(),
                    metadata: metadata.clone(),
                    projection: projection.clone(),
                    row_group: rg,
                    rows,
                });
            }
        }
        let mut tasks = self.keep_share(tasks, |t| t.rows as u64);
        tasks.sort_by_key(|t| std::cmp::Reverse(t.rows));
        Ok(tasks)
    }

    /// The file's metadata with the source's types as the read schema (value decimals as
    /// the file's own integers), and the root columns to read.
    fn hinted(
        &self,
        path: &std::path::Path,
        loaded: &ArrowReaderMetadata,
    ) -> Result<(ArrowReaderMetadata, Vec<usize>)> {
        let file_schema = loaded.schema();
        let descr = loaded.parquet_schema();
        if descr.num_columns() != file_schema.fields().len() {
            return Err(DataFusionError::NotImplemented(format!(
                "{}: nested Parquet columns",
                path.display()
            )));
        }
        let mut fields: Vec<Field> = file_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        let mut roots = Vec::new();
        for (c, name) in self.columns.iter().enumerate() {
            let Some((i, _)) = file_schema.column_with_name(name) else {
                return Err(DataFusionError::Plan(format!(
                    "{}: no column {name}",
                    path.display()
                )));
            };
            let wanted = match (&self.types[c], descr.column(i).physical_type()) {
                (DataType::Decimal128(p, s), PhysicalType::INT64) if self.values.contains(&c) => {
                    DataType::Decimal64(*p, *s)
                }
                (DataType::Decimal128(p, s), PhysicalType::INT32) if self.values.contains(&c) => {
                    DataType::Decimal32(*p, *s)
                }
                // Strings as dictionaries: a key's codes come from the dictionary indices
                // (`convert::dictionary_codes`) instead of hashing every string.
                (
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View,
                    PhysicalType::BYTE_ARRAY,
                ) if self.keys.contains(&c) => {
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
                }
                (t, _) => t.clone(),
            };
            fields[i] = fields[i].clone().with_data_type(wanted);
            roots.push(i);
        }
        let schema: SchemaRef = Arc::new(Schema::new_with_metadata(
            fields,
            file_schema.metadata().clone(),
        ));
        let metadata = ArrowReaderMetadata::try_new(
            Arc::clone(loaded.metadata()),
            ArrowReaderOptions::new().with_schema(schema),
        )
        .map_err(|e| external(path, e))?;
        Ok((metadata, roots))
    }

    /// Reads and converts one row group, sending each batch; false once sending failed or
    /// an error was sent.
    fn read(
        &self,
        task: &Task,
        layout: &BatchLayout,
        tx: &tokio::sync::mpsc::Sender<Scanned>,
    ) -> bool {
        let send_err = |e: DataFusionError| {
            let _ = tx.blocking_send(Err(e));
            false
        };
        let file = match open(&task.path) {
            Ok(f) => f,
            Err(e) => return send_err(e),
        };
        let mask = ProjectionMask::roots(task.metadata.parquet_schema(), task.projection.clone());
        let reader =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, task.metadata.clone())
                .with_projection(mask)
                .with_row_groups(vec![task.row_group])
                .with_batch_size(BATCH_ROWS.min(task.rows.max(1)))
                .build();
        let mut reader = match reader {
            Ok(r) => r,
            Err(e) => return send_err(external(&task.path, e)),
        };
        loop {
            let start = Instant::now();
            let batch = match reader.next() {
                None => return true,
                Some(Ok(b)) => b,
                Some(Err(e)) => return send_err(external(&task.path, e)),
            };
            // The reader returns the file's column order: put it in the source's.
            let columns = self
                .columns
                .iter()
                .map(|name| batch.column_by_name(name).cloned())
                .collect::<Option<Vec<_>>>();
            let Some(columns) = columns else {
                return send_err(DataFusionError::Internal(format!(
                    "{}: the reader left out a projected column",
                    task.path.display()
                )));
            };
            let decoded = start.elapsed();
            let start = Instant::now();
            let converted = layout.convert_columns(&columns, batch.num_rows());
            if tx
                .blocking_send(Ok((converted, decoded, start.elapsed())))
                .is_err()
            {
                return false;
            }
        }
    }
}

/// Runs `work` over the tasks `plan` lists on `threads` blocking workers, each taking the
/// next task from a shared counter; what the workers send arrives in no particular order.
/// `work` returns false to stop every worker (the consumer went away, or it sent an error).
fn pool<T, W, P>(plan: P, threads: usize, work: W) -> impl Stream<Item = Result<T>> + Send
where
    T: Send + 'static,
    W: Fn(&P::Task, &tokio::sync::mpsc::Sender<Result<T>>) -> bool + Send + Sync + 'static,
    P: Planner,
{
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<T>>(threads * 2);
    let work = Arc::new(work);
    tokio::task::spawn_blocking(move || {
        let tasks = match plan.tasks() {
            Ok(p) => Arc::new(p),
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        };
        let next = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..threads.min(tasks.len()).max(1))
            .map(|_| {
                let (tasks, next, tx, work) = (
                    Arc::clone(&tasks),
                    Arc::clone(&next),
                    tx.clone(),
                    Arc::clone(&work),
                );
                std::thread::spawn(move || loop {
                    let Some(task) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        return;
                    };
                    // A worker that panicked would otherwise just stop sending: the stream
                    // would end early and the query answer from the rows it got (a wrong
                    // answer with exit status 0). The panic becomes the stream's error.
                    let worked =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(task, &tx)));
                    let go_on = worked.unwrap_or_else(|panic| {
                        let _ = tx.blocking_send(Err(DataFusionError::Internal(format!(
                            "a scan worker failed: {}",
                            crate::guard::panic_text(panic.as_ref())
                        ))));
                        false
                    });
                    if !go_on {
                        next.store(tasks.len(), Ordering::Relaxed);
                        return;
                    }
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|s| (s, rx)) })
}

/// What lists a [`pool`]'s tasks (on the pool's blocking thread).
trait Planner: Send + 'static {
    type Task: Send + Sync + 'static;
    fn tasks(self) -> Result<Vec<Self::Task>>;
}

impl<T: Send + Sync + 'static, F: FnOnce() -> Result<Vec<T>> + Send + 'static> Planner for F {
    type Task = T;
    fn tasks(self) -> Result<Vec<T>> {
        self()
    }
}

/// One row group of one file.
struct Task {
    path: PathBuf,
    metadata: ArrowReaderMetadata,
    projection: Vec<usize>,
    row_group: usize,
    rows: usize,
}

fn open(path: &std::path::Path) -> Result<std::fs::File> {
    std::fs::File::open(path)
        .map_err(|e| DataFusionError::Execution(format!("{}: {e}", path.display())))
}

fn external(path: &std::path::Path, e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("{}: {e}", path.display()))
}
