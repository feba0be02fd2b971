//! The value types of the expression language: a component type (float32, sint32, uint32), a
//! row width (1 to 4) and the float→integer rounding of casts. The bottom of the expression
//! modules: it names none of them.

use gpugraph_command::VectorFormat;

/// Component type of expression values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// IEEE binary32.
    Float32,
    /// Two's-complement 32-bit signed integer.
    Sint32,
    /// 32-bit unsigned integer.
    Uint32,
}

impl ScalarType {
    /// The spec spelling (`float32`, `sint32`, `uint32`), which is also the cast's name.
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Float32 => "float32",
            ScalarType::Sint32 => "sint32",
            ScalarType::Uint32 => "uint32",
        }
    }
    /// The WGSL scalar type.
    pub fn wgsl(self) -> &'static str {
        match self {
            ScalarType::Float32 => "f32",
            ScalarType::Sint32 => "i32",
            ScalarType::Uint32 => "u32",
        }
    }
}

impl std::fmt::Display for ScalarType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Type of one expression value: component type and row width (1 to 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueType {
    /// Component type.
    pub scalar: ScalarType,
    /// Components per row, 1 to 4.
    pub width: u8,
}

impl ValueType {
    /// `scalar` × `width`.
    pub fn new(scalar: ScalarType, width: u8) -> Self {
        Self { scalar, width }
    }

    /// The packed storage format of this type (`float32x3`, `uint32`, ...).
    pub fn format(self) -> VectorFormat {
        use ScalarType::*;
        use VectorFormat as F;
        match (self.scalar, self.width) {
            (Float32, 1) => F::Float32,
            (Float32, 2) => F::Float32x2,
            (Float32, 3) => F::Float32x3,
            (Float32, _) => F::Float32x4,
            (Sint32, 1) => F::Sint32,
            (Sint32, 2) => F::Sint32x2,
            (Sint32, 3) => F::Sint32x3,
            (Sint32, _) => F::Sint32x4,
            (Uint32, 1) => F::Uint32,
            (Uint32, 2) => F::Uint32x2,
            (Uint32, 3) => F::Uint32x3,
            (Uint32, _) => F::Uint32x4,
        }
    }

    /// The type of a storage format in the expression subset (32-bit float/sint/uint, 1 to 4
    /// components); `None` for uint8, float16 and unorm formats.
    pub fn from_format(format: VectorFormat) -> Option<Self> {
        use gpugraph_command::ScalarKind;
        if format.component_bytes() != 4 {
            return None;
        }
        let scalar = match format.scalar() {
            ScalarKind::Float => ScalarType::Float32,
            ScalarKind::Sint => ScalarType::Sint32,
            ScalarKind::Uint => ScalarType::Uint32,
            ScalarKind::Unorm => return None,
        };
        Some(Self::new(scalar, format.components() as u8))
    }

    /// The WGSL type of one row value (`f32`, `vec3<u32>`, ...).
    pub fn wgsl(self) -> String {
        if self.width == 1 {
            self.scalar.wgsl().to_string()
        } else {
            format!("vec{}<{}>", self.width, self.scalar.wgsl())
        }
    }
}

impl std::fmt::Display for ValueType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.format())
    }
}

/// How float→integer casts round before saturating (per expression operation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IntegerRounding {
    /// Toward zero (the default).
    #[default]
    Truncate,
    /// To the nearest integer, exact halves away from zero (-1.5 → -2, 1.5 → 2).
    Nearest,
}
