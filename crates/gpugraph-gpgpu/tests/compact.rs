//! The compaction family on the GPU vs the CPU oracles: boundary and random sizes × masks,
//! counts inside indirect draw records, overflow, chunked vectors (direct and staged output
//! paths), 2-D dispatch, the fallback path, import overrides, indexed and partitioned range
//! compaction, and named errors. Outputs are poisoned so unwritten rows stay visible.

mod common;

use common::*;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, DataView, DataViewDescriptor, GpuContext,
    VectorFormat, VectorView,
};
use gpugraph_gpgpu::compact::cpu;
use gpugraph_gpgpu::scan::{ScanKernelOptions, ScanPolicy, CPU_COMPACTION_POLICY};
use gpugraph_gpgpu::{
    AlgorithmError, Compaction, IndexedRangeCompaction, PartitionedIndexedRangeCompaction,
};
use rand::Rng;

const TILE: usize = 4096;
/// Poisoned rows after every output view.
const TAIL: usize = 4;

/// Masks: none, all, alternating, random 50% with arbitrary nonzero words, sparse.
fn masks(r: &mut impl Rng, n: usize) -> Vec<(&'static str, Vec<u32>)> {
    vec![
        ("none", vec![0; n]),
        ("all", vec![1; n]),
        ("alternating", (0..n as u32).map(|i| i % 2).collect()),
        (
            "random",
            (0..n)
                .map(|_| {
                    if r.random_bool(0.5) {
                        r.random_range(1..=u32::MAX)
                    } else {
                        0
                    }
                })
                .collect(),
        ),
        (
            "sparse",
            (0..n).map(|_| u32::from(r.random_bool(0.002))).collect(),
        ),
    ]
}

/// A buffer of `words` with the usages a count target has in practice.
fn record_buffer(ctx: &GpuContext, words: &[u32], usage: U) -> wgpu::Buffer {
    let buf = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("record"),
        size: words.len() as u64 * 4,
        usage: usage | U::COPY_SRC | U::COPY_DST,
        mapped_at_creation: false,
    });
    ctx.queue.write_buffer(&buf, 0, bytemuck::cast_slice(words));
    buf
}

fn word_view(g: &mut CommandGraph, h: BufferHandle, word: u64) -> DataView {
    g.create_data_view(
        h,
        DataViewDescriptor::packed(VectorFormat::Uint32, 1).at_offset(word * 4),
    )
    .unwrap()
}

fn import(g: &mut CommandGraph, id: &str, b: &wgpu::Buffer) -> BufferHandle {
    g.import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)
        .unwrap()
}

/// One single-chunk compaction with values at element offset 1, flags at 2, the output at 3
/// of a poisoned buffer, count and overflow as words 1 and 3 of a 4-word record.
fn check_single(
    ctx: &GpuContext,
    values: &[u32],
    flags: &[u32],
    capacity: usize,
    options: Option<ScanKernelOptions>,
    what: &str,
) {
    let n = values.len();
    let mut g = CommandGraph::new("compact-test", &ctx.device);
    let vb = upload(ctx, &[&[5], values].concat());
    let fb = upload(ctx, &[&[1, 1], flags].concat());
    let ob = upload(ctx, &vec![POISON; 3 + capacity + TAIL]);
    let rb = record_buffer(ctx, &[11, POISON, 33, POISON], U::STORAGE);
    let v = import_view(&mut g, "values", &vb, 1, n as u64);
    let f = import_view(&mut g, "flags", &fb, 2, n as u64);
    let o = import_view(&mut g, "output", &ob, 3, capacity as u64);
    let rh = import(&mut g, "record", &rb);
    let compaction = Compaction {
        id: "compact".into(),
        values: v.into(),
        flags: f.into(),
        output: o.into(),
        count: word_view(&mut g, rh, 1),
        overflow: Some(word_view(&mut g, rh, 3)),
    };
    match options {
        Some(o) => compaction.add_to_graph_with(&mut g, o),
        None => compaction.add_to_graph(&mut g),
    }
    .unwrap();
    run(ctx, g);
    let expected = cpu::compact(values, flags, capacity);
    let out = read_buffer(ctx, &ob);
    let record = read_buffer(ctx, &rb);
    let what = format!("{what}: n={n} capacity={capacity}");
    assert_eq!(
        record,
        [11, expected.count, 33, u32::from(expected.overflow)],
        "{what}: count record"
    );
    assert_eq!(&out[..3], &[POISON; 3], "{what}: rows before the output");
    let written = expected.written.len();
    if let Some(i) = (0..written).find(|&i| out[3 + i] != expected.written[i]) {
        panic!(
            "{what}: survivor {i}: got {:#x}, expected {:#x}",
            out[3 + i],
            expected.written[i]
        );
    }
    assert!(
        out[3 + written..].iter().all(|&w| w == POISON),
        "{what}: rows past the count were written"
    );
}

