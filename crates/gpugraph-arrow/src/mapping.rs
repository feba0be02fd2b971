//! The type mapping between Arrow and GPU storage, in one place. Pure; no GPU needed.
//!
//! | Arrow type | stored format | conversion |
//! |---|---|---|
//! | `UInt8` | `uint8` | verbatim; one byte per row, packed; the buffer is padded to 4 bytes, so WGSL reads it as `array<u32>` (row `i` is byte `i % 4` of word `i / 4`) |
//! | `UInt16`, `Boolean` | `uint32` | widened (booleans as 0/1) |
//! | `UInt32` | `uint32` | verbatim |
//! | `UInt64` | `uint32` | [`Int64Policy::NarrowChecked`] only |
//! | `Int8`, `Int16` | `sint32` | widened |
//! | `Int32`, `Date32`, `Time32` | `sint32` | verbatim (days / time-unit counts) |
//! | `Int64`, `Date64`, `Time64`, `Timestamp`, `Duration` | `sint32` | [`Int64Policy::NarrowChecked`] only; raw counts in the column's unit |
//! | `Float16` | `float16` | verbatim (raw bits) |
//! | `Float32` | `float32` | verbatim |
//! | `Float64` | `float32` | [`Float64Policy::RoundToFloat32`] only |
//! | `FixedSizeList<T, n>` | `T`'s format with `n` components (`float32x3`, `uint8x4`, ...) | `T`'s conversion per component |
//! | `Dictionary<any integer, Utf8 / LargeUtf8 / Utf8View>` | `uint32` codes | see [`crate::dictionary`] |
//! | `Utf8`, `LargeUtf8`, `Utf8View` | `uint32` codes | [`Utf8Policy::DictionaryEncode`] or [`crate::dictionary_encode_utf8`] only |
//!
//! Everything else (lists of variable length, structs, binary, decimals, intervals, ...) is
//! rejected with [`ArrowAdapterError::UnsupportedType`].
//!
//! READBACK rebuilds a requested Arrow type from a stored format (the inverse mapping):
//! `uint8` → `UInt8`; `uint32` → `UInt32`, `UInt16` (checked), `UInt64`, `Boolean` (nonzero
//! is true), or with a dictionary `Dictionary<UInt32, Utf8>` / `Utf8`; `sint32` → `Int32`,
//! `Date32`, `Time32`, `Int8` / `Int16` (checked), `Int64`, `Date64`, `Time64`, `Timestamp`,
//! `Duration`; `float16` → `Float16`; `float32` → `Float32`, `Float64`; n-component formats →
//! `FixedSizeList<T, n>` with `T` one of these for the component. "Checked" fails with
//! `ValueOutOfRange` naming the first valid row that does not fit; other pairs fail with
//! `ReadbackType`. Without a requested type, [`default_data_type`] applies.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use gpugraph_command::VectorFormat;

use crate::error::ArrowAdapterError;
use crate::options::{Float64Policy, Int64Policy, UploadOptions, Utf8Policy};

/// How one Arrow scalar becomes one stored component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarConversion {
    /// The Arrow value's bits are the stored bits.
    Verbatim,
    /// Losslessly widened to a 32-bit integer.
    Widen,
    /// A boolean stored as `uint32` 0 or 1.
    Boolean,
    /// A 64-bit integer narrowed to 32 bits after a range check.
    NarrowChecked,
    /// A `Float64` rounded to the nearest `float32` after a range check.
    RoundToFloat32,
}

/// How one Arrow column becomes a GPU vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnEncoding {
    /// Rows of `format`, each component converted by `conversion`.
    Values {
        /// The stored format.
        format: VectorFormat,
        /// The per-component conversion.
        conversion: ScalarConversion,
    },
    /// `uint32` codes into a CPU dictionary taken from an Arrow dictionary array.
    DictionaryCodes,
    /// `uint32` codes into a CPU dictionary built from a string column.
    EncodedStrings,
}

