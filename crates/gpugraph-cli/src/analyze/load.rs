//! Loading a table file into Arrow record batches: the format by extension (CSV, Parquet,
//! Arrow IPC file or stream), the schema (CSV: inferred from a sample), the checks of every
//! requested column against it (before any data is read), and a projected read of only those
//! columns, re-chunked to [`CHUNK_ROWS`] rows with progress lines on stderr.

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::args::Filter;
use super::column_types::{cast_for_upload, describe};
pub use super::column_types::{classify, upload_schema, ColumnClass};

/// Rows per uploaded chunk (one GPU chunk per record batch): large enough that per-chunk
/// dispatch overhead vanishes, small enough that a float32x2 chunk (8 MiB) binds on any device.
pub const CHUNK_ROWS: usize = 1 << 20;
/// CSV schema inference reads at most this many records.
pub const CSV_INFER_ROWS: usize = 1_000_000;
/// CSV fields matching this are nulls (pandas' and R's spellings of missing).
pub const CSV_NULLS: &str = r"^(|NA|N/A|NULL|null|None)$";

/// The table file formats, chosen by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// Comma-separated values with a header row.
    Csv,
    /// Apache Parquet.
    Parquet,
    /// Arrow IPC file format (random access, footer).
    IpcFile,
    /// Arrow IPC stream format.
    IpcStream,
}

impl FileKind {
    /// The kind of `path` by its extension; the error names the extension and the supported ones.
    pub fn of(path: &Path) -> Result<Self> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        Ok(match ext.as_deref() {
            Some("csv") => FileKind::Csv,
            Some("parquet") | Some("pq") => FileKind::Parquet,
            Some("arrow") | Some("ipc") | Some("feather") => FileKind::IpcFile,
            Some("arrows") => FileKind::IpcStream,
            other => bail!(
                "{}: unsupported file type {}; expected .csv, .parquet (.pq), .arrow (.ipc, .feather) or .arrows",
                path.display(),
                other.map_or("(no extension)".to_string(), |e| format!("'.{e}'"))
            ),
        })
    }

    /// Lower-case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Csv => "csv",
            FileKind::Parquet => "parquet",
            FileKind::IpcFile => "arrow-ipc-file",
            FileKind::IpcStream => "arrow-ipc-stream",
        }
    }
}

/// What the analysis asks of the file: the roles and their column names.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// `--value`.
    pub value: Option<String>,
    /// `--x`.
    pub x: Option<String>,
    /// `--y`.
    pub y: Option<String>,
    /// `--group`.
    pub group: Option<String>,
    /// `--z` (the grid's averaged column).
    pub z: Option<String>,
    /// `--filter`s.
    pub filters: Vec<Filter>,
    /// Columns read for another command (`join`): checked to exist, any type.
    pub other: Vec<String>,
    /// Read every column of the file (then `columns()` only orders the checks).
    pub all_columns: bool,
    /// Keep the file's types: no cast for the GPU upload ([`upload_type`]), for commands
    /// that write the values back out (`join`).
    pub keep_types: bool,
}

impl Request {
    /// Distinct column names in first-use order.
    pub fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let names = [&self.value, &self.x, &self.y, &self.group, &self.z]
            .into_iter()
            .flatten()
            .chain(self.filters.iter().map(|f| &f.column))
            .chain(&self.other);
        for n in names {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
        out
    }

    /// The sorted schema indices to read: every column with [`Request::all_columns`], else
    /// those of `names`.
    fn projection(&self, schema: &Schema, names: &[String]) -> Result<Vec<usize>> {
        if self.all_columns {
            return Ok((0..schema.fields().len()).collect());
        }
        project(schema, names)
    }

