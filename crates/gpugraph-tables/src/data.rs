//! [`GpuData`]: one typed range of one `wgpu::Buffer` (byte offset, row count, format, byte
//! stride) with visible ownership: [`Ownership::Owned`] or [`Ownership::Borrowed`].
//!
//! Owned ranges share their buffer through an `Arc`: clones, [`GpuData::slice`] and
//! [`GpuData::sibling`] of an owned range are co-owners, and the buffer is destroyed exactly
//! once, when the last co-owner drops. Borrowed ranges never destroy anything.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use gpugraph_command::{DataViewDescriptor, GpuContext, VectorFormat};
use wgpu::BufferUsages;

use crate::error::TableError;
use crate::upload::create_filled_buffer;

/// Who destroys the buffer behind a [`GpuData`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ownership {
    /// The range (with its co-owners: clones, slices, siblings) owns the buffer and destroys
    /// it when the last of them drops.
    Owned,
    /// The caller owns the buffer; this range never destroys it.
    Borrowed,
}

/// Destroys its buffer once, when the last `Arc` drops.
#[derive(Debug)]
struct BufferOwner {
    buffer: wgpu::Buffer,
}

impl Drop for BufferOwner {
    fn drop(&mut self) {
        self.buffer.destroy();
    }
}

/// One contiguous typed range of a `wgpu::Buffer`: `length` rows of `format`, row `i` at
/// `byte_offset + i · byte_stride`.
///
/// Invariants (checked by every constructor): `byte_stride ≥ format.byte_size()`; offset and
/// stride are multiples of the format's component size; the rows fit inside the buffer.
/// Cloning shares ownership (see the module docs). An owned buffer is destroyed when its last
/// co-owner drops, so keep a `GpuData` alive while graphs that imported it still encode or
/// while submitted work still uses it.
#[derive(Clone)]
pub struct GpuData {
    buffer: wgpu::Buffer,
    byte_offset: u64,
    length: u64,
    format: VectorFormat,
    byte_stride: u64,
    owner: Option<Arc<BufferOwner>>,
}

impl fmt::Debug for GpuData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuData")
            .field("format", &self.format)
            .field("length", &self.length)
            .field("byte_offset", &self.byte_offset)
            .field("byte_stride", &self.byte_stride)
            .field("buffer_size", &self.buffer.size())
            .field("ownership", &self.ownership())
            .finish()
    }
}

/// Checks that `length` rows of `format`, `byte_stride` apart from `byte_offset`, fit in a
/// buffer of `buffer_size` bytes with valid stride and alignment. Pure; no GPU needed.
pub fn validate_range(
    buffer_size: u64,
    byte_offset: u64,
    length: u64,
    format: VectorFormat,
    byte_stride: u64,
) -> Result<(), TableError> {
    let row = format.byte_size() as u64;
    if byte_stride < row {
        return Err(TableError::StrideTooSmall {
            byte_stride,
            row_bytes: row,
            format,
        });
    }
    let alignment = format.component_bytes() as u64;
    for (what, value) in [("byte offset", byte_offset), ("byte stride", byte_stride)] {
        if !value.is_multiple_of(alignment) {
            return Err(TableError::Misaligned {
                what,
                value,
                alignment,
                format,
            });
        }
    }
    let span = span_of(length, byte_stride, row);
    if span
        .and_then(|s| byte_offset.checked_add(s))
        .is_none_or(|end| end > buffer_size)
    {
        return Err(TableError::RangeOutOfBounds {
            byte_offset,
            byte_span: span.unwrap_or(u64::MAX),
            buffer_size,
        });
    }
    Ok(())
}

/// Bytes from row 0 to the end of the last row; `None` on overflow.
fn span_of(length: u64, stride: u64, row: u64) -> Option<u64> {
    match length {
        0 => Some(0),
        n => (n - 1).checked_mul(stride)?.checked_add(row),
    }
}

impl GpuData {
    /// Uploads `data` into a new OWNED buffer of usage `STORAGE | COPY_SRC | COPY_DST |
    /// extra_usage`, sized to the data rounded up to 4 bytes (at least 4). The range is packed
    /// at offset 0 with `bytes / format.byte_size()` rows.
    ///
    /// Writes through the queue in bounded staging pieces ([`crate::upload`]): the data is in
    /// place for the next submission on `ctx.queue`. Fails when the bytes are not whole rows,
    /// the size exceeds `max_buffer_size`, `extra_usage` contains a map flag, or the device
    /// refuses the allocation.
    pub fn upload<T: bytemuck::Pod>(
        ctx: &GpuContext,
        data: &[T],
        format: VectorFormat,
        extra_usage: BufferUsages,
    ) -> Result<Self, TableError> {
        Self::upload_to_device(&ctx.device, &ctx.queue, data, format, extra_usage)
    }

