//! Parquet pages decoded on the GPU: the host reads and decompresses a row group's pages and
//! parses their run headers; the GPU expands the runs into the aggregate's 32-bit columns.
//!
//! Why: from Parquet, the GPU aggregate is bound by the host's decoding (TPC-H SF 10 on the
//! H200's 16 cores, 2026-12-02: Q6 scanned in 117 ms of a 174 ms query; a profile of the
//! Arrow reader on its columns spent 27% in Snappy, 18% expanding dictionary indices, 14%
//! narrowing the values to 32 bits and 6% zero-filling buffers). Here the host only
//! decompresses and walks each page's run headers (a few per 512 values); the GPU, which
//! has memory bandwidth to spare, expands the bit-packed indices through the dictionary.
//! What travels is the compressed-away form: a dictionary index of TPC-H's lineitem needs
//! 1–12 bits a value, not 32.
//!
//! Contract. [`PageScan::of`] accepts a scan when every column it reads is flat, of a type
//! whose words equal the file's integers (Int8–Int64, Date32, decimals stored as INT32 or
//! INT64) or a string group key, and every row group's statistics say it has no nulls.
//! [`read_column`] then parses one column chunk: it writes its pages' payloads into a
//! [`RegionSink`] as each page is decompressed (64-bit plain values narrowed to their low
//! words) and returns the [`Piece`]s of at most [`PIECE_VALUES`] values that cover its rows
//! in order (a run of one dictionary index, a bit-packed stretch of indices, or plain 32-bit
//! integers), and its dictionary (value columns: as words, with their bounds; keys: as
//! strings the exec codes). Pages it cannot expand (another encoding, a null after all,
//! values past i32) make the row group a [`Misfit`], and the caller runs the CPU plan.
//! `gpu.rs` stages each column straight into upload slabs (`upload.rs`, reused across row
//! groups and queries) and expands a row group;
//! [`read_row_group`] parses one into memory and [`expand_cpu`] is the kernel's oracle.

use std::path::PathBuf;
use std::sync::Arc;

use bytemuck::{Pod, Zeroable};
use datafusion::arrow::array::{ArrayRef, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::parquet::basic::{Encoding, Type as PhysicalType};
use datafusion::parquet::column::page::{Page, PageReader};
use datafusion::parquet::file::metadata::ParquetMetaData;
use datafusion::parquet::file::properties::ReaderProperties;
use datafusion::parquet::file::serialized_reader::SerializedPageReader;

use crate::convert::{ColumnStats, Misfit};
use chunk::ChunkBytes;
use runs::{all_set, parse_runs, plain_stats};

mod chunk;
mod gpu;
mod runs;
#[cfg(test)]
pub(crate) mod tests;
mod upload;

pub use gpu::{read_staged, stage, DecodeStatus, PageChunk, StageTimes, StagedColumn};
pub use upload::{Slab, UploadPool};

/// Most values one piece covers: one workgroup of the expand kernel.
pub const PIECE_VALUES: u32 = 256;

/// The piece's values repeat one dictionary index (`value`).
pub const KIND_RUN: u32 = 0;
/// The piece's values are `width`-bit dictionary indices, packed from bit 0 of byte `src`.
pub const KIND_PACKED: u32 = 1;
/// The piece's values are little-endian 32-bit integers from byte `src` (4-aligned); the
/// host narrows 64-bit plain pages to them (after checking that they fit i32).
pub const KIND_PLAIN32: u32 = 2;

/// One stretch of a column's rows for one workgroup of the expand kernel (`decode.wgsl`'s
/// `Piece`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Piece {
    /// First output row.
    pub row: u32,
    /// Values (1 ..= [`PIECE_VALUES`]).
    pub count: u32,
    /// Byte offset of the piece's data in the column's byte region.
    pub src: u32,
    /// `KIND_*`.
    pub kind: u32,
    /// Bits per packed index.
    pub width: u32,
    /// The index of a run.
    pub value: u32,
    /// Entries of the column's table; an index past it is a corrupt page.
    pub table_len: u32,
    /// Padding.
    pub pad: u32,
}

/// What a column slot's table holds.
#[derive(Clone, Debug)]
pub enum Table {
    /// A value column: its dictionary's entries as i32 words (empty without a dictionary).
    Words(Vec<u32>),
    /// A group key: its dictionary's entries as strings, which the exec maps to the query's
    /// codes.
    Strings(ArrayRef),
}

