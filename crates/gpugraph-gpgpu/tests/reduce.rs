//! Reductions on the GPU vs the CPU oracle: every op for float32 and uint32, masks, NaN/±inf,
//! unaligned heads and tails, chunks, grid-stride and 2-D dispatch paths. The float sum is
//! checked bit for bit against the oracle's copy of the kernel's fixed order.

mod analysis;
mod common;

use analysis::*;
use common::*;
use gpugraph_command::{CommandGraph, DataView, GpuContext, VectorFormat as F, VectorView};
use gpugraph_gpgpu::reduce::{chunk_plan, cpu, ChunkPlan, ReduceOp, ReducePolicy, Reduction};
use gpugraph_gpgpu::AlgorithmError;
use rand::Rng;

const OPS: [ReduceOp; 5] = [
    ReduceOp::Sum,
    ReduceOp::Min,
    ReduceOp::Max,
    ReduceOp::Extent,
    ReduceOp::Count,
];

/// Input words split into chunks (`lens`), chunk k after `leads[k]` poison rows.
struct Input<'a> {
    words: &'a [u32],
    mask: Option<&'a [u32]>,
    lens: Vec<usize>,
    leads: Vec<usize>,
    format: F,
}

fn upload_chunks(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    name: &str,
    words: &[u32],
    format: F,
    lens: &[usize],
    leads: &[usize],
) -> VectorView {
    let mut chunks = Vec::new();
    let mut start = 0;
    for (ci, &len) in lens.iter().enumerate() {
        let data = [
            vec![POISON; leads[ci]],
            words[start..start + len].to_vec(),
            vec![POISON; 1],
        ]
        .concat();
        let b = upload(ctx, &data);
        chunks.push(import_typed(
            g,
            &format!("{name}{ci}"),
            &b,
            format,
            leads[ci] as u64,
            len as u64,
        ));
        start += len;
    }
    VectorView::from_chunks(chunks)
}

/// Runs every op over `input` in one graph; returns (op, result words, ignored word).
fn run_all(
    ctx: &GpuContext,
    input: &Input<'_>,
    policy: ReducePolicy,
) -> Vec<(ReduceOp, Vec<u32>, u32)> {
    let mut g = CommandGraph::new("reduce-test", &ctx.device);
    let values = upload_chunks(
        ctx,
        &mut g,
        "v",
        input.words,
        input.format,
        &input.lens,
        &input.leads,
    );
    let mask = input.mask.map(|m| {
        let leads: Vec<usize> = input.leads.iter().map(|l| (l + 1) % 4).collect();
        upload_chunks(ctx, &mut g, "m", m, F::Uint32, &input.lens, &leads)
    });
    let kind = input.format.scalar();
    let mut outs = Vec::new();
    for op in OPS {
        let (words, out_kind) = op.output_words(kind);
        let f = match out_kind {
            gpugraph_command::ScalarKind::Float => F::Float32,
            _ => F::Uint32,
        };
        let name = format!("{op:?}");
        let (b, v) = output(ctx, &mut g, &name, f, 1, words);
        let (ib, iv) = output(ctx, &mut g, &format!("{name}-ignored"), F::Uint32, 2, 1);
        Reduction {
            id: name,
            input: values.clone(),
            mask: mask.clone(),
            op,
            output: v,
            ignored: Some(iv),
        }
        .add_to_graph_with(&mut g, policy)
        .unwrap();
        outs.push((op, b, words as usize, ib));
    }
    run(ctx, g);
    outs.into_iter()
        .map(|(op, b, n, ib)| (op, read_out(ctx, &b, 1, n), read_out(ctx, &ib, 2, 1)[0]))
        .collect()
}

fn plans(input: &Input<'_>, max_dim: u32, policy: &ReducePolicy) -> Vec<ChunkPlan> {
    input
        .lens
        .iter()
        .zip(&input.leads)
        .map(|(&len, &lead)| chunk_plan(len as u64, lead as u64 * 4, max_dim, policy))
        .collect()
}

/// [`check_with`] the policy `add_to_graph` picks for the device (what users get).
fn check(ctx: &GpuContext, input: &Input<'_>, max_dim: u32, label: &str) {
    check_with(
        ctx,
        input,
        max_dim,
        label,
        ReducePolicy::for_device(&ctx.device),
    );
}