    /// [`GpuData::upload`] with a device and queue instead of a [`GpuContext`].
    pub fn upload_to_device<T: bytemuck::Pod>(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        data: &[T],
        format: VectorFormat,
        extra_usage: BufferUsages,
    ) -> Result<Self, TableError> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let length = rows_of(bytes.len() as u64, format)?;
        let buffer = create_filled_buffer(
            device,
            queue,
            &[(0, bytes)],
            bytes.len() as u64,
            extra_usage,
        )?;
        Ok(Self::owned_unchecked(buffer, 0, length, format))
    }

    /// Wraps a caller-owned range. The buffer is BORROWED: never destroyed by this range.
    ///
    /// Validates that `byte_stride ≥ format.byte_size()`, that offset and stride are multiples
    /// of the component size, and that `byte_offset + (length-1)·byte_stride + row size` fits
    /// in `buffer.size()`.
    pub fn borrowed(
        buffer: &wgpu::Buffer,
        byte_offset: u64,
        length: u64,
        format: VectorFormat,
        byte_stride: u64,
    ) -> Result<Self, TableError> {
        validate_range(buffer.size(), byte_offset, length, format, byte_stride)?;
        Ok(Self {
            buffer: buffer.clone(),
            byte_offset,
            length,
            format,
            byte_stride,
            owner: None,
        })
    }

    /// [`GpuData::borrowed`] with packed rows (stride = row size).
    pub fn borrowed_packed(
        buffer: &wgpu::Buffer,
        byte_offset: u64,
        length: u64,
        format: VectorFormat,
    ) -> Result<Self, TableError> {
        Self::borrowed(
            buffer,
            byte_offset,
            length,
            format,
            format.byte_size() as u64,
        )
    }

    /// Takes ownership of `buffer` for this range: it is destroyed when the range and all its
    /// co-owners have dropped. Same validation as [`GpuData::borrowed`]; on error the handle
    /// is dropped without destroying the buffer (other handles to it stay usable).
    pub fn owned(
        buffer: wgpu::Buffer,
        byte_offset: u64,
        length: u64,
        format: VectorFormat,
        byte_stride: u64,
    ) -> Result<Self, TableError> {
        validate_range(buffer.size(), byte_offset, length, format, byte_stride)?;
        let mut data = Self::owned_unchecked(buffer, byte_offset, length, format);
        data.byte_stride = byte_stride;
        Ok(data)
    }

    pub(crate) fn owned_unchecked(
        buffer: wgpu::Buffer,
        byte_offset: u64,
        length: u64,
        format: VectorFormat,
    ) -> Self {
        Self {
            owner: Some(Arc::new(BufferOwner {
                buffer: buffer.clone(),
            })),
            buffer,
            byte_offset,
            length,
            format,
            byte_stride: format.byte_size() as u64,
        }
    }

    /// Another range of the same buffer with the same ownership (an owned range's sibling is
    /// a co-owner). Validated like [`GpuData::borrowed`].
    pub fn sibling(
        &self,
        byte_offset: u64,
        length: u64,
        format: VectorFormat,
        byte_stride: u64,
    ) -> Result<Self, TableError> {
        validate_range(self.buffer.size(), byte_offset, length, format, byte_stride)?;
        Ok(Self {
            buffer: self.buffer.clone(),
            byte_offset,
            length,
            format,
            byte_stride,
            owner: self.owner.clone(),
        })
    }

    /// The rows `rows` of this range (same format, stride and ownership). Fails when the rows
    /// are not inside `0..len()`.
    pub fn slice(&self, rows: Range<u64>) -> Result<Self, TableError> {
        if rows.start > rows.end || rows.end > self.length {
            return Err(TableError::RowsOutOfRange {
                start: rows.start,
                end: rows.end,
                length: self.length,
            });
        }
        let mut out = self.clone();
        out.byte_offset = self.byte_offset + rows.start * self.byte_stride;
        out.length = rows.end - rows.start;
        Ok(out)
    }

    /// The same range, BORROWED: it never destroys the buffer, but it is only valid while the
    /// owner of the buffer keeps it alive.
    pub fn to_borrowed(&self) -> Self {
        Self {
            owner: None,
            ..self.clone()
        }
    }

    /// The backing buffer (the whole allocation, not just this range).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }
    /// Byte offset of row 0 in the buffer.
    pub fn byte_offset(&self) -> u64 {
        self.byte_offset
    }
    /// Number of rows.
    pub fn len(&self) -> u64 {
        self.length
    }
    /// Whether the range has no rows.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }
    /// Stored format of one row.
    pub fn format(&self) -> VectorFormat {
        self.format
    }
    /// Bytes between consecutive rows.
    pub fn byte_stride(&self) -> u64 {
        self.byte_stride
    }
    /// Payload bytes of one row (`format.byte_size()`).
    pub fn row_byte_length(&self) -> u64 {
        self.format.byte_size() as u64
    }
    /// Whether rows are packed (stride equals row size).
    pub fn is_packed(&self) -> bool {
        self.byte_stride == self.row_byte_length()
    }
    /// Bytes from row 0 to the end of the last row (0 when empty).
    pub fn byte_span(&self) -> u64 {
        span_of(self.length, self.byte_stride, self.row_byte_length()).unwrap_or(u64::MAX)
    }
    /// Whether this range owns (co-owns) its buffer.
    pub fn ownership(&self) -> Ownership {
        if self.owner.is_some() {
            Ownership::Owned
        } else {
            Ownership::Borrowed
        }
    }
    /// Whether both ranges lie in the same `wgpu::Buffer`.
    pub fn shares_buffer(&self, other: &GpuData) -> bool {
        self.buffer == other.buffer
    }
    /// The graph view descriptor of this range (format, length, offset, stride).
    pub fn view_descriptor(&self) -> DataViewDescriptor {
        DataViewDescriptor {
            format: self.format,
            length: self.length,
            byte_offset: self.byte_offset,
            byte_stride: Some(self.byte_stride),
        }
    }
}

