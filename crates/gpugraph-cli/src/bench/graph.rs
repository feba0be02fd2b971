//! `gpugraph bench graph`: what the command graph itself costs, measured on graphs of many
//! tiny compute nodes (one shared pipeline, one workgroup each) so scheduling dominates.
//!
//! Shapes:
//! Every node is a [`DispatchNode`] (the one compute-node kind), so the numbers include what
//! the libraries' kernels pay per node: deriving uses from bindings, checking them against
//! the reflected WGSL (memoized per text) and the device cache's pipeline and bind-group
//! lookups.
//!
//! - `chain`: node `n{i}` reads transient `t{i-1}` (node 0 reads the imported seed) and writes
//!   `t{i}`; each transient lives over two adjacent nodes, so the compiler can alias them into
//!   two physical buffers.
//! - `fan-out`: node `source` writes transient `source`; nodes `n1..` each read it and write
//!   their own transient `out{i}`, which lives over that node alone.
//!
//! Per run it times graph build (declarations), `compile()`, `encode()` (total, and per-node
//! CPU cost from the [`EncodeReport`]), `CommandEncoder::finish`, and submit + wait; then it
//! reads back the last written transient and checks it, so the timed work is real.

use std::fmt;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use clap::{Args, ValueEnum};
use gpugraph_command::wgpu;
use gpugraph_command::{
    Access, Binding, BufferDescriptor, BufferHandle, CommandGraph, DispatchNode, EncodeOptions,
    EncodeReport, GraphStats, Grid, ShaderSource,
};
use serde::Serialize;

use super::report::{self, ms, us, BenchJson, Summary, Table};
use super::BenchOptions;
use crate::gpu::Gpu;

/// Largest node count accepted (keeps a typo from exhausting memory).
const MAX_NODES: usize = 1_000_000;
/// `u32` elements per buffer; also the workgroup size, so each node dispatches one group.
const ELEMENTS: u64 = 64;
const BYTES: u64 = ELEMENTS * 4;

/// `dst[i] = src[i] + 1` over one workgroup.
const STEP_WGSL: &str = "
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32) {
    dst[i] = src[i] + 1u;
}";

/// Options of `gpugraph bench graph`.
#[derive(Args)]
pub struct GraphArgs {
    /// Node counts per graph, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 10000], value_parser = parse_nodes)]
    pub nodes: Vec<usize>,
    /// Graph shapes, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Shape::Chain, Shape::FanOut])]
    pub shapes: Vec<Shape>,
    #[command(flatten)]
    pub options: BenchOptions,
}

fn parse_nodes(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|e| format!("'{s}' is not a node count: {e}"))?;
    if !(1..=MAX_NODES).contains(&n) {
        return Err(format!("node count {n} is outside 1..={MAX_NODES}"));
    }
    Ok(n)
}

/// Shape of a benchmark graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// Each node reads the previous node's transient and writes its own.
    Chain,
    /// One source node writes a buffer; every other node reads it and writes its own output.
    FanOut,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Shape::Chain => "chain",
            Shape::FanOut => "fan-out",
        })
    }
}

/// Transient allocation facts of one compiled graph (from [`GraphStats`], without the order).
#[derive(Clone, Debug, Serialize)]
pub struct TransientStats {
    /// Declared transient buffers.
    pub logical_count: usize,
    /// Their total bytes.
    pub logical_bytes: u64,
    /// Physical allocations created.
    pub physical_count: usize,
    /// Their total bytes.
    pub physical_bytes: u64,
    /// Logical minus physical bytes.
    pub reused_bytes: u64,
    /// Reused bytes as a percentage of logical bytes.
    pub reuse_percent: f64,
}

impl From<&GraphStats> for TransientStats {
    fn from(s: &GraphStats) -> Self {
        Self {
            logical_count: s.logical_transient_count,
            logical_bytes: s.logical_transient_bytes,
            physical_count: s.physical_transient_count,
            physical_bytes: s.physical_transient_bytes,
            reused_bytes: s.reused_bytes,
            reuse_percent: s.reuse_percent,
        }
    }
}

