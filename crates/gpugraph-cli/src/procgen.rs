//! `gpugraph procgen run GRAPH.luau [--frames N] [--report report.json]`: cooks a Luau node
//! graph (gpugraph-procgen's front-end) for N frames, printing each frame's readback and the
//! play report (recordings, replays, planning waits — measured rooms, counts read back where a
//! dispatch needs the number, readbacks — guarded replays, re-plans, rooms).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use gpugraph_procgen::luau::Host;
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
    /// More asset roots (`<root>/<namespace>/<name>/{kernel.wgsl,bindings.yaml}`); the
    /// script's own `assets/` folder is always one.
    #[arg(long)]
    pub assets: Vec<PathBuf>,
}

/// Runs a procgen subcommand.
pub fn run(cmd: ProcgenCommand) -> Result<()> {
    let ProcgenCommand::Run(args) = cmd;
    if args.frames == 0 {
        bail!("--frames must be at least 1");
    }
    let source = std::fs::read_to_string(&args.graph)
        .with_context(|| format!("reading the graph script {}", args.graph.display()))?;
    let mut lib = AssetLibrary::new();
    if let Some(dir) = args.graph.parent() {
        lib = lib.with_root(dir.join("assets"));
    }
    for root in &args.assets {
        lib = lib.with_root(root);
    }
    let gpu = Gpu::open()?;
    let host = Host::new(gpu.device(), gpu.queue(), lib)?;
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
