//! The built-in kernels on a real device against their CPU oracles: the plain variant over a
//! number and the COUNT=device variant over a live count agree on the live slots, and every
//! slot past the live count holds the spec's inert value (outputs are poisoned first, so an
//! unwritten slot fails).

mod common;

use std::collections::BTreeMap;

use common::*;
use gpugraph_procgen::cpu;
use gpugraph_procgen::{BindValue, Domain, KernelCall, Uniform};
use rand::{rngs::StdRng, Rng, SeedableRng};

fn uniforms(pairs: &[(&str, f64)]) -> BTreeMap<String, Uniform> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Uniform::Number(*v)))
        .collect()
}

#[test]
fn gather_plain_and_device_match_the_oracle_with_zeros_past_the_live_count() {
    let ctx = ctx();
    let mut rng = StdRng::seed_from_u64(1);
    let src: Vec<f32> = (0..50)
        .map(|_| rng.random::<f32>() * 100.0 - 50.0)
        .collect();
    for &n in SIZES {
        let index: Vec<i32> = (0..n).map(|_| rng.random_range(-5..60)).collect();
        for live_n in lives(n) {
            let mut c = cook(&ctx);
            let s = upload_f32(&mut c, &src);
            let i = upload_i32(&mut c, &index);
            let call = KernelCall {
                bind: bind(vec![
                    ("src", BindValue::Column(s)),
                    ("index", BindValue::Column(i)),
                ]),
                ..Default::default()
            };
            let (plain, dev, _) = plain_and_device(&mut c, "procgen/gather", &call, live_n, n);
            assert_eq!(dev.variant, "COUNT=device");
            assert_eq!(plain.variant, "COUNT=plain");
            let rec = run(c);
            let want = cpu::gather(&src, &index, live_n, n);
            assert_eq!(
                floats(&rec, &plain.columns["dst"]),
                want[..live_n],
                "plain n={n} live={live_n}"
            );
            assert_eq!(
                floats(&rec, &dev.columns["dst"]),
                want,
                "device n={n} live={live_n}"
            );
            assert!(dev.columns["dst"].live.is_some(), "dst is live: true");
        }
    }
}

#[test]
fn compact_lists_the_kept_slots_with_minus_one_inverse_and_padding() {
    let ctx = ctx();
    let mut rng = StdRng::seed_from_u64(2);
    for &n in SIZES {
        let keep: Vec<u32> = (0..n).map(|_| rng.random_range(0..3u32).min(1)).collect();
        for live_n in lives(n) {
            let mut c = cook(&ctx);
            let k = upload_u32(&mut c, &keep);
            let call = KernelCall {
                bind: bind(vec![("keep", BindValue::Column(k))]),
                ..Default::default()
            };
            let (plain, dev, _) = plain_and_device(&mut c, "procgen/compact", &call, live_n, n);
            let rec = run(c);
            let want = cpu::compact(&keep, live_n);
            for (out, cap) in [(&plain, live_n), (&dev, n)] {
                let kept = count(&rec, &out.counts["indices"]) as usize;
                assert_eq!(kept, want.len(), "n={n} live={live_n}");
                assert_eq!(out.counts["indices"].capacity, cap as u64);
                let idx = ints(&rec, &out.columns["indices"]);
                let mut got = idx[..kept].to_vec();
                got.sort_unstable();
                assert_eq!(got, want);
                assert!(
                    idx[kept..].iter().all(|&x| x == -1),
                    "indices past the kept ones"
                );
                let inv = ints(&rec, &out.columns["inverse"]);
                for (i, &v) in inv.iter().enumerate() {
                    if i < live_n && keep[i] != 0 {
                        assert_eq!(idx[v as usize], i as i32, "inverse of {i}");
                    } else {
                        assert_eq!(v, -1, "inverse of {i} (live {live_n})");
                    }
                }
                // The `_count` column is the counter word itself.
                assert_eq!(words(&rec, &out.columns["indices_count"]), [kept as u32]);
            }
        }
    }
}

