//! Group aggregation on the GPU vs the CPU oracle: counts, min and max exact; sums and means
//! within the bound of unordered float32 accumulation; poisoned outputs.

mod analysis;
mod common;

use analysis::*;
use common::*;
use gpugraph_command::{CommandGraph, GpuContext, VectorFormat as F, VectorView};
use gpugraph_gpgpu::group::{cpu, AggregateOutputs};
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
    let sizes = [0usize, 1, 255, 256, 257, 2047, 2048, 2049, 100_003];
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
    assert_eq!(
        err.to_string(),
        "group aggregation g: invalid configuration: the mean output needs a values vector"
    );
    let err = base(AggregateOutputs::default())
        .add_to_graph(&mut g)
        .unwrap_err();
    assert!(err.to_string().contains("no per-key output"), "{err}");
    let mut zero = base(counts);
    zero.group_count = 0;
    assert!(matches!(
        zero.add_to_graph(&mut g).unwrap_err(),
        AlgorithmError::InvalidConfig { .. }
    ));
    let mut wrong_len = base(counts);
    wrong_len.group_count = 5;
    assert_eq!(
        wrong_len.add_to_graph(&mut g).unwrap_err().to_string(),
        "group aggregation g: count output has 4 rows but must have 5"
    );
    let mut misaligned = base(counts);
    misaligned.values = Some(short.into());
    let err = misaligned.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(err, AlgorithmError::Mismatch { .. }) && err.to_string().contains("[7]"),
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
