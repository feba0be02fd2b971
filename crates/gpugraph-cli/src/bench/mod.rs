//! `gpugraph bench <name>`: benchmarks. Each bench is a subcommand with its own module; they
//! share [`BenchOptions`] (repeat count, JSON path) and the statistics and rendering of
//! [`report`]. Benches measure; tests elsewhere check correctness.

pub mod analysis;
pub mod expr;
pub mod fft;
pub mod floor;
pub mod graph;
pub mod hash;
pub mod memory;
pub mod nodes;
pub mod plot;
pub mod primitives;
pub mod render;
pub mod report;
pub mod scene;
pub mod solve;
pub mod spatial;
pub mod throughput;
pub mod tpch;
pub mod trace;
pub mod traverse;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

/// The benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Command-graph overhead: build, compile, encode and submit of large chain and fan-out
    /// graphs of tiny compute nodes.
    Graph(graph::GraphArgs),
    /// Device copy through a graph copy node: the physical floor (8 bytes per element).
    Copy(primitives::PrimitiveArgs),
    /// Mask composition (`and` of two masks, 12 bytes per element).
    Mask(primitives::PrimitiveArgs),
    /// Exclusive and inclusive u32 scans (8 bytes per element).
    Scan(primitives::PrimitiveArgs),
    /// Stable compaction under a random mask (`--selected`, default 50%; 8 bytes per element
    /// plus 4 per survivor).
    Compact(primitives::PrimitiveArgs),
    /// Expression kernel: `positions * scale + offset` over float32x3 rows (36 bytes per row).
    Expr(primitives::PrimitiveArgs),
    /// Stable radix sort of u32 keys, of key/value pairs and of float32 keys descending
    /// (36, 68 and 52 bytes per row), with per-pass times against each pass's floor.
    Sort(primitives::PrimitiveArgs),
    /// Reductions: float32 sum and extent, uint32 sum (4 bytes per element).
    Reduce(primitives::PrimitiveArgs),
    /// 256-bin equal-width histogram of float32 values (4 bytes per element).
    Histogram(primitives::PrimitiveArgs),
    /// Per-group count and mean over 1,024 groups (8 bytes per element).
    Group(primitives::PrimitiveArgs),
    /// GPU frustum culling and drawing per frame (`render cull`'s scene without readback):
    /// `cull` (visibility workflow and compaction into an indirect count), `draw` (the bundled
    /// MSAA draw of the visible IDs alone) and `cull-draw` (both; 32 B per instance counted).
    Render(primitives::PrimitiveArgs),
    /// GPUScene per frame at 1M and 16M records (`--sizes`): visibility, draw generation and
    /// resource groups (GPU and encode time), a 1,000-record patch's upload bytes and CPU
    /// time, and `render cull`'s culling as the peer in the same run.
    Scene(scene::SceneBenchArgs),
    /// Hash index build and probe of n unique u32 keys at load factor 0.5, linear and
    /// triangular probing (12 B per key built, 16 B per key probed, 16 B per key of clear;
    /// the check prints probes per key).
    Hash(primitives::PrimitiveArgs),
    /// Many-to-one hash join: n left keys against n/4 unique right keys, all matching
    /// (35 B per left row: build share, lookup, compaction, right-row gather).
    Join(primitives::PrimitiveArgs),
    /// Memory placement probe: the floor's copy kernel over buffers created and filled in
    /// different ways (plain + kernel fill, write_buffer, mapped at creation, staging copy, the
    /// tables upload, mapped-at-creation ballast alive), to find uploads that land in slow memory.
    Memory(memory::MemoryArgs),
    /// Spatial harness: 2-D clustered points and radius queries through a scan, the grid index
    /// and the BVH (Morton and source order), parity-checked; build, query, candidates, visited.
    Spatial(spatial::SpatialBenchArgs),
    /// 2-D complex64 forward FFT of square fields (`--sizes` in elements: 2^24 = 4096²),
    /// 16 bytes per element per pass, and the same time against one read and one write.
    Fft(fft::FftBenchArgs),
    /// Graph traversal: a power-law graph of 2^k nodes, depth 4 from 1,000 seeds, forward and
    /// both directions; elements are traversed edges (edges/s).
    Traverse(traverse::TraverseBenchArgs),
    /// Jacobi-PCG on 2-D Poisson as one gated program: ms per iteration, the cost of empty
    /// gated iterations (bound 2× the iterations needed), against the floor.
    Solve(solve::SolveBenchArgs),
    /// TPC-H Q1 and Q6 over a generated lineitem through `gpugraph-datafusion`: the GPU plan
    /// warm (columns cached on the GPU), from host memory and from Parquet, against
    /// DataFusion's CPU operators on the same tables; every GPU answer is checked first.
    Tpch(tpch::TpchBenchArgs),
    /// The trace domain on synthetic Chrome traces (1M / 4M / 16M spans, 10 % flow links):
    /// JSON open (wall, MB/s), the columnar cache written and opened, and a full interaction
    /// frame on the GPU (focus of 3 hops, layout, compaction, draws; GPU and encode time),
    /// against issue 46's targets; optionally the Python json + numpy peer (`--peer python3`).
    Trace(trace::TraceBenchArgs),
    /// A PNG bar chart of bench (and peer) JSON files: bandwidth per operation at its largest
    /// size, peers beside it, the copy floor marked.
    Plot(plot::PlotArgs),
}

