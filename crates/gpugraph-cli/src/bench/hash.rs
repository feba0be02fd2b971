//! `bench hash` and `bench join`: the hash family on n keys.
//!
//! `hash`: n unique u32 keys (a random permutation of a spread-out key set) indexed at load
//! factor 0.5 (capacity 2n) and probed with the same keys shuffled again, for each probe
//! sequence: `hash-build` (clear + insert), `hash-probe` (lookup of n hits) and
//! `hash-build+probe` (both in one graph). Minimum traffic per key: build 12 B (read the key,
//! write its slot key and slot row), probe 16 B (read the key, its slot key and row, write
//! the row); the clear of 2n slots adds 16 B per key. The check prints the measured probes
//! per key and the bytes the probes actually touch (each probed slot is 4 B of key, plus the
//! row of the hit).
//!
//! `join`: n left keys against n/4 unique right keys (the lineitem : orders shape), every
//! left key present: index build + `HashJoin` (lookup, compaction of the matches, right-row
//! gather). Minimum traffic per left row: 3 B of right build (12 B per right key), lookup
//! 12 B, compaction 8 B + 4 B per pair, right rows 8 B per pair: 35 B, 16 written.

use anyhow::{bail, Result};
use gpugraph_command::wgpu;
use gpugraph_command::CommandGraph;
use gpugraph_gpgpu::hash::{
    HashBuildStats, HashIndex, HashIndexQuery, HashJoin, HashPolicy, HashQueryStats, HashTable,
    Probing, STATS_WORDS,
};
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::primitives::Case;
use super::report;
use crate::gpu::{import, Gpu};

/// n distinct keys (odd multiples of a large odd constant: distinct mod 2^32) in random order.
fn unique_keys(n: u64, seed: u64) -> Vec<u32> {
    let mut keys: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) ^ 0x5bd1_e995)
        .collect();
    keys.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
    keys
}

/// A table's three buffers.
struct TableBuffers {
    keys: wgpu::Buffer,
    rows: wgpu::Buffer,
    stats: wgpu::Buffer,
    capacity: u64,
    probing: Probing,
}

impl TableBuffers {
    fn new(gpu: &Gpu, capacity: u64, probing: Probing) -> Self {
        Self {
            keys: gpu.upload("hash-slot-keys", &vec![0; capacity as usize]),
            rows: gpu.upload("hash-slot-rows", &vec![0; capacity as usize + 1]),
            stats: gpu.upload("hash-table-stats", &[0; STATS_WORDS as usize]),
            capacity,
            probing,
        }
    }

    fn import(&self, g: &mut CommandGraph) -> Result<HashTable> {
        Ok(HashTable {
            keys: import(g, "slot-keys", &self.keys, self.capacity)?,
            rows: import(g, "slot-rows", &self.rows, self.capacity + 1)?,
            stats: import(g, "table-stats", &self.stats, STATS_WORDS)?,
            probing: self.probing,
        })
    }
}

/// Adds the build of `keys` (n rows) into `t`.
fn add_build(
    g: &mut CommandGraph,
    id: &str,
    keys: &wgpu::Buffer,
    n: u64,
    t: HashTable,
    policy: &HashPolicy,
) -> Result<()> {
    HashIndex {
        id: id.to_string(),
        keys: import(g, "keys", keys, n)?.into(),
        valid: None,
        table: t,
    }
    .add_to_graph_with(g, policy)?;
    Ok(())
}

fn describe(op: &str, mean: f64, max: u32, n: u64) {
    report::progress(format_args!(
        "bench hash: {op}: n = {n}: probes per key mean {mean:.3} max {max}; probed bytes per key {:.1}",
        4.0 + 4.0 * mean + 4.0
    ));
}

