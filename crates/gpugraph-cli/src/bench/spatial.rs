//! `gpugraph bench spatial`: the spatial harness (spec 5.2c / 5.4c). The same 2-D clustered
//! points and the same radius queries go through an unindexed scan, the grid index (one query
//! per graph encoding, and `grid-batch`: every query in one dispatch with
//! [`BatchGridIndexQuery`], over the grid path's index) and the BVH (Morton order, and source
//! order on a query subset to show what the topology costs);
//! every path's per-query hit count and hit checksum must equal the scan's, and the scan's the
//! CPU oracle's on the first queries, before anything is reported (overflow aborts too).
//!
//! Reported per path: build time (median [min–max] of the index build graph), query time for
//! all Q queries recorded into one submission (each query copies its words into the query
//! buffer, runs the query graph and copies its results out), per-query time, mean candidates,
//! mean visited nodes (BVH), mean hits, caller-owned index bytes, and `x scan` (scan time /
//! path time). `--dump DIR` writes the points and queries as `.npy` for the cKDTree peer
//! (`bench/peers/spatial_ckdtree.py`).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use gpugraph_command::{wgpu, CommandGraph, CompiledGraph, DataView, VectorFormat};
use gpugraph_gpgpu::spatial::{
    BatchGridIndexQuery, Bvh, BvhOrder, BvhQuery, BvhStorage, FilterCandidates, GridIndex,
    GridIndexQuery, GridStorage, PointSpatialFilter, SpatialQuery, QUERY_WORDS,
};
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::report::{self, BenchJson, Summary, Table};
use super::throughput;
use super::BenchOptions;
use crate::gpu::{import, import_as, Gpu};

/// Arguments of `bench spatial`.
#[derive(Args, Clone, Debug)]
pub struct SpatialBenchArgs {
    /// Point counts (counts or powers like 2^24), comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = throughput::parse_size, default_value = "2^16,2^20")]
    pub sizes: Vec<u64>,
    /// Radius queries per size (centered on random points).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub queries: u32,
    /// Query radius (the points fill [0, 1000]² in 64 clusters of σ ≈ 8).
    #[arg(long, default_value_t = 1.0)]
    pub radius: f32,
    /// Queries the source-order BVH runs (its walks visit most nodes; a subset is enough).
    #[arg(long, default_value_t = 64)]
    pub source_order_queries: u32,
    /// Write `points-N.npy` (n × 2 float32) and `queries-N.npy` (Q × 3: x, y, r) here.
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
    #[command(flatten)]
    pub options: BenchOptions,
}

/// One path at one size, as printed and written to JSON.
#[derive(Clone, Debug, Serialize)]
pub struct SpatialRow {
    /// `scan`, `grid`, `grid-batch`, `bvh-morton`, `bvh-source`.
    pub op: String,
    /// Points.
    pub elements: u64,
    /// Queries timed.
    pub queries: u32,
    /// Index build, milliseconds.
    pub build: Summary,
    /// All queries in one submission, milliseconds.
    pub query: Summary,
    /// `query.median / queries`, microseconds.
    pub per_query_us: f64,
    /// Mean candidates per query (points tested exactly; the scan tests all).
    pub candidates_per_query: f64,
    /// Mean BVH nodes visited per query (0 for other paths).
    pub visited_per_query: f64,
    /// Mean exact hits per query.
    pub hits_per_query: f64,
    /// Bytes of the caller-owned index storage.
    pub index_bytes: u64,
    /// Scan per-query time / this path's (1.0 for the scan).
    pub speedup_vs_scan: f64,
    /// `gpu-timestamps` or `wall-clock`.
    pub timing: &'static str,
}

