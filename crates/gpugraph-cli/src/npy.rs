//! Minimal NumPy `.npy` reader/writer for the file-in/file-out commands: little-endian
//! `uint32`, `int32`, `float32` (and `uint8`) arrays of shape `(n,)` or `(n, k)`, C order.
//! Anything else is an error naming the file and what was expected.

use std::fmt;
use std::path::{Path, PathBuf};

/// Element type of an `.npy` array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// `<u4`
    U32,
    /// `<i4`
    I32,
    /// `<f4`
    F32,
    /// `|u1`
    U8,
}

impl Dtype {
    fn descr(self) -> &'static str {
        match self {
            Dtype::U32 => "<u4",
            Dtype::I32 => "<i4",
            Dtype::F32 => "<f4",
            Dtype::U8 => "|u1",
        }
    }
    fn from_descr(d: &str) -> Option<Self> {
        Some(match d {
            "<u4" | "=u4" => Dtype::U32,
            "<i4" | "=i4" => Dtype::I32,
            "<f4" | "=f4" => Dtype::F32,
            "|u1" | "<u1" | "=u1" => Dtype::U8,
            _ => return None,
        })
    }
    /// Bytes per element.
    pub fn size(self) -> usize {
        if self == Dtype::U8 {
            1
        } else {
            4
        }
    }
    /// NumPy's name.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::U32 => "uint32",
            Dtype::I32 => "int32",
            Dtype::F32 => "float32",
            Dtype::U8 => "uint8",
        }
    }
}

/// A loaded array: raw little-endian bytes with dtype and shape.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// Element type.
    pub dtype: Dtype,
    /// `[n]` or `[n, k]`.
    pub shape: Vec<usize>,
    /// `rows × cols × dtype.size()` bytes.
    pub data: Vec<u8>,
}

/// Why an `.npy` file could not be read or written.
#[derive(Debug)]
pub struct NpyError {
    /// The file.
    pub path: PathBuf,
    /// What was wrong.
    pub reason: String,
}

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

impl std::error::Error for NpyError {}

fn err(path: &Path, reason: impl Into<String>) -> NpyError {
    NpyError {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

impl NpyArray {
    /// Rows (first dimension).
    pub fn rows(&self) -> usize {
        self.shape.first().copied().unwrap_or(0)
    }
    /// Columns per row (1 for 1-D).
    pub fn cols(&self) -> usize {
        self.shape.get(1).copied().unwrap_or(1)
    }
    /// The data as u32 words (valid for 4-byte dtypes).
    pub fn words(&self) -> Vec<u32> {
        self.data
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }
    /// A 1-D uint32 array.
    pub fn from_u32(values: &[u32]) -> Self {
        Self {
            dtype: Dtype::U32,
            shape: vec![values.len()],
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }
}

/// Reads an `.npy` file.
pub fn read(path: &Path) -> Result<NpyArray, NpyError> {
    let bytes = std::fs::read(path).map_err(|e| err(path, format!("cannot read: {e}")))?;
    parse(path, &bytes)
}

/// Reads a 1-D uint32 `.npy` file (`what` names the argument in errors).
pub fn read_u32_vector(path: &Path, what: &str) -> Result<Vec<u32>, NpyError> {
    let a = read(path)?;
    if a.dtype != Dtype::U32 || a.shape.len() != 1 {
        return Err(err(
            path,
            format!(
                "{what} must be a 1-D uint32 array, got {} with shape {:?}",
                a.dtype.name(),
                a.shape
            ),
        ));
    }
    Ok(a.words())
}

/// Parses `.npy` bytes (`path` only names the source in errors).
pub fn parse(path: &Path, bytes: &[u8]) -> Result<NpyArray, NpyError> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(err(path, "not an .npy file (missing \\x93NUMPY magic)"));
    }
    let major = bytes[6];
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(err(path, "truncated .npy header"));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => return Err(err(path, format!("unsupported .npy version {v}"))),
    };
    let end = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| err(path, "truncated .npy header"))?;
    let header =
        std::str::from_utf8(&bytes[start..end]).map_err(|_| err(path, "header is not text"))?;
    let field = |key: &str| -> Option<&str> {
        let i = header.find(&format!("'{key}'"))?;
        let rest = header[i + key.len() + 2..]
            .trim_start()
            .strip_prefix(':')?
            .trim_start();
        Some(rest)
    };
    let descr = field("descr")
        .and_then(|r| r.strip_prefix('\''))
        .and_then(|r| r.split('\'').next())
        .ok_or_else(|| err(path, "header has no 'descr'"))?;
    let dtype = Dtype::from_descr(descr).ok_or_else(|| {
        err(
            path,
            format!("unsupported dtype '{descr}' (expected little-endian uint32, int32, float32 or uint8)"),
        )
    })?;
    let fortran =
        field("fortran_order").ok_or_else(|| err(path, "header has no 'fortran_order'"))?;
    if fortran.starts_with("True") {
        return Err(err(
            path,
            "Fortran-ordered arrays are not supported (save with C order)",
        ));
    }
    let shape_text = field("shape")
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.split(')').next())
        .ok_or_else(|| err(path, "header has no 'shape'"))?;
    let shape: Vec<usize> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| err(path, format!("bad shape ({shape_text})")))?;
    if shape.is_empty() || shape.len() > 2 {
        return Err(err(path, format!("shape {shape:?} must be (n,) or (n, k)")));
    }
    let count = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .and_then(|c| c.checked_mul(dtype.size()))
        .ok_or_else(|| err(path, "shape too large"))?;
    let data = &bytes[end..];
    if data.len() != count {
        return Err(err(
            path,
            format!(
                "data has {} bytes but shape {shape:?} of {} needs {count}",
                data.len(),
                dtype.name()
            ),
        ));
    }
    Ok(NpyArray {
        dtype,
        shape,
        data: data.to_vec(),
    })
}

/// Encodes an array as `.npy` (version 1.0, header padded to 64 bytes).
pub fn encode(a: &NpyArray) -> Vec<u8> {
    let shape = match a.shape.as_slice() {
        [n] => format!("({n},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        a.dtype.descr()
    );
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.div_ceil(64) * 64 - unpadded));
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&a.data);
    out
}

/// Writes an array to `path`.
pub fn write(path: &Path, a: &NpyArray) -> Result<(), NpyError> {
    std::fs::write(path, encode(a)).map_err(|e| err(path, format!("cannot write: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors_name_the_file() {
        let p = Path::new("x.npy");
        let a = NpyArray::from_u32(&[1, 2, 3, 0xFFFF_FFFF]);
        let bytes = encode(&a);
        assert_eq!(
            bytes.len() % 64,
            16,
            "header padded so data starts 64-aligned"
        );
        assert_eq!(parse(p, &bytes).unwrap(), a);
        let m = NpyArray {
            dtype: Dtype::F32,
            shape: vec![2, 3],
            data: vec![0; 24],
        };
        assert_eq!(parse(p, &encode(&m)).unwrap(), m);
        let e = parse(p, b"hello world").unwrap_err();
        assert!(e.to_string().starts_with("x.npy: not an .npy file"), "{e}");
        let mut f8 = encode(&a);
        let i = f8.windows(3).position(|w| w == b"<u4").unwrap();
        f8[i..i + 3].copy_from_slice(b"<f8");
        assert!(parse(p, &f8)
            .unwrap_err()
            .to_string()
            .contains("unsupported dtype '<f8'"));
        let truncated = &bytes[..bytes.len() - 1];
        assert!(parse(p, truncated)
            .unwrap_err()
            .to_string()
            .contains("needs 16"));
    }
}
