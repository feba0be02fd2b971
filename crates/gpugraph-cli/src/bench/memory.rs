//! `bench memory`: where do uploaded buffers land? The floor's copy kernel timed over buffer
//! pairs created and filled in different ways, at sizes around the 512 MiB "cliff" the NVIDIA
//! H200 showed (every streaming op at half speed or worse once buffers reached 512 MiB).
//!
//! Each row is one placement; `x floor` compares it with the floor's own buffers (created plain
//! and filled on the GPU). A placement at well under 1.0 lands its data in slow memory.

use anyhow::{Context, Result};
use clap::Args;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::VectorFormat;
use gpugraph_tables::GpuData;

use super::floor::Floor;
use super::report::{self, BenchJson};
use super::throughput::{self, ThroughputRow};
use super::BenchOptions;
use crate::gpu::Gpu;

/// Arguments of `bench memory`.
#[derive(Args, Clone, Debug)]
pub struct MemoryArgs {
    /// Words (u32) per buffer, comma-separated counts or powers like 2^28.
    #[arg(long, value_delimiter = ',', value_parser = throughput::parse_size, default_value = "2^20,2^22")]
    pub sizes: Vec<u64>,
    /// Bytes of mapped-at-creation buffers kept alive during the `ballast` placement.
    #[arg(long, default_value_t = 1 << 31)]
    pub ballast_bytes: u64,
    /// Probe only these placements (default: all), each followed by an `after` row: the floor
    /// over a fresh GPU-filled pair created once the placement's buffers are gone. Run one
    /// placement per process to see whether a placement slows the process down for good.
    #[arg(long, value_delimiter = ',', value_parser = parse_placement)]
    pub placement: Vec<Placement>,
    #[command(flatten)]
    pub options: BenchOptions,
}

/// How a probe buffer is created and filled.
#[derive(Clone, Copy, Debug)]
pub enum Placement {
    /// Plain storage buffer, filled by a kernel.
    GpuFilled,
    /// Plain storage buffer, filled by one `Queue::write_buffer` of the whole buffer.
    WriteBuffer,
    /// Plain storage buffer, filled through bounded staging pieces
    /// (`gpugraph_tables::upload::write_parts`).
    ChunkedWrite,
    /// `mapped_at_creation: true`, filled through the mapping.
    MappedAtCreation,
    /// Plain storage buffer, filled by a copy from our own MAP_WRITE staging buffer (destroyed
    /// before timing).
    StagingCopy,
    /// `GpuData::upload` (the tables crate: what every table column goes through).
    TablesUpload,
    /// Plain buffers filled by a kernel while `ballast_bytes` of mapped-at-creation buffers
    /// stay alive.
    Ballast,
}

const PLACEMENTS: [Placement; 7] = [
    Placement::GpuFilled,
    Placement::WriteBuffer,
    Placement::ChunkedWrite,
    Placement::MappedAtCreation,
    Placement::StagingCopy,
    Placement::TablesUpload,
    Placement::Ballast,
];

impl Placement {
    /// Whether the placement copies host data (its creation time is an upload).
    fn copies_host_data(self) -> bool {
        !matches!(self, Placement::GpuFilled | Placement::Ballast)
    }

    fn name(self) -> &'static str {
        match self {
            Placement::GpuFilled => "gpu-filled",
            Placement::WriteBuffer => "write-buffer",
            Placement::ChunkedWrite => "chunked-write",
            Placement::MappedAtCreation => "mapped-at-creation",
            Placement::StagingCopy => "staging-copy",
            Placement::TablesUpload => "tables-upload",
            Placement::Ballast => "gpu-filled+mapped-ballast",
        }
    }
}

/// Runs the probe.
pub fn run(args: &MemoryArgs) -> Result<()> {
    if let Some(path) = &args.options.json {
        report::check_writable(path)?;
    }
    let gpu = Gpu::open()?;
    let max = gpu.device().limits().max_buffer_size;
    for &n in &args.sizes {
        if n * 4 > max {
            anyhow::bail!(
                "bench memory: --sizes {n} needs {}-byte buffers; max_buffer_size is {max}",
                n * 4
            );
        }
    }
    let mut floor = Floor::new(&gpu);
    let repeat = args.options.repeat;
    let mut rows: Vec<ThroughputRow> = Vec::new();
    let mut uploads: Vec<ThroughputRow> = Vec::new();
    for &n in &args.sizes {
        let bytes = (n * 4).max(16).div_ceil(16) * 16;
        let host: Vec<u32> = (0..bytes / 4).map(|i| pattern(i as u32)).collect();
        let reference = floor.time(&gpu, bytes, repeat)?;
        let chosen = if args.placement.is_empty() {
            PLACEMENTS.to_vec()
        } else {
            args.placement.clone()
        };
        for placement in chosen {
            report::progress(format_args!("bench memory: n = {n}: {}", placement.name()));
            let ballast = match placement {
                Placement::Ballast => ballast(&gpu, args.ballast_bytes)?,
                _ => Vec::new(),
            };
            let t0 = std::time::Instant::now();
            let (src, keep_src) = create(&gpu, &floor, placement, &host, 1)
                .with_context(|| format!("creating a {} buffer", placement.name()))?;
            if placement.copies_host_data() {
                // Host to device, wall clock including the wait: no floor applies.
                let upload = report::Summary::of(&[report::ms(t0.elapsed())]);
                uploads.push(throughput::row(
                    &format!("upload[{}]", placement.name()),
                    n,
                    4.0,
                    &upload,
                    &report::Summary::default(),
                    "wall-clock",
                ));
            }
            let (dst, keep_dst) = create(&gpu, &floor, placement, &host, 2)?;
            let t = floor.time_pair(&gpu, &src, &dst, repeat)?;
            rows.push(throughput::row(
                &format!("copy-kernel[{}]", placement.name()),
                n,
                8.0,
                &t,
                &reference,
                "gpu-timestamps",
            ));
            drop((keep_src, keep_dst));
            for b in [src, dst].into_iter().chain(ballast) {
                b.destroy();
            }
            let (a, _) = create(&gpu, &floor, Placement::GpuFilled, &host, 3)?;
            let (b, _) = create(&gpu, &floor, Placement::GpuFilled, &host, 4)?;
            let t = floor.time_pair(&gpu, &a, &b, repeat)?;
            rows.push(throughput::row(
                &format!("copy-kernel[after {}]", placement.name()),
                n,
                8.0,
                &t,
                &reference,
                "gpu-timestamps",
            ));
            a.destroy();
            b.destroy();
        }
    }
    throughput::print_rows(&rows);
    println!("uploads (host to device, wall clock, one sample; x floor does not apply):");
    throughput::print_rows(&uploads);
    rows.extend(uploads);
    if let Some(path) = &args.options.json {
        let caps = gpu.ctx.capabilities().clone();
        report::write_json(path, &BenchJson::new("memory", &caps, repeat, &rows))?;
    }
    Ok(())
}

