//! HashJoin, BatchHashJoin and RowGather on a real device (lavapipe in CI) against the CPU
//! oracle: random many-to-one joins, exact and short capacities (exact count, overflow),
//! capacity 0, all-miss, null keys, live counts, incomplete-index propagation, uneven and
//! empty left batches. Outputs are poisoned first, so unwritten rows fail.

mod common;

use common::*;
use gpugraph_command::wgpu;
use gpugraph_command::{
    CommandGraph, DataView, DataViewDescriptor, GpuContext, VectorFormat, VectorView,
};
use gpugraph_gpgpu::hash::{
    cpu, BatchHashJoin, HashIndex, HashJoin, HashPolicy, HashQueryStats, HashTable, JoinOutputs,
    RowGather, MISS, STATS_WORDS,
};
use gpugraph_gpgpu::AlgorithmError;
use rand::Rng;

fn view(g: &mut CommandGraph, id: &str, buffer: &wgpu::Buffer, offset: u64, len: u64) -> DataView {
    match g.imported_handle(buffer) {
        Some(h) => g
            .create_data_view(
                h,
                DataViewDescriptor::packed(VectorFormat::Uint32, len).at_offset(offset * 4),
            )
            .unwrap(),
        None => import_view(g, id, buffer, offset, len),
    }
}

/// Output buffers of one join: pairs (poisoned, one guard row after), count, overflow,
/// statistics.
struct Out {
    left: wgpu::Buffer,
    right: wgpu::Buffer,
    words: wgpu::Buffer,
    capacity: u64,
}

impl Out {
    fn new(ctx: &GpuContext, capacity: u64) -> Self {
        Self {
            left: upload(ctx, &vec![POISON; capacity as usize + 1]),
            right: upload(ctx, &vec![POISON; capacity as usize + 1]),
            words: upload(ctx, &[POISON; 10]),
            capacity,
        }
    }
    fn views(&self, g: &mut CommandGraph, k: usize) -> JoinOutputs {
        JoinOutputs {
            left_rows: view(g, &format!("left{k}"), &self.left, 0, self.capacity),
            right_rows: view(g, &format!("right{k}"), &self.right, 0, self.capacity),
            count: view(g, &format!("words{k}"), &self.words, 0, 1),
            overflow: Some(view(g, &format!("words{k}"), &self.words, 1, 1)),
            stats: view(g, &format!("words{k}"), &self.words, 2, STATS_WORDS),
        }
    }
    /// (left, right, count, overflow, stats); checks the unwritten rows kept their poison.
    fn read(&self, ctx: &GpuContext) -> (Vec<u32>, Vec<u32>, u32, u32, HashQueryStats) {
        let left = read_buffer(ctx, &self.left);
        let right = read_buffer(ctx, &self.right);
        let words = read_rows(ctx, &self.words, 0, 10);
        let n = (words[0] as usize).min(self.capacity as usize);
        assert!(
            left[n..].iter().all(|&v| v == POISON),
            "left rows past the count untouched"
        );
        assert!(
            right[n..].iter().all(|&v| v == POISON),
            "right rows past the count untouched"
        );
        (
            left[..n].to_vec(),
            right[..n].to_vec(),
            words[0],
            words[1],
            HashQueryStats::from_words(&words[2..]),
        )
    }
}

/// Imports a table of `capacity` slots built from `right` in transients and returns it.
fn build(g: &mut CommandGraph, right: &wgpu::Buffer, rows: u64, capacity: u64) -> HashTable {
    let table = HashTable::transient(g, "table", capacity, Default::default()).unwrap();
    let keys = view(g, "right", right, 0, rows);
    HashIndex {
        id: "index".into(),
        keys: keys.into(),
        valid: None,
        table,
    }
    .add_to_graph(g)
    .unwrap();
    table
}

