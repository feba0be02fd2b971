//! Upload of Arrow arrays into [`GpuVector`]s: values (or dictionary codes), an optional
//! source-aligned `uint32` validity mask, and for string columns the dictionary on the CPU.
//!
//! Every function here creates OWNED device-local buffers (`STORAGE | COPY_SRC | COPY_DST`
//! plus [`UploadOptions::extra_usage`]) written by copies from the tables crate's staging ring,
//! submitted on `ctx.queue` (in place for its next submission). Chunks keep the source's order
//! and boundaries (one chunk per array; no concatenation). Bytes moved per row:
//! `format.byte_size()` host→device, plus 4 for a mask. Types, schemas and nulls are checked
//! before any buffer is created; values convert (and are range-checked) as they stage, so a
//! value out of range drops the buffers made for its column and names the first such row.

use std::sync::Arc;

use arrow_array::Array;
use arrow_schema::DataType;
use gpugraph_command::GpuContext;
use gpugraph_tables::GpuVector;

use rayon::prelude::*;

use crate::dictionary::{
    codes_of_dictionary, CodeEncoder, DictionaryColumn, DictionaryEncoder, EncodedCodes,
};
use crate::encode::{first_null, EncodedChunk, ValueEncoder};
use crate::error::ArrowAdapterError;
use crate::mapping::{is_string, plan_column, ColumnEncoding};
use crate::options::{UploadOptions, ValidityPolicy};
use crate::stage::{stage_masks, stage_values, PreparedChunk};

/// One uploaded Arrow column: values or codes, an optional validity mask with the same chunk
/// lengths, and the dictionary when the values are codes. Holds (co-owns) the buffers.
#[derive(Clone, Debug)]
pub struct GpuColumn {
    /// Values (see [`crate::mapping`] for the format) or `uint32` dictionary codes.
    pub values: GpuVector,
    /// `uint32` mask, 1 valid and 0 null, chunk-aligned with `values`; null rows of `values`
    /// hold zero.
    pub validity: Option<GpuVector>,
    /// The strings the codes index, when the column is dictionary-encoded.
    pub dictionary: Option<Arc<Vec<String>>>,
}

impl From<DictionaryColumn> for GpuColumn {
    fn from(d: DictionaryColumn) -> Self {
        Self {
            values: d.codes,
            validity: d.validity,
            dictionary: Some(Arc::new(d.dictionary)),
        }
    }
}

impl GpuColumn {
    /// The column as a [`DictionaryColumn`], if it is dictionary-encoded.
    pub fn into_dictionary(self) -> Option<DictionaryColumn> {
        let dictionary = Arc::unwrap_or_clone(self.dictionary?);
        Some(DictionaryColumn {
            codes: self.values,
            dictionary,
            validity: self.validity,
        })
    }
}

/// Uploads one Arrow array as a one-chunk column named `column` (the name appears in
/// errors). Dictionary arrays of strings upload as codes; string arrays only with
/// [`Utf8Policy::DictionaryEncode`](crate::Utf8Policy). See [`crate::mapping`] for types.
pub fn upload_array(
    ctx: &GpuContext,
    column: &str,
    array: &dyn Array,
    options: &UploadOptions,
) -> Result<GpuColumn, ArrowAdapterError> {
    upload_column(ctx, column, array.data_type(), &[array], options)
}

/// Uploads arrays of one Arrow type `data_type` as one column, one chunk per array in order
/// (empty arrays become empty chunks; no arrays give an empty vector). Fails naming the chunk
/// whose type differs; rows in errors count over all chunks.
pub fn upload_array_chunks(
    ctx: &GpuContext,
    column: &str,
    data_type: &DataType,
    chunks: &[&dyn Array],
    options: &UploadOptions,
) -> Result<GpuColumn, ArrowAdapterError> {
    upload_column(ctx, column, data_type, chunks, options)
}

/// Uploads a `Dictionary<integer, string>` array as `uint32` codes plus its CPU dictionary
/// (see [`crate::dictionary`] for the code rule). Fails naming `column` for other types.
pub fn upload_dictionary(
    ctx: &GpuContext,
    column: &str,
    array: &dyn Array,
    options: &UploadOptions,
) -> Result<DictionaryColumn, ArrowAdapterError> {
    upload_dictionary_chunks(ctx, column, array.data_type(), &[array], options)
}

