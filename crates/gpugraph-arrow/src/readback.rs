//! Explicit READBACK: GPU vectors, columns, record batches and tables → Arrow.
//!
//! Every function here copies the needed chunks into one staging buffer, SUBMITS one command
//! buffer on `ctx.queue` and BLOCKS until it is mapped (through
//! [`gpugraph_tables::readback::read_data_rows`]), then builds Arrow arrays on the CPU. Use
//! it when an application asks for Arrow data, for tests and for file output; never inside a
//! per-frame dependency chain. Bytes moved per row: `format.byte_size()` device→host, plus 4
//! for a validity mask. A mask entry of 0 makes a null row; any other value is valid (GPU
//! kernels may write any nonzero flag).

use std::sync::Arc;

use arrow_array::types::UInt32Type;
use arrow_array::{Array, ArrayRef, DictionaryArray, RecordBatch, RecordBatchOptions};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use gpugraph_command::{GpuContext, VectorFormat};
use gpugraph_tables::{readback, GpuData, GpuRecordBatch, GpuTable, GpuVector, VectorLayout};

use crate::decode::{decode, DecodeTarget};
use crate::dictionary::DictionaryColumn;
use crate::error::ArrowAdapterError;
use crate::mapping::{code_dictionary_type, default_data_type};
use crate::upload::GpuColumn;

/// One column to read: its vectors, its dictionary and the Arrow type to rebuild.
pub(crate) struct ColumnRead<'a> {
    /// Column name, for errors and the read-back field.
    pub name: &'a str,
    /// Values or codes.
    pub values: &'a GpuVector,
    /// `uint32` mask, chunk-aligned with `values`.
    pub validity: Option<&'a GpuVector>,
    /// Strings indexed by the codes.
    pub dictionary: Option<&'a [String]>,
    /// The Arrow type to rebuild.
    pub data_type: DataType,
}

impl<'a> ColumnRead<'a> {
    /// A column read of `column`, as `data_type` or else the default type of its format
    /// (`Dictionary<UInt32, Utf8>` when it has a dictionary).
    pub fn of(name: &'a str, column: &'a GpuColumn, data_type: Option<&DataType>) -> Self {
        let data_type = data_type.cloned().unwrap_or_else(|| {
            if column.dictionary.is_some() {
                code_dictionary_type()
            } else {
                default_data_type(column.values.format())
            }
        });
        Self {
            name,
            values: &column.values,
            validity: column.validity.as_ref(),
            dictionary: column.dictionary.as_deref().map(Vec::as_slice),
            data_type,
        }
    }

    fn target(&self) -> DecodeTarget<'_> {
        DecodeTarget {
            column: self.name,
            stored: self.values.format(),
            data_type: &self.data_type,
            dictionary: self.dictionary,
        }
    }
}

/// READBACK (one submission, blocks): the rows of a fixed-width vector as one Arrow array of
/// its format's default type (see [`crate::mapping::default_data_type`]): `uint32` →
/// `UInt32Array`, `float32x3` → `FixedSizeList<Float32, 3>`, ...; chunks are concatenated in
/// order. No nulls.
pub fn read_back_array(
    ctx: &GpuContext,
    values: &GpuVector,
) -> Result<ArrayRef, ArrowAdapterError> {
    let column = GpuColumn {
        values: values.clone(),
        validity: None,
        dictionary: None,
    };
    read_back_column(ctx, "vector", &column, None)
}

/// READBACK (one submission, blocks): a column as one Arrow array (chunks concatenated) of
/// `data_type`, or of its default type when `None` (`Dictionary<UInt32, Utf8>` for
/// dictionary columns), with the validity mask applied as nulls. `name` appears in errors.
/// Fails when the type cannot hold the stored format (the readback rules in
/// [`crate::mapping`]), when a valid row does not fit it, or when the mask is misaligned.
pub fn read_back_column(
    ctx: &GpuContext,
    name: &str,
    column: &GpuColumn,
    data_type: Option<&DataType>,
) -> Result<ArrayRef, ArrowAdapterError> {
    let read = ColumnRead::of(name, column, data_type);
    single(read_columns(ctx, &[read], false)?)
}

