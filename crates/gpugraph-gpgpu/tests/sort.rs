//! The sort family on the GPU vs the CPU oracle, with poisoned outputs: Sort (keys, pairs,
//! argsort) across sizes and key distributions, the look-back fallback, BatchSort chunks,
//! SegmentedSort buckets and gaps, and named errors for bad input.

mod common;

use common::sort::*;
use common::*;
use gpugraph_command::wgpu;
use gpugraph_command::{CommandGraph, DataView, VectorFormat, VectorView};
use gpugraph_gpgpu::sort::cpu;
use gpugraph_gpgpu::{
    AlgorithmError, BatchSort, SegmentedSort, Sort, SortPayload, SortPolicy, SortPolicyError,
};
use rand::Rng;

#[derive(Clone, Copy, Debug)]
enum Dist {
    Uniform,
    AllEqual,
    Sorted,
    Reversed,
    FewUnique,
    HighBitsOnly,
}

const DISTS: [Dist; 6] = [
    Dist::Uniform,
    Dist::AllEqual,
    Dist::Sorted,
    Dist::Reversed,
    Dist::FewUnique,
    Dist::HighBitsOnly,
];

fn keys_of(dist: Dist, n: usize, seed: u64) -> Vec<u32> {
    let mut r = rng(seed);
    let mut uniform = || (0..n).map(|_| r.random::<u32>()).collect::<Vec<u32>>();
    match dist {
        Dist::Uniform => uniform(),
        Dist::AllEqual => vec![0x8765_4321; n],
        Dist::Sorted => cpu::sort_keys(&uniform()),
        Dist::Reversed => {
            let mut k = cpu::sort_keys(&uniform());
            k.reverse();
            k
        }
        Dist::FewUnique => {
            let pool = [0, 7, 0xffff_ffff, 0x0100_0000, 0x8000_0001];
            uniform()
                .into_iter()
                .map(|x| pool[x as usize % 5])
                .collect()
        }
        // Only the top byte varies: the first three passes see a single digit.
        Dist::HighBitsOnly => uniform().into_iter().map(|x| x & 0xff00_0000).collect(),
    }
}

/// Declares a sort of `keys` in `g`: inputs at element offset `in_offset` (unaligned offsets
/// take the scalar load path), outputs at `out_offset` inside poisoned buffers with guard rows.
#[allow(clippy::too_many_arguments)]
fn declare(
    ctx: &gpugraph_command::GpuContext,
    g: &mut CommandGraph,
    name: &str,
    keys: Vec<u32>,
    mode: Mode,
    in_offset: usize,
    out_offset: usize,
    policy: Option<SortPolicy>,
) -> SortCase {
    let spec = SortSpec {
        in_offset,
        out_offset,
        policy,
        ..SortSpec::new(name, keys, mode)
    };
    declare_sort(ctx, g, spec)
}

fn verify(ctx: &gpugraph_command::GpuContext, c: &SortCase) {
    verify_sort(ctx, c);
}

#[test]
fn sorts_match_the_oracle_across_sizes_distributions_and_payloads() {
    let ctx = ctx();
    // Local path (<= 256), one radix tile (4096 rows by default), tile boundaries, many tiles.
    for &n in &[
        0usize,
        1,
        2,
        255,
        256,
        257,
        1000,
        4095,
        4096,
        4097,
        3 * 4096 + 5,
        100_003,
    ] {
        let mut g = CommandGraph::new("sort-test", &ctx.device);
        let mut cases = Vec::new();
        for (di, dist) in DISTS.into_iter().enumerate() {
            for (mi, mode) in MODES.into_iter().enumerate() {
                let keys = keys_of(dist, n, (n * 31 + di) as u64);
                // Alternate aligned and unaligned views (vec4 and scalar load paths).
                let in_offset = (di + mi) % 2;
                let out_offset = 3 * ((di + mi + 1) % 2);
                let name = format!("n{n}-{dist:?}-{mode:?}");
                cases.push(declare(
                    &ctx, &mut g, &name, keys, mode, in_offset, out_offset, None,
                ));
            }
        }
        run(&ctx, g);
        for c in &cases {
            verify(&ctx, c);
        }
    }
}

