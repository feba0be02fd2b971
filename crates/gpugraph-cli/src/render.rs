//! `gpugraph render cull`: GPU frustum culling end to end, headless. N instances with
//! bounding spheres and LOD bands live in GPU buffers; each frame moves the camera with
//! uniform writes only, the visibility workflow compacts the visible IDs and writes their
//! count into a drawIndexed record, and one render bundle draws them (depth, optional MSAA
//! resolve) into an offscreen target. The last frame is written as a PNG; `--pick X,Y` reads
//! the ID drawn at a pixel. Counts and picks come back through a `ReadbackRing`. Per frame it prints the visible count, the CPU time spent
//! encoding and (with timestamp queries) the GPU time of the graph's passes.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use gpugraph_command::wgpu;
use gpugraph_render::scene::padded_bytes_per_row;
use gpugraph_render::{
    CullScene, CullSceneOptions, InstancedCubes, ReadbackRing, ReadbackTicket, RenderError,
};
use rand::{rngs::StdRng, Rng, SeedableRng};

use crate::gpu::Gpu;
use crate::output::{ms, PendingFile, Table};

/// The render commands.
#[derive(Subcommand)]
pub enum RenderCommand {
    /// GPU frustum culling of N instanced cubes into a PNG (headless).
    Cull(CullArgs),
}

/// Options of `gpugraph render cull`.
#[derive(Args, Debug)]
pub struct CullArgs {
    /// Number of instances (cubes inscribed in random bounding spheres).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=(1 << 28)))]
    pub instances: u32,
    /// The PNG the last frame is written to.
    #[arg(long, value_name = "FILE.png")]
    pub out: PathBuf,
    /// Frames along the camera path (only uniform writes between them).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub frames: u32,
    /// Samples per pixel: 1 (no resolve) or 4.
    #[arg(long, default_value_t = 4, value_parser = parse_msaa)]
    pub msaa: u32,
    /// Report the instance ID drawn at pixel X,Y of the last frame.
    #[arg(long, value_name = "X,Y", value_parser = parse_pick)]
    pub pick: Option<(u32, u32)>,
    /// Image width in pixels.
    #[arg(long, default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 720, value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub height: u32,
    /// Seed of the random scene.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Cubes per drawn instance (the batched draw; 1 is plain instancing).
    #[arg(long, default_value_t = InstancedCubes::CUBES_PER_INSTANCE,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(InstancedCubes::MAX_CUBES_PER_INSTANCE)))]
    pub cubes_per_instance: u32,
}

fn parse_msaa(s: &str) -> Result<u32, String> {
    match s.trim() {
        "1" => Ok(1),
        "4" => Ok(4),
        other => Err(format!(
            "'{other}' is not a supported sample count (1 or 4)"
        )),
    }
}

fn parse_pick(s: &str) -> Result<(u32, u32), String> {
    let (x, y) = s
        .split_once(',')
        .ok_or_else(|| format!("'{s}' is not X,Y (two pixel coordinates)"))?;
    let coord = |v: &str, what: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|e| format!("{what} '{v}' of '{s}' is not a pixel coordinate: {e}"))
    };
    Ok((coord(x, "X")?, coord(y, "Y")?))
}

/// Runs a render command.
pub fn run(cmd: RenderCommand) -> Result<()> {
    match cmd {
        RenderCommand::Cull(args) => cull(&args),
    }
}

/// A random scene of `n` spheres with density independent of `n`, and LOD bands that drop
/// the smallest instances first with distance. Returns (spheres, LOD bands, half extent).
pub fn random_scene(n: u32, seed: u64) -> (Vec<[f32; 4]>, Vec<[f32; 2]>, f32) {
    let mut rng = StdRng::seed_from_u64(seed);
    let extent = 3.0 * (n as f32).cbrt();
    let spheres: Vec<[f32; 4]> = (0..n)
        .map(|_| {
            [
                rng.random_range(-extent..extent),
                rng.random_range(-extent * 0.25..extent * 0.25),
                rng.random_range(-extent..extent),
                rng.random_range(0.3..1.2f32),
            ]
        })
        .collect();
    let lod = spheres
        .iter()
        .map(|s| [0.0, 60.0 * s[3] * (n as f32).cbrt().max(4.0)])
        .collect();
    (spheres, lod, extent)
}

