//! `gpugraph traverse`: bounded breadth-first reachability over a CSR graph in `.npy` files
//! (gpgpu [`GraphTraversal`]), written as a node-aligned 0/1 uint32 mask.
//!
//! The CSR is checked on the CPU before the GPU opens (offsets start at 0, never decrease and
//! end at the neighbour count; every neighbour and seed ID is a node), so a malformed file is
//! a one-line error naming the file and the first bad row, never the kernel's skip-and-count
//! sentinel.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use gpugraph_command::CommandGraph;
use gpugraph_gpgpu::topology::{
    reverse_csr, CsrAdjacency, GraphTraversal, TraversalDirection, MAX_TRAVERSAL_DEPTH,
    TRAVERSAL_STATUS_WORDS,
};

use crate::files::distinct_outputs;
use crate::gpu::{import, Gpu};
use crate::npy;
use crate::output::PendingFile;

/// Which edges a level follows.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Direction {
    /// Outgoing edges.
    Forward,
    /// Incoming edges (the reverse CSR is built on the CPU).
    Reverse,
    /// Both.
    Both,
}

/// `gpugraph traverse`.
#[derive(Args, Debug)]
pub struct TraverseArgs {
    /// CSR row offsets (1-D integer .npy, nodes + 1 rows, starting at 0, nondecreasing).
    #[arg(long)]
    pub offsets: PathBuf,
    /// CSR neighbour IDs (1-D integer .npy, one row per edge, each below the node count).
    #[arg(long)]
    pub neighbors: PathBuf,
    /// Seed node IDs (1-D integer .npy).
    #[arg(long)]
    pub seeds: PathBuf,
    /// Levels to expand (0: the seeds only; at most 1024).
    #[arg(long)]
    pub depth: u32,
    /// Which edges to follow.
    #[arg(long, value_enum, default_value = "forward")]
    pub direction: Direction,
    /// Output reachability mask (.npy, uint32 0/1, one row per node).
    #[arg(long)]
    pub out: PathBuf,
    /// Optional output of each node's level (.npy, uint32; 4294967295 when not reached).
    #[arg(long)]
    pub levels: Option<PathBuf>,
}

/// Checks the CSR and seeds, naming the file and first bad row.
fn check_csr(args: &TraverseArgs, offsets: &[u32], neighbors: &[u32], seeds: &[u32]) -> Result<()> {
    let name = |p: &Path| p.display().to_string();
    let Some(&last) = offsets.last() else {
        bail!(
            "{}: offsets need at least one row (nodes + 1)",
            name(&args.offsets)
        );
    };
    if offsets[0] != 0 {
        bail!(
            "{}: row 0 is {}; CSR offsets start at 0",
            name(&args.offsets),
            offsets[0]
        );
    }
    if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
        bail!(
            "{}: row {} is {} after {}; offsets must not decrease",
            name(&args.offsets),
            i + 1,
            offsets[i + 1],
            offsets[i]
        );
    }
    if last as usize != neighbors.len() {
        bail!(
            "{}: the last offset is {last} but {} has {} neighbours",
            name(&args.offsets),
            name(&args.neighbors),
            neighbors.len()
        );
    }
    let n = offsets.len() - 1;
    for (path, ids, what) in [
        (&args.neighbors, neighbors, "neighbour"),
        (&args.seeds, seeds, "seed"),
    ] {
        if let Some(i) = ids.iter().position(|&v| v as usize >= n) {
            bail!(
                "{}: row {i} is {} but the graph has {n} nodes; every {what} ID must be below it",
                name(path),
                ids[i]
            );
        }
    }
    if args.depth > MAX_TRAVERSAL_DEPTH {
        bail!(
            "--depth {} exceeds the limit {MAX_TRAVERSAL_DEPTH}",
            args.depth
        );
    }
    Ok(())
}