/// Policies that make the look-back take its fallback: every predecessor recounted from its
/// keys, tiles taken last-first (each waits on unstarted predecessors), an impatient spin
/// limit, and look-back windows of 1 and 3. Small tiles (1024 rows) give many tiles. Also the
/// unrolled key loops and the scans without subgroups.
#[test]
fn look_back_fallback_and_adverse_schedules_sort_correctly() {
    let ctx = ctx();
    let small = SortPolicy {
        keys_per_thread: 4,
        histogram_tiles_per_workgroup: 3,
        ..SortPolicy::DEFAULT
    };
    let policies = [
        (
            "force-fallback",
            SortPolicy {
                force_fallback: true,
                ..small
            },
        ),
        (
            "reverse-tiles",
            SortPolicy {
                reverse_tiles: true,
                spin_limit: 2,
                ..small
            },
        ),
        (
            "reverse-force",
            SortPolicy {
                reverse_tiles: true,
                force_fallback: true,
                ..small
            },
        ),
        (
            "spin-1-window-3",
            SortPolicy {
                spin_limit: 1,
                lookback_window: 3,
                ..small
            },
        ),
        (
            "reverse-window-1",
            SortPolicy {
                reverse_tiles: true,
                lookback_window: 1,
                ..small
            },
        ),
        ("small-tiles", small),
        (
            "unrolled",
            SortPolicy {
                unroll: true,
                ..small
            },
        ),
        (
            "unrolled-default-tiles",
            SortPolicy {
                unroll: true,
                ..SortPolicy::DEFAULT
            },
        ),
        // The workgroup-memory scans (the default uses subgroup scans where the adapter has
        // subgroups, as lavapipe does).
        (
            "no-subgroups",
            SortPolicy {
                subgroups: false,
                ..small
            },
        ),
        (
            "no-subgroups-reverse",
            SortPolicy {
                subgroups: false,
                reverse_tiles: true,
                ..SortPolicy::DEFAULT
            },
        ),
    ];
    let mut g = CommandGraph::new("fallback-test", &ctx.device);
    let mut cases = Vec::new();
    for (name, policy) in policies {
        for &n in &[1023usize, 1024, 1025, 20 * 1024 + 7] {
            for (dist, mode) in [
                (Dist::Uniform, Mode::Pairs),
                (Dist::FewUnique, Mode::Argsort),
            ] {
                let keys = keys_of(dist, n, n as u64 + 5);
                let id = format!("{name}-{n}-{dist:?}");
                cases.push(declare(&ctx, &mut g, &id, keys, mode, 0, 1, Some(policy)));
            }
        }
    }
    run(&ctx, g);
    for c in &cases {
        verify(&ctx, c);
    }
}

#[test]
fn dispatches_over_the_dimension_limit_use_a_second_grid_row() {
    // 16 workgroups per dimension, 1024-row tiles: 40,000 rows need 40 tiles.
    let ctx = ctx_with_max_dispatch(16);
    let policy = SortPolicy {
        keys_per_thread: 4,
        histogram_tiles_per_workgroup: 1,
        ..SortPolicy::DEFAULT
    };
    let mut g = CommandGraph::new("sort-2d", &ctx.device);
    let keys = keys_of(Dist::Uniform, 40_000, 9);
    let c = declare(&ctx, &mut g, "wide", keys, Mode::Pairs, 0, 0, Some(policy));
    run(&ctx, g);
    verify(&ctx, &c);
}

/// A device whose storage bindings hold 5 tiles of `tile_bytes` (plus the offset alignment)
/// and whose grids hold `max_dim` workgroups per dimension.
fn ctx_with_max_binding(tile_bytes: u64, max_dim: u32) -> gpugraph_command::GpuContext {
    ctx()
        .with_adjusted_limits(|l| {
            l.max_storage_buffer_binding_size =
                5 * tile_bytes + u64::from(l.min_storage_buffer_offset_alignment.max(4));
            l.max_compute_workgroups_per_dimension = max_dim;
        })
        .expect("device with a reduced binding size")
}

