//! The hash index and its query on a real device (lavapipe in CI), against the CPU oracle in
//! `gpugraph_gpgpu::hash::cpu`: random sizes around workgroup boundaries, duplicate keys
//! (lowest row wins), keys 0 and 0xffffffff, validity flags, live counts, exact capacity,
//! overflow (incomplete), both probe sequences, chunked builds. Outputs are poisoned first.

mod common;

use common::*;
use gpugraph_command::wgpu;
use gpugraph_command::{
    CommandGraph, DataView, DataViewDescriptor, GpuContext, VectorFormat, VectorView,
};
use gpugraph_gpgpu::hash::{
    cpu, BatchHashIndex, HashBuildStats, HashIndex, HashIndexQuery, HashPolicy, HashQueryStats,
    HashTable, Probing, EMPTY_KEY, MISS, STATS_WORDS,
};
use gpugraph_gpgpu::AlgorithmError;
use rand::Rng;

/// A packed u32 view of `buffer`, importing it on first use (a buffer is imported once).
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

/// A table in imported buffers (read back after the run).
struct Table {
    keys: wgpu::Buffer,
    rows: wgpu::Buffer,
    stats: wgpu::Buffer,
    capacity: u64,
    probing: Probing,
}

impl Table {
    fn new(ctx: &GpuContext, capacity: u64, probing: Probing) -> Self {
        let poison = |n: u64| upload(ctx, &vec![POISON; n as usize]);
        Self {
            keys: poison(capacity),
            rows: poison(capacity + 1),
            stats: poison(STATS_WORDS),
            capacity,
            probing,
        }
    }
    fn import(&self, g: &mut CommandGraph) -> HashTable {
        HashTable {
            keys: view(g, "slot-keys", &self.keys, 0, self.capacity),
            rows: view(g, "slot-rows", &self.rows, 0, self.capacity + 1),
            stats: view(g, "table-stats", &self.stats, 0, STATS_WORDS),
            probing: self.probing,
        }
    }
    fn read(&self, ctx: &GpuContext) -> (Vec<u32>, Vec<u32>, HashBuildStats) {
        let keys = read_rows(ctx, &self.keys, 0, self.capacity as usize);
        let rows = read_rows(ctx, &self.rows, 0, self.capacity as usize + 1);
        let stats = HashBuildStats::from_words(&read_rows(ctx, &self.stats, 0, 8));
        (keys, rows, stats)
    }
}

/// Keys with duplicates, 0 and 0xffffffff mixed in.
fn keys_with_specials(rng: &mut impl Rng, n: usize, range: u32) -> Vec<u32> {
    (0..n)
        .map(|_| match rng.random_range(0..20) {
            0 => 0,
            1 => u32::MAX,
            _ => rng.random_range(0..range),
        })
        .collect()
}

/// Checks a table read back against the oracle map: every stored key's row, the placement
/// invariant (each stored key is found from its home slot) and the stored-key count.
fn check_table(
    keys: &[u32],
    rows: &[u32],
    stats: &HashBuildStats,
    probing: Probing,
    map: &std::collections::HashMap<u32, u32>,
    complete: bool,
) {
    let mut stored = 0;
    for (s, &k) in keys.iter().enumerate() {
        if k == EMPTY_KEY {
            continue;
        }
        stored += 1;
        assert_eq!(Some(&rows[s]), map.get(&k), "slot {s} key {k}: lowest row");
        assert_eq!(
            cpu::probe(keys, rows, probing, k).0,
            rows[s],
            "key {k} reachable"
        );
    }
    let sentinel = rows[keys.len()];
    assert_eq!(
        sentinel,
        map.get(&EMPTY_KEY).copied().unwrap_or(MISS),
        "row of key 0xffffffff"
    );
    stored += u32::from(sentinel != MISS);
    assert_eq!(stats.keys, stored, "stored key count");
    if complete {
        assert_eq!(stored as usize, map.len(), "every key stored");
        assert_eq!(stats.overflow, 0);
    }
}

struct Run {
    table: (Vec<u32>, Vec<u32>, HashBuildStats),
    out: Vec<u32>,
    query: HashQueryStats,
}

