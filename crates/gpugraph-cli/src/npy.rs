//! NumPy `.npy` reader/writer for the file-in/file-out commands, on the `npyz` crate.
//!
//! Reading checks the header before touching the body: npyz parses it (dtype with its byte
//! order, shape, Fortran order) after two checks of ours: the header length is bounded
//! before anything is allocated, and its dict has exactly NumPy's three keys (NumPy refuses
//! others; npyz would ignore them). Then the body's length is checked against the shape
//! (for regular files), so a wrong or endless input (`/dev/zero`) fails at once. The body is
//! converted chunk by chunk into the 32-bit type the command needs ([`convert`]; big-endian
//! files are byte-swapped first): NumPy's defaults (`int64`, `uint64`, `float64`, `bool`)
//! are accepted when every value converts exactly, otherwise the error names the first value
//! that would not and the `astype` to use. Writing produces `uint32`, `int32`, `float32`,
//! `uint8` or `complex64` files through npyz.

mod convert;
mod dtype;

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use convert::{convert, loss};
pub use dtype::FileDtype;
use npyz::WriterBuilder;

/// Longest header accepted. NumPy itself refuses headers over 10,000 bytes by default
/// (`max_header_size`); a length field of gigabytes must not become an allocation.
const MAX_HEADER_LEN: usize = 1 << 16;
/// Elements converted per read: bounds the scratch buffer, whatever the shape claims.
const CHUNK_ELEMENTS: usize = 1 << 16;

/// Element type of an array as the commands hold it.
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

/// Reads an `.npy` array of shape `(n,)` or `(n, k)` as its 32-bit counterpart: `int8` to
/// `int64` as int32, `bool` and `uint8` to `uint64` as uint32, `float64` as float32. Fails,
/// naming the first offending value, unless every value converts exactly.
pub fn read(path: &Path) -> Result<NpyArray, NpyError> {
    load(path, Target::Natural)
}

/// The element type a `.npy` file declares in its header (the body is not read).
pub fn file_dtype(path: &Path) -> Result<FileDtype, NpyError> {
    let file = File::open(path).map_err(|e| err(path, format!("cannot read: {e}")))?;
    let (header, _) = read_header(&mut BufReader::new(file)).map_err(|e| err(path, e))?;
    Ok(header.dtype)
}

/// Reads a 1-D `.npy` array of any integer or bool dtype whose values are all uint32
/// (`what` names the argument in errors). Floats are refused rather than truncated.
pub fn read_u32_vector(path: &Path, what: &str) -> Result<Vec<u32>, NpyError> {
    Ok(load(path, Target::U32 { what })?.words())
}

/// Parses in-memory `.npy` bytes like [`read`] (`path` only names the source in errors).
// The commands read files; this entry serves the unit tests and the fuzz targets in fuzz/.
#[allow(dead_code)]
pub fn parse(path: &Path, bytes: &[u8]) -> Result<NpyArray, NpyError> {
    decode(
        path,
        &mut &bytes[..],
        Some(bytes.len() as u64),
        Target::Natural,
    )
}