/// [`upload_dictionary`] over chunks that share one Arrow type: one dictionary unified over
/// all chunks, one code chunk per array.
pub fn upload_dictionary_chunks(
    ctx: &GpuContext,
    column: &str,
    data_type: &DataType,
    chunks: &[&dyn Array],
    options: &UploadOptions,
) -> Result<DictionaryColumn, ArrowAdapterError> {
    upload_coded(
        ctx,
        column,
        data_type,
        chunks,
        options,
        matches!(data_type, DataType::Dictionary(_, _)),
        "upload_dictionary needs a Dictionary<integer, string> array (use dictionary_encode_utf8 for plain strings)",
    )
}

/// Dictionary-encodes a `Utf8`, `LargeUtf8` or `Utf8View` array on upload: `uint32` codes on
/// the GPU, the distinct strings on the CPU in order of first appearance. Explicit by
/// design: strings have no GPU format. Fails naming `column` for other types.
pub fn dictionary_encode_utf8(
    ctx: &GpuContext,
    column: &str,
    array: &dyn Array,
    options: &UploadOptions,
) -> Result<DictionaryColumn, ArrowAdapterError> {
    dictionary_encode_utf8_chunks(ctx, column, array.data_type(), &[array], options)
}

/// [`dictionary_encode_utf8`] over chunks that share one string type: one dictionary over
/// all chunks, one code chunk per array.
pub fn dictionary_encode_utf8_chunks(
    ctx: &GpuContext,
    column: &str,
    data_type: &DataType,
    chunks: &[&dyn Array],
    options: &UploadOptions,
) -> Result<DictionaryColumn, ArrowAdapterError> {
    upload_coded(
        ctx,
        column,
        data_type,
        chunks,
        &options.encode_utf8(),
        is_string(data_type),
        "dictionary_encode_utf8 needs a Utf8, LargeUtf8 or Utf8View array",
    )
}

/// Uploads a column that `accepted` says yields dictionary codes; otherwise fails naming
/// `column` with `hint`, allocating nothing.
fn upload_coded(
    ctx: &GpuContext,
    column: &str,
    data_type: &DataType,
    chunks: &[&dyn Array],
    options: &UploadOptions,
    accepted: bool,
    hint: &str,
) -> Result<DictionaryColumn, ArrowAdapterError> {
    if !accepted {
        return Err(ArrowAdapterError::UnsupportedType {
            column: column.to_string(),
            data_type: data_type.clone(),
            hint: hint.into(),
        });
    }
    let uploaded = upload_column(ctx, column, data_type, chunks, options)?;
    let stored = uploaded.values.describe();
    // Callers accept only dictionary or string types, so a dictionary exists.
    uploaded
        .into_dictionary()
        .ok_or_else(|| ArrowAdapterError::UnsupportedType {
            column: column.to_string(),
            data_type: DataType::Null,
            hint: format!("the {stored} column was uploaded without a dictionary"),
        })
}

/// Checks every chunk (types, nulls), then uploads values and mask, converting values as they
/// stage.
pub(crate) fn upload_column(
    ctx: &GpuContext,
    column: &str,
    data_type: &DataType,
    chunks: &[&dyn Array],
    options: &UploadOptions,
) -> Result<GpuColumn, ArrowAdapterError> {
    let start = std::time::Instant::now();
    let prepared = prepare_column(column, data_type, chunks, options)?;
    let prepared_at = start.elapsed();
    let uploaded = prepared.upload(ctx, options);
    if trace_upload() {
        eprintln!(
            "upload {column}: checks and dictionary {:.1} ms, staged conversion and copies {:.1} ms",
            prepared_at.as_secs_f64() * 1e3,
            (start.elapsed() - prepared_at).as_secs_f64() * 1e3
        );
    }
    uploaded
}

/// Whether `GPUGRAPH_TRACE_UPLOAD` is set (non-empty, not `0`): [`upload_column`] then prints
/// its encode and staging-copy times per column to stderr, to tell host work from the bus.
fn trace_upload() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| {
        std::env::var("GPUGRAPH_TRACE_UPLOAD").is_ok_and(|v| !v.is_empty() && v != "0")
    })
}

/// A chunk of dictionary codes as an encoded chunk.
fn coded(codes: EncodedCodes) -> EncodedChunk {
    EncodedChunk {
        rows: codes.codes.len(),
        bytes: arrow_buffer::Buffer::from_vec(codes.codes),
        nulls: codes.nulls,
    }
}

