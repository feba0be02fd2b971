//! gpugraph-arrow: the Arrow (arrow-rs) adapter layer of gpugraph. Nothing else in the
//! library depends on Arrow; tables, algorithms and graphs never see Arrow types.
//!
//! - Upload ([`upload`], [`table`], [`batch`]): Arrow arrays → [`GpuVector`]s. Primitive
//!   and fixed-size-list values map to [`VectorFormat`]s by the rules in [`mapping`]; string
//!   dictionaries and (explicitly) string columns become `uint32` codes with the strings kept
//!   on the CPU ([`dictionary`]); nulls become a source-aligned `uint32` validity mask next to
//!   the values (1 valid, 0 null; null rows hold zero). A record batch becomes a
//!   [`GpuRecordBatch`] ([`ArrowBatch`]); several become a [`GpuTable`] whose columns are
//!   chunked by batch ([`ArrowTable`]). Lossy or checked conversions (64-bit integers,
//!   `Float64`, strings) happen only when [`UploadOptions`] names them.
//! - READBACK ([`readback`]): explicit, blocking reconstruction of Arrow arrays and record
//!   batches from GPU vectors, masks and dictionaries.
//!
//! Uploads write buffers through mappings at creation and never submit; readbacks submit
//! once and block. Errors are [`ArrowAdapterError`]s naming the column, its Arrow type, the
//! row and the value.
//!
//! [`GpuVector`]: gpugraph_tables::GpuVector
//! [`GpuRecordBatch`]: gpugraph_tables::GpuRecordBatch
//! [`GpuTable`]: gpugraph_tables::GpuTable
//! [`VectorFormat`]: gpugraph_tables::VectorFormat

#![warn(missing_docs)]

pub mod batch;
mod chunks;
mod decode;
pub mod dictionary;
mod encode;
pub mod error;
pub mod mapping;
pub mod options;
pub mod readback;
mod stage;
pub mod table;
pub mod upload;
pub mod validity;

pub use batch::{upload_record_batch, ArrowBatch};
pub use dictionary::{DictionaryColumn, DictionaryEncoder, EncodedCodes};
pub use error::ArrowAdapterError;
pub use mapping::{
    default_data_type, plan_column, readback_data_type, readback_schema, ColumnEncoding,
    ScalarConversion,
};
pub use options::{
    ChunkPlacement, Float64Policy, Int64Policy, MaskTransfer, UploadOptions, Utf8Policy,
    ValidityPolicy,
};
pub use readback::{
    read_back_array, read_back_column, read_back_dictionary, read_back_gpu_record_batch,
    read_back_gpu_table,
};
pub use table::{upload_record_batches, ArrowTable};
pub use upload::{
    dictionary_encode_utf8, dictionary_encode_utf8_chunks, upload_array, upload_array_chunks,
    upload_dictionary, upload_dictionary_chunks, GpuColumn,
};
pub use validity::{mask_transfer, mask_transfer_bytes};
