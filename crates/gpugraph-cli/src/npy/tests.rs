use super::*;

/// Version 1.0 bytes with a hand-written header (any descr, shape text) and body.
fn npy(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
    let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}\n");
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