/// Every op over `input` with `policy` against the oracles; the float sum bit for bit against
/// the fixed order of `policy`'s plan.
fn check_with(
    ctx: &GpuContext,
    input: &Input<'_>,
    max_dim: u32,
    label: &str,
    policy: ReducePolicy,
) {
    let got = run_all(ctx, input, policy);
    if input.format == F::Float32 {
        let values = floats(input.words);
        let want = cpu::reduce_f32(&values, input.mask);
        let mut start = 0;
        let chunks: Vec<cpu::SumChunk<'_>> = input
            .lens
            .iter()
            .zip(plans(input, max_dim, &policy))
            .map(|(&len, plan)| {
                let c = (
                    &values[start..start + len],
                    input.mask.map(|m| &m[start..start + len]),
                    plan,
                );
                start += len;
                c
            })
            .collect();
        let sum = cpu::fixed_order_sum(&chunks);
        for (op, words, ignored) in got {
            let f = floats(&words);
            match op {
                ReduceOp::Sum => assert_eq!(
                    words[0],
                    sum.to_bits(),
                    "{label}: fixed-order sum {} vs {sum} (exact {})",
                    f[0],
                    want.sum
                ),
                ReduceOp::Min => assert_same_floats(label, &f, &[want.min]),
                ReduceOp::Max => assert_same_floats(label, &f, &[want.max]),
                ReduceOp::Extent => assert_same_floats(label, &f, &[want.min, want.max]),
                ReduceOp::Count => assert_eq!(words, vec![want.count], "{label}: count"),
            }
            assert_eq!(ignored, want.ignored, "{label}: {op:?} ignored");
            if op == ReduceOp::Sum {
                let bound = gpugraph_gpgpu::group::cpu::sum_bound(
                    want.count,
                    values
                        .iter()
                        .filter(|v| v.is_finite())
                        .map(|v| v.abs() as f64)
                        .sum(),
                );
                assert!(
                    (f[0] as f64 - want.sum).abs() <= bound,
                    "{label}: sum accuracy"
                );
            }
        }
    } else {
        let want = cpu::reduce_u32(input.words, input.mask);
        for (op, words, ignored) in got {
            let expect = match op {
                ReduceOp::Sum => vec![want.sum as u32, (want.sum >> 32) as u32],
                ReduceOp::Min => vec![want.min],
                ReduceOp::Max => vec![want.max],
                ReduceOp::Extent => vec![want.min, want.max],
                ReduceOp::Count => vec![want.count],
            };
            assert_eq!(words, expect, "{label}: {op:?}");
            assert_eq!(ignored, 0, "{label}: {op:?} ignored");
        }
    }
}

fn float_words(r: &mut impl Rng, n: usize) -> Vec<u32> {
    bits(&awkward_floats(r, n))
}

#[test]
fn float_reductions_match_the_oracle_across_sizes_and_alignments() {
    let ctx = ctx();
    let max_dim = ctx.device.limits().max_compute_workgroups_per_dimension;
    let mut r = rng(31);
    let sizes = [
        0usize, 1, 2, 3, 4, 5, 7, 255, 1023, 1024, 1025, 4095, 4096, 4097, 8193, 100_003,
    ];
    for (si, &n) in sizes.iter().enumerate() {
        let words = float_words(&mut r, n);
        let mask = random_u32s(&mut r, n, 2);
        let input = Input {
            words: &words,
            mask: (si % 3 == 1).then_some(mask.as_slice()),
            lens: vec![n],
            leads: vec![si % 4],
            format: F::Float32,
        };
        check(&ctx, &input, max_dim, &format!("f32 n={n} lead={}", si % 4));
        // NVIDIA's policy on any device: the fixed order follows the policy that ran (this
        // pinned the H200's default to its own oracle order; it ran the default's before).
        let nvidia = ReducePolicy {
            workgroup_size: 512,
            vec4_per_thread: 8,
            ..ReducePolicy::DEFAULT
        };
        let label = format!("f32 n={n} lead={}, 512x8", si % 4);
        check_with(&ctx, &input, max_dim, &label, nvidia);
    }
}

#[test]
fn uint_reductions_match_the_oracle_and_sum_past_32_bits() {
    let ctx = ctx();
    let max_dim = ctx.device.limits().max_compute_workgroups_per_dimension;
    let mut r = rng(32);
    for (si, &n) in [0usize, 1, 6, 4097, 100_003].iter().enumerate() {
        // Large values: the sum carries into the high word many times.
        let words: Vec<u32> = (0..n)
            .map(|_| r.random_range(u32::MAX - 1000..=u32::MAX))
            .collect();
        let mask = random_u32s(&mut r, n, 2);
        let input = Input {
            words: &words,
            mask: (si % 2 == 1).then_some(mask.as_slice()),
            lens: vec![n],
            leads: vec![(si + 1) % 4],
            format: F::Uint32,
        };
        check(&ctx, &input, max_dim, &format!("u32 n={n}"));
    }
}

#[test]
fn vectors_keep_empty_and_uneven_chunks() {
    let ctx = ctx();
    let max_dim = ctx.device.limits().max_compute_workgroups_per_dimension;
    let mut r = rng(33);
    let total = 30_000;
    let lens: Vec<usize> = [vec![0], uneven_chunks(&mut r, total, 6), vec![0, 3]].concat();
    let total: usize = lens.iter().sum();
    let leads: Vec<usize> = (0..lens.len()).map(|i| (i * 3) % 5).collect();
    let words = float_words(&mut r, total);
    let mask = random_u32s(&mut r, total, 3);
    for format in [F::Float32, F::Uint32] {
        let input = Input {
            words: &words,
            mask: Some(&mask),
            lens: lens.clone(),
            leads: leads.clone(),
            format,
        };
        check(&ctx, &input, max_dim, &format!("{format} chunks {lens:?}"));
    }
    // Every chunk empty: results are the empty-input values.
    let input = Input {
        words: &[],
        mask: None,
        lens: vec![0, 0],
        leads: vec![0, 1],
        format: F::Float32,
    };
    check(&ctx, &input, max_dim, "all chunks empty");
}