    /// Checks every requested column exists with a usable type; the error names the column,
    /// its type, the role, and lists the columns that would fit.
    pub fn check(&self, schema: &Schema, file: &Path) -> Result<()> {
        let roles = [
            ("--value", &self.value, ColumnClass::Numeric),
            ("--x", &self.x, ColumnClass::Numeric),
            ("--y", &self.y, ColumnClass::Numeric),
            ("--group", &self.group, ColumnClass::Text),
        ];
        let listing = |class: Option<ColumnClass>| {
            let names: Vec<String> = schema
                .fields()
                .iter()
                .filter(|f| class.is_none_or(|c| classify(f.data_type()) == c))
                .map(|f| format!("{} ({})", f.name(), describe(f.data_type())))
                .collect();
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        let find = |role: &str, name: &str| {
            let same: Vec<usize> = schema
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| f.name() == name)
                .map(|(i, _)| i + 1)
                .collect();
            if same.len() > 1 {
                let at: Vec<String> = same.iter().map(ToString::to_string).collect();
                return Err(anyhow::anyhow!(
                    "{role}: {} has {} columns named '{name}' (columns {}); the choice would be ambiguous, so rename them",
                    file.display(),
                    same.len(),
                    at.join(", ")
                ));
            }
            schema.field_with_name(name).map_err(|_| {
                anyhow::anyhow!(
                    "{role}: no column '{name}' in {}; available columns: {}",
                    file.display(),
                    listing(None)
                )
            })
        };
        for (role, name, want) in roles {
            let Some(name) = name else { continue };
            let field = find(role, name)?;
            let class = classify(field.data_type());
            if class != want {
                let (need, class_name) = match want {
                    ColumnClass::Numeric => (
                        "a numeric column (integer, floating point or boolean)",
                        "numeric",
                    ),
                    _ => ("a text column (Utf8 or a dictionary of strings)", "text"),
                };
                bail!(
                    "{role}: column '{name}' has type {}, but {role} needs {need}; {class_name} columns in {}: {}",
                    describe(field.data_type()),
                    file.display(),
                    listing(Some(want))
                );
            }
        }
        for name in &self.other {
            find("column", name)?;
        }
        for f in &self.filters {
            let field = find("--filter", &f.column)?;
            match classify(field.data_type()) {
                ColumnClass::Numeric => {
                    f.number().map_err(anyhow::Error::msg)?;
                }
                ColumnClass::Text => {
                    if !matches!(f.op, super::args::CmpOp::Eq | super::args::CmpOp::Ne) {
                        bail!(
                            "--filter '{f}': column '{}' has type {}; text columns support only == and !=",
                            f.column,
                            describe(field.data_type())
                        );
                    }
                }
                ColumnClass::Other => bail!(
                    "--filter '{f}': column '{}' has type {}, which cannot be compared on the GPU; numeric and text columns in {}: {}",
                    f.column,
                    describe(field.data_type()),
                    file.display(),
                    [listing(Some(ColumnClass::Numeric)), listing(Some(ColumnClass::Text))].join(", ")
                ),
            }
        }
        Ok(())
    }
}

/// A loaded table: the projected schema and its record batches (each at most [`CHUNK_ROWS`]
/// rows, none empty).
pub struct Loaded {
    /// The file's format.
    pub kind: FileKind,
    /// Schema of the projected columns.
    pub schema: SchemaRef,
    /// The record batches.
    pub batches: Vec<RecordBatch>,
    /// Total rows.
    pub rows: u64,
}

impl Loaded {
    /// Null rows of column `name` over all batches (from Arrow's metadata; no scan).
    pub fn null_count(&self, name: &str) -> u64 {
        let Ok(i) = self.schema.index_of(name) else {
            return 0;
        };
        self.batches
            .iter()
            .map(|b| b.column(i).null_count() as u64)
            .sum()
    }
}

/// Reads the schema of `path`, checks `request` against it, then reads only the requested
/// columns. `progress` receives progress lines (rows so far, and the total when known).
pub fn load(path: &Path, request: &Request, progress: &mut dyn FnMut(String)) -> Result<Loaded> {
    // arrow-ipc 60 panics on some corrupt buffer lengths and offsets instead of returning an
    // error (found by fuzz/, kept as fuzz/seeds/table/arrow-ipc-buffer-length-panic): turn
    // such a panic into a named error, quietly (the default hook would print a panic message).
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        load_unguarded(path, request, progress)
    }));
    std::panic::set_hook(hook);
    match loaded {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("the reader failed");
            bail!(
                "{}: the file is corrupt (the reader gave up: {what})",
                path.display()
            )
        }
    }
}

