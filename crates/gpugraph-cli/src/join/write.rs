//! The output of `gpugraph join`: record batches to Parquet (Snappy), Arrow IPC (file or
//! stream) or CSV, written into a [`PendingFile`] that only a complete write commits.

use std::io::BufWriter;
use std::path::Path;

use anyhow::{Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::analyze::load::FileKind;
use crate::output::PendingFile;

/// Writes `batches` (all of `schema`) as `kind` into `pending` and commits it to `target`.
pub fn write(
    pending: PendingFile,
    target: &Path,
    kind: FileKind,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> Result<()> {
    let out = BufWriter::with_capacity(1 << 22, pending.file());
    let context = || format!("writing {}", target.display());
    match kind {
        FileKind::Parquet => {
            let props = parquet::file::properties::WriterProperties::builder()
                .set_compression(parquet::basic::Compression::SNAPPY)
                .build();
            let mut w = parquet::arrow::ArrowWriter::try_new(out, schema, Some(props))
                .with_context(context)?;
            for b in batches {
                w.write(b).with_context(context)?;
            }
            flush(w.into_inner().with_context(context)?).with_context(context)?;
        }
        FileKind::IpcFile => {
            let mut w =
                arrow_ipc::writer::FileWriter::try_new(out, &schema).with_context(context)?;
            for b in batches {
                w.write(b).with_context(context)?;
            }
            w.finish().with_context(context)?;
            flush(w.into_inner().with_context(context)?).with_context(context)?;
        }
        FileKind::IpcStream => {
            let mut w =
                arrow_ipc::writer::StreamWriter::try_new(out, &schema).with_context(context)?;
            for b in batches {
                w.write(b).with_context(context)?;
            }
            w.finish().with_context(context)?;
            flush(w.into_inner().with_context(context)?).with_context(context)?;
        }
        FileKind::Csv => {
            let mut w = arrow_csv::WriterBuilder::new().with_header(true).build(out);
            for b in batches {
                w.write(b).with_context(context)?;
            }
            flush(w.into_inner()).with_context(context)?;
        }
    }
    pending.commit()
}

/// Flushes a buffered writer, reporting the error its drop would swallow.
fn flush<W: std::io::Write>(mut w: W) -> std::io::Result<()> {
    w.flush()
}