/// Runs the traversal and writes the mask (and levels).
pub fn run(args: &TraverseArgs) -> Result<()> {
    let mut outputs = vec![("--out", args.out.as_path())];
    if let Some(l) = &args.levels {
        outputs.push(("--levels", l.as_path()));
    }
    distinct_outputs(&outputs)?;
    let out_file = PendingFile::new(&args.out, "--out")?;
    let levels_file = match &args.levels {
        Some(p) => Some(PendingFile::new(p, "--levels")?),
        None => None,
    };
    let offsets = npy::read_u32_vector(&args.offsets, "offsets")?;
    let neighbors = npy::read_u32_vector(&args.neighbors, "neighbors")?;
    let seeds = npy::read_u32_vector(&args.seeds, "seeds")?;
    check_csr(args, &offsets, &neighbors, &seeds)?;
    let n = offsets.len() - 1;
    let reverse = match args.direction {
        Direction::Forward => None,
        _ => Some(reverse_csr(&offsets, &neighbors)),
    };

    let gpu = Gpu::open()?;
    let mut g = CommandGraph::new("cli-traverse", gpu.device());
    let adjacency =
        |g: &mut CommandGraph, name: &str, o: &[u32], nb: &[u32]| -> Result<CsrAdjacency> {
            let ob = gpu.upload(&format!("{name}-offsets"), o);
            let nbb = gpu.upload(&format!("{name}-neighbors"), nb);
            Ok(CsrAdjacency {
                offsets: import(g, &format!("{name}-offsets"), &ob, o.len() as u64)?.into(),
                neighbors: import(g, &format!("{name}-neighbors"), &nbb, nb.len() as u64)?.into(),
            })
        };
    let forward = adjacency(&mut g, "forward", &offsets, &neighbors)?;
    let reverse_adj = match &reverse {
        Some((o, nb)) => Some(adjacency(&mut g, "reverse", o, nb)?),
        None => None,
    };
    let seeds_b = gpu.upload("seeds", &seeds);
    let mask_b = gpu.upload("mask", &vec![0; n]);
    let levels_b = gpu.upload("levels", &vec![0; n]);
    let status_b = gpu.upload("status", &[0; TRAVERSAL_STATUS_WORDS as usize]);
    GraphTraversal {
        id: "traverse".into(),
        forward,
        reverse: reverse_adj,
        direction: match args.direction {
            Direction::Forward => TraversalDirection::Forward,
            Direction::Reverse => TraversalDirection::Reverse,
            Direction::Both => TraversalDirection::Both,
        },
        seeds: import(&mut g, "seeds", &seeds_b, seeds.len() as u64)?,
        max_depth: args.depth,
        active_depth: None,
        mask: import(&mut g, "mask", &mask_b, n as u64)?.into(),
        levels: match &levels_file {
            Some(_) => Some(import(&mut g, "levels", &levels_b, n as u64)?.into()),
            None => None,
        },
        status: Some(import(&mut g, "status", &status_b, TRAVERSAL_STATUS_WORDS)?),
    }
    .add_to_graph(&mut g)?;
    gpu.run_graph(&mut g.compile()?, "the traversal")?;
    let status = gpu.read_back(&status_b, TRAVERSAL_STATUS_WORDS)?;
    if status[1] != 0 {
        // The CPU checks above make this unreachable; refuse rather than write a wrong mask.
        bail!(
            "the traversal met {} out-of-range IDs after the CPU checks passed",
            status[1]
        );
    }
    let mask = gpu.read_back(&mask_b, n as u64)?;
    out_file.write_all(&npy::encode(&npy::NpyArray::from_u32(&mask)))?;
    if let Some(f) = &levels_file {
        let levels = gpu.read_back(&levels_b, n as u64)?;
        f.write_all(&npy::encode(&npy::NpyArray::from_u32(&levels)))?;
    }
    out_file.commit()?;
    if let Some(f) = levels_file {
        f.commit()?;
    }
    println!(
        "traverse: {n} nodes, {} edges, {} seeds, depth {}: {} reached -> {}",
        neighbors.len(),
        seeds.len(),
        args.depth,
        status[0],
        args.out.display()
    );
    Ok(())
}