#[test]
fn sizes_and_masks_match_the_oracle() {
    let ctx = ctx();
    let mut r = rng(1);
    let cpu_tile = CPU_COMPACTION_POLICY.tile_elements() as usize;
    let mut sizes = vec![0, 1, 255, 256, 257, cpu_tile - 1, cpu_tile, cpu_tile + 1];
    sizes.extend([TILE - 1, TILE, TILE + 1, 6 * TILE + 3]);
    sizes.extend((0..2).map(|_| r.random_range(2..16 * TILE)));
    // The device's default, and the default tile itself, which a CPU adapter (lavapipe)
    // no longer gets by default.
    let options = [None, Some(ScanKernelOptions::for_device(&ctx.device))];
    for &n in &sizes {
        let values: Vec<u32> = (0..n as u32).map(|i| i ^ 0x5A5A_0000).collect();
        for (name, flags) in masks(&mut r, n) {
            for o in options {
                check_single(&ctx, &values, &flags, n, o, name);
            }
        }
    }
}

#[test]
fn cpu_adapters_get_the_cpu_tile() {
    let ctx = ctx();
    let cpu = ctx.device.adapter_info().device_type == wgpu::DeviceType::Cpu;
    let policy = ScanKernelOptions::for_compaction(&ctx.device).policy;
    assert_eq!(policy == CPU_COMPACTION_POLICY, cpu, "{policy:?}");
}

#[test]
fn overflow_writes_the_first_survivors_and_reports_the_true_count() {
    let ctx = ctx();
    let mut r = rng(2);
    let n = 3 * TILE + 100;
    let values = random_u32s(&mut r, n, u32::MAX);
    let flags = masks(&mut r, n).swap_remove(3).1;
    for capacity in [0, 1, 777, TILE + 5] {
        check_single(&ctx, &values, &flags, capacity, None, "overflow");
    }
    // Exactly at capacity: no overflow.
    let exact = flags.iter().filter(|&&f| f != 0).count();
    check_single(&ctx, &values, &flags, exact, None, "exact capacity");
}

#[test]
fn count_lands_in_an_indirect_draw_record() {
    let ctx = ctx();
    for n in [0usize, 1000] {
        let values: Vec<u32> = (0..n as u32).collect();
        let flags: Vec<u32> = (0..n as u32).map(|i| u32::from(i % 3 == 0)).collect();
        let mut g = CommandGraph::new("indirect", &ctx.device);
        let vb = upload(&ctx, &values);
        let fb = upload(&ctx, &flags);
        let ob = upload(&ctx, &vec![POISON; n.max(1)]);
        // [vertexCount, instanceCount, firstVertex, firstInstance]
        let draw = record_buffer(&ctx, &[6, POISON, 7, 8], U::STORAGE | U::INDIRECT);
        let v = import_view(&mut g, "values", &vb, 0, n as u64);
        let f = import_view(&mut g, "flags", &fb, 0, n as u64);
        let o = import_view(&mut g, "ids", &ob, 0, n as u64);
        let dh = import(&mut g, "draw", &draw);
        Compaction {
            id: "visible".into(),
            values: v.into(),
            flags: f.into(),
            output: o.into(),
            count: word_view(&mut g, dh, 1),
            overflow: None,
        }
        .add_to_graph(&mut g)
        .unwrap();
        run(&ctx, g);
        let expected = cpu::compact(&values, &flags, n);
        assert_eq!(read_buffer(&ctx, &draw), [6, expected.count, 7, 8], "n={n}");
        assert_eq!(
            &read_buffer(&ctx, &ob)[..expected.written.len()],
            expected.written
        );
    }
}