/// Sorts of 5..10 tiles on a device whose bindings hold 5 bind their keys in two windows:
/// tickets and workgroup-id tiles, 2-D grids of 4 per row whose spare workgroups must not take
/// the next window's tickets, and float32 descending through the unfused encode and decode
/// nodes (their pieces need a wider grid: 16 per dimension).
#[test]
fn sorts_larger_than_one_storage_binding_use_two_key_windows() {
    // 4,096-key tiles; the status rows of 10 tiles (40 KiB) fit one binding.
    let small = SortPolicy {
        keys_per_thread: 16,
        histogram_tiles_per_workgroup: 2,
        ..SortPolicy::DEFAULT
    };
    let runs = [
        (small, 4),
        (
            SortPolicy {
                workgroup_tiles: true,
                ..small
            },
            4,
        ),
        (
            SortPolicy {
                fuse_keys: false,
                ..small
            },
            16,
        ),
    ];
    for (pi, (policy, max_dim)) in runs.into_iter().enumerate() {
        let ctx = ctx_with_max_binding(16384, max_dim);
        let mut cases = Vec::new();
        let mut g = CommandGraph::new("sort-windows", &ctx.device);
        for (ni, n) in [5 * 4096 + 77, 10 * 4096].into_iter().enumerate() {
            for (mi, mode) in MODES.into_iter().enumerate() {
                let dist = DISTS[(pi + ni + mi) % DISTS.len()];
                let name = format!("windows-p{pi}-n{n}-{dist:?}-{mode:?}");
                let spec = SortSpec {
                    in_offset: (ni + mi) % 2,
                    out_offset: 3 * ((pi + mi) % 2),
                    policy: Some(policy),
                    ..SortSpec::new(&name, keys_of(dist, n, (n + pi) as u64), mode)
                };
                let spec = if policy.fuse_keys {
                    spec
                } else {
                    SortSpec {
                        key_type: gpugraph_gpgpu::KeyType::Float32,
                        options: gpugraph_gpgpu::SortOptions {
                            order: gpugraph_gpgpu::SortOrder::Descending,
                            ..Default::default()
                        },
                        ..spec
                    }
                };
                cases.push(declare_sort(&ctx, &mut g, spec));
            }
        }
        run(&ctx, g);
        for c in &cases {
            verify(&ctx, c);
        }
    }
    // Eleven tiles need three windows: a named device limit, not a wrong sort.
    let ctx = ctx_with_max_binding(16384, 16);
    let mut g = CommandGraph::new("sort-too-large", &ctx.device);
    let keys = upload(&ctx, &vec![0; 11 * 4096]);
    let out = upload(&ctx, &vec![0; 11 * 4096]);
    let k = import_view(&mut g, "k", &keys, 0, 11 * 4096);
    let o = import_view(&mut g, "o", &out, 0, 11 * 4096);
    let e = Sort {
        policy: Some(small),
        ..Sort::keys("too-large", k, o)
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::DeviceLimit { needed: 180224, .. }),
        "{e:?}"
    );
}

fn import_chunks(
    ctx: &gpugraph_command::GpuContext,
    g: &mut CommandGraph,
    name: &str,
    data: &[Vec<u32>],
    shared: bool,
) -> (VectorView, Vec<(wgpu::Buffer, usize)>) {
    // Either one buffer per chunk, or every chunk in one buffer at 3-row gaps.
    let mut views = Vec::new();
    let mut places = Vec::new();
    if shared {
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
            .import_buffer(
                gpugraph_command::BufferDescriptor::new(name, b.size(), b.usage()),
                &b,
            )
            .unwrap();
        for (d, &s) in data.iter().zip(&starts) {
            views.push(
                g.create_data_view(
                    h,
                    gpugraph_command::DataViewDescriptor::packed(
                        VectorFormat::Uint32,
                        d.len() as u64,
                    )
                    .at_offset(s as u64 * 4),
                )
                .unwrap(),
            );
            places.push((b.clone(), s));
        }
    } else {
        for (i, d) in data.iter().enumerate() {
            let b = upload(ctx, d);
            views.push(import_view(g, &format!("{name}{i}"), &b, 0, d.len() as u64));
            places.push((b, 0));
        }
    }
    (VectorView::from_chunks(views), places)
}

