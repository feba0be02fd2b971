//! [`ArrowTable`]: Arrow record batches uploaded as a [`GpuTable`] (one GPU batch per Arrow
//! batch, columns chunked by batch, no concatenation), with per-column validity masks and
//! dictionaries, and the source Arrow schema for READBACK.

use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use gpugraph_command::GpuContext;
use gpugraph_tables::{GpuField, GpuRecordBatch, GpuSchema, GpuTable, GpuVector};

use crate::error::ArrowAdapterError;
use crate::mapping::readback_schema;
use crate::options::UploadOptions;
use crate::readback::{read_back_batches, ColumnRead};
use crate::upload::{prepare_column, GpuColumn};

/// An uploaded Arrow table: a [`GpuTable`] of values (or dictionary codes), one optional
/// `uint32` validity mask per column chunked like the values, one optional CPU dictionary per
/// column (shared by all batches), and the source Arrow schema.
///
/// Holds (co-owns) every buffer; keep it alive while graphs that imported its vectors encode.
#[derive(Clone, Debug)]
pub struct ArrowTable {
    pub(crate) arrow_schema: SchemaRef,
    pub(crate) values: GpuTable,
    pub(crate) sidecars: Sidecars,
}

/// The per-column companions of uploaded values, indexed like the schema's fields: an
/// optional `uint32` validity mask (chunked like the values) and an optional CPU dictionary
/// (shared by every chunk). Shared by [`ArrowTable`] and [`crate::batch::ArrowBatch`].
#[derive(Clone, Debug)]
pub(crate) struct Sidecars {
    validity: Vec<Option<GpuVector>>,
    dictionaries: Vec<Option<Arc<Vec<String>>>>,
}

impl Sidecars {
    /// Splits uploaded columns into their values (returned) and their companions.
    pub(crate) fn split(columns: Vec<GpuColumn>) -> (Vec<GpuVector>, Self) {
        let mut values = Vec::with_capacity(columns.len());
        let mut validity = Vec::with_capacity(columns.len());
        let mut dictionaries = Vec::with_capacity(columns.len());
        for c in columns {
            values.push(c.values);
            validity.push(c.validity);
            dictionaries.push(c.dictionary);
        }
        let sidecars = Self {
            validity,
            dictionaries,
        };
        (values, sidecars)
    }

    /// Column `index` with `values`: its mask and dictionary joined back on.
    pub(crate) fn column(&self, index: usize, values: GpuVector) -> GpuColumn {
        GpuColumn {
            values,
            validity: self.validity[index].clone(),
            dictionary: self.dictionaries[index].clone(),
        }
    }

    /// The validity mask of column `index`, if it has one.
    pub(crate) fn validity(&self, index: usize) -> Option<&GpuVector> {
        self.validity[index].as_ref()
    }

    /// The dictionary of column `index`, if it is dictionary-encoded.
    pub(crate) fn dictionary(&self, index: usize) -> Option<&[String]> {
        self.dictionaries[index].as_deref().map(Vec::as_slice)
    }

    /// The companions of chunk `chunk` alone: one-chunk masks, the same dictionaries.
    pub(crate) fn chunk(&self, chunk: usize) -> Self {
        let validity = self
            .validity
            .iter()
            .map(|v| {
                v.as_ref()
                    .and_then(|v| v.chunks().get(chunk))
                    .map(|c| GpuVector::from_data(c.clone()))
            })
            .collect();
        Self {
            validity,
            dictionaries: self.dictionaries.clone(),
        }
    }
}

