//! `bench traverse`: [`GraphTraversal`] over a deterministic power-law graph of 2^k nodes,
//! depth 4 from 1,000 seeds by default, forward and both directions; rows count *traversed*
//! edges (the out- or in-edges of every expanded node), so elements/s is edges/s (TEPS).
//!
//! Graph recipe (reproduced bit for bit by `bench/peers/peers_traverse.py`, in numpy uint64):
//! edge `e` of `m = n · degree` draws `h = splitmix64(e + 0x1234_0000_0000)`, `h1` its low and
//! `h2` its high 32 bits; its source rank is `n · (h1/2^32)^3` and its target rank
//! `n · (h2/2^32)^2`, in 32-bit fixed point (`((h1·h1 >> 32)·h1 >> 32)·n >> 32`,
//! `(h2·h2 >> 32)·n >> 32`), so low ranks are power-law hubs (rank 0 gets about
//! `m / n^(1/3)` out-edges); ranks become node IDs through the odd multiplicative
//! permutations `(r·0x9E3779B1 + 0x7F4A7C15) mod n` (sources) and `(r·0x85EBCA77 +
//! 0x165667B1) mod n` (targets). The CSR lists each source's edges in edge order. Seed `i` is
//! `splitmix64(i + 0x5EED_0000_0000) mod n`.
//!
//! Minimum traffic per traversed edge: 4 B of neighbour ID, plus per expanded node its two
//! offsets (8 B) and per node one mask word written (4 B), spread over the traversed edges.

use anyhow::{bail, Result};
use clap::Args;
use gpugraph_command::CommandGraph;
use gpugraph_gpgpu::topology::{
    cpu, CsrAdjacency, GraphTraversal, TraversalDirection, TRAVERSAL_STATUS_WORDS, UNREACHED,
};

use super::floor::Floor;
use super::report::{self, BenchJson};
use super::throughput::{self, ThroughputRow};
use super::BenchOptions;
use crate::gpu::{import, Gpu};

