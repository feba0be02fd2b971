//! Histograms on the GPU vs the CPU oracle: uniform, literal and GPU-resident edges, values on
//! edges, masks, chunks, invalid GPU edges, cumulative counts; poisoned outputs.

mod analysis;
mod common;

use analysis::*;
use common::*;
use gpugraph_command::{CommandGraph, GpuContext, VectorFormat as F};
use gpugraph_gpgpu::histogram::{cpu, Histogram, HistogramBins};
use gpugraph_gpgpu::AlgorithmError;
use rand::Rng;

struct Outputs {
    counts: Vec<u32>,
    cumulative: Vec<u32>,
    ignored: u32,
    flag: Option<u32>,
}

/// Runs one histogram with counts at an odd offset and every optional output.
fn run_histogram(
    ctx: &GpuContext,
    values: &[f32],
    mask: Option<&[u32]>,
    bins: &HistogramBins,
    gpu_edges: Option<&[f32]>,
    lens: &[usize],
) -> Outputs {
    let n_bins = match (bins, gpu_edges) {
        (HistogramBins::GpuEdges(_), Some(e)) => e.len() as u64 - 1,
        _ => bins.bin_count(),
    };
    let mut g = CommandGraph::new("histogram-test", &ctx.device);
    let input = chunked(ctx, &mut g, "values", &bits(values), F::Float32, lens, 1);
    let mask = mask.map(|m| chunked(ctx, &mut g, "mask", m, F::Uint32, lens, 2));
    let (cb, counts) = output(ctx, &mut g, "counts", F::Uint32, 3, n_bins);
    let (sb, cumulative) = output(ctx, &mut g, "cdf", F::Uint32, 0, n_bins);
    let (ib, ignored) = output(ctx, &mut g, "ignored", F::Uint32, 1, 1);
    let (flag, bins) = match gpu_edges {
        Some(e) => {
            let eb = upload(ctx, &[vec![POISON; 5], bits(e)].concat());
            let ev = import_typed(&mut g, "edges", &eb, F::Float32, 5, e.len() as u64);
            let (fb, fv) = output(ctx, &mut g, "flag", F::Uint32, 2, 1);
            (Some((fb, fv)), HistogramBins::GpuEdges(ev))
        }
        None => (None, bins.clone()),
    };
    Histogram {
        id: "hist".into(),
        input,
        mask,
        bins,
        counts,
        cumulative: Some(cumulative),
        ignored: Some(ignored),
        invalid_edges: flag.as_ref().map(|f| f.1),
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(ctx, g);
    let n = n_bins as usize;
    Outputs {
        counts: read_out(ctx, &cb, 3, n),
        cumulative: read_out(ctx, &sb, 0, n),
        ignored: read_out(ctx, &ib, 1, 1)[0],
        flag: flag.map(|(b, _)| read_out(ctx, &b, 2, 1)[0]),
    }
}

fn check(
    ctx: &GpuContext,
    values: &[f32],
    mask: Option<&[u32]>,
    bins: &HistogramBins,
    gpu_edges: Option<&[f32]>,
    lens: &[usize],
    label: &str,
) -> Outputs {
    let got = run_histogram(ctx, values, mask, bins, gpu_edges, lens);
    let (counts, ignored) = cpu::histogram(values, mask, bins, gpu_edges);
    assert_eq!(got.counts, counts, "{label}: counts");
    assert_eq!(got.ignored, ignored, "{label}: ignored");
    assert_eq!(
        got.cumulative,
        cpu::cumulative(&counts),
        "{label}: cumulative"
    );
    if let Some(e) = gpu_edges {
        assert_eq!(got.flag, Some(!cpu::edges_valid(e) as u32), "{label}: flag");
    }
    got
}

/// Values in [lo − 10%, hi + 10%] with NaN, ±inf and exact edge values mixed in.
fn values_around(r: &mut impl Rng, n: usize, edges: &[f32]) -> Vec<f32> {
    let (lo, hi) = (edges[0], *edges.last().unwrap());
    let pad = (hi - lo) * 0.1;
    (0..n)
        .map(|_| match r.random_range(0..20) {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => f32::NEG_INFINITY,
            3 | 4 => edges[r.random_range(0..edges.len())],
            _ => r.random_range(lo - pad..hi + pad),
        })
        .collect()
}

fn uniform_edges(min: f32, max: f32, bins: u32) -> Vec<f32> {
    (0..=bins)
        .map(|i| min + (max - min) * i as f32 / bins as f32)
        .collect()
}

#[test]
fn uniform_bins_match_the_oracle_across_sizes() {
    let ctx = ctx();
    let mut r = rng(11);
    let sizes = [boundary_sizes(&[256, 2048]), vec![100_003]].concat();
    // Bin counts: replicated private, private, private at the budget edge, global atomics.
    let bin_counts = [1u32, 10, 256, 6144, 6145, 100_000];
    for (si, &n) in sizes.iter().enumerate() {
        let bins = bin_counts[si % bin_counts.len()];
        let (min, max) = (-3.5f32, 1000.25f32);
        let values = values_around(&mut r, n, &uniform_edges(min, max, bins.min(64)));
        let mask = random_u32s(&mut r, n, 2);
        let b = HistogramBins::Uniform { min, max, bins };
        let m = (si % 2 == 0).then_some(mask.as_slice());
        check(
            &ctx,
            &values,
            m,
            &b,
            None,
            &[n],
            &format!("n={n} bins={bins}"),
        );
    }
}

#[test]
fn a_degenerate_domain_puts_its_value_in_bin_0() {
    // luma.gl's GPUHistogram: min == max sends every value equal to it to bin 0 (not the middle
    // bin a widened numpy-style domain would give); other values are ignored.
    let ctx = ctx();
    let values = [7.0f32, 7.0, 6.5, 7.0, f32::NAN, 8.0, 7.0, -0.0];
    for bins in [1u32, 4, 255] {
        let b = HistogramBins::Uniform {
            min: 7.0,
            max: 7.0,
            bins,
        };
        let got = check(
            &ctx,
            &values,
            None,
            &b,
            None,
            &[5, 3],
            &format!("bins={bins}"),
        );
        assert_eq!(got.counts[0], 4, "bins={bins}");
        assert!(got.counts[1..].iter().all(|&c| c == 0), "bins={bins}");
        assert_eq!(got.ignored, 4, "bins={bins}");
    }
}

#[test]
fn values_on_edges_go_to_the_upper_bin_and_the_last_edge_is_included() {
    let ctx = ctx();
    // [-8, 8] in 32 bins: scale 2, every edge value is exact.
    let values: Vec<f32> = (-16..=16).map(|k| k as f32 * 0.5).collect();
    let mut with_outside = values.clone();
    with_outside.extend([
        f32::from_bits((-8.0f32).to_bits() + 1), // just below -8
        f32::from_bits(8.0f32.to_bits() + 1),    // just above 8
        f32::NAN,
    ]);
    let b = HistogramBins::Uniform {
        min: -8.0,
        max: 8.0,
        bins: 32,
    };
    let got = check(
        &ctx,
        &with_outside,
        None,
        &b,
        None,
        &[with_outside.len()],
        "edges",
    );
    let mut want = vec![1u32; 32];
    want[31] = 2;
    assert_eq!(got.counts, want);
    assert_eq!(got.ignored, 3);

    // Irregular edges (latency thresholds): values exactly on each edge.
    let edges = vec![1e-6f32, 1e-3, 0.25, 1.0, 60.0];
    let values = [1e-6f32, 1e-3, 0.25, 1.0, 60.0, 0.5, 59.999, 1e-7, 61.0];
    for bins in [
        HistogramBins::Edges(edges.clone()),
        HistogramBins::GpuEdges(dummy_view(&ctx)),
    ] {
        let gpu = matches!(bins, HistogramBins::GpuEdges(_)).then_some(edges.as_slice());
        let got = check(
            &ctx,
            &values,
            None,
            &bins,
            gpu,
            &[values.len()],
            "irregular",
        );
        assert_eq!(got.counts, vec![1, 1, 2, 3]);
        assert_eq!(got.ignored, 2);
        assert_eq!(got.cumulative, vec![1, 2, 4, 7]);
    }
}

/// A placeholder view for `HistogramBins::GpuEdges` in oracle calls (tests pass the edges'
/// contents separately).
fn dummy_view(ctx: &GpuContext) -> gpugraph_command::DataView {
    let mut g = CommandGraph::new("dummy", &ctx.device);
    import_typed(&mut g, "d", &upload(ctx, &[0; 4]), F::Float32, 0, 2)
}

#[test]
fn irregular_edges_match_the_oracle_in_and_beyond_workgroup_memory() {
    let ctx = ctx();
    let mut r = rng(12);
    // 9 edges (staged), 1,024 (staged at the limit), 3,000 (searched in global memory).
    for (n_edges, n) in [(9usize, 5000usize), (1024, 20_000), (3000, 20_000)] {
        let mut edges: Vec<f32> = (0..n_edges).map(|_| r.random_range(-1e4f32..1e4)).collect();
        edges.sort_by(f32::total_cmp);
        edges.dedup();
        let values = values_around(&mut r, n, &edges);
        let mask = random_u32s(&mut r, n, 4);
        let lens = uneven_chunks(&mut r, n, 3);
        check(
            &ctx,
            &values,
            Some(&mask),
            &HistogramBins::Edges(edges.clone()),
            None,
            &lens,
            &format!("literal {n_edges} edges"),
        );
        check(
            &ctx,
            &values,
            None,
            &HistogramBins::GpuEdges(dummy_view(&ctx)),
            Some(&edges),
            &[n],
            &format!("gpu {n_edges} edges"),
        );
    }
}

#[test]
fn invalid_gpu_edges_give_zero_counts_and_a_flag() {
    let ctx = ctx();
    let mut r = rng(13);
    let values = values_around(&mut r, 3000, &[0.0, 10.0]);
    let bad_edges: [&[f32]; 5] = [
        &[0.0, 5.0, 5.0, 10.0],
        &[0.0, 6.0, 5.0, 10.0],
        &[0.0, f32::NAN, 10.0],
        &[f32::NEG_INFINITY, 0.0, 10.0],
        &[0.0, 10.0, f32::INFINITY],
    ];
    for e in bad_edges {
        let got = check(
            &ctx,
            &values,
            None,
            &HistogramBins::GpuEdges(dummy_view(&ctx)),
            Some(e),
            &[1000, 0, 2000],
            &format!("{e:?}"),
        );
        assert!(got.counts.iter().all(|&c| c == 0));
        assert_eq!((got.ignored, got.flag), (0, Some(1)));
    }
}

#[test]
fn gpu_edges_update_between_encodings_without_a_rebuild() {
    let ctx = ctx();
    let values: Vec<f32> = (0..1000).map(|i| i as f32 * 0.01).collect();
    let edges_a = [0.0f32, 5.0, 10.0];
    let edges_b = [0.0f32, 1.0, 9.99];
    let bad = [0.0f32, 0.0, 9.0];
    let mut g = CommandGraph::new("update", &ctx.device);
    let vb = upload(&ctx, &bits(&values));
    let input = import_typed(&mut g, "v", &vb, F::Float32, 0, 1000);
    let eb = upload(&ctx, &bits(&edges_a));
    let edges = import_typed(&mut g, "e", &eb, F::Float32, 0, 3);
    let (cb, counts) = output(&ctx, &mut g, "c", F::Uint32, 0, 2);
    let (fb, flag) = output(&ctx, &mut g, "f", F::Uint32, 0, 1);
    Histogram {
        id: "h".into(),
        input: input.into(),
        mask: None,
        bins: HistogramBins::GpuEdges(edges),
        counts,
        cumulative: None,
        ignored: None,
        invalid_edges: Some(flag),
    }
    .add_to_graph(&mut g)
    .unwrap();
    let mut compiled = g.compile().unwrap();
    let mut encode = |e: &[f32]| {
        ctx.queue.write_buffer(&eb, 0, bytemuck::cast_slice(e));
        encode_wait(&ctx, &mut compiled, &[]);
        (read_out(&ctx, &cb, 0, 2), read_out(&ctx, &fb, 0, 1)[0])
    };
    assert_eq!(encode(&edges_a), (vec![500, 500], 0));
    assert_eq!(encode(&bad), (vec![0, 0], 1));
    assert_eq!(encode(&edges_b), (vec![100, 900], 0));
}

#[test]
fn dispatches_over_the_dimension_limit_use_a_second_grid_row() {
    let ctx = ctx_with_max_dispatch(16);
    let mut r = rng(14);
    let n = 100_003;
    let values = values_around(&mut r, n, &[0.0, 1.0]);
    let mask = random_u32s(&mut r, n, 2);
    for bins in [3u32, 70_000] {
        let b = HistogramBins::Uniform {
            min: 0.0,
            max: 1.0,
            bins,
        };
        check(
            &ctx,
            &values,
            Some(&mask),
            &b,
            None,
            &[n],
            &format!("2-D bins={bins}"),
        );
    }
}

#[test]
fn large_cumulative_counts_span_several_scan_tiles() {
    // 9,000 bins: the cumulative scan spans three 4,096-row tiles.
    let ctx = ctx();
    let mut r = rng(15);
    let values: Vec<f32> = (0..30_000)
        .map(|_| r.random_range(0.0f32..9000.0))
        .collect();
    let b = HistogramBins::Uniform {
        min: 0.0,
        max: 9000.0,
        bins: 9000,
    };
    check(
        &ctx,
        &values,
        None,
        &b,
        None,
        &[10_000, 20_000],
        "9000 bins",
    );
}

#[test]
fn counts_and_cumulative_counts_may_share_one_buffer() {
    let ctx = ctx();
    let values = [0.5f32, 1.5, 1.5, 3.0, 7.0];
    let mut g = CommandGraph::new("shared", &ctx.device);
    let vb = upload(&ctx, &bits(&values));
    let input = import_typed(&mut g, "v", &vb, F::Float32, 0, 5);
    let ob = upload(&ctx, &[POISON; 10]);
    let h = g
        .import_buffer(
            gpugraph_command::BufferDescriptor::new("out", ob.size(), ob.usage()),
            &ob,
        )
        .unwrap();
    let view = |off: u64, len: u64| {
        g.create_data_view(
            h,
            gpugraph_command::DataViewDescriptor::packed(F::Uint32, len).at_offset(off * 4),
        )
        .unwrap()
    };
    let (counts, cumulative, ignored, overlapping) =
        (view(0, 4), view(4, 4), view(8, 1), view(3, 4));
    let hist = |cumulative| Histogram {
        id: "h".into(),
        input: input.into(),
        mask: None,
        bins: HistogramBins::Uniform {
            min: 0.0,
            max: 4.0,
            bins: 4,
        },
        counts,
        cumulative: Some(cumulative),
        ignored: Some(ignored),
        invalid_edges: None,
    };
    let err = hist(overlapping).add_to_graph(&mut g).unwrap_err();
    assert_eq!(
        err.to_string(),
        "histogram h: cumulative output and count output share buffer out: their byte ranges overlap"
    );
    hist(cumulative).add_to_graph(&mut g).unwrap();
    run(&ctx, g);
    assert_eq!(
        read_buffer(&ctx, &ob),
        vec![1, 2, 0, 1, 1, 3, 3, 4, 1, POISON]
    );
}

#[test]
fn bad_configurations_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let b = upload(&ctx, &[0; 64]);
    let input = import_typed(&mut g, "in", &b, F::Float32, 0, 8);
    let counts4 = import_typed(&mut g, "c4", &upload(&ctx, &[0; 8]), F::Uint32, 0, 4);
    let flag = import_typed(&mut g, "flag", &upload(&ctx, &[0; 8]), F::Uint32, 0, 1);
    let hist = |bins: HistogramBins| Histogram {
        id: "h".into(),
        input: input.into(),
        mask: None,
        bins,
        counts: counts4,
        cumulative: None,
        ignored: None,
        invalid_edges: None,
    };
    let err = |h: Histogram, g: &mut CommandGraph| h.add_to_graph(g).unwrap_err();
    // (what, value) of an OutOfRange error, or a panic naming the error.
    let out_of_range = |e: AlgorithmError| match e {
        AlgorithmError::OutOfRange { what, value, .. } => (what.to_string(), value.to_string()),
        other => panic!("expected OutOfRange, got {other}"),
    };
    let e = err(
        hist(HistogramBins::Edges(vec![0.0, 1.0, 1.0, 2.0, 3.0])),
        &mut g,
    );
    assert!(e.to_string().contains("above edge 1 = 1"), "{e}");
    assert_eq!(out_of_range(e), ("edge 2".into(), "1".into()));
    let e = err(
        hist(HistogramBins::Edges(vec![0.0, 1.0, f32::NAN, 2.0, 3.0])),
        &mut g,
    );
    assert_eq!(out_of_range(e), ("edge 2".into(), "NaN".into()));
    let e = err(hist(HistogramBins::Edges(vec![1.0])), &mut g);
    assert_eq!(out_of_range(e), ("the number of edges".into(), "1".into()));
    let uniform = |min: f32, max: f32, bins: u32| hist(HistogramBins::Uniform { min, max, bins });
    let e = err(uniform(2.0, 1.0, 4), &mut g);
    assert_eq!(
        out_of_range(e),
        ("the uniform bin range".into(), "[2, 1]".into())
    );
    let e = err(uniform(-3e38, 3e38, 4), &mut g);
    assert!(out_of_range(e).0.contains("float32 bin scale"));
    let e = err(uniform(0.0, 1.0, 5), &mut g);
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { what, actual: 4, expected: 5, .. }
            if &**what == "count output"),
        "{e}"
    );
    let mut with_flag = hist(HistogramBins::Edges(vec![0.0, 1.0, 2.0, 3.0, 4.0]));
    with_flag.invalid_edges = Some(flag);
    let e = err(with_flag, &mut g);
    assert!(
        matches!(&e, AlgorithmError::MissingArgument { needed_by, .. }
            if &**needed_by == "the invalid_edges output"),
        "{e}"
    );
    let mut u32_input = hist(HistogramBins::Edges(vec![0.0, 1.0, 2.0, 3.0, 4.0]));
    u32_input.input = counts4.into();
    let err = u32_input.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(err, AlgorithmError::UnsupportedView { .. }),
        "{err}"
    );
}
