//! Live counts (device-resident lengths): a compaction's GPU-written count bounds the scan and
//! the reduction after it, in one submission with no readback. Rows past the count are
//! poisoned and must not leak into any result. Checked against the CPU oracles, with count 0,
//! count == capacity and random selections, at tile boundaries.

mod common;

use common::{ctx, import_typed, import_view, read_buffer, rng, run, upload, POISON};
use gpugraph_command::{CommandGraph, VectorView};
use gpugraph_command::{DataView, DataViewDescriptor, VectorFormat};
use gpugraph_gpgpu::compact::cpu as compact_cpu;
use gpugraph_gpgpu::group::cpu as group_cpu;
use gpugraph_gpgpu::histogram::cpu as histogram_cpu;
use gpugraph_gpgpu::mask::cpu as mask_cpu;
use gpugraph_gpgpu::reduce::cpu as reduce_cpu;
use gpugraph_gpgpu::scan::cpu as scan_cpu;
use gpugraph_gpgpu::{
    AggregateOutputs, AlgorithmError, Compaction, GroupAggregation, Histogram, HistogramBins, Mask,
    MaskOp, ReduceOp, Reduction, Scan, Sort,
};
use rand::Rng;

#[derive(Clone, Copy, Debug)]
enum Selection {
    None,
    All,
    Random,
}

struct Outcome {
    count: u32,
    compacted: Vec<u32>,
    scanned: Vec<u32>,
    sum: [u32; 2],
}