/// Builds from `keys` (with optional flags) and queries `queries`; the query output is
/// poisoned and guarded by one row on each side.
fn build_and_query(
    ctx: &GpuContext,
    keys: &[u32],
    valid: Option<&[u32]>,
    queries: &[u32],
    capacity: u64,
    policy: &HashPolicy,
) -> Run {
    let table = Table::new(ctx, capacity, policy.probing);
    let key_buf = upload(ctx, keys);
    let valid_buf = valid.map(|v| upload(ctx, v));
    // Queries at element offset 3 of their buffer: offsets are honored.
    let mut q = vec![7u32; 3];
    q.extend_from_slice(queries);
    let query_buf = upload(ctx, &q);
    let out_buf = upload(ctx, &vec![POISON; queries.len() + 2]);
    let stats_buf = upload(ctx, &[POISON; 8]);
    let mut g = CommandGraph::new("hash-test", &ctx.device);
    let t = table.import(&mut g);
    let kv = view(&mut g, "keys", &key_buf, 0, keys.len() as u64);
    HashIndex {
        id: "index".into(),
        keys: kv.into(),
        valid: valid_buf
            .as_ref()
            .map(|b| view(&mut g, "valid", b, 0, keys.len() as u64).into()),
        table: t,
    }
    .add_to_graph_with(&mut g, policy)
    .unwrap();
    HashIndexQuery {
        id: "query".into(),
        table: t,
        keys: view(&mut g, "queries", &query_buf, 3, queries.len() as u64).into(),
        valid: None,
        output: view(&mut g, "out", &out_buf, 1, queries.len() as u64),
        stats: view(&mut g, "qstats", &stats_buf, 0, 8),
    }
    .add_to_graph_with(&mut g, policy)
    .unwrap();
    run(ctx, g);
    let out = read_buffer(ctx, &out_buf);
    assert_eq!(out[0], POISON, "guard before the output");
    assert_eq!(out[queries.len() + 1], POISON, "guard after the output");
    Run {
        table: table.read(ctx),
        out: out[1..=queries.len()].to_vec(),
        query: HashQueryStats::from_words(&read_rows(ctx, &stats_buf, 0, 8)),
    }
}

/// Query statistics the CPU computes over the table read back.
fn expected_query(keys: &[u32], rows: &[u32], probing: Probing, queries: &[u32]) -> HashQueryStats {
    let mut s = HashQueryStats {
        rows: queries.len() as u32,
        ..Default::default()
    };
    for &q in queries {
        let (row, probes) = cpu::probe(keys, rows, probing, q);
        if row == MISS {
            s.missing += 1;
        } else {
            s.found += 1;
        }
        s.max_probe = s.max_probe.max(probes);
        s.probe_sum += u64::from(probes);
    }
    s
}

#[test]
fn index_and_query_match_the_oracle_at_boundary_sizes() {
    let ctx = ctx();
    let mut rng = rng(14);
    // The default tile (256 invocations x 4 rows) and a one-row-per-invocation tile of 64.
    for (probing, workgroup_size, rows_per_thread) in
        [(Probing::Linear, 256, 4), (Probing::Triangular, 64, 1)]
    {
        let policy = HashPolicy {
            probing,
            workgroup_size,
            rows_per_thread,
            ..HashPolicy::DEFAULT
        };
        for &n in &[1usize, 2, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 4097] {
            for range in [8u32, 1 << 30] {
                let keys = keys_with_specials(&mut rng, n, range);
                let (map, _) = cpu::index(&keys, None, 0);
                let capacity = policy.capacity_for(map.len() as u64).unwrap();
                let mut queries = keys_with_specials(&mut rng, n + 5, range.saturating_mul(2));
                queries.extend([0, u32::MAX, range + 1]);
                let r = build_and_query(&ctx, &keys, None, &queries, capacity, &policy);
                let (tk, tr, bs) = &r.table;
                check_table(tk, tr, bs, probing, &map, true);
                assert_eq!((bs.rows, bs.invalid), (n as u32, 0));
                // Slots are never freed, so every row of a key walks to that key's final
                // slot: the build's probe statistics follow from the final table.
                let walks: Vec<u32> = keys
                    .iter()
                    .map(|&k| cpu::probe(tk, tr, probing, k).1)
                    .collect();
                assert_eq!(
                    bs.max_probe,
                    *walks.iter().max().unwrap(),
                    "build max probe"
                );
                assert_eq!(
                    bs.probe_sum,
                    walks.iter().map(|&p| u64::from(p)).sum::<u64>(),
                    "build probe sum"
                );
                assert_eq!(
                    r.out,
                    cpu::lookup(&map, &queries, None),
                    "{probing:?} n={n}"
                );
                assert_eq!(r.query, expected_query(tk, tr, probing, &queries));
                assert!(!r.query.incomplete);
            }
        }
    }
}

#[test]
fn duplicate_keys_keep_the_lowest_row_and_invalid_rows_are_skipped() {
    let ctx = ctx();
    let mut rng = rng(15);
    let n = 3000;
    // Few distinct keys, many rows each: every key is raced for by many threads.
    let keys: Vec<u32> = (0..n)
        .map(|_| [0, 1, u32::MAX, 42][rng.random_range(0..4)])
        .collect();
    let valid: Vec<u32> = (0..n).map(|i| u32::from(i % 7 != 0)).collect();
    let (map, invalid) = cpu::index(&keys, Some(&valid), 0);
    let queries = vec![0, 1, 2, 42, u32::MAX, 43];
    let r = build_and_query(&ctx, &keys, Some(&valid), &queries, 8, &HashPolicy::DEFAULT);
    let (tk, tr, bs) = &r.table;
    check_table(tk, tr, bs, Probing::Linear, &map, true);
    assert_eq!(bs.invalid, invalid);
    assert_eq!(r.out, cpu::lookup(&map, &queries, None));
    assert_eq!(r.query.found, 4);
}

