//! Upload of Arrow arrays into [`GpuVector`]s: values (or dictionary codes), an optional
//! source-aligned `uint32` validity mask, and for string columns the dictionary on the CPU.
//!
//! Every function here creates OWNED buffers (`STORAGE | COPY_SRC | COPY_DST` plus
//! [`UploadOptions::extra_usage`]) written through a mapping at creation: no queue submission,
//! no GPU work. Chunks keep the source's order and boundaries (one chunk per array; no
//! concatenation). Bytes moved per row: `format.byte_size()` host→device, plus 4 for a mask.
//! Chunks of a column are encoded and checked on the CPU before any buffer is created, so a
//! failing column allocates nothing.

use std::sync::Arc;

use arrow_array::Array;
use arrow_schema::DataType;
use gpugraph_command::{GpuContext, VectorFormat};
use gpugraph_tables::{GpuData, GpuVector};

use rayon::prelude::*;

use crate::dictionary::{codes_of_dictionary, DictionaryColumn, DictionaryEncoder, EncodedCodes};
use crate::encode::{encode_values, first_null, validity_mask, EncodedChunk};
use crate::error::ArrowAdapterError;
use crate::mapping::{is_string, plan_column, ColumnEncoding};
use crate::options::{ChunkPlacement, UploadOptions, ValidityPolicy};

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

/// Encodes every chunk (checking types, values and nulls), then uploads values and mask.
pub(crate) fn upload_column(
    ctx: &GpuContext,
    column: &str,
    data_type: &DataType,
    chunks: &[&dyn Array],
    options: &UploadOptions,
) -> Result<GpuColumn, ArrowAdapterError> {
    let start = std::time::Instant::now();
    let encoded = encode_column(column, data_type, chunks, options)?;
    let encoded_at = start.elapsed();
    let uploaded = encoded.upload(ctx, options);
    if trace_upload() {
        eprintln!(
            "upload {column}: encode {:.1} ms, staging copies {:.1} ms",
            encoded_at.as_secs_f64() * 1e3,
            (start.elapsed() - encoded_at).as_secs_f64() * 1e3
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

/// A column encoded and checked on the CPU, ready for upload.
pub(crate) struct EncodedColumn {
    encoding: ColumnEncoding,
    chunks: Vec<EncodedChunk>,
    masked: bool,
    dictionary: Vec<String>,
}

/// The CPU half of [`upload_column`]: plans the type, checks every chunk's type, encodes
/// values or codes (checking ranges and nulls) and decides whether a mask is needed.
pub(crate) fn encode_column(
    column: &str,
    data_type: &DataType,
    chunks: &[&dyn Array],
    options: &UploadOptions,
) -> Result<EncodedColumn, ArrowAdapterError> {
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
    // Chunks are encoded in parallel: the host encode, not the bus, bounds an upload (H200,
    // 50M rows: ~280 ms per column on one thread against ~30 ms of staging copies). The
    // dictionary's code order (first appearance over chunks in order) stays sequential.
    let row_bases: Vec<usize> = chunks
        .iter()
        .scan(0usize, |base, c| {
            let b = *base;
            *base += c.len();
            Some(b)
        })
        .collect();
    let mut encoder = DictionaryEncoder::new();
    let results: Vec<Result<EncodedChunk, ArrowAdapterError>> = match encoding {
        ColumnEncoding::Values { format, conversion } => chunks
            .par_iter()
            .zip(row_bases.par_iter())
            .map(|(chunk, &base)| encode_values(column, *chunk, format, conversion, base))
            .collect(),
        ColumnEncoding::DictionaryCodes => {
            let remaps = chunks
                .iter()
                .map(|c| encoder.remap_dictionary(column, *c))
                .collect::<Result<Vec<_>, _>>()?;
            chunks
                .par_iter()
                .zip(remaps.par_iter())
                .map(|(chunk, remap)| Ok(coded(codes_of_dictionary(*chunk, remap))))
                .collect()
        }
        ColumnEncoding::EncodedStrings => chunks
            .iter()
            .map(|c| encoder.encode_strings(column, *c).map(coded))
            .collect(),
    };
    let mut encoded = Vec::with_capacity(chunks.len());
    for (result, base) in results.into_iter().zip(row_bases) {
        // The first failing chunk in order is the error, as when encoded one by one.
        let e = result?;
        if options.validity == ValidityPolicy::RejectNulls {
            if let Some(row) = first_null(e.nulls.as_ref()) {
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
        ValidityPolicy::IfNulls => encoded.iter().any(|e| e.nulls.is_some()),
        ValidityPolicy::RejectNulls => false,
    };
    Ok(EncodedColumn {
        encoding,
        chunks: encoded,
        masked,
        dictionary: encoder.into_dictionary(),
    })
}

impl EncodedColumn {
    /// The GPU half of [`upload_column`]: creates the value and mask buffers.
    pub(crate) fn upload(
        self,
        ctx: &GpuContext,
        options: &UploadOptions,
    ) -> Result<GpuColumn, ArrowAdapterError> {
        let parts: Vec<&[u8]> = self.chunks.iter().map(|e| e.bytes.as_slice()).collect();
        let values = upload_chunks(ctx, &parts, self.encoding.format(), options)?;
        let validity = if self.masked {
            let masks: Vec<Vec<u32>> = self
                .chunks
                .par_iter()
                .map(|e| validity_mask(e.nulls.as_ref(), e.rows))
                .collect();
            let parts: Vec<&[u8]> = masks.iter().map(|m| bytemuck::cast_slice(m)).collect();
            Some(upload_chunks(ctx, &parts, VectorFormat::Uint32, options)?)
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

/// Uploads packed row bytes as the chunks of one vector, placed per [`ChunkPlacement`].
pub(crate) fn upload_chunks(
    ctx: &GpuContext,
    parts: &[&[u8]],
    format: VectorFormat,
    options: &UploadOptions,
) -> Result<GpuVector, ArrowAdapterError> {
    let chunks = match options.placement {
        ChunkPlacement::BufferPerChunk => parts
            .iter()
            .map(|p| GpuData::upload(ctx, p, format, options.extra_usage))
            .collect::<Result<Vec<_>, _>>()?,
        ChunkPlacement::SharedPerColumn => {
            let alignment = u64::from(ctx.device.limits().min_storage_buffer_offset_alignment)
                .max(wgpu::COPY_BUFFER_ALIGNMENT);
            let mut all = Vec::new();
            let mut offsets = Vec::with_capacity(parts.len());
            for p in parts {
                let offset = (all.len() as u64).div_ceil(alignment) * alignment;
                all.resize(offset as usize, 0);
                offsets.push(offset);
                all.extend_from_slice(p);
            }
            // The owner range is raw bytes; the chunks are typed siblings that co-own it.
            let owner = GpuData::upload(ctx, &all, VectorFormat::Uint8, options.extra_usage)?;
            let row = u64::from(format.byte_size());
            parts
                .iter()
                .zip(offsets)
                .map(|(p, offset)| owner.sibling(offset, p.len() as u64 / row, format, row))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    Ok(GpuVector::from_chunks(format, chunks)?)
}
