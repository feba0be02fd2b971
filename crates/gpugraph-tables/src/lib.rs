//! gpugraph-tables: GPU-resident data containers and their import into a command graph.
//!
//! - [`GpuData`]: one typed range (offset, rows, format, stride) of a `wgpu::Buffer`, owned
//!   (destroyed when the last co-owner drops) or borrowed (never destroyed).
//! - [`GpuVector`]: ordered chunks of one format; fixed-width, interleaved or variable-length
//!   ([`VectorLayout`]).
//! - [`GpuSchema`], [`GpuRecordBatch`], [`GpuTable`]: named columns of equal row count,
//!   batches preserved.
//! - [`import`]: adapters that import them into a [`gpugraph_command::CommandGraph`] as
//!   [`DataView`]s / [`VectorView`]s, one logical buffer per physical allocation.
//! - [`readback`]: the explicit, blocking READBACK helpers (nothing else here reads back).
//!
//! [`VectorFormat`] lives in `gpugraph-command` so views can carry it; it is re-exported here.

#![warn(missing_docs)]

pub mod batch;
pub mod data;
pub mod error;
pub mod import;
pub mod readback;
pub mod schema;
pub mod table;
pub mod upload;
pub mod vector;

pub use batch::GpuRecordBatch;
pub use data::{GpuData, Ownership};
pub use error::TableError;
pub use gpugraph_command::{DataView, ParseFormatError, ScalarKind, VectorFormat, VectorView};
pub use import::{
    import_gpu_data, import_gpu_table, import_gpu_vector, import_record_batch, GraphImporter,
    ImportedBatch,
};
pub use schema::{GpuField, GpuSchema};
pub use table::GpuTable;
pub use vector::{GpuVector, InterleavedAttribute, ListKind, VectorKind, VectorLayout};