/// Results of one (shape, node count) case over all repeats. Times in ms, per-node in µs.
#[derive(Clone, Debug, Serialize)]
pub struct GraphCase {
    /// Graph shape.
    pub shape: Shape,
    /// Compute nodes in the graph.
    pub nodes: usize,
    /// Declaring buffers and nodes.
    pub build_ms: Summary,
    /// `CommandGraph::compile` (hazards, order, transient plan and allocation, node compile
    /// callbacks creating one bind group each).
    pub compile_ms: Summary,
    /// `CompiledGraph::encode` wall time.
    pub encode_ms: Summary,
    /// Mean per-node executable encode time of a run (from the EncodeReport).
    pub node_encode_mean_us: Summary,
    /// Median per-node executable encode time of a run.
    pub node_encode_median_us: Summary,
    /// `CommandEncoder::finish`.
    pub finish_ms: Summary,
    /// `Queue::submit` plus waiting for the GPU to finish.
    pub submit_wait_ms: Summary,
    /// Compute passes the encode opened.
    pub compute_passes: usize,
    /// Transient aliasing of the compiled graph.
    pub transients: TransientStats,
    /// `u32` elements of every buffer (one workgroup of this many invocations per node).
    pub elements_per_buffer: u64,
}

/// One measured run.
struct Run {
    build: Duration,
    compile: Duration,
    encode: Duration,
    node_mean: Duration,
    node_median: Duration,
    finish: Duration,
    submit_wait: Duration,
    compute_passes: usize,
    transients: TransientStats,
}

/// What every node and run shares: the step shader (one pipeline through the device cache),
/// the seed and the readback staging buffer.
struct Kernel {
    shader: ShaderSource,
    seed: wgpu::Buffer,
    seed_values: Vec<u32>,
    staging: wgpu::Buffer,
}

impl Kernel {
    fn new(gpu: &Gpu) -> Result<Self> {
        let seed_values: Vec<u32> = (0..ELEMENTS as u32).map(|j| j * 1000).collect();
        let seed = gpu.upload("bench-graph seed", &seed_values);
        let staging = gpu.staging("bench-graph readback", BYTES);
        gpu.check("creating the bench buffers")?;
        Ok(Self {
            shader: ShaderSource::new("bench/graph-step", STEP_WGSL),
            seed,
            seed_values,
            staging,
        })
    }

    /// A dispatch node reading `src` and writing `dst` with the shared pipeline, one
    /// workgroup; its bind group comes from the device cache at graph compile time.
    fn node(&self, id: String, src: BufferHandle, dst: BufferHandle) -> DispatchNode {
        DispatchNode::new(
            id,
            self.shader.clone(),
            "main",
            vec![
                Binding::handle(0, src, Access::Read),
                Binding::handle(1, dst, Access::ReadWrite),
            ],
            Grid::Workgroups([1, 1, 1]),
        )
    }
}

