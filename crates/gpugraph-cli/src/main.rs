//! `gpugraph`: command-line front end of the gpugraph workspace.
//!
//! This file parses arguments and dispatches; each command lives in its own module. Every
//! failure is reported as one `error: ...` line on stderr with a non-zero exit status.

mod bench;
mod demo;
mod files;
mod gpu;
mod info;
mod npy;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// GPU-resident dataflow: command graphs, primitives and benchmarks on wgpu.
#[derive(Parser)]
#[command(name = "gpugraph", version, propagate_version = true)]
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
    /// Combine 1-D uint32 .npy masks (and, or, xor, difference, not) into a canonical 0/1 mask.
    Mask(files::MaskArgs),
    /// Run a benchmark; prints a table and optionally writes JSON.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(args) => info::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Bench(cmd) => bench::run(cmd),
        Command::Mask(args) => files::mask(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", gpu::one_line(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}