/// 64 clusters in [0, 1000]², points ~ center + σ·(sum of 4 uniforms), σ = 8, rounded to
/// multiples of 2^-8.
fn clustered(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let centers: Vec<[f32; 2]> = (0..64)
        .map(|_| [r.random_range(50.0..950.0), r.random_range(50.0..950.0)])
        .collect();
    let mut out = Vec::with_capacity(2 * n);
    for _ in 0..n {
        let c = centers[r.random_range(0..64)];
        for &center in &c {
            let g: f32 = (0..4).map(|_| r.random_range(-1.0f32..1.0)).sum();
            // Multiples of 2^-8: near the query radius every difference, square and sum is
            // exact, so fused multiply-adds on the GPU, the CPU oracle and the float64 peer agree.
            out.push(((center + 8.0 * g) * 256.0).round() / 256.0);
        }
    }
    out
}

struct Path {
    op: String,
    build: Option<CompiledGraph>,
    query: CompiledGraph,
    /// Words of the query's status copied out per query (0: none).
    status_words: u64,
    status: Option<wgpu::Buffer>,
    hits: wgpu::Buffer,
    queries: u32,
    index_bytes: u64,
    /// All queries in one encoding of `query` (it reads the query words and writes every
    /// query's hits and `[candidates, flags]` itself).
    batch: bool,
}

struct Shared {
    positions: wgpu::Buffer,
    query: wgpu::Buffer,
    n: u64,
}

/// A `capacity`-row candidate buffer and a query status buffer (`status_rows` used) of an
/// index path, imported into `q`: (status buffer for readback, candidate view, status view).
fn candidates(
    gpu: &Gpu,
    q: &mut CommandGraph,
    path: &str,
    capacity: u64,
    status_rows: u64,
) -> Result<(wgpu::Buffer, DataView, DataView)> {
    let cand = gpu.upload(&format!("{path}-candidates"), &vec![0; capacity as usize]);
    let status = gpu.upload(&format!("{path}-query-status"), &[0; 4]);
    let cand_v = import(q, "candidates", &cand, capacity)?;
    let status_v = import(q, "query-status", &status, status_rows)?;
    Ok((status, cand_v, status_v))
}

/// The exact filter over an index path's candidates, counting and checksumming the hits
/// into `hits` (the paths' parity check against the scan).
fn refine(
    q: &mut CommandGraph,
    pos: DataView,
    query: DataView,
    (rows, count): (DataView, DataView),
    hits: DataView,
) -> Result<()> {
    PointSpatialFilter {
        id: "refine".into(),
        positions: pos.into(),
        query,
        candidates: Some(FilterCandidates { rows, count }),
        mask: None,
        hits: Some(hits),
    }
    .add_to_graph(q)?;
    Ok(())
}

fn query_graph(
    gpu: &Gpu,
    s: &Shared,
    id: &str,
) -> Result<(CommandGraph, DataView, DataView, wgpu::Buffer, DataView)> {
    let mut q = CommandGraph::new(id, gpu.device());
    let pos = import_as(&mut q, "points", &s.positions, VectorFormat::Float32x2, s.n)?;
    let query = import(&mut q, "query", &s.query, QUERY_WORDS)?;
    let hits = gpu.upload("hits", &[0; 4]);
    let hits_v = import(&mut q, "hits", &hits, 2)?;
    Ok((q, pos, query, hits, hits_v))
}

fn scan_path(gpu: &Gpu, s: &Shared) -> Result<Path> {
    let (mut q, pos, query, hits, hits_v) = query_graph(gpu, s, "bench-spatial-scan")?;
    PointSpatialFilter {
        id: "scan".into(),
        positions: pos.into(),
        query,
        candidates: None,
        mask: None,
        hits: Some(hits_v),
    }
    .add_to_graph(&mut q)?;
    Ok(Path {
        op: "scan".into(),
        build: None,
        query: q.compile()?,
        status_words: 0,
        status: None,
        hits,
        queries: 0,
        index_bytes: 0,
        batch: false,
    })
}

