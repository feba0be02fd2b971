//! [`GpuRecordBatch`]: one [`GpuSchema`] and one [`GpuVector`] column per field, all with the
//! same logical row count. Validated on construction; holds (co-owns or borrows) the
//! columns' buffers exactly as the vectors do.

use std::sync::Arc;

use crate::error::TableError;
use crate::schema::{GpuField, GpuSchema};
use crate::vector::GpuVector;

/// Columns of equal row count under a schema.
#[derive(Clone, Debug)]
pub struct GpuRecordBatch {
    schema: Arc<GpuSchema>,
    columns: Vec<GpuVector>,
    num_rows: u64,
}

impl GpuRecordBatch {
    /// A batch of `columns` in schema order. Fails when the column count differs from the
    /// field count, when a column's format or layout kind differs from its field, or when a
    /// column's row count differs from the first column's (naming both columns and counts).
    pub fn new(
        schema: impl Into<Arc<GpuSchema>>,
        columns: Vec<GpuVector>,
    ) -> Result<Self, TableError> {
        let schema = schema.into();
        if columns.len() != schema.len() {
            return Err(TableError::ColumnCountMismatch {
                fields: schema.len(),
                columns: columns.len(),
            });
        }
        for (field, column) in schema.fields().iter().zip(&columns) {
            if field.format != column.format() || field.kind != column.kind() {
                return Err(TableError::ColumnTypeMismatch {
                    column: field.name.clone(),
                    expected: field.describe(),
                    actual: column.describe(),
                });
            }
        }
        let num_rows = columns.first().map_or(0, GpuVector::len);
        for (field, column) in schema.fields().iter().zip(&columns).skip(1) {
            if column.len() != num_rows {
                return Err(TableError::RowCountMismatch {
                    column: field.name.clone(),
                    rows: column.len(),
                    reference: schema.fields()[0].name.clone(),
                    expected: num_rows,
                });
            }
        }
        Ok(Self {
            schema,
            columns,
            num_rows,
        })
    }

    /// A batch whose schema is derived from named columns (each column's format and kind).
    /// Same validation as [`GpuRecordBatch::new`], plus unique names.
    pub fn from_columns<S: Into<String>>(
        columns: impl IntoIterator<Item = (S, GpuVector)>,
    ) -> Result<Self, TableError> {
        let (fields, vectors): (Vec<GpuField>, Vec<GpuVector>) = columns
            .into_iter()
            .map(|(name, v)| (GpuField::new(name, v.format()).with_kind(v.kind()), v))
            .unzip();
        Self::new(GpuSchema::new(fields)?, vectors)
    }

    /// The schema.
    pub fn schema(&self) -> &Arc<GpuSchema> {
        &self.schema
    }
    /// Logical rows of every column.
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }
    /// Number of columns.
    pub fn num_columns(&self) -> usize {
        self.columns.len()
    }
    /// The columns in schema order.
    pub fn columns(&self) -> &[GpuVector] {
        &self.columns
    }
    /// The column at position `index`, if any.
    pub fn column_at(&self, index: usize) -> Option<&GpuVector> {
        self.columns.get(index)
    }
    /// The column named `name`; the error lists the names that exist.
    pub fn column(&self, name: &str) -> Result<&GpuVector, TableError> {
        Ok(&self.columns[self.schema.index_of(name)?])
    }
}