/// `gpugraph bench traverse`.
#[derive(Args, Debug)]
pub struct TraverseBenchArgs {
    /// Node counts, powers of two (e.g. 2^24), comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = throughput::parse_size, default_value = "2^16,2^20")]
    pub sizes: Vec<u64>,
    /// Edges per node (the graph has nodes × degree edges).
    #[arg(long, default_value_t = 8)]
    pub degree: u64,
    /// Seeds drawn by the recipe (duplicates allowed).
    #[arg(long, default_value_t = 1000)]
    pub seeds: u32,
    /// Levels expanded.
    #[arg(long, default_value_t = 4)]
    pub depth: u32,
    #[command(flatten)]
    pub options: BenchOptions,
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The recipe's CSR (offsets, neighbours) over `n` (a power of two) nodes and its seeds.
pub fn power_law_graph(n: u64, degree: u64, seeds: u32) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let m = n * degree;
    let mask = n - 1;
    let mut src = vec![0u32; m as usize];
    let mut dst = vec![0u32; m as usize];
    for e in 0..m {
        let h = splitmix64(e + 0x1234_0000_0000);
        let (h1, h2) = (h & 0xffff_ffff, h >> 32);
        let s = (((((h1 * h1) >> 32) * h1) >> 32) * n) >> 32;
        let d = (((h2 * h2) >> 32) * n) >> 32;
        src[e as usize] = ((s * 0x9E37_79B1 + 0x7F4A_7C15) & mask) as u32;
        dst[e as usize] = ((d * 0x85EB_CA77 + 0x1656_67B1) & mask) as u32;
    }
    let mut offsets = vec![0u32; n as usize + 1];
    for &s in &src {
        offsets[s as usize + 1] += 1;
    }
    for i in 0..n as usize {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut neighbors = vec![0u32; m as usize];
    for (&s, &d) in src.iter().zip(&dst) {
        neighbors[fill[s as usize] as usize] = d;
        fill[s as usize] += 1;
    }
    let seeds = (0..u64::from(seeds))
        .map(|i| (splitmix64(i + 0x5EED_0000_0000) & mask) as u32)
        .collect();
    (offsets, neighbors, seeds)
}

/// Runs the bench.
pub fn run(args: &TraverseBenchArgs) -> Result<()> {
    if let Some(path) = &args.options.json {
        report::check_writable(path)?;
    }
    for &n in &args.sizes {
        if !n.is_power_of_two() || n > 1 << 31 {
            bail!("bench traverse: --sizes {n} must be a power of two up to 2^31 (node IDs are permuted modulo n)");
        }
        if n.saturating_mul(args.degree) > u64::from(u32::MAX) {
            bail!(
                "bench traverse: {n} nodes × degree {} exceed 2^32 - 1 edges",
                args.degree
            );
        }
    }
    let gpu = Gpu::open()?;
    let mut floor = Floor::new(&gpu);
    let mut rows: Vec<ThroughputRow> = Vec::new();
    for &n in &args.sizes {
        report::progress(format_args!(
            "bench traverse: n = {n}: generating the graph"
        ));
        let (offsets, neighbors, seeds) = power_law_graph(n, args.degree, args.seeds);
        let (ro, rn) = cpu::reverse_csr(&offsets, &neighbors);
        let ob = gpu.upload("offsets", &offsets);
        let nb = gpu.upload("neighbors", &neighbors);
        let rob = gpu.upload("reverse-offsets", &ro);
        let rnb = gpu.upload("reverse-neighbors", &rn);
        let sb = gpu.upload("seeds", &seeds);
        for (dir, op) in [
            (TraversalDirection::Forward, "traverse-forward"),
            (TraversalDirection::Both, "traverse-both"),
        ] {
            let mask_b = gpu.upload("mask", &vec![0xDEAD_BEEF; n as usize]);
            let status_b = gpu.upload("status", &[0; TRAVERSAL_STATUS_WORDS as usize]);
            let mut g = CommandGraph::new(op, gpu.device());
            let adj = |g: &mut CommandGraph,
                       o,
                       nbrs,
                       which: &str,
                       rows_o,
                       rows_n|
             -> Result<CsrAdjacency> {
                Ok(CsrAdjacency {
                    offsets: import(g, &format!("{which}-offsets"), o, rows_o)?.into(),
                    neighbors: import(g, &format!("{which}-neighbors"), nbrs, rows_n)?.into(),
                })
            };
            let m = neighbors.len() as u64;
            GraphTraversal {
                id: op.into(),
                forward: adj(&mut g, &ob, &nb, "forward", n + 1, m)?,
                reverse: match dir {
                    TraversalDirection::Forward => None,
                    _ => Some(adj(&mut g, &rob, &rnb, "reverse", n + 1, rn.len() as u64)?),
                },
                direction: dir,
                seeds: import(&mut g, "seeds", &sb, seeds.len() as u64)?,
                max_depth: args.depth,
                active_depth: None,
                mask: import(&mut g, "mask", &mask_b, n)?.into(),
                levels: None,
                status: Some(import(&mut g, "status", &status_b, TRAVERSAL_STATUS_WORDS)?),
            }
            .add_to_graph(&mut g)?;
            let mut compiled = g.compile()?;
            gpu.run_graph(&mut compiled, op)?;
            let f = [cpu::CsrPart {
                offsets: &offsets,
                neighbors: &neighbors,
            }];
            let r = [cpu::CsrPart {
                offsets: &ro,
                neighbors: &rn,
            }];
            let want = cpu::traverse(&f, Some(&r), dir, &seeds, args.depth, None);
            throughput::check_equal(op, &gpu.read_back(&mask_b, n)?, &want.mask)?;
            let status = gpu.read_back(&status_b, TRAVERSAL_STATUS_WORDS)?;
            if status[..] != want.status[..] {
                bail!(
                    "{op}: status {status:?}, the CPU BFS says {:?}",
                    want.status
                );
            }
            // Traversed edges: every edge of every node expanded (level below the depth).
            let mut edges = 0u64;
            let mut expanded = 0u64;
            for (v, &l) in want.levels.iter().enumerate() {
                if l != UNREACHED && l < args.depth {
                    expanded += 1;
                    edges += u64::from(offsets[v + 1] - offsets[v]);
                    if dir == TraversalDirection::Both {
                        edges += u64::from(ro[v + 1] - ro[v]);
                    }
                }
            }
            report::progress(format_args!(
                "bench traverse: {op}: n = {n}, {m} edges: {} reached, {expanded} expanded, {edges} edges traversed",
                want.status[0]
            ));
            let edges = edges.max(1);
            let read = 4 * edges
                + 8 * expanded
                    * if dir == TraversalDirection::Both {
                        2
                    } else {
                        1
                    };
            let written = 4 * n;
            let bpe = (read + written) as f64 / edges as f64;
            let (t, timing) = throughput::time_graph(&gpu, &mut compiled, args.options.repeat)?;
            let floor_t = floor.time_traffic(&gpu, read, written, args.options.repeat)?;
            rows.push(throughput::row(op, edges, bpe, &t, &floor_t, timing));
        }
    }
    throughput::print_rows(&rows);
    if let Some(path) = &args.options.json {
        let caps = gpu.ctx.capabilities().clone();
        report::write_json(
            path,
            &BenchJson::new("traverse", &caps, args.options.repeat, &rows),
        )?;
    }
    Ok(())
}
