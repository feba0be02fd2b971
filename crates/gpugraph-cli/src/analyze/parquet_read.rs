//! Parquet decoding on several threads: the row groups split into contiguous ranges, one
//! reader per range.
//!
//! Why: one `ParquetRecordBatchReader` decodes every row group on the calling thread; at 50M
//! rows that was most of `analyze`'s 723 ms load on the H200 host (16 cores idle). The
//! ranges are handed to the caller in file order, and the caller re-chunks rows to
//! `CHUNK_ROWS` whatever the batch boundaries, so the loaded batches are the same as from one
//! reader. The first error in file order wins.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::ArrowError;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

/// Most decoding threads.
const MAX_THREADS: usize = 16;

/// Decodes the `projection` columns of every row group of `path` with `batch_size` rows per
/// batch, handing each range's batches (in file order) to `sink` as soon as it and all ranges
/// before it are done. `metadata` is the file's footer, already read.
pub fn read_parallel(
    path: &Path,
    metadata: &ArrowReaderMetadata,
    projection: &[usize],
    batch_size: usize,
    sink: &mut dyn FnMut(Vec<Result<RecordBatch, ArrowError>>) -> Result<()>,
) -> Result<()> {
    let groups = metadata.metadata().num_row_groups();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
        .min(groups)
        .max(1);
    let read = |range: std::ops::Range<usize>| -> Result<Vec<Result<RecordBatch, ArrowError>>> {
        let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata.clone());
        let mask = ProjectionMask::roots(builder.parquet_schema(), projection.iter().copied());
        let reader = builder
            .with_projection(mask)
            .with_row_groups(range.collect())
            .with_batch_size(batch_size)
            .build()
            .with_context(|| format!("reading {}", path.display()))?;
        // A failed batch ends its range: the error is the range's last item.
        let mut out = Vec::new();
        for batch in reader {
            let failed = batch.is_err();
            out.push(batch);
            if failed {
                break;
            }
        }
        Ok(out)
    };
    if threads == 1 {
        return sink(read(0..groups)?);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let range = groups * k / threads..groups * (k + 1) / threads;
                scope.spawn(move || read(range))
            })
            .collect();
        // Joined in file order; a sink error or a failed range stops the hand-over, and the
        // scope still joins the rest before returning.
        for h in handles {
            let batches = match h.join() {
                Ok(result) => result?,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            sink(batches)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float32Array, Int32Array};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    /// A Parquet file of `groups` row groups of 1,000 rows (two columns, with nulls).
    fn file(groups: usize) -> tempfile::NamedTempFile {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Float32, true),
        ]));
        let out = tempfile::NamedTempFile::new().unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(1000))
            .build();
        let mut w = parquet::arrow::ArrowWriter::try_new(
            out.reopen().unwrap(),
            schema.clone(),
            Some(props),
        )
        .unwrap();
        let n = (groups * 1000) as i32;
        let a = Int32Array::from_iter((0..n).map(|i| (i % 7 != 0).then_some(i)));
        let b = Float32Array::from_iter((0..n).map(|i| (i % 5 != 0).then_some(i as f32 * 0.5)));
        w.write(&RecordBatch::try_new(schema, vec![Arc::new(a), Arc::new(b)]).unwrap())
            .unwrap();
        w.close().unwrap();
        out
    }

    fn rows(batches: &[RecordBatch]) -> RecordBatch {
        arrow_select::concat::concat_batches(&batches[0].schema(), batches).unwrap()
    }

    #[test]
    fn parallel_ranges_give_the_rows_of_one_reader_in_order() {
        for groups in [1, 2, 7] {
            let f = file(groups);
            let metadata =
                ArrowReaderMetadata::load(&File::open(f.path()).unwrap(), Default::default())
                    .unwrap();
            assert_eq!(metadata.metadata().num_row_groups(), groups);
            let mut got = Vec::new();
            let mut handed = 0;
            read_parallel(f.path(), &metadata, &[1, 0], 300, &mut |batches| {
                handed += 1;
                for b in batches {
                    got.push(b?);
                }
                Ok(())
            })
            .unwrap();
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            assert_eq!(handed, threads.min(MAX_THREADS).min(groups).max(1));
            let one: Vec<RecordBatch> =
                ParquetRecordBatchReaderBuilder::try_new(File::open(f.path()).unwrap())
                    .unwrap()
                    .build()
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
            assert_eq!(rows(&got), rows(&one), "{groups} row groups");
        }
    }
}
