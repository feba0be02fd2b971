//! Typed views: a [`DataView`] is one typed range inside a logical buffer; a [`VectorView`]
//! is an ordered list of them (the chunks of a vector), which may live in different buffers.

use crate::format::VectorFormat;
use crate::resource::BufferHandle;

/// Shape of a view to create inside a logical buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataViewDescriptor {
    /// Stored format of one row.
    pub format: VectorFormat,
    /// Number of rows.
    pub length: u64,
    /// Byte offset of row 0 inside the buffer.
    pub byte_offset: u64,
    /// Bytes between consecutive rows; `None` means packed (`format.byte_size()`).
    pub byte_stride: Option<u64>,
}

impl DataViewDescriptor {
    /// A packed view of `length` rows starting at byte 0.
    pub fn packed(format: VectorFormat, length: u64) -> Self {
        Self {
            format,
            length,
            byte_offset: 0,
            byte_stride: None,
        }
    }

    /// The same view starting at `byte_offset`.
    pub fn at_offset(mut self, byte_offset: u64) -> Self {
        self.byte_offset = byte_offset;
        self
    }
}

/// A typed range inside one logical graph buffer: format, row count, byte offset and stride,
/// and optionally a live count.
///
/// Two views of one handle share one hazard chain even when their ranges are disjoint.
///
/// Live counts: a view made by [`crate::CommandGraph::with_live_count`] also names one
/// uint32 word a GPU pass writes (e.g. a compaction's count). Its `len()` is then the
/// capacity: a consumer dispatches over the capacity and its kernel reads
/// `min(count, capacity)` rows, so a count flows from one primitive to the next without a
/// readback. A consumer must declare a read of the count's buffer; an algorithm that does not
/// accept live counts rejects such a view instead of reading the whole capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataView {
    pub(crate) buffer: BufferHandle,
    pub(crate) format: VectorFormat,
    pub(crate) length: u64,
    pub(crate) byte_offset: u64,
    pub(crate) byte_stride: u64,
    pub(crate) live: Option<LiveCount>,
}

/// Where a view's live count lives: one packed uint32 word of a logical buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LiveCount {
    pub(crate) buffer: BufferHandle,
    pub(crate) byte_offset: u64,
}

/// A 256-byte-style aligned binding range that contains a view, plus where the view starts
/// inside it. Kernels bind `offset..offset+size` as an array of the format's scalar component
/// (`array<u32>`, `array<f32>`, ...) and add `element_offset` in WGSL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlignedRange {
    /// Aligned byte offset of the binding.
    pub offset: u64,
    /// Byte size of the binding (a multiple of 4, at least 4).
    pub size: u64,
    /// Offset of the view's first row from `offset`, in scalar components (for single-
    /// component formats such as `uint32` this is a row count).
    pub element_offset: u64,
}

impl DataView {
    /// The logical buffer this view ranges over.
    pub fn buffer(&self) -> BufferHandle {
        self.buffer
    }
    /// Stored format of one row.
    pub fn format(&self) -> VectorFormat {
        self.format
    }
    /// Number of rows (with a live count: the capacity).
    pub fn len(&self) -> u64 {
        self.length
    }
    /// The live count as a one-row packed uint32 view, when the view carries one.
    pub fn live_count(&self) -> Option<DataView> {
        self.live.map(|c| DataView {
            buffer: c.buffer,
            format: VectorFormat::Uint32,
            length: 1,
            byte_offset: c.byte_offset,
            byte_stride: 4,
            live: None,
        })
    }
    /// The same rows without the live count (all `len()` rows are valid).
    pub fn without_live_count(mut self) -> DataView {
        self.live = None;
        self
    }
    /// Whether the view has no rows.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }
    /// Byte offset of row 0.
    pub fn byte_offset(&self) -> u64 {
        self.byte_offset
    }
    /// Bytes between rows.
    pub fn byte_stride(&self) -> u64 {
        self.byte_stride
    }
    /// Payload bytes of one row.
    pub fn row_byte_length(&self) -> u64 {
        self.format.byte_size() as u64
    }
    /// Whether rows are packed (stride equals row size).
    pub fn is_packed(&self) -> bool {
        self.byte_stride == self.row_byte_length()
    }
    /// Bytes spanned from row 0 to the end of the last row (0 for an empty view).
    pub fn byte_span(&self) -> u64 {
        if self.length == 0 {
            0
        } else {
            (self.length - 1) * self.byte_stride + self.row_byte_length()
        }
    }

    /// The binding range that starts at the greatest multiple of `alignment` at or below the
    /// view, and covers it. View offsets are component-aligned (checked at creation), so the
    /// lead is a whole number of components.
    pub fn aligned_range(&self, alignment: u64) -> AlignedRange {
        let alignment = alignment.max(4);
        let offset = self.byte_offset / alignment * alignment;
        let lead = self.byte_offset - offset;
        let size = (lead + self.byte_span()).max(4).div_ceil(4) * 4;
        AlignedRange {
            offset,
            size,
            element_offset: lead / self.format.component_bytes().max(1) as u64,
        }
    }
}

/// Ordered chunks of one logical vector; chunk order and shared allocations are preserved.
/// Empty chunks are allowed. Algorithms opt in to vector semantics explicitly.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VectorView {
    pub(crate) chunks: Vec<DataView>,
}

impl VectorView {
    /// A vector of the given chunks, in order. Unchecked: [`crate::CommandGraph::create_vector_view`]
    /// checks graph membership and equal formats, and algorithms check formats per chunk.
    pub fn from_chunks(chunks: Vec<DataView>) -> Self {
        Self { chunks }
    }
    /// The chunks in order.
    pub fn chunks(&self) -> &[DataView] {
        &self.chunks
    }
    /// Total rows over all chunks.
    pub fn len(&self) -> u64 {
        self.chunks.iter().map(|c| c.length).sum()
    }
    /// Whether the vector has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Format of the first chunk, if any.
    pub fn format(&self) -> Option<VectorFormat> {
        self.chunks.first().map(|c| c.format)
    }
    /// Distinct logical buffers the chunks range over, in first-seen order.
    pub fn buffers(&self) -> Vec<BufferHandle> {
        let mut out: Vec<BufferHandle> = Vec::new();
        for c in &self.chunks {
            if !out.contains(&c.buffer) {
                out.push(c.buffer);
            }
        }
        out
    }
}

impl From<DataView> for VectorView {
    /// A one-chunk vector.
    fn from(v: DataView) -> Self {
        VectorView { chunks: vec![v] }
    }
}

impl From<DataView> for BufferHandle {
    fn from(v: DataView) -> Self {
        v.buffer
    }
}

impl From<&DataView> for BufferHandle {
    fn from(v: &DataView) -> Self {
        v.buffer
    }
}
