//! [`GpuTable`]: a [`GpuSchema`] and ordered [`GpuRecordBatch`]es that all share it. Batch
//! boundaries are preserved (for streaming: one graph invocation per batch, or a column
//! whose chunks follow the batches).

use std::sync::Arc;

use crate::batch::GpuRecordBatch;
use crate::error::TableError;
use crate::schema::GpuSchema;
use crate::vector::{GpuVector, VectorKind};

/// A schema and its ordered record batches (zero batches allowed).
#[derive(Clone, Debug)]
pub struct GpuTable {
    schema: Arc<GpuSchema>,
    batches: Vec<GpuRecordBatch>,
}

impl GpuTable {
    /// A table of `batches` in order. Fails with the index of the first batch whose schema
    /// differs from `schema`.
    pub fn new(
        schema: impl Into<Arc<GpuSchema>>,
        batches: Vec<GpuRecordBatch>,
    ) -> Result<Self, TableError> {
        let schema = schema.into();
        for (batch, b) in batches.iter().enumerate() {
            if **b.schema() != *schema {
                let reason = match schema
                    .fields()
                    .iter()
                    .zip(b.schema().fields())
                    .find(|(t, f)| t != f)
                {
                    Some((t, f)) => format!(
                        "field '{}' ({}) where the table has '{}' ({})",
                        f.name,
                        f.describe(),
                        t.name,
                        t.describe()
                    ),
                    None => format!(
                        "{} fields where the table has {}",
                        b.schema().len(),
                        schema.len()
                    ),
                };
                return Err(TableError::BatchSchemaMismatch { batch, reason });
            }
        }
        Ok(Self { schema, batches })
    }

    /// A table of one batch, with that batch's schema.
    pub fn from_batch(batch: GpuRecordBatch) -> Self {
        Self {
            schema: batch.schema().clone(),
            batches: vec![batch],
        }
    }

    /// The schema every batch shares.
    pub fn schema(&self) -> &Arc<GpuSchema> {
        &self.schema
    }
    /// The batches in order.
    pub fn batches(&self) -> &[GpuRecordBatch] {
        &self.batches
    }
    /// Number of batches.
    pub fn num_batches(&self) -> usize {
        self.batches.len()
    }
    /// Total rows over all batches.
    pub fn num_rows(&self) -> u64 {
        self.batches.iter().map(GpuRecordBatch::num_rows).sum()
    }
    /// The global row index of each batch's first row (empty batches keep their slot).
    pub fn batch_row_offsets(&self) -> Vec<u64> {
        let mut base = 0;
        self.batches
            .iter()
            .map(|b| {
                let start = base;
                base += b.num_rows();
                start
            })
            .collect()
    }
    /// The column named `name` over all batches: one vector whose chunks are the batches'
    /// chunks in order (buffers shared, nothing copied). The error lists the names that exist.
    /// A table without batches yields an empty vector (an error for interleaved columns,
    /// whose attributes only the batches know).
    pub fn column(&self, name: &str) -> Result<GpuVector, TableError> {
        let index = self.schema.index_of(name)?;
        if self.batches.is_empty() {
            let field = &self.schema.fields()[index];
            return match field.kind {
                VectorKind::Fixed => Ok(GpuVector::empty(field.format)),
                VectorKind::VariableLength(kind) => {
                    GpuVector::variable_length(kind, field.format, Vec::new(), Vec::new())
                }
                VectorKind::Interleaved => Err(TableError::InvalidLayout {
                    layout: "interleaved",
                    reason: format!(
                        "column {name} of a table without batches has no attribute metadata"
                    ),
                }),
            };
        }
        let parts: Vec<&GpuVector> = self.batches.iter().map(|b| &b.columns()[index]).collect();
        GpuVector::concat(&parts)
    }
}