/// The grid path and the batched grid path over the same index (built by the grid path's
/// build graph; the batch reads `words` and writes `batch_hits` / `batch_status` directly).
fn grid_paths(
    gpu: &Gpu,
    s: &Shared,
    points: &[f32],
    words: &wgpu::Buffer,
    (batch_hits, queries): (&wgpu::Buffer, u32),
) -> Result<(Path, Path)> {
    let domain = crate::spatial::grid_domain(points, 2);
    let cells = domain.cell_count();
    let n = s.n;
    let offsets = gpu.upload("grid-offsets", &vec![0; cells as usize + 1]);
    let ids = gpu.upload("grid-ids", &vec![0; n as usize]);
    let status = gpu.upload("grid-status", &[0; 4]);
    let mut b = CommandGraph::new("bench-spatial-grid-build", gpu.device());
    let storage = GridIndex {
        id: "grid".into(),
        positions: import_as(&mut b, "points", &s.positions, VectorFormat::Float32x2, n)?.into(),
        ids: None,
        domain,
        cell_offsets: import(&mut b, "offsets", &offsets, cells + 1)?,
        object_ids: import(&mut b, "ids", &ids, n)?,
        status: import(&mut b, "status", &status, 3)?,
    }
    .add_to_graph(&mut b)?;
    let (mut q, pos, query, hits, hits_v) = query_graph(gpu, s, "bench-spatial-grid")?;
    let storage = GridStorage {
        cell_offsets: import(&mut q, "offsets", &offsets, cells + 1)?,
        object_ids: import(&mut q, "ids", &ids, n)?,
        status: import(&mut q, "status", &status, 3)?,
        ..storage
    };
    let (qstatus, cand_v, qstatus_v) = candidates(gpu, &mut q, "grid", n, 3)?;
    GridIndexQuery {
        id: "grid-query".into(),
        index: storage,
        query,
        candidates: cand_v,
        status: qstatus_v,
        mask: None,
    }
    .add_to_graph(&mut q)?;
    refine(&mut q, pos, query, (cand_v, qstatus_v), hits_v)?;
    let index_bytes = (cells + 1 + n + 3) * 4;
    let grid = Path {
        op: "grid".into(),
        build: Some(b.compile()?),
        query: q.compile()?,
        status_words: 3,
        status: Some(qstatus),
        hits,
        queries: 0,
        index_bytes,
        batch: false,
    };
    let qn = u64::from(queries);
    let batch_status = gpu.upload("grid-batch-status", &vec![0; 2 * queries as usize]);
    let mut bq = CommandGraph::new("bench-spatial-grid-batch", gpu.device());
    BatchGridIndexQuery {
        id: "grid-batch".into(),
        index: GridStorage {
            cell_offsets: import(&mut bq, "offsets", &offsets, cells + 1)?,
            object_ids: import(&mut bq, "ids", &ids, n)?,
            status: import(&mut bq, "status", &status, 3)?,
            ..storage
        },
        positions: import_as(&mut bq, "points", &s.positions, VectorFormat::Float32x2, n)?.into(),
        queries: import(&mut bq, "queries", words, qn * QUERY_WORDS)?,
        hits: import(&mut bq, "hits", batch_hits, 2 * qn)?,
        status: Some(import(&mut bq, "batch-status", &batch_status, 2 * qn)?),
    }
    .add_to_graph(&mut bq)?;
    let batch = Path {
        op: "grid-batch".into(),
        build: None,
        query: bq.compile()?,
        status_words: 2,
        status: Some(batch_status),
        hits: batch_hits.clone(),
        queries: 0,
        index_bytes,
        batch: true,
    };
    Ok((grid, batch))
}

