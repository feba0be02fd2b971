//! Sort options on the GPU vs the CPU oracle (`cpu::sort_typed`), with poisoned outputs:
//! every key type (uint32, int32, float32) x direction x payload (keys, pairs, argsort) on
//! random, sorted, reversed, all-equal, few-unique and adversarial keys around the local and
//! radix-tile boundaries; float specials (±0, ±inf, NaNs of several payloads and signs,
//! subnormals); `key_bits`; and named errors for bad options and formats.

mod common;

use common::sort::*;
use common::*;
use gpugraph_command::wgpu;
use gpugraph_command::{
    BufferDescriptor, CommandGraph, DataViewDescriptor, VectorFormat, VectorView,
};
use gpugraph_gpgpu::sort::cpu;
use gpugraph_gpgpu::{
    AlgorithmError, BatchSort, KeyType, Sort, SortOptions, SortOrder, SortPayload, SortPolicy,
};
use rand::Rng;

const TYPES: [KeyType; 3] = [KeyType::Uint32, KeyType::Int32, KeyType::Float32];
const ORDERS: [SortOrder; 2] = [SortOrder::Ascending, SortOrder::Descending];

#[derive(Clone, Copy, Debug)]
enum Dist {
    Uniform,
    Sorted,
    Reversed,
    AllEqual,
    FewUnique,
    /// All keys share their top 24 bits: only the lowest digit varies.
    SharedTop24,
    /// Float specials (for other types: their extreme values).
    Specials,
}

const DISTS: [Dist; 7] = [
    Dist::Uniform,
    Dist::Sorted,
    Dist::Reversed,
    Dist::AllEqual,
    Dist::FewUnique,
    Dist::SharedTop24,
    Dist::Specials,
];

/// Float bit patterns the total order must place: NaNs of both signs and several payloads,
/// infinities, signed zeros, subnormals, normals.
const FLOAT_SPECIALS: [u32; 14] = [
    0x7fc0_0000, // quiet NaN
    0xffc0_0000, // negative quiet NaN
    0x7f80_0001, // signalling NaN, payload 1
    0xff80_0123, // negative NaN with payload
    0x7fff_ffff, // largest NaN bits
    0x7f80_0000, // +inf
    0xff80_0000, // -inf
    0x0000_0000, // +0
    0x8000_0000, // -0
    0x0000_0001, // smallest subnormal
    0x8000_0001, // its negative
    0x007f_ffff, // largest subnormal
    0x3f80_0000, // 1.0
    0xbf80_0000, // -1.0
];