/// What a reader needs the values as.
#[derive(Clone, Copy, Debug)]
enum Target<'a> {
    /// Each dtype's 32-bit counterpart, `(n,)` or `(n, k)`.
    Natural,
    /// 1-D uint32; `what` names the argument.
    U32 { what: &'a str },
    /// A complex field: complex64/complex128 `(h, w)` or float32/float64 `(h, w, 2)`, held
    /// as float32 `(h, w, 2)`; `what` names the argument.
    Complex { what: &'a str },
}

fn load(path: &Path, target: Target) -> Result<NpyArray, NpyError> {
    let file = File::open(path).map_err(|e| err(path, format!("cannot read: {e}")))?;
    // Only a regular file's length is known up front; pipes and devices are checked as read.
    let len = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    decode(
        path,
        &mut BufReader::with_capacity(1 << 20, file),
        len,
        target,
    )
}

/// Reads header then body from `r`; `len` is the whole input's length when known.
fn decode(
    path: &Path,
    r: &mut impl Read,
    len: Option<u64>,
    target: Target,
) -> Result<NpyArray, NpyError> {
    let fail = |reason: String| err(path, reason);
    let (header, header_len) = read_header(r).map_err(fail)?;
    let dtype = check_target(&header, target).map_err(fail)?;
    let Header {
        dtype: declared,
        big_endian,
        shape: declared_shape,
    } = header;
    // Complex elements convert as their (re, im) components, shaped (…, 2).
    let (file, per) = declared.component();
    let mut shape = declared_shape.clone();
    if per > 1 {
        shape.push(per);
    }
    let elements = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|n| n.checked_mul(file.size().max(dtype.size())).is_some())
        .ok_or_else(|| fail(format!("shape {declared_shape:?} is too large")))?;
    let needed = (elements * file.size()) as u64;
    let body_mismatch = |have: String| {
        fail(format!(
            "data has {have} bytes but shape {declared_shape:?} of {} needs {needed}",
            declared.name()
        ))
    };
    if let Some(len) = len {
        let body = len.saturating_sub(header_len);
        if body != needed {
            return Err(body_mismatch(body.to_string()));
        }
    }
    let mut data = Vec::with_capacity(match len {
        Some(_) => elements * dtype.size(),
        // An unknown length may be far shorter than the shape claims: grow as data comes.
        None => (elements * dtype.size()).min(1 << 24),
    });
    let mut chunk = vec![0u8; elements.clamp(1, CHUNK_ELEMENTS) * file.size()];
    let mut done = 0usize;
    while done < elements {
        let n = (elements - done).min(CHUNK_ELEMENTS);
        let bytes = &mut chunk[..n * file.size()];
        let got = fill(r, bytes).map_err(|e| fail(format!("cannot read: {e}")))?;
        if got < bytes.len() {
            return Err(body_mismatch(format!("only {}", done * file.size() + got)));
        }
        if big_endian {
            for element in bytes.chunks_exact_mut(file.size()) {
                element.reverse();
            }
        }
        convert(file, dtype, bytes, &mut data)
            .map_err(|(i, value)| fail(loss(value, file, dtype, done + i, &shape, target)))?;
        done += n;
    }
    if fill(r, &mut [0u8]).map_err(|e| fail(format!("cannot read: {e}")))? != 0 {
        return Err(body_mismatch(format!("more than {needed}")));
    }
    Ok(NpyArray { dtype, shape, data })
}

/// A checked header: a C-ordered array of `dtype` with `shape`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Header {
    /// Element type in the file.
    dtype: FileDtype,
    /// Whether the elements are big-endian.
    big_endian: bool,
    /// Dimensions, outermost first (empty for a 0-d array).
    shape: Vec<usize>,
}

/// Reads the magic, version and header; returns the header and the bytes it took.
fn read_header(r: &mut impl Read) -> Result<(Header, u64), String> {
    let io = |e: io::Error| format!("cannot read: {e}");
    let mut magic = [0u8; 8];
    if fill(r, &mut magic).map_err(io)? < magic.len() || &magic[..6] != b"\x93NUMPY" {
        return Err("not an .npy file (missing \\x93NUMPY magic)".into());
    }
    let (major, minor) = (magic[6], magic[7]);
    let len_bytes = match (major, minor) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        _ => return Err(format!("unsupported .npy version {major}.{minor}")),
    };
    let mut len = [0u8; 4];
    if fill(r, &mut len[..len_bytes]).map_err(io)? < len_bytes {
        return Err("truncated .npy header".into());
    }
    let text_len = u32::from_le_bytes(len) as usize;
    // Checked before npyz sees it: npyz allocates the declared length up front.
    if text_len > MAX_HEADER_LEN {
        return Err(format!(
            "header of {text_len} bytes is longer than the {MAX_HEADER_LEN} accepted"
        ));
    }
    let mut text = vec![0u8; text_len];
    if fill(r, &mut text).map_err(io)? < text_len {
        return Err(format!(
            "truncated .npy header (it declares {text_len} bytes)"
        ));
    }
    check_keys(&text)?;
    let mut whole = magic.to_vec();
    whole.extend_from_slice(&len[..len_bytes]);
    whole.extend_from_slice(&text);
    let parsed =
        npyz::NpyHeader::from_reader(&whole[..]).map_err(|e| format!("bad .npy header: {e}"))?;
    if parsed.order() == npyz::Order::Fortran {
        return Err(
            "Fortran-ordered arrays are not supported; save np.ascontiguousarray(a)".into(),
        );
    }
    let (dtype, big_endian) = FileDtype::of(&parsed.dtype())?;
    let shape = parsed
        .shape()
        .iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| format!("'shape' has the dimension {d}, which is too large"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let header = Header {
        dtype,
        big_endian,
        shape,
    };
    Ok((header, whole.len() as u64))
}

