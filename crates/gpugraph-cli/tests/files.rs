//! `gpugraph scan|compact|mask|sort|argsort` on .npy files written here, results compared with
//! values computed here; bad files are one-line errors naming the file.

mod common;

use common::*;

fn run_ok(args: &[&str]) -> String {
    let out = gpugraph(args);
    assert_success(args, &out);
    text(&out.stdout)
}

fn fails_naming(args: &[&str], needle: &str) {
    let out = gpugraph(args);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {}", our_stderr(&out));
    let err = our_stderr(&out);
    assert!(
        err.starts_with("error: ") && err.contains(needle) && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn scan_exclusive_inclusive_segmented_and_wrapping() {
    let dir = TempDir::new("scan");
    let (input, out) = (dir.path("in.npy"), dir.path("out.npy"));
    let values: Vec<u32> = (0..5000u32)
        .map(|i| i.wrapping_mul(0x9E37_79B9) | 0x8000_0000)
        .collect();
    write_u32(&input, &[values.len()], &values);
    run_ok(&["scan", "--in", &input, "--out", &out]);
    let mut acc = 0u32;
    let exclusive: Vec<u32> = values
        .iter()
        .map(|&v| {
            let e = acc;
            acc = acc.wrapping_add(v);
            e
        })
        .collect();
    assert_eq!(read_npy(&out), ("<u4".into(), vec![5000], exclusive));

    let flags: Vec<u32> = (0..5000u32).map(|i| (i % 777 == 5) as u32).collect();
    let seg = dir.path("seg.npy");
    write_u32(&seg, &[flags.len()], &flags);
    run_ok(&[
        "scan",
        "--in",
        &input,
        "--out",
        &out,
        "--inclusive",
        "--segments",
        &seg,
    ]);
    let mut acc = 0u32;
    let inclusive: Vec<u32> = values
        .iter()
        .zip(&flags)
        .map(|(&v, &f)| {
            acc = if f != 0 { v } else { acc.wrapping_add(v) };
            acc
        })
        .collect();
    assert_eq!(read_npy(&out).2, inclusive);
}

#[test]
fn compact_writes_exactly_the_survivors_and_prints_the_count() {
    let dir = TempDir::new("compact");
    let (v, f, out) = (dir.path("v.npy"), dir.path("f.npy"), dir.path("o.npy"));
    let values: Vec<u32> = (0..3000u32).map(|i| i * 3).collect();
    let flags: Vec<u32> = (0..3000u32)
        .map(|i| (i % 3 == 1) as u32 * (i % 5 + 1))
        .collect();
    write_u32(&v, &[3000], &values);
    write_u32(&f, &[3000], &flags);
    let stdout = run_ok(&["compact", "--in", &v, "--flags", &f, "--out", &out]);
    let want: Vec<u32> = values
        .iter()
        .zip(&flags)
        .filter(|(_, &f)| f != 0)
        .map(|(&v, _)| v)
        .collect();
    assert!(
        stdout.contains(&format!("{} of 3000", want.len())),
        "{stdout}"
    );
    assert_eq!(read_npy(&out), ("<u4".into(), vec![want.len()], want));
    let none = dir.path("none.npy");
    write_u32(&none, &[3000], &[0; 3000]);
    run_ok(&["compact", "--in", &v, "--flags", &none, "--out", &out]);
    assert_eq!(read_npy(&out).1, vec![0]);
}

#[test]
fn mask_sort_and_argsort() {
    let dir = TempDir::new("mask-sort");
    let (a, b, m) = (dir.path("a.npy"), dir.path("b.npy"), dir.path("m.npy"));
    write_u32(&a, &[6], &[0, 1, 7, 0, 9, 0]);
    write_u32(&b, &[6], &[0, 0, 1, 1, 5, 0]);
    run_ok(&["mask", "--op", "difference", &a, &b, "--out", &m]);
    assert_eq!(read_npy(&m).2, vec![0, 1, 0, 0, 0, 0]);
    run_ok(&["mask", "--op", "xor", &a, &b, "--out", &m]);
    assert_eq!(read_npy(&m).2, vec![0, 1, 0, 1, 0, 0]);

    let keys: Vec<u32> = (0..700u32).map(|i| (i * 7919) % 50).collect();
    let (k, sk, sv, idx) = (
        dir.path("k.npy"),
        dir.path("sk.npy"),
        dir.path("sv.npy"),
        dir.path("i.npy"),
    );
    write_u32(&k, &[keys.len()], &keys);
    let rows: Vec<u32> = (0..700).collect();
    write_u32(&dir.path("rows.npy"), &[700], &rows);
    run_ok(&[
        "sort",
        "--keys",
        &k,
        "--values",
        &dir.path("rows.npy"),
        "--out-keys",
        &sk,
        "--out-values",
        &sv,
    ]);
    let mut order: Vec<u32> = rows.clone();
    order.sort_by_key(|&i| keys[i as usize]); // stable
    assert_eq!(
        read_npy(&sk).2,
        order.iter().map(|&i| keys[i as usize]).collect::<Vec<_>>()
    );
    assert_eq!(read_npy(&sv).2, order);
    run_ok(&["argsort", "--keys", &k, "--out", &idx]);
    assert_eq!(read_npy(&idx).2, order);
}

#[test]
fn bad_files_are_named_errors() {
    let dir = TempDir::new("bad-files");
    let (f32s, short, ok, out) = (
        dir.path("f.npy"),
        dir.path("s.npy"),
        dir.path("ok.npy"),
        dir.path("o.npy"),
    );
    write_f32(&f32s, &[3], &[1.0, 2.0, 3.0]);
    write_u32(&short, &[2], &[1, 2]);
    write_u32(&ok, &[3], &[1, 2, 3]);
    fails_naming(
        &["scan", "--in", &f32s, "--out", &out],
        "f.npy: scan input must be a 1-D uint32 array, got float32",
    );
    fails_naming(
        &["compact", "--in", &ok, "--flags", &short, "--out", &out],
        "s.npy: flags have 2 rows",
    );
    fails_naming(
        &["mask", "--op", "and", &ok, &short, "--out", &out],
        "masks must be source-aligned",
    );
    fails_naming(
        &[
            "sort",
            "--keys",
            &dir.path("missing.npy"),
            "--out-keys",
            &out,
        ],
        "missing.npy: cannot read",
    );
    std::fs::write(dir.path("junk.npy"), b"not numpy").unwrap();
    fails_naming(
        &["argsort", "--keys", &dir.path("junk.npy"), "--out", &out],
        "not an .npy file",
    );
}