/// Chunked values/flags; output chunks in `out_lens` placed per `layout`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum OutLayout {
    /// Every output chunk in its own buffer (staged path).
    Separate,
    /// All output chunks back to back in one buffer (direct path over the merged range).
    Contiguous,
    /// One buffer with a gap between chunks (staged path).
    Gapped,
}

fn check_vector(
    ctx: &GpuContext,
    in_lens: &[usize],
    out_lens: &[usize],
    layout: OutLayout,
    seed: u64,
) {
    let mut r = rng(seed);
    let total: usize = in_lens.iter().sum();
    let values = random_u32s(&mut r, total, u32::MAX);
    let flags: Vec<u32> = (0..total).map(|_| u32::from(r.random_bool(0.6))).collect();
    let mut g = CommandGraph::new("compact-vector", &ctx.device);
    let (mut vv, mut vf) = (vec![], vec![]);
    let mut at = 0;
    for (k, &len) in in_lens.iter().enumerate() {
        let vb = upload(ctx, &values[at..at + len]);
        let fb = upload(ctx, &[vec![3; k], flags[at..at + len].to_vec()].concat());
        vv.push(import_view(&mut g, &format!("v{k}"), &vb, 0, len as u64));
        vf.push(import_view(
            &mut g,
            &format!("f{k}"),
            &fb,
            k as u64,
            len as u64,
        ));
        at += len;
    }
    let gap = 2;
    let mut out_bufs = Vec::new();
    let mut vo = Vec::new();
    match layout {
        OutLayout::Separate => {
            for (k, &len) in out_lens.iter().enumerate() {
                let ob = upload(ctx, &vec![POISON; len + TAIL]);
                vo.push(import_view(&mut g, &format!("o{k}"), &ob, 0, len as u64));
                out_bufs.push((ob, vec![(0usize, len)]));
            }
        }
        OutLayout::Contiguous | OutLayout::Gapped => {
            let step = if layout == OutLayout::Gapped { gap } else { 0 };
            let size: usize = out_lens.iter().map(|l| l + step).sum::<usize>() + TAIL;
            let ob = upload(ctx, &vec![POISON; size]);
            let h = import(&mut g, "out", &ob);
            let mut ranges = Vec::new();
            let mut at = 0;
            for &len in out_lens {
                vo.push(
                    g.create_data_view(
                        h,
                        DataViewDescriptor::packed(VectorFormat::Uint32, len as u64)
                            .at_offset(at as u64 * 4),
                    )
                    .unwrap(),
                );
                ranges.push((at, len));
                at += len + step;
            }
            out_bufs.push((ob, ranges));
        }
    }
    let cb = upload(ctx, &[POISON, POISON]);
    let ch = import(&mut g, "count", &cb);
    Compaction {
        id: "compact".into(),
        values: VectorView::from_chunks(vv),
        flags: VectorView::from_chunks(vf),
        output: VectorView::from_chunks(vo),
        count: word_view(&mut g, ch, 0),
        overflow: Some(word_view(&mut g, ch, 1)),
    }
    .add_to_graph(&mut g)
    .unwrap();
    let compiled = g.compile().unwrap();
    let staged = compiled
        .stats()
        .physical_tenants
        .iter()
        .flatten()
        .any(|t| t.contains("staged"));
    assert_eq!(
        staged,
        layout != OutLayout::Contiguous && out_lens.iter().filter(|&&l| l > 0).count() > 1,
        "{layout:?} {out_lens:?}: staged path choice"
    );
    let mut compiled = compiled;
    encode_wait(ctx, &mut compiled, &[]);

    let capacity: usize = out_lens.iter().sum();
    let expected = cpu::compact(&values, &flags, capacity);
    let parts = cpu::split_output(&expected.written, out_lens);
    let what = format!("in {in_lens:?} out {out_lens:?} {layout:?}");
    assert_eq!(
        read_buffer(ctx, &cb),
        [expected.count, u32::from(expected.overflow)],
        "{what}"
    );
    let mut k = 0;
    for (ob, ranges) in &out_bufs {
        let all = read_buffer(ctx, ob);
        let mut covered = vec![false; all.len()];
        for &(at, len) in ranges {
            let part = &parts[k];
            assert_eq!(
                &all[at..at + part.len()],
                part.as_slice(),
                "{what}: chunk {k}"
            );
            assert!(
                all[at + part.len()..at + len].iter().all(|&w| w == POISON),
                "{what}: chunk {k} rows past the count were written"
            );
            covered[at..at + len].iter_mut().for_each(|c| *c = true);
            k += 1;
        }
        for (i, &w) in all.iter().enumerate() {
            assert!(
                covered[i] || w == POISON,
                "{what}: row {i} outside the chunks was written"
            );
        }
    }
}

