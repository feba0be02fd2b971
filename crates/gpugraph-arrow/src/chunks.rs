//! A column's checked chunks and where they land on the device: the vocabulary the value
//! ([`crate::stage`]) and validity ([`crate::validity`]) halves of an upload share.

use arrow_buffer::NullBuffer;
use gpugraph_command::VectorFormat;
use gpugraph_tables::{GpuData, GpuVector};

use crate::dictionary::CodeEncoder;
use crate::encode::{EncodedChunk, ValueEncoder};
use crate::error::ArrowAdapterError;
use crate::options::ChunkPlacement;

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
