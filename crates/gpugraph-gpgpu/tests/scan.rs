//! The Scan algorithm (graph node over the chained-scan kernel) on the GPU vs the CPU oracle:
//! boundary and random sizes, segments, chunked vectors with empty and uneven chunks and
//! segments crossing them, 2-D dispatch, wraparound, import overrides, poisoned outputs with
//! guard rows, and named errors.

mod common;

use common::*;
use gpugraph_command::{wgpu, CommandGraph, DataView, VectorFormat, VectorView};
use gpugraph_gpgpu::scan::{cpu, ScanKernelOptions, ScanPolicy};
use gpugraph_gpgpu::{AlgorithmError, Scan};
use rand::Rng;

const TILE: usize = 4096;
/// Rows of poison before (at element offset) and after every output view.
const LEAD: usize = 3;
const TAIL: usize = 5;

/// 128-element tiles: many tiles (and the fallback) from small inputs.
const SMALL: ScanPolicy = ScanPolicy {
    workgroup_size: 32,
    vec4_per_thread: 1,
    lookback_window: 8,
    spin_limit: 4,
    unroll: true,
    gather_first: false,
    gather_early: false,
};

fn random_flags(r: &mut impl Rng, n: usize, p: f64) -> Vec<u32> {
    (0..n)
        .map(|_| {
            if r.random_bool(p) {
                r.random_range(1..=u32::MAX)
            } else {
                0
            }
        })
        .collect()
}

/// Runs one single-chunk scan with the input at element offset 1 and the output at element
/// offset LEAD of poisoned buffers; checks the oracle and the guard rows.
fn check_single(
    ctx: &gpugraph_command::GpuContext,
    values: &[u32],
    starts: Option<&[u32]>,
    inclusive: bool,
    options: Option<ScanKernelOptions>,
) {
    let n = values.len();
    let mut g = CommandGraph::new("scan-test", &ctx.device);
    let ib = upload(ctx, &[&[7], values].concat());
    let ob = upload(ctx, &vec![POISON; LEAD + n + TAIL]);
    let input = import_view(&mut g, "in", &ib, 1, n as u64);
    let output = import_view(&mut g, "out", &ob, LEAD as u64, n as u64);
    let segment_starts = starts.map(|f| {
        let fb = upload(ctx, &[&[0, 0], f].concat());
        VectorView::from(import_view(&mut g, "starts", &fb, 2, n as u64))
    });
    let scan = Scan {
        id: "scan".into(),
        input: input.into(),
        output: output.into(),
        inclusive,
        segment_starts,
    };
    match options {
        Some(o) => scan.add_to_graph_with(&mut g, o),
        None => scan.add_to_graph(&mut g),
    }
    .unwrap();
    run(ctx, g);
    let all = read_buffer(ctx, &ob);
    let what = format!("n={n} inclusive={inclusive} segmented={}", starts.is_some());
    assert_eq!(
        &all[..LEAD],
        &[POISON; LEAD],
        "{what}: rows before the view"
    );
    assert_eq!(
        &all[LEAD + n..],
        &[POISON; TAIL],
        "{what}: rows after the view"
    );
    let expected = cpu::scan(values, starts, inclusive);
    if let Some(i) = (0..n).find(|&i| all[LEAD + i] != expected[i]) {
        panic!(
            "{what}: first difference at {i}: got {:#x}, expected {:#x}",
            all[LEAD + i],
            expected[i]
        );
    }
}

#[test]
fn boundary_and_random_sizes_match_the_oracle() {
    let ctx = ctx();
    let mut r = rng(1);
    let mut sizes = vec![0, 1, 255, 256, 257, TILE - 1, TILE, TILE + 1, 5 * TILE + 3];
    sizes.extend((0..3).map(|_| r.random_range(2..20 * TILE)));
    for &n in &sizes {
        let values = random_u32s(&mut r, n, u32::MAX);
        for inclusive in [false, true] {
            check_single(&ctx, &values, None, inclusive, None);
        }
        let starts = random_flags(&mut r, n, 0.001);
        check_single(&ctx, &values, Some(&starts), n.is_multiple_of(2), None);
    }
}

