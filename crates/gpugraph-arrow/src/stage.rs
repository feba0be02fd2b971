//! The GPU half of a column upload: checked chunks → device buffers, each chunk's GPU bytes
//! written straight into the tables crate's reused staging ring
//! ([`gpugraph_tables::upload::write_targets`]).
//!
//! Why not encode first and copy after (the previous design): a converted or null-zeroed
//! column then exists whole in fresh host memory (its page faults and one more pass over the
//! bytes cost more than the bus: H200, 50M rows, 113 ms of encoding before 250 ms of copies for
//! three columns), and the validity mask a second time. Here a value chunk converts a few
//! hundred KiB at a time into a per-thread scratch that stays in cache and lands in staging
//! from there, on every core, while the previous staging buffer copies.

use std::sync::Mutex;

use arrow_buffer::NullBuffer;
use gpugraph_command::{GpuContext, VectorFormat};
use gpugraph_tables::upload::{
    create_table_buffers, write_targets, FillFn, Outcome, Source, Stopped, Target,
};
use gpugraph_tables::{GpuData, GpuVector};

use crate::dictionary::CodeEncoder;
use crate::encode::{write_validity, EncodedChunk, ValueEncoder};
use crate::error::ArrowAdapterError;
use crate::options::{ChunkPlacement, MaskTransfer, UploadOptions};

/// One chunk of a column, checked and ready to stage.
pub(crate) enum PreparedChunk<'c> {
    /// Value rows converted while they stage.
    Values(ValueEncoder<'c>),
    /// Dictionary codes written while they stage.
    Codes(CodeEncoder),
    /// Bytes encoded up front (codes of strings: their order is sequential).
    Encoded(EncodedChunk),
}

impl PreparedChunk<'_> {
    /// Rows in the chunk.
    pub(crate) fn rows(&self) -> usize {
        match self {
            PreparedChunk::Values(v) => v.rows(),
            PreparedChunk::Codes(c) => c.rows(),
            PreparedChunk::Encoded(e) => e.rows,
        }
    }

    /// Row nulls; `None` when the chunk has none.
    pub(crate) fn nulls(&self) -> Option<&NullBuffer> {
        match self {
            PreparedChunk::Values(v) => v.nulls(),
            PreparedChunk::Codes(c) => c.nulls(),
            PreparedChunk::Encoded(e) => e.nulls.as_ref(),
        }
    }
}

/// The first error (in chunk, then byte order) of fills running on many threads.
#[derive(Default)]
struct FirstError(Mutex<Option<((usize, u64), ArrowAdapterError)>>);

impl FirstError {
    fn record(&self, key: (usize, u64), error: ArrowAdapterError) -> Stopped {
        let mut first = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if first.as_ref().is_none_or(|(k, _)| key < *k) {
            *first = Some((key, error));
        }
        Stopped
    }

    fn take(&self) -> Option<ArrowAdapterError> {
        let mut first = self.0.lock().unwrap_or_else(|e| e.into_inner());
        first.take().map(|(_, e)| e)
    }
}