/// Runs `gpugraph bench graph`.
pub fn run(args: &GraphArgs) -> Result<()> {
    ensure!(!args.nodes.is_empty(), "--nodes lists no node count");
    ensure!(!args.shapes.is_empty(), "--shapes lists no shape");
    let repeat = args.options.repeat;
    if let Some(path) = &args.options.json {
        report::check_writable(path)?;
    }
    let gpu = Gpu::open()?;
    let caps = gpu.ctx.capabilities();
    report::progress(format_args!(
        "bench graph: adapter {} ({}, {}); {repeat} run(s) per case",
        caps.adapter, caps.backend, caps.device_type
    ));
    let kernel = Kernel::new(&gpu)?;

    let mut cases = Vec::new();
    for &shape in &args.shapes {
        for &nodes in &args.nodes {
            let mut runs = Vec::with_capacity(repeat as usize);
            for r in 1..=repeat {
                let run = run_once(&gpu, &kernel, shape, nodes)
                    .with_context(|| format!("bench graph {shape} with {nodes} nodes, run {r}"))?;
                report::progress(format_args!(
                    "bench graph: {shape} {nodes} nodes run {r}/{repeat}: build {:.2} ms, compile {:.2} ms, encode {:.2} ms, finish {:.2} ms, submit+wait {:.2} ms",
                    ms(run.build),
                    ms(run.compile),
                    ms(run.encode),
                    ms(run.finish),
                    ms(run.submit_wait)
                ));
                runs.push(run);
            }
            cases.push(summarize(shape, nodes, &runs));
        }
    }

    print!("{}", timing_table(&cases));
    println!();
    print!("{}", transient_table(&cases));
    if let Some(path) = &args.options.json {
        report::write_json(path, &BenchJson::new("graph", caps, repeat, &cases))?;
        report::progress(format_args!("bench graph: wrote {}", path.display()));
    }
    Ok(())
}

fn run_once(gpu: &Gpu, kernel: &Kernel, shape: Shape, nodes: usize) -> Result<Run> {
    let device = gpu.device();
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;

    let t = Instant::now();
    let mut g = CommandGraph::new(format!("bench-{shape}-{nodes}"), device);
    let seed = g.import_buffer(
        BufferDescriptor::new("seed", BYTES, wgpu::BufferUsages::STORAGE),
        &kernel.seed,
    )?;
    let transient =
        |g: &mut CommandGraph, id: String| g.create_buffer(BufferDescriptor::new(id, BYTES, usage));
    // The last transient written and how many +1 steps lie between it and the seed.
    let (last, depth) = match shape {
        Shape::Chain => {
            let mut prev = seed;
            for i in 0..nodes {
                let out = transient(&mut g, format!("t{i}"))?;
                g.add_dispatch_node(kernel.node(format!("n{i}"), prev, out))?;
                prev = out;
            }
            (prev, nodes as u64)
        }
        Shape::FanOut => {
            let source = transient(&mut g, "source".into())?;
            g.add_dispatch_node(kernel.node("source".into(), seed, source))?;
            let mut last = (source, 1);
            for i in 1..nodes {
                let out = transient(&mut g, format!("out{i}"))?;
                g.add_dispatch_node(kernel.node(format!("n{i}"), source, out))?;
                last = (out, 2);
            }
            last
        }
    };
    let build = t.elapsed();

    let t = Instant::now();
    let mut compiled = g.compile()?;
    let compile = t.elapsed();
    gpu.check("compile")?;

    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("bench-graph"),
    });
    let t = Instant::now();
    let report = compiled.encode(&mut encoder, &EncodeOptions::default())?;
    let encode = t.elapsed();
    encoder.copy_buffer_to_buffer(compiled.buffer(last)?, 0, &kernel.staging, 0, BYTES);

    let t = Instant::now();
    let commands = encoder.finish();
    let finish = t.elapsed();
    gpu.check("encode")?;

    let t = Instant::now();
    gpu.submit_and_wait(commands)?;
    let submit_wait = t.elapsed();

    let got = gpu.read_u32(&kernel.staging)?;
    for (j, (&g, &s)) in got.iter().zip(&kernel.seed_values).enumerate() {
        let want = (u64::from(s) + depth) as u32;
        if g != want {
            bail!("wrong result after the run: element {j} of the last output is {g}, expected {want}");
        }
    }

    let (node_mean, node_median) = node_costs(&report);
    ensure!(
        report.node_encode_cpu.len() == nodes,
        "the encode report lists {} nodes, the graph has {nodes}",
        report.node_encode_cpu.len()
    );
    Ok(Run {
        build,
        compile,
        encode,
        node_mean,
        node_median,
        finish,
        submit_wait,
        compute_passes: report.compute_passes,
        transients: TransientStats::from(compiled.stats()),
    })
}

