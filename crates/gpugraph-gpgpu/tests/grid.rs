//! Grid binning and aggregation on the GPU vs the CPU oracle: points on cell edges and on
//! the max edges, outside and non-finite points, empty cells, masks, chunks, both
//! accumulation paths; poisoned outputs.

mod analysis;
mod common;

use analysis::*;
use common::*;
use gpugraph_command::{CommandGraph, GpuContext, VectorFormat as F};
use gpugraph_gpgpu::grid::{cpu, GridAggregation, GridBinning, GridDomain};
use gpugraph_gpgpu::group::{cpu::sum_bound, AggregateOutputs, Summation};
use gpugraph_gpgpu::AlgorithmError;
use rand::Rng;

fn domain(nx: u32, ny: u32) -> GridDomain {
    GridDomain {
        x_min: -2.0,
        x_max: 6.0,
        y_min: 10.0,
        y_max: 14.0,
        nx,
        ny,
    }
}

/// Positions in the domain grown by 10%, with exact edge coordinates, the max corner, NaN
/// and ±inf coordinates mixed in.
fn points(r: &mut impl Rng, n: usize, d: &GridDomain) -> Vec<f32> {
    let mut out = Vec::with_capacity(2 * n);
    for _ in 0..n {
        for (lo, hi, cells) in [(d.x_min, d.x_max, d.nx), (d.y_min, d.y_max, d.ny)] {
            let pad = (hi - lo) * 0.1;
            out.push(match r.random_range(0..24) {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                3 => hi,
                4 => lo,
                5 | 6 => lo + (hi - lo) * r.random_range(0..=cells) as f32 / cells as f32,
                _ => r.random_range(lo - pad..hi + pad),
            });
        }
    }
    out
}

fn weights(r: &mut impl Rng, n: usize) -> Vec<f32> {
    awkward_floats(r, n)
}