fn bvh_path(gpu: &Gpu, s: &Shared, order: BvhOrder, op: &str) -> Result<Path> {
    let n = s.n;
    let leaves = (n as u32).max(1).next_power_of_two();
    let nodes_n = 2 * u64::from(leaves) - 1;
    let nodes = gpu.upload("bvh-nodes", &vec![0; 8 * nodes_n as usize]);
    let children = gpu.upload("bvh-children", &vec![0; 2 * nodes_n as usize]);
    let leaf_ids = gpu.upload("bvh-leaf-ids", &vec![0; leaves as usize]);
    let status = gpu.upload("bvh-status", &[0; 4]);
    let mut b = CommandGraph::new("bench-spatial-bvh-build", gpu.device());
    let p = import_as(&mut b, "points", &s.positions, VectorFormat::Float32x2, n)?;
    let storage = Bvh {
        id: "bvh".into(),
        lower: p,
        upper: p,
        ids: None,
        leaf_capacity: leaves,
        order,
        nodes: import_as(&mut b, "nodes", &nodes, VectorFormat::Float32, 8 * nodes_n)?,
        children: import(&mut b, "children", &children, 2 * nodes_n)?,
        leaf_ids: import(&mut b, "leaf-ids", &leaf_ids, u64::from(leaves))?,
        status: import(&mut b, "status", &status, 3)?,
    }
    .add_to_graph(&mut b)?;
    let (mut q, pos, query, hits, hits_v) = query_graph(gpu, s, &format!("bench-spatial-{op}"))?;
    let storage = BvhStorage {
        nodes: import_as(&mut q, "nodes", &nodes, VectorFormat::Float32, 8 * nodes_n)?,
        leaf_ids: import(&mut q, "leaf-ids", &leaf_ids, u64::from(leaves))?,
        status: import(&mut q, "status", &status, 3)?,
        ..storage
    };
    let (qstatus, cand_v, qstatus_v) = candidates(gpu, &mut q, "bvh", n, 4)?;
    BvhQuery {
        id: "bvh-query".into(),
        bvh: storage,
        query,
        candidates: cand_v,
        status: qstatus_v,
        mask: None,
    }
    .add_to_graph(&mut q)?;
    // Leaf tests are exact for points; the filter only counts and checksums the hits.
    refine(&mut q, pos, query, (cand_v, qstatus_v), hits_v)?;
    Ok(Path {
        op: op.into(),
        build: Some(b.compile()?),
        query: q.compile()?,
        status_words: 4,
        status: Some(qstatus),
        hits,
        queries: 0,
        index_bytes: nodes_n * 40 + u64::from(leaves) * 4 + 12,
        batch: false,
    })
}

/// Records `count` queries: copy the words in, run the graph, copy hits and status out.
fn record_queries(
    enc: &mut wgpu::CommandEncoder,
    p: &mut Path,
    s: &Shared,
    words: &wgpu::Buffer,
    out: (&wgpu::Buffer, &wgpu::Buffer),
    count: u32,
) -> Result<()> {
    if p.batch {
        p.query
            .encode(enc, &Default::default())
            .context("encoding the batched queries")?;
        return Ok(());
    }
    for k in 0..u64::from(count) {
        enc.copy_buffer_to_buffer(words, k * QUERY_WORDS * 4, &s.query, 0, QUERY_WORDS * 4);
        p.query
            .encode(enc, &Default::default())
            .context("encoding a query")?;
        enc.copy_buffer_to_buffer(&p.hits, 0, out.0, k * 8, 8);
        if let Some(st) = &p.status {
            enc.copy_buffer_to_buffer(st, 0, out.1, k * 16, p.status_words * 4);
        }
    }
    Ok(())
}

