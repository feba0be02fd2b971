//! [`ArrowAdapterError`]: every failure of the Arrow upload and readback adapters. Messages
//! name the column, its Arrow type, the row and the value involved; no call panics on bad
//! input.

use arrow_schema::{ArrowError, DataType};
use gpugraph_tables::TableError;

/// Error returned by `gpugraph-arrow` calls.
#[derive(Debug, thiserror::Error)]
pub enum ArrowAdapterError {
    /// The Arrow type has no GPU representation in this adapter.
    #[error("column '{column}' has Arrow type {data_type}, which cannot be uploaded: {hint}")]
    UnsupportedType {
        /// Column name.
        column: String,
        /// The column's Arrow type.
        data_type: DataType,
        /// What to do instead.
        hint: String,
    },
    /// The Arrow type uploads only through an explicit, lossy or checked conversion that the
    /// upload options leave off.
    #[error("column '{column}' has Arrow type {data_type}, which uploads only with {option}")]
    ConversionNotEnabled {
        /// Column name.
        column: String,
        /// The column's Arrow type.
        data_type: DataType,
        /// The option that enables the conversion, e.g. `Int64Policy::NarrowChecked`.
        option: &'static str,
    },
    /// A value does not fit the 32-bit GPU format (upload) or the Arrow type (readback).
    #[error("column '{column}' row {row}: value {value} does not fit {target}")]
    ValueOutOfRange {
        /// Column name.
        column: String,
        /// Row of the first offending value.
        row: usize,
        /// The value, spelled.
        value: String,
        /// The type it had to fit (`sint32`, `float32`, `Int8`, ...).
        target: String,
    },
    /// A dictionary column's row points past its dictionary (a corrupt file): refused
    /// rather than clamped into the dictionary.
    #[error("column '{column}' row {row}: dictionary index {key} is past its {len}-entry dictionary (the data is corrupt)")]
    CorruptDictionary {
        /// Column name.
        column: String,
        /// Row of the first offending key.
        row: usize,
        /// The key.
        key: i128,
        /// Dictionary entries.
        len: usize,
    },
    /// The column has a null but the options reject nulls (`ValidityPolicy::RejectNulls`).
    #[error("column '{column}' row {row} is null and the upload options reject nulls")]
    NullsRejected {
        /// Column name.
        column: String,
        /// Row of the first null.
        row: usize,
    },
    /// A fixed-size list has a null element inside a valid list; GPU vectors keep one
    /// validity bit per row, not per component.
    #[error("column '{column}' row {row}: component {component} is null inside a valid list; only whole rows can be null")]
    NullComponent {
        /// Column name.
        column: String,
        /// The row (list) holding the null component.
        row: usize,
        /// Component index inside the list.
        component: usize,
    },
    /// Record batches of one table disagree with the table's Arrow schema.
    #[error("batch {batch} does not match the table's Arrow schema: {reason}")]
    SchemaMismatch {
        /// Index of the batch.
        batch: usize,
        /// What differs.
        reason: String,
    },
    /// A GPU vector cannot be read back as the requested Arrow type.
    #[error("column '{column}': a {stored} vector cannot be read back as Arrow {data_type}")]
    ReadbackType {
        /// Column name.
        column: String,
        /// The vector's stored format and layout, spelled.
        stored: String,
        /// The requested Arrow type.
        data_type: DataType,
    },
    /// A validity mask does not match its values (format, layout or chunk lengths).
    #[error("column '{column}': validity mask {reason}")]
    ValidityMismatch {
        /// Column name.
        column: String,
        /// What differs.
        reason: String,
    },
    /// The columns of a batch being read back have different chunk lengths, so the chunks
    /// cannot become record batches.
    #[error("column '{column}' has chunk row counts {actual:?} but column '{reference}' has {expected:?}; read-back record batches need aligned chunks")]
    ChunkTopologyMismatch {
        /// The offending column.
        column: String,
        /// Its per-chunk row counts.
        actual: Vec<u64>,
        /// The first column's name.
        reference: String,
        /// The first column's per-chunk row counts.
        expected: Vec<u64>,
    },
    /// A dictionary code read back points past the end of its dictionary.
    #[error("column '{column}' row {row}: code {code} is outside a dictionary of {len} values")]
    CodeOutOfRange {
        /// Column name.
        column: String,
        /// Row of the first offending code.
        row: usize,
        /// The code.
        code: u32,
        /// Dictionary length.
        len: usize,
    },
    /// A table container rejected an upload, a layout or a readback.
    #[error(transparent)]
    Table(#[from] TableError),
    /// Arrow rejected a reconstructed array or record batch.
    #[error("building the Arrow result failed: {0}")]
    Arrow(#[from] ArrowError),
}
