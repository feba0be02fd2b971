//! [`TableError`]: every failure of the table containers, their readback helpers and their
//! graph import adapters. Messages name the column, graph id or chunk and the numbers
//! involved; no library call panics on bad input.

use gpugraph_command::{GraphError, VectorFormat};
use wgpu::BufferUsages;

/// Error returned by `gpugraph-tables` calls.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// A range's byte stride is smaller than one row of its format.
    #[error("byte stride {byte_stride} is smaller than the {format} row size {row_bytes}")]
    StrideTooSmall {
        /// The requested stride.
        byte_stride: u64,
        /// Packed bytes of one row.
        row_bytes: u64,
        /// Row format.
        format: VectorFormat,
    },
    /// A range's byte offset or stride is not a multiple of its format's component size.
    #[error("{what} {value} is not aligned to {alignment} bytes as {format} requires")]
    Misaligned {
        /// "byte offset" or "byte stride".
        what: &'static str,
        /// The offending value.
        value: u64,
        /// Required alignment in bytes.
        alignment: u64,
        /// Row format.
        format: VectorFormat,
    },
    /// A range does not fit inside its buffer.
    #[error("range at byte offset {byte_offset} spanning {byte_span} bytes does not fit in a buffer of {buffer_size} bytes")]
    RangeOutOfBounds {
        /// First byte of the range.
        byte_offset: u64,
        /// Bytes spanned from row 0 to the end of the last row (`u64::MAX` on overflow).
        byte_span: u64,
        /// Size of the buffer.
        buffer_size: u64,
    },
    /// A row range is outside a range's rows.
    #[error("rows {start}..{end} are outside a range of {length} rows")]
    RowsOutOfRange {
        /// First requested row.
        start: u64,
        /// One past the last requested row.
        end: u64,
        /// Rows available.
        length: u64,
    },
    /// Uploaded bytes are not a whole number of rows.
    #[error("{bytes} bytes of upload data are not a whole number of {format} rows ({row_bytes} bytes each)")]
    UploadSizeMismatch {
        /// Bytes supplied.
        bytes: u64,
        /// Row format.
        format: VectorFormat,
        /// Packed bytes of one row.
        row_bytes: u64,
    },
    /// A buffer would exceed the device's `max_buffer_size`.
    #[error("a buffer of {bytes} bytes exceeds the device's max buffer size {max}")]
    BufferTooLarge {
        /// Requested size.
        bytes: u64,
        /// The device limit.
        max: u64,
    },
    /// Requested buffer usage flags cannot be combined with the table's own.
    #[error("buffer usage {usage:?} is not allowed: {reason}")]
    InvalidUsage {
        /// The requested flags.
        usage: BufferUsages,
        /// Why.
        reason: String,
    },
    /// The device refused to create a buffer (out of memory or a validation error).
    #[error("creating a buffer of {bytes} bytes failed: {reason}")]
    Allocation {
        /// Requested size.
        bytes: u64,
        /// wgpu's error text.
        reason: String,
    },
    /// An operation needs a usage flag the buffer was not created with.
    #[error(
        "{operation} needs buffer usage {needed:?} but the buffer was created with {actual:?}"
    )]
    MissingUsage {
        /// The operation ("readback", ...).
        operation: &'static str,
        /// Missing flags.
        needed: BufferUsages,
        /// Flags the buffer has.
        actual: BufferUsages,
    },
    /// Copying to the staging buffer, submitting, mapping or polling failed.
    #[error("readback failed: {reason}")]
    Readback {
        /// What failed.
        reason: String,
    },
    /// Read-back bytes are not a whole number of the requested element type.
    #[error("{bytes} read-back bytes are not a whole number of {element_bytes}-byte elements")]
    ElementSizeMismatch {
        /// Bytes read.
        bytes: u64,
        /// `size_of::<T>()` of the requested element.
        element_bytes: u64,
    },
    /// A chunk's format differs from its vector's format.
    #[error("chunk {chunk} has format {actual} but the vector's format is {expected}")]
    ChunkFormatMismatch {
        /// Index of the chunk.
        chunk: usize,
        /// The vector's format.
        expected: VectorFormat,
        /// The chunk's format.
        actual: VectorFormat,
    },
    /// An interleaved or variable-length layout is inconsistent with its chunks.
    #[error("invalid {layout} vector layout: {reason}")]
    InvalidLayout {
        /// "interleaved" or "variable-length".
        layout: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// An operation that needs fixed-width rows got another layout.
    #[error("{operation} needs a fixed-width vector but the vector is {layout}")]
    NotFixedWidth {
        /// The operation.
        operation: &'static str,
        /// The vector's layout, spelled (e.g. `interleaved(...)`, `list<float32x3>`).
        layout: String,
    },
    /// Vectors that differ in format or layout cannot be concatenated.
    #[error("cannot concatenate vector {index} ({actual}) with vector 0 ({expected})")]
    ConcatMismatch {
        /// Index of the offending vector.
        index: usize,
        /// Format and layout of vector 0.
        expected: String,
        /// Format and layout of the offending vector.
        actual: String,
    },
    /// An interleaved vector has no attribute with this name.
    #[error("interleaved vector has no attribute '{attribute}' (attributes: {available:?})")]
    UnknownAttribute {
        /// The requested name.
        attribute: String,
        /// Names that exist.
        available: Vec<String>,
    },
    /// Graph import of an interleaved vector: views describe one fixed-width format per row.
    #[error("column {column} is an interleaved vector; graph views need fixed-width rows (import each attribute with GpuVector::attribute instead)")]
    InterleavedVector {
        /// Column or import id.
        column: String,
    },
    /// Graph import of a variable-length vector: rows are not fixed-stride values.
    #[error("column {column} is variable-length ({format}); graph views need fixed-width rows (use a dedicated adapter that consumes the offsets)")]
    VariableLengthVector {
        /// Column or import id.
        column: String,
        /// The variable-length format, e.g. `vertex-list<float32x3>`.
        format: String,
    },
    /// One buffer is imported twice into a graph with incompatible usage.
    #[error("buffer already imported as {id} with usage {imported:?}, which lacks {missing:?} requested for {requested_by}")]
    SharedBufferUsage {
        /// Graph id of the existing handle.
        id: String,
        /// Usage of the existing handle.
        imported: BufferUsages,
        /// Flags the new import asks for that the handle lacks.
        missing: BufferUsages,
        /// The id of the import that asked.
        requested_by: String,
    },
    /// A schema lists one field name twice.
    #[error("schema field '{name}' appears at positions {first} and {second}")]
    DuplicateField {
        /// The repeated name.
        name: String,
        /// First position.
        first: usize,
        /// Second position.
        second: usize,
    },
    /// A record batch has a different number of columns than its schema has fields.
    #[error("record batch has {columns} columns but its schema has {fields} fields")]
    ColumnCountMismatch {
        /// Fields in the schema.
        fields: usize,
        /// Columns supplied.
        columns: usize,
    },
    /// A column's format or layout differs from its schema field.
    #[error("column {column} is {actual} but the schema declares {expected}")]
    ColumnTypeMismatch {
        /// Column name.
        column: String,
        /// Format and layout the schema declares.
        expected: String,
        /// Format and layout of the column.
        actual: String,
    },
    /// Columns of one record batch have different row counts.
    #[error("column {column} has {rows} rows but column {reference} has {expected}")]
    RowCountMismatch {
        /// The offending column.
        column: String,
        /// Its row count.
        rows: u64,
        /// The column the count is compared against (the first one).
        reference: String,
        /// The reference row count.
        expected: u64,
    },
    /// No column with this name.
    #[error("no column named '{column}' (columns: {available:?})")]
    MissingColumn {
        /// The requested name.
        column: String,
        /// Names that exist.
        available: Vec<String>,
    },
    /// A table's batch has a different schema than the table.
    #[error("batch {batch} does not match the table schema: {reason}")]
    BatchSchemaMismatch {
        /// Index of the batch.
        batch: usize,
        /// What differs.
        reason: String,
    },
    /// The command graph rejected an import or view.
    #[error(transparent)]
    Graph(#[from] GraphError),
}