/// READBACK (one submission, blocks): dictionary codes and their strings as a
/// `DictionaryArray<UInt32, Utf8>` (chunks concatenated, mask applied as null keys). Fails
/// with `CodeOutOfRange` when a valid row's code is not below the dictionary length.
pub fn read_back_dictionary(
    ctx: &GpuContext,
    name: &str,
    column: &DictionaryColumn,
) -> Result<DictionaryArray<UInt32Type>, ArrowAdapterError> {
    let read = ColumnRead {
        name,
        values: &column.codes,
        validity: column.validity.as_ref(),
        dictionary: Some(&column.dictionary),
        data_type: code_dictionary_type(),
    };
    let array = single(read_columns(ctx, &[read], false)?)?;
    let typed = array
        .as_any()
        .downcast_ref::<DictionaryArray<UInt32Type>>()
        .cloned();
    // `decode` builds exactly this type for the code dictionary target.
    typed.ok_or_else(|| ArrowAdapterError::ReadbackType {
        column: name.to_string(),
        stored: column.codes.describe(),
        data_type: code_dictionary_type(),
    })
}

/// READBACK (one submission, blocks): a [`GpuRecordBatch`] as Arrow record batches, one per
/// chunk (all columns need the same chunk lengths), with each column's default type and no
/// nulls. A batch without columns reads back as one batch of `num_rows` rows.
pub fn read_back_gpu_record_batch(
    ctx: &GpuContext,
    batch: &GpuRecordBatch,
) -> Result<Vec<RecordBatch>, ArrowAdapterError> {
    let names = batch.schema().names();
    let columns: Vec<GpuColumn> = batch
        .columns()
        .iter()
        .map(|v| GpuColumn {
            values: v.clone(),
            validity: None,
            dictionary: None,
        })
        .collect();
    let reads = names
        .iter()
        .zip(&columns)
        .map(|(n, c)| ColumnRead::of(n, c, None))
        .collect();
    read_back_batches(
        ctx,
        reads,
        default_schema(&names, &columns),
        &[batch.num_rows()],
    )
}

/// READBACK (one submission, blocks): every batch of a [`GpuTable`] as Arrow record batches,
/// one per chunk in batch order (one per batch for uploaded tables), default types, no
/// nulls.
pub fn read_back_gpu_table(
    ctx: &GpuContext,
    table: &GpuTable,
) -> Result<Vec<RecordBatch>, ArrowAdapterError> {
    let names = table.schema().names();
    let columns = names
        .iter()
        .map(|n| {
            Ok(GpuColumn {
                values: table.column(n)?,
                validity: None,
                dictionary: None,
            })
        })
        .collect::<Result<Vec<_>, ArrowAdapterError>>()?;
    let reads = names
        .iter()
        .zip(&columns)
        .map(|(n, c)| ColumnRead::of(n, c, None))
        .collect();
    let rows: Vec<u64> = table
        .batches()
        .iter()
        .map(GpuRecordBatch::num_rows)
        .collect();
    read_back_batches(ctx, reads, default_schema(&names, &columns), &rows)
}

