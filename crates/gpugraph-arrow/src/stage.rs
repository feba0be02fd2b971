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
use crate::options::{ChunkPlacement, UploadOptions};

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
/// their values, written straight from the null bitmaps.
pub(crate) fn stage_masks(
    ctx: &GpuContext,
    chunks: &[PreparedChunk<'_>],
    options: &UploadOptions,
) -> Result<GpuVector, ArrowAdapterError> {
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
    let stopped = || {
        ArrowAdapterError::Arrow(arrow_schema::ArrowError::ComputeError(
            "an upload stopped without naming its error".into(),
        ))
    };
    // Where each chunk lands: (buffer, byte offset), and the buffers' sizes.
    let (sizes, places): (Vec<u64>, Vec<(usize, u64)>) = match options.placement {
        ChunkPlacement::BufferPerChunk => (
            sources.iter().map(|(rows, _)| rows * row).collect(),
            (0..sources.len()).map(|i| (i, 0)).collect(),
        ),
        ChunkPlacement::SharedPerColumn => {
            let alignment = u64::from(device.limits().min_storage_buffer_offset_alignment)
                .max(wgpu::COPY_BUFFER_ALIGNMENT);
            let mut places = Vec::with_capacity(sources.len());
            let mut end = 0u64;
            for (rows, _) in &sources {
                let offset = end.div_ceil(alignment) * alignment;
                places.push((0, offset));
                end = offset + rows * row;
            }
            (vec![end], places)
        }
    };
    let (buffers, outcome) = create_table_buffers(device, &sizes, options.extra_usage, |b| {
        let targets: Vec<Target<'_>> = places
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
    let chunks = match options.placement {
        ChunkPlacement::BufferPerChunk => buffers
            .into_iter()
            .zip(&sources)
            .map(|(buffer, (rows, _))| GpuData::owned(buffer, 0, *rows, format, row))
            .collect::<Result<Vec<_>, _>>()?,
        ChunkPlacement::SharedPerColumn => {
            let buffer = buffers.into_iter().next().expect("one shared buffer");
            let size = buffer.size();
            // The owner range is raw bytes; the chunks are typed siblings that co-own it.
            let owner = GpuData::owned(buffer, 0, size, VectorFormat::Uint8, 1)?;
            places
                .iter()
                .zip(&sources)
                .map(|(&(_, offset), (rows, _))| owner.sibling(offset, *rows, format, row))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    Ok(GpuVector::from_chunks(format, chunks)?)
}