#[test]
fn scan_matches_the_oracle_and_holds_the_total_past_the_live_count() {
    let ctx = ctx();
    let mut rng = StdRng::seed_from_u64(3);
    for &n in SIZES.iter().chain(&[1000usize]) {
        let src: Vec<i32> = (0..n).map(|_| rng.random_range(-100..100)).collect();
        for live_n in lives(n) {
            let mut c = cook(&ctx);
            let s = upload_i32(&mut c, &src);
            let call = KernelCall {
                bind: bind(vec![("src", BindValue::Column(s))]),
                ..Default::default()
            };
            let (plain, dev, _) = plain_and_device(&mut c, "procgen/scan", &call, live_n, n);
            let rec = run(c);
            let (want, total) = cpu::scan(&src, live_n, n);
            assert_eq!(
                ints(&rec, &plain.columns["dst"]),
                want[..live_n],
                "n={n} live={live_n}"
            );
            assert_eq!(ints(&rec, &dev.columns["dst"]), want, "n={n} live={live_n}");
            assert_eq!(ints(&rec, &plain.columns["total"]), [total]);
            assert_eq!(ints(&rec, &dev.columns["total"]), [total]);
        }
    }
}

#[test]
fn jump_rank_and_min_match_the_oracle_with_self_parents_past_the_live_count() {
    let ctx = ctx();
    let mut rng = StdRng::seed_from_u64(4);
    for &n in SIZES {
        let parent: Vec<i32> = (0..n as i32).map(|i| rng.random_range(-1..=i)).collect();
        let value: Vec<i32> = (0..n).map(|_| rng.random_range(-50..50)).collect();
        for (op, name) in [(cpu::JumpOp::Rank, "rank"), (cpu::JumpOp::Min, "min")] {
            for live_n in lives(n) {
                let mut c = cook(&ctx);
                let p = upload_i32(&mut c, &parent);
                let v = upload_i32(&mut c, &value);
                let call = KernelCall {
                    specialize: [("OP".to_string(), name.to_string())].into(),
                    bind: bind(vec![
                        ("parent", BindValue::Column(p)),
                        ("value", BindValue::Column(v)),
                    ]),
                    ..Default::default()
                };
                let (plain, dev, _) = plain_and_device(&mut c, "procgen/jump", &call, live_n, n);
                let rec = run(c);
                let (wp, wv) = cpu::jump(&parent, &value, live_n, n, op);
                assert_eq!(
                    ints(&rec, &plain.columns["parent_out"]),
                    wp[..live_n],
                    "{name} n={n} live={live_n}"
                );
                assert_eq!(
                    ints(&rec, &plain.columns["value_out"]),
                    wv[..live_n],
                    "{name} n={n} live={live_n}"
                );
                assert_eq!(
                    ints(&rec, &dev.columns["parent_out"]),
                    wp,
                    "{name} n={n} live={live_n}"
                );
                assert_eq!(
                    ints(&rec, &dev.columns["value_out"]),
                    wv,
                    "{name} n={n} live={live_n}"
                );
            }
        }
    }
}

/// Reads an expand's children as sorted (owner, local) pairs after checking the padding and
/// the offsets.
fn expand_children(
    rec: &gpugraph_procgen::Recording,
    out: &gpugraph_procgen::KernelOutputs,
    counts: &[u32],
    live_n: usize,
) -> (Vec<(i32, i32)>, u32) {
    let total = count(rec, &out.counts["owner"]);
    let cap = out.counts["owner"].capacity as usize;
    let owner = ints(rec, &out.columns["owner"]);
    let local = ints(rec, &out.columns["local_index"]);
    let written = (total as usize).min(cap);
    assert!(
        owner[written..].iter().all(|&x| x == -1),
        "owner past the sum"
    );
    assert!(
        local[written..].iter().all(|&x| x == -1),
        "local_index past the sum"
    );
    let offsets = words(rec, &out.columns["offsets"]);
    for i in 0..live_n {
        for t in 0..counts[i] as usize {
            let k = offsets[i] as usize + t;
            if k < cap {
                assert_eq!(
                    (owner[k], local[k]),
                    (i as i32, t as i32),
                    "child {t} of {i}"
                );
            }
        }
    }
    assert!(
        offsets[live_n..].iter().all(|&x| x == 0),
        "offsets past the live count"
    );
    let mut pairs: Vec<(i32, i32)> = owner[..written]
        .iter()
        .copied()
        .zip(local[..written].iter().copied())
        .collect();
    pairs.sort_unstable();
    (pairs, total)
}

