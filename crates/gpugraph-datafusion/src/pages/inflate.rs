//! Snappy-compressed plain pages decompressed on the GPU (`inflate.wgsl`), one invocation a
//! page, into the column's byte region where the expand kernel then reads them.
//!
//! Why: from Parquet, the page scan is bound by the host's decoding, and a profile of it on
//! TPC-H's Q6 columns (SF 1, one thread, 2026-12-04) spent 55% in Snappy, nearly all of it
//! on `l_extendedprice`: the one plain column, whose 64-bit prices Snappy stores as a
//! three-byte literal and a short copy of zeros per value, some 2 elements per 8 bytes. The
//! GPU has invocations to spare for that walk; the host now only copies the compressed page
//! (66% of its decompressed bytes, where narrowing sent 50%) and no longer touches its
//! values. The values are bounded by the column chunk's statistics instead of the host's
//! scan, and the expand kernel flags one outside them as a corrupt file.
//!
//! Contract. With the scan's inflation on ([`super::PageScan::with_inflate`]; on by
//! default, see [`enabled`]), a page of at most [`MAX_BYTES`] is inflated here when its
//! column chunk is Snappy-compressed, it is a
//! plain data page of a value column without definition levels, and the chunk's statistics
//! bound its values within i32; every other page decompresses on the host as before.
//! [`inflate_cpu`] is the oracle.

use bytemuck::{Pod, Zeroable};
use bytes::Bytes;
use datafusion::parquet::basic::{Encoding, Type as PhysicalType};
use datafusion::parquet::column::page::Page;
use datafusion::parquet::file::metadata::ColumnChunkMetaData;
use datafusion::parquet::file::statistics::Statistics;
use gpugraph_command::wgpu;
use gpugraph_gpgpu::kernel::{Binding, Kernel};

use super::{ColumnParser, Piece, SlotKind, KIND_CHECKED32, KIND_CHECKED64, PIECE_VALUES};
use crate::convert::ColumnStats;

/// One compressed page and where its output goes (`inflate.wgsl`'s `Inflate`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Inflate {
    /// Byte offset of the compressed page in the column's packed bytes.
    pub src: u32,
    /// Its compressed bytes.
    pub src_len: u32,
    /// Byte offset (4-aligned) of its output in the column's region.
    pub dst: u32,
    /// Its uncompressed bytes (a multiple of 4).
    pub dst_len: u32,
}

/// The kernel's oracle: each task's Snappy stream in `packed` decompressed into `region` at
/// its `dst`; a stream that is not valid Snappy of `dst_len` bytes is an error.
pub fn inflate_cpu(tasks: &[Inflate], packed: &[u8], region: &mut [u8]) -> Result<(), String> {
    let mut decoder = snap::raw::Decoder::new();
    for (i, t) in tasks.iter().enumerate() {
        let corrupt = |why: String| format!("compressed page {i}: {why}");
        let src = packed
            .get(t.src as usize..(t.src + t.src_len) as usize)
            .ok_or_else(|| corrupt("past the packed bytes".into()))?;
        let len = snap::raw::decompress_len(src).map_err(|e| corrupt(e.to_string()))?;
        if len != t.dst_len as usize {
            return Err(corrupt(format!("{len} bytes, not {}", t.dst_len)));
        }
        let dst = region
            .get_mut(t.dst as usize..(t.dst + t.dst_len) as usize)
            .ok_or_else(|| corrupt("past the region".into()))?;
        decoder
            .decompress(src, dst)
            .map_err(|e| corrupt(e.to_string()))?;
    }
    Ok(())
}

/// The inflate kernel: tasks, packed bytes, region (written), status.
pub(super) fn kernel(device: &wgpu::Device) -> Kernel {
    Kernel::new(
        device,
        "gpugraph-datafusion-pages-inflate",
        include_str!("inflate.wgsl"),
        "inflate",
        &[
            Binding::StorageRead,
            Binding::StorageRead,
            Binding::StorageReadWrite,
            Binding::StorageReadWrite,
        ],
        &[],
    )
}