#[allow(clippy::type_complexity)]
fn join_once(
    ctx: &GpuContext,
    right: &[u32],
    left: &[u32],
    left_valid: Option<&[u32]>,
    capacity: u64,
    table_capacity: u64,
) -> (Vec<u32>, Vec<u32>, u32, u32, HashQueryStats) {
    let rb = upload(ctx, right);
    let lb = upload(ctx, left);
    let vb = left_valid.map(|v| upload(ctx, v));
    let out = Out::new(ctx, capacity);
    let mut g = CommandGraph::new("join", &ctx.device);
    let table = build(&mut g, &rb, right.len() as u64, table_capacity);
    let o = out.views(&mut g, 0);
    HashJoin {
        id: "join".into(),
        table,
        left_keys: view(&mut g, "left", &lb, 0, left.len() as u64).into(),
        left_valid: vb
            .as_ref()
            .map(|b| view(&mut g, "valid", b, 0, left.len() as u64).into()),
        left_rows: o.left_rows,
        right_rows: o.right_rows,
        count: o.count,
        overflow: o.overflow,
        stats: o.stats,
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(ctx, g);
    out.read(ctx)
}

/// Unique right keys (many-to-one) and left keys that hit about half the time.
fn workload(rng: &mut impl Rng, nr: usize, nl: usize) -> (Vec<u32>, Vec<u32>) {
    let mut right: Vec<u32> = (0..nr as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    if nr > 2 {
        right[1] = u32::MAX;
        right[2] = 0;
    }
    let left = (0..nl)
        .map(|_| {
            if nr > 0 && rng.random_bool(0.5) {
                right[rng.random_range(0..nr)]
            } else {
                rng.random()
            }
        })
        .collect();
    (right, left)
}

#[test]
fn joins_match_the_oracle_with_exact_short_and_zero_capacities() {
    let ctx = ctx();
    let mut rng = rng(21);
    for &(nr, nl) in &[
        (1usize, 1usize),
        (100, 255),
        (1000, 257),
        (300, 4097),
        (5, 0),
    ] {
        let (right, left) = workload(&mut rng, nr, nl);
        let (map, _) = cpu::index(&right, None, 0);
        let table_capacity = HashPolicy::DEFAULT.capacity_for(nr as u64).unwrap();
        let (_, _, exact) = cpu::join(&map, &left, None, usize::MAX);
        for capacity in [exact as u64, exact as u64 / 2, 0, exact as u64 + 3] {
            let (l, r, count, overflow, stats) =
                join_once(&ctx, &right, &left, None, capacity, table_capacity);
            let (el, er, ec) = cpu::join(&map, &left, None, capacity as usize);
            assert_eq!((l, r), (el, er), "nr={nr} nl={nl} capacity={capacity}");
            assert_eq!(count, ec, "exact required count");
            assert_eq!(overflow, u32::from(u64::from(ec) > capacity));
            assert_eq!((stats.found, stats.rows), (ec, nl as u32));
            assert!(!stats.incomplete);
        }
    }
}

#[test]
fn null_and_missing_keys_never_match() {
    let ctx = ctx();
    let right = vec![10, 20, 30, u32::MAX];
    let left = vec![20, 20, 99, u32::MAX, 10, 30];
    let valid = vec![1, 0, 1, 1, 1, 0];
    let (map, _) = cpu::index(&right, None, 0);
    let (l, r, count, _, stats) = join_once(&ctx, &right, &left, Some(&valid), 8, 8);
    let (el, er, ec) = cpu::join(&map, &left, Some(&valid), 8);
    assert_eq!((l, r, count), (el, er, ec));
    assert_eq!((stats.found, stats.missing, stats.invalid), (3, 1, 2));
    // All miss.
    let (l, _, count, overflow, _) = join_once(&ctx, &right, &[1, 2, 3], None, 3, 8);
    assert_eq!((l.len(), count, overflow), (0, 0, 0));
}

#[test]
fn an_incomplete_index_is_propagated_to_the_join() {
    let ctx = ctx();
    let right: Vec<u32> = (0..100).collect();
    let left: Vec<u32> = (0..100).collect();
    let (l, r, count, _, stats) = join_once(&ctx, &right, &left, None, 100, 64);
    assert!(stats.incomplete, "64 slots cannot hold 100 keys");
    assert_eq!(count, 64);
    for (a, b) in l.iter().zip(&r) {
        assert_eq!(a, b, "a stored key maps to its row");
    }
}

#[test]
fn a_live_left_count_bounds_the_join() {
    let ctx = ctx();
    let right: Vec<u32> = (0..50).collect();
    let left: Vec<u32> = (0..80).map(|i| i % 60).collect();
    let rb = upload(&ctx, &right);
    let lb = upload(&ctx, &left);
    let cb = upload(&ctx, &[33]);
    let out = Out::new(&ctx, 80);
    let mut g = CommandGraph::new("live", &ctx.device);
    let table = build(&mut g, &rb, 50, 128);
    let o = out.views(&mut g, 0);
    let lv = view(&mut g, "left", &lb, 0, 80);
    let count = view(&mut g, "count", &cb, 0, 1);
    HashJoin {
        id: "join".into(),
        table,
        left_keys: g.with_live_count(lv, count).unwrap().into(),
        left_valid: None,
        left_rows: o.left_rows,
        right_rows: o.right_rows,
        count: o.count,
        overflow: o.overflow,
        stats: o.stats,
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(&ctx, g);
    let (l, r, n, _, stats) = out.read(&ctx);
    let (map, _) = cpu::index(&right, None, 0);
    let (el, er, ec) = cpu::join(&map, &left[..33], None, 80);
    assert_eq!((l, r, n), (el, er, ec));
    assert_eq!(stats.rows, 33);
}

#[test]
fn batches_join_one_shared_index_with_their_own_outputs() {
    let ctx = ctx();
    let mut rng = rng(22);
    let (right, left) = workload(&mut rng, 700, 3000);
    let (map, _) = cpu::index(&right, None, 0);
    for parts in [1usize, 4, 7] {
        let lens = uneven_chunks(&mut rng, left.len(), parts);
        let rb = upload(&ctx, &right);
        let lb = upload(&ctx, &left);
        // Every other batch gets a short capacity: per-batch overflow.
        let mut outs = Vec::new();
        let mut at = 0;
        for (k, &len) in lens.iter().enumerate() {
            let (_, _, exact) = cpu::join(&map, &left[at..at + len], None, usize::MAX);
            let capacity = if k % 2 == 0 { exact } else { exact / 2 };
            outs.push(Out::new(&ctx, u64::from(capacity)));
            at += len;
        }
        let mut g = CommandGraph::new("batches", &ctx.device);
        let table = build(&mut g, &rb, 700, 2048);
        let mut chunks = Vec::new();
        let mut at = 0u64;
        for (k, &len) in lens.iter().enumerate() {
            chunks.push(view(&mut g, &format!("l{k}"), &lb, at, len as u64));
            at += len as u64;
        }
        let batches = outs
            .iter()
            .enumerate()
            .map(|(k, o)| o.views(&mut g, k))
            .collect();
        BatchHashJoin {
            id: "bj".into(),
            table,
            left_keys: VectorView::from_chunks(chunks),
            left_valid: None,
            batches,
        }
        .add_to_graph(&mut g)
        .unwrap();
        run(&ctx, g);
        let mut at = 0;
        for (k, (&len, o)) in lens.iter().zip(&outs).enumerate() {
            let (l, r, count, overflow, stats) = o.read(&ctx);
            let chunk = &left[at..at + len];
            let (el, er, ec) = cpu::join(&map, chunk, None, o.capacity as usize);
            assert_eq!((l, r, count), (el, er, ec), "batch {k} of {lens:?}");
            assert_eq!(overflow, u32::from(u64::from(ec) > o.capacity));
            assert_eq!(stats.rows, len as u32);
            at += len;
        }
    }
}

#[test]
fn gather_moves_wide_rows_and_marks_misses_and_nulls() {
    let ctx = ctx();
    let source: Vec<u32> = (0..20).collect(); // 10 rows of 2 words
    let source_valid: Vec<u32> = (0..10).map(|i| u32::from(i != 4)).collect();
    let indices = vec![3, MISS, 4, 9, 0, 10];
    let (sb, svb, ib) = (
        upload(&ctx, &source),
        upload(&ctx, &source_valid),
        upload(&ctx, &indices),
    );
    let ob = upload(&ctx, &[POISON; 12]);
    let vb = upload(&ctx, &[POISON; 6]);
    let mut g = CommandGraph::new("gather", &ctx.device);
    RowGather {
        id: "g".into(),
        indices: view(&mut g, "i", &ib, 0, 6),
        source: view(&mut g, "s", &sb, 0, 20),
        width: 2,
        output: view(&mut g, "o", &ob, 0, 12),
        source_valid: Some(view(&mut g, "sv", &svb, 0, 10)),
        valid_out: Some(view(&mut g, "v", &vb, 0, 6)),
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(&ctx, g);
    assert_eq!(
        read_buffer(&ctx, &ob),
        vec![6, 7, 0, 0, 8, 9, 18, 19, 0, 1, 0, 0]
    );
    assert_eq!(read_buffer(&ctx, &vb), vec![1, 0, 0, 1, 1, 0]);
}

#[test]
fn join_declarations_are_checked() {
    let ctx = ctx();
    let b = upload(&ctx, &[0u32; 64]);
    let c = upload(&ctx, &[0u32; 64]);
    let mut g = CommandGraph::new("bad", &ctx.device);
    let table = HashTable::transient(&mut g, "t", 8, Default::default()).unwrap();
    let keys = view(&mut g, "k", &b, 0, 4);
    let lr = view(&mut g, "c", &c, 0, 4);
    let rr = view(&mut g, "c", &c, 8, 5);
    let count = view(&mut g, "c", &c, 20, 1);
    let stats = view(&mut g, "c", &c, 40, 8);
    let mk = |left_rows, right_rows| HashJoin {
        id: "j".into(),
        table,
        left_keys: keys.into(),
        left_valid: None,
        left_rows,
        right_rows,
        count,
        overflow: None,
        stats,
    };
    let e = mk(lr, rr).add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { what, .. } if &**what == "right_rows"),
        "{e}"
    );
    let rr = view(&mut g, "c", &c, 8, 4);
    let e = mk(lr, rr).add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(e, AlgorithmError::Aliased { .. }),
        "right rows beside the left rows: {e}"
    );
}

#[test]
fn joins_with_grids_split_over_two_dimensions() {
    let ctx = ctx_with_max_dispatch(8);
    let mut rng = rng(23);
    let (right, left) = workload(&mut rng, 900, 5000);
    let (map, _) = cpu::index(&right, None, 0);
    let (l, r, count, overflow, _) = join_once(&ctx, &right, &left, None, 5000, 2048);
    let (el, er, ec) = cpu::join(&map, &left, None, 5000);
    assert_eq!((l, r, count, overflow), (el, er, ec, 0));
}