/// Refuses a directory or a device (a CSV symlinked to `/dev/zero` would be read without
/// end) by what it is, before anything is read. FIFOs stay allowed: reading one blocks
/// until its writer comes, as `cat` would.
fn check_not_device(path: &Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::metadata(path) else {
        // Missing or unreadable: opening it names the problem.
        return Ok(());
    };
    let t = meta.file_type();
    let what = if t.is_dir() {
        "a directory"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        return Ok(());
    };
    bail!(
        "{}: not a regular file ({what}); a table must be a file",
        path.display()
    )
}

fn load_unguarded(
    path: &Path,
    request: &Request,
    progress: &mut dyn FnMut(String),
) -> Result<Loaded> {
    let kind = FileKind::of(path)?;
    check_not_device(path)?;
    let open = || File::open(path).with_context(|| format!("opening {}", path.display()));
    let names = request.columns();
    let mut sink = BatchSink::new(path, progress);
    sink.keep_types = request.keep_types;
    let schema = match kind {
        FileKind::Csv => {
            let format = csv_format()?;
            let mut file = open()?;
            let (full, _) = format
                .infer_schema(BufReader::new(&mut file), Some(CSV_INFER_ROWS))
                .map_err(|e| read_error(path, e))?;
            request.check(&full, path)?;
            file.seek(SeekFrom::Start(0))
                .with_context(|| format!("rewinding {}", path.display()))?;
            let projection = request.projection(&full, &names)?;
            let reader = arrow_csv::ReaderBuilder::new(Arc::new(full.clone()))
                .with_format(format)
                .with_batch_size(CHUNK_ROWS)
                .with_projection(projection.clone())
                .build(BufReader::with_capacity(1 << 20, file))
                .map_err(|e| read_error(path, e))?;
            sink.drain(reader)?;
            Arc::new(full.project(&projection)?)
        }
        FileKind::Parquet => {
            let builder = ParquetRecordBatchReaderBuilder::try_new(open()?)
                .with_context(|| format!("reading the Parquet footer of {}", path.display()))?;
            let full = builder.schema().clone();
            request.check(&full, path)?;
            let projection = request.projection(&full, &names)?;
            sink.total = u64::try_from(builder.metadata().file_metadata().num_rows()).ok();
            let mask = ProjectionMask::roots(builder.parquet_schema(), projection.clone());
            let metadata = builder.metadata().clone();
            let schema = builder
                .with_projection(mask)
                .with_batch_size(CHUNK_ROWS)
                .build()
                .with_context(|| format!("reading {}", path.display()))?
                .schema();
            // The footer was read once; each decoding thread reuses it.
            let reader_metadata = parquet::arrow::arrow_reader::ArrowReaderMetadata::try_new(
                metadata,
                Default::default(),
            )
            .with_context(|| format!("reading the Parquet footer of {}", path.display()))?;
            super::parquet_read::read_parallel(
                path,
                &reader_metadata,
                &projection,
                CHUNK_ROWS,
                &mut |batches| sink.drain(batches.into_iter()),
            )?;
            schema
        }
        FileKind::IpcFile | FileKind::IpcStream => {
            use arrow_ipc::reader::{FileReader, StreamReader};
            // Both readers take `try_new(reader, projection)` but share no trait for it: the
            // schema is read once unprojected, checked, then the file is read projected.
            macro_rules! read_ipc {
                ($reader:ident) => {{
                    let full = $reader::try_new(BufReader::new(open()?), None)
                        .map_err(|e| read_error(path, e))?
                        .schema();
                    request.check(&full, path)?;
                    let projection = request.projection(&full, &names)?;
                    let reader =
                        $reader::try_new(BufReader::new(open()?), Some(projection.clone()))
                            .map_err(|e| read_error(path, e))?;
                    // arrow 59's readers report the file's whole schema even when projected;
                    // the batches carry the projected one.
                    sink.drain(reader)?;
                    Arc::new(full.project(&projection)?)
                }};
            }
            if kind == FileKind::IpcFile {
                super::ipc_extents::check_ipc_file_extents(path)?;
                read_ipc!(FileReader)
            } else {
                read_ipc!(StreamReader)
            }
        }
    };
    let keep_types = sink.keep_types;
    let batches = sink.finish(&schema)?;
    let schema = if keep_types {
        schema
    } else {
        upload_schema(&schema)
    };
    let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
    Ok(Loaded {
        kind,
        schema,
        batches,
        rows,
    })
}