fn default_schema(names: &[String], columns: &[GpuColumn]) -> SchemaRef {
    let fields: Vec<Field> = names
        .iter()
        .zip(columns)
        .map(|(n, c)| {
            Field::new(
                n,
                ColumnRead::of(n, c, None).data_type,
                c.validity.is_some(),
            )
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Reads `columns` (one submission) into one record batch per chunk under `schema`. All
/// columns need the same chunk lengths. Without columns, `rows_without_columns` gives the
/// row count of each batch to produce.
pub(crate) fn read_back_batches(
    ctx: &GpuContext,
    columns: Vec<ColumnRead<'_>>,
    schema: SchemaRef,
    rows_without_columns: &[u64],
) -> Result<Vec<RecordBatch>, ArrowAdapterError> {
    let Some(first) = columns.first() else {
        return rows_without_columns
            .iter()
            .map(|&rows| {
                let options = RecordBatchOptions::new().with_row_count(Some(rows as usize));
                Ok(RecordBatch::try_new_with_options(
                    schema.clone(),
                    Vec::new(),
                    &options,
                )?)
            })
            .collect();
    };
    let expected = first.values.chunk_lengths();
    for c in &columns[1..] {
        let actual = c.values.chunk_lengths();
        if actual != expected {
            return Err(ArrowAdapterError::ChunkTopologyMismatch {
                column: c.name.to_string(),
                actual,
                reference: first.name.to_string(),
                expected,
            });
        }
    }
    let mut per_column: Vec<_> = read_columns(ctx, &columns, true)?
        .into_iter()
        .map(Vec::into_iter)
        .collect();
    let mut out = Vec::with_capacity(expected.len());
    for &rows in &expected {
        // Every column decoded one array per chunk (topology checked above).
        let arrays: Vec<ArrayRef> = per_column.iter_mut().filter_map(Iterator::next).collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows as usize));
        out.push(RecordBatch::try_new_with_options(
            schema.clone(),
            arrays,
            &options,
        )?);
    }
    Ok(out)
}

/// Reads every column's chunks and masks in ONE submission and decodes them: per column,
/// one array per chunk (`per_chunk`) or one array of all chunks concatenated.
pub(crate) fn read_columns(
    ctx: &GpuContext,
    columns: &[ColumnRead<'_>],
    per_chunk: bool,
) -> Result<Vec<Vec<ArrayRef>>, ArrowAdapterError> {
    let mut ranges: Vec<&GpuData> = Vec::new();
    for c in columns {
        check_column(c)?;
        ranges.extend(c.values.chunks());
        if let Some(v) = c.validity {
            ranges.extend(v.chunks());
        }
    }
    let mut bytes = readback::read_data_rows(&ctx.device, &ctx.queue, &ranges)?.into_iter();
    let mut out = Vec::with_capacity(columns.len());
    for c in columns {
        let k = c.values.num_chunks();
        let values: Vec<Vec<u8>> = bytes.by_ref().take(k).collect();
        let masks: Option<Vec<Vec<u8>>> = c.validity.map(|_| bytes.by_ref().take(k).collect());
        let arrays = if per_chunk {
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    decode(
                        c.target(),
                        v,
                        mask_nulls(masks.as_ref().map(|m| m[i].as_slice())),
                    )
                })
                .collect::<Result<Vec<_>, _>>()?
        } else {
            let mask = masks.map(|m| m.concat());
            vec![decode(
                c.target(),
                &values.concat(),
                mask_nulls(mask.as_deref()),
            )?]
        };
        out.push(arrays);
    }
    Ok(out)
}

/// The one array of a one-column, concatenated read.
fn single(columns: Vec<Vec<ArrayRef>>) -> Result<ArrayRef, ArrowAdapterError> {
    columns.into_iter().flatten().next().ok_or_else(|| {
        ArrowAdapterError::Arrow(arrow_schema::ArrowError::InvalidArgumentError(
            "the read produced no array".into(),
        ))
    })
}

/// Checks that a column is fixed-width and that its mask is a chunk-aligned `uint32` vector.
fn check_column(c: &ColumnRead<'_>) -> Result<(), ArrowAdapterError> {
    if !matches!(c.values.layout(), VectorLayout::Fixed) {
        return Err(ArrowAdapterError::ReadbackType {
            column: c.name.to_string(),
            stored: c.values.describe(),
            data_type: c.data_type.clone(),
        });
    }
    let Some(mask) = c.validity else {
        return Ok(());
    };
    let mismatch = |reason: String| ArrowAdapterError::ValidityMismatch {
        column: c.name.to_string(),
        reason,
    };
    if mask.format() != VectorFormat::Uint32 || !matches!(mask.layout(), VectorLayout::Fixed) {
        return Err(mismatch(format!("is {} (needs uint32)", mask.describe())));
    }
    let (m, v) = (mask.chunk_lengths(), c.values.chunk_lengths());
    if m != v {
        return Err(mismatch(format!(
            "has chunk row counts {m:?} but the values have {v:?}"
        )));
    }
    Ok(())
}

/// Row nulls from mask bytes (`uint32` words, 0 null); `None` when every row is valid.
fn mask_nulls(mask: Option<&[u8]>) -> Option<NullBuffer> {
    let words: Vec<u32> = bytemuck::pod_collect_to_vec(mask?);
    let nulls: NullBuffer = words.iter().map(|&w| w != 0).collect();
    (nulls.null_count() > 0).then_some(nulls)
}