/// Runs the bench.
pub fn run(args: &SpatialBenchArgs) -> Result<()> {
    let gpu = Gpu::open()?;
    let repeat = args.options.repeat;
    let mut rows: Vec<SpatialRow> = Vec::new();
    for &n in &args.sizes {
        if n == 0 || n >= u64::from(u32::MAX) {
            bail!("bench spatial: {n} points; give 1 ..= 2^32 - 2");
        }
        report::progress(format_args!("bench spatial: n = {n}: generating"));
        let points = clustered(n as usize, 14 + n);
        let mut r = rand::rngs::StdRng::seed_from_u64(n);
        let queries: Vec<SpatialQuery> = (0..args.queries)
            .map(|_| {
                let i = r.random_range(0..n as usize);
                SpatialQuery::Radius {
                    center: [points[2 * i], points[2 * i + 1], 0.0],
                    radius: args.radius,
                }
            })
            .collect();
        if let Some(dir) = &args.dump {
            dump(dir, n, &points, &queries, args.radius)?;
        }
        let s = Shared {
            positions: gpu.upload("points", bytemuck::cast_slice(&points)),
            query: gpu.upload("query", &[0; QUERY_WORDS as usize]),
            n,
        };
        let words: Vec<u32> = queries.iter().flat_map(|q| q.words()).collect();
        let words_buf = gpu.upload("queries", &words);
        let q = args.queries;
        let hits_out = gpu.upload("hits-out", &vec![0; 2 * q as usize]);
        let status_out = gpu.upload("status-out", &vec![0; 4 * q as usize]);
        let (grid, grid_batch) = grid_paths(&gpu, &s, &points, &words_buf, (&hits_out, q))?;
        let mut paths = vec![
            scan_path(&gpu, &s)?,
            grid,
            bvh_path(&gpu, &s, morton(&points), "bvh-morton")?,
            bvh_path(&gpu, &s, BvhOrder::Source, "bvh-source")?,
        ];
        paths[3].queries = args.source_order_queries.min(q);
        paths.insert(2, grid_batch);
        let mut reference: Option<Vec<u32>> = None;
        let mut scan_per_query = 0.0;
        for p in &mut paths {
            let count = if p.queries == 0 { q } else { p.queries };
            p.queries = count;
            report::progress(format_args!("bench spatial: n = {n}: {} checking", p.op));
            if let Some(b) = &mut p.build {
                gpu.run_graph(b, "the index build")?;
            }
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            record_queries(&mut enc, p, &s, &words_buf, (&hits_out, &status_out), count)?;
            gpu.submit_and_wait(enc.finish())?;
            let hits = gpu.read_back(&hits_out, 2 * u64::from(count))?;
            let status = match (&p.status, p.batch) {
                // [candidates, flags] per query, laid out as the single-query status rows.
                (Some(st), true) => gpu
                    .read_back(st, 2 * u64::from(count))?
                    .chunks_exact(2)
                    .flat_map(|w| [0, w[0], w[1], 0])
                    .collect(),
                _ => gpu.read_back(&status_out, 4 * u64::from(count))?,
            };
            check(
                &p.op,
                &hits,
                &status,
                p.status_words,
                &mut reference,
                &points,
                &queries,
            )?;
            report::progress(format_args!("bench spatial: n = {n}: {} timing", p.op));
            let (build, timing) = match &mut p.build {
                Some(b) => throughput::time_graph(&gpu, b, repeat)?,
                None => (Summary::of(&[0.0]), "none"),
            };
            let (query, qtiming) = throughput::time_encoded(&gpu, repeat, |enc| {
                record_queries(enc, p, &s, &words_buf, (&hits_out, &status_out), count)
            })?;
            let per_query_us = query.median * 1e3 / f64::from(count);
            if p.op == "scan" {
                scan_per_query = per_query_us;
            }
            let mean = |k: usize| -> f64 {
                (0..count as usize)
                    .map(|i| f64::from(status[i * 4 + k]))
                    .sum::<f64>()
                    / f64::from(count)
            };
            let hits_mean = (0..count as usize)
                .map(|i| f64::from(hits[2 * i]))
                .sum::<f64>()
                / f64::from(count);
            rows.push(SpatialRow {
                op: p.op.clone(),
                elements: n,
                queries: count,
                build,
                query,
                per_query_us,
                candidates_per_query: if p.status_words == 0 {
                    n as f64
                } else {
                    mean(1)
                },
                visited_per_query: if p.status_words == 4 { mean(3) } else { 0.0 },
                hits_per_query: hits_mean,
                index_bytes: p.index_bytes,
                speedup_vs_scan: if per_query_us > 0.0 {
                    scan_per_query / per_query_us
                } else {
                    0.0
                },
                timing: if timing == "none" { qtiming } else { timing },
            });
        }
    }
    print_rows(&rows);
    if let Some(path) = &args.options.json {
        let caps = gpu.ctx.capabilities().clone();
        report::write_json(path, &BenchJson::new("spatial", &caps, repeat, &rows))?;
    }
    Ok(())
}