fn parse_placement(text: &str) -> Result<Placement, String> {
    PLACEMENTS
        .into_iter()
        .find(|p| p.name() == text.trim())
        .ok_or_else(|| {
            let names: Vec<&str> = PLACEMENTS.iter().map(|p| p.name()).collect();
            format!("unknown placement '{text}' (one of {})", names.join(", "))
        })
}

fn pattern(i: u32) -> u32 {
    let h = i.wrapping_mul(0x9E37_79B9) ^ 0x85EB_CA6B;
    h ^ (h >> 15)
}

/// A buffer holding `host` (or the fill pattern) placed as `placement`, and the table range
/// that owns it where the tables crate created it.
fn create(
    gpu: &Gpu,
    floor: &Floor,
    placement: Placement,
    host: &[u32],
    seed: u32,
) -> Result<(wgpu::Buffer, Option<GpuData>)> {
    let mut owner = None;
    let device = gpu.device();
    let size = host.len() as u64 * 4;
    let usage = U::STORAGE | U::COPY_SRC | U::COPY_DST;
    let plain = |label| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    let buffer = match placement {
        Placement::GpuFilled | Placement::Ballast => {
            let b = plain("probe-gpu-filled");
            floor.fill(gpu, &b, seed)?;
            b
        }
        Placement::WriteBuffer => {
            let b = plain("probe-write-buffer");
            gpu.queue().write_buffer(&b, 0, bytemuck::cast_slice(host));
            b
        }
        Placement::ChunkedWrite => {
            let b = plain("probe-chunked-write");
            gpugraph_tables::upload::write_parts(
                device,
                gpu.queue(),
                &b,
                &[(0, bytemuck::cast_slice(host))],
            )?;
            b
        }
        Placement::MappedAtCreation => {
            let b = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("probe-mapped"),
                size,
                usage,
                mapped_at_creation: true,
            });
            b.slice(..)
                .get_mapped_range_mut()?
                .copy_from_slice(bytemuck::cast_slice(host));
            b.unmap();
            b
        }
        Placement::StagingCopy => {
            let b = plain("probe-staging-target");
            let staging = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("probe-staging"),
                size,
                usage: U::MAP_WRITE | U::COPY_SRC,
                mapped_at_creation: true,
            });
            staging
                .slice(..)
                .get_mapped_range_mut()?
                .copy_from_slice(bytemuck::cast_slice(host));
            staging.unmap();
            let mut enc = device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(&staging, 0, &b, 0, size);
            gpu.submit_and_wait(enc.finish())?;
            staging.destroy();
            b
        }
        Placement::TablesUpload => {
            let data = GpuData::upload(&gpu.ctx, host, VectorFormat::Uint32, U::empty())?;
            let b = data.buffer().clone();
            owner = Some(data);
            b
        }
    };
    // Make every upload complete before timing starts.
    gpu.submit_and_wait(device.create_command_encoder(&Default::default()).finish())?;
    Ok((buffer, owner))
}

/// `bytes` of mapped-at-creation buffers (512 MiB each), alive until the caller destroys them.
fn ballast(gpu: &Gpu, bytes: u64) -> Result<Vec<wgpu::Buffer>> {
    let piece = (512u64 << 20).min(gpu.device().limits().max_buffer_size);
    let mut out = Vec::new();
    let mut left = bytes;
    while left > 0 {
        let size = piece.min(left).div_ceil(16) * 16;
        let b = gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("probe-ballast"),
            size,
            usage: U::STORAGE | U::COPY_SRC | U::COPY_DST,
            mapped_at_creation: true,
        });
        b.slice(..)
            .get_mapped_range_mut()?
            .copy_from_slice(&vec![0x5A; size as usize]);
        b.unmap();
        out.push(b);
        left -= piece.min(left);
    }
    Ok(out)
}