/// One column slot of a row group, parsed on the host; its byte region went to a
/// [`RegionSink`] page by page.
#[derive(Clone, Debug)]
pub struct HostColumn {
    /// Bytes of the region: the payloads, each 4-aligned, and a zero word after the last so
    /// the kernel may read one word past any packed index.
    pub region_len: usize,
    /// The pieces, in row order, covering every row once.
    pub pieces: Vec<Piece>,
    /// The dictionary.
    pub table: Table,
    /// Bounds of the column's values (value columns; dictionary entries count whether used
    /// or not, so this may be wider than the values).
    pub stats: ColumnStats,
    /// Time spent reading the column chunk's bytes from its file.
    pub read_time: std::time::Duration,
}

/// Where a column's byte region goes while its pages are parsed: each byte once, in
/// order, as each page is decompressed (so the bytes are still in the core's cache, and
/// upload memory that is write-combined sees each byte once).
pub trait RegionSink {
    /// Writes `bytes` at byte `at` of the region (`at` is where the last write ended).
    fn put(&mut self, at: usize, bytes: &[u8]);
}

impl RegionSink for Vec<u8> {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        self.resize(at, 0);
        self.extend_from_slice(bytes);
    }
}

/// One row group parsed on the host into memory (the oracle's and tests' form; the scan
/// stages each column as it parses it instead).
#[derive(Clone, Debug)]
pub struct HostChunk {
    /// Rows.
    pub rows: usize,
    /// Column slots.
    pub columns: Vec<HostColumn>,
    /// Each slot's byte region.
    pub regions: Vec<Vec<u8>>,
}

/// How a slot's column is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotKind {
    Value(PhysicalType),
    Key,
}

/// The page-decoding form of a direct scan (see the module docs).
#[derive(Clone, Debug)]
pub struct PageScan {
    /// Per slot: its leaf column in the files, its name and how it is read.
    slots: Vec<(usize, String, SlotKind)>,
}

/// One row group of one file for [`read_row_group`].
#[derive(Clone, Debug)]
pub struct RowGroupTask {
    /// The file.
    pub path: PathBuf,
    /// Its metadata.
    pub metadata: Arc<ParquetMetaData>,
    /// The row group.
    pub row_group: usize,
}

impl RowGroupTask {
    /// Rows of the row group.
    pub fn rows(&self) -> usize {
        self.metadata.row_group(self.row_group).num_rows() as usize
    }
}

fn value_type_supported(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Date32
            | DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
    )
}

impl PageScan {
    /// The page scan of `files` for slots `columns` (names in the files, values first then
    /// keys; `keys` of them at the end) of the source types `types`, or why not. `schemas`
    /// gives each file's metadata and Arrow schema.
    pub fn of(
        files: &[(
            Arc<ParquetMetaData>,
            datafusion::arrow::datatypes::SchemaRef,
        )],
        columns: &[(String, DataType)],
        keys: usize,
    ) -> Result<Self, String> {
        let first_key = columns.len() - keys;
        let mut slots = Vec::new();
        for (s, (name, dt)) in columns.iter().enumerate() {
            let mut found = None;
            for (metadata, schema) in files {
                let descr = metadata.file_metadata().schema_descr();
                let Some((i, field)) = schema.column_with_name(name) else {
                    return Err(format!("no column {name}"));
                };
                if descr.num_columns() != schema.fields().len() {
                    return Err("nested columns".into());
                }
                let leaf = descr.column(i);
                if leaf.max_rep_level() > 0 {
                    return Err(format!("{name} is repeated"));
                }
                let physical = leaf.physical_type();
                let kind = if s >= first_key {
                    let string = matches!(
                        field.data_type(),
                        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                    );
                    if physical != PhysicalType::BYTE_ARRAY || !string {
                        return Err(format!("key {name} is not a string column"));
                    }
                    if metadata
                        .row_groups()
                        .iter()
                        .any(|rg| rg.column(i).dictionary_page_offset().is_none())
                    {
                        return Err(format!("key {name} has row groups without a dictionary"));
                    }
                    SlotKind::Key
                } else {
                    if field.data_type() != dt || !value_type_supported(dt) {
                        return Err(format!("{name} has type {}", field.data_type()));
                    }
                    if !matches!(physical, PhysicalType::INT32 | PhysicalType::INT64) {
                        return Err(format!("{name} is stored as {physical}"));
                    }
                    SlotKind::Value(physical)
                };
                if leaf.max_def_level() > 0 {
                    for rg in metadata.row_groups() {
                        let nulls = rg.column(i).statistics().and_then(|s| s.null_count_opt());
                        if nulls != Some(0) {
                            return Err(format!("{name} may hold nulls"));
                        }
                    }
                }
                match found {
                    None => found = Some((i, kind)),
                    Some(f) if f == (i, kind) => {}
                    Some(_) => return Err(format!("{name} differs between files")),
                }
            }
            let (i, kind) = found.ok_or("no files")?;
            slots.push((i, name.clone(), kind));
        }
        Ok(Self { slots })
    }