/// `bench hash` cases at n keys.
pub fn hash_cases(gpu: &Gpu, n: u64) -> Result<Vec<Case>> {
    let keys = unique_keys(n, 41);
    let mut probes = keys.clone();
    probes.shuffle(&mut rand::rngs::StdRng::seed_from_u64(42));
    // The row of each probe key: its position in `keys`.
    let row_of: std::collections::HashMap<u32, u32> = keys
        .iter()
        .enumerate()
        .map(|(r, &k)| (k, r as u32))
        .collect();
    let want: std::sync::Arc<Vec<u32>> =
        std::sync::Arc::new(probes.iter().map(|k| row_of[k]).collect());
    let bk = gpu.upload("hash-keys", &keys);
    let bp = gpu.upload("hash-probes", &probes);
    let mut cases = Vec::new();
    for (probing, label) in [(Probing::Linear, ""), (Probing::Triangular, "[triangular]")] {
        let policy = HashPolicy {
            probing,
            ..HashPolicy::DEFAULT
        };
        let capacity = policy.capacity_for(n).unwrap_or(1 << 31);
        for (what, build, probe) in [
            ("build", true, false),
            ("probe", false, true),
            ("build+probe", true, true),
        ] {
            let op = format!("hash-{what}{label}");
            let tb = TableBuffers::new(gpu, capacity, probing);
            let qstats = gpu.upload("hash-query-stats", &[0; STATS_WORDS as usize]);
            let out = gpu.upload("hash-out", &vec![0xDEAD_BEEF; n as usize]);
            if !build {
                // The probe-only case queries a table built once, outside the timed graph.
                let mut once = CommandGraph::new("hash-prebuild", gpu.device());
                let t = tb.import(&mut once)?;
                add_build(&mut once, "prebuild", &bk, n, t, &policy)?;
                gpu.run_graph(&mut once.compile()?, "hash-prebuild")?;
            }
            let mut g = CommandGraph::new(&op, gpu.device());
            let t = tb.import(&mut g)?;
            if build {
                add_build(&mut g, &format!("{op}/index"), &bk, n, t, &policy)?;
            }
            if probe {
                HashIndexQuery {
                    id: format!("{op}/query"),
                    table: t,
                    keys: import(&mut g, "probes", &bp, n)?.into(),
                    valid: None,
                    output: import(&mut g, "out", &out, n)?,
                    stats: import(&mut g, "query-stats", &qstats, STATS_WORDS)?,
                }
                .add_to_graph_with(&mut g, &policy)?;
            }
            let stats = tb.stats.clone();
            let (want, what_op) = (want.clone(), op.clone());
            let (per_key, written) = match (build, probe) {
                (true, false) => (12.0 + 16.0, 8.0 + 16.0),
                (false, true) => (16.0, 4.0),
                _ => (12.0 + 16.0 + 16.0, 8.0 + 16.0 + 4.0),
            };
            cases.push(Case {
                op,
                bytes_per_element: per_key,
                written_bytes_per_element: written,
                graph: g.compile()?,
                check: Box::new(move |gpu| {
                    let b = HashBuildStats::from_words(&gpu.read_back(&stats, STATS_WORDS)?);
                    if b.keys as u64 != n || b.overflow != 0 {
                        bail!(
                            "{what_op}: {} keys stored, {} overflowed, of {n}",
                            b.keys,
                            b.overflow
                        );
                    }
                    describe(
                        &format!("{what_op} (build)"),
                        b.mean_probe(),
                        b.max_probe,
                        n,
                    );
                    if probe {
                        let q = HashQueryStats::from_words(&gpu.read_back(&qstats, STATS_WORDS)?);
                        if q.found as u64 != n {
                            bail!("{what_op}: {} of {n} probes found", q.found);
                        }
                        describe(
                            &format!("{what_op} (probe)"),
                            q.mean_probe(),
                            q.max_probe,
                            n,
                        );
                        super::throughput::check_equal(&what_op, &gpu.read_back(&out, n)?, &want)?;
                    }
                    Ok(())
                }),
            });
        }
    }
    Ok(cases)
}

/// `bench join` cases at n left rows (n/4 unique right keys, every left key present).
pub fn join_cases(gpu: &Gpu, n: u64) -> Result<Vec<Case>> {
    let nr = (n / 4).max(1);
    let right = unique_keys(nr, 43);
    let mut rng = rand::rngs::StdRng::seed_from_u64(44);
    let picks: Vec<u32> = {
        use rand::Rng;
        (0..n).map(|_| rng.random_range(0..nr as u32)).collect()
    };
    let left: Vec<u32> = picks.iter().map(|&r| right[r as usize]).collect();
    let want = std::sync::Arc::new(picks);
    let (br, bl) = (
        gpu.upload("join-right", &right),
        gpu.upload("join-left", &left),
    );
    let policy = HashPolicy::DEFAULT;
    let capacity = policy.capacity_for(nr).unwrap_or(1 << 31);
    let tb = TableBuffers::new(gpu, capacity, policy.probing);
    let left_rows = gpu.upload("join-left-rows", &vec![0xDEAD_BEEF; n as usize]);
    let right_rows = gpu.upload("join-right-rows", &vec![0xDEAD_BEEF; n as usize]);
    let words = gpu.upload("join-words", &[0; 2 + STATS_WORDS as usize]);
    let mut g = CommandGraph::new("join", gpu.device());
    let t = tb.import(&mut g)?;
    add_build(&mut g, "join/index", &br, nr, t, &policy)?;
    let wh = g.import_buffer(
        gpugraph_command::BufferDescriptor::new("words", words.size(), words.usage()),
        &words,
    )?;
    let at = |g: &mut CommandGraph, offset: u64, len: u64| {
        g.create_data_view(
            wh,
            gpugraph_command::DataViewDescriptor::packed(
                gpugraph_command::VectorFormat::Uint32,
                len,
            )
            .at_offset(offset * 4),
        )
    };
    HashJoin {
        id: "join".into(),
        table: t,
        left_keys: import(&mut g, "left", &bl, n)?.into(),
        left_valid: None,
        left_rows: import(&mut g, "left-rows", &left_rows, n)?,
        right_rows: import(&mut g, "right-rows", &right_rows, n)?,
        count: at(&mut g, 0, 1)?,
        overflow: Some(at(&mut g, 1, 1)?),
        stats: at(&mut g, 2, STATS_WORDS)?,
    }
    .add_to_graph_with(&mut g, &policy)?;
    Ok(vec![Case {
        op: "join-inner".into(),
        bytes_per_element: 35.0,
        written_bytes_per_element: 16.0,
        graph: g.compile()?,
        check: Box::new(move |gpu| {
            let w = gpu.read_back(&words, 2 + STATS_WORDS)?;
            if u64::from(w[0]) != n || w[1] != 0 {
                bail!("join-inner: {} pairs (overflow {}) of {n}", w[0], w[1]);
            }
            let q = HashQueryStats::from_words(&w[2..]);
            describe("join-inner (probe)", q.mean_probe(), q.max_probe, n);
            let ids: Vec<u32> = (0..n as u32).collect();
            super::throughput::check_equal(
                "join-inner left rows",
                &gpu.read_back(&left_rows, n)?,
                &ids,
            )?;
            super::throughput::check_equal(
                "join-inner right rows",
                &gpu.read_back(&right_rows, n)?,
                &want,
            )
        }),
    }])
}