/// One frame's measurements.
struct FrameStats {
    visible: u32,
    encode: Duration,
    gpu_ms: Option<f64>,
}

fn cull(args: &CullArgs) -> Result<()> {
    if let Some((x, y)) = args.pick {
        if x >= args.width || y >= args.height {
            bail!(
                "--pick {x},{y} is outside the {}x{} image",
                args.width,
                args.height
            );
        }
    }
    if args.out.extension().and_then(|e| e.to_str()) != Some("png") {
        bail!("--out {} must name a .png file", args.out.display());
    }
    // The output's temporary exists before any GPU work: an unwritable path fails first.
    let out = PendingFile::new(&args.out, "PNG image")?;
    let gpu = Gpu::open()?;
    // The spheres (16 bytes an instance) are the largest binding: check it against the
    // device before generating gigabytes of scene on the host.
    let limits = gpu.ctx.device.limits();
    let max_binding = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    let sphere_bytes = u64::from(args.instances) * 16;
    if sphere_bytes > max_binding {
        bail!(
            "--instances {}: their bounding spheres take {sphere_bytes} bytes, past the {} bytes of the largest storage binding of {} (at most {} instances)",
            args.instances,
            max_binding,
            gpu.ctx.adapter.get_info().name,
            max_binding / 16
        );
    }
    let (spheres, lod, extent) = random_scene(args.instances, args.seed);
    let options = CullSceneOptions {
        width: args.width,
        height: args.height,
        msaa: args.msaa,
        picking: args.pick.is_some(),
        readback: true,
        cubes_per_instance: args.cubes_per_instance,
    };
    let mut scene = CullScene::new(gpu.device(), gpu.queue(), &spheres, Some(&lod), options)
        .context("building the culling scene")?;
    if let Some((x, y)) = args.pick {
        scene.set_pick(x, y)?;
    }
    gpu.check("building the culling scene")?;
    let profile = gpu
        .device()
        .features()
        .contains(gpugraph_command::wgpu::Features::TIMESTAMP_QUERY);
    let mut frames = Vec::with_capacity(args.frames as usize);
    // Counts and picks come back through reusable staging tickets, read once they are done.
    let mut readbacks = Readbacks::new(gpu.device(), args.frames as usize);
    for f in 0..args.frames {
        // A quarter orbit around the scene, slightly above it.
        let t = if args.frames > 1 {
            f as f32 / (args.frames - 1) as f32
        } else {
            0.0
        };
        let angle = std::f32::consts::FRAC_PI_2 * t;
        let radius = extent * 1.1;
        let eye = [radius * angle.sin(), extent * 0.3, radius * angle.cos()];
        scene.set_camera(gpu.queue(), eye, [0.0, 0.0, 0.0]);
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        let t0 = Instant::now();
        scene.encode(&mut enc, profile)?;
        let encode = t0.elapsed();
        let count = readbacks.record(&mut enc, scene.draw().buffer())?;
        let pick = match scene.pick_buffer() {
            Some(b) => Some(readbacks.record(&mut enc, b)?),
            None => None,
        };
        gpu.submit_and_wait(enc.finish())?;
        readbacks.submitted(f as usize, count, pick)?;
        let gpu_ms = if profile {
            let timings = scene.compiled_mut().read_timings(gpu.queue())?;
            Some(timings.iter().filter_map(|t| t.gpu_ns).sum::<f64>() / 1e6)
        } else {
            None
        };
        frames.push(FrameStats {
            visible: 0,
            encode,
            gpu_ms,
        });
    }
    readbacks.finish()?;
    for (f, stats) in frames.iter_mut().enumerate() {
        stats.visible = readbacks.counts[f];
    }
    let picked = readbacks.picks.last().copied().flatten();
    let image = scene
        .image_buffer()
        .context("the scene was built with image readback")?;
    let words = gpu.read_u32(image)?;
    let bytes: &[u8] = bytemuck::cast_slice(&words);
    let row = padded_bytes_per_row(args.width) as usize;
    let mut rgba = Vec::with_capacity((args.width * args.height * 4) as usize);
    for y in 0..args.height as usize {
        rgba.extend_from_slice(&bytes[y * row..y * row + args.width as usize * 4]);
    }
    write_png(&out, args.width, args.height, &rgba)?;

    let mut table = Table::new(["frame", "visible", "encode µs", "GPU ms"]);
    for (i, f) in frames.iter().enumerate() {
        table.row([
            i.to_string(),
            f.visible.to_string(),
            format!("{:.1}", f.encode.as_secs_f64() * 1e6),
            f.gpu_ms.map_or("n/a".into(), |g| format!("{g:.3}")),
        ]);
    }
    print!("{table}");
    let mut encodes: Vec<Duration> = frames.iter().map(|f| f.encode).collect();
    encodes.sort();
    let mut gpus: Vec<f64> = frames.iter().filter_map(|f| f.gpu_ms).collect();
    gpus.sort_by(f64::total_cmp);
    println!(
        "{} instances, {} frames at {}x{} (msaa {}): median encode {:.1} µs, median GPU {}",
        args.instances,
        args.frames,
        args.width,
        args.height,
        args.msaa,
        ms(encodes[encodes.len() / 2]) * 1e3,
        gpus.get(gpus.len() / 2)
            .map_or("n/a (no timestamp queries)".into(), |g| format!(
                "{g:.3} ms"
            )),
    );
    if let (Some((x, y)), Some(word)) = (args.pick, picked) {
        match (word != gpugraph_render::NO_OBJECT).then_some(word) {
            Some(id) => {
                let s = spheres[id as usize];
                println!(
                    "pick ({x}, {y}): instance {id} (center {:.2}, {:.2}, {:.2}, radius {:.2})",
                    s[0], s[1], s[2], s[3]
                );
            }
            None => println!("pick ({x}, {y}): background"),
        }
    }
    out.commit()?;
    println!("wrote {}", args.out.display());
    Ok(())
}

