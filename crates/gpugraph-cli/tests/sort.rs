//! `gpugraph sort|argsort` with key types, directions and `--key-bits` on `.npy` files written
//! here, against a numpy-style stable sort computed in Rust (independent of the library's
//! oracle: comparisons on the decoded values, NaNs equal and last); bad inputs fail naming
//! the file and leave no output.

mod common;

use std::cmp::Ordering;
use std::path::Path;

use common::*;

fn run_ok(args: &[&str]) {
    assert_success(args, &gpugraph(args));
}

/// Fails with one `error:` line containing every needle and leaves `out` unwritten.
fn fails(args: &[&str], needles: &[&str], out: &str) {
    let o = gpugraph(args);
    assert!(!o.status.success(), "{args:?} succeeded");
    let err = our_stderr(&o);
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
    }
    assert!(!Path::new(out).exists(), "{args:?} wrote {out}");
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    U32,
    I32,
    F32,
}

impl Ty {
    fn descr(self) -> &'static str {
        match self {
            Ty::U32 => "<u4",
            Ty::I32 => "<i4",
            Ty::F32 => "<f4",
        }
    }
}

/// numpy's stable ascending order (`kind='stable'`), or the stable descending order with
/// NaNs still last (torch's `sort(descending=True, stable=True)`).
fn compare(ty: Ty, a: u32, b: u32, descending: bool) -> Ordering {
    let flip = |o: Ordering| if descending { o.reverse() } else { o };
    match ty {
        Ty::U32 => flip(a.cmp(&b)),
        Ty::I32 => flip((a as i32).cmp(&(b as i32))),
        Ty::F32 => {
            let (x, y) = (f32::from_bits(a), f32::from_bits(b));
            match (x.is_nan(), y.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                // total_cmp puts -0 before +0, as the contract does.
                _ => flip(x.total_cmp(&y)),
            }
        }
    }
}

fn stable_order(ty: Ty, keys: &[u32], descending: bool) -> Vec<u32> {
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_by(|&i, &j| compare(ty, keys[i as usize], keys[j as usize], descending));
    order
}

/// The sorted keys as written: NaNs canonical.
fn gathered(ty: Ty, keys: &[u32], order: &[u32]) -> Vec<u32> {
    order
        .iter()
        .map(|&i| keys[i as usize])
        .map(|k| {
            if ty == Ty::F32 && f32::from_bits(k).is_nan() {
                0x7fc0_0000
            } else {
                k
            }
        })
        .collect()
}

/// Deterministic keys mixing random bits, repeats and (for floats) specials.
fn keys_for(ty: Ty, n: usize, seed: u32) -> Vec<u32> {
    let specials = [
        0x7fc0_0000u32,
        0xffc0_0001,
        0x7f80_0000,
        0xff80_0000,
        0,
        0x8000_0000,
        1,
        0x8000_0001,
    ];
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            match (ty, i % 4) {
                (Ty::F32, 0) => specials[(x % 8) as usize],
                (_, 1) => x % 16,
                _ => x,
            }
        })
        .collect()
}

fn write(path: &str, ty: Ty, words: &[u32]) {
    std::fs::write(path, npy_bytes(ty.descr(), &[words.len()], words)).unwrap();
}

#[test]
fn every_dtype_and_direction_matches_a_stable_sort() {
    let dir = TempDir::new("sort-types");
    let (k, v, sk, sv, idx) = (
        dir.path("k.npy"),
        dir.path("v.npy"),
        dir.path("sk.npy"),
        dir.path("sv.npy"),
        dir.path("idx.npy"),
    );
    for (ti, ty) in [Ty::U32, Ty::I32, Ty::F32].into_iter().enumerate() {
        for &n in &[0usize, 1, 300, 5000] {
            for descending in [false, true] {
                let keys = keys_for(ty, n, (ti * 100 + n) as u32);
                write(&k, ty, &keys);
                // int32 values: their dtype travels with them.
                let values: Vec<u32> = (0..n as u32).map(|i| (i as i32 - 7) as u32).collect();
                write(&v, Ty::I32, &values);
                let mut args = vec![
                    "sort",
                    "--keys",
                    &k,
                    "--values",
                    &v,
                    "--out",
                    &sk,
                    "--values-out",
                    &sv,
                ];
                let mut argsort = vec!["argsort", "--keys", &k, "--out", &idx];
                if descending {
                    args.push("--descending");
                    argsort.push("--descending");
                }
                run_ok(&args);
                run_ok(&argsort);
                let order = stable_order(ty, &keys, descending);
                let label = format!("{ty:?} n={n} descending={descending}");
                let (descr, shape, got) = read_npy(&sk);
                assert_eq!((descr.as_str(), shape), (ty.descr(), vec![n]), "{label}");
                assert_eq!(got, gathered(ty, &keys, &order), "{label}: keys");
                let want_values: Vec<u32> = order.iter().map(|&i| values[i as usize]).collect();
                assert_eq!(
                    read_npy(&sv),
                    ("<i4".into(), vec![n], want_values),
                    "{label}"
                );
                assert_eq!(read_npy(&idx), ("<u4".into(), vec![n], order), "{label}");
            }
        }
    }
}

