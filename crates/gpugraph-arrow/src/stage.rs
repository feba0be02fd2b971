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

use gpugraph_command::{GpuContext, VectorFormat};
use gpugraph_tables::upload::{
    create_table_buffers, write_targets, FillFn, Outcome, Source, Stopped, Target,
};
use gpugraph_tables::GpuVector;

pub(crate) use crate::chunks::PreparedChunk;
use crate::chunks::{layout, stopped, wrap};
use crate::encode::write_validity;
use crate::error::ArrowAdapterError;
use crate::options::{MaskTransfer, UploadOptions};

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

/// Uploads the values of `chunks` as `format` rows, placed per [`crate::options::ChunkPlacement`]. Fails with
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