/// Per-frame readbacks (the draw record's `instanceCount`, the picked IDs) through a
/// [`ReadbackRing`]: a ticket per value, recorded into the frame's encoder, mapped after the
/// submission and read when needed; when every slot is held, the oldest ticket is waited for.
struct Readbacks {
    ring: ReadbackRing,
    /// (frame, is-pick, ticket) in submission order.
    pending: VecDeque<(usize, bool, ReadbackTicket)>,
    counts: Vec<u32>,
    picks: Vec<Option<u32>>,
}

impl Readbacks {
    fn new(device: &wgpu::Device, frames: usize) -> Self {
        Self {
            ring: ReadbackRing::new(device, "render cull readback", 4, 8),
            pending: VecDeque::new(),
            counts: vec![0; frames],
            picks: vec![None; frames],
        }
    }

    /// A ticket copying the first 8 bytes of `source` in `enc`.
    fn record(
        &mut self,
        enc: &mut wgpu::CommandEncoder,
        source: &wgpu::Buffer,
    ) -> Result<ReadbackTicket> {
        let ticket = loop {
            match self.ring.try_acquire() {
                Ok(t) => break t,
                Err(RenderError::RingExhausted { .. }) if !self.pending.is_empty() => {
                    self.drain_one()?
                }
                Err(e) => return Err(e.into()),
            }
        };
        self.ring.record_copy(&ticket, enc, source, 0, 8)?;
        Ok(ticket)
    }

    /// Maps the frame's tickets (after its submission).
    fn submitted(
        &mut self,
        frame: usize,
        count: ReadbackTicket,
        pick: Option<ReadbackTicket>,
    ) -> Result<()> {
        self.ring.request_map(&count)?;
        self.pending.push_back((frame, false, count));
        if let Some(p) = pick {
            self.ring.request_map(&p)?;
            self.pending.push_back((frame, true, p));
        }
        Ok(())
    }

    fn drain_one(&mut self) -> Result<()> {
        let Some((frame, is_pick, ticket)) = self.pending.pop_front() else {
            return Ok(());
        };
        let bytes = self.ring.wait(ticket)?;
        let words: &[u32] = bytemuck::cast_slice(&bytes);
        if is_pick {
            self.picks[frame] = Some(words[0]);
        } else {
            self.counts[frame] = words[1];
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        while !self.pending.is_empty() {
            self.drain_one()?;
        }
        Ok(())
    }
}

fn write_png(out: &PendingFile, width: u32, height: u32, rgba: &[u8]) -> Result<()> {
    let mut enc = png::Encoder::new(std::io::BufWriter::new(out.file()), width, height);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().context("writing the PNG header")?;
    writer
        .write_image_data(rgba)
        .context("writing the PNG image")?;
    writer.finish().context("finishing the PNG")
}