impl ColumnEncoding {
    /// The stored format (`uint32` for codes).
    pub fn format(self) -> VectorFormat {
        match self {
            ColumnEncoding::Values { format, .. } => format,
            ColumnEncoding::DictionaryCodes | ColumnEncoding::EncodedStrings => {
                VectorFormat::Uint32
            }
        }
    }
    /// Whether the column is stored as codes with a CPU dictionary.
    pub fn has_dictionary(self) -> bool {
        !matches!(self, ColumnEncoding::Values { .. })
    }
}

/// The encoding of a column named `column` of Arrow type `data_type` under `options`; fails
/// with a typed error naming the column and type when the type is unsupported or needs an
/// option that is off.
pub fn plan_column(
    column: &str,
    data_type: &DataType,
    options: &UploadOptions,
) -> Result<ColumnEncoding, ArrowAdapterError> {
    match data_type {
        DataType::FixedSizeList(child, n) => {
            let (component, conversion) =
                plan_scalar(column, child.data_type(), options).map_err(|e| match e {
                    // Name the list type, not only its child, in the message.
                    ArrowAdapterError::UnsupportedType { hint, .. } => unsupported(
                        column,
                        data_type,
                        format!("its component type is not uploadable: {hint}"),
                    ),
                    other => other,
                })?;
            let format = u32::try_from(*n)
                .ok()
                .and_then(|n| with_components(component, n))
                .ok_or_else(|| {
                    unsupported(
                        column,
                        data_type,
                        format!("there is no {n}-component {component} format (uint8: 2 or 4; uint32, sint32, float32: 2 to 4; float16: 2 or 4)"),
                    )
                })?;
            Ok(ColumnEncoding::Values { format, conversion })
        }
        DataType::Dictionary(key, value) => {
            if !key.is_dictionary_key_type() {
                return Err(unsupported(
                    column,
                    data_type,
                    "dictionary keys must be integers".into(),
                ));
            }
            if !is_string(value) {
                return Err(unsupported(
                    column,
                    data_type,
                    "only dictionaries of strings (Utf8, LargeUtf8, Utf8View) are uploaded".into(),
                ));
            }
            Ok(ColumnEncoding::DictionaryCodes)
        }
        t if is_string(t) => match options.utf8 {
            Utf8Policy::DictionaryEncode => Ok(ColumnEncoding::EncodedStrings),
            Utf8Policy::Reject => Err(ArrowAdapterError::ConversionNotEnabled {
                column: column.to_string(),
                data_type: data_type.clone(),
                option: "Utf8Policy::DictionaryEncode (or dictionary_encode_utf8)",
            }),
        },
        _ => {
            let (format, conversion) = plan_scalar(column, data_type, options)?;
            Ok(ColumnEncoding::Values { format, conversion })
        }
    }
}

/// The one-component format and conversion of a scalar Arrow type.
pub fn plan_scalar(
    column: &str,
    data_type: &DataType,
    options: &UploadOptions,
) -> Result<(VectorFormat, ScalarConversion), ArrowAdapterError> {
    use ScalarConversion::*;
    let gated = |format, conversion, enabled: bool, option| {
        if enabled {
            Ok((format, conversion))
        } else {
            Err(ArrowAdapterError::ConversionNotEnabled {
                column: column.to_string(),
                data_type: data_type.clone(),
                option,
            })
        }
    };
    let narrow = options.int64 == Int64Policy::NarrowChecked;
    match data_type {
        DataType::UInt8 => Ok((VectorFormat::Uint8, Verbatim)),
        DataType::UInt16 => Ok((VectorFormat::Uint32, Widen)),
        DataType::Boolean => Ok((VectorFormat::Uint32, Boolean)),
        DataType::UInt32 => Ok((VectorFormat::Uint32, Verbatim)),
        DataType::UInt64 => gated(
            VectorFormat::Uint32,
            NarrowChecked,
            narrow,
            "Int64Policy::NarrowChecked",
        ),
        DataType::Int8 | DataType::Int16 => Ok((VectorFormat::Sint32, Widen)),
        DataType::Int32 | DataType::Date32 | DataType::Time32(_) => {
            Ok((VectorFormat::Sint32, Verbatim))
        }
        DataType::Int64
        | DataType::Date64
        | DataType::Time64(_)
        | DataType::Timestamp(_, _)
        | DataType::Duration(_) => gated(
            VectorFormat::Sint32,
            NarrowChecked,
            narrow,
            "Int64Policy::NarrowChecked",
        ),
        DataType::Float16 => Ok((VectorFormat::Float16, Verbatim)),
        DataType::Float32 => Ok((VectorFormat::Float32, Verbatim)),
        DataType::Float64 => gated(
            VectorFormat::Float32,
            RoundToFloat32,
            options.float64 == Float64Policy::RoundToFloat32,
            "Float64Policy::RoundToFloat32",
        ),
        DataType::List(_) | DataType::LargeList(_) | DataType::ListView(_) => Err(unsupported(
            column,
            data_type,
            "variable-length lists are not uploaded; use FixedSizeList with 2 to 4 components"
                .into(),
        )),
        _ => Err(unsupported(
            column,
            data_type,
            "supported: UInt8/16/32/64, Int8/16/32/64, Float16/32/64, Boolean, Date, Time, Timestamp, Duration, FixedSizeList of those with 2 to 4 components, string dictionaries and strings".into(),
        )),
    }
}