#[test]
fn empty_index_misses_everything() {
    let ctx = ctx();
    let queries: Vec<u32> = vec![0, 1, 99, u32::MAX];
    let r = build_and_query(&ctx, &[], None, &queries, 1, &HashPolicy::DEFAULT);
    assert_eq!(r.out, vec![MISS; 4]);
    assert_eq!(r.table.2, HashBuildStats::default());
    assert_eq!((r.query.found, r.query.missing, r.query.rows), (0, 4, 4));
    // Nothing to query: the statistics are still cleared.
    let r = build_and_query(&ctx, &[5, 6], None, &[], 4, &HashPolicy::DEFAULT);
    assert_eq!(r.query, HashQueryStats::default());
}

#[test]
fn an_exactly_full_table_holds_every_key_and_proves_misses_by_a_full_scan() {
    let ctx = ctx();
    let capacity = 64u64;
    // 64 distinct keys other than 0xffffffff fill every slot; the sentinel key uses its own.
    let mut keys: Vec<u32> = (0..capacity as u32).map(|k| k * 7919 + 3).collect();
    keys.push(u32::MAX);
    let (map, _) = cpu::index(&keys, None, 0);
    let queries = vec![3, 7922, 5, 6, u32::MAX];
    let r = build_and_query(&ctx, &keys, None, &queries, capacity, &HashPolicy::DEFAULT);
    let (tk, tr, bs) = &r.table;
    check_table(tk, tr, bs, Probing::Linear, &map, true);
    assert!(tk.iter().all(|&k| k != EMPTY_KEY), "every slot used");
    assert_eq!(r.out, cpu::lookup(&map, &queries, None));
    assert_eq!(
        r.query.max_probe, capacity as u32,
        "a miss scans the whole table"
    );
    assert_eq!(r.query, expected_query(tk, tr, Probing::Linear, &queries));
}

#[test]
fn overflow_is_counted_and_makes_queries_incomplete() {
    let ctx = ctx();
    let mut rng = rng(16);
    let capacity = 128u64;
    let keys: Vec<u32> = (0..1000).map(|_| rng.random_range(0..400)).collect();
    let (map, _) = cpu::index(&keys, None, 0);
    let queries: Vec<u32> = (0..400).collect();
    let r = build_and_query(&ctx, &keys, None, &queries, capacity, &HashPolicy::DEFAULT);
    let (tk, tr, bs) = &r.table;
    check_table(tk, tr, bs, Probing::Linear, &map, false);
    assert_eq!(bs.keys, capacity as u32, "every slot claimed");
    let stored: std::collections::HashSet<u32> = tk.iter().copied().collect();
    let lost = keys.iter().filter(|k| !stored.contains(k)).count() as u32;
    assert_eq!(bs.overflow, lost, "rows whose key found no slot");
    assert!(
        r.query.incomplete,
        "a query of an overflowed index is incomplete"
    );
    assert_eq!(r.query.found, capacity as u32);
    for (q, &row) in queries.iter().zip(&r.out) {
        if stored.contains(q) {
            assert_eq!(row, map[q]);
        } else {
            assert_eq!(row, MISS);
        }
    }
}

