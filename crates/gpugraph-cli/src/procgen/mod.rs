//! `gpugraph procgen run GRAPH.luau [--frames N] [--report report.json] [--assets DIR]
//! [--script-timeout SECONDS] [--script-memory MIB] [--render OUT.png [--size WxH]]`: cooks a
//! Luau node graph (gpugraph-procgen's front-end, sandboxed) for N frames, printing each
//! frame's readback and the play report (recordings, replays, planning waits — measured rooms,
//! counts read back where a dispatch needs the number, readbacks — guarded replays, re-plans,
//! rooms, `traffic().deferredReads`); `--render` draws what the graph showed
//! (`view.show`, see [`render`]) after the last frame into a PNG.

mod render;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use gpugraph_procgen::luau::{Host, ScriptLimits, DEFAULT_SCRIPT_MEMORY};
use gpugraph_procgen::AssetLibrary;

use crate::gpu::Gpu;
use crate::output::{self, PendingFile};

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
    /// Draw what the graph showed (`view.show{ heights, cells, size, relief?, water?, trees? }`)
    /// after the last frame into this PNG: a shaded height field and one tree per live element
    /// of `trees`, drawn indirectly over the live count the device holds.
    #[arg(long, value_name = "OUT.png")]
    pub render: Option<PathBuf>,
    /// The `--render` image's size in pixels.
    #[arg(long, value_name = "WxH", default_value = "1280x720", requires = "render",
          value_parser = render::parse_size)]
    pub size: (u32, u32),
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
    // The image's temporary exists before any GPU work: an unwritable path fails first, and a
    // failed run leaves no file behind (it is renamed over OUT.png only when complete).
    let png = match &args.render {
        Some(path) => {
            if path.extension().and_then(|e| e.to_str()) != Some("png") {
                bail!("--render {} must name a .png file", path.display());
            }
            Some(PendingFile::new(path, "--render")?)
        }
        None => None,
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
        "recordings {}, replays {}, guarded {}, measured {}, planning waits {} (replans {}), digest re-cooks {}, folded calls {}, deferred reads {}",
        c.recordings,
        c.replays,
        c.guarded,
        c.measured,
        c.plan_waits,
        c.replans,
        report.digest_recooks,
        report.folded_calls,
        c.deferred_reads
    );
    for (frame, bound, room) in &report.rooms {
        println!("room: frame {frame}, `{bound}` = {room}");
    }
    let mut drawn = None;
    if let (Some(png), Some(path)) = (png, &args.render) {
        let scene = render::Scene::from_shown(host.shown().as_ref())?;
        let (width, height) = args.size;
        let image = render::render(&gpu, &scene, width, height)?;
        let rgb: Vec<u8> = image
            .rgba
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect();
        write_png(&png, width, height, &rgb)?;
        png.commit()?;
        println!(
            "rendered {} ({width}x{height}): {} trees drawn (the live count, indirect)",
            path.display(),
            image.trees_drawn
        );
        drawn = Some(image.trees_drawn);
    }
    if let Some(path) = &args.report {
        let mut json = serde_json::to_value(&report)?;
        if let Some(n) = drawn {
            json["render"] = serde_json::json!({ "trees_drawn": n });
        }
        output::write_json(path, &json)?;
    }
    Ok(())
}

fn write_png(out: &PendingFile, width: u32, height: u32, rgb: &[u8]) -> Result<()> {
    let mut enc = png::Encoder::new(std::io::BufWriter::new(out.file()), width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc
        .write_header()
        .context("--render: writing the PNG header")?;
    writer
        .write_image_data(rgb)
        .context("--render: writing the PNG image")?;
    writer.finish().context("--render: finishing the PNG")
}