/// 'shape' is a tuple of sizes whose product fits u64 (npyz multiplies the dimensions
/// unchecked).
fn check_shape(value: &py_literal::Value) -> Result<(), String> {
    use py_literal::Value;
    let Value::Tuple(dims) = value else {
        return Err(format!("'shape' must be a tuple of sizes, got {value}"));
    };
    let mut product = 1u64;
    for d in dims {
        let Value::Integer(n) = d else {
            return Err(format!("'shape' has the non-integer dimension {d}"));
        };
        let n = u64::try_from(n)
            .map_err(|_| format!("'shape' has the dimension {n}, which is not a size"))?;
        product = product
            .checked_mul(n)
            .ok_or_else(|| format!("shape {value} is too large"))?;
    }
    Ok(())
}

/// NumPy's own strictness that npyz leaves out: the header is a dict of exactly 'descr',
/// 'fortran_order' (a bool) and 'shape' (a tuple of sizes). A 'shape' inside another key's string or an extra
/// key is refused, as `np.load` refuses it.
fn check_keys(text: &[u8]) -> Result<(), String> {
    use py_literal::Value;
    let text = std::str::from_utf8(text).map_err(|_| "header is not UTF-8".to_string())?;
    let value: Value = text
        .trim_end()
        .parse()
        .map_err(|e| format!("header is not a Python literal: {e}"))?;
    let Value::Dict(entries) = value else {
        return Err(format!("header is not a dict but {value}"));
    };
    let mut seen: Vec<&str> = Vec::new();
    for (key, value) in &entries {
        let Value::String(key) = key else {
            return Err(format!("header key {key} is not a string"));
        };
        match key.as_str() {
            "descr" => {}
            "shape" => check_shape(value)?,
            "fortran_order" if matches!(value, Value::Boolean(_)) => {}
            "fortran_order" => {
                return Err(format!("'fortran_order' must be True or False, got {value}"))
            }
            _ => {
                return Err(format!(
                    "header has an unexpected key {key:?} (an .npy header has exactly 'descr', 'fortran_order' and 'shape')"
                ))
            }
        }
        if seen.contains(&key.as_str()) {
            return Err(format!("header repeats the key '{key}'"));
        }
        seen.push(key);
    }
    for k in ["descr", "fortran_order", "shape"] {
        if !seen.contains(&k) {
            return Err(format!("header has no '{k}'"));
        }
    }
    Ok(())
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The held dtype for `header` under `target`, or why the array does not fit it.
fn check_target(header: &Header, target: Target) -> Result<Dtype, String> {
    let (file, shape) = (header.dtype, &header.shape);
    match target {
        Target::Natural => {
            if file.is_complex() {
                let descr = if file == FileDtype::C64 {
                    "<c8"
                } else {
                    "<c16"
                };
                return Err(format!(
                    "unsupported dtype '{descr}' here: {} fields are read by gpugraph fft2d",
                    file.name()
                ));
            }
            if shape.is_empty() || shape.len() > 2 {
                return Err(format!("shape {shape:?} must be (n,) or (n, k)"));
            }
            Ok(match file {
                FileDtype::F32 | FileDtype::F64 | FileDtype::C64 | FileDtype::C128 => Dtype::F32,
                FileDtype::I8 | FileDtype::I16 | FileDtype::I32 | FileDtype::I64 => Dtype::I32,
                FileDtype::Bool
                | FileDtype::U8
                | FileDtype::U16
                | FileDtype::U32
                | FileDtype::U64 => Dtype::U32,
            })
        }
        Target::U32 { what } => {
            if shape.len() != 1 || file.is_float() {
                let hint = if file.is_float() {
                    "; floats are not converted to integers: save a.astype(np.uint32)"
                } else {
                    ""
                };
                return Err(format!(
                    "{what} must be a 1-D uint32 array, got {} with shape {shape:?}{hint}",
                    file.name()
                ));
            }
            Ok(Dtype::U32)
        }
        Target::Complex { what } => {
            let ok = match shape.as_slice() {
                [_, _] => file.is_complex(),
                [_, _, 2] => matches!(file, FileDtype::F32 | FileDtype::F64),
                _ => false,
            };
            if !ok {
                return Err(format!(
                    "{what} must be complex64 with shape (h, w) or float32 with shape (h, w, 2), got {} with shape {shape:?}",
                    file.name()
                ));
            }
            Ok(Dtype::F32)
        }
    }
}

/// Reads a complex field for `what` (`--in`): complex64 or complex128 `(h, w)`, or float32 or
/// float64 `(h, w, 2)` (re, im last), as float32 `(h, w, 2)`. 64-bit values must convert to
/// float32 exactly, like every reader here.
/// The flag says whether the file's dtype was complex (so the output can keep its form).
pub fn read_complex(path: &Path, what: &str) -> Result<(NpyArray, bool), NpyError> {
    let array = load(path, Target::Complex { what })?;
    // The header was valid a moment ago; read it again for its dtype.
    let mut file = File::open(path).map_err(|e| err(path, format!("cannot read: {e}")))?;
    let (header, _) = read_header(&mut file).map_err(|e| err(path, e))?;
    Ok((array, header.dtype.is_complex()))
}

/// Encodes a float32 `(h, w, 2)` array as complex64 `(h, w)`.
pub fn encode_complex64(a: &NpyArray) -> Vec<u8> {
    assert!(
        a.dtype == Dtype::F32 && a.shape.len() == 3 && a.shape[2] == 2,
        "complex64 from float32 (h, w, 2)"
    );
    let values = a.data.chunks_exact(8).map(|c| {
        let f = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        npyz::num_complex::Complex32::new(f(&c[..4]), f(&c[4..]))
    });
    write_npy(&a.shape[..2], values)
}

/// Encodes an array as `.npy` (version 1.0, data 64-byte aligned).
pub fn encode(a: &NpyArray) -> Vec<u8> {
    let le4 = |c: &[u8]| [c[0], c[1], c[2], c[3]];
    match a.dtype {
        Dtype::U32 => write_npy(
            &a.shape,
            a.data.chunks_exact(4).map(|c| u32::from_le_bytes(le4(c))),
        ),
        Dtype::I32 => write_npy(
            &a.shape,
            a.data.chunks_exact(4).map(|c| i32::from_le_bytes(le4(c))),
        ),
        Dtype::F32 => write_npy(
            &a.shape,
            a.data.chunks_exact(4).map(|c| f32::from_le_bytes(le4(c))),
        ),
        Dtype::U8 => write_npy(&a.shape, a.data.iter().copied()),
    }
}

/// `.npy` bytes of `values` (row-major, `shape`) through npyz's writer, in `T`'s NumPy dtype.
fn write_npy<T: npyz::AutoSerialize>(shape: &[usize], values: impl Iterator<Item = T>) -> Vec<u8> {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut out = Vec::new();
    // Writing into memory cannot fail, and the callers' data has exactly `shape`'s elements
    // (NpyArray's invariant): an error here is a bug, not bad input.
    let mut writer = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(&shape)
        .writer(&mut out)
        .begin_nd()
        .expect(".npy header into memory");
    writer.extend(values).expect(".npy data into memory");
    writer.finish().expect("as many elements as the shape");
    out
}

#[cfg(test)]
mod tests;
