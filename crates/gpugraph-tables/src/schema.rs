//! [`GpuSchema`]: the ordered, uniquely named fields of a table, each with a stored
//! [`VectorFormat`] and a [`VectorKind`]. Plain data; no GPU objects.

use std::collections::HashMap;

use gpugraph_command::VectorFormat;

use crate::error::TableError;
use crate::vector::VectorKind;

/// One named column type: stored format and layout kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GpuField {
    /// Column name, unique within a schema.
    pub name: String,
    /// Stored format (for interleaved columns, of attribute 0; for lists, of the values).
    pub format: VectorFormat,
    /// Fixed-width, interleaved or variable-length.
    pub kind: VectorKind,
}

impl GpuField {
    /// A fixed-width field.
    pub fn new(name: impl Into<String>, format: VectorFormat) -> Self {
        Self {
            name: name.into(),
            format,
            kind: VectorKind::Fixed,
        }
    }

    /// The same field with another layout kind.
    pub fn with_kind(mut self, kind: VectorKind) -> Self {
        self.kind = kind;
        self
    }

    /// Format and kind spelled for messages.
    pub fn describe(&self) -> String {
        self.kind.describe(self.format)
    }
}

/// Ordered fields with unique names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuSchema {
    fields: Vec<GpuField>,
}

impl GpuSchema {
    /// A schema of `fields` in order. Fails with both positions of the first repeated name.
    pub fn new(fields: Vec<GpuField>) -> Result<Self, TableError> {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, f) in fields.iter().enumerate() {
            if let Some(&first) = seen.get(f.name.as_str()) {
                return Err(TableError::DuplicateField {
                    name: f.name.clone(),
                    first,
                    second: i,
                });
            }
            seen.insert(&f.name, i);
        }
        Ok(Self { fields })
    }

    /// The fields in order.
    pub fn fields(&self) -> &[GpuField] {
        &self.fields
    }
    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }
    /// Whether the schema has no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
    /// Field names in order.
    pub fn names(&self) -> Vec<String> {
        self.fields.iter().map(|f| f.name.clone()).collect()
    }
    /// The field named `name`, if any.
    pub fn field(&self, name: &str) -> Option<&GpuField> {
        self.fields.iter().find(|f| f.name == name)
    }
    /// Position of the field named `name`; the error lists the names that exist.
    pub fn index_of(&self, name: &str) -> Result<usize, TableError> {
        self.fields
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| TableError::MissingColumn {
                column: name.to_string(),
                available: self.names(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::ListKind;

    #[test]
    fn duplicate_names_are_rejected_with_positions() {
        let err = GpuSchema::new(vec![
            GpuField::new("x", VectorFormat::Float32),
            GpuField::new("y", VectorFormat::Float32),
            GpuField::new("x", VectorFormat::Uint32),
        ])
        .unwrap_err();
        assert!(matches!(
            &err,
            TableError::DuplicateField { name, first: 0, second: 2 } if name == "x"
        ));
        assert!(err.to_string().contains("'x'"), "{err}");
    }

    #[test]
    fn lookup_by_name() {
        let s = GpuSchema::new(vec![
            GpuField::new("id", VectorFormat::Uint32),
            GpuField::new("path", VectorFormat::Float32x3)
                .with_kind(VectorKind::VariableLength(ListKind::VertexList)),
        ])
        .unwrap();
        assert_eq!(s.index_of("path").unwrap(), 1);
        assert_eq!(
            s.field("path").unwrap().describe(),
            "vertex-list<float32x3>"
        );
        let err = s.index_of("color").unwrap_err();
        assert!(
            matches!(&err, TableError::MissingColumn { column, available } if column == "color" && available.len() == 2)
        );
        assert!(err.to_string().contains("'color'"), "{err}");
    }
}
