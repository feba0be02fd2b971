//! [`GpuVector`]: ordered chunks of [`GpuData`] with one format, plus a [`VectorLayout`] that
//! says whether rows are fixed-width values, interleaved records or variable-length lists.
//!
//! Chunks may be empty, uneven, and may share one allocation (several ranges of one buffer):
//! owned chunks that share a buffer are co-owners of it through [`GpuData`]'s `Arc`, so the
//! buffer is destroyed once, when the last chunk referring to it drops. Only fixed-width
//! vectors map onto graph views; the other layouts are representable so that adapters can
//! reject them by name (see [`crate::import`]).

use std::collections::HashSet;
use std::fmt;

use gpugraph_command::{GpuContext, VectorFormat};
use wgpu::BufferUsages;

use crate::data::{cast_bytes, rows_of, GpuData};
use crate::error::TableError;
use crate::readback;
use crate::upload::create_filled_buffer;

/// The list flavor of a variable-length vector (spelled like the spec's format strings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `list<format>`: generic lists of values.
    List,
    /// `vertex-list<format>`: per-row vertex lists (paths, polygons).
    VertexList,
}

impl fmt::Display for ListKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ListKind::List => "list",
            ListKind::VertexList => "vertex-list",
        })
    }
}

/// One attribute of an interleaved record: its name, stored format, and byte offset from the
/// start of the record.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InterleavedAttribute {
    /// Attribute name, unique within the record.
    pub name: String,
    /// Stored format of the attribute.
    pub format: VectorFormat,
    /// Byte offset of the attribute from the start of the record.
    pub byte_offset: u64,
}

impl InterleavedAttribute {
    /// An attribute `name` of `format` at `byte_offset` inside the record.
    pub fn new(name: impl Into<String>, format: VectorFormat, byte_offset: u64) -> Self {
        Self {
            name: name.into(),
            format,
            byte_offset,
        }
    }
}

/// How the rows of a [`GpuVector`] are laid out, with the metadata each layout needs.
#[derive(Clone, Debug)]
pub enum VectorLayout {
    /// Every row is one value of the vector's format; each chunk is a (possibly strided)
    /// fixed-width range. The only layout graph views describe.
    Fixed,
    /// Every row is a record of several attributes sharing one stride. Each chunk is the
    /// strided range of attribute 0; attribute `k` of the same records lies at
    /// `chunk.byte_offset() - attributes[0].byte_offset + attributes[k].byte_offset`.
    Interleaved {
        /// The record's attributes; attribute 0 is the one the chunks describe.
        attributes: Vec<InterleavedAttribute>,
    },
    /// Every row is a list of values. Chunk `i` holds the flattened values of a batch of
    /// rows; `offsets[i]` holds `rows + 1` uint32 value offsets into that chunk (not read or
    /// checked on the CPU: consumers must bound them).
    VariableLength {
        /// `list` or `vertex-list`.
        kind: ListKind,
        /// One uint32 offsets range per value chunk.
        offsets: Vec<GpuData>,
    },
}

/// The data-free kind of a [`VectorLayout`], for schemas and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VectorKind {
    /// Fixed-width rows.
    Fixed,
    /// Interleaved records.
    Interleaved,
    /// Variable-length lists.
    VariableLength(ListKind),
}

impl VectorKind {
    /// Spells a format of this kind: `float32x3`, `interleaved(float32x3, ...)`,
    /// `vertex-list<float32x3>`.
    pub fn describe(self, format: VectorFormat) -> String {
        match self {
            VectorKind::Fixed => format.to_string(),
            VectorKind::Interleaved => format!("interleaved({format}, ...)"),
            VectorKind::VariableLength(kind) => format!("{kind}<{format}>"),
        }
    }
}

impl VectorLayout {
    /// The data-free kind of this layout.
    pub fn kind(&self) -> VectorKind {
        match self {
            VectorLayout::Fixed => VectorKind::Fixed,
            VectorLayout::Interleaved { .. } => VectorKind::Interleaved,
            VectorLayout::VariableLength { kind, .. } => VectorKind::VariableLength(*kind),
        }
    }
}