/// Mean and median of the per-node encode CPU times of one encode.
fn node_costs(report: &EncodeReport) -> (Duration, Duration) {
    let mut times: Vec<Duration> = report.node_encode_cpu.iter().map(|(_, d)| *d).collect();
    if times.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    times.sort();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    let mid = times.len() / 2;
    let median = if times.len() % 2 == 1 {
        times[mid]
    } else {
        (times[mid - 1] + times[mid]) / 2
    };
    (mean, median)
}

fn summarize(shape: Shape, nodes: usize, runs: &[Run]) -> GraphCase {
    let stat = |f: &dyn Fn(&Run) -> f64| Summary::of(&runs.iter().map(f).collect::<Vec<_>>());
    GraphCase {
        shape,
        nodes,
        build_ms: stat(&|r| ms(r.build)),
        compile_ms: stat(&|r| ms(r.compile)),
        encode_ms: stat(&|r| ms(r.encode)),
        node_encode_mean_us: stat(&|r| us(r.node_mean)),
        node_encode_median_us: stat(&|r| us(r.node_median)),
        finish_ms: stat(&|r| ms(r.finish)),
        submit_wait_ms: stat(&|r| ms(r.submit_wait)),
        compute_passes: runs.last().map_or(0, |r| r.compute_passes),
        elements_per_buffer: ELEMENTS,
        transients: runs.last().map_or_else(
            || TransientStats::from(&GraphStats::default()),
            |r| r.transients.clone(),
        ),
    }
}

fn timing_table(cases: &[GraphCase]) -> Table {
    let mut t = Table::new([
        "shape",
        "nodes",
        "build ms",
        "compile ms",
        "encode ms",
        "enc/node mean us",
        "enc/node median us",
        "finish ms",
        "submit+wait ms",
        "passes",
    ]);
    for c in cases {
        t.row([
            c.shape.to_string(),
            c.nodes.to_string(),
            c.build_ms.show(2),
            c.compile_ms.show(2),
            c.encode_ms.show(2),
            c.node_encode_mean_us.show(3),
            c.node_encode_median_us.show(3),
            c.finish_ms.show(2),
            c.submit_wait_ms.show(2),
            c.compute_passes.to_string(),
        ]);
    }
    t
}

fn transient_table(cases: &[GraphCase]) -> Table {
    let mut t = Table::new([
        "shape",
        "nodes",
        "logical transients",
        "logical bytes",
        "physical transients",
        "physical bytes",
        "reused bytes",
        "reuse %",
    ]);
    for c in cases {
        let s = &c.transients;
        t.row([
            c.shape.to_string(),
            c.nodes.to_string(),
            s.logical_count.to_string(),
            s.logical_bytes.to_string(),
            s.physical_count.to_string(),
            s.physical_bytes.to_string(),
            s.reused_bytes.to_string(),
            format!("{:.2}", s.reuse_percent),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_counts_are_validated() {
        assert_eq!(parse_nodes("1000"), Ok(1000));
        assert_eq!(parse_nodes(" 7 "), Ok(7));
        assert!(parse_nodes("0").is_err());
        assert!(parse_nodes("abc").is_err());
        assert!(parse_nodes(&(MAX_NODES + 1).to_string()).is_err());
    }

    #[test]
    fn per_node_costs() {
        let report = EncodeReport {
            node_encode_cpu: [1u64, 3, 8]
                .iter()
                .map(|&n| (format!("n{n}"), Duration::from_micros(n)))
                .collect(),
            ..Default::default()
        };
        assert_eq!(
            node_costs(&report),
            (Duration::from_micros(4), Duration::from_micros(3))
        );
        assert_eq!(
            node_costs(&EncodeReport::default()),
            (Duration::ZERO, Duration::ZERO)
        );
    }
}