    /// Column slots.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }
}

/// Reads and parses one row group (see the module docs): a read error is the outer error, a
/// page the GPU cannot expand the inner one.
pub fn read_row_group(
    scan: &PageScan,
    task: &RowGroupTask,
) -> Result<Result<HostChunk, Misfit>, String> {
    let mut columns = Vec::new();
    let mut regions = Vec::new();
    for slot in 0..scan.slots() {
        let mut region = Vec::new();
        match read_column(scan, task, slot, &mut region)? {
            Ok(c) => columns.push(c),
            Err(misfit) => return Ok(Err(misfit)),
        }
        regions.push(region);
    }
    Ok(Ok(HostChunk {
        rows: task.rows(),
        columns,
        regions,
    }))
}

/// Most bytes column slot `slot`'s region in `task`'s row group can take: the column
/// chunk's uncompressed bytes (its page headers outweigh the payloads' alignment) and the
/// trailing zero word. Pages that would pass it make the row group a misfit.
pub fn region_bound(scan: &PageScan, task: &RowGroupTask, slot: usize) -> usize {
    let leaf = scan.slots[slot].0;
    let chunk = task.metadata.row_group(task.row_group).column(leaf);
    (chunk.uncompressed_size().max(0) as usize).div_ceil(4) * 4 + 8
}

/// Reads and parses column slot `slot` of one row group, writing its region into `sink` (at
/// most [`region_bound`] bytes): a read error is the outer error, a page the GPU cannot
/// expand the inner one.
pub fn read_column(
    scan: &PageScan,
    task: &RowGroupTask,
    slot: usize,
    sink: &mut dyn RegionSink,
) -> Result<Result<HostColumn, Misfit>, String> {
    let open = |e: std::io::Error| format!("opening {}: {e}", task.path.display());
    let mut file = std::fs::File::open(&task.path).map_err(open)?;
    let file_len = file.metadata().map_err(open)?.len();
    let rg = task.metadata.row_group(task.row_group);
    let rows = task.rows();
    let props = Arc::new(ReaderProperties::builder().build());
    let descr = task.metadata.file_metadata().schema_descr();
    let (leaf, name, kind) = &scan.slots[slot];
    let started = std::time::Instant::now();
    let bytes = Arc::new(ChunkBytes::read(&mut file, file_len, rg.column(*leaf))?);
    let read_time = started.elapsed();
    let mut reader =
        SerializedPageReader::new_with_properties(bytes, rg.column(*leaf), rows, None, props)
            .map_err(|e| e.to_string())?;
    let misfit = |what: String| Misfit {
        column: name.clone(),
        what,
    };
    let max_def = descr.column(*leaf).max_def_level();
    let mut parser = ColumnParser::new(*kind, region_bound(scan, task, slot), sink);
    loop {
        let page = match reader.get_next_page() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => return Err(e.to_string()),
        };
        if let Err(what) = parser.page(page, max_def) {
            return Ok(Err(misfit(what)));
        }
    }
    Ok(parser
        .finish(rows)
        .map(|c| HostColumn { read_time, ..c })
        .map_err(misfit))
}

/// Parses one column chunk's pages into a [`HostColumn`] and its region.
struct ColumnParser<'a> {
    kind: SlotKind,
    column: HostColumn,
    table_len: u32,
    rows: u32,
    /// Most bytes the region may take.
    bound: usize,
    sink: &'a mut dyn RegionSink,
}