/// Invocations per workgroup of the inflate kernel (one page each: see `inflate.wgsl`).
pub(super) const WORKGROUP: u32 = 1;

/// Longest page the GPU inflates (`inflate.wgsl`'s `MAX_BYTES`, what lavapipe's loop limit
/// allows its walk); longer ones decompress on the host.
pub const MAX_BYTES: usize = 1_040_000;

/// Whether Snappy plain pages go to the GPU compressed (`GPUGRAPH_PAGE_INFLATE=0`: every
/// page decompresses on the host, for comparing the two; results do not depend on it).
pub(super) fn enabled() -> bool {
    std::env::var("GPUGRAPH_PAGE_INFLATE").map_or(true, |v| v != "0")
}

/// The Snappy pages of one column chunk, which the parser decompresses itself (or leaves to
/// the GPU) because the page reader was told the chunk is uncompressed.
pub(super) struct Snappy {
    decoder: snap::raw::Decoder,
    /// The chunk's value bounds from its statistics, when they fit i32: its plain pages then
    /// go to the GPU compressed.
    bounds: Option<(i32, i32)>,
    /// The chunk's compressed bytes, page headers included: what its pages can take.
    compressed: usize,
    /// The chunk's uncompressed bytes: what one page can decompress to.
    uncompressed: usize,
    /// Compressed page bytes seen.
    seen: usize,
    /// Packed bytes written.
    packed: usize,
}

impl Snappy {
    /// The decompression state of `chunk`, read as `kind`.
    pub(super) fn new(chunk: &ColumnChunkMetaData, kind: SlotKind) -> Self {
        let bounds = match kind {
            SlotKind::Value(_) => chunk.statistics().and_then(statistics_bounds),
            SlotKind::Key => None,
        };
        Self {
            decoder: snap::raw::Decoder::new(),
            bounds,
            compressed: chunk.compressed_size().max(0) as usize,
            uncompressed: chunk.uncompressed_size().max(0) as usize,
            seen: 0,
            packed: 0,
        }
    }

    /// The length `buf` decompresses to, checked against the chunk's metadata.
    fn length(&self, buf: &[u8]) -> Result<usize, String> {
        let len = snap::raw::decompress_len(buf).map_err(|e| format!("a Snappy page: {e}"))?;
        if len > self.uncompressed {
            return Err(format!(
                "a Snappy page of {len} bytes in a column chunk of {}",
                self.uncompressed
            ));
        }
        Ok(len)
    }

    fn decompress(&mut self, buf: &[u8]) -> Result<Bytes, String> {
        let mut out = vec![0u8; self.length(buf)?];
        self.decoder
            .decompress(buf, &mut out)
            .map_err(|e| format!("a Snappy page: {e}"))?;
        Ok(out.into())
    }
}

/// The bounds integer statistics give, when both are present and fit i32.
fn statistics_bounds(stats: &Statistics) -> Option<(i32, i32)> {
    let (lo, hi) = match stats {
        Statistics::Int32(s) => (i64::from(*s.min_opt()?), i64::from(*s.max_opt()?)),
        Statistics::Int64(s) => (*s.min_opt()?, *s.max_opt()?),
        _ => return None,
    };
    Some((i32::try_from(lo).ok()?, i32::try_from(hi).ok()?))
}

