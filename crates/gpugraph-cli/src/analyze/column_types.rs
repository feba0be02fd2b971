//! Which Arrow column types `analyze` (and `join`, `spatial`) upload, and as what: the type
//! each becomes on the GPU, the cast applied to a loaded batch, and the class a column's type
//! puts it in (numeric, text, other) for the error messages of the column checks.

use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::{DataType, Schema, SchemaRef};

/// The Arrow type a column of type `t` is cast to before the upload, when the GPU upload
/// does not take it as analyze needs it: UInt8 (uploaded as bytes) widens to UInt16, Float16
/// to Float32 (both exact), decimals to Float64 (then rounded to float32 like any float64
/// column).
pub fn upload_type(t: &DataType) -> Option<DataType> {
    use DataType::*;
    match t {
        UInt8 => Some(UInt16),
        Float16 => Some(Float32),
        Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..) => Some(Float64),
        _ => None,
    }
}

/// `schema` with every field of a type [`upload_type`] converts replaced by its upload type.
pub fn upload_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<arrow_schema::FieldRef> = schema
        .fields()
        .iter()
        .map(|f| match upload_type(f.data_type()) {
            Some(t) => Arc::new(f.as_ref().clone().with_data_type(t)),
            None => f.clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` with the columns [`upload_type`] converts cast (a no-op when none needs it).
pub(crate) fn cast_for_upload(batch: RecordBatch) -> Result<RecordBatch> {
    let schema = batch.schema();
    if !schema
        .fields()
        .iter()
        .any(|f| upload_type(f.data_type()).is_some())
    {
        return Ok(batch);
    }
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| match upload_type(f.data_type()) {
            Some(t) => arrow_cast::cast(c, &t).with_context(|| {
                format!(
                    "converting column '{}' from {} to {t}",
                    f.name(),
                    f.data_type()
                )
            }),
            None => Ok(c.clone()),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(upload_schema(&schema), columns)?)
}

/// How a column may be used, by its Arrow type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnClass {
    /// Integers, floats and booleans that upload as float32, sint32 or uint32.
    Numeric,
    /// Strings or dictionaries of strings (uploaded as uint32 codes + CPU dictionary).
    Text,
    /// Anything else.
    Other,
}

/// The class of an Arrow type.
pub fn classify(t: &DataType) -> ColumnClass {
    use DataType::*;
    match t {
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float16 | Float32
        | Float64 | Boolean | Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..) => {
            ColumnClass::Numeric
        }
        Utf8 | LargeUtf8 | Utf8View => ColumnClass::Text,
        Dictionary(_, v) if matches!(v.as_ref(), Utf8 | LargeUtf8 | Utf8View) => ColumnClass::Text,
        _ => ColumnClass::Other,
    }
}

pub(crate) fn describe(t: &DataType) -> String {
    match classify(t) {
        ColumnClass::Text => format!("{t} (text)"),
        _ => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(classify(&DataType::Int64), ColumnClass::Numeric);
        assert_eq!(classify(&DataType::Utf8), ColumnClass::Text);
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        assert_eq!(classify(&dict), ColumnClass::Text);
        assert_eq!(classify(&DataType::UInt8), ColumnClass::Numeric);
        assert_eq!(classify(&DataType::Float16), ColumnClass::Numeric);
        assert_eq!(classify(&DataType::Decimal128(10, 2)), ColumnClass::Numeric);
        assert_eq!(classify(&DataType::Date32), ColumnClass::Other);
    }
}