#[test]
fn batch_sort_sorts_each_chunk_as_its_own_domain() {
    let ctx = ctx();
    let mut r = rng(11);
    // Empty, local-path and radix-path chunks, uneven, in order.
    let mut lens = vec![0, 5000, 1, 256, 0, 257];
    lens.extend(uneven_chunks(&mut r, 9000, 4));
    lens.push(0);
    for mode in MODES {
        for shared in [false, true] {
            let keys: Vec<Vec<u32>> = lens
                .iter()
                .enumerate()
                .map(|(i, &n)| keys_of(DISTS[i % DISTS.len()], n, i as u64))
                .collect();
            let vals: Vec<Vec<u32>> = keys
                .iter()
                .map(|k| (0..k.len() as u32).map(|i| i * 3 + 1).collect())
                .collect();
            let poison: Vec<Vec<u32>> = keys.iter().map(|k| vec![POISON; k.len()]).collect();
            let mut g = CommandGraph::new("batch", &ctx.device);
            let (kv, _) = import_chunks(&ctx, &mut g, "k", &keys, shared);
            let (okv, out_k) = import_chunks(&ctx, &mut g, "ok", &poison, shared);
            let (vv, _) = import_chunks(&ctx, &mut g, "v", &vals, shared);
            let (ovv, out_v) = import_chunks(&ctx, &mut g, "ov", &poison, shared);
            let payload = match mode {
                Mode::Keys => SortPayload::KeysOnly,
                Mode::Pairs => SortPayload::Values {
                    input: vv,
                    output: ovv,
                },
                Mode::Argsort => SortPayload::SourceRows { output: ovv },
            };
            BatchSort {
                id: "batch".into(),
                keys: kv,
                sorted_keys: okv,
                payload,
                policy: None,
            }
            .add_to_graph(&mut g)
            .unwrap();
            run(&ctx, g);
            for (i, k) in keys.iter().enumerate() {
                let (b, s) = &out_k[i];
                let all = read_buffer(&ctx, b);
                let label = format!("{mode:?} shared={shared} chunk {i} ({} rows)", k.len());
                let order = cpu::argsort(k);
                let want: Vec<u32> = order.iter().map(|&j| k[j as usize]).collect();
                assert_eq!(
                    first_difference(&all[*s..s + k.len()], &want),
                    None,
                    "{label} keys"
                );
                if shared {
                    assert_eq!(
                        &all[s - 3..*s],
                        &[POISON; 3],
                        "{label}: gap before untouched"
                    );
                }
                let want_v: Vec<u32> = match mode {
                    Mode::Keys => continue,
                    Mode::Pairs => order.iter().map(|&j| vals[i][j as usize]).collect(),
                    Mode::Argsort => order,
                };
                let (b, s) = &out_v[i];
                let all = read_buffer(&ctx, b);
                assert_eq!(
                    first_difference(&all[*s..s + k.len()], &want_v),
                    None,
                    "{label} values"
                );
            }
        }
    }
}

/// Segments of every width class (and trivial ones) with gaps between them, some rejected.
fn segment_layout(r: &mut impl Rng, count: usize, max_width: u32) -> (Vec<u32>, Vec<u32>, usize) {
    let widths = [
        0u32, 1, 2, 3, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 200, 255, 256,
    ];
    let mut offsets = Vec::new();
    let mut lengths = Vec::new();
    let mut row = 0u32;
    for s in 0..count {
        row += r.random_range(0..4); // gap
        let len = if s < widths.len() {
            widths[s]
        } else {
            r.random_range(0..=max_width)
        };
        offsets.push(row);
        lengths.push(len);
        row += len;
    }
    (offsets, lengths, row as usize + 5)
}