#[test]
fn vectors_fill_output_chunks_as_one_sequence() {
    let ctx = ctx();
    let mut r = rng(3);
    let ins: [&[usize]; 3] = [&[0, 5, TILE + 3, 0, 1, 2 * TILE], &[TILE, TILE], &[300]];
    for (i, &in_lens) in ins.iter().enumerate() {
        let total: usize = in_lens.iter().sum();
        let outs: Vec<Vec<usize>> = vec![
            vec![total],
            vec![0, total / 3, 0, total - total / 3, 7],
            uneven_chunks(&mut r, total / 2, 5),
        ];
        for (j, out_lens) in outs.iter().enumerate() {
            for layout in [
                OutLayout::Separate,
                OutLayout::Contiguous,
                OutLayout::Gapped,
            ] {
                check_vector(&ctx, in_lens, out_lens, layout, (10 * i + j) as u64);
            }
        }
    }
    for seed in 0..3 {
        let total = r.random_range(1..8 * TILE);
        let in_lens = uneven_chunks(&mut r, total, 6);
        let out_total = r.random_range(0..total);
        let out_lens = uneven_chunks(&mut r, out_total, 4);
        check_vector(&ctx, &in_lens, &out_lens, OutLayout::Separate, 100 + seed);
    }
}

#[test]
fn more_tiles_than_one_dispatch_dimension_allows() {
    let ctx = ctx_with_max_dispatch(16);
    let mut r = rng(4);
    let n = 17 * TILE + 9;
    let values = random_u32s(&mut r, n, u32::MAX);
    let flags = masks(&mut r, n).swap_remove(3).1;
    check_single(&ctx, &values, &flags, n, None, "2-D");
    check_single(&ctx, &values, &flags, n / 3, None, "2-D overflow");
    check_vector(
        &ctx,
        &[20 * TILE, 0, 3],
        &[10 * TILE, 30 * TILE],
        OutLayout::Separate,
        7,
    );
}

/// 128-element tiles: many tiles (and the fallback paths) from small inputs.
const SMALL: ScanPolicy = ScanPolicy {
    workgroup_size: 32,
    vec4_per_thread: 1,
    lookback_window: 8,
    spin_limit: 2,
    unroll: true,
    gather_first: false,
    gather_early: false,
};

#[test]
fn compaction_takes_tiles_too_large_for_a_segmented_scan() {
    // 512 x 8 vec4 = 16,384-row tiles: the workgroup storage of a segmented scan with this
    // policy exceeds 32 KiB, but compaction never runs segmented, so it must be accepted.
    let ctx = ctx();
    let policy = ScanPolicy {
        workgroup_size: 512,
        vec4_per_thread: 8,
        ..ScanPolicy::DEFAULT
    };
    let limit = ctx.device.limits().max_compute_workgroup_storage_size;
    assert!(policy.workgroup_storage_bytes(false) <= limit);
    let mut r = rng(11);
    let tile = policy.tile_elements() as usize;
    for n in [tile - 1, tile, 3 * tile + 5] {
        let values = random_u32s(&mut r, n, u32::MAX);
        for (what, flags) in masks(&mut r, n) {
            for gather in 0..3 {
                let options = ScanKernelOptions {
                    policy: ScanPolicy {
                        gather_first: gather == 1,
                        gather_early: gather == 2,
                        ..policy
                    },
                    ..ScanKernelOptions::for_device(&ctx.device)
                };
                let what = format!("{what} n {n} gather {gather}");
                check_single(&ctx, &values, &flags, n, Some(options), &what);
            }
        }
    }
}