/// Uploads the values of `chunks` as `format` rows, placed per [`ChunkPlacement`]. Fails with
/// the first conversion error in row order (the buffers made so far are dropped).
pub(crate) fn stage_values(
    ctx: &GpuContext,
    chunks: &[PreparedChunk<'_>],
    format: VectorFormat,
    options: &UploadOptions,
) -> Result<GpuVector, ArrowAdapterError> {
    let row = u64::from(format.byte_size());
    let first = FirstError::default();
    let fills: Vec<Option<Box<FillFn<'_>>>> = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| match c {
            PreparedChunk::Values(v) => {
                let first = &first;
                let fill = move |at: u64, out: &mut [u8]| {
                    v.fill((at / row) as usize, out)
                        .map_err(|e| first.record((i, at), e))
                };
                Some(Box::new(fill) as Box<FillFn<'_>>)
            }
            PreparedChunk::Codes(codes) => {
                let fill = move |at: u64, out: &mut [u8]| {
                    codes.fill((at / 4) as usize, out);
                    Ok(())
                };
                Some(Box::new(fill) as Box<FillFn<'_>>)
            }
            PreparedChunk::Encoded(_) => None,
        })
        .collect();
    let sources: Vec<(u64, Source<'_>)> = chunks
        .iter()
        .zip(&fills)
        .map(|(c, fill)| {
            let rows = c.rows() as u64;
            let source = match (c, fill) {
                (_, Some(fill)) => Source::Fill {
                    len: rows * row,
                    row,
                    fill: fill.as_ref(),
                },
                (PreparedChunk::Encoded(e), None) => Source::Bytes(e.bytes.as_slice()),
                (_, None) => unreachable!("every value and code chunk has a fill"),
            };
            (rows, source)
        })
        .collect();
    place(ctx, sources, format, options).map_err(|e| first.take().unwrap_or(e))
}

/// Uploads the `uint32` validity masks (1 valid, 0 null) of `chunks`, chunk-aligned with
/// their values: as bitmaps expanded on the GPU ([`MaskTransfer::Bitmap`] where the device
/// can bind every chunk) or as words written on the host from the null bitmaps.
pub(crate) fn stage_masks(
    ctx: &GpuContext,
    chunks: &[PreparedChunk<'_>],
    options: &UploadOptions,
) -> Result<GpuVector, ArrowAdapterError> {
    if options.mask_transfer == MaskTransfer::Bitmap {
        if let Some(masks) = crate::validity::stage_bitmaps(ctx, chunks, options)? {
            return Ok(masks);
        }
    }
    let fills: Vec<Box<FillFn<'_>>> = chunks
        .iter()
        .map(|c| {
            let nulls = c.nulls();
            let fill = move |at: u64, out: &mut [u8]| {
                let first = (at / 4) as usize;
                write_validity(nulls, first, bytemuck::cast_slice_mut(out));
                Ok(())
            };
            Box::new(fill) as Box<FillFn<'_>>
        })
        .collect();
    let sources = chunks
        .iter()
        .zip(&fills)
        .map(|(c, fill)| {
            let rows = c.rows() as u64;
            let source = Source::Fill {
                len: rows * 4,
                row: 4,
                fill: fill.as_ref(),
            };
            (rows, source)
        })
        .collect();
    place(ctx, sources, VectorFormat::Uint32, options)
}

/// Where each chunk of a column lands: the sizes of the buffers to create and, per chunk,
/// (buffer index, byte offset).
pub(crate) struct Layout {
    pub(crate) sizes: Vec<u64>,
    pub(crate) places: Vec<(usize, u64)>,
}

/// The buffers and chunk places of `rows` (per chunk) of `row` bytes under `placement`.
pub(crate) fn layout(
    device: &wgpu::Device,
    rows: &[u64],
    row: u64,
    placement: ChunkPlacement,
) -> Layout {
    match placement {
        ChunkPlacement::BufferPerChunk => Layout {
            sizes: rows.iter().map(|r| r * row).collect(),
            places: (0..rows.len()).map(|i| (i, 0)).collect(),
        },
        ChunkPlacement::SharedPerColumn => {
            let alignment = storage_alignment(device);
            let mut places = Vec::with_capacity(rows.len());
            let mut end = 0u64;
            for r in rows {
                let offset = end.div_ceil(alignment) * alignment;
                places.push((0, offset));
                end = offset + r * row;
            }
            Layout {
                sizes: vec![end],
                places,
            }
        }
    }
}

/// The alignment at which a chunk binds directly as a storage buffer (and copies).
pub(crate) fn storage_alignment(device: &wgpu::Device) -> u64 {
    u64::from(device.limits().min_storage_buffer_offset_alignment).max(wgpu::COPY_BUFFER_ALIGNMENT)
}

/// The chunks of one vector over `buffers` laid out as `layout`, `rows` per chunk.
pub(crate) fn wrap(
    buffers: Vec<wgpu::Buffer>,
    layout: &Layout,
    rows: &[u64],
    format: VectorFormat,
    placement: ChunkPlacement,
) -> Result<GpuVector, ArrowAdapterError> {
    let row = u64::from(format.byte_size());
    let chunks = match placement {
        ChunkPlacement::BufferPerChunk => buffers
            .into_iter()
            .zip(rows)
            .map(|(buffer, rows)| GpuData::owned(buffer, 0, *rows, format, row))
            .collect::<Result<Vec<_>, _>>()?,
        ChunkPlacement::SharedPerColumn => {
            let buffer = buffers.into_iter().next().expect("one shared buffer");
            let size = buffer.size();
            // The owner range is raw bytes; the chunks are typed siblings that co-own it.
            let owner = GpuData::owned(buffer, 0, size, VectorFormat::Uint8, 1)?;
            layout
                .places
                .iter()
                .zip(rows)
                .map(|(&(_, offset), rows)| owner.sibling(offset, *rows, format, row))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    Ok(GpuVector::from_chunks(format, chunks)?)
}

/// The error of a fill that stopped without recording one (never expected).
pub(crate) fn stopped() -> ArrowAdapterError {
    ArrowAdapterError::Arrow(arrow_schema::ArrowError::ComputeError(
        "an upload stopped without naming its error".into(),
    ))
}

/// Creates the buffers of `sources` (rows, bytes) per the placement, writes them in one pass
/// of the staging ring and wraps them as the chunks of one vector.
fn place(
    ctx: &GpuContext,
    sources: Vec<(u64, Source<'_>)>,
    format: VectorFormat,
    options: &UploadOptions,
) -> Result<GpuVector, ArrowAdapterError> {
    let row = u64::from(format.byte_size());
    let (device, queue) = (&ctx.device, &ctx.queue);
    let rows: Vec<u64> = sources.iter().map(|(r, _)| *r).collect();
    let layout = layout(device, &rows, row, options.placement);
    let (buffers, outcome) =
        create_table_buffers(device, &layout.sizes, options.extra_usage, |b| {
            let targets: Vec<Target<'_>> = layout
                .places
                .iter()
                .zip(&sources)
                .map(|(&(i, offset), (_, source))| Target {
                    buffer: &b[i],
                    offset,
                    source: *source,
                })
                .collect();
            write_targets(device, queue, &targets)
        })?;
    if outcome == Outcome::Stopped {
        return Err(stopped());
    }
    wrap(buffers, &layout, &rows, format, options.placement)
}