fn run_segmented(
    ctx: &gpugraph_command::GpuContext,
    count: usize,
    max_width: u32,
    with_values: bool,
    extra: &[(u32, u32)],
) {
    let mut r = rng(count as u64 + max_width as u64);
    let (mut offsets, mut lengths, rows) = segment_layout(&mut r, count, max_width);
    for &(o, l) in extra {
        offsets.push(o);
        lengths.push(l);
    }
    // Gap rows hold POISON; segment rows random keys with many duplicates.
    let mut keys = vec![POISON; rows];
    for (&o, &l) in offsets.iter().zip(&lengths) {
        let start = (o as usize).min(rows);
        let end = (o as usize + l as usize).min(rows);
        for k in &mut keys[start..end] {
            *k = r.random_range(0..50);
        }
    }
    let vals: Vec<u32> = (0..rows as u32).map(|i| i | 0x4000_0000).collect();
    let mut g = CommandGraph::new("segmented", &ctx.device);
    let kb = upload(ctx, &keys);
    let vb = upload(ctx, &vals);
    let ob = upload(ctx, &offsets);
    let lb = upload(ctx, &lengths);
    let rb = upload(ctx, &[POISON; 2]);
    let kv = import_view(&mut g, "keys", &kb, 0, rows as u64);
    let vv = import_view(&mut g, "values", &vb, 0, rows as u64);
    let ov = import_view(&mut g, "offsets", &ob, 0, offsets.len() as u64);
    let lv = import_view(&mut g, "lengths", &lb, 0, lengths.len() as u64);
    let rv = import_view(&mut g, "rejected", &rb, 1, 1);
    SegmentedSort {
        id: "seg".into(),
        keys: kv,
        values: with_values.then_some(vv),
        offsets: ov,
        lengths: lv,
        max_width,
        rejected: Some(rv),
    }
    .add_to_graph(&mut g)
    .unwrap();
    assert!(g.node_count() <= 5, "{} nodes", g.node_count());
    run(ctx, g);
    let (mut want_k, mut want_v) = (
        keys.clone(),
        if with_values { vals.clone() } else { vec![] },
    );
    let rejected = cpu::sort_segments(&mut want_k, &mut want_v, &offsets, &lengths, max_width);
    let label = format!("{count} segments, max width {max_width}, values {with_values}");
    assert_eq!(
        first_difference(&read_buffer(ctx, &kb), &want_k),
        None,
        "{label}: keys (gaps stay POISON)"
    );
    if with_values {
        assert_eq!(
            first_difference(&read_buffer(ctx, &vb), &want_v),
            None,
            "{label}: values"
        );
    } else {
        assert_eq!(read_buffer(ctx, &vb), vals, "{label}: values untouched");
    }
    assert_eq!(
        read_buffer(ctx, &rb),
        vec![POISON, rejected],
        "{label}: rejected count"
    );
}

#[test]
fn segmented_sort_sorts_every_width_class_in_place_and_keeps_gaps() {
    let ctx = ctx();
    // Segment too long for the declared width, one reaching past the keys, one starting past
    // them: rejected and untouched.
    run_segmented(&ctx, 400, 256, true, &[(0, 300), (10, 40)]);
    run_segmented(&ctx, 3000, 256, false, &[(u32::MAX - 4, 8), (5, u32::MAX)]);
    // Only the 32 and 64 classes: lengths above 40 are rejected.
    run_segmented(&ctx, 500, 40, true, &[]);
}

#[test]
fn segmented_class_grids_over_the_dimension_limit_use_a_second_row() {
    // 16 workgroups per dimension: 2,000 segments of <= 32 rows need 250 workgroups.
    let ctx = ctx_with_max_dispatch(16);
    run_segmented(&ctx, 2000, 32, true, &[]);
}

