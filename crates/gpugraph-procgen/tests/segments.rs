//! The kernel variants whose semantics the spec's inert-value table fixes beyond the plain
//! COUNT ones: segmented reduce and scan (SEGMENTS=plain|device: the last segment ends at the
//! live count, a segment past segment_count is not scanned or written), expand with
//! ELEMENTS=device (counts and offsets hold element_count live elements whatever the dispatch
//! covers) and scatter's fold pass (an index past the live count reaches no place). Each
//! against its CPU oracle on random inputs at boundary sizes, plain and device variants, with
//! outputs poisoned so an unwritten slot shows.

mod common;

use std::collections::BTreeMap;

use common::*;
use gpugraph_procgen::cpu::{self, Fold};
use gpugraph_procgen::{BindValue, CountExpr, Domain, KernelCall, Uniform};
use rand::{rngs::StdRng, Rng, SeedableRng};

fn spec(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Ascending starts of `s` segments over `n` slots (some empty, some past `n`, the first not
/// always 0).
fn random_starts(rng: &mut StdRng, s: usize, n: usize) -> Vec<i32> {
    let mut v: Vec<i32> = (0..s).map(|_| rng.random_range(0..=n as i32 + 2)).collect();
    v.sort_unstable();
    if rng.random_bool(0.5) {
        if let Some(f) = v.first_mut() {
            *f = 0;
        }
    }
    v
}

#[test]
fn segmented_reduce_ends_the_last_segment_at_the_live_count_and_writes_no_dead_segment() {
    let ctx = ctx();
    let mut rng = StdRng::seed_from_u64(11);
    for &n in &[0usize, 1, 63, 65, 300] {
        let src: Vec<f32> = (0..n)
            .map(|_| rng.random_range(-64..64) as f32 * 0.5)
            .collect();
        for &s in &[0usize, 1, 5, 300] {
            let starts = random_starts(&mut rng, s, n);
            for live_n in lives(n) {
                for (op, name) in [(Fold::Add, "sum"), (Fold::Min, "min"), (Fold::Max, "max")] {
                    let seg_live = rng.random_range(0..=s + 1);
                    let mut c = cook(&ctx);
                    let sc = upload_f32(&mut c, &src);
                    let st = upload_i32(&mut c, &starts);
                    let mut call = KernelCall {
                        specialize: spec(&[("OP", name)]),
                        bind: bind(vec![
                            ("src", BindValue::Column(sc)),
                            ("starts", BindValue::Column(st)),
                        ]),
                        ..Default::default()
                    };
                    let (plain, dev, lc) =
                        plain_and_device(&mut c, "procgen/reduce", &call, live_n, n);
                    // SEGMENTS=device: segment_count bound to a count the device holds.
                    let sl = live(&mut c, seg_live as u32, s as u64);
                    call.specialize.insert("SEGMENTS".into(), "device".into());
                    call.bind.insert(
                        "segment_count".into(),
                        BindValue::Live(CountExpr::Count(sl)),
                    );
                    let segd = c
                        .kernel(&kernel("procgen/reduce"), Domain::Live(lc), &call)
                        .unwrap();
                    assert_eq!(
                        segd.variant,
                        format!("COUNT=device OP={name} SEGMENTS=device")
                    );
                    let rec = run(c);
                    let all = cpu::reduce(&src, &starts, s, live_n, op);
                    for out in [&plain, &dev] {
                        let got = floats(&rec, &out.columns["out"]);
                        assert_eq!(got, all, "{name} n={n} s={s} live={live_n}");
                    }
                    let want = cpu::reduce(&src, &starts, seg_live, live_n, op);
                    let w = words(&rec, &segd.columns["out"]);
                    let got: Vec<f32> =
                        w[..want.len()].iter().map(|&b| f32::from_bits(b)).collect();
                    assert_eq!(got, want, "{name} n={n} s={s} live={live_n} seg={seg_live}");
                    assert!(
                        w[want.len()..].iter().all(|&b| b == POISON),
                        "a segment past segment_count is not written ({name} n={n} s={s} seg={seg_live})"
                    );
                }
            }
        }
    }
}

#[test]
fn segmented_scan_scans_each_live_segment_and_nothing_past_segment_count() {
    let ctx = ctx();
    let mut rng = StdRng::seed_from_u64(12);
    for &n in &[0usize, 1, 64, 65, 300] {
        let src: Vec<i32> = (0..n).map(|_| rng.random_range(-100..100)).collect();
        for &s in &[0usize, 1, 4, 70] {
            let starts = random_starts(&mut rng, s, n);
            for live_n in lives(n) {
                let seg_live = rng.random_range(0..=s + 1);
                let mut c = cook(&ctx);
                let sc = upload_i32(&mut c, &src);
                let st = upload_i32(&mut c, &starts);
                let mut call = KernelCall {
                    specialize: spec(&[("SEGMENTS", "plain")]),
                    bind: bind(vec![
                        ("src", BindValue::Column(sc)),
                        ("starts", BindValue::Column(st)),
                    ]),
                    ..Default::default()
                };
                let (plain, dev, lc) = plain_and_device(&mut c, "procgen/scan", &call, live_n, n);
                call.specialize.insert("SEGMENTS".into(), "device".into());
                // A number binds its one-word column where the shader reads a count word.
                call.bind
                    .insert("segment_count".into(), BindValue::Number(seg_live as u64));
                let segd = c
                    .kernel(&kernel("procgen/scan"), Domain::Live(lc), &call)
                    .unwrap();
                let rec = run(c);
                let check = |out: &gpugraph_procgen::KernelOutputs, segs: usize, n: usize| {
                    let (want, totals) = cpu::segmented_scan(&src, &starts, segs, live_n, n);
                    let got = ints(&rec, &out.columns["dst"]);
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        match w {
                            Some(w) => {
                                assert_eq!(g, w, "dst[{i}] n={n} s={s} live={live_n} segs={segs}")
                            }
                            None => assert_eq!(*g as u32, POISON, "dst[{i}] is in no segment"),
                        }
                    }
                    let t = words(&rec, &out.columns["totals"]);
                    let got: Vec<i32> = t[..totals.len()].iter().map(|&b| b as i32).collect();
                    assert_eq!(got, totals, "totals n={n} s={s} live={live_n} segs={segs}");
                    assert!(
                        t[totals.len()..].iter().all(|&b| b == POISON),
                        "a segment past segment_count is not written"
                    );
                };
                check(&plain, s, live_n);
                check(&dev, s, n);
                check(&segd, seg_live, n);
            }
        }
    }
}

#[test]
fn expand_over_device_elements_holds_element_count_whatever_the_dispatch_covers() {
    let ctx = ctx();
    let mut rng = StdRng::seed_from_u64(13);
    for &cap in &[1usize, 63, 65, 300] {
        let k = 3u32;
        let counts: Vec<u32> = (0..cap).map(|_| rng.random_range(0..=k)).collect();
        for elements in lives(cap) {
            // Fewer invocations than elements, about as many, more.
            for &dispatch in &[1u64, 7, 64, 500] {
                for (variant, fixed) in [("column", false), ("fixed", true)] {
                    let mut c = cook(&ctx);
                    let cc = upload_u32(&mut c, &counts);
                    let ec = live(&mut c, elements as u32, cap as u64);
                    let mut b = vec![(
                        "element_count",
                        BindValue::Live(CountExpr::Count(ec.clone())),
                    )];
                    if !fixed {
                        b.push(("counts", BindValue::Column(cc)));
                    }
                    let call = KernelCall {
                        specialize: spec(&[("ELEMENTS", "device"), ("COUNTS", variant)]),
                        bind: bind(b),
                        uniforms: [("k".to_string(), Uniform::Number(f64::from(k)))].into(),
                        ..Default::default()
                    };
                    let out = c
                        .kernel(&kernel("procgen/expand"), Domain::Number(dispatch), &call)
                        .unwrap();
                    // Over a live domain too: the domain only sizes the dispatch.
                    let dl = live(&mut c, 0, dispatch);
                    let out_dev = c
                        .kernel(&kernel("procgen/expand"), Domain::Live(dl), &call)
                        .unwrap();
                    assert_eq!(
                        out_dev.variant,
                        format!("COUNT=device COUNTS={variant} ELEMENTS=device")
                    );
                    let rec = run(c);
                    let per: Vec<u32> = if fixed { vec![k; cap] } else { counts.clone() };
                    let (want, total) = cpu::expand(&per, elements);
                    for o in [&out, &out_dev] {
                        assert_eq!(o.columns["offsets"].capacity, cap as u64);
                        assert_eq!(o.columns["offsets"].live.as_ref(), Some(&ec));
                        assert_eq!(o.counts["owner"].capacity, cap as u64 * u64::from(k));
                        let offsets = words(&rec, &o.columns["offsets"]);
                        assert!(
                            offsets[elements..].iter().all(|&x| x == 0),
                            "offsets past element_count (cap={cap} e={elements} d={dispatch})"
                        );
                        assert_eq!(u64::from(count(&rec, &o.counts["owner"])), total);
                        let owner = ints(&rec, &o.columns["owner"]);
                        let local = ints(&rec, &o.columns["local_index"]);
                        let t = total as usize;
                        assert!(owner[t..].iter().all(|&x| x == -1));
                        assert!(local[t..].iter().all(|&x| x == -1));
                        for i in 0..elements {
                            for j in 0..per[i] as usize {
                                let at = offsets[i] as usize + j;
                                assert_eq!((owner[at], local[at]), (i as i32, j as i32));
                            }
                        }
                        let mut got: Vec<(i32, i32)> = owner[..t]
                            .iter()
                            .copied()
                            .zip(local[..t].iter().copied())
                            .collect();
                        got.sort_unstable();
                        assert_eq!(got, want, "cap={cap} e={elements} d={dispatch} {variant}");
                    }
                }
            }
        }
    }
}

#[test]
fn scatter_folds_live_slots_only_and_indices_outside_reach_no_place() {
    let ctx = ctx();
    let mut rng = StdRng::seed_from_u64(14);
    for &n in SIZES {
        let places = 17usize;
        let src: Vec<i32> = (0..n).map(|_| rng.random_range(-1000..1000)).collect();
        let index: Vec<i32> = (0..n)
            .map(|_| rng.random_range(-3..places as i32 + 3))
            .collect();
        let dst0: Vec<i32> = (0..places).map(|_| rng.random_range(-50..50)).collect();
        for live_n in lives(n) {
            for (op, name) in [(Fold::Add, "add"), (Fold::Min, "min"), (Fold::Max, "max")] {
                let mut c = cook(&ctx);
                let s = upload_i32(&mut c, &src);
                let i = upload_i32(&mut c, &index);
                let d = upload_i32(&mut c, &dst0);
                let call = KernelCall {
                    specialize: spec(&[("OP", name)]),
                    bind: bind(vec![
                        ("src", BindValue::Column(s)),
                        ("index", BindValue::Column(i)),
                        ("dst", BindValue::Column(d.clone())),
                    ]),
                    ..Default::default()
                };
                let (plain, dev, _) = plain_and_device(&mut c, "procgen/scatter", &call, live_n, n);
                let rec = run(c);
                let want = cpu::scatter(&src, &index, &dst0, live_n, op);
                assert_eq!(
                    ints(&rec, &plain.columns["dst"]),
                    want,
                    "{name} n={n} live={live_n}"
                );
                assert_eq!(
                    ints(&rec, &dev.columns["dst"]),
                    want,
                    "{name} n={n} live={live_n}"
                );
                // Written as a copy: the bound column is as it was.
                assert_eq!(ints(&rec, &d), dst0);
            }
        }
    }
}

#[test]
fn a_shrinking_segment_count_is_read_back_for_its_binding() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let src: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let starts = [0, 2, 5, 7];
    let sc = upload_f32(&mut c, &src);
    let st = upload_i32(&mut c, &starts);
    let segs = live(&mut c, 4, 4);
    let call = KernelCall {
        name: Some("sums".into()),
        specialize: spec(&[("SEGMENTS", "device")]),
        bind: bind(vec![
            ("src", BindValue::Column(sc)),
            ("starts", BindValue::Column(st)),
            (
                "segment_count",
                BindValue::Live(CountExpr::Sub(
                    Box::new(CountExpr::Named(
                        "segs".into(),
                        Box::new(CountExpr::Count(segs)),
                    )),
                    Box::new(CountExpr::Number(1)),
                )),
            ),
        ]),
        ..Default::default()
    };
    let out = c
        .kernel(&kernel("procgen/reduce"), Domain::Number(10), &call)
        .unwrap();
    let waits: Vec<_> = c.plan_waits().cloned().collect();
    assert_eq!(waits.len(), 1);
    assert_eq!((waits[0].expr.as_str(), waits[0].value), ("(segs - 1)", 3));
    assert_eq!(waits[0].node, format!("`segment_count` of {}", out.node));
    assert!(out.node.starts_with("sums#"), "{}", out.node);
    let rec = run(c);
    let w = words(&rec, &out.columns["out"]);
    // Three live segments: [0, 2), [2, 5) and the last, [5, 10), ends at the live count.
    assert_eq!(
        w[..3]
            .iter()
            .map(|&b| f32::from_bits(b))
            .collect::<Vec<_>>(),
        [1.0, 9.0, 35.0]
    );
    assert_eq!(w[3], POISON);
}