impl ColumnParser<'_> {
    /// `page` decompressed, or `None` when it went to the GPU compressed (see the module
    /// docs); only while [`Self::snappy`] is set.
    pub(super) fn unpack(&mut self, mut page: Page, max_def: i16) -> Result<Option<Page>, String> {
        let Some(mut snappy) = self.snappy.take() else {
            return Ok(Some(page));
        };
        let unpacked = self.unpack_with(&mut snappy, &mut page, max_def);
        self.snappy = Some(snappy);
        Ok(unpacked?.then_some(page))
    }

    /// Decompresses `page` in place (true), or sends it to the GPU (false).
    fn unpack_with(
        &mut self,
        snappy: &mut Snappy,
        page: &mut Page,
        max_def: i16,
    ) -> Result<bool, String> {
        let seen = snappy.seen;
        snappy.seen += page.buffer().len();
        if snappy.seen > snappy.compressed {
            return Err(format!(
                "pages hold more than the {} compressed bytes the column chunk's metadata states",
                snappy.compressed
            ));
        }
        let plain = match (&*page, self.kind, snappy.bounds) {
            (
                Page::DataPage {
                    encoding: Encoding::PLAIN,
                    num_values,
                    ..
                },
                SlotKind::Value(physical),
                Some(bounds),
            ) if max_def == 0 => Some((*num_values, physical, bounds)),
            (
                Page::DataPageV2 {
                    encoding: Encoding::PLAIN,
                    num_values,
                    is_compressed: true,
                    def_levels_byte_len: 0,
                    rep_levels_byte_len: 0,
                    ..
                },
                SlotKind::Value(physical),
                Some(bounds),
            ) if max_def == 0 => Some((*num_values, physical, bounds)),
            _ => None,
        };
        if let Some((n, physical, bounds)) = plain {
            let size = if physical == PhysicalType::INT32 {
                4
            } else {
                8
            };
            let buf = page.buffer();
            let len = snappy.length(buf)?;
            if len == n as usize * size && len <= MAX_BYTES {
                let capacity = snappy.compressed - seen;
                self.defer(snappy, buf, n, size, bounds, capacity)?;
                return Ok(false);
            }
        }
        match page {
            Page::DictionaryPage { buf, .. } | Page::DataPage { buf, .. } => {
                *buf = snappy.decompress(buf)?;
            }
            Page::DataPageV2 {
                buf,
                is_compressed,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                if *is_compressed {
                    let levels = (*def_levels_byte_len + *rep_levels_byte_len) as usize;
                    if levels > buf.len() {
                        return Err("a truncated data page".into());
                    }
                    let values = snappy.decompress(&buf[levels..])?;
                    let mut out = Vec::with_capacity(levels + values.len());
                    out.extend_from_slice(&buf[..levels]);
                    out.extend_from_slice(&values);
                    *buf = out.into();
                    *is_compressed = false;
                }
            }
        }
        Ok(true)
    }

    /// Sends a compressed plain page of `n` values of `size` bytes to the GPU: its packed
    /// bytes, room in the region for its values, and checked pieces over that room.
    fn defer(
        &mut self,
        snappy: &mut Snappy,
        buf: &[u8],
        n: u32,
        size: usize,
        (lo, hi): (i32, i32),
        capacity: usize,
    ) -> Result<(), String> {
        let len = n as usize * size;
        let dst = self.reserve(len)?;
        self.sink.put_packed(snappy.packed, buf, capacity);
        self.column.inflates.push(Inflate {
            src: snappy.packed as u32,
            src_len: buf.len() as u32,
            dst: dst as u32,
            dst_len: len as u32,
        });
        snappy.packed += buf.len();
        let kind = if size == 8 {
            KIND_CHECKED64
        } else {
            KIND_CHECKED32
        };
        let mut done = 0;
        while done < n {
            let count = (n - done).min(PIECE_VALUES);
            self.column.pieces.push(Piece {
                row: self.rows + done,
                count,
                src: (dst + done as usize * size) as u32,
                kind,
                value: lo as u32,
                bound: hi as u32,
                ..Piece::default()
            });
            done += count;
        }
        self.rows += n;
        self.column.stats = self.column.stats.merge(ColumnStats {
            min: lo.into(),
            max: hi.into(),
            any: true,
        });
        Ok(())
    }
}