/// Runs binning and aggregation (all outputs) over the same chunks and checks both.
fn check(
    ctx: &GpuContext,
    d: GridDomain,
    pos: &[f32],
    w: &[f32],
    mask: Option<&[u32]>,
    lens: &[usize],
    label: &str,
) {
    let cells = d.cells();
    let mut g = CommandGraph::new("grid-test", &ctx.device);
    let positions = chunked(ctx, &mut g, "pos", &bits(pos), F::Float32x2, lens, 1);
    let weights = chunked(ctx, &mut g, "w", &bits(w), F::Float32, lens, 3);
    let mask_view = mask.map(|m| chunked(ctx, &mut g, "mask", m, F::Uint32, lens, 2));
    let (bb, bin_counts) = output(ctx, &mut g, "bins", F::Uint32, 1, cells);
    let (bib, bin_ignored) = output(ctx, &mut g, "bins-ignored", F::Uint32, 0, 1);
    let (cb, count) = output(ctx, &mut g, "count", F::Uint32, 2, cells);
    let (ib, ignored) = output(ctx, &mut g, "ignored", F::Uint32, 3, 1);
    let stats: Vec<_> = ["sum", "min", "max", "mean"]
        .iter()
        .enumerate()
        .map(|(i, name)| output(ctx, &mut g, name, F::Float32, i as u64, cells))
        .collect();
    GridBinning {
        id: "bin".into(),
        positions: positions.clone(),
        mask: mask_view.clone(),
        domain: d,
        counts: bin_counts,
        ignored: Some(bin_ignored),
    }
    .add_to_graph(&mut g)
    .unwrap();
    let (positions_again, weights_again, mask_again) =
        (positions.clone(), weights.clone(), mask_view.clone());
    GridAggregation {
        id: "agg".into(),
        positions,
        weights,
        mask: mask_view,
        domain: d,
        outputs: AggregateOutputs {
            count: Some(count),
            sum: Some(stats[0].1),
            min: Some(stats[1].1),
            max: Some(stats[2].1),
            mean: Some(stats[3].1),
            summation: Summation::Atomic,
        },
        ignored: Some(ignored),
    }
    .add_to_graph(&mut g)
    .unwrap();
    let (dsb, det_sum) = output(ctx, &mut g, "det-sum", F::Float32, 5, cells);
    let (dmb, det_mean) = output(ctx, &mut g, "det-mean", F::Float32, 2, cells);
    GridAggregation {
        id: "agg-deterministic".into(),
        positions: positions_again,
        weights: weights_again,
        mask: mask_again,
        domain: d,
        outputs: AggregateOutputs {
            sum: Some(det_sum),
            mean: Some(det_mean),
            summation: Summation::Deterministic,
            ..Default::default()
        },
        ignored: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(ctx, g);

    let k = cells as usize;
    let (want_bins, want_bin_ignored) = cpu::bin(&d, pos, mask);
    assert_eq!(
        read_out(ctx, &bb, 1, k),
        want_bins,
        "{label}: binning counts"
    );
    assert_eq!(
        read_out(ctx, &bib, 0, 1)[0],
        want_bin_ignored,
        "{label}: binning ignored"
    );
    let want = cpu::aggregate(&d, pos, Some(w), mask);
    assert_eq!(read_out(ctx, &cb, 2, k), want.count, "{label}: count");
    assert_eq!(
        read_out(ctx, &ib, 3, 1)[0],
        want.ignored,
        "{label}: ignored"
    );
    let got: Vec<Vec<f32>> = stats
        .iter()
        .enumerate()
        .map(|(i, (b, _))| floats(&read_out(ctx, b, i, k)))
        .collect();
    let bound: Vec<f64> = (0..k)
        .map(|i| sum_bound(want.count[i], want.abs_sum[i]))
        .collect();
    assert_close(&format!("{label}: sum"), &got[0], &want.sum, &bound);
    assert_same_floats(&format!("{label}: min"), &got[1], &want.min);
    assert_same_floats(&format!("{label}: max"), &got[2], &want.max);
    let mean = want.mean();
    let mean_bound: Vec<f64> = (0..k)
        .map(|i| bound[i] / want.count[i].max(1) as f64 + mean[i].abs() * 1e-6)
        .collect();
    assert_close(&format!("{label}: mean"), &got[3], &mean, &mean_bound);
    check_deterministic(
        label,
        &floats(&read_out(ctx, &dsb, 5, k)),
        &floats(&read_out(ctx, &dmb, 2, k)),
        &want,
    );
}

#[test]
fn grids_match_the_oracle_across_sizes() {
    let ctx = ctx();
    let mut r = rng(21);
    let sizes = [boundary_sizes(&[256, 2048]), vec![60_001]].concat();
    // 1×1, 3×2 (replicated private), 40×30 (private), 80×40 (global atomics for 4 stats).
    let shapes = [(1u32, 1u32), (3, 2), (40, 30), (80, 40)];
    for (si, &n) in sizes.iter().enumerate() {
        let (nx, ny) = shapes[si % shapes.len()];
        let d = domain(nx, ny);
        let pos = points(&mut r, n, &d);
        let w = weights(&mut r, n);
        let mask = random_u32s(&mut r, n, 2);
        let m = (si % 2 == 1).then_some(mask.as_slice());
        check(&ctx, d, &pos, &w, m, &[n], &format!("n={n} {nx}x{ny}"));
    }
}

#[test]
fn edges_and_the_max_corner_land_in_the_expected_cells() {
    // 4 × 2 cells of 2 × 2 units: every edge coordinate is exact.
    let d = domain(4, 2);
    let pts = [
        (-2.0f32, 10.0f32), // min corner: cell 0
        (0.0, 10.0),        // interior x edge: column 1
        (6.0, 14.0),        // max corner: last cell (7)
        (6.0, 12.0),        // max x, interior y edge: row 1, column 3
        (-2.0, 14.0),       // min x, max y: cell 4
        (6.000001, 12.0),   // outside
        (f32::NAN, 12.0),   // non-finite
    ];
    let want = [0u32, 1, 7, 7, 4];
    for (i, &(x, y)) in pts.iter().enumerate() {
        assert_eq!(
            cpu::cell_of(&d, x, y),
            want.get(i).copied(),
            "oracle ({x}, {y})"
        );
    }
    let ctx = ctx();
    let pos: Vec<f32> = pts.iter().flat_map(|&(x, y)| [x, y]).collect();
    let w: Vec<f32> = (0..pts.len()).map(|i| i as f32).collect();
    check(&ctx, d, &pos, &w, None, &[pts.len()], "edges");
}

#[test]
fn vectors_keep_empty_and_uneven_chunks() {
    let ctx = ctx();
    let mut r = rng(22);
    let n = 7000;
    for (nx, ny) in [(2u32, 2u32), (100, 40)] {
        let d = domain(nx, ny);
        let lens: Vec<usize> = [vec![0], uneven_chunks(&mut r, n, 4), vec![0]].concat();
        let pos = points(&mut r, n, &d);
        let w = weights(&mut r, n);
        let mask = random_u32s(&mut r, n, 3);
        check(
            &ctx,
            d,
            &pos,
            &w,
            Some(&mask),
            &lens,
            &format!("{lens:?} {nx}x{ny}"),
        );
    }
}

#[test]
fn dispatches_over_the_dimension_limit_use_a_second_grid_row() {
    let ctx = ctx_with_max_dispatch(16);
    let mut r = rng(23);
    let n = 100_003;
    let d = domain(5, 3);
    let pos = points(&mut r, n, &d);
    let w = weights(&mut r, n);
    check(&ctx, d, &pos, &w, None, &[n], "2-D");
}

#[test]
fn bad_domains_and_views_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let pos = import_typed(&mut g, "pos", &upload(&ctx, &[0; 16]), F::Float32x2, 0, 8);
    let flat = import_typed(&mut g, "flat", &upload(&ctx, &[0; 16]), F::Float32, 0, 8);
    let counts = import_typed(&mut g, "c", &upload(&ctx, &[0; 16]), F::Uint32, 0, 8);
    let binning = |d: GridDomain, positions| GridBinning {
        id: "b".into(),
        positions,
        mask: None,
        domain: d,
        counts,
        ignored: None,
    };
    let mut d = domain(4, 2);
    d.x_max = d.x_min;
    let err = binning(d, pos.into()).add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::OutOfRange { what, value, .. }
            if &**what == "the x range" && &**value == "[-2, -2]"),
        "{err}"
    );
    let mut d = domain(4, 2);
    d.ny = 0;
    let err = binning(d, pos.into()).add_to_graph(&mut g).unwrap_err();
    assert!(err.to_string().contains("0 cells over y"), "{err}");
    let err = binning(domain(4, 3), pos.into())
        .add_to_graph(&mut g)
        .unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::LengthMismatch { what, actual: 8, expected: 12, .. }
            if &**what == "count output"),
        "{err}"
    );
    let err = binning(domain(4, 2), flat.into())
        .add_to_graph(&mut g)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "grid binning b: positions must be float32x2, got float32"
    );
    let err = GridAggregation {
        id: "a".into(),
        positions: pos.into(),
        weights: pos.into(),
        mask: None,
        domain: domain(4, 2),
        outputs: AggregateOutputs {
            count: Some(counts),
            ..Default::default()
        },
        ignored: None,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(err, AlgorithmError::UnsupportedView { .. }),
        "{err}"
    );
}