#[test]
fn segments_restart_both_conventions() {
    let ctx = ctx();
    let mut r = rng(2);
    let n = 3 * TILE + 17;
    let values = random_u32s(&mut r, n, 100);
    for (p, inclusive) in [(0.0, true), (0.3, false), (1.0, true), (0.0005, false)] {
        let starts = random_flags(&mut r, n, p);
        check_single(&ctx, &values, Some(&starts), inclusive, None);
    }
    // Starts exactly at tile boundaries.
    let starts: Vec<u32> = (0..n).map(|i| u32::from(i % TILE == 0)).collect();
    check_single(&ctx, &values, Some(&starts), true, None);
}

#[test]
fn wraps_modulo_2_pow_32() {
    let ctx = ctx();
    let mut r = rng(3);
    let n = 2 * TILE + 9;
    let values: Vec<u32> = (0..n).map(|_| u32::MAX - r.random_range(0..16)).collect();
    check_single(&ctx, &values, None, true, None);
    check_single(&ctx, &values, None, false, None);
}

/// A chunked vector: every chunk in its own poisoned buffer at a chunk-specific offset,
/// except that chunks 1 and 2 share one buffer; segments sparse so they cross chunks.
fn check_chunks(ctx: &gpugraph_command::GpuContext, lens: &[usize], seed: u64, segmented: bool) {
    let mut r = rng(seed);
    let values: Vec<Vec<u32>> = lens
        .iter()
        .map(|&n| random_u32s(&mut r, n, 1 << 20))
        .collect();
    let starts: Vec<Vec<u32>> = lens
        .iter()
        .map(|&n| random_flags(&mut r, n, 0.0003))
        .collect();
    let mut g = CommandGraph::new("scan-chunks", &ctx.device);
    let (mut vi, mut vo, mut vs, mut outs) = (vec![], vec![], vec![], vec![]);
    // Chunks 1 and 2 share the output buffer "shared-out" (disjoint ranges).
    let shared_len = lens.get(1).copied().unwrap_or(0) + lens.get(2).copied().unwrap_or(0);
    let shared = upload(ctx, &vec![POISON; LEAD + shared_len + TAIL]);
    let shared_h = if lens.len() > 2 {
        Some(
            g.import_buffer(
                gpugraph_command::BufferDescriptor::new(
                    "shared-out",
                    shared.size(),
                    shared.usage(),
                ),
                &shared,
            )
            .unwrap(),
        )
    } else {
        None
    };
    for (k, &n) in lens.iter().enumerate() {
        let ib = upload(ctx, &[vec![1; k], values[k].clone()].concat());
        vi.push(import_view(
            &mut g,
            &format!("in{k}"),
            &ib,
            k as u64,
            n as u64,
        ));
        let fb = upload(ctx, &[vec![9; 2], starts[k].clone()].concat());
        vs.push(import_view(&mut g, &format!("starts{k}"), &fb, 2, n as u64));
        let view = match (k, shared_h) {
            (1 | 2, Some(h)) => {
                let at = LEAD + if k == 2 { lens[1] } else { 0 };
                g.create_data_view(
                    h,
                    gpugraph_command::DataViewDescriptor::packed(VectorFormat::Uint32, n as u64)
                        .at_offset(at as u64 * 4),
                )
                .unwrap()
            }
            _ => {
                let ob = upload(ctx, &vec![POISON; LEAD + n + TAIL]);
                let v = import_view(&mut g, &format!("out{k}"), &ob, LEAD as u64, n as u64);
                outs.push((k, ob));
                v
            }
        };
        vo.push(view);
    }
    Scan {
        id: "scan".into(),
        input: VectorView::from_chunks(vi),
        output: VectorView::from_chunks(vo),
        inclusive: seed.is_multiple_of(2),
        segment_starts: segmented.then(|| VectorView::from_chunks(vs)),
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(ctx, g);
    let value_refs: Vec<&[u32]> = values.iter().map(Vec::as_slice).collect();
    let start_refs: Vec<&[u32]> = starts.iter().map(Vec::as_slice).collect();
    let expected = cpu::scan_chunks(
        &value_refs,
        segmented.then_some(start_refs.as_slice()),
        seed.is_multiple_of(2),
    );
    for (k, ob) in &outs {
        let all = read_buffer(ctx, ob);
        let n = lens[*k];
        assert_eq!(
            &all[LEAD..LEAD + n],
            expected[*k].as_slice(),
            "chunk {k} of {lens:?}"
        );
        assert_eq!(&all[..LEAD], &[POISON; LEAD]);
        assert_eq!(&all[LEAD + n..], &[POISON; TAIL]);
    }
    if shared_h.is_some() {
        let all = read_buffer(ctx, &shared);
        let both = [expected[1].clone(), expected[2].clone()].concat();
        assert_eq!(
            &all[LEAD..LEAD + shared_len],
            both.as_slice(),
            "shared chunks of {lens:?}"
        );
        assert_eq!(&all[..LEAD], &[POISON; LEAD]);
        assert_eq!(&all[LEAD + shared_len..], &[POISON; TAIL]);
    }
}

#[test]
fn chunked_vectors_are_one_sequence() {
    let ctx = ctx();
    let mut r = rng(4);
    check_chunks(&ctx, &[0, 5, 0, TILE, 1, 2 * TILE + 1, 0, 3], 10, true);
    check_chunks(&ctx, &[TILE - 1, TILE + 1, 1, 1, 3 * TILE], 11, false);
    check_chunks(&ctx, &[0, 0, 0], 12, true);
    for seed in 13..17 {
        let total = r.random_range(1..12 * TILE);
        let lens = uneven_chunks(&mut r, total, 7);
        check_chunks(&ctx, &lens, seed, seed % 2 == 1);
    }
}

#[test]
fn more_tiles_than_one_dispatch_dimension_allows() {
    // 16 workgroups per dimension: 17 tiles need a second grid row.
    let ctx = ctx_with_max_dispatch(16);
    let mut r = rng(5);
    let n = 17 * TILE + 5;
    let values = random_u32s(&mut r, n, u32::MAX);
    check_single(&ctx, &values, None, false, None);
    let starts = random_flags(&mut r, n, 0.0002);
    check_single(&ctx, &values, Some(&starts), true, None);
    // Several 2-D chunks in one sequence.
    check_chunks(&ctx, &[20 * TILE + 1, 0, 33 * TILE], 20, true);
}

#[test]
fn small_tiles_forced_fallback_and_starved_schedules() {
    let ctx = ctx();
    let mut r = rng(6);
    let n = 40 * 128 + 7;
    let values = random_u32s(&mut r, n, u32::MAX);
    let starts = random_flags(&mut r, n, 0.004);
    for (force_fallback, reverse_tiles) in [(false, false), (true, false), (false, true)] {
        let options = ScanKernelOptions {
            policy: SMALL,
            subgroups: false,
            subgroup_lookback: false,
            force_fallback,
            reverse_tiles,
        };
        check_single(&ctx, &values, None, true, Some(options));
        check_single(&ctx, &values, Some(&starts), false, Some(options));
    }
}

#[test]
fn import_overrides_rebind_between_encodes() {
    let ctx = ctx();
    let mut r = rng(7);
    let n = 3 * TILE + 11;
    let a = random_u32s(&mut r, n, 1000);
    let b = random_u32s(&mut r, n, 1000);
    let mut g = CommandGraph::new("scan-override", &ctx.device);
    let ab = upload(&ctx, &a);
    let bb = upload(&ctx, &b);
    let ob = upload(&ctx, &vec![POISON; n]);
    let ob2 = upload(&ctx, &vec![POISON; n]);
    let input = import_view(&mut g, "in", &ab, 0, n as u64);
    let output = import_view(&mut g, "out", &ob, 0, n as u64);
    Scan {
        id: "scan".into(),
        input: input.into(),
        output: output.into(),
        inclusive: false,
        segment_starts: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    let mut compiled = g.compile().unwrap();
    assert_eq!(
        compiled.stats().logical_transient_count,
        1,
        "tile status is a transient"
    );
    let mut encode = |overrides: &[(gpugraph_command::BufferHandle, &wgpu::Buffer)]| {
        encode_wait(&ctx, &mut compiled, overrides)
    };
    encode(&[]);
    assert_eq!(read_buffer(&ctx, &ob), cpu::scan(&a, None, false));
    // Second encode reads another input buffer and writes another output buffer.
    encode(&[(input.buffer(), &bb), (output.buffer(), &ob2)]);
    assert_eq!(read_buffer(&ctx, &ob2), cpu::scan(&b, None, false));
    assert_eq!(
        read_buffer(&ctx, &ob),
        cpu::scan(&a, None, false),
        "default output untouched"
    );
    // Back to the defaults.
    encode(&[]);
    assert_eq!(read_buffer(&ctx, &ob), cpu::scan(&a, None, false));
}

#[test]
fn bad_views_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let a = upload(&ctx, &[1; 64]);
    let o = upload(&ctx, &[0; 64]);
    let va = import_view(&mut g, "a", &a, 0, 32);
    let va2 = g
        .create_packed_view(va.buffer(), VectorFormat::Uint32, 32)
        .and_then(|_| {
            g.create_data_view(
                va.buffer(),
                gpugraph_command::DataViewDescriptor::packed(VectorFormat::Uint32, 32)
                    .at_offset(128),
            )
        })
        .unwrap();
    let vo = import_view(&mut g, "o", &o, 0, 32);
    let scan = |input: DataView, output: DataView, starts: Option<VectorView>| Scan {
        id: "s".into(),
        input: input.into(),
        output: output.into(),
        inclusive: false,
        segment_starts: starts,
    };
    let err = scan(va, va2, None).add_to_graph(&mut g).unwrap_err();
    assert!(matches!(err, AlgorithmError::Aliased { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "scan s: output and input share buffer a: the scan kernel does not work in place; write the result to another buffer"
    );
    let short = g
        .create_packed_view(vo.buffer(), VectorFormat::Uint32, 31)
        .unwrap();
    let err = scan(va, short, None).add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::ChunkMismatch { what, actual, expected, .. } if &**what == "output" && **actual == [31] && **expected == [32]),
        "{err}"
    );
    let floats = g
        .create_packed_view(va.buffer(), VectorFormat::Float32, 32)
        .unwrap();
    let err = scan(floats, vo, None).add_to_graph(&mut g).unwrap_err();
    assert_eq!(err.to_string(), "scan s: input must be uint32, got float32");
    let err = scan(va, vo, Some(VectorView::from(vo)))
        .add_to_graph(&mut g)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("segment_starts and input share buffer")
            || err
                .to_string()
                .contains("output and segment_starts share buffer o"),
        "{err}"
    );
    let err = scan(va, vo, Some(VectorView::from_chunks(vec![va, va])))
        .add_to_graph(&mut g)
        .unwrap_err();
    assert!(matches!(err, AlgorithmError::ChunkMismatch { .. }), "{err}");
    // A valid scan still works after the rejected ones.
    scan(va, vo, None).add_to_graph(&mut g).unwrap();
}

