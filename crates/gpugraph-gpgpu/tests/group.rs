//! Group aggregation on the GPU vs the CPU oracle: counts, min and max exact; sums and means
//! within the bound of unordered float32 accumulation; deterministic sums bit for bit equal
//! to the fixed-point oracle, whatever the policy; poisoned outputs.

mod analysis;
mod common;

use analysis::*;
use common::*;
use gpugraph_command::{CommandGraph, GpuContext, VectorFormat as F, VectorView};
use gpugraph_gpgpu::group::{cpu, AggregateOutputs, KeyedPolicy, Summation};
use gpugraph_gpgpu::{AlgorithmError, GroupAggregation};
use rand::Rng;

struct Case<'a> {
    codes: &'a [u32],
    values: Option<&'a [f32]>,
    mask: Option<&'a [u32]>,
    groups: u32,
    lens: Vec<usize>,
}

/// Runs one aggregation with every output (values permitting) at odd offsets, and checks it.
fn check(ctx: &GpuContext, case: &Case<'_>, label: &str) {
    let k = case.groups as u64;
    let mut g = CommandGraph::new("group-test", &ctx.device);
    let codes = chunked(ctx, &mut g, "codes", case.codes, F::Uint32, &case.lens, 1);
    let values = case
        .values
        .map(|v| chunked(ctx, &mut g, "values", &bits(v), F::Float32, &case.lens, 3));
    let mask = case
        .mask
        .map(|m| chunked(ctx, &mut g, "mask", m, F::Uint32, &case.lens, 2));
    let (cb, count) = output(ctx, &mut g, "count", F::Uint32, 1, k);
    let (ib, ignored) = output(ctx, &mut g, "ignored", F::Uint32, 5, 1);
    let mut outs = AggregateOutputs {
        count: Some(count),
        ..Default::default()
    };
    let mut fbufs = Vec::new();
    if values.is_some() {
        for (name, off) in [("sum", 2u64), ("min", 3), ("max", 0), ("mean", 7)] {
            let (b, v) = output(ctx, &mut g, name, F::Float32, off, k);
            match name {
                "sum" => outs.sum = Some(v),
                "min" => outs.min = Some(v),
                "max" => outs.max = Some(v),
                _ => outs.mean = Some(v),
            }
            fbufs.push((b, off as usize));
        }
    }
    // The same aggregation with deterministic sums, beside it in the graph.
    let mut det_bufs = Vec::new();
    if values.is_some() {
        let (sb, sum) = output(ctx, &mut g, "det-sum", F::Float32, 4, k);
        let (mb, mean) = output(ctx, &mut g, "det-mean", F::Float32, 1, k);
        let (nb, min) = output(ctx, &mut g, "det-min", F::Float32, 6, k);
        GroupAggregation {
            id: "agg-deterministic".into(),
            codes: codes.clone(),
            values: values.clone(),
            mask: mask.clone(),
            group_count: case.groups,
            outputs: AggregateOutputs {
                sum: Some(sum),
                mean: Some(mean),
                min: Some(min),
                summation: Summation::Deterministic,
                ..Default::default()
            },
            ignored: None,
        }
        .add_to_graph(&mut g)
        .unwrap();
        det_bufs = vec![(sb, 4usize), (mb, 1), (nb, 6)];
    }
    GroupAggregation {
        id: "agg".into(),
        codes,
        values,
        mask,
        group_count: case.groups,
        outputs: outs,
        ignored: Some(ignored),
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(ctx, g);

    let want = cpu::group(case.codes, case.values, case.mask, case.groups);
    let k = k as usize;
    assert_eq!(read_out(ctx, &cb, 1, k), want.count, "{label}: count");
    assert_eq!(
        read_out(ctx, &ib, 5, 1),
        vec![want.ignored],
        "{label}: ignored"
    );
    if case.values.is_some() {
        let got: Vec<Vec<f32>> = fbufs
            .iter()
            .map(|(b, off)| floats(&read_out(ctx, b, *off, k)))
            .collect();
        let bound: Vec<f64> = (0..k)
            .map(|i| cpu::sum_bound(want.count[i], want.abs_sum[i]))
            .collect();
        assert_close(&format!("{label}: sum"), &got[0], &want.sum, &bound);
        assert_same_floats(&format!("{label}: min"), &got[1], &want.min);
        assert_same_floats(&format!("{label}: max"), &got[2], &want.max);
        let mean_bound: Vec<f64> = (0..k)
            .map(|i| {
                let c = want.count[i].max(1) as f64;
                bound[i] / c + want.mean()[i].abs() * 1e-6
            })
            .collect();
        assert_close(
            &format!("{label}: mean"),
            &got[3],
            &want.mean(),
            &mean_bound,
        );
        for (sum, &count) in got[0].iter().zip(&want.count) {
            if count == 0 {
                assert_eq!(sum.to_bits(), 0, "{label}: empty sum is +0");
            }
        }
        let det: Vec<Vec<f32>> = det_bufs
            .iter()
            .map(|(b, off)| floats(&read_out(ctx, b, *off, k)))
            .collect();
        check_deterministic(label, &det[0], &det[1], &want);
        assert_same_floats(&format!("{label}: deterministic min"), &det[2], &want.min);
    }
}

fn random_case_data(r: &mut impl Rng, n: usize, groups: u32) -> (Vec<u32>, Vec<f32>, Vec<u32>) {
    // Codes include out-of-range ones (ignored) and leave some groups empty.
    let span = groups + groups / 8 + 1;
    let codes = random_u32s(r, n, span);
    let values = awkward_floats(r, n);
    let mask = random_u32s(r, n, 3).iter().map(|&m| m * 7).collect();
    (codes, values, mask)
}

#[test]
fn aggregates_match_the_oracle_across_sizes_and_group_counts() {
    let ctx = ctx();
    let mut r = rng(1);
    // Group counts: replicated private (1, 4), private (300, 1500), global atomics (5000).
    let sizes = [boundary_sizes(&[256, 2048]), vec![100_003]].concat();
    for (si, &n) in sizes.iter().enumerate() {
        let groups = [1u32, 4, 300, 1500, 5000][si % 5];
        let (codes, values, mask) = random_case_data(&mut r, n, groups);
        let case = Case {
            codes: &codes,
            values: Some(&values),
            mask: if si % 2 == 0 { Some(&mask) } else { None },
            groups,
            lens: vec![n],
        };
        check(&ctx, &case, &format!("n={n} groups={groups}"));
    }
}

#[test]
fn counts_without_values_and_large_group_counts() {
    let ctx = ctx();
    let mut r = rng(2);
    for (n, groups) in [(5000usize, 3u32), (20_000, 70_000), (1, 1)] {
        let (codes, _, mask) = random_case_data(&mut r, n, groups);
        let case = Case {
            codes: &codes,
            values: None,
            mask: Some(&mask),
            groups,
            lens: vec![n],
        };
        check(&ctx, &case, &format!("counts n={n} groups={groups}"));
    }
}

#[test]
fn vectors_keep_empty_and_uneven_chunks() {
    let ctx = ctx();
    let mut r = rng(3);
    let total = 9000;
    for groups in [5u32, 2500] {
        let lens: Vec<usize> = [vec![0], uneven_chunks(&mut r, total, 5), vec![0]].concat();
        let (codes, values, mask) = random_case_data(&mut r, total, groups);
        let case = Case {
            codes: &codes,
            values: Some(&values),
            mask: Some(&mask),
            groups,
            lens: lens.clone(),
        };
        check(&ctx, &case, &format!("chunks {lens:?} groups={groups}"));
    }
    // Every chunk empty: outputs are still initialized.
    let case = Case {
        codes: &[],
        values: Some(&[]),
        mask: None,
        groups: 3,
        lens: vec![0, 0],
    };
    check(&ctx, &case, "all chunks empty");
}

#[test]
fn dispatches_over_the_dimension_limit_use_a_second_grid_row() {
    // 16 workgroups per dimension: 100,003 rows need 49 tiles → a 16 × 4 grid; the global
    // path (20,000 groups) and the private path (7 groups) both.
    let ctx = ctx_with_max_dispatch(16);
    let mut r = rng(4);
    let n = 100_003;
    for groups in [7u32, 20_000] {
        let (codes, values, mask) = random_case_data(&mut r, n, groups);
        let case = Case {
            codes: &codes,
            values: Some(&values),
            mask: Some(&mask),
            groups,
            lens: vec![n],
        };
        check(&ctx, &case, &format!("2-D groups={groups}"));
    }
}

#[test]
fn contended_sums_of_exact_values_are_exact() {
    // Small integers sum exactly in f32 in any order: 60,000 rows into 2 groups.
    let ctx = ctx();
    let n = 60_000;
    let codes: Vec<u32> = (0..n as u32).map(|i| i % 2).collect();
    let values: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let mut g = CommandGraph::new("exact", &ctx.device);
    let c = upload(&ctx, &codes);
    let v = upload(&ctx, &bits(&values));
    let cv = import_typed(&mut g, "c", &c, F::Uint32, 0, n as u64);
    let vv = import_typed(&mut g, "v", &v, F::Float32, 0, n as u64);
    let (sb, sum) = output(&ctx, &mut g, "sum", F::Float32, 0, 2);
    GroupAggregation {
        id: "exact".into(),
        codes: cv.into(),
        values: Some(vv.into()),
        mask: None,
        group_count: 2,
        outputs: AggregateOutputs {
            sum: Some(sum),
            ..Default::default()
        },
        ignored: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(&ctx, g);
    let want = cpu::group(&codes, Some(&values), None, 2);
    let got = floats(&read_out(&ctx, &sb, 0, 2));
    assert_eq!(got, vec![want.sum[0] as f32, want.sum[1] as f32]);
}

/// Runs a deterministic sum of `values` by `codes` under `policy`; returns the sums.
fn deterministic_sums(
    ctx: &GpuContext,
    codes: &[u32],
    values: &[f32],
    groups: u32,
    lens: &[usize],
    policy: KeyedPolicy,
) -> Vec<f32> {
    let mut g = CommandGraph::new("det", &ctx.device);
    let cv = chunked(ctx, &mut g, "codes", codes, F::Uint32, lens, 1);
    let vv = chunked(ctx, &mut g, "values", &bits(values), F::Float32, lens, 3);
    let (sb, sum) = output(ctx, &mut g, "sum", F::Float32, 2, groups as u64);
    GroupAggregation {
        id: "det".into(),
        codes: cv,
        values: Some(vv),
        mask: None,
        group_count: groups,
        outputs: AggregateOutputs {
            sum: Some(sum),
            summation: Summation::Deterministic,
            ..Default::default()
        },
        ignored: None,
    }
    .add_to_graph_with(&mut g, policy)
    .unwrap();
    run(ctx, g);
    floats(&read_out(ctx, &sb, 2, groups as usize))
}

#[test]
fn deterministic_sums_are_identical_across_runs_policies_and_chunkings() {
    // Values of wildly different magnitudes, where float32 addition order matters most.
    let ctx = ctx();
    let mut r = rng(6);
    let n = 70_001;
    for groups in [1u32, 3, 700, 9000] {
        let codes = random_u32s(&mut r, n, groups);
        let values: Vec<f32> = (0..n)
            .map(|_| {
                let m: f32 = r.random_range(-1.0..1.0);
                m * [1e-20f32, 1e-3, 1.0, 3e4, 1e30][r.random_range(0..5)]
            })
            .collect();
        let want = cpu::group(&codes, Some(&values), None, groups);
        let policies = [
            KeyedPolicy::DEFAULT,
            // One replica, fewer rows per tile, smaller workgroups.
            KeyedPolicy {
                workgroup_size: 64,
                rows_per_thread: 3,
                max_copies: 1,
                ..KeyedPolicy::DEFAULT
            },
            // No privatization: every row goes to the global accumulators.
            KeyedPolicy {
                private_words_max: 0,
                max_workgroups: 7,
                ..KeyedPolicy::DEFAULT
            },
        ];
        let chunkings = [vec![n], uneven_chunks(&mut r, n, 4)];
        for (pi, policy) in policies.iter().enumerate() {
            for lens in &chunkings {
                for run in 0..2 {
                    let got = deterministic_sums(&ctx, &codes, &values, groups, lens, *policy);
                    for (k, (g, w)) in got.iter().zip(&want.fixed_sum).enumerate() {
                        assert_eq!(
                            g.to_bits(),
                            w.to_bits(),
                            "groups={groups} policy {pi} chunks {} run {run}: sum[{k}] {g} vs {w}",
                            lens.len(),
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn deterministic_sums_round_exactly_and_overflow_to_infinity() {
    let ctx = ctx();
    // Group 0: exact cancellation leaves a small value; group 1: near float32's maximum, the
    // sum overflows; group 2: a carry chain through the low word (many max-size terms);
    // group 3: subnormals only (quantized to 0); group 4: negative total.
    let mut codes = Vec::new();
    let mut values = Vec::new();
    let mut push = |c: u32, v: f32| {
        codes.push(c);
        values.push(v);
    };
    for v in [1e4f32, 3.0, -1e4, 0.25] {
        push(0, v);
    }
    for _ in 0..3 {
        push(1, f32::MAX * 0.75);
    }
    for i in 0..5000 {
        push(2, 1.0 - (i % 3) as f32 * 1e-7);
    }
    for v in [1e-40f32, -3e-41, 1e-39] {
        push(3, v);
    }
    for i in 0..100 {
        push(4, -(i as f32) * 1.5e-3);
    }
    let want = cpu::group(&codes, Some(&values), None, 5);
    let got = deterministic_sums(
        &ctx,
        &codes,
        &values,
        5,
        &[codes.len()],
        KeyedPolicy::DEFAULT,
    );
    for (k, (g, w)) in got.iter().zip(&want.fixed_sum).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "sum[{k}]: {g} vs {w}");
    }
    assert_eq!(got[1], f32::INFINITY, "overflowing sum");
    assert_eq!(got[3], 0.0, "subnormals quantize to 0");
    assert!(got[4] < 0.0);
    // 2^14 bounds the group's |values|: units of 2^-17 hold 3 and 0.25 exactly.
    assert_eq!(got[0], 3.25, "cancellation");
}

#[test]
fn bad_configurations_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let b = upload(&ctx, &[0; 64]);
    let codes = import_typed(&mut g, "codes", &b, F::Uint32, 0, 8);
    let floats8 = import_typed(&mut g, "floats", &upload(&ctx, &[0; 64]), F::Float32, 0, 8);
    let short = import_typed(&mut g, "short", &upload(&ctx, &[0; 64]), F::Float32, 0, 7);
    let out4 = import_typed(&mut g, "out4", &upload(&ctx, &[0; 64]), F::Uint32, 0, 4);
    let f4 = import_typed(&mut g, "f4", &upload(&ctx, &[0; 64]), F::Float32, 0, 4);
    let base = |outputs: AggregateOutputs| GroupAggregation {
        id: "g".into(),
        codes: codes.into(),
        values: None,
        mask: None,
        group_count: 4,
        outputs,
        ignored: None,
    };
    let counts = AggregateOutputs {
        count: Some(out4),
        ..Default::default()
    };
    let err = base(AggregateOutputs {
        mean: Some(f4),
        ..Default::default()
    })
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::MissingArgument { what, needed_by, .. }
            if &**what == "a values vector" && &**needed_by == "the mean output"),
        "{err}"
    );
    let err = base(AggregateOutputs::default())
        .add_to_graph(&mut g)
        .unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::MissingArgument { what, .. } if what.contains("per-key output")),
        "{err}"
    );
    let mut zero = base(counts);
    zero.group_count = 0;
    assert!(matches!(
        zero.add_to_graph(&mut g).unwrap_err(),
        AlgorithmError::OutOfRange { value, .. } if &*value == "0"
    ));
    let mut wrong_len = base(counts);
    wrong_len.group_count = 5;
    let err = wrong_len.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::LengthMismatch { what, actual: 4, expected: 5, .. }
            if &**what == "count output"),
        "{err}"
    );
    let mut misaligned = base(counts);
    misaligned.values = Some(short.into());
    let err = misaligned.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::ChunkMismatch { what, actual, expected, .. } if &**what == "values" && **actual == [7] && **expected == [8]),
        "{err}"
    );
    let mut float_codes = base(counts);
    float_codes.codes = floats8.into();
    assert_eq!(
        float_codes.add_to_graph(&mut g).unwrap_err().to_string(),
        "group aggregation g: codes must be uint32, got float32"
    );
    let mut float_count = base(AggregateOutputs {
        count: Some(f4),
        ..Default::default()
    });
    float_count.values = Some(VectorView::from(floats8));
    assert_eq!(
        float_count.add_to_graph(&mut g).unwrap_err().to_string(),
        "group aggregation g: count output must be uint32, got float32"
    );
    // Outputs may not overlap each other.
    let shared = upload(&ctx, &[0; 16]);
    let h = g
        .import_buffer(
            gpugraph_command::BufferDescriptor::new("shared", shared.size(), shared.usage()),
            &shared,
        )
        .unwrap();
    let at = |off: u64, f: F| {
        g.create_data_view(
            h,
            gpugraph_command::DataViewDescriptor::packed(f, 4).at_offset(off * 4),
        )
        .unwrap()
    };
    let (count, sum) = (at(0, F::Uint32), at(3, F::Float32));
    let mut overlapping = base(AggregateOutputs {
        count: Some(count),
        sum: Some(sum),
        ..Default::default()
    });
    overlapping.values = Some(floats8.into());
    overlapping.codes = VectorView::from(codes);
    let err = overlapping.add_to_graph(&mut g).unwrap_err();
    assert_eq!(
        err.to_string(),
        "group aggregation g: count output and sum output share buffer shared: their byte ranges overlap"
    );
}