#[test]
fn fallback_and_starved_schedules_compact_correctly() {
    let ctx = ctx();
    let mut r = rng(5);
    let n = 50 * 128 + 3;
    let values = random_u32s(&mut r, n, u32::MAX);
    let flags = masks(&mut r, n).swap_remove(3).1;
    // gather: 0 values loaded between the stores, 1 before the first store, 2 before the
    // look-back.
    for (force_fallback, reverse_tiles, subgroups, sglb, gather) in [
        (false, false, true, false, 0),
        (true, false, false, false, 0),
        (false, true, true, false, 0),
        (false, false, false, true, 0),
        (true, false, false, true, 0),
        (false, true, false, true, 0),
        (false, false, true, true, 1),
        (true, false, false, true, 1),
        (false, false, true, true, 2),
        (true, false, false, true, 2),
        (false, true, false, true, 2),
    ] {
        let options = ScanKernelOptions {
            policy: ScanPolicy {
                gather_first: gather == 1,
                gather_early: gather == 2,
                ..SMALL
            },
            subgroups: subgroups && ctx.device.features().contains(wgpu::Features::SUBGROUP),
            subgroup_lookback: sglb,
            force_fallback,
            reverse_tiles,
        };
        let what = format!("fallback {force_fallback} reverse {reverse_tiles} gather {gather}");
        check_single(&ctx, &values, &flags, n, Some(options), &what);
        check_single(&ctx, &values, &flags, 1000, Some(options), &what);
    }
}

#[test]
fn import_overrides_rebind_between_encodes() {
    let ctx = ctx();
    let mut r = rng(6);
    let n = 2 * TILE + 77;
    let (va, vb) = (
        random_u32s(&mut r, n, 1 << 30),
        random_u32s(&mut r, n, 1 << 30),
    );
    let (fa, fb) = (random_u32s(&mut r, n, 2), random_u32s(&mut r, n, 3));
    let mut g = CommandGraph::new("override", &ctx.device);
    let bufs: Vec<wgpu::Buffer> = [&va, &vb, &fa, &fb]
        .iter()
        .map(|d| upload(&ctx, d))
        .collect();
    let ob = upload(&ctx, &vec![POISON; n]);
    let cb = upload(&ctx, &[POISON]);
    let v = import_view(&mut g, "values", &bufs[0], 0, n as u64);
    let f = import_view(&mut g, "flags", &bufs[2], 0, n as u64);
    let o = import_view(&mut g, "out", &ob, 0, n as u64);
    let c = import_view(&mut g, "count", &cb, 0, 1);
    Compaction {
        id: "compact".into(),
        values: v.into(),
        flags: f.into(),
        output: o.into(),
        count: c,
        overflow: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    let mut compiled = g.compile().unwrap();
    let mut encode =
        |overrides: &[(BufferHandle, &wgpu::Buffer)]| encode_wait(&ctx, &mut compiled, overrides);
    let check = |values: &[u32], flags: &[u32]| {
        let e = cpu::compact(values, flags, n);
        assert_eq!(read_buffer(&ctx, &cb), [e.count]);
        assert_eq!(
            &read_buffer(&ctx, &ob)[..e.written.len()],
            e.written.as_slice()
        );
    };
    encode(&[]);
    check(&va, &fa);
    encode(&[(v.buffer(), &bufs[1]), (f.buffer(), &bufs[3])]);
    check(&vb, &fb);
    encode(&[]);
    check(&va, &fa);
}

#[test]
fn bad_views_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let a = upload(&ctx, &[1; 64]);
    let o = upload(&ctx, &[0; 64]);
    let va = import_view(&mut g, "a", &a, 0, 16);
    let vf = g
        .create_data_view(
            va.buffer(),
            DataViewDescriptor::packed(VectorFormat::Uint32, 16).at_offset(64),
        )
        .unwrap();
    let vo = import_view(&mut g, "o", &o, 0, 16);
    let count_in_output = g
        .create_data_view(
            vo.buffer(),
            DataViewDescriptor::packed(VectorFormat::Uint32, 1).at_offset(8),
        )
        .unwrap();
    let count_after = g
        .create_data_view(
            vo.buffer(),
            DataViewDescriptor::packed(VectorFormat::Uint32, 1).at_offset(128),
        )
        .unwrap();
    let compaction = |output: DataView, count: DataView| Compaction {
        id: "c".into(),
        values: va.into(),
        flags: vf.into(),
        output: output.into(),
        count,
        overflow: None,
    };
    let err = compaction(vo, count_in_output)
        .add_to_graph(&mut g)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "compaction c: output and count share buffer o: their byte ranges overlap"
    );
    let err = compaction(vf, count_after)
        .add_to_graph(&mut g)
        .unwrap_err();
    assert!(matches!(err, AlgorithmError::Aliased { .. }), "{err}");
    assert!(
        err.to_string().contains("output and values share buffer a"),
        "{err}"
    );
    let two = g
        .create_packed_view(vo.buffer(), VectorFormat::Uint32, 2)
        .unwrap();
    let err = compaction(vo, two).add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::LengthMismatch { what, actual: 2, expected: 1, .. } if &**what == "count"),
        "{err}"
    );
    let err = Compaction {
        flags: VectorView::from_chunks(vec![vf, vf]),
        ..compaction(vo, count_after)
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::ChunkMismatch { what, expected, actual, .. }
            if &**what == "flags" && **expected == [16] && **actual == [16, 16]),
        "{err}"
    );
    compaction(vo, count_after).add_to_graph(&mut g).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Indexed range compaction.