/// The format with `n` components of `component`'s scalar kind and size, if one exists.
pub fn with_components(component: VectorFormat, n: u32) -> Option<VectorFormat> {
    VectorFormat::all().find(|f| {
        f.scalar() == component.scalar()
            && f.component_bytes() == component.component_bytes()
            && f.components() == n
    })
}

/// Whether `data_type` is a string type the dictionary adapters accept.
pub fn is_string(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// The Arrow type a column of source type `source` reads back as: the same type, except that
/// dictionaries read back as `Dictionary<UInt32, Utf8>` (the stored codes and the unified
/// dictionary) and dictionary-encoded strings read back as `Utf8`.
pub fn readback_data_type(source: &DataType) -> DataType {
    match source {
        DataType::Dictionary(_, _) => code_dictionary_type(),
        t if is_string(t) => DataType::Utf8,
        t => t.clone(),
    }
}

/// The schema an uploaded batch or table reads back as: every field keeps its name,
/// nullability and metadata, with its type mapped by [`readback_data_type`].
pub fn readback_schema(source: &Schema) -> SchemaRef {
    let fields: Vec<Field> = source
        .fields()
        .iter()
        .map(|f| {
            f.as_ref()
                .clone()
                .with_data_type(readback_data_type(f.data_type()))
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, source.metadata().clone()))
}

/// `Dictionary<UInt32, Utf8>`: the Arrow type of read-back dictionary codes.
pub fn code_dictionary_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
}

/// The Arrow type a vector of `format` reads back as when no source type is known:
/// `UInt8`, `UInt32`, `Int32`, `Float16` or `Float32`, and for several components a
/// `FixedSizeList` of that type (non-nullable items named `item`); `unorm8x4` reads back as
/// `FixedSizeList<UInt8, 4>`.
pub fn default_data_type(format: VectorFormat) -> DataType {
    use gpugraph_command::ScalarKind;
    let scalar = match (format.scalar(), format.component_bytes()) {
        (ScalarKind::Uint | ScalarKind::Unorm, 1) => DataType::UInt8,
        (ScalarKind::Uint, _) => DataType::UInt32,
        (ScalarKind::Sint, _) => DataType::Int32,
        (ScalarKind::Float, 2) => DataType::Float16,
        _ => DataType::Float32,
    };
    match format.components() {
        1 => scalar,
        n => DataType::FixedSizeList(
            Field::new("item", scalar, false).into(),
            n as i32, // 2 to 4
        ),
    }
}

