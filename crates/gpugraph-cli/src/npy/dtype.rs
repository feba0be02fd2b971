//! The dtype of an `.npy` file as the readers classify it: npyz's parsed dtype (type
//! character, size, byte order) mapped onto the numeric types the commands convert from, or
//! the reason it is refused.

use npyz::{DType, Endianness, TypeChar};

/// Element type of the array in the file (the dtype string's kind and size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileDtype {
    /// `|b1`, stored as one byte 0 or 1.
    Bool,
    /// `|u1`
    U8,
    /// `|i1`
    I8,
    /// `<u2`
    U16,
    /// `<i2`
    I16,
    /// `<u4`
    U32,
    /// `<i4`
    I32,
    /// `<u8`
    U64,
    /// `<i8`
    I64,
    /// `<f4`
    F32,
    /// `<f8`
    F64,
    /// `<c8`: complex64, a float32 (re, im) pair.
    C64,
    /// `<c16`: complex128, a float64 (re, im) pair.
    C128,
}

impl FileDtype {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            FileDtype::Bool | FileDtype::U8 | FileDtype::I8 => 1,
            FileDtype::U16 | FileDtype::I16 => 2,
            FileDtype::U32 | FileDtype::I32 | FileDtype::F32 => 4,
            FileDtype::U64 | FileDtype::I64 | FileDtype::F64 | FileDtype::C64 => 8,
            FileDtype::C128 => 16,
        }
    }

    /// NumPy's name (`np.int64`).
    pub fn name(self) -> &'static str {
        match self {
            FileDtype::Bool => "bool",
            FileDtype::U8 => "uint8",
            FileDtype::I8 => "int8",
            FileDtype::U16 => "uint16",
            FileDtype::I16 => "int16",
            FileDtype::U32 => "uint32",
            FileDtype::I32 => "int32",
            FileDtype::U64 => "uint64",
            FileDtype::I64 => "int64",
            FileDtype::F32 => "float32",
            FileDtype::F64 => "float64",
            FileDtype::C64 => "complex64",
            FileDtype::C128 => "complex128",
        }
    }

    /// Whether the elements are floating point (real or complex).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            FileDtype::F32 | FileDtype::F64 | FileDtype::C64 | FileDtype::C128
        )
    }

    /// Whether the elements are complex pairs.
    pub fn is_complex(self) -> bool {
        matches!(self, FileDtype::C64 | FileDtype::C128)
    }

    /// The type of one component and the components per element (2 for complex).
    pub fn component(self) -> (FileDtype, usize) {
        match self {
            FileDtype::C64 => (FileDtype::F32, 2),
            FileDtype::C128 => (FileDtype::F64, 2),
            other => (other, 1),
        }
    }

    /// The dtype of `dtype` (npyz's parse of the header's `descr`) and whether its bytes are
    /// big-endian; the error says why it is refused.
    pub fn of(dtype: &DType) -> Result<(Self, bool), String> {
        let ts = match dtype {
            DType::Plain(ts) => ts,
            DType::Record(fields) => {
                return Err(format!(
                    "structured dtype with {} field(s) is not supported; save each field as its own array (np.save('x.npy', a['x']))",
                    fields.len()
                ))
            }
            DType::Array(..) => {
                return Err("sub-array dtypes are not supported; save a plain numeric array".into())
            }
        };
        let descr = ts.to_string();
        let unsupported = |why: &str| {
            format!("unsupported dtype '{descr}' ({why}; expected bool, int8 to int64, uint8 to uint64, float32, float64, complex64 or complex128, either byte order)")
        };
        let dtype = match (ts.type_char(), ts.size_field()) {
            (TypeChar::Bool, 1) => FileDtype::Bool,
            (TypeChar::Uint, 1) => FileDtype::U8,
            (TypeChar::Int, 1) => FileDtype::I8,
            (TypeChar::Uint, 2) => FileDtype::U16,
            (TypeChar::Int, 2) => FileDtype::I16,
            (TypeChar::Uint, 4) => FileDtype::U32,
            (TypeChar::Int, 4) => FileDtype::I32,
            (TypeChar::Uint, 8) => FileDtype::U64,
            (TypeChar::Int, 8) => FileDtype::I64,
            (TypeChar::Float, 4) => FileDtype::F32,
            (TypeChar::Float, 8) => FileDtype::F64,
            (TypeChar::Complex, 8) => FileDtype::C64,
            (TypeChar::Complex, 16) => FileDtype::C128,
            (TypeChar::ByteStr | TypeChar::UnicodeStr, _) => return Err(unsupported("strings")),
            (TypeChar::RawData, _) => {
                return Err(format!(
                    "structured dtype '{descr}' (raw records) is not supported; save each field as its own array"
                ))
            }
            _ => return Err(unsupported("not a numeric type read here")),
        };
        Ok((dtype, ts.endianness() == Endianness::Big))
    }
}