/// Options every bench takes.
#[derive(Args, Clone, Debug)]
pub struct BenchOptions {
    /// Measured runs per case; the table shows their median and [min-max].
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub repeat: u32,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs one bench.
pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Graph(args) => graph::run(&args),
        BenchCommand::Copy(args) => primitives::run_cases("copy", &args, primitives::copy_cases),
        BenchCommand::Mask(args) => primitives::run_cases("mask", &args, primitives::mask_cases),
        BenchCommand::Scan(args) => {
            let specs = args.scan_policies.clone();
            primitives::run_cases("scan", &args, |gpu, n| {
                primitives::scan_cases(gpu, n, &primitives::scan_variants(gpu, &specs, true)?)
            })
        }
        BenchCommand::Compact(args) => {
            let (specs, selected) = (args.scan_policies.clone(), args.selected.clone());
            primitives::run_cases("compact", &args, |gpu, n| {
                let variants = primitives::scan_variants(gpu, &specs, false)?;
                primitives::compact_cases(gpu, n, &selected, &variants)
            })
        }
        BenchCommand::Expr(args) => primitives::run_cases("expr", &args, expr::cases),
        BenchCommand::Sort(args) => {
            let specs = args.sort_policies.clone();
            primitives::run_cases_with_nodes(
                "sort",
                &args,
                |gpu, n| analysis::sort_cases(gpu, n, &analysis::sort_variants(gpu, &specs)?),
                &analysis::sort_node_bytes,
            )
        }
        BenchCommand::Reduce(args) => {
            let variants = analysis::reduce_variants(&args.reduce_policies)?;
            primitives::run_cases("reduce", &args, |gpu, n| {
                analysis::reduce_cases(gpu, n, &variants)
            })
        }
        BenchCommand::Histogram(args) => {
            primitives::run_cases("histogram", &args, analysis::histogram_cases)
        }
        BenchCommand::Group(args) => primitives::run_cases("group", &args, analysis::group_cases),
        BenchCommand::Render(args) => {
            primitives::run_cases_with_nodes("render", &args, render::cases, &render::node_bytes)
        }
        BenchCommand::Scene(args) => scene::run(&args),
        BenchCommand::Hash(args) => primitives::run_cases("hash", &args, hash::hash_cases),
        BenchCommand::Join(args) => primitives::run_cases("join", &args, hash::join_cases),
        BenchCommand::Memory(args) => memory::run(&args),
        BenchCommand::Plot(args) => plot::run(&args),
        BenchCommand::Spatial(args) => spatial::run(&args),
        BenchCommand::Fft(args) => {
            let variants = fft::variants(&args.fft_policies)?;
            primitives::run_cases_with_nodes(
                "fft",
                &args.base,
                |gpu, n| fft::cases(gpu, n, &variants),
                &fft::node_bytes,
            )
        }
        BenchCommand::Traverse(args) => traverse::run(&args),
        BenchCommand::Solve(args) => solve::run(&args),
        BenchCommand::Tpch(args) => tpch::run(&args),
        BenchCommand::Trace(args) => trace::run(&args),
    }
}
