//! `gpugraph`: command-line front end of the gpugraph workspace.
//!
//! This file parses arguments and dispatches; each command lives in its own module. Every
//! failure is reported as one `error: ...` line on stderr with a non-zero exit status
//! (2 for argument errors, 1 otherwise, 128 + N when killed by signal N); a failed command
//! leaves no output behind (see [`output`]).

/// See the `mimalloc` dependency in Cargo.toml: fresh multi-megabyte buffers per batch on every
/// worker thread, without the system allocator's map/unmap and page-fault storm.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod analyze;
mod bench;
mod chart;
mod cluster;
mod demo;
mod expr;
mod fft;
mod files;
mod gpu;
mod info;
mod join;
mod npy;
mod output;
mod procgen;
mod render;
mod scene;
mod solve;
mod sort;
mod spatial;
mod sql;
mod trace;
mod trace_load;
mod trace_view;
mod traverse;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// GPU-resident dataflow: command graphs, primitives and benchmarks on wgpu.
#[derive(Parser)]
#[command(
    name = "gpugraph",
    version,
    propagate_version = true,
    after_help = ENVIRONMENT_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the selected adapter's capabilities (backend, driver, limits, features).
    Info(info::InfoArgs),
    /// Build a small command graph on the GPU, run it once and check it against the CPU.
    Demo(demo::DemoArgs),
    /// Prefix sums of a 1-D uint32 .npy (exclusive by default, optional segment starts).
    Scan(files::ScanArgs),
    /// Stable compaction of 1-D uint32 .npy values under flags; prints the count.
    Compact(files::CompactArgs),
    /// Stable sort of 1-D uint32/int32/float32 .npy keys (ascending or descending),
    /// optionally carrying values.
    Sort(sort::SortArgs),
    /// Source row ids of the stable order of 1-D uint32/int32/float32 .npy keys.
    Argsort(sort::ArgsortArgs),
    /// Combine 1-D uint32 .npy masks (and, or, xor, difference, not) into a canonical 0/1 mask.
    Mask(files::MaskArgs),
    /// Run a benchmark; prints a table and optionally writes JSON.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Analyze a CSV/Parquet/Arrow table in one GPU graph: filter, extent, histogram, CDF,
    /// group means, x/y grid; writes report.json and PNG plots.
    Analyze(analyze::AnalyzeArgs),
    /// Write a synthetic flights-like table, or a TPC-H table (--tpch TABLE --scale SF),
    /// as .parquet or Arrow IPC.
    GenerateTable(analyze::generate::GenerateArgs),
    /// Many-to-one hash join of two CSV/Parquet/Arrow tables on the GPU (right keys unique);
    /// writes the joined columns to .parquet, .arrow or .csv.
    Join(join::JoinArgs),
    /// Evaluate an expression over .npy columns on the GPU (parse/type errors exit with 2).
    Expr(expr::ExprArgs),
    /// GPUScene consumers: a glTF 2.0 scene, a generated city or a Parquet point/box table
    /// drawn through GPU visibility, draw generation and resource groups into a PNG.
    Scene(scene::SceneArgs),
    /// Rendering consumers: `render cull` (GPU frustum culling into a PNG, headless).
    #[command(subcommand)]
    Render(render::RenderCommand),
    /// Radius or box query over .npy/.parquet points through a grid, a BVH or a scan;
    /// writes the matching row IDs and prints the count and timings.
    Spatial(spatial::SpatialArgs),
    /// 2-D complex FFT of a complex64 (h, w) or float32 (h, w, 2) .npy field on the GPU
    /// (power-of-two sides; --inverse scales by 1/(h·w)).
    Fft2d(fft::Fft2dArgs),
    /// Bounded breadth-first reachability over a CSR graph in .npy files; writes a 0/1 mask.
    Traverse(traverse::TraverseArgs),
    /// Jacobi-preconditioned CG on the GPU (poisson2d:N or a Matrix Market file) as one
    /// program: one graph, one submission, the loop exits on the GPU; writes x as .npy.
    Solve(solve::SolveArgs),
    /// Procedural-generation graphs: `procgen run GRAPH.luau` cooks a Luau node graph.
    #[command(subcommand)]
    Procgen(procgen::ProcgenCommand),
    /// Run a SQL query over Parquet/CSV/Arrow files through DataFusion on the GPU (--cpu:
    /// DataFusion's CPU plan); prints the result or writes it to .parquet/.csv/.arrow.
    Sql(sql::SqlArgs),
    /// Serve an Apache Ballista scheduler whose plans run GPU operators on the executors
    /// (`gpugraph sql --cluster HOST:PORT` submits to it); see docs/cluster.md.
    Scheduler(cluster::SchedulerArgs),
    /// Run a Ballista executor on one GPU (or DataFusion's CPU plan where there is none).
    Executor(cluster::ExecutorArgs),
    /// Chrome Trace Event Format files (torch.profiler, Chromium, Perfetto JSON; .json or
    /// .json.gz): `trace info`, `trace stats --by name`, `trace pick --at T --thread PID:TID`,
    /// `trace render`, and the interactive viewer: `trace serve` (browser), `trace view` (window).
    #[command(subcommand)]
    Trace(trace::TraceCommand),
}