/// The schema of `path` without reading its rows (CSV: inferred from a sample, as [`load`]
/// does), for commands that choose their columns by name first (`join`).
pub fn read_schema(path: &Path) -> Result<SchemaRef> {
    let kind = FileKind::of(path)?;
    check_not_device(path)?;
    let open = || File::open(path).with_context(|| format!("opening {}", path.display()));
    Ok(match kind {
        FileKind::Csv => {
            let (schema, _) = csv_format()?
                .infer_schema(BufReader::new(open()?), Some(CSV_INFER_ROWS))
                .map_err(|e| read_error(path, e))?;
            Arc::new(schema)
        }
        FileKind::Parquet => ParquetRecordBatchReaderBuilder::try_new(open()?)
            .with_context(|| format!("reading the Parquet footer of {}", path.display()))?
            .schema()
            .clone(),
        FileKind::IpcFile => {
            super::ipc_extents::check_ipc_file_extents(path)?;
            arrow_ipc::reader::FileReader::try_new(BufReader::new(open()?), None)
                .map_err(|e| read_error(path, e))?
                .schema()
        }
        FileKind::IpcStream => {
            arrow_ipc::reader::StreamReader::try_new(BufReader::new(open()?), None)
                .map_err(|e| read_error(path, e))?
                .schema()
        }
    })
}

fn csv_format() -> Result<arrow_csv::reader::Format> {
    let nulls = regex::Regex::new(CSV_NULLS).context("compiling the CSV null pattern")?;
    Ok(arrow_csv::reader::Format::default()
        .with_header(true)
        .with_null_regex(nulls))
}

fn read_error(path: &Path, e: ArrowError) -> anyhow::Error {
    anyhow::anyhow!(
        "reading {}: {}",
        path.display(),
        csv_line_fix(&e.to_string())
    )
}

/// arrow-csv numbers the data rows of a value's parse error from 1 after the header, so its
/// "at line N" is the file's line N + 1 (its field-count errors count the header already).
fn csv_line_fix(message: &str) -> String {
    const MARK: &str = " at line ";
    if !message.contains("Error while parsing value") {
        return message.to_string();
    }
    let Some(at) = message.find(MARK) else {
        return message.to_string();
    };
    let start = at + MARK.len();
    let digits = message[start..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(message.len(), |d| start + d);
    match message[start..digits].parse::<u64>() {
        Ok(n) => format!("{}{}{}", &message[..start], n + 1, &message[digits..]),
        Err(_) => message.to_string(),
    }
}

/// Sorted schema indices of `names` (readers return columns in schema order).
fn project(schema: &Schema, names: &[String]) -> Result<Vec<usize>> {
    let mut idx = names
        .iter()
        .map(|n| schema.index_of(n).map_err(anyhow::Error::from))
        .collect::<Result<Vec<_>>>()?;
    idx.sort_unstable();
    idx.dedup();
    Ok(idx)
}

/// Collects batches re-chunked to [`CHUNK_ROWS`] (slicing large ones, concatenating small
/// ones), reporting progress at most once per second.
struct BatchSink<'a> {
    path: PathBuf,
    progress: &'a mut dyn FnMut(String),
    total: Option<u64>,
    rows: u64,
    started: Instant,
    last: Instant,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    out: Vec<RecordBatch>,
    /// Skip [`cast_for_upload`] (see [`Request::keep_types`]).
    keep_types: bool,
}

