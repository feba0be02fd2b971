//! `gpugraph procgen run GRAPH.luau [--frames N] [--report report.json] [--assets DIR]
//! [--script-timeout SECONDS] [--script-memory MIB]`: cooks a Luau node graph
//! (gpugraph-procgen's front-end, sandboxed) for N frames, printing each frame's readback and
//! the play report (recordings, replays, planning waits — measured rooms, counts read back
//! where a dispatch needs the number, readbacks — guarded replays, re-plans, rooms).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use gpugraph_procgen::luau::{Host, ScriptLimits, DEFAULT_SCRIPT_MEMORY};
use gpugraph_procgen::AssetLibrary;

use crate::gpu::Gpu;
use crate::output;

/// `gpugraph procgen …`.
#[derive(Subcommand)]
pub enum ProcgenCommand {
    /// Cook a Luau node graph for N frames; print its outputs and the play report.
    Run(RunArgs),
}

/// `gpugraph procgen run`.
#[derive(Args)]
pub struct RunArgs {
    /// The graph script: defines cook(frame, inputs) and optionally inputs(frame).
    pub graph: PathBuf,
    /// Frames to cook.
    #[arg(long, default_value_t = 1)]
    pub frames: u64,
    /// Write the play report as JSON here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// More asset roots (`<root>/<namespace>/<name>/{kernel.wgsl,bindings.yaml}`), each an
    /// existing directory; the script's own `assets/` folder is always one, when it exists.
    #[arg(long)]
    pub assets: Vec<PathBuf>,
    /// The CPU-time ceiling of each entry into the script (loading it, each frame's
    /// `inputs` and `cook`), in seconds; time asleep in task.wait counts too.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10.0,
        allow_negative_numbers = true
    )]
    pub script_timeout: f64,
    /// The most memory the script's Luau state may allocate, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = (DEFAULT_SCRIPT_MEMORY >> 20) as u64)]
    pub script_memory: u64,
}

/// Runs a procgen subcommand.
pub fn run(cmd: ProcgenCommand) -> Result<()> {
    let ProcgenCommand::Run(args) = cmd;
    if args.frames == 0 {
        bail!("--frames must be at least 1");
    }
    if !(args.script_timeout.is_finite() && args.script_timeout > 0.0) {
        bail!(
            "--script-timeout must be a positive number of seconds, got {}",
            args.script_timeout
        );
    }
    let memory = usize::try_from(args.script_memory)
        .ok()
        .and_then(|m| m.checked_mul(1 << 20))
        .filter(|m| *m >= 1 << 20)
        .with_context(|| {
            format!(
                "--script-memory must be a number of MiB from 1 to what the address space holds, got {}",
                args.script_memory
            )
        })?;
    let limits = ScriptLimits {
        cpu_time: Duration::try_from_secs_f64(args.script_timeout)
            .with_context(|| format!("--script-timeout {} is too long", args.script_timeout))?,
        memory,
    };
    // Bytes, not text: the host names a script that is not Luau source (bytecode) itself.
    let source = std::fs::read(&args.graph)
        .with_context(|| format!("reading the graph script {}", args.graph.display()))?;
    let mut lib = AssetLibrary::new();
    if let Some(dir) = args.graph.parent() {
        lib = lib.with_root(dir.join("assets"));
    }
    for root in &args.assets {
        lib = lib.with_existing_root(root).context("--assets")?;
    }
    let gpu = Gpu::open()?;
    let host = Host::with_limits(gpu.device(), gpu.queue(), lib, limits)?;
    host.load(&args.graph.display().to_string(), &source)?;
    let report = host.play(args.frames)?;
    gpu.check("procgen run")?;
    for f in &report.frames {
        let how = if f.recorded { "recorded" } else { "replayed" };
        println!(
            "frame {} ({how}): {}",
            f.frame,
            serde_json::to_string(&f.values)?
        );
        for w in &f.waited {
            println!("  waited: {w}");
        }
    }
    let c = &report.counts;
    println!(
        "recordings {}, replays {}, guarded {}, measured {}, planning waits {} (replans {}), digest re-cooks {}, folded calls {}",
        c.recordings,
        c.replays,
        c.guarded,
        c.measured,
        c.plan_waits,
        c.replans,
        report.digest_recooks,
        report.folded_calls
    );
    for (frame, bound, room) in &report.rooms {
        println!("room: frame {frame}, `{bound}` = {room}");
    }
    if let Some(path) = &args.report {
        output::write_json(path, &report)?;
    }
    Ok(())
}