impl<'a> ColumnParser<'a> {
    fn new(kind: SlotKind, bound: usize, sink: &'a mut dyn RegionSink) -> Self {
        Self {
            kind,
            bound,
            sink,
            column: HostColumn {
                region_len: 0,
                pieces: Vec::new(),
                table: match kind {
                    SlotKind::Key => Table::Strings(Arc::new(StringBuilder::new().finish())),
                    SlotKind::Value(_) => Table::Words(Vec::new()),
                },
                stats: ColumnStats::default(),
                read_time: std::time::Duration::ZERO,
            },
            table_len: 0,
            rows: 0,
        }
    }

    /// Reserves `len` bytes at the next 4-aligned offset of the region, zeroing the gap
    /// before them; returns the offset.
    fn reserve(&mut self, len: usize) -> Result<usize, String> {
        const ZEROS: [u8; 4] = [0; 4];
        let end = self.column.region_len;
        let at = end.div_ceil(4) * 4;
        if at + len > self.bound {
            return Err(format!(
                "pages hold more than the {} bytes the column chunk's metadata states",
                self.bound - 8
            ));
        }
        self.sink.put(end, &ZEROS[..at - end]);
        self.column.region_len = at + len;
        Ok(at)
    }

    /// Places `payload` in the region; returns its byte offset.
    fn place(&mut self, payload: &[u8]) -> Result<usize, String> {
        let at = self.reserve(payload.len())?;
        self.sink.put(at, payload);
        Ok(at)
    }

    /// Places little-endian 64-bit integers (each fits i32: `plain_stats` checked) as their
    /// low 32-bit words; returns the byte offset. Half the bytes cross PCIe.
    fn place_narrowed(&mut self, wide: &[u8]) -> Result<usize, String> {
        const BLOCK: usize = 1024;
        let at = self.reserve(wide.len() / 2)?;
        let mut words = [0u8; 4 * BLOCK];
        for (b, block) in wide.chunks(8 * BLOCK).enumerate() {
            let n = block.len() / 8;
            for (w, v) in words.chunks_exact_mut(4).zip(block.chunks_exact(8)) {
                w.copy_from_slice(&v[..4]);
            }
            self.sink.put(at + 4 * BLOCK * b, &words[..4 * n]);
        }
        Ok(at)
    }