#[test]
fn grid_stride_tiles_beyond_the_partial_cap_are_deterministic() {
    // 4.5 M values: 1,099 tiles over 1,024 workgroups, so some workgroups take two tiles.
    let ctx = ctx();
    let max_dim = ctx.device.limits().max_compute_workgroups_per_dimension;
    let mut r = rng(34);
    let n = 4_500_001;
    let words: Vec<u32> = (0..n)
        .map(|_| r.random_range(-1.0e3f32..1.0e3).to_bits())
        .collect();
    let input = Input {
        words: &words,
        mask: None,
        lens: vec![n],
        leads: vec![1],
        format: F::Float32,
    };
    // The default policy's shape (a device's own policy may have fewer, larger tiles).
    let policy = ReducePolicy::DEFAULT;
    assert!(plans(&input, max_dim, &policy)[0].tiles > 1024);
    check_with(&ctx, &input, max_dim, "4.5M", policy);
    check(&ctx, &input, max_dim, "4.5M, device policy");
    // Two runs of one compiled graph give the same bits.
    let mut g = CommandGraph::new("twice", &ctx.device);
    let b = upload(&ctx, &words);
    let v = import_typed(&mut g, "v", &b, F::Float32, 0, n as u64);
    let (ob, out) = output(&ctx, &mut g, "o", F::Float32, 0, 1);
    Reduction {
        id: "sum".into(),
        input: v.into(),
        mask: None,
        op: ReduceOp::Sum,
        output: out,
        ignored: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    let mut compiled = g.compile().unwrap();
    let mut results = Vec::new();
    for _ in 0..2 {
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        compiled.encode(&mut enc, &Default::default()).unwrap();
        ctx.queue.submit([enc.finish()]);
        results.push(read_out(&ctx, &ob, 0, 1)[0]);
    }
    assert_eq!(results[0], results[1]);
}

#[test]
fn dispatches_over_the_dimension_limit_use_a_second_grid_row() {
    // 16 per dimension: 2 M values (489 tiles) run on a 16 × 16 grid striding over tiles.
    let ctx = ctx_with_max_dispatch(16);
    let mut r = rng(35);
    let n = 2_000_000;
    let words = float_words(&mut r, n);
    let mask = random_u32s(&mut r, n, 2);
    let input = Input {
        words: &words,
        mask: Some(&mask),
        lens: vec![n],
        leads: vec![2],
        format: F::Float32,
    };
    let policy = ReducePolicy::DEFAULT;
    assert_eq!(plans(&input, 16, &policy)[0].workgroups, 256);
    check_with(&ctx, &input, 16, "2-D", policy);
    check(&ctx, &input, 16, "2-D, device policy");
}

#[test]
fn bad_views_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let fv = import_typed(&mut g, "f", &upload(&ctx, &[0; 16]), F::Float32, 0, 8);
    let uv = import_typed(&mut g, "u", &upload(&ctx, &[0; 16]), F::Uint32, 0, 8);
    let f2 = import_typed(&mut g, "f2", &upload(&ctx, &[0; 16]), F::Float32x2, 0, 1);
    let u1 = import_typed(&mut g, "u1", &upload(&ctx, &[0; 16]), F::Uint32, 0, 1);
    let reduce = |input: VectorView, op, output: DataView| Reduction {
        id: "r".into(),
        input,
        mask: None,
        op,
        output,
        ignored: None,
    };
    // A float extent fits float32x2 × 1; a uint32 sum needs two words.
    assert!(reduce(fv.into(), ReduceOp::Extent, f2)
        .add_to_graph(&mut g)
        .is_ok());
    assert_eq!(
        reduce(uv.into(), ReduceOp::Sum, u1)
            .add_to_graph(&mut g)
            .unwrap_err()
            .to_string(),
        "reduction r: output must be 2 uint32 word(s), got 1 rows of uint32"
    );
    assert_eq!(
        reduce(fv.into(), ReduceOp::Min, u1)
            .add_to_graph(&mut g)
            .unwrap_err()
            .to_string(),
        "reduction r: output must be 1 float32 word(s), got 1 rows of uint32"
    );
    let err = reduce(f2.into(), ReduceOp::Sum, u1)
        .add_to_graph(&mut g)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "reduction r: input must be float32 or uint32, got float32x2"
    );
    let err = reduce(VectorView::from_chunks(vec![]), ReduceOp::Count, u1)
        .add_to_graph(&mut g)
        .unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::MissingArgument { needed_by, .. } if &**needed_by == "the input"),
        "{err}"
    );
    let mut masked = reduce(fv.into(), ReduceOp::Count, u1);
    masked.mask = Some(u1.into());
    let err = masked.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::ChunkMismatch { what, actual, .. } if &**what == "mask" && **actual == [1]),
        "{err}"
    );
}