#[test]
fn bad_sorts_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let a = upload(&ctx, &[1; 600]);
    let b = upload(&ctx, &[0; 600]);
    let c = upload(&ctx, &[0; 600]);
    let k = import_view(&mut g, "a", &a, 0, 600);
    let out = import_view(&mut g, "b", &b, 0, 600);
    let short = import_view(&mut g, "c", &c, 0, 599);
    let err = |r: Result<(), AlgorithmError>| r.unwrap_err().to_string();
    let error = |r: Result<(), AlgorithmError>| r.unwrap_err();

    // Mismatched key/value lengths.
    let e = err(Sort::pairs("s", k, short, out, short).add_to_graph(&mut g));
    assert!(
        e.starts_with("sort s: values chunk lengths [599] differ from keys chunk lengths [600]"),
        "{e}"
    );
    // Sorted keys of another format than the keys (float32 keys are sortable).
    let f32_view: DataView = g
        .create_packed_view(k.buffer(), VectorFormat::Float32, 600)
        .unwrap();
    let e = err(Sort::keys("s", f32_view, out).add_to_graph(&mut g));
    assert_eq!(e, "sort s: sorted keys must be float32, got uint32");
    // Output sharing the input's buffer.
    let e = err(Sort::keys("s", k, k).add_to_graph(&mut g));
    assert!(e.contains("sorted keys and keys share buffer a"), "{e}");
    let e = err(Sort::argsort("s", k, out, out).add_to_graph(&mut g));
    assert!(
        e.contains("sorted keys and source rows share buffer b"),
        "{e}"
    );
    // Policy out of range.
    let e = error(
        Sort {
            policy: Some(SortPolicy {
                keys_per_thread: 6,
                ..SortPolicy::DEFAULT
            }),
            ..Sort::keys("s", k, out)
        }
        .add_to_graph(&mut g),
    );
    let policy = match &e {
        AlgorithmError::Policy { source, .. } => source.downcast_ref::<SortPolicyError>(),
        _ => None,
    };
    assert!(
        matches!(policy, Some(SortPolicyError::Field(f)) if f.field == "keys_per_thread" && f.value == 6),
        "{e}"
    );
    // Batch: chunk topology differs.
    let e = err(BatchSort {
        id: "bs".into(),
        keys: VectorView::from_chunks(vec![k, k]),
        sorted_keys: VectorView::from_chunks(vec![out, short]),
        payload: SortPayload::KeysOnly,
        policy: None,
    }
    .add_to_graph(&mut g));
    assert!(
        e.contains("batch sort bs: sorted keys chunk lengths [600, 599]"),
        "{e}"
    );

    // Segmented: width above 256, mismatched offsets/lengths, values length, shared buffers.
    let seg = |max_width: u32, offsets: DataView, values: Option<DataView>| SegmentedSort {
        id: "ss".into(),
        keys: out,
        values,
        offsets,
        lengths: short,
        max_width,
        rejected: None,
    };
    let e = error(seg(300, short, None).add_to_graph(&mut g));
    assert!(
        matches!(&e, AlgorithmError::OutOfRange { what, value, .. }
            if &**what == "max segment width" && &**value == "300"),
        "{e}"
    );
    let e = error(seg(32, k, None).add_to_graph(&mut g));
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { what, actual: 599, expected: 600, .. }
            if &**what == "lengths"),
        "{e}"
    );
    let e = error(seg(32, short, Some(short)).add_to_graph(&mut g));
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { what, actual: 599, expected: 600, .. }
            if &**what == "values"),
        "{e}"
    );
    let e = err(SegmentedSort {
        lengths: k,
        ..seg(32, k, Some(k))
    }
    .add_to_graph(&mut g));
    assert!(e.contains("values and offsets share buffer a"), "{e}");
    let e = err(SegmentedSort {
        lengths: f32_view,
        ..seg(32, k, None)
    }
    .add_to_graph(&mut g));
    assert_eq!(e, "segmented sort ss: lengths must be uint32, got float32");
    assert_eq!(g.node_count(), 0, "rejected declarations add no nodes");
}