fn unsupported(column: &str, data_type: &DataType, hint: String) -> ArrowAdapterError {
    ArrowAdapterError::UnsupportedType {
        column: column.to_string(),
        data_type: data_type.clone(),
        hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::TimeUnit;

    fn plan(t: DataType, o: UploadOptions) -> Result<ColumnEncoding, ArrowAdapterError> {
        plan_column("c", &t, &o)
    }

    #[test]
    fn primitive_types_map_to_their_formats() {
        let o = UploadOptions::default();
        for (t, f) in [
            (DataType::UInt8, VectorFormat::Uint8),
            (DataType::UInt16, VectorFormat::Uint32),
            (DataType::UInt32, VectorFormat::Uint32),
            (DataType::Int8, VectorFormat::Sint32),
            (DataType::Int32, VectorFormat::Sint32),
            (DataType::Date32, VectorFormat::Sint32),
            (DataType::Float16, VectorFormat::Float16),
            (DataType::Float32, VectorFormat::Float32),
            (DataType::Boolean, VectorFormat::Uint32),
        ] {
            assert_eq!(plan(t.clone(), o).unwrap().format(), f, "{t}");
        }
    }

    #[test]
    fn wide_types_need_their_option() {
        let o = UploadOptions::default();
        for t in [
            DataType::Int64,
            DataType::UInt64,
            DataType::Timestamp(TimeUnit::Second, None),
            DataType::Float64,
        ] {
            let err = plan(t.clone(), o).unwrap_err();
            assert!(
                matches!(&err, ArrowAdapterError::ConversionNotEnabled { column, .. } if column == "c"),
                "{err}"
            );
        }
        let o = UploadOptions::default().narrow_int64().round_float64();
        assert_eq!(
            plan(DataType::Int64, o).unwrap(),
            ColumnEncoding::Values {
                format: VectorFormat::Sint32,
                conversion: ScalarConversion::NarrowChecked
            }
        );
        assert_eq!(
            plan(DataType::Float64, o).unwrap().format(),
            VectorFormat::Float32
        );
    }

    #[test]
    fn fixed_size_lists_pick_the_vector_format() {
        let o = UploadOptions::default();
        let fsl =
            |t: DataType, n| DataType::FixedSizeList(Arc::new(Field::new("item", t, true)), n);
        assert_eq!(
            plan(fsl(DataType::Float32, 3), o).unwrap().format(),
            VectorFormat::Float32x3
        );
        assert_eq!(
            plan(fsl(DataType::UInt8, 4), o).unwrap().format(),
            VectorFormat::Uint8x4
        );
        assert!(matches!(
            plan(fsl(DataType::Float32, 5), o),
            Err(ArrowAdapterError::UnsupportedType { .. })
        ));
        assert!(matches!(
            plan(fsl(DataType::Float16, 3), o),
            Err(ArrowAdapterError::UnsupportedType { .. })
        ));
        assert!(matches!(
            plan(fsl(DataType::Utf8, 2), o),
            Err(ArrowAdapterError::UnsupportedType { .. })
        ));
    }

    #[test]
    fn strings_and_dictionaries() {
        let dict = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
        assert_eq!(
            plan(dict, UploadOptions::default()).unwrap(),
            ColumnEncoding::DictionaryCodes
        );
        let numeric = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Int32));
        assert!(matches!(
            plan(numeric, UploadOptions::default()),
            Err(ArrowAdapterError::UnsupportedType { .. })
        ));
        assert!(matches!(
            plan(DataType::Utf8, UploadOptions::default()),
            Err(ArrowAdapterError::ConversionNotEnabled { .. })
        ));
        assert_eq!(
            plan(DataType::LargeUtf8, UploadOptions::default().encode_utf8()).unwrap(),
            ColumnEncoding::EncodedStrings
        );
        let err = plan(DataType::Binary, UploadOptions::default()).unwrap_err();
        assert!(
            err.to_string().contains("'c'") && err.to_string().contains("Binary"),
            "{err}"
        );
    }

    #[test]
    fn default_types_cover_every_format() {
        for f in VectorFormat::all() {
            let t = default_data_type(f);
            let back = plan(t.clone(), UploadOptions::default()).unwrap().format();
            let expected = if f == VectorFormat::Unorm8x4 {
                VectorFormat::Uint8x4
            } else {
                f
            };
            assert_eq!(back, expected, "{f} -> {t}");
        }
    }
}
