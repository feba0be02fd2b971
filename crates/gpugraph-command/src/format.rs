//! Stored memory formats of graph views (`uint32`, `float32x3`, `unorm8x4`, ...).
//!
//! A format describes bytes in a buffer, not a shader value type: `float32x3` occupies twelve
//! bytes even where a WGSL struct member would need sixteen. Kernels validate the exact forms
//! they accept at their own boundary.

use std::fmt;
use std::str::FromStr;

/// The stored byte layout of one row of a fixed-width vector.
///
/// Spellings (`Display`/`FromStr`) match the spec's `GPUVectorFormat` strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VectorFormat {
    /// One unsigned 8-bit integer.
    Uint8,
    /// Two unsigned 8-bit integers.
    Uint8x2,
    /// Four unsigned 8-bit integers.
    Uint8x4,
    /// Four unsigned 8-bit values normalized to `[0, 1]`.
    Unorm8x4,
    /// One unsigned 32-bit integer.
    Uint32,
    /// Two unsigned 32-bit integers.
    Uint32x2,
    /// Three unsigned 32-bit integers.
    Uint32x3,
    /// Four unsigned 32-bit integers.
    Uint32x4,
    /// One signed 32-bit integer.
    Sint32,
    /// Two signed 32-bit integers.
    Sint32x2,
    /// Three signed 32-bit integers.
    Sint32x3,
    /// Four signed 32-bit integers.
    Sint32x4,
    /// One IEEE 754 binary16 value (a storage format; shaders may need `SHADER_F16`).
    Float16,
    /// Two binary16 values.
    Float16x2,
    /// Four binary16 values.
    Float16x4,
    /// One IEEE 754 binary32 value.
    Float32,
    /// Two binary32 values.
    Float32x2,
    /// Three binary32 values.
    Float32x3,
    /// Four binary32 values.
    Float32x4,
}

/// The scalar type underlying a [`VectorFormat`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    /// Unsigned integer.
    Uint,
    /// Signed integer.
    Sint,
    /// Unsigned normalized integer read as a float.
    Unorm,
    /// IEEE float.
    Float,
}

const ALL: [(VectorFormat, &str); 19] = [
    (VectorFormat::Uint8, "uint8"),
    (VectorFormat::Uint8x2, "uint8x2"),
    (VectorFormat::Uint8x4, "uint8x4"),
    (VectorFormat::Unorm8x4, "unorm8x4"),
    (VectorFormat::Uint32, "uint32"),
    (VectorFormat::Uint32x2, "uint32x2"),
    (VectorFormat::Uint32x3, "uint32x3"),
    (VectorFormat::Uint32x4, "uint32x4"),
    (VectorFormat::Sint32, "sint32"),
    (VectorFormat::Sint32x2, "sint32x2"),
    (VectorFormat::Sint32x3, "sint32x3"),
    (VectorFormat::Sint32x4, "sint32x4"),
    (VectorFormat::Float16, "float16"),
    (VectorFormat::Float16x2, "float16x2"),
    (VectorFormat::Float16x4, "float16x4"),
    (VectorFormat::Float32, "float32"),
    (VectorFormat::Float32x2, "float32x2"),
    (VectorFormat::Float32x3, "float32x3"),
    (VectorFormat::Float32x4, "float32x4"),
];

impl VectorFormat {
    /// Every supported format, in declaration order.
    pub fn all() -> impl Iterator<Item = VectorFormat> {
        ALL.iter().map(|(f, _)| *f)
    }

    /// The spec spelling, e.g. `"float32x3"`.
    pub fn as_str(self) -> &'static str {
        ALL.iter()
            .find(|(f, _)| *f == self)
            .map(|(_, s)| *s)
            .unwrap_or("?")
    }

    /// Number of scalar components per row (1 to 4).
    pub fn components(self) -> u32 {
        use VectorFormat::*;
        match self {
            Uint8 | Uint32 | Sint32 | Float16 | Float32 => 1,
            Uint8x2 | Uint32x2 | Sint32x2 | Float16x2 | Float32x2 => 2,
            Uint32x3 | Sint32x3 | Float32x3 => 3,
            Uint8x4 | Unorm8x4 | Uint32x4 | Sint32x4 | Float16x4 | Float32x4 => 4,
        }
    }

    /// Bytes per scalar component.
    pub fn component_bytes(self) -> u32 {
        use VectorFormat::*;
        match self {
            Uint8 | Uint8x2 | Uint8x4 | Unorm8x4 => 1,
            Float16 | Float16x2 | Float16x4 => 2,
            _ => 4,
        }
    }

    /// Packed bytes of one row (components × component bytes).
    pub fn byte_size(self) -> u32 {
        self.components() * self.component_bytes()
    }

    /// The scalar kind of the components.
    pub fn scalar(self) -> ScalarKind {
        use VectorFormat::*;
        match self {
            Uint8 | Uint8x2 | Uint8x4 | Uint32 | Uint32x2 | Uint32x3 | Uint32x4 => ScalarKind::Uint,
            Sint32 | Sint32x2 | Sint32x3 | Sint32x4 => ScalarKind::Sint,
            Unorm8x4 => ScalarKind::Unorm,
            Float16 | Float16x2 | Float16x4 | Float32 | Float32x2 | Float32x3 | Float32x4 => {
                ScalarKind::Float
            }
        }
    }
}

impl fmt::Display for VectorFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format string that names no [`VectorFormat`]; variable-length and interleaved formats
/// such as `vertex-list<float32x3>` are named explicitly because they need dedicated adapters.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseFormatError {
    /// The text names a variable-length format, which graph views do not describe.
    #[error("vector format '{0}' is variable-length; graph views need a fixed-width format (use a dedicated adapter)")]
    VariableLength(String),
    /// The text names no known format.
    #[error("unknown vector format '{0}' (expected one of uint8, uint32, sint32, float16, float32 and their x2/x3/x4 forms, or unorm8x4)")]
    Unknown(String),
}

impl FromStr for VectorFormat {
    type Err = ParseFormatError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some((f, _)) = ALL.iter().find(|(_, name)| *name == s) {
            return Ok(*f);
        }
        if s.contains('<') || s.starts_with("vertex-list") || s.starts_with("list") {
            return Err(ParseFormatError::VariableLength(s.to_string()));
        }
        Err(ParseFormatError::Unknown(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_and_sizes_match() {
        for f in VectorFormat::all() {
            assert_eq!(f.as_str().parse::<VectorFormat>().unwrap(), f);
        }
        assert_eq!(VectorFormat::Float32x3.byte_size(), 12);
        assert_eq!(VectorFormat::Unorm8x4.byte_size(), 4);
        assert_eq!(VectorFormat::Float16.byte_size(), 2);
        assert!(matches!(
            "vertex-list<float32x3>".parse::<VectorFormat>(),
            Err(ParseFormatError::VariableLength(_))
        ));
        assert!(matches!(
            "float64".parse::<VectorFormat>(),
            Err(ParseFormatError::Unknown(_))
        ));
    }
}