#[test]
fn live_counts_bound_the_build_and_the_query() {
    let ctx = ctx();
    let keys: Vec<u32> = (0..600).map(|i| i * 3).collect();
    let key_buf = upload(&ctx, &keys);
    let count_buf = upload(&ctx, &[500, 200]);
    let out_buf = upload(&ctx, &vec![POISON; 600]);
    let stats_buf = upload(&ctx, &[POISON; 8]);
    let table = Table::new(&ctx, 1024, Probing::Linear);
    let mut g = CommandGraph::new("live", &ctx.device);
    let t = table.import(&mut g);
    let kv = view(&mut g, "keys", &key_buf, 0, 600);
    let build_count = view(&mut g, "count", &count_buf, 0, 1);
    let query_count = view(&mut g, "count", &count_buf, 1, 1);
    HashIndex {
        id: "index".into(),
        keys: g.with_live_count(kv, build_count).unwrap().into(),
        valid: None,
        table: t,
    }
    .add_to_graph(&mut g)
    .unwrap();
    // Query keys 0, 3, ... and their live count 200: rows 200.. stay poisoned.
    HashIndexQuery {
        id: "query".into(),
        table: t,
        keys: g.with_live_count(kv, query_count).unwrap().into(),
        valid: None,
        output: view(&mut g, "out", &out_buf, 0, 600),
        stats: view(&mut g, "qstats", &stats_buf, 0, 8),
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(&ctx, g);
    let (_, _, bs) = table.read(&ctx);
    assert_eq!((bs.rows, bs.keys), (500, 500));
    let out = read_buffer(&ctx, &out_buf);
    assert_eq!(out[..200], (0..200).collect::<Vec<u32>>()[..]);
    assert!(out[200..600].iter().all(|&v| v == POISON));
    let qs = HashQueryStats::from_words(&read_rows(&ctx, &stats_buf, 0, 8));
    assert_eq!((qs.rows, qs.found), (200, 200));
}

#[test]
fn a_chunked_build_equals_the_build_of_the_concatenation() {
    let ctx = ctx();
    let mut rng = rng(17);
    for parts in [1usize, 3, 6] {
        let total = 2000;
        let keys = keys_with_specials(&mut rng, total, 700);
        let lens = uneven_chunks(&mut rng, total, parts);
        let (map, _) = cpu::index(&keys, None, 0);
        let buf = upload(&ctx, &keys);
        let table = Table::new(&ctx, 2048, Probing::Triangular);
        let mut g = CommandGraph::new("batch", &ctx.device);
        let t = table.import(&mut g);
        let mut chunks: Vec<DataView> = Vec::new();
        let mut at = 0u64;
        for (k, &len) in lens.iter().enumerate() {
            chunks.push(view(&mut g, &format!("c{k}"), &buf, at, len as u64));
            at += len as u64;
        }
        BatchHashIndex {
            id: "batch".into(),
            keys: VectorView::from_chunks(chunks),
            valid: None,
            table: t,
        }
        .add_to_graph_with(
            &mut g,
            &HashPolicy {
                probing: Probing::Triangular,
                ..HashPolicy::DEFAULT
            },
        )
        .unwrap();
        run(&ctx, g);
        let (tk, tr, bs) = table.read(&ctx);
        check_table(&tk, &tr, &bs, Probing::Triangular, &map, true);
        assert_eq!(bs.rows, total as u32, "chunks {lens:?}");
    }
}

#[test]
fn bad_declarations_are_named_errors() {
    let ctx = ctx();
    let buf = upload(&ctx, &[0u32; 64]);
    let mut g = CommandGraph::new("bad", &ctx.device);
    let keys = view(&mut g, "keys", &buf, 0, 8);
    let table = |g: &mut CommandGraph, capacity: u64| HashTable {
        keys: view(g, "k", &buf, 8, capacity),
        rows: view(g, "r", &buf, 32, capacity + 1),
        stats: view(g, "s", &buf, 48, 8),
        probing: Probing::Linear,
    };
    let t = table(&mut g, 6);
    let e = HashIndex {
        id: "i".into(),
        keys: keys.into(),
        valid: None,
        table: t,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(e.to_string().contains("power of two"), "{e}");
    let t = table(&mut g, 8);
    let e = HashIndex {
        id: "i".into(),
        keys: keys.into(),
        valid: None,
        table: t,
    }
    .add_to_graph_with(
        &mut g,
        &HashPolicy {
            probing: Probing::Triangular,
            ..HashPolicy::DEFAULT
        },
    )
    .unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::OutOfRange { what, .. } if &**what == "the policy's probing"),
        "{e}"
    );
    let e = HashIndex {
        id: "i".into(),
        keys: VectorView::from_chunks(vec![keys, keys]),
        valid: None,
        table: t,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(e.to_string().contains("BatchHashIndex"), "{e}");
    // The keys are in the table's buffer: written and read at once.
    let e = HashIndex {
        id: "i".into(),
        keys: keys.into(),
        valid: None,
        table: t,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(matches!(e, AlgorithmError::Aliased { .. }), "{e}");
}

#[test]
fn grids_past_one_dimension_split_over_two() {
    // 16 workgroups per dimension: 4,097 keys at 64 rows per workgroup need 65 of them.
    let ctx = ctx_with_max_dispatch(16);
    let mut rng = rng(18);
    let policy = HashPolicy {
        workgroup_size: 64,
        rows_per_thread: 1,
        ..HashPolicy::DEFAULT
    };
    let keys = keys_with_specials(&mut rng, 4097, 3000);
    let (map, _) = cpu::index(&keys, None, 0);
    let queries = keys_with_specials(&mut rng, 4097, 6000);
    let r = build_and_query(&ctx, &keys, None, &queries, 8192, &policy);
    let (tk, tr, bs) = &r.table;
    check_table(tk, tr, bs, Probing::Linear, &map, true);
    assert_eq!(r.out, cpu::lookup(&map, &queries, None));
    assert_eq!(r.query, expected_query(tk, tr, Probing::Linear, &queries));
}