/// Rows of `format` in `bytes`, or an error when they are not whole rows.
pub(crate) fn rows_of(bytes: u64, format: VectorFormat) -> Result<u64, TableError> {
    let row = format.byte_size() as u64;
    if !bytes.is_multiple_of(row) {
        return Err(TableError::UploadSizeMismatch {
            bytes,
            format,
            row_bytes: row,
        });
    }
    Ok(bytes / row)
}

/// Casts packed bytes to `T`, copying (so any alignment works).
pub(crate) fn cast_bytes<T: bytemuck::Pod>(bytes: &[u8]) -> Result<Vec<T>, TableError> {
    let size = std::mem::size_of::<T>();
    if size == 0 || !bytes.len().is_multiple_of(size) {
        return Err(TableError::ElementSizeMismatch {
            bytes: bytes.len() as u64,
            element_bytes: size as u64,
        });
    }
    Ok(bytemuck::pod_collect_to_vec(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_range_accepts_fitting_ranges() {
        validate_range(16, 0, 4, VectorFormat::Uint32, 4).unwrap();
        validate_range(16, 4, 3, VectorFormat::Uint32, 4).unwrap();
        validate_range(36, 0, 3, VectorFormat::Float32x3, 12).unwrap();
        // Strided: rows at 0, 16, 32; the last row ends at 44.
        validate_range(44, 0, 3, VectorFormat::Float32x3, 16).unwrap();
        assert!(validate_range(43, 0, 3, VectorFormat::Float32x3, 16).is_err());
        validate_range(6, 2, 2, VectorFormat::Float16, 2).unwrap();
        // Empty ranges fit anywhere up to the end.
        validate_range(16, 16, 0, VectorFormat::Uint32, 4).unwrap();
    }

    #[test]
    fn validate_range_names_the_problem() {
        assert!(matches!(
            validate_range(64, 0, 2, VectorFormat::Float32x3, 8),
            Err(TableError::StrideTooSmall {
                byte_stride: 8,
                row_bytes: 12,
                ..
            })
        ));
        assert!(matches!(
            validate_range(64, 2, 2, VectorFormat::Uint32, 4),
            Err(TableError::Misaligned {
                what: "byte offset",
                value: 2,
                alignment: 4,
                ..
            })
        ));
        assert!(matches!(
            validate_range(64, 0, 2, VectorFormat::Uint32, 6),
            Err(TableError::Misaligned {
                what: "byte stride",
                ..
            })
        ));
        let err = validate_range(16, 8, 3, VectorFormat::Uint32, 4).unwrap_err();
        assert!(matches!(
            err,
            TableError::RangeOutOfBounds {
                byte_offset: 8,
                byte_span: 12,
                buffer_size: 16
            }
        ));
        assert!(err.to_string().contains("16 bytes"), "{err}");
        assert!(matches!(
            validate_range(16, 0, u64::MAX, VectorFormat::Uint32, 4),
            Err(TableError::RangeOutOfBounds {
                byte_span: u64::MAX,
                ..
            })
        ));
        assert!(matches!(
            validate_range(16, 20, 0, VectorFormat::Uint32, 4),
            Err(TableError::RangeOutOfBounds { .. })
        ));
    }

    #[test]
    fn rows_and_casts_check_whole_units() {
        assert_eq!(rows_of(36, VectorFormat::Float32x3).unwrap(), 3);
        assert!(matches!(
            rows_of(10, VectorFormat::Uint32),
            Err(TableError::UploadSizeMismatch {
                bytes: 10,
                row_bytes: 4,
                ..
            })
        ));
        assert_eq!(cast_bytes::<u16>(&[1, 0, 2, 0]).unwrap(), vec![1, 2]);
        assert!(matches!(
            cast_bytes::<u32>(&[0; 6]),
            Err(TableError::ElementSizeMismatch {
                bytes: 6,
                element_bytes: 4
            })
        ));
    }
}