    fn page(&mut self, page: Page, max_def: i16) -> Result<(), String> {
        let (buf, values, encoding, levels) = match page {
            Page::DictionaryPage {
                buf,
                num_values,
                encoding,
                ..
            } => {
                if !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                    return Err(format!("a dictionary page encoded {encoding}"));
                }
                return self.dictionary(&buf, num_values as usize);
            }
            Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                ..
            } => {
                let mut at = 0;
                if max_def > 0 {
                    if def_level_encoding != Encoding::RLE {
                        return Err(format!("definition levels encoded {def_level_encoding}"));
                    }
                    let len = buf
                        .get(..4)
                        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                        .ok_or("a truncated data page")?;
                    let levels = buf.get(4..4 + len).ok_or("a truncated data page")?;
                    all_set(levels, max_def, num_values as usize)?;
                    at = 4 + len;
                }
                (buf, num_values, encoding, at)
            }
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                num_nulls,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                if num_nulls > 0 {
                    return Err(format!("a page with {num_nulls} nulls"));
                }
                let at = (def_levels_byte_len + rep_levels_byte_len) as usize;
                if at > buf.len() {
                    return Err("a truncated data page".into());
                }
                (buf, num_values, encoding, at)
            }
        };
        let payload = buf.slice(levels..);
        let n = values;
        match (encoding, self.kind) {
            (Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY, _) => {
                let Some((&width, runs)) = payload.split_first() else {
                    return Err("an empty dictionary-encoded page".into());
                };
                if self.table_len == 0 && n > 0 {
                    return Err("a dictionary-encoded page without a dictionary".into());
                }
                if width > 32 {
                    return Err(format!("{width}-bit dictionary indices"));
                }
                let at = self.place(&payload[1..])?;
                let table_len = self.table_len;
                let mut pieces = std::mem::take(&mut self.column.pieces);
                let parsed = parse_runs(runs, width as u32, n, |mut p| {
                    p.src += at as u32;
                    p.row += self.rows;
                    p.table_len = table_len;
                    pieces.push(p);
                });
                self.column.pieces = pieces;
                parsed?;
            }
            (Encoding::PLAIN, SlotKind::Value(physical)) => {
                let size = if physical == PhysicalType::INT32 {
                    4
                } else {
                    8
                };
                let bytes = payload
                    .get(..n as usize * size)
                    .ok_or("a truncated plain page")?;
                let stats = plain_stats(bytes, size)?;
                self.column.stats = self.column.stats.merge(stats);
                let at = if size == 4 {
                    self.place(bytes)?
                } else {
                    self.place_narrowed(bytes)?
                };
                let mut done = 0;
                while done < n {
                    let count = (n - done).min(PIECE_VALUES);
                    self.column.pieces.push(Piece {
                        row: self.rows + done,
                        count,
                        src: (at + done as usize * 4) as u32,
                        kind: KIND_PLAIN32,
                        ..Piece::default()
                    });
                    done += count;
                }
            }
            (e, _) => return Err(format!("a data page encoded {e}")),
        }
        self.rows += n;
        Ok(())
    }

    fn dictionary(&mut self, buf: &[u8], n: usize) -> Result<(), String> {
        if self.table_len > 0 {
            return Err("a second dictionary page".into());
        }
        self.table_len = n as u32;
        match self.kind {
            SlotKind::Value(physical) => {
                let size = if physical == PhysicalType::INT32 {
                    4
                } else {
                    8
                };
                let bytes = buf.get(..n * size).ok_or("a truncated dictionary page")?;
                self.column.stats = self.column.stats.merge(plain_stats(bytes, size)?);
                self.column.table = Table::Words(
                    bytes
                        .chunks_exact(size)
                        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect(),
                );
            }
            SlotKind::Key => {
                let mut strings = StringBuilder::new();
                let mut at = 0;
                for _ in 0..n {
                    let len = buf
                        .get(at..at + 4)
                        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                        .ok_or("a truncated dictionary page")?;
                    let bytes = buf
                        .get(at + 4..at + 4 + len)
                        .ok_or("a truncated dictionary page")?;
                    let s = std::str::from_utf8(bytes)
                        .map_err(|_| "a dictionary string that is not UTF-8".to_string())?;
                    strings.append_value(s);
                    at += 4 + len;
                }
                self.column.table = Table::Strings(Arc::new(strings.finish()));
            }
        }
        Ok(())
    }

    fn finish(mut self, rows: usize) -> Result<HostColumn, String> {
        if self.rows as usize != rows {
            return Err(format!("pages hold {} values for {rows} rows", self.rows));
        }
        if matches!(self.kind, SlotKind::Key) && self.table_len == 0 && rows > 0 {
            return Err("strings without a dictionary".into());
        }
        // A zero word after the last payload: the kernel reads the word after a packed index.
        let at = self.reserve(8)?;
        self.sink.put(at, &[0; 8]);
        Ok(self.column)
    }
}

/// The expand kernel's oracle: column `region` expanded by `pieces` through `table` into
/// `rows` words; a packed index past the table is an error, as the kernel flags it.
pub fn expand_cpu(
    pieces: &[Piece],
    region: &[u8],
    table: &[u32],
    rows: usize,
) -> Result<Vec<u32>, String> {
    let mut out = vec![0xdead_beef_u32; rows];
    let word = |i: usize| -> u32 {
        let b = |k: usize| region.get(4 * i + k).copied().unwrap_or(0) as u32;
        b(0) | b(1) << 8 | b(2) << 16 | b(3) << 24
    };
    for p in pieces {
        for t in 0..p.count as usize {
            let lookup = |i: u32| -> Result<u32, String> {
                table
                    .get(i as usize)
                    .copied()
                    .ok_or_else(|| format!("index {i} past a dictionary of {}", table.len()))
            };
            let v = match p.kind {
                KIND_RUN => lookup(p.value)?,
                KIND_PACKED => {
                    let bit = p.src as usize * 8 + t * p.width as usize;
                    let (w, s) = (bit / 32, bit % 32);
                    let wide = word(w) as u64 | (word(w + 1) as u64) << 32;
                    let mask = if p.width == 32 {
                        u32::MAX as u64
                    } else {
                        (1u64 << p.width) - 1
                    };
                    lookup(((wide >> s) & mask) as u32)?
                }
                _ => word(p.src as usize / 4 + t),
            };
            out[p.row as usize + t] = v;
        }
    }
    Ok(out)
}