/// An ordered list of [`GpuData`] chunks with one format and one [`VectorLayout`].
///
/// Holds (co-owns or borrows, per chunk) the chunks' buffers; never copies, packs or reads
/// them except in the explicit READBACK methods. Chunk order and boundaries are preserved by
/// every operation, including graph import.
#[derive(Clone, Debug)]
pub struct GpuVector {
    format: VectorFormat,
    layout: VectorLayout,
    chunks: Vec<GpuData>,
}

impl From<GpuData> for GpuVector {
    fn from(data: GpuData) -> Self {
        Self::from_data(data)
    }
}

impl GpuVector {
    /// A fixed-width vector with no chunks (zero rows).
    pub fn empty(format: VectorFormat) -> Self {
        Self {
            format,
            layout: VectorLayout::Fixed,
            chunks: Vec::new(),
        }
    }

    /// A fixed-width vector of one chunk.
    pub fn from_data(data: GpuData) -> Self {
        Self {
            format: data.format(),
            layout: VectorLayout::Fixed,
            chunks: vec![data],
        }
    }

    /// A fixed-width vector of `chunks` in order (empty chunks allowed). Fails with the index
    /// of the first chunk whose format is not `format`.
    pub fn from_chunks(format: VectorFormat, chunks: Vec<GpuData>) -> Result<Self, TableError> {
        check_formats(format, &chunks)?;
        Ok(Self {
            format,
            layout: VectorLayout::Fixed,
            chunks,
        })
    }

    /// Uploads each slice into its own OWNED buffer (see [`GpuData::upload`]; empty slices
    /// become empty chunks) and returns them as one fixed-width vector.
    pub fn upload_chunks<T: bytemuck::Pod>(
        ctx: &GpuContext,
        chunks: &[&[T]],
        format: VectorFormat,
    ) -> Result<Self, TableError> {
        let chunks = chunks
            .iter()
            .map(|c| GpuData::upload(ctx, c, format, BufferUsages::empty()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            format,
            layout: VectorLayout::Fixed,
            chunks,
        })
    }