/// The environment variables every GPU command honours (shown under `--help`).
const ENVIRONMENT_HELP: &str = "\
Environment:
  WGPU_BACKEND       backends to search, comma-separated: vulkan (vk), gl, metal, dx12
                     (default: all compiled in); an unknown name is an error
  GPUGRAPH_ADAPTER   pick the adapter whose name contains this text (case-insensitive) or
                     whose backend is this name, e.g. 'llvmpipe' or 'NVIDIA'
  GPUGRAPH_PIPELINE_CACHE
                     'off' disables the driver pipeline cache kept (Vulkan) in
                     $XDG_CACHE_HOME/gpugraph/pipelines (default ~/.cache/...), which lets a
                     second run skip most shader compilation; 'on' is the default
  XDG_RUNTIME_DIR    when unset or unusable, a private one under the temp directory is
                     given to the Vulkan loader (it complains otherwise)

Outputs are written to temporaries and renamed into place only when the command succeeds;
a failed or interrupted (SIGINT/SIGTERM) command leaves no output behind.";

fn main() -> ExitCode {
    gpu::quiet_loader_environment();
    let cli = Cli::parse();
    if let Err(e) = output::install_signal_cleanup() {
        eprintln!("error: {}", gpu::error_text(&e));
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Info(args) => info::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Bench(cmd) => bench::run(cmd),
        Command::Mask(args) => files::mask(&args),
        Command::Scan(args) => files::scan(&args),
        Command::Sort(args) => sort::sort(&args),
        Command::Argsort(args) => sort::argsort(&args),
        Command::Compact(args) => files::compact(&args),
        Command::Analyze(args) => analyze::run(&args),
        Command::GenerateTable(args) => analyze::generate::run(&args),
        Command::Expr(args) => expr::run(&args),
        Command::Render(cmd) => render::run(cmd),
        Command::Scene(args) => scene::run(&args),
        Command::Join(args) => join::run(&args),
        Command::Spatial(args) => spatial::run(&args),
        Command::Fft2d(args) => fft::run(&args),
        Command::Traverse(args) => traverse::run(&args),
        Command::Solve(args) => solve::run(&args),
        Command::Procgen(cmd) => procgen::run(cmd),
        Command::Sql(args) => sql::run(&args),
        Command::Scheduler(args) => cluster::scheduler(&args),
        Command::Executor(args) => cluster::executor(&args),
        Command::Trace(cmd) => trace::run(cmd),
    };
    match result {
        Ok(()) => {
            // Explicit, after the command's outputs are in place; not in a destructor.
            gpu::save_pipeline_caches();
            ExitCode::SUCCESS
        }
        Err(e) => {
            if let Some(c) = e.downcast_ref::<expr::CompileError>() {
                // The one `error:` line, then the expression and a caret under the span.
                eprintln!("error: {c}");
                return ExitCode::from(2);
            }
            eprintln!("error: {}", gpu::error_text(&e));
            ExitCode::FAILURE
        }
    }
}
