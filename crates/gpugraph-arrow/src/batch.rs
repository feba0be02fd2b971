//! [`ArrowBatch`]: one Arrow record batch uploaded as a [`GpuRecordBatch`] (one single-chunk
//! vector per column), with per-column validity masks and dictionaries, and the source Arrow
//! schema for READBACK.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use gpugraph_command::GpuContext;
use gpugraph_tables::{GpuRecordBatch, GpuTable, GpuVector};

use crate::error::ArrowAdapterError;
use crate::options::UploadOptions;
use crate::table::{upload_columns, ArrowTable, Sidecars};
use crate::upload::GpuColumn;

/// An uploaded Arrow record batch: a [`GpuRecordBatch`] of values (or dictionary codes), one
/// optional `uint32` validity mask and one optional CPU dictionary per column, and the source
/// Arrow schema. Holds (co-owns) every buffer.
#[derive(Clone, Debug)]
pub struct ArrowBatch {
    pub(crate) arrow_schema: SchemaRef,
    pub(crate) values: GpuRecordBatch,
    pub(crate) sidecars: Sidecars,
}

/// Uploads one Arrow record batch as an [`ArrowBatch`] (one chunk per column). Same types,
/// options and errors as [`upload_record_batches`](crate::upload_record_batches).
pub fn upload_record_batch(
    ctx: &GpuContext,
    batch: &RecordBatch,
    options: &UploadOptions,
) -> Result<ArrowBatch, ArrowAdapterError> {
    let schema = batch.schema();
    let (gpu_schema, columns) = upload_columns(ctx, &schema, std::slice::from_ref(batch), options)?;
    let (values, sidecars) = Sidecars::split(columns);
    Ok(ArrowBatch {
        arrow_schema: schema,
        values: GpuRecordBatch::new(gpu_schema, values)?,
        sidecars,
    })
}

impl ArrowBatch {
    /// The source Arrow schema.
    pub fn arrow_schema(&self) -> &SchemaRef {
        &self.arrow_schema
    }
    /// The values (or codes) as a [`GpuRecordBatch`], ready for graph import.
    pub fn values(&self) -> &GpuRecordBatch {
        &self.values
    }
    /// Rows of every column.
    pub fn num_rows(&self) -> u64 {
        self.values.num_rows()
    }

    /// The column named `name`: values, mask and dictionary. The error lists the names.
    pub fn column(&self, name: &str) -> Result<GpuColumn, ArrowAdapterError> {
        let index = self.values.schema().index_of(name)?;
        Ok(self
            .sidecars
            .column(index, self.values.columns()[index].clone()))
    }

    /// The validity mask of column `name`, if it has one.
    pub fn validity(&self, name: &str) -> Result<Option<&GpuVector>, ArrowAdapterError> {
        let index = self.values.schema().index_of(name)?;
        Ok(self.sidecars.validity(index))
    }

    /// The dictionary of column `name`, if it is dictionary-encoded.
    pub fn dictionary(&self, name: &str) -> Result<Option<&[String]>, ArrowAdapterError> {
        let index = self.values.schema().index_of(name)?;
        Ok(self.sidecars.dictionary(index))
    }

    /// This batch as a one-batch [`ArrowTable`] (buffers shared).
    pub fn into_table(self) -> ArrowTable {
        ArrowTable {
            arrow_schema: self.arrow_schema,
            values: GpuTable::from_batch(self.values),
            sidecars: self.sidecars,
        }
    }

    /// READBACK (one submission on `ctx.queue`, blocks): the batch as one Arrow record batch
    /// under [`readback_schema`](crate::mapping::readback_schema) of its source schema:
    /// source types restored, masks applied as nulls, codes with their dictionaries.
    pub fn read_back(&self, ctx: &GpuContext) -> Result<RecordBatch, ArrowAdapterError> {
        let batches = self.clone().into_table().read_back(ctx)?;
        // One batch of single-chunk columns reads back as exactly one record batch.
        batches.into_iter().next().ok_or_else(|| {
            ArrowAdapterError::Arrow(arrow_schema::ArrowError::InvalidArgumentError(
                "the batch read back as no record batch".into(),
            ))
        })
    }
}

// Here rather than in `table`: a batch is built from a table's parts, not the other way
// round, so `table` never names `ArrowBatch`.
impl ArrowTable {
    /// Batch `index` as an [`ArrowBatch`] (buffers shared, nothing copied), if it exists.
    pub fn batch(&self, index: usize) -> Option<ArrowBatch> {
        Some(ArrowBatch {
            arrow_schema: self.arrow_schema.clone(),
            values: self.values.batches().get(index)?.clone(),
            sidecars: self.sidecars.chunk(index),
        })
    }
}