fn keys_of(t: KeyType, dist: Dist, n: usize, seed: u64) -> Vec<u32> {
    let mut r = rng(seed);
    let uniform: Vec<u32> = (0..n).map(|_| r.random::<u32>()).collect();
    let by_order = |mut k: Vec<u32>| {
        let (order, _) = cpu::sort_typed(&k, t, SortOptions::default());
        k = order.iter().map(|&i| k[i as usize]).collect();
        k
    };
    let pool: &[u32] = match t {
        KeyType::Uint32 => &[0, 7, u32::MAX, 0x0100_0000, 0x8000_0001],
        KeyType::Int32 => &[i32::MIN as u32, u32::MAX, 0, 1, i32::MAX as u32],
        KeyType::Float32 => &FLOAT_SPECIALS[..6],
    };
    match dist {
        Dist::Uniform => uniform,
        Dist::Sorted => by_order(uniform),
        Dist::Reversed => {
            let mut k = by_order(uniform);
            k.reverse();
            k
        }
        Dist::AllEqual => vec![0x8765_4321; n],
        Dist::FewUnique => uniform
            .iter()
            .map(|&x| pool[x as usize % pool.len()])
            .collect(),
        Dist::SharedTop24 => uniform.iter().map(|&x| 0xabcd_ef00 | (x & 0xff)).collect(),
        Dist::Specials => {
            let specials: &[u32] = match t {
                KeyType::Float32 => &FLOAT_SPECIALS,
                _ => pool,
            };
            uniform
                .iter()
                .map(|&x| {
                    if x % 3 == 0 {
                        x
                    } else {
                        specials[x as usize % specials.len()]
                    }
                })
                .collect()
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn declare(
    ctx: &gpugraph_command::GpuContext,
    g: &mut CommandGraph,
    name: &str,
    keys: Vec<u32>,
    key_type: KeyType,
    options: SortOptions,
    mode: Mode,
    offset: usize,
) -> SortCase {
    declare_with(ctx, g, name, keys, key_type, options, mode, offset, None)
}

/// [`declare`] under `policy` (`None`: the device default): inputs and outputs at element
/// `offset`.
#[allow(clippy::too_many_arguments)]
fn declare_with(
    ctx: &gpugraph_command::GpuContext,
    g: &mut CommandGraph,
    name: &str,
    keys: Vec<u32>,
    key_type: KeyType,
    options: SortOptions,
    mode: Mode,
    offset: usize,
    policy: Option<SortPolicy>,
) -> SortCase {
    let spec = SortSpec {
        key_type,
        options,
        in_offset: offset,
        out_offset: offset,
        policy,
        ..SortSpec::new(name, keys, mode)
    };
    declare_sort(ctx, g, spec)
}

fn verify(ctx: &gpugraph_command::GpuContext, c: &SortCase) {
    verify_sort(ctx, c);
}

/// Every key type x direction x payload at each size, the distribution rotating with the
/// combination so each one meets every distribution across the sizes.
#[test]
fn every_key_type_direction_and_payload_matches_the_oracle() {
    let ctx = ctx();
    let sizes = [0usize, 1, 2, 255, 256, 257, 4095, 4096, 4097, 9001];
    for (si, &n) in sizes.iter().enumerate() {
        let mut g = CommandGraph::new("sort-keys", &ctx.device);
        let mut cases = Vec::new();
        let mut combo = 0;
        for t in TYPES {
            for order in ORDERS {
                for mode in MODES {
                    let dist = DISTS[(combo + si) % DISTS.len()];
                    let keys = keys_of(t, dist, n, (si * 1000 + combo) as u64);
                    let name = format!("n{n}-{t:?}-{order:?}-{mode:?}-{dist:?}");
                    let options = SortOptions {
                        order,
                        ..SortOptions::default()
                    };
                    cases.push(declare(
                        &ctx,
                        &mut g,
                        &name,
                        keys,
                        t,
                        options,
                        mode,
                        combo % 2 * 3,
                    ));
                    combo += 1;
                }
            }
        }
        run(&ctx, g);
        for c in &cases {
            verify(&ctx, c);
        }
    }
}

/// Every distribution for float keys in both directions as argsort (the strictest check:
/// source rows expose any instability, and NaNs must keep their input order).
#[test]
fn float_distributions_and_specials_in_both_directions() {
    let ctx = ctx();
    let mut g = CommandGraph::new("sort-floats", &ctx.device);
    let mut cases = Vec::new();
    for (di, dist) in DISTS.into_iter().enumerate() {
        for order in ORDERS {
            for n in [200usize, 5000] {
                let keys = keys_of(KeyType::Float32, dist, n, 77 + di as u64);
                let name = format!("f32-{dist:?}-{order:?}-{n}");
                let options = SortOptions {
                    order,
                    ..SortOptions::default()
                };
                cases.push(declare(
                    &ctx,
                    &mut g,
                    &name,
                    keys,
                    KeyType::Float32,
                    options,
                    Mode::Argsort,
                    1,
                ));
            }
        }
    }
    // Exactly the specials, repeated: the documented order, spelled out.
    let keys: Vec<u32> = FLOAT_SPECIALS
        .iter()
        .chain(&FLOAT_SPECIALS)
        .copied()
        .collect();
    let asc = declare(
        &ctx,
        &mut g,
        "specials-asc",
        keys.clone(),
        KeyType::Float32,
        SortOptions::default(),
        Mode::Argsort,
        0,
    );
    let desc = declare(
        &ctx,
        &mut g,
        "specials-desc",
        keys,
        KeyType::Float32,
        SortOptions::descending(),
        Mode::Keys,
        0,
    );
    run(&ctx, g);
    for c in &cases {
        verify(&ctx, c);
    }
    verify(&ctx, &asc);
    verify(&ctx, &desc);
    let nan = cpu::CANONICAL_NAN;
    let n = 2 * FLOAT_SPECIALS.len();
    let got = read_rows(&ctx, &asc.out_keys, 0, n);
    let want_asc = [
        0xff80_0000,
        0xff80_0000,
        0xbf80_0000,
        0xbf80_0000,
        0x8000_0001,
        0x8000_0001,
        0x8000_0000,
        0x8000_0000,
        0x0000_0000,
        0x0000_0000,
        0x0000_0001,
        0x0000_0001,
        0x007f_ffff,
        0x007f_ffff,
        0x3f80_0000,
        0x3f80_0000,
        0x7f80_0000,
        0x7f80_0000,
    ];
    assert_eq!(&got[..18], &want_asc, "ascending total order");
    assert!(got[18..].iter().all(|&x| x == nan), "NaNs last: {got:x?}");
    // NaNs keep their input order: rows 0..5 then 14..19 of the input.
    let rows = read_rows(&ctx, asc.out_values.as_ref().unwrap(), 0, n);
    assert_eq!(&rows[18..], &[0, 1, 2, 3, 4, 14, 15, 16, 17, 18]);
    let got = read_rows(&ctx, &desc.out_keys, 0, n);
    let mut want_desc = want_asc.to_vec();
    want_desc.reverse();
    // Equal keys stay in input order, so reversing pairs of equal keys changes nothing.
    assert_eq!(
        &got[..18],
        &want_desc[..],
        "descending: +inf first, -inf last"
    );
    assert!(
        got[18..].iter().all(|&x| x == nan),
        "NaNs last descending: {got:x?}"
    );
}

/// The radix knobs with key transforms: fused into the kernels (the default) and as their
/// own nodes (`fuse_keys` off), with the direct scatter, workgroup-id tiles, the batched
/// two-copy histogram, the counting-sort ranking and the forced fallback on a last-first
/// schedule (the fallback recounts the first pass's tiles from the caller's keys, so it
/// must encode them too), and the keys staged before the look-back. Every key type, direction and payload at tile boundaries (1024-row
/// tiles), the distributions rotating.
#[test]
fn key_transforms_under_every_radix_knob() {
    let ctx = ctx();
    let small = SortPolicy {
        keys_per_thread: 4,
        histogram_tiles_per_workgroup: 3,
        ..SortPolicy::DEFAULT
    };
    let policies = [
        (
            "nodes",
            SortPolicy {
                fuse_keys: false,
                ..small
            },
        ),
        ("fused", small),
        (
            "fused-direct-wgtiles-hbatch3-hcopies2",
            SortPolicy {
                scatter_direct: true,
                workgroup_tiles: true,
                histogram_batch: 3,
                histogram_copies: 2,
                unroll: true,
                ..small
            },
        ),
        (
            "fused-counting-direct",
            SortPolicy {
                multisplit: false,
                scatter_direct: true,
                ..small
            },
        ),
        (
            "fused-reverse-force",
            SortPolicy {
                reverse_tiles: true,
                force_fallback: true,
                ..small
            },
        ),
        (
            "fused-overlap-wgtiles-reverse",
            SortPolicy {
                overlap_lookback: true,
                workgroup_tiles: true,
                reverse_tiles: true,
                spin_limit: 2,
                ..small
            },
        ),
    ];
    let sizes = [257usize, 1023, 1025, 4 * 1024 + 77];
    for (pi, (pname, policy)) in policies.into_iter().enumerate() {
        let mut g = CommandGraph::new("sort-knobs", &ctx.device);
        let mut cases = Vec::new();
        let mut combo = 0;
        for (si, &n) in sizes.iter().enumerate() {
            for t in TYPES {
                for order in ORDERS {
                    let mode = MODES[combo % MODES.len()];
                    let dist = DISTS[(combo + si + pi) % DISTS.len()];
                    let keys = keys_of(t, dist, n, (pi * 1000 + combo) as u64);
                    let name = format!("{pname}-n{n}-{t:?}-{order:?}-{mode:?}-{dist:?}");
                    let options = SortOptions {
                        order,
                        ..SortOptions::default()
                    };
                    cases.push(declare_with(
                        &ctx,
                        &mut g,
                        &name,
                        keys,
                        t,
                        options,
                        mode,
                        combo % 2,
                        Some(policy),
                    ));
                    combo += 1;
                }
            }
        }
        run(&ctx, g);
        for c in &cases {
            verify(&ctx, c);
        }
    }
}

/// Radix sorts with key transforms add no encode/decode nodes unless `fuse_keys` is off;
/// the one-workgroup path keeps them. One pass (`key_bits` 8) both encodes and decodes.
#[test]
fn fused_transforms_replace_the_encode_and_decode_nodes() {
    let ctx = ctx();
    let nodes = |n: usize, options: SortOptions, policy: SortPolicy| {
        let mut g = CommandGraph::new("sort-nodes", &ctx.device);
        let kb = upload(&ctx, &vec![7; n]);
        let okb = upload(&ctx, &vec![0; n]);
        let k = import_typed(&mut g, "k", &kb, VectorFormat::Sint32, 0, n as u64);
        let ok = import_typed(&mut g, "ok", &okb, VectorFormat::Sint32, 0, n as u64);
        Sort {
            policy: Some(policy),
            ..Sort::keys("s", k, ok)
        }
        .add_to_graph_with(&mut g, options)
        .unwrap();
        g.node_count()
    };
    let fused = SortPolicy::DEFAULT;
    let unfused = SortPolicy {
        fuse_keys: false,
        ..fused
    };
    let desc = SortOptions::descending();
    assert_eq!(nodes(5000, desc, fused), 5, "histogram + 4 passes");
    assert_eq!(
        nodes(5000, desc, unfused),
        7,
        "encode + histogram + 4 passes + decode"
    );
    assert_eq!(nodes(5000, desc.with_key_bits(8), fused), 2);
    assert_eq!(nodes(200, desc, fused), 3, "encode + local + decode");
    // One pass that both encodes and decodes, against the oracle.
    let mut g = CommandGraph::new("sort-one-pass", &ctx.device);
    let mut r = rng(9);
    let keys: Vec<u32> = (0..3000)
        .map(|_| r.random_range(-128i32..128) as u32)
        .collect();
    let c = declare_with(
        &ctx,
        &mut g,
        "one-pass",
        keys,
        KeyType::Int32,
        desc.with_key_bits(8),
        Mode::Argsort,
        1,
        Some(fused),
    );
    run(&ctx, g);
    verify(&ctx, &c);
}

/// `key_bits` below 32 for uint32 and int32 keys in both directions (codes fit the low bits),
/// and `key_bits` 1.
#[test]
fn key_bits_sorts_keys_in_the_promised_range() {
    let ctx = ctx();
    let mut g = CommandGraph::new("sort-key-bits", &ctx.device);
    let mut cases = Vec::new();
    let mut r = rng(5);
    for (kb, n) in [(12u32, 5000usize), (1, 4500), (20, 300), (31, 4097)] {
        for t in [KeyType::Uint32, KeyType::Int32] {
            for order in ORDERS {
                let keys: Vec<u32> = (0..n)
                    .map(|_| match t {
                        KeyType::Int32 => {
                            let half = 1i64 << (kb - 1);
                            r.random_range(-half..half) as i32 as u32
                        }
                        _ => r.random_range(0..(1u64 << kb)) as u32,
                    })
                    .collect();
                let options = SortOptions {
                    order,
                    key_bits: kb,
                };
                let name = format!("kb{kb}-{t:?}-{order:?}-{n}");
                cases.push(declare(
                    &ctx,
                    &mut g,
                    &name,
                    keys,
                    t,
                    options,
                    Mode::Pairs,
                    0,
                ));
            }
        }
    }
    run(&ctx, g);
    for c in &cases {
        // The oracle with all 32 bits gives the same order: the promise holds.
        let full = SortOptions {
            key_bits: 32,
            ..c.options
        };
        assert_eq!(
            cpu::sort_typed(&c.keys, c.key_type, full),
            cpu::sort_typed(&c.keys, c.key_type, c.options),
            "{}",
            c.label
        );
        verify(&ctx, c);
    }
}

#[test]
fn bad_options_and_formats_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let err = |r: Result<(), AlgorithmError>| r.unwrap_err().to_string();
    let view = |g: &mut CommandGraph, name: &str, f: VectorFormat| {
        let buf = upload(&ctx, &[1; 600]);
        import_typed(g, name, &buf, f, 0, 600)
    };
    let kf = view(&mut g, "kf", VectorFormat::Float32);
    let of = view(&mut g, "of", VectorFormat::Float32);
    let e =
        err(Sort::keys("s", kf, of)
            .add_to_graph_with(&mut g, SortOptions::default().with_key_bits(24)));
    assert_eq!(
        e,
        "sort s: key_bits 24 with float32 keys: float keys take all 32 bits"
    );
    for kb in [0, 33] {
        let e = err(Sort::keys("s", kf, of)
            .add_to_graph_with(&mut g, SortOptions::default().with_key_bits(kb)));
        assert!(
            e.contains(&format!("key_bits {kb} is outside 1..=32")),
            "{e}"
        );
    }
    let ki = view(&mut g, "ki", VectorFormat::Sint32);
    let e = err(Sort::keys("s", ki, of).add_to_graph(&mut g));
    assert_eq!(e, "sort s: sorted keys must be sint32, got float32");
    let k8 = view(&mut g, "k8", VectorFormat::Uint8x4);
    let e = err(Sort::keys("s", k8, of).add_to_graph(&mut g));
    assert_eq!(
        e,
        "sort s: keys must be uint32, sint32 or float32, got uint8x4"
    );
    let e = err(Sort::keys("s", kf, kf).add_to_graph(&mut g));
    assert!(e.contains("sorted keys and keys share buffer"), "{e}");
}

/// The key transforms' grids split over a second dimension (157 workgroups of 256 rows on a
/// device limited to 16 per dimension; the surplus workgroups of the 16 x 10 grid must write
/// nothing).
#[test]
fn key_transforms_over_the_dispatch_dimension_limit() {
    let ctx = ctx_with_max_dispatch(16);
    let mut g = CommandGraph::new("sort-keys-2d", &ctx.device);
    let n = 40_000;
    let f = declare(
        &ctx,
        &mut g,
        "f32-desc",
        keys_of(KeyType::Float32, Dist::Specials, n, 3),
        KeyType::Float32,
        SortOptions::descending(),
        Mode::Argsort,
        1,
    );
    let i = declare(
        &ctx,
        &mut g,
        "i32-asc",
        keys_of(KeyType::Int32, Dist::Uniform, n, 4),
        KeyType::Int32,
        SortOptions::default(),
        Mode::Pairs,
        0,
    );
    run(&ctx, g);
    verify(&ctx, &f);
    verify(&ctx, &i);
}

/// Chunks of `data` in one buffer at 3-row poisoned gaps, as `format` views; returns the view,
/// the buffer and each chunk's first row.
fn chunked(
    ctx: &gpugraph_command::GpuContext,
    g: &mut CommandGraph,
    name: &str,
    data: &[Vec<u32>],
    format: VectorFormat,
) -> (VectorView, wgpu::Buffer, Vec<usize>) {
    let mut all = Vec::new();
    let mut starts = Vec::new();
    for d in data {
        all.extend([POISON; 3]);
        starts.push(all.len());
        all.extend_from_slice(d);
    }
    all.extend([POISON; 3]);
    let b = upload(ctx, &all);
    let h = g
        .import_buffer(BufferDescriptor::new(name, b.size(), b.usage()), &b)
        .unwrap();
    let views = data
        .iter()
        .zip(&starts)
        .map(|(d, &s)| {
            let desc = DataViewDescriptor::packed(format, d.len() as u64).at_offset(s as u64 * 4);
            g.create_data_view(h, desc).unwrap()
        })
        .collect();
    (VectorView::from_chunks(views), b, starts)
}

/// BatchSort with options: every chunk (empty, local path, radix path) sorted as its own
/// domain, float32 and int32 keys, descending, the gaps between chunks untouched.
#[test]
fn batch_sort_applies_options_per_chunk() {
    let ctx = ctx();
    let lens = [0usize, 300, 1, 5000, 256, 0, 4097];
    for (t, mode) in [
        (KeyType::Float32, Mode::Argsort),
        (KeyType::Int32, Mode::Pairs),
    ] {
        let keys: Vec<Vec<u32>> = lens
            .iter()
            .enumerate()
            .map(|(i, &n)| keys_of(t, DISTS[i % DISTS.len()], n, 40 + i as u64))
            .collect();
        let vals: Vec<Vec<u32>> = keys
            .iter()
            .map(|k| (0..k.len() as u32).map(|i| i * 3 + 1).collect())
            .collect();
        let poison: Vec<Vec<u32>> = keys.iter().map(|k| vec![POISON; k.len()]).collect();
        let mut g = CommandGraph::new("batch-keys", &ctx.device);
        let (kv, _, _) = chunked(&ctx, &mut g, "k", &keys, t.format());
        let (okv, out_k, starts) = chunked(&ctx, &mut g, "ok", &poison, t.format());
        let (vv, _, _) = chunked(&ctx, &mut g, "v", &vals, VectorFormat::Uint32);
        let (ovv, out_v, _) = chunked(&ctx, &mut g, "ov", &poison, VectorFormat::Uint32);
        let payload = match mode {
            Mode::Pairs => SortPayload::Values {
                input: vv,
                output: ovv,
            },
            _ => SortPayload::SourceRows { output: ovv },
        };
        let options = SortOptions::descending();
        BatchSort {
            id: "batch".into(),
            keys: kv,
            sorted_keys: okv,
            payload,
            policy: None,
        }
        .add_to_graph_with(&mut g, options)
        .unwrap();
        run(&ctx, g);
        let (got_k, got_v) = (read_buffer(&ctx, &out_k), read_buffer(&ctx, &out_v));
        let mut written = vec![false; got_k.len()];
        for (c, k) in keys.iter().enumerate() {
            let s = starts[c];
            let (order, want_k) = cpu::sort_typed(k, t, options);
            assert_eq!(&got_k[s..s + k.len()], &want_k[..], "{t:?} chunk {c} keys");
            let want_v: Vec<u32> = match mode {
                Mode::Pairs => order.iter().map(|&i| vals[c][i as usize]).collect(),
                _ => order,
            };
            assert_eq!(
                &got_v[s..s + k.len()],
                &want_v[..],
                "{t:?} chunk {c} values"
            );
            written[s..s + k.len()].iter_mut().for_each(|w| *w = true);
        }
        for (i, w) in written.iter().enumerate() {
            if !w {
                assert_eq!((got_k[i], got_v[i]), (POISON, POISON), "{t:?}: gap row {i}");
            }
        }
    }
}