/// compaction → scan (live count) → reduce (live count) over `values`/`flags`, capacity
/// `values.len()`, recorded into one encoder and submitted once.
fn chain(values: &[u32], flags: &[u32]) -> Outcome {
    let ctx = ctx();
    let n = values.len();
    let vb = upload(&ctx, values);
    let fb = upload(&ctx, flags);
    let out = upload(&ctx, &vec![POISON; n]);
    let count = upload(&ctx, &[POISON]);
    let scanned = upload(&ctx, &vec![POISON; n]);
    let sum = upload(&ctx, &[POISON, POISON]);
    let mut g = CommandGraph::new("live", &ctx.device);
    let v = import_view(&mut g, "values", &vb, 0, n as u64);
    let f = import_view(&mut g, "flags", &fb, 0, n as u64);
    let o = import_view(&mut g, "out", &out, 0, n as u64);
    let c = import_view(&mut g, "count", &count, 0, 1);
    let s = import_view(&mut g, "scanned", &scanned, 0, n as u64);
    let r = import_view(&mut g, "sum", &sum, 0, 2);
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
    Scan {
        id: "scan".into(),
        input: g.with_live_count(o, c).unwrap().into(),
        output: s.into(),
        inclusive: false,
        segment_starts: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    Reduction {
        id: "sum".into(),
        input: g.with_live_count(s, c).unwrap().into(),
        mask: None,
        op: ReduceOp::Sum,
        output: r,
        ignored: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(&ctx, g);
    let sum = read_buffer(&ctx, &sum);
    Outcome {
        count: read_buffer(&ctx, &count)[0],
        compacted: read_buffer(&ctx, &out)[..n].to_vec(),
        scanned: read_buffer(&ctx, &scanned)[..n].to_vec(),
        sum: [sum[0], sum[1]],
    }
}

#[test]
fn compaction_scan_reduce_chain_over_a_live_count() {
    let mut rng = rng(9);
    for n in [0usize, 1, 5, 4095, 4096, 4097, 12_345] {
        for selection in [Selection::None, Selection::All, Selection::Random] {
            let values: Vec<u32> = (0..n).map(|_| rng.random_range(0..1_000_000)).collect();
            let flags: Vec<u32> = match selection {
                Selection::None => vec![0; n],
                Selection::All => (0..n).map(|i| i as u32 % 7 + 1).collect(),
                Selection::Random => (0..n).map(|_| rng.random_range(0..3)).collect(),
            };
            let got = chain(&values, &flags);
            let want = compact_cpu::compact(&values, &flags, n);
            let case = format!("n {n}, {selection:?}");
            assert_eq!(got.count, want.count, "{case}");
            let live = want.count as usize;
            match selection {
                Selection::None => assert_eq!(live, 0, "{case}"),
                Selection::All => assert_eq!(live, n, "{case}"),
                Selection::Random => {}
            }
            // The compaction leaves rows past the count untouched: still poisoned.
            let mut compacted = want.written.clone();
            compacted.resize(n, POISON);
            assert_eq!(got.compacted, compacted, "{case}");
            // The scan reads the poisoned rows as 0: past the count it holds the total.
            let scanned = scan_cpu::scan(&scan_cpu::live_rows(&compacted, want.count), None, false);
            assert_eq!(got.scanned, scanned, "{case}");
            if live < n {
                let total = want.written.iter().fold(0u32, |a, &b| a.wrapping_add(b));
                assert!(got.scanned[live..].iter().all(|&x| x == total), "{case}");
            }
            // The reduction sees the first `count` scanned rows only.
            let sum = reduce_cpu::reduce_u32(&scanned[..live], None).sum;
            assert_eq!(got.sum, [sum as u32, (sum >> 32) as u32], "{case}");
        }
    }
}

/// What the consumers of one compaction's live count produced.
struct Consumers {
    count: u32,
    /// `Or(compacted, other)` and `Not(compacted)` over the live rows; 0 past the count.
    or: Vec<u32>,
    not: Vec<u32>,
    /// Histogram of the compacted rows read as float32: counts and ignored rows.
    bins: Vec<u32>,
    bins_ignored: u32,
    /// Group aggregation keyed by the compacted rows (codes), with full-capacity values:
    /// counts, sums and ignored rows.
    groups: Vec<u32>,
    sums: Vec<f32>,
    groups_ignored: u32,
}

/// Rows `first..first + len` of `format` in the buffer of `view`.
fn rows_of(
    g: &mut CommandGraph,
    view: DataView,
    format: VectorFormat,
    first: u64,
    len: u64,
) -> DataView {
    let row = format.byte_size() as u64;
    g.create_data_view(
        view.buffer(),
        DataViewDescriptor::packed(format, len).at_offset(first * row),
    )
    .unwrap()
}

const BINS: u32 = 10;
const GROUPS: u32 = 7;

/// compaction of `values` by `flags` into rows `first..first + n` of a poisoned buffer, then
/// mask, histogram and group aggregation over that output with the compaction's live count,
/// recorded into one encoder and submitted once (no readback in between).
fn consumers(
    values: &[u32],
    flags: &[u32],
    other: &[u32],
    weights: &[f32],
    first: u64,
) -> Consumers {
    let ctx = ctx();
    let n = values.len() as u64;
    let vb = upload(&ctx, values);
    let fb = upload(&ctx, flags);
    let ob = upload(&ctx, other);
    let wb = upload(&ctx, bytemuck::cast_slice(weights));
    let out = upload(&ctx, &vec![POISON; (first + n) as usize]);
    let count = upload(&ctx, &[POISON]);
    let or = upload(&ctx, &vec![POISON; n as usize]);
    let not = upload(&ctx, &vec![POISON; n as usize]);
    let bins = upload(&ctx, &vec![POISON; BINS as usize + 1]);
    let groups = upload(&ctx, &vec![POISON; 2 * GROUPS as usize + 1]);
    let mut g = CommandGraph::new("live-consumers", &ctx.device);
    let v = import_view(&mut g, "values", &vb, 0, n);
    let f = import_view(&mut g, "flags", &fb, 0, n);
    let other_v = import_view(&mut g, "other", &ob, 0, n);
    let w = import_typed(&mut g, "weights", &wb, VectorFormat::Float32, 0, n);
    let o = import_view(&mut g, "out", &out, first, n);
    // The same rows read as float32 (the histogram's input).
    let o_f = rows_of(&mut g, o, VectorFormat::Float32, first, n);
    let c = import_view(&mut g, "count", &count, 0, 1);
    let or_v = import_view(&mut g, "or", &or, 0, n);
    let not_v = import_view(&mut g, "not", &not, 0, n);
    let bins_v = import_view(&mut g, "bins", &bins, 0, BINS as u64);
    let bins_ign = rows_of(&mut g, bins_v, VectorFormat::Uint32, BINS as u64, 1);
    let group_v = import_view(&mut g, "groups", &groups, 0, GROUPS as u64);
    let (k, f32s) = (GROUPS as u64, VectorFormat::Float32);
    let sum_v = rows_of(&mut g, group_v, f32s, k, k);
    let group_ign = rows_of(&mut g, group_v, VectorFormat::Uint32, 2 * k, 1);
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
    let live = g.with_live_count(o, c).unwrap();
    Mask {
        id: "or".into(),
        inputs: vec![live.into(), other_v.into()],
        output: or_v.into(),
        op: MaskOp::Or,
    }
    .add_to_graph(&mut g)
    .unwrap();
    Mask {
        id: "not".into(),
        inputs: vec![live.into()],
        output: not_v.into(),
        op: MaskOp::Not,
    }
    .add_to_graph(&mut g)
    .unwrap();
    Histogram {
        id: "histogram".into(),
        input: g.with_live_count(o_f, c).unwrap().into(),
        mask: None,
        bins: HistogramBins::Uniform {
            min: 0.0,
            max: BINS as f32,
            bins: BINS,
        },
        counts: bins_v,
        cumulative: None,
        ignored: Some(bins_ign),
        invalid_edges: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    GroupAggregation {
        id: "group".into(),
        codes: live.into(),
        values: Some(w.into()),
        mask: None,
        group_count: GROUPS,
        outputs: AggregateOutputs {
            count: Some(group_v),
            sum: Some(sum_v),
            ..Default::default()
        },
        ignored: Some(group_ign),
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(&ctx, g);
    let bins = read_buffer(&ctx, &bins);
    let groups = read_buffer(&ctx, &groups);
    let g = GROUPS as usize;
    Consumers {
        count: read_buffer(&ctx, &count)[0],
        or: read_buffer(&ctx, &or)[..n as usize].to_vec(),
        not: read_buffer(&ctx, &not)[..n as usize].to_vec(),
        bins: bins[..BINS as usize].to_vec(),
        bins_ignored: bins[BINS as usize],
        groups: groups[..g].to_vec(),
        sums: groups[g..2 * g]
            .iter()
            .map(|&b| f32::from_bits(b))
            .collect(),
        groups_ignored: groups[2 * g],
    }
}

#[test]
fn mask_histogram_and_group_aggregation_read_a_compactions_live_count() {
    let mut rng = rng(11);
    // 4096 rows: the vec4 mask kernel covers all; odd sizes add the scalar tail; a view at
    // row 1 takes the scalar kernel only. Poisoned rows past the count would show up as
    // ones in `or`, as ignored rows of the histogram (−6e18 is outside the bins) and of the
    // group aggregation (0xDEADBEEF is not a group code).
    for (n, first) in [
        (0usize, 0u64),
        (1, 0),
        (5, 0),
        (4096, 0),
        (4097, 1),
        (9_999, 0),
    ] {
        for selection in [Selection::None, Selection::All, Selection::Random] {
            // Small integers: codes of GROUPS groups, and float32 values in the bins (the
            // compaction moves the bits).
            let values: Vec<u32> = (0..n)
                .map(|_| {
                    if rng.random_bool(0.5) {
                        rng.random_range(0..GROUPS + 2)
                    } else {
                        (rng.random_range(0..BINS * 10) as f32 / 10.0).to_bits()
                    }
                })
                .collect();
            let flags: Vec<u32> = match selection {
                Selection::None => vec![0; n],
                Selection::All => vec![1; n],
                Selection::Random => (0..n).map(|_| rng.random_range(0..2)).collect(),
            };
            let other: Vec<u32> = (0..n).map(|_| rng.random_range(0..2)).collect();
            let weights: Vec<f32> = (0..n).map(|_| rng.random_range(-8..8) as f32).collect();
            let got = consumers(&values, &flags, &other, &weights, first);
            let want = compact_cpu::compact(&values, &flags, n);
            let case = format!("n {n} at row {first}, {selection:?}");
            assert_eq!(got.count, want.count, "{case}");
            let live = want.count as usize;
            match selection {
                Selection::None => assert_eq!(live, 0, "{case}"),
                Selection::All => assert_eq!(live, n, "{case}"),
                Selection::Random => {}
            }
            let rows = &want.written[..live];
            let mut or = mask_cpu::combine(MaskOp::Or, &[rows, &other[..live]]);
            or.resize(n, 0);
            assert_eq!(got.or, or, "{case}: or");
            let mut not = mask_cpu::combine(MaskOp::Not, &[rows]);
            not.resize(n, 0);
            assert_eq!(got.not, not, "{case}: not");
            let floats: Vec<f32> = rows.iter().map(|&b| f32::from_bits(b)).collect();
            let bins = HistogramBins::Uniform {
                min: 0.0,
                max: BINS as f32,
                bins: BINS,
            };
            let (counts, ignored) = histogram_cpu::histogram(&floats, None, &bins, None);
            assert_eq!(
                (got.bins, got.bins_ignored),
                (counts, ignored),
                "{case}: histogram"
            );
            let a = group_cpu::group(rows, Some(&weights[..live]), None, GROUPS);
            assert_eq!(got.groups, a.count, "{case}: group counts");
            assert_eq!(got.groups_ignored, a.ignored, "{case}: group ignored");
            // Small integers: the float sums are exact in any order.
            let sums: Vec<f32> = a.sum.iter().map(|&s| s as f32).collect();
            assert_eq!(got.sums, sums, "{case}: group sums");
        }
    }
}

#[test]
fn live_counts_are_refused_where_unsupported_or_ambiguous() {
    let ctx = ctx();
    let a = upload(&ctx, &[1; 64]);
    let b = upload(&ctx, &[1; 64]);
    let c = upload(&ctx, &[3, 4]);
    let d = upload(&ctx, &[0; 64]);
    let mut g = CommandGraph::new("reject", &ctx.device);
    let av = import_view(&mut g, "a", &a, 0, 64);
    let bv = import_view(&mut g, "b", &b, 0, 64);
    let cv = import_view(&mut g, "c", &c, 0, 1);
    let cv2 = rows_of(&mut g, cv, VectorFormat::Uint32, 1, 1);
    let dv = import_view(&mut g, "d", &d, 0, 64);
    let live = g.with_live_count(av, cv).unwrap();
    assert_eq!(live.live_count(), Some(cv));
    assert_eq!(live.len(), 64, "the view's length is its capacity");
    // Sort reads whole views: a live count is refused by name.
    let err = Sort::keys("sort", live, dv)
        .add_to_graph(&mut g)
        .unwrap_err();
    match err {
        AlgorithmError::UnsupportedView { what, actual, .. } => {
            assert!(actual.contains("live count"), "{what}: {actual}");
        }
        other => panic!("unexpected {other}"),
    }
    // Rows read together are bounded by one count.
    let other_live = g.with_live_count(bv, cv2).unwrap();
    let err = Mask {
        id: "mask".into(),
        op: MaskOp::And,
        inputs: vec![live.into(), other_live.into()],
        output: dv.into(),
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::LiveCountMismatch { first, second, .. }
            if &**first == "input 0" && &**second == "input 1"),
        "{err}"
    );
    let err = GroupAggregation {
        id: "group".into(),
        codes: live.into(),
        values: None,
        mask: Some(other_live.into()),
        group_count: 4,
        outputs: AggregateOutputs {
            count: Some(dv),
            ..Default::default()
        },
        ignored: None,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(err.to_string().contains("different live counts"), "{err}");
    let chunked = VectorView::from_chunks(vec![live, bv]);
    let err = Scan {
        id: "scan".into(),
        input: chunked,
        output: VectorView::from_chunks(vec![dv, bv]),
        inclusive: true,
        segment_starts: None,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        err.to_string().contains("2 chunks with a live count"),
        "{err}"
    );
    // A live count is one uint32 row.
    assert!(g.with_live_count(av, bv).is_err());
}
