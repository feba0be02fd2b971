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
mod tests {
    use super::*;

    /// Version 1.0 bytes with a hand-written header (any descr, shape text) and body.
    fn npy(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
        let header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}\n");
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(body);
        out
    }

    fn le<T: Copy, const N: usize>(values: &[T], bytes: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        values.iter().flat_map(|&v| bytes(v)).collect()
    }

    fn parsed(bytes: &[u8]) -> Result<NpyArray, String> {
        parse(Path::new("x.npy"), bytes).map_err(|e| e.to_string())
    }

    fn as_u32(bytes: &[u8]) -> Result<Vec<u32>, String> {
        decode(
            Path::new("k.npy"),
            &mut &bytes[..],
            Some(bytes.len() as u64),
            Target::U32 { what: "sort keys" },
        )
        .map(|a| a.words())
        .map_err(|e| e.to_string())
    }

    #[test]
    fn complex_fields_read_as_float32_pairs() {
        let cx = |bytes: &[u8]| {
            let target = Target::Complex { what: "--in" };
            decode(
                Path::new("z.npy"),
                &mut &bytes[..],
                Some(bytes.len() as u64),
                target,
            )
            .map_err(|e| e.to_string())
        };
        let body = le(&[1.0f32, -2.0, 0.5, 4.0], f32::to_le_bytes);
        let a = cx(&npy("<c8", "(1, 2)", &body)).unwrap();
        assert_eq!((a.dtype, a.shape.clone()), (Dtype::F32, vec![1, 2, 2]));
        assert_eq!(a.data, body);
        assert_eq!(cx(&npy("<f4", "(1, 2, 2)", &body)).unwrap(), a);
        assert_eq!(cx(&encode_complex64(&a)).unwrap(), a);
        let wide = le(&[1.0f64, -2.0, 0.5, 4.0], f64::to_le_bytes);
        assert_eq!(cx(&npy("<c16", "(2, 1)", &wide)).unwrap().data, body);
        let ints = le(&[1i32, 2, 3, 4], i32::to_le_bytes);
        let e = cx(&npy("<i4", "(2, 2)", &ints)).unwrap_err();
        assert!(
            e.contains("z.npy: --in must be complex64 with shape (h, w) or float32 with shape (h, w, 2), got int32 with shape [2, 2]"),
            "{e}"
        );
        let e = cx(&npy("<f4", "(2, 2)", &body)).unwrap_err();
        assert!(e.contains("got float32 with shape [2, 2]"), "{e}");
        let e = cx(&npy("<c8", "(2, 2)", &body)).unwrap_err();
        assert!(
            e.contains("data has 16 bytes but shape [2, 2] of complex64 needs 32"),
            "{e}"
        );
        let e = parsed(&npy("<c8", "(2,)", &body)).unwrap_err();
        assert!(e.contains("unsupported dtype '<c8' here"), "{e}");
    }

    #[test]
    fn round_trip_and_errors_name_the_file() {
        let a = NpyArray::from_u32(&[1, 2, 3, 0xFFFF_FFFF]);
        let bytes = encode(&a);
        assert_eq!(
            bytes.len() % 64,
            16,
            "header padded so data starts 64-aligned"
        );
        assert_eq!(parsed(&bytes).unwrap(), a);
        let m = NpyArray {
            dtype: Dtype::F32,
            shape: vec![2, 3],
            data: (0..24).collect(),
        };
        assert_eq!(parsed(&encode(&m)).unwrap(), m);
        let e = parsed(b"hello world").unwrap_err();
        assert!(e.starts_with("x.npy: not an .npy file"), "{e}");
        let e = parsed(&bytes[..bytes.len() - 1]).unwrap_err();
        assert!(
            e.contains("data has 15 bytes but shape [4] of uint32 needs 16"),
            "{e}"
        );
        let mut long = bytes.clone();
        long.push(0);
        assert!(parsed(&long).unwrap_err().contains("data has 17 bytes"));
        for cut in [0, 5, 9, 20] {
            assert!(parsed(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn numpy_defaults_convert_when_exact() {
        // np.array([5, 3, 9]) is int64; np.random.rand is float64; masks are bool.
        let i64s = npy("<i8", "(3,)", &le(&[5i64, -3, 9], i64::to_le_bytes));
        let a = parsed(&i64s).unwrap();
        assert_eq!(
            (a.dtype, a.words()),
            (Dtype::I32, vec![5, (-3i32) as u32, 9])
        );
        let u64s = npy(
            "<u8",
            "(2,)",
            &le(&[0u64, u32::MAX as u64], u64::to_le_bytes),
        );
        assert_eq!(as_u32(&u64s).unwrap(), vec![0, u32::MAX]);
        let f64s = [0.5, -0.0, 1e30f32 as f64, f64::INFINITY, f64::NAN, -2.0];
        let a = parsed(&npy("<f8", "(3, 2)", &le(&f64s, f64::to_le_bytes))).unwrap();
        assert_eq!((a.dtype, a.shape.clone()), (Dtype::F32, vec![3, 2]));
        let back: Vec<f64> = a
            .words()
            .iter()
            .map(|&w| f32::from_bits(w).into())
            .collect();
        assert_eq!(back[..4], f64s[..4]);
        assert!(back[4].is_nan() && back[5] == -2.0);
        assert!(back[1].is_sign_negative(), "-0.0 keeps its sign");
        let mask = npy("|b1", "(4,)", &[1, 0, 0, 1]);
        assert_eq!(as_u32(&mask).unwrap(), vec![1, 0, 0, 1]);
        assert_eq!(parsed(&mask).unwrap().dtype, Dtype::U32);
        let small = npy("<i2", "(2,)", &le(&[7i16, 300], i16::to_le_bytes));
        assert_eq!(as_u32(&small).unwrap(), vec![7, 300]);
        let bytes = npy("|u1", "(2,)", &[255, 0]);
        assert_eq!(as_u32(&bytes).unwrap(), vec![255, 0]);
        let nonneg = npy("<i4", "(2,)", &le(&[0i32, i32::MAX], i32::to_le_bytes));
        assert_eq!(as_u32(&nonneg).unwrap(), vec![0, i32::MAX as u32]);
        assert_eq!(as_u32(&npy("<i8", "(0,)", &[])).unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn inexact_values_are_named_with_the_astype_to_use() {
        let keys = npy("<i8", "(3,)", &le(&[1i64, -1, -2], i64::to_le_bytes));
        let e = as_u32(&keys).unwrap_err();
        assert!(
            e.contains("k.npy: sort keys need uint32, but the int64 value -1 at index 1 is outside uint32's range 0..=4294967295")
                && e.contains("a.astype(np.uint32) would wrap it to 4294967295"),
            "{e}"
        );
        let big = npy("<u8", "(2,)", &le(&[1u64, 1 << 32], u64::to_le_bytes));
        let e = as_u32(&big).unwrap_err();
        assert!(
            e.contains("value 4294967296 at index 1") && e.contains("wrap it to 0"),
            "{e}"
        );
        let wide = npy(
            "<i8",
            "(2, 2)",
            &le(&[0i64, 1, 2, 3_000_000_000], i64::to_le_bytes),
        );
        let e = parsed(&wide).unwrap_err();
        assert!(
            e.contains("the int64 value 3000000000 at row 1, column 1 is outside int32's range")
                && e.contains("a.astype(np.uint32), which holds it"),
            "{e}"
        );
        let f = npy("<f8", "(2,)", &le(&[0.5f64, 0.1], f64::to_le_bytes));
        let e = parsed(&f).unwrap_err();
        assert!(
            e.contains("the float64 value 0.1 at index 1 is not exactly a float32 (it would become 0.10000000149011612)")
                && e.contains("a.astype(np.float32)"),
            "{e}"
        );
        for v in [1e300f64, 1e-310, f64::MAX] {
            let e = parsed(&npy("<f8", "(1,)", &v.to_le_bytes())).unwrap_err();
            assert!(e.contains(&format!("{v:?} at index 0")), "{e}");
        }
        let e = as_u32(&npy("<f4", "(1,)", &1f32.to_le_bytes())).unwrap_err();
        assert!(
            e.contains("sort keys must be a 1-D uint32 array, got float32 with shape [1]; floats are not converted"),
            "{e}"
        );
        let e = as_u32(&npy("<u4", "(1, 1)", &[0; 4])).unwrap_err();
        assert!(
            e.contains("must be a 1-D uint32 array, got uint32 with shape [1, 1]"),
            "{e}"
        );
        let e = parsed(&npy("<u4", "()", &[0; 4])).unwrap_err();
        assert!(e.contains("shape [] must be (n,) or (n, k)"), "{e}");
    }

    #[test]
    fn header_problems_reach_the_caller() {
        let e = parsed(&npy("<f2", "(2,)", &[0; 4])).unwrap_err();
        assert!(e.contains("x.npy: unsupported dtype '<f2'"), "{e}");
        let mut fortran = npy("<u4", "(1,)", &[0; 4]);
        let i = fortran.windows(5).position(|w| w == b"False").unwrap();
        fortran[i..i + 5].copy_from_slice(b"1    ");
        let e = parsed(&fortran).unwrap_err();
        assert!(
            e.contains("'fortran_order' must be True or False, got 1"),
            "{e}"
        );
        let mut v2 = npy("<u4", "(1,)", &[7, 0, 0, 0]);
        v2[6] = 2;
        v2.insert(10, 0);
        v2.insert(10, 0);
        assert_eq!(parsed(&v2).unwrap().words(), vec![7]);
        let mut v4 = v2.clone();
        v4[6] = 4;
        assert!(parsed(&v4)
            .unwrap_err()
            .contains("unsupported .npy version 4.0"));
        let mut huge = b"\x93NUMPY\x02\x00".to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(parsed(&huge)
            .unwrap_err()
            .contains("header of 4294967295 bytes"));
    }

    /// What npyz alone would accept or panic on is refused by name; what NumPy reads (either
    /// byte order) is read.
    #[test]
    fn header_glue_over_npyz() {
        let raw = |dict: &str, body: &[u8]| {
            let header = format!("{dict}\n");
            let mut out = b"\x93NUMPY\x01\x00".to_vec();
            out.extend_from_slice(&(header.len() as u16).to_le_bytes());
            out.extend_from_slice(header.as_bytes());
            out.extend_from_slice(body);
            out
        };
        for (dict, needle) in [
            (
                "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
                "unexpected key \"x\"",
            ),
            (
                "{'descr': '<u4', 'fortran_order': True, 'shape': (1,)}",
                "Fortran-ordered arrays are not supported",
            ),
            (
                "{'descr': '<u4', 'fortran_order': False}",
                "header has no 'shape'",
            ),
            (
                "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), 'shape': (1,)}",
                "repeats the key 'shape'",
            ),
            (
                "{'descr': '<u4', 'fortran_order': False, 'shape': (-1,)}",
                "dimension -1, which is not a size",
            ),
            // The product overflows u64: npyz would multiply it unchecked.
            (
                "{'descr': '<u4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}",
                "is too large",
            ),
            (
                "{'descr': '<U3', 'fortran_order': False, 'shape': (1,)}",
                "unsupported dtype '<U3' (strings",
            ),
            (
                "{'descr': [('a', '<u4'), ('b', '<f8')], 'fortran_order': False, 'shape': (1,)}",
                "structured dtype with 2 field(s)",
            ),
            ("[1, 2]", "header is not a dict"),
        ] {
            let e = parsed(&raw(dict, &[0; 4])).unwrap_err();
            assert!(e.contains(needle), "{dict}: {e}");
        }
        // Big-endian integers and complex pairs read as their values.
        let be = raw(
            "{'descr': '>i8', 'fortran_order': False, 'shape': (2,)}",
            &[(-5i64).to_be_bytes(), 7i64.to_be_bytes()].concat(),
        );
        assert_eq!(parsed(&be).unwrap().words(), vec![(-5i32) as u32, 7]);
        let cx = raw(
            "{'descr': '>c8', 'fortran_order': False, 'shape': (1, 1)}",
            &[1.5f32.to_be_bytes(), (-2.0f32).to_be_bytes()].concat(),
        );
        let a = decode(
            Path::new("z.npy"),
            &mut &cx[..],
            Some(cx.len() as u64),
            Target::Complex { what: "--in" },
        )
        .unwrap();
        let pair: Vec<f32> = a.words().into_iter().map(f32::from_bits).collect();
        assert_eq!(pair, vec![1.5, -2.0]);
        // What npyz writes, npyz-free readers (NumPy's layout) and this one read back.
        let bytes = encode_complex64(&a);
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(bytes.len() % 64, 8, "data starts 64-aligned");
    }

    /// A reader that counts what was taken from it and never ends.
    struct Endless<'a> {
        head: &'a [u8],
        taken: usize,
    }

    impl Read for Endless<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(1 << 16);
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = self.head.get(self.taken + i).copied().unwrap_or(0);
            }
            self.taken += n;
            Ok(n)
        }
    }

    #[test]
    fn the_header_is_checked_before_the_body_is_read() {
        // A regular file whose header claims a terabyte: refused by its length, body unread.
        let head = npy("<u4", "(274877906944,)", &[]);
        let mut r = Endless {
            head: &head,
            taken: 0,
        };
        let e = decode(Path::new("big.npy"), &mut r, Some(1000), Target::Natural).unwrap_err();
        assert!(e.to_string().contains("needs 1099511627776"), "{e}");
        assert!(r.taken <= 1 << 16, "read {} bytes", r.taken);
        // A stream of unknown length: read up to the shape, then one byte more, then refused.
        let head = npy("<u4", "(1000,)", &[]);
        let mut r = Endless {
            head: &head,
            taken: 0,
        };
        let e = decode(Path::new("pipe"), &mut r, None, Target::Natural).unwrap_err();
        assert!(
            e.to_string()
                .contains("more than 4000 bytes but shape [1000]"),
            "{e}"
        );
        assert!(r.taken < 1 << 18, "read {} bytes", r.taken);
        // /dev/zero: no magic, refused at once.
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("not an .npy file"), "{e}");
        // A stream that ends early says how much came.
        let short = npy("<u4", "(3,)", &[0; 6]);
        let e = decode(Path::new("s"), &mut &short[..], None, Target::Natural).unwrap_err();
        assert!(
            e.to_string()
                .contains("data has only 6 bytes but shape [3] of uint32 needs 12"),
            "{e}"
        );
    }

    #[test]
    fn long_arrays_convert_across_chunks() {
        let n = CHUNK_ELEMENTS * 2 + 3;
        let values: Vec<i64> = (0..n as i64).collect();
        let a = parsed(&npy(
            "<i8",
            &format!("({n},)"),
            &le(&values, i64::to_le_bytes),
        ))
        .unwrap();
        assert_eq!(a.words(), (0..n as u32).collect::<Vec<_>>());
        let mut bad = values.clone();
        bad[CHUNK_ELEMENTS + 5] = -1;
        let e = as_u32(&npy("<i8", &format!("({n},)"), &le(&bad, i64::to_le_bytes))).unwrap_err();
        assert!(
            e.contains(&format!("-1 at index {}", CHUNK_ELEMENTS + 5)),
            "{e}"
        );
    }
}