#[test]
fn empty_scan_records_nothing() {
    let ctx = ctx();
    let mut g = CommandGraph::new("empty", &ctx.device);
    let a = upload(&ctx, &[1; 4]);
    let o = upload(&ctx, &[POISON; 4]);
    let va = import_view(&mut g, "a", &a, 0, 0);
    let vo = import_view(&mut g, "o", &o, 0, 0);
    Scan {
        id: "s".into(),
        input: VectorView::from_chunks(vec![va, va]),
        output: VectorView::from_chunks(vec![vo, vo]),
        inclusive: true,
        segment_starts: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    let compiled = g.compile().unwrap();
    assert_eq!(compiled.stats().logical_transient_count, 0);
    drop(compiled);
    let mut g = CommandGraph::new("empty", &ctx.device);
    let va = import_view(&mut g, "a", &a, 0, 0);
    let vo = import_view(&mut g, "o", &o, 0, 0);
    Scan {
        id: "s".into(),
        input: va.into(),
        output: vo.into(),
        inclusive: true,
        segment_starts: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(&ctx, g);
    assert_eq!(read_buffer(&ctx, &o), [POISON; 4]);
}

#[test]
fn bench_entry_point_builds_a_working_graph() {
    let ctx = ctx();
    let n = 10_000usize;
    let data = random_u32s(&mut rng(8), n, 50);
    let input = upload(&ctx, &data);
    let output = upload(&ctx, &vec![POISON; n]);
    let g = gpugraph_gpgpu::scan::scan_graph(&ctx.device, "bench", &input, &output, n as u64, true)
        .unwrap();
    run(&ctx, g);
    assert_eq!(read_buffer(&ctx, &output), cpu::scan(&data, None, true));
}
