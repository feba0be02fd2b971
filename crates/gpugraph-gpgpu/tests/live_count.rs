//! Live counts (device-resident lengths): a compaction's GPU-written count bounds the scan and
//! the reduction after it, in one submission with no readback. Rows past the count are
//! poisoned and must not leak into any result. Checked against the CPU oracles, with count 0,
//! count == capacity and random selections, at tile boundaries.

mod common;

use common::{ctx, import_view, read_buffer, rng, run, upload, POISON};
use gpugraph_command::{CommandGraph, VectorView};
use gpugraph_gpgpu::compact::cpu as compact_cpu;
use gpugraph_gpgpu::reduce::cpu as reduce_cpu;
use gpugraph_gpgpu::scan::cpu as scan_cpu;
use gpugraph_gpgpu::{AlgorithmError, Compaction, Mask, MaskOp, ReduceOp, Reduction, Scan};
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

#[test]
fn algorithms_without_live_counts_reject_them_and_chunked_live_inputs_are_refused() {
    let ctx = ctx();
    let a = upload(&ctx, &[1; 64]);
    let b = upload(&ctx, &[1; 64]);
    let c = upload(&ctx, &[3]);
    let d = upload(&ctx, &[0; 64]);
    let mut g = CommandGraph::new("reject", &ctx.device);
    let av = import_view(&mut g, "a", &a, 0, 64);
    let bv = import_view(&mut g, "b", &b, 0, 64);
    let cv = import_view(&mut g, "c", &c, 0, 1);
    let dv = import_view(&mut g, "d", &d, 0, 64);
    let live = g.with_live_count(av, cv).unwrap();
    assert_eq!(live.live_count(), Some(cv));
    assert_eq!(live.len(), 64, "the view's length is its capacity");
    let err = Mask {
        id: "mask".into(),
        op: MaskOp::And,
        inputs: vec![live.into(), bv.into()],
        output: dv.into(),
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    match err {
        AlgorithmError::UnsupportedView { what, actual, .. } => {
            assert!(actual.contains("live count"), "{what}: {actual}");
        }
        other => panic!("unexpected {other}"),
    }
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