/// Uploads record batches of one Arrow `schema` as an [`ArrowTable`]: batch `i` becomes GPU
/// batch `i` and chunk `i` of every column (empty batches stay as empty chunks; zero batches
/// give an empty table). Dictionary and encoded string columns get one dictionary over all
/// batches. Fails naming the batch whose field names or types differ from `schema`, and
/// naming the column for unsupported types, out-of-range values and rejected nulls. Every
/// column is encoded and checked on the CPU before any buffer is created, so a failing
/// upload allocates nothing.
pub fn upload_record_batches(
    ctx: &GpuContext,
    schema: SchemaRef,
    batches: &[RecordBatch],
    options: &UploadOptions,
) -> Result<ArrowTable, ArrowAdapterError> {
    let (gpu_schema, columns) = upload_columns(ctx, &schema, batches, options)?;
    let (values, sidecars) = Sidecars::split(columns);
    let gpu_batches = (0..batches.len())
        .map(|b| {
            let vectors = values
                .iter()
                .map(|v| GpuVector::from_data(v.chunks()[b].clone()))
                .collect();
            GpuRecordBatch::new(gpu_schema.clone(), vectors)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ArrowTable {
        arrow_schema: schema,
        values: GpuTable::new(gpu_schema, gpu_batches)?,
        sidecars,
    })
}

/// Checks every batch against `schema`, then uploads each column over all batches (one
/// chunk per batch) and derives the GPU schema from the stored formats.
pub(crate) fn upload_columns(
    ctx: &GpuContext,
    schema: &Schema,
    batches: &[RecordBatch],
    options: &UploadOptions,
) -> Result<(Arc<GpuSchema>, Vec<GpuColumn>), ArrowAdapterError> {
    for (batch, b) in batches.iter().enumerate() {
        check_schema(schema, b, batch)?;
    }
    // Encode and check every column before creating any buffer, so bad input allocates
    // nothing.
    let encoded = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let chunks: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
            prepare_column(field.name(), field.data_type(), &chunks, options)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let columns = encoded
        .into_iter()
        .map(|c| c.upload(ctx, options))
        .collect::<Result<Vec<_>, _>>()?;
    let gpu_schema = Arc::new(GpuSchema::new(
        schema
            .fields()
            .iter()
            .zip(&columns)
            .map(|(f, c)| GpuField::new(f.name(), c.values.format()))
            .collect(),
    )?);
    Ok((gpu_schema, columns))
}

fn check_schema(
    schema: &Schema,
    batch: &RecordBatch,
    index: usize,
) -> Result<(), ArrowAdapterError> {
    let mismatch = |reason: String| ArrowAdapterError::SchemaMismatch {
        batch: index,
        reason,
    };
    let fields = batch.schema_ref().fields();
    if fields.len() != schema.fields().len() {
        return Err(mismatch(format!(
            "{} columns where the schema has {}",
            fields.len(),
            schema.fields().len()
        )));
    }
    for (f, t) in fields.iter().zip(schema.fields()) {
        if f.name() != t.name() || f.data_type() != t.data_type() {
            return Err(mismatch(format!(
                "column '{}' ({}) where the schema has '{}' ({})",
                f.name(),
                f.data_type(),
                t.name(),
                t.data_type()
            )));
        }
    }
    Ok(())
}

impl ArrowTable {
    /// The source Arrow schema.
    pub fn arrow_schema(&self) -> &SchemaRef {
        &self.arrow_schema
    }
    /// The values (or codes) as a [`GpuTable`], ready for graph import.
    pub fn values(&self) -> &GpuTable {
        &self.values
    }
    /// Number of batches.
    pub fn num_batches(&self) -> usize {
        self.values.num_batches()
    }
    /// Total rows over all batches.
    pub fn num_rows(&self) -> u64 {
        self.values.num_rows()
    }

    /// The column named `name` over all batches: values chunked by batch, its mask and its
    /// dictionary. The error lists the names that exist.
    pub fn column(&self, name: &str) -> Result<GpuColumn, ArrowAdapterError> {
        let index = self.values.schema().index_of(name)?;
        Ok(self.sidecars.column(index, self.values.column(name)?))
    }

    /// The validity mask of column `name` (chunked by batch), if it has one.
    pub fn validity(&self, name: &str) -> Result<Option<&GpuVector>, ArrowAdapterError> {
        let index = self.values.schema().index_of(name)?;
        Ok(self.sidecars.validity(index))
    }

    /// The dictionary of column `name`, if it is dictionary-encoded.
    pub fn dictionary(&self, name: &str) -> Result<Option<&[String]>, ArrowAdapterError> {
        let index = self.values.schema().index_of(name)?;
        Ok(self.sidecars.dictionary(index))
    }

    /// The Arrow schema [`ArrowTable::read_back`] produces (see
    /// [`crate::mapping::readback_schema`]).
    pub fn readback_schema(&self) -> SchemaRef {
        readback_schema(&self.arrow_schema)
    }

    /// READBACK (one submission on `ctx.queue`, blocks): one Arrow record batch per batch, in
    /// order, under [`ArrowTable::readback_schema`]: source types restored (checked where the
    /// GPU format is wider), masks applied as nulls, codes with their dictionaries.
    pub fn read_back(&self, ctx: &GpuContext) -> Result<Vec<RecordBatch>, ArrowAdapterError> {
        let schema = self.readback_schema();
        let columns = schema
            .fields()
            .iter()
            .map(|f| self.column(f.name()))
            .collect::<Result<Vec<_>, _>>()?;
        let reads = schema
            .fields()
            .iter()
            .zip(&columns)
            .map(|(f, c)| ColumnRead::of(f.name(), c, Some(f.data_type())))
            .collect();
        let rows: Vec<u64> = self
            .values
            .batches()
            .iter()
            .map(GpuRecordBatch::num_rows)
            .collect();
        read_back_batches(ctx, reads, schema.clone(), &rows)
    }
}
