//! One column chunk's bytes, read from its file with one read and handed to the Parquet
//! page reader as the [`ChunkReader`] it pages through.
//!
//! Why: given the file itself, the page reader opens a fresh 8 KiB-buffered reader for every
//! page header (a descriptor duplicated, a seek, 8 KiB read) and reads every payload with
//! another duplicate, seek and read. TPC-H's writers cap pages at 20,000 values, so Q6 at
//! SF 10 reads some 12,000 pages: tens of thousands of system calls and 8 KiB copies spread
//! over the decoding threads. Read at once, a page header is parsed in place and a payload
//! is a slice of the chunk's buffer.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use bytes::Bytes;
use datafusion::parquet::errors::{ParquetError, Result as ParquetResult};
use datafusion::parquet::file::metadata::ColumnChunkMetaData;
use datafusion::parquet::file::reader::{ChunkReader, Length};

/// A column chunk's bytes addressed by their offsets in the file.
#[derive(Clone, Debug)]
pub struct ChunkBytes {
    /// File offset of the chunk's first byte.
    start: u64,
    /// The chunk.
    bytes: Bytes,
}

impl ChunkBytes {
    /// Reads the bytes `chunk`'s metadata places in `file` (of `file_len` bytes); a range past
    /// the file's end is an error that names it, not an allocation of what the metadata claims.
    pub fn read(
        file: &mut File,
        file_len: u64,
        chunk: &ColumnChunkMetaData,
    ) -> Result<Self, String> {
        let (start, len) = chunk.byte_range();
        let end = start
            .checked_add(len)
            .filter(|&e| e <= file_len)
            .ok_or_else(|| {
                format!(
                    "column {} claims bytes {start}..{} of a {file_len}-byte file",
                    chunk.column_path(),
                    start.saturating_add(len)
                )
            })?;
        let mut buf = Vec::with_capacity((end - start) as usize);
        file.seek(SeekFrom::Start(start))
            .and_then(|_| file.take(len).read_to_end(&mut buf))
            .map_err(|e| format!("reading column {}: {e}", chunk.column_path()))?;
        if buf.len() as u64 != len {
            return Err(format!(
                "column {}: read {} of its {len} bytes",
                chunk.column_path(),
                buf.len()
            ));
        }
        Ok(Self {
            start,
            bytes: buf.into(),
        })
    }

    /// The chunk-relative offset of file offset `at`.
    fn offset(&self, at: u64) -> ParquetResult<u64> {
        at.checked_sub(self.start).ok_or_else(|| {
            ParquetError::General(format!(
                "offset {at} is before the column chunk at {}",
                self.start
            ))
        })
    }
}

impl Length for ChunkBytes {
    fn len(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }
}

impl ChunkReader for ChunkBytes {
    type T = <Bytes as ChunkReader>::T;

    fn get_read(&self, start: u64) -> ParquetResult<Self::T> {
        self.bytes.get_read(self.offset(start)?)
    }

    fn get_bytes(&self, start: u64, length: usize) -> ParquetResult<Bytes> {
        self.bytes.get_bytes(self.offset(start)?, length)
    }
}