    /// Uploads all slices into ONE owned buffer (`STORAGE | COPY_SRC | COPY_DST`), each chunk
    /// starting at a multiple of the device's `min_storage_buffer_offset_alignment` so every
    /// chunk can be bound directly. The chunks co-own the buffer; it is destroyed when the
    /// last of them drops. Importing the vector yields one logical graph buffer.
    pub fn upload_chunks_shared<T: bytemuck::Pod>(
        ctx: &GpuContext,
        chunks: &[&[T]],
        format: VectorFormat,
    ) -> Result<Self, TableError> {
        let alignment = (ctx.device.limits().min_storage_buffer_offset_alignment as u64)
            .max(wgpu::COPY_BUFFER_ALIGNMENT);
        let mut parts = Vec::with_capacity(chunks.len());
        let mut lengths = Vec::with_capacity(chunks.len());
        let mut cursor = 0u64;
        for c in chunks {
            let bytes: &[u8] = bytemuck::cast_slice(c);
            lengths.push(rows_of(bytes.len() as u64, format)?);
            let offset = cursor.div_ceil(alignment) * alignment;
            parts.push((offset, bytes));
            cursor = offset + bytes.len() as u64;
        }
        let buffer = create_filled_buffer(
            &ctx.device,
            &ctx.queue,
            &parts,
            cursor,
            BufferUsages::empty(),
        )?;
        let owner = GpuData::owned_unchecked(buffer, 0, 0, format);
        let row = format.byte_size() as u64;
        let chunks = parts
            .iter()
            .zip(lengths)
            .map(|(&(offset, _), length)| owner.sibling(offset, length, format, row))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            format,
            layout: VectorLayout::Fixed,
            chunks,
        })
    }

    /// An interleaved vector: each chunk is the strided range of `attributes[0]` over a run of
    /// records (see [`VectorLayout::Interleaved`]). Validates unique names, that every chunk
    /// has attribute 0's format, that every attribute fits inside each chunk's stride and that
    /// every attribute's rows fit inside the chunk's buffer.
    pub fn interleaved(
        chunks: Vec<GpuData>,
        attributes: Vec<InterleavedAttribute>,
    ) -> Result<Self, TableError> {
        let invalid = |reason: String| TableError::InvalidLayout {
            layout: "interleaved",
            reason,
        };
        let first = attributes
            .first()
            .ok_or_else(|| invalid("no attributes".into()))?
            .clone();
        let mut names = HashSet::new();
        for a in &attributes {
            if !names.insert(a.name.as_str()) {
                return Err(invalid(format!("attribute '{}' appears twice", a.name)));
            }
        }
        let record_end = attributes
            .iter()
            .map(|a| a.byte_offset + a.format.byte_size() as u64)
            .max()
            .unwrap_or(0);
        check_formats(first.format, &chunks)?;
        for (i, c) in chunks.iter().enumerate() {
            if c.byte_stride() < record_end {
                return Err(invalid(format!(
                    "chunk {i}: stride {} is smaller than the {record_end}-byte record",
                    c.byte_stride()
                )));
            }
            if c.byte_offset() < first.byte_offset {
                return Err(invalid(format!(
                    "chunk {i}: byte offset {} is before attribute '{}' offset {}",
                    c.byte_offset(),
                    first.name,
                    first.byte_offset
                )));
            }
            for a in &attributes {
                attribute_chunk(c, &first, a)
                    .map_err(|e| invalid(format!("chunk {i}, attribute '{}': {e}", a.name)))?;
            }
        }
        Ok(Self {
            format: first.format,
            layout: VectorLayout::Interleaved { attributes },
            chunks,
        })
    }

    /// A variable-length vector: `values[i]` are the flattened values of a run of rows and
    /// `offsets[i]` their `rows + 1` uint32 value offsets (an empty offsets range means zero
    /// rows). Validates matching chunk counts and formats; the offsets are not read.
    pub fn variable_length(
        kind: ListKind,
        format: VectorFormat,
        values: Vec<GpuData>,
        offsets: Vec<GpuData>,
    ) -> Result<Self, TableError> {
        let invalid = |reason: String| TableError::InvalidLayout {
            layout: "variable-length",
            reason,
        };
        if values.len() != offsets.len() {
            return Err(invalid(format!(
                "{} value chunks but {} offsets chunks",
                values.len(),
                offsets.len()
            )));
        }
        check_formats(format, &values)?;
        if let Some((i, o)) = offsets
            .iter()
            .enumerate()
            .find(|(_, o)| o.format() != VectorFormat::Uint32)
        {
            return Err(invalid(format!(
                "offsets chunk {i} has format {} (needs uint32)",
                o.format()
            )));
        }
        Ok(Self {
            format,
            layout: VectorLayout::VariableLength { kind, offsets },
            chunks: values,
        })
    }

    /// The chunks of several vectors, in order, as one vector (no GPU work; buffers are
    /// shared). All vectors need the same format and layout (for interleaved vectors, the
    /// same attributes; for lists, the same list kind).
    pub fn concat(vectors: &[&GpuVector]) -> Result<Self, TableError> {
        let Some(first) = vectors.first() else {
            return Err(TableError::InvalidLayout {
                layout: "fixed",
                reason: "concat needs at least one vector to know the format".into(),
            });
        };
        let mut out = (*first).clone();
        for (index, v) in vectors.iter().enumerate().skip(1) {
            let same = v.format == first.format
                && match (&first.layout, &v.layout) {
                    (VectorLayout::Fixed, VectorLayout::Fixed) => true,
                    (
                        VectorLayout::Interleaved { attributes: a },
                        VectorLayout::Interleaved { attributes: b },
                    ) => a == b,
                    (
                        VectorLayout::VariableLength { kind: a, .. },
                        VectorLayout::VariableLength { kind: b, .. },
                    ) => a == b,
                    _ => false,
                };
            if !same {
                return Err(TableError::ConcatMismatch {
                    index,
                    expected: first.describe(),
                    actual: v.describe(),
                });
            }
            out.chunks.extend(v.chunks.iter().cloned());
            if let (
                VectorLayout::VariableLength { offsets, .. },
                VectorLayout::VariableLength { offsets: more, .. },
            ) = (&mut out.layout, &v.layout)
            {
                offsets.extend(more.iter().cloned());
            }
        }
        Ok(out)
    }

    /// The stored format: of every row (fixed), of attribute 0 (interleaved), or of the
    /// flattened values (variable-length).
    pub fn format(&self) -> VectorFormat {
        self.format
    }
    /// The layout and its metadata.
    pub fn layout(&self) -> &VectorLayout {
        &self.layout
    }
    /// The data-free kind of the layout.
    pub fn kind(&self) -> VectorKind {
        self.layout.kind()
    }
    /// Format and layout spelled for messages (`float32x3`, `list<float32x3>`, ...).
    pub fn describe(&self) -> String {
        self.kind().describe(self.format)
    }
    /// The chunks in order (for variable-length vectors: the value chunks).
    pub fn chunks(&self) -> &[GpuData] {
        &self.chunks
    }
    /// Number of chunks.
    pub fn num_chunks(&self) -> usize {
        self.chunks.len()
    }
    /// Logical rows: values (fixed), records (interleaved), or lists (variable-length, from
    /// the offsets ranges' lengths).
    pub fn len(&self) -> u64 {
        self.chunk_lengths().iter().sum()
    }
    /// Whether the vector has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Logical rows per chunk.
    pub fn chunk_lengths(&self) -> Vec<u64> {
        match &self.layout {
            VectorLayout::VariableLength { offsets, .. } => {
                offsets.iter().map(|o| o.len().saturating_sub(1)).collect()
            }
            _ => self.chunks.iter().map(GpuData::len).collect(),
        }
    }
    /// Stored values over all chunks (equals [`GpuVector::len`] except for lists).
    pub fn value_count(&self) -> u64 {
        self.chunks.iter().map(GpuData::len).sum()
    }

    /// The fixed-width vector of one attribute of an interleaved vector: strided ranges of the
    /// same buffers with the same ownership, chunk for chunk. This is the adapter that makes
    /// interleaved records importable one attribute at a time.
    pub fn attribute(&self, name: &str) -> Result<GpuVector, TableError> {
        let VectorLayout::Interleaved { attributes } = &self.layout else {
            return Err(TableError::InvalidLayout {
                layout: "interleaved",
                reason: format!(
                    "attribute '{name}' requested from a {} vector",
                    self.describe()
                ),
            });
        };
        let Some(attr) = attributes.iter().find(|a| a.name == name) else {
            return Err(TableError::UnknownAttribute {
                attribute: name.to_string(),
                available: attributes.iter().map(|a| a.name.clone()).collect(),
            });
        };
        let chunks = self
            .chunks
            .iter()
            .map(|c| attribute_chunk(c, &attributes[0], attr))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            format: attr.format,
            layout: VectorLayout::Fixed,
            chunks,
        })
    }

    /// READBACK (one submission on `ctx.queue`, blocks until done): the row payloads of all
    /// chunks concatenated in chunk order, strides removed. Fixed-width vectors only.
    pub fn read_back_bytes(&self, ctx: &GpuContext) -> Result<Vec<u8>, TableError> {
        if !matches!(self.layout, VectorLayout::Fixed) {
            return Err(TableError::NotFixedWidth {
                operation: "vector readback",
                layout: self.describe(),
            });
        }
        let refs: Vec<&GpuData> = self.chunks.iter().collect();
        Ok(readback::read_data_rows(&ctx.device, &ctx.queue, &refs)?.concat())
    }

    /// READBACK (one submission on `ctx.queue`, blocks until done): all rows cast to `T`, in
    /// chunk order. Fixed-width vectors only.
    pub fn read_back<T: bytemuck::Pod>(&self, ctx: &GpuContext) -> Result<Vec<T>, TableError> {
        cast_bytes(&self.read_back_bytes(ctx)?)
    }
}

fn check_formats(format: VectorFormat, chunks: &[GpuData]) -> Result<(), TableError> {
    match chunks.iter().position(|c| c.format() != format) {
        Some(chunk) => Err(TableError::ChunkFormatMismatch {
            chunk,
            expected: format,
            actual: chunks[chunk].format(),
        }),
        None => Ok(()),
    }
}

/// The range of attribute `attr` over the records a chunk of attribute `first` describes.
fn attribute_chunk(
    chunk: &GpuData,
    first: &InterleavedAttribute,
    attr: &InterleavedAttribute,
) -> Result<GpuData, TableError> {
    let record_start = chunk.byte_offset() - first.byte_offset;
    chunk.sibling(
        record_start + attr.byte_offset,
        chunk.len(),
        attr.format,
        chunk.byte_stride(),
    )
}