fn random_ranges(r: &mut impl Rng, count: usize, n: u32) -> Vec<[u32; 2]> {
    (0..count)
        .map(|_| match r.random_range(0..10) {
            0 => {
                let s = r.random_range(0..=n + 5);
                [s, s.saturating_sub(r.random_range(1..4))] // reversed (or empty at 0)
            }
            1 => [r.random_range(0..=n), n + r.random_range(1..100)], // past the end
            2 => [n + 3, n + 3],                                      // empty outside
            _ => {
                let s = r.random_range(0..=n);
                [s, (s + r.random_range(0..600)).min(n)]
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn check_ranges(
    ctx: &GpuContext,
    ranges: &[[u32; 2]],
    flags: &[u32],
    capacity: usize,
    max_candidates: u64,
    what: &str,
) {
    let n = flags.len();
    let mut g = CommandGraph::new("ranges", &ctx.device);
    let flat: Vec<u32> = ranges.iter().flatten().copied().collect();
    let rb = upload(ctx, &[vec![0, 0], flat].concat());
    let rh = import(&mut g, "ranges", &rb);
    let rv = g
        .create_data_view(
            rh,
            DataViewDescriptor::packed(VectorFormat::Uint32x2, ranges.len() as u64).at_offset(8),
        )
        .unwrap();
    let fb = upload(ctx, flags);
    let fv = import_view(&mut g, "flags", &fb, 0, n as u64);
    let ob = upload(ctx, &vec![POISON; capacity + TAIL]);
    let ov = import_view(&mut g, "ids", &ob, 0, capacity as u64);
    let sb = upload(ctx, &[POISON; 4]);
    let sh = import(&mut g, "scalars", &sb);
    IndexedRangeCompaction {
        id: "visible".into(),
        ranges: rv,
        flags: fv,
        output: ov,
        count: word_view(&mut g, sh, 0),
        overflow: Some(word_view(&mut g, sh, 1)),
        invalid_ranges: Some(word_view(&mut g, sh, 3)),
        max_candidates,
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(ctx, g);
    let e = cpu::indexed_range_compact(ranges, flags, capacity, max_candidates);
    let what = format!(
        "{what}: {} ranges, n={n}, capacity {capacity}, bound {max_candidates}",
        ranges.len()
    );
    assert_eq!(
        read_buffer(ctx, &sb),
        [e.compacted.count, e.overflow_bits, POISON, e.invalid_ranges],
        "{what}: count, overflow, untouched word, invalid"
    );
    let out = read_buffer(ctx, &ob);
    let w = e.compacted.written.len();
    assert_eq!(&out[..w], e.compacted.written.as_slice(), "{what}");
    assert!(
        out[w..].iter().all(|&x| x == POISON),
        "{what}: rows past the count"
    );
}

#[test]
fn indexed_ranges_emit_source_ids_in_range_order() {
    let ctx = ctx();
    let mut r = rng(8);
    for (count, n) in [(1usize, 1u32), (3, 300), (40, 5000), (700, 20_000)] {
        let ranges = random_ranges(&mut r, count, n);
        let flags: Vec<u32> = (0..n).map(|_| u32::from(r.random_bool(0.5)) * 9).collect();
        let total: u64 = ranges
            .iter()
            .map(|&[s, e]| {
                let (s, e) = cpu::clamp_range(s, e, n);
                u64::from(e - s)
            })
            .sum();
        check_ranges(&ctx, &ranges, &flags, total as usize, total.max(1), "fits");
        check_ranges(
            &ctx,
            &ranges,
            &flags,
            (total / 3) as usize,
            total + 10,
            "capacity",
        );
        check_ranges(
            &ctx,
            &ranges,
            &flags,
            total as usize,
            total / 2,
            "candidate bound",
        );
    }
    // Edge cases: no ranges, no candidates allowed, empty flags.
    check_ranges(&ctx, &[], &[1, 1], 4, 8, "no ranges");
    check_ranges(&ctx, &[[0, 2]], &[1, 1], 4, 0, "bound 0");
    check_ranges(&ctx, &[[0, 2], [3, 1]], &[], 4, 8, "no flags");
}

// ---------------------------------------------------------------------------------------------
// Partitioned indexed range compaction.

fn check_partitions(
    ctx: &GpuContext,
    rows: &[usize],
    capacities: &[usize],
    bases: Option<Vec<u32>>,
    seed: u64,
    options: Option<ScanKernelOptions>,
) {
    let mut r = rng(seed);
    let p = rows.len();
    let base_of = bases
        .clone()
        .unwrap_or_else(|| cpu::consecutive_bases(rows));
    let flags: Vec<Vec<u32>> = rows
        .iter()
        .map(|&n| (0..n).map(|_| u32::from(r.random_bool(0.5))).collect())
        .collect();
    let ranges: Vec<[u32; 2]> = (0..p)
        .map(|k| {
            let (b, n) = (base_of[k], rows[k] as u32);
            match r.random_range(0..8) {
                0 => [b + n / 2, b],                   // reversed
                1 => [b.saturating_sub(3), b + n + 2], // past both ends
                2 => [b, b + n],                       // whole partition
                _ => {
                    let s = b + r.random_range(0..=n);
                    [s, r.random_range(s..=b + n)]
                }
            }
        })
        .collect();
    let mut g = CommandGraph::new("partitions", &ctx.device);
    let flat: Vec<u32> = ranges.iter().flatten().copied().collect();
    let rb = upload(ctx, &flat);
    let rh = import(&mut g, "ranges", &rb);
    let rv = g
        .create_packed_view(rh, VectorFormat::Uint32x2, p as u64)
        .unwrap();
    let (mut vf, mut vo, mut outs) = (vec![], vec![], vec![]);
    for k in 0..p {
        let fb = upload(ctx, &[vec![7; k % 3], flags[k].clone()].concat());
        vf.push(import_view(
            &mut g,
            &format!("f{k}"),
            &fb,
            (k % 3) as u64,
            rows[k] as u64,
        ));
        let ob = upload(ctx, &vec![POISON; capacities[k] + TAIL]);
        vo.push(import_view(
            &mut g,
            &format!("o{k}"),
            &ob,
            0,
            capacities[k] as u64,
        ));
        outs.push(ob);
    }
    let cb = upload(ctx, &vec![POISON; 2 * p + 4]);
    let ch = import(&mut g, "counts", &cb);
    let view = |g: &mut CommandGraph, word: u64, len: u64| {
        g.create_data_view(
            ch,
            DataViewDescriptor::packed(VectorFormat::Uint32, len).at_offset(word * 4),
        )
        .unwrap()
    };
    let counts = view(&mut g, 0, p as u64);
    let overflow = view(&mut g, p as u64, p as u64);
    let total = view(&mut g, 2 * p as u64 + 1, 1);
    let invalid = view(&mut g, 2 * p as u64 + 3, 1);
    let compaction = PartitionedIndexedRangeCompaction {
        id: "visible".into(),
        ranges: rv,
        flags: VectorView::from_chunks(vf),
        chunk_bases: bases,
        outputs: VectorView::from_chunks(vo),
        partition_counts: counts,
        total_count: total,
        overflow: Some(overflow),
        invalid_ranges: Some(invalid),
    };
    match options {
        Some(o) => compaction.add_to_graph_with(&mut g, o),
        None => compaction.add_to_graph(&mut g),
    }
    .unwrap();
    run(ctx, g);
    let flag_refs: Vec<&[u32]> = flags.iter().map(Vec::as_slice).collect();
    let e = cpu::partitioned_compact(&ranges, &flag_refs, &base_of, capacities);
    let what = format!("rows {rows:?} capacities {capacities:?} seed {seed}");
    let words = read_buffer(ctx, &cb);
    let mut expected_words: Vec<u32> = e.partitions.iter().map(|c| c.count).collect();
    expected_words.extend(e.partitions.iter().map(|c| u32::from(c.overflow)));
    expected_words.extend([POISON, e.total, POISON, e.invalid_ranges]);
    assert_eq!(
        words, expected_words,
        "{what}: counts, overflow, total, invalid"
    );
    for (k, ob) in outs.iter().enumerate() {
        let out = read_buffer(ctx, ob);
        let w = &e.partitions[k].written;
        assert_eq!(&out[..w.len()], w.as_slice(), "{what}: partition {k}");
        assert!(
            out[w.len()..].iter().all(|&x| x == POISON),
            "{what}: partition {k} tail"
        );
    }
}

#[test]
fn partitions_emit_global_ids_into_their_own_chunks() {
    let ctx = ctx();
    let mut r = rng(9);
    check_partitions(
        &ctx,
        &[10, 0, TILE + 7, 1, 3 * TILE],
        &[10, 4, 100, 0, 3 * TILE],
        None,
        1,
        None,
    );
    check_partitions(
        &ctx,
        &[300, 2 * TILE, 0],
        &[50, 2 * TILE, 3],
        Some(vec![1_000_000, 5, 77]),
        2,
        None,
    );
    for seed in 3..6 {
        let p = r.random_range(1..9);
        let rows: Vec<usize> = (0..p).map(|_| r.random_range(0..3 * TILE)).collect();
        let caps: Vec<usize> = rows.iter().map(|&n| r.random_range(0..=n)).collect();
        check_partitions(&ctx, &rows, &caps, None, seed, None);
    }
    check_partitions(&ctx, &[], &[], None, 7, None);
    // Every partition is its own sequence, also when tiles start out of order or all
    // predecessors are recomputed: the fallback must stop at the partition's first tile.
    for (force_fallback, reverse_tiles) in [(true, false), (false, true)] {
        let options = ScanKernelOptions {
            policy: SMALL,
            subgroups: false,
            subgroup_lookback: false,
            force_fallback,
            reverse_tiles,
        };
        check_partitions(
            &ctx,
            &[700, 0, 33, 1300],
            &[400, 1, 33, 200],
            None,
            8,
            Some(options),
        );
    }
}

#[test]
fn bench_entry_point_builds_a_working_graph() {
    let ctx = ctx();
    let n = 10_000usize;
    let values: Vec<u32> = (0..n as u32).collect();
    let flags = random_u32s(&mut rng(10), n, 2);
    let vb = upload(&ctx, &values);
    let fb = upload(&ctx, &flags);
    let ob = upload(&ctx, &vec![POISON; n]);
    let draw = record_buffer(&ctx, &[3, 0, 0, 0], U::STORAGE | U::INDIRECT);
    let g = gpugraph_gpgpu::compact::compaction_graph(
        &ctx.device,
        "bench",
        &vb,
        &fb,
        &ob,
        &draw,
        4,
        n as u64,
        n as u64,
    )
    .unwrap();
    run(&ctx, g);
    let e = cpu::compact(&values, &flags, n);
    assert_eq!(read_buffer(&ctx, &draw), [3, e.count, 0, 0]);
    assert_eq!(
        &read_buffer(&ctx, &ob)[..e.written.len()],
        e.written.as_slice()
    );
}