/// A column checked on the CPU, ready for upload: value chunks convert while they stage.
pub(crate) struct PreparedColumn<'c> {
    encoding: ColumnEncoding,
    chunks: Vec<PreparedChunk<'c>>,
    masked: bool,
    dictionary: Vec<String>,
}

/// The CPU half of [`upload_column`]: plans the type, checks every chunk's type and nulls,
/// encodes dictionary codes (their order is sequential) and decides whether a mask is needed.
/// Value conversion (and its range checks) happens as the chunks stage.
pub(crate) fn prepare_column<'c>(
    column: &'c str,
    data_type: &DataType,
    chunks: &[&dyn Array],
    options: &UploadOptions,
) -> Result<PreparedColumn<'c>, ArrowAdapterError> {
    let encoding = plan_column(column, data_type, options)?;
    if let Some((batch, chunk)) = chunks
        .iter()
        .enumerate()
        .find(|(_, c)| c.data_type() != data_type)
    {
        return Err(ArrowAdapterError::SchemaMismatch {
            batch,
            reason: format!(
                "column '{column}' is {} where the column type is {data_type}",
                chunk.data_type()
            ),
        });
    }
    // Chunks are checked and coded in parallel; the dictionary's code order (first appearance
    // over chunks in order) stays sequential.
    let row_bases: Vec<usize> = chunks
        .iter()
        .scan(0usize, |base, c| {
            let b = *base;
            *base += c.len();
            Some(b)
        })
        .collect();
    let mut encoder = DictionaryEncoder::new();
    let results: Vec<Result<PreparedChunk<'c>, ArrowAdapterError>> = match encoding {
        ColumnEncoding::Values { format, conversion } => chunks
            .par_iter()
            .zip(row_bases.par_iter())
            .map(|(chunk, &base)| {
                ValueEncoder::new(column, *chunk, format, conversion, base)
                    .map(PreparedChunk::Values)
            })
            .collect(),
        ColumnEncoding::DictionaryCodes => {
            let remaps = chunks
                .iter()
                .map(|c| encoder.remap_dictionary(column, *c))
                .collect::<Result<Vec<_>, _>>()?;
            chunks
                .par_iter()
                .zip(remaps.par_iter())
                .map(|(chunk, remap)| {
                    Ok(match CodeEncoder::new(*chunk, remap) {
                        Some(codes) => PreparedChunk::Codes(codes),
                        None => PreparedChunk::Encoded(coded(codes_of_dictionary(*chunk, remap))),
                    })
                })
                .collect()
        }
        ColumnEncoding::EncodedStrings => chunks
            .iter()
            .map(|c| {
                encoder
                    .encode_strings(column, *c)
                    .map(|codes| PreparedChunk::Encoded(coded(codes)))
            })
            .collect(),
    };
    let mut encoded = Vec::with_capacity(chunks.len());
    for (result, base) in results.into_iter().zip(row_bases) {
        // The first failing chunk in order is the error, as when encoded one by one.
        let e = result?;
        if options.validity == ValidityPolicy::RejectNulls {
            if let Some(row) = first_null(e.nulls()) {
                return Err(ArrowAdapterError::NullsRejected {
                    column: column.to_string(),
                    row: base + row,
                });
            }
        }
        encoded.push(e);
    }
    let masked = match options.validity {
        ValidityPolicy::Always => true,
        ValidityPolicy::IfNulls => encoded.iter().any(|e| e.nulls().is_some()),
        ValidityPolicy::RejectNulls => false,
    };
    Ok(PreparedColumn {
        encoding,
        chunks: encoded,
        masked,
        dictionary: encoder.into_dictionary(),
    })
}

impl PreparedColumn<'_> {
    /// The GPU half of [`upload_column`]: creates and stages the value and mask buffers.
    pub(crate) fn upload(
        self,
        ctx: &GpuContext,
        options: &UploadOptions,
    ) -> Result<GpuColumn, ArrowAdapterError> {
        let values = stage_values(ctx, &self.chunks, self.encoding.format(), options)?;
        let validity = if self.masked {
            Some(stage_masks(ctx, &self.chunks, options)?)
        } else {
            None
        };
        let dictionary = self
            .encoding
            .has_dictionary()
            .then(|| Arc::new(self.dictionary));
        Ok(GpuColumn {
            values,
            validity,
            dictionary,
        })
    }
}