#[test]
fn expand_lists_every_child_and_states_the_overflow_past_its_capacity() {
    let ctx = ctx();
    let mut rng = StdRng::seed_from_u64(5);
    for &n in SIZES {
        for (k, max_count) in [(3u32, 3u32), (2, 5)] {
            let counts: Vec<u32> = (0..n).map(|_| rng.random_range(0..=max_count)).collect();
            for live_n in lives(n) {
                let mut c = cook(&ctx);
                let cc = upload_u32(&mut c, &counts);
                let call = KernelCall {
                    bind: bind(vec![("counts", BindValue::Column(cc))]),
                    uniforms: uniforms(&[("k", f64::from(k))]),
                    ..Default::default()
                };
                let (plain, dev, _) = plain_and_device(&mut c, "procgen/expand", &call, live_n, n);
                let rec = run(c);
                let (want, total) = cpu::expand(&counts, live_n);
                for (out, cap) in [(&plain, live_n * k as usize), (&dev, n * k as usize)] {
                    assert_eq!(out.counts["owner"].capacity, cap as u64);
                    let (got, got_total) = expand_children(&rec, out, &counts, live_n);
                    // The count states the true sum even past the capacity (the overflow).
                    assert_eq!(u64::from(got_total), total, "n={n} live={live_n} k={k}");
                    if total as usize <= cap {
                        assert_eq!(got, want, "n={n} live={live_n} k={k}");
                        assert_eq!(
                            rec.checked_count("owner", &out.counts["owner"]).unwrap(),
                            total
                        );
                    } else {
                        // A node that states the bound refuses the count, naming the overflow.
                        let e = rec
                            .checked_count("owner", &out.counts["owner"])
                            .unwrap_err();
                        assert!(
                            matches!(e, gpugraph_procgen::ProcgenError::Overflow { overflow, .. } if overflow == total - cap as u64),
                            "{e}"
                        );
                        assert_eq!(got.len(), cap, "first capacity slots written");
                        assert!(got.iter().all(|p| want.binary_search(p).is_ok()));
                    }
                }
            }
        }
    }
}

#[test]
fn hash_hook_and_gather_list_every_close_pair_and_count_past_the_bound() {
    let ctx = ctx();
    let mut rng = StdRng::seed_from_u64(6);
    for &n in &[0usize, 1, 65, 300] {
        let pts: Vec<[f32; 3]> = (0..n)
            .map(|_| [0; 3].map(|_: i32| rng.random::<f32>() * 4.0 - 1.0))
            .collect();
        for live_n in lives(n) {
            for total in [1_000_000u64, 7] {
                let mut c = cook(&ctx);
                let p = upload_vec3(&mut c, &pts);
                let lc = live(&mut c, live_n as u32, n as u64);
                let hook_call = KernelCall {
                    bind: bind(vec![("points", BindValue::Column(p.clone()))]),
                    uniforms: uniforms(&[("cell", 1.0), ("table_size", 64.0)]),
                    ..Default::default()
                };
                let hook = c
                    .kernel(
                        &kernel("procgen/hash_hook"),
                        Domain::Live(lc.clone()),
                        &hook_call,
                    )
                    .unwrap();
                let gather_call = KernelCall {
                    bind: bind(vec![
                        ("queries", BindValue::Column(p.clone())),
                        ("points", BindValue::Column(p.clone())),
                        ("heads", BindValue::Column(hook.columns["heads"].clone())),
                        ("next", BindValue::Column(hook.columns["next"].clone())),
                        ("total", BindValue::Number(total)),
                    ]),
                    uniforms: uniforms(&[("cell", 1.0), ("radius", 0.5), ("table_size", 64.0)]),
                    ..Default::default()
                };
                let g = c
                    .kernel(
                        &kernel("procgen/hash_gather"),
                        Domain::Live(lc),
                        &gather_call,
                    )
                    .unwrap();
                let rec = run(c);
                let want = cpu::neighbour_pairs(&pts[..live_n], &pts[..live_n], 0.5);
                let listed = count(&rec, &g.counts["pairs"]) as usize;
                assert_eq!(listed, want.len(), "n={n} live={live_n}");
                let w = words(&rec, &g.columns["pairs"]);
                let written = listed.min(total as usize);
                let mut got: Vec<(u32, u32)> =
                    w[..2 * written].chunks(2).map(|p| (p[0], p[1])).collect();
                got.sort_unstable();
                if written == listed {
                    assert_eq!(got, want);
                } else {
                    assert!(got.iter().all(|p| want.binary_search(p).is_ok()));
                }
                // Past the count the items are left as allocated (here: the poison).
                assert!(w[2 * written..].iter().all(|&x| x == POISON));
                // hash_hook: a slot past the live count reads and writes nothing.
                let next = words(&rec, &hook.columns["next"]);
                assert!(
                    next[live_n..].iter().all(|&x| x == 0),
                    "next past the live count"
                );
            }
        }
    }
}