#[test]
fn wide_dtypes_sort_as_their_exact_32_bit_type_and_key_bits_work() {
    let dir = TempDir::new("sort-wide");
    let (k, out) = (dir.path("k.npy"), dir.path("o.npy"));
    // np.array([5, -3, 9]) is int64: sorted as int32.
    let body: Vec<u8> = [5i64, -3, 9].iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut file = npy_bytes("<i8", &[3], &[]);
    file.extend_from_slice(&body);
    std::fs::write(&k, file).unwrap();
    run_ok(&["sort", "--keys", &k, "--out", &out, "--descending"]);
    assert_eq!(
        read_npy(&out),
        ("<i4".into(), vec![3], vec![9, 5, (-3i32) as u32])
    );
    // float64 halves are exact float32.
    let body: Vec<u8> = [0.5f64, -1.25, f64::NAN, 3.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let mut file = npy_bytes("<f8", &[4], &[]);
    file.extend_from_slice(&body);
    std::fs::write(&k, file).unwrap();
    run_ok(&["argsort", "--keys", &k, "--out", &out, "--descending"]);
    assert_eq!(read_npy(&out).2, vec![3, 0, 1, 2]);
    // --key-bits with keys inside the promise, both types and directions.
    let keys: Vec<u32> = (0..3000u32).map(|i| (i * 7919) % 4096).collect();
    write(&k, Ty::U32, &keys);
    for descending in [false, true] {
        let mut args = vec!["argsort", "--keys", &k, "--out", &out, "--key-bits", "12"];
        if descending {
            args.push("--descending");
        }
        run_ok(&args);
        assert_eq!(read_npy(&out).2, stable_order(Ty::U32, &keys, descending));
    }
    let ikeys: Vec<u32> = keys.iter().map(|&x| (x as i32 - 2048) as u32).collect();
    write(&k, Ty::I32, &ikeys);
    run_ok(&["sort", "--keys", &k, "--out", &out, "--key-bits", "12"]);
    let order = stable_order(Ty::I32, &ikeys, false);
    assert_eq!(read_npy(&out).2, gathered(Ty::I32, &ikeys, &order));
}

#[test]
fn bad_inputs_are_named_errors_and_leave_no_output() {
    let dir = TempDir::new("sort-bad");
    let (k, v, out, vout) = (
        dir.path("k.npy"),
        dir.path("short.npy"),
        dir.path("o.npy"),
        dir.path("vo.npy"),
    );
    write(&k, Ty::U32, &[3, 300, 1]);
    write(&v, Ty::U32, &[1, 2]);
    let sort_kv = [
        "sort",
        "--keys",
        &k,
        "--values",
        &v,
        "--out",
        &out,
        "--values-out",
        &vout,
    ];
    fails(
        &sort_kv,
        &["short.npy: values have 2 rows but the keys", "have 3"],
        &out,
    );
    assert!(!Path::new(&vout).exists());
    fails(
        &["sort", "--keys", &k, "--out", &out, "--key-bits", "8"],
        &["k.npy: the key 300 at index 1 does not fit --key-bits 8 (uint32 keys below 2^8)"],
        &out,
    );
    fails(
        &["sort", "--keys", &k, "--out", &out, "--key-bits", "0"],
        &["--key-bits: key_bits 0 is outside 1..=32"],
        &out,
    );
    write(&k, Ty::I32, &[5, (-129i32) as u32]);
    fails(
        &["argsort", "--keys", &k, "--out", &out, "--key-bits", "8"],
        &["the key -129 at index 1 does not fit --key-bits 8 (int32 keys in [-2^7, 2^7))"],
        &out,
    );
    write(&k, Ty::F32, &[0, 1]);
    fails(
        &["sort", "--keys", &k, "--out", &out, "--key-bits", "31"],
        &["key_bits 31 with float32 keys"],
        &out,
    );
    std::fs::write(&k, npy_bytes("<f4", &[1, 2], &[0, 1])).unwrap();
    fails(
        &["argsort", "--keys", &k, "--out", &out],
        &["k.npy: keys must be a 1-D array, got shape [1, 2]"],
        &out,
    );
    std::fs::write(&k, npy_bytes("<c8", &[1], &[0, 0])).unwrap();
    fails(
        &["sort", "--keys", &k, "--out", &out],
        &["k.npy", "unsupported dtype '<c8'"],
        &out,
    );
    // float64 that float32 cannot hold exactly is refused, never rounded.
    let mut file = npy_bytes("<f8", &[1], &[]);
    file.extend_from_slice(&0.1f64.to_le_bytes());
    std::fs::write(&k, file).unwrap();
    fails(
        &["sort", "--keys", &k, "--out", &out],
        &["k.npy: the float64 value 0.1 at index 0 is not exactly a float32"],
        &out,
    );
}