fn morton(points: &[f32]) -> BvhOrder {
    let (min, max) = crate::spatial::extent(points, 2);
    BvhOrder::Morton { min, max }
}

/// Every path must give the scan's per-query (hits, checksum); the scan must give the CPU
/// oracle's on the first queries; no query may report a flag.
fn check(
    op: &str,
    hits: &[u32],
    status: &[u32],
    status_words: u64,
    reference: &mut Option<Vec<u32>>,
    points: &[f32],
    queries: &[SpatialQuery],
) -> Result<()> {
    let count = hits.len() / 2;
    if status_words > 0 {
        if let Some(i) = (0..count).find(|&i| status[4 * i + 2] != 0) {
            bail!(
                "bench spatial {op}: query {i} reported flags {:#x}",
                status[4 * i + 2]
            );
        }
    }
    match reference {
        None => {
            for (i, q) in queries.iter().enumerate().take(16.min(count)) {
                let want = gpugraph_gpgpu::spatial::cpu::hits(2, points, q);
                if hits[2 * i..2 * i + 2] != want {
                    bail!("bench spatial {op}: query {i} gave (hits, checksum) {:?}, the CPU oracle {want:?}", &hits[2 * i..2 * i + 2]);
                }
            }
            *reference = Some(hits.to_vec());
        }
        Some(r) => {
            if let Some(i) = (0..count).find(|&i| hits[2 * i..2 * i + 2] != r[2 * i..2 * i + 2]) {
                bail!(
                    "bench spatial {op}: query {i} gave (hits, checksum) {:?}, the scan {:?}",
                    &hits[2 * i..2 * i + 2],
                    &r[2 * i..2 * i + 2]
                );
            }
        }
    }
    Ok(())
}

fn dump(
    dir: &std::path::Path,
    n: u64,
    points: &[f32],
    queries: &[SpatialQuery],
    radius: f32,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let f32_array = |shape: Vec<usize>, v: &[f32]| crate::npy::NpyArray {
        dtype: crate::npy::Dtype::F32,
        shape,
        data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    };
    let q: Vec<f32> = queries
        .iter()
        .flat_map(|q| match q {
            SpatialQuery::Radius { center, .. } => [center[0], center[1], radius],
            _ => [0.0; 3],
        })
        .collect();
    for (name, a) in [
        (
            format!("points-{n}.npy"),
            f32_array(vec![n as usize, 2], points),
        ),
        (
            format!("queries-{n}.npy"),
            f32_array(vec![queries.len(), 3], &q),
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, crate::npy::encode(&a))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn print_rows(rows: &[SpatialRow]) {
    let mut t = Table::new([
        "path",
        "points",
        "queries",
        "build ms",
        "queries ms",
        "us/query",
        "x scan",
        "cand/q",
        "visited/q",
        "hits/q",
        "index MiB",
    ]);
    for r in rows {
        t.row([
            r.op.clone(),
            r.elements.to_string(),
            r.queries.to_string(),
            r.build.show(3),
            r.query.show(3),
            format!("{:.2}", r.per_query_us),
            format!("{:.1}", r.speedup_vs_scan),
            format!("{:.1}", r.candidates_per_query),
            format!("{:.1}", r.visited_per_query),
            format!("{:.1}", r.hits_per_query),
            format!("{:.1}", r.index_bytes as f64 / (1 << 20) as f64),
        ]);
    }
    print!("{t}");
}