impl<'a> BatchSink<'a> {
    fn new(path: &Path, progress: &'a mut dyn FnMut(String)) -> Self {
        let now = Instant::now();
        Self {
            path: path.to_path_buf(),
            progress,
            total: None,
            rows: 0,
            started: now,
            last: now,
            pending: Vec::new(),
            pending_rows: 0,
            out: Vec::new(),
            keep_types: false,
        }
    }

    fn drain(
        &mut self,
        reader: impl Iterator<Item = Result<RecordBatch, ArrowError>>,
    ) -> Result<()> {
        for batch in reader {
            let batch = batch.map_err(|e| read_error(&self.path, e))?;
            let batch = if self.keep_types {
                batch
            } else {
                cast_for_upload(batch)?
            };
            self.push(batch)?;
            if self.last.elapsed() >= Duration::from_secs(1) {
                self.last = Instant::now();
                self.report();
            }
        }
        Ok(())
    }

    fn report(&mut self) {
        let share = self
            .total
            .filter(|&t| t > 0)
            .map(|t| {
                format!(
                    " of {} ({:.0}%)",
                    thousands(t),
                    self.rows as f64 * 100.0 / t as f64
                )
            })
            .unwrap_or_default();
        let line = format!(
            "load: {} rows{share} in {:.1} s",
            thousands(self.rows),
            self.started.elapsed().as_secs_f64()
        );
        (self.progress)(line);
    }

    fn push(&mut self, mut batch: RecordBatch) -> Result<()> {
        self.rows += batch.num_rows() as u64;
        while batch.num_rows() > 0 {
            let take = (CHUNK_ROWS - self.pending_rows).min(batch.num_rows());
            self.pending.push(batch.slice(0, take));
            self.pending_rows += take;
            batch = batch.slice(take, batch.num_rows() - take);
            if self.pending_rows == CHUNK_ROWS {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let parts = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        match parts.len() {
            0 => {}
            1 => self.out.extend(parts),
            _ => {
                let schema = parts[0].schema();
                self.out
                    .push(arrow_select::concat::concat_batches(&schema, &parts)?);
            }
        }
        Ok(())
    }

    fn finish(mut self, schema: &SchemaRef) -> Result<Vec<RecordBatch>> {
        let schema = &if self.keep_types {
            schema.clone()
        } else {
            upload_schema(schema)
        };
        self.flush()?;
        self.report();
        // Readers may attach field metadata the projected schema lacks; the upload checks
        // batches against one schema, so rebuild them under it.
        self.out
            .into_iter()
            .map(|b| RecordBatch::try_new(schema.clone(), b.columns().to_vec()).map_err(Into::into))
            .collect()
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_extension() {
        assert_eq!(FileKind::of(Path::new("a.CSV")).unwrap(), FileKind::Csv);
        assert_eq!(
            FileKind::of(Path::new("a.parquet")).unwrap(),
            FileKind::Parquet
        );
        assert_eq!(
            FileKind::of(Path::new("a.arrow")).unwrap(),
            FileKind::IpcFile
        );
        assert_eq!(
            FileKind::of(Path::new("a.arrows")).unwrap(),
            FileKind::IpcStream
        );
        let e = FileKind::of(Path::new("t.xlsx")).unwrap_err().to_string();
        assert!(e.contains("'.xlsx'") && e.contains(".parquet"), "{e}");
        let e = FileKind::of(Path::new("t")).unwrap_err().to_string();
        assert!(e.contains("no extension"), "{e}");
    }

    #[test]
    fn csv_parse_errors_give_file_lines() {
        assert_eq!(
            csv_line_fix("Parser error: Error while parsing value 'x' as type 'Int64' for column 0 at line 1. Row data: '[x]'"),
            "Parser error: Error while parsing value 'x' as type 'Int64' for column 0 at line 2. Row data: '[x]'"
        );
        let fields = "Csv error: incorrect number of fields for line 3, expected 2 got 1";
        assert_eq!(csv_line_fix(fields), fields);
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(50_000_000), "50,000,000");
    }
}
