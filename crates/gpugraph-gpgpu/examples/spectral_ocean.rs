//! A spectral ocean height field, evolved and inverted on the GPU every frame without
//! readback: a Phillips spectrum `h0(k)` is made once on the CPU and uploaded; each frame a
//! dispatch node evolves it to `h(k, t) = h0(k) e^{iωt} + conj(h0(-k)) e^{-iωt}` (ω² = g|k|,
//! deep water) and an inverse [`Fft2d`] turns it into heights. Only the frame time changes
//! between frames (one 4-byte `write_buffer`); the graph is compiled once and encoded per
//! frame. After the last frame the heights are read back once: checked to be real (the
//! evolved spectrum is Hermitian), compared with the f64 oracle of the same frame, and
//! written as a shaded grayscale PNG.
//!
//! ```sh
//! cargo run --release -p gpugraph-gpgpu --example spectral_ocean [-- SIZE FRAMES OUT.png]
//! ```

use std::f64::consts::TAU;
use std::sync::mpsc;

use gpugraph_command::wgpu::{self, BufferUsages};
use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, DataView, DispatchNode, EncodeOptions, GpuContext,
    Grid, ShaderSource, VectorFormat,
};
use gpugraph_gpgpu::fft::cpu;
use gpugraph_gpgpu::{Fft2d, FftDirection};

type Error = Box<dyn std::error::Error>;

/// `spec = h0 e^{iωt} + conj(h0(-k)) e^{-iωt}` per frequency, `-k` the mirrored index.
const EVOLVE: &str = r"
struct Params { n: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> h0: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> omega: array<f32>;
@group(0) @binding(3) var<storage, read> time: array<f32>;
@group(0) @binding(4) var<storage, read_write> spec: array<vec2<f32>>;

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

@compute @workgroup_size(256)
fn evolve(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.y * nwg.x * 256u + gid.x;
    if (i >= p.n * p.n) {
        return;
    }
    let r = i / p.n;
    let c = i % p.n;
    let mirror = ((p.n - r) % p.n) * p.n + (p.n - c) % p.n;
    let w = omega[i] * time[0];
    let e = vec2<f32>(cos(w), sin(w));
    let b = vec2<f32>(h0[mirror].x, -h0[mirror].y);
    spec[i] = cmul(h0[i], e) + cmul(b, vec2<f32>(e.x, -e.y));
}
";

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    pad: [u32; 3],
}

/// Signed frequency of FFT index `i` of `n`.
fn freq(i: usize, n: usize) -> f64 {
    if i < n / 2 {
        i as f64
    } else {
        i as f64 - n as f64
    }
}

/// The Phillips spectrum sample `h0` and dispersion `ω` of an `n × n` patch `size` metres
/// wide, wind 12 m/s along x; deterministic Gaussian draws.
fn spectrum(n: usize, size: f64) -> (Vec<[f64; 2]>, Vec<f32>) {
    let (g, wind) = (9.81, 12.0);
    let l = wind * wind / g;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let mut h0 = Vec::with_capacity(n * n);
    let mut omega = Vec::with_capacity(n * n);
    for r in 0..n {
        for c in 0..n {
            let (ky, kx) = (TAU * freq(r, n) / size, TAU * freq(c, n) / size);
            let k = kx.hypot(ky);
            // Box–Muller: two independent standard normals.
            let (u, v) = (uniform(), uniform());
            let (g1, g2) = (
                (-2.0 * u.ln()).sqrt() * (TAU * v).cos(),
                (-2.0 * u.ln()).sqrt() * (TAU * v).sin(),
            );
            let phillips = if k < 1e-6 {
                0.0
            } else {
                let along = kx / k;
                // Tessendorf's small-wave damping (ℓ = 1.5 m) keeps the ripples from hiding
                // the swell.
                let damping = (-(k * 1.5).powi(2)).exp();
                2e-3 * (-1.0 / (k * l).powi(2)).exp() / k.powi(4) * along * along * damping
            };
            let a = (phillips / 2.0).sqrt();
            h0.push([g1 * a, g2 * a]);
            omega.push((g * k).sqrt() as f32);
        }
    }
    (h0, omega)
}

fn buffer(ctx: &GpuContext, words: &[u32]) -> wgpu::Buffer {
    let b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: (words.len() as u64 * 4).max(16),
        usage: BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    ctx.queue.write_buffer(&b, 0, bytemuck::cast_slice(words));
    b
}

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(256), |a| a.parse())?;
    let frames: u32 = args.next().map_or(Ok(48), |a| a.parse())?;
    let out = args.next().unwrap_or_else(|| "spectral_ocean.png".into());
    if !n.is_power_of_two() || n < 16 {
        return Err(format!("SIZE must be a power of two ≥ 16, got {n}").into());
    }
    let ctx = GpuContext::new()?;
    println!("adapter: {}", ctx.capabilities().adapter);
    let (h0, omega) = spectrum(n, 250.0);
    let h0_words: Vec<u32> = h0
        .iter()
        .flat_map(|v| [(v[0] as f32).to_bits(), (v[1] as f32).to_bits()])
        .collect();
    let omega_words: Vec<u32> = omega.iter().map(|w| w.to_bits()).collect();
    let cells = (n * n) as u64;
    let (h0_buf, omega_buf) = (buffer(&ctx, &h0_words), buffer(&ctx, &omega_words));
    let time_buf = buffer(&ctx, &[0]);
    let spec_buf = buffer(&ctx, &vec![0; 2 * n * n]);
    let height_buf = buffer(&ctx, &vec![0; 2 * n * n]);

    let mut graph = CommandGraph::new("spectral-ocean", &ctx.device);
    let mut view =
        |id: &str, b: &wgpu::Buffer, f: VectorFormat, rows: u64| -> Result<DataView, Error> {
            let h = graph.import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)?;
            Ok(graph.create_packed_view(h, f, rows)?)
        };
    let h0_v = view("h0", &h0_buf, VectorFormat::Float32x2, cells)?;
    let omega_v = view("omega", &omega_buf, VectorFormat::Float32, cells)?;
    let time_v = view("time", &time_buf, VectorFormat::Float32, 1)?;
    let spec_v = view("spectrum", &spec_buf, VectorFormat::Float32x2, cells)?;
    let height_v = view("height", &height_buf, VectorFormat::Float32x2, cells)?;
    let params = Params {
        n: n as u32,
        pad: [0; 3],
    };
    graph.add_dispatch_node(DispatchNode::new(
        "evolve",
        ShaderSource::new("examples/spectral_ocean/evolve", EVOLVE),
        "evolve",
        vec![
            Binding::params(0, &params),
            Binding::read(1, h0_v),
            Binding::read(2, omega_v),
            Binding::read(3, time_v),
            Binding::read_write(4, spec_v),
        ],
        Grid::Rows {
            rows: cells,
            rows_per_workgroup: 256,
        },
    ))?;
    let plan = Fft2d {
        id: "heights".into(),
        input: spec_v,
        output: height_v,
        width: n as u64,
        height: n as u64,
        direction: FftDirection::Inverse,
    }
    .add_to_graph(&mut graph)?;
    println!(
        "{n}×{n} field, {frames} frames; per frame: evolve + inverse FFT in {} passes",
        plan.passes.len()
    );
    let mut compiled = graph.compile()?;
    let started = std::time::Instant::now();
    let dt = 1.0 / 30.0f32;
    for frame in 0..frames {
        let t = frame as f32 * dt;
        ctx.queue.write_buffer(&time_buf, 0, &t.to_le_bytes());
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        compiled.encode(&mut encoder, &EncodeOptions::default())?;
        ctx.queue.submit([encoder.finish()]);
    }
    ctx.device.poll(wgpu::PollType::wait_indefinitely())?;
    println!(
        "{frames} frames in {:.1} ms (submitted back to back, no readback)",
        started.elapsed().as_secs_f64() * 1e3
    );

    // One readback, to check and draw the last frame.
    let t_last = frames.saturating_sub(1) as f32 * dt;
    let got: Vec<f32> = read(&ctx, &height_buf)?
        .iter()
        .map(|w| f32::from_bits(*w))
        .collect();
    let spec: Vec<[f64; 2]> = (0..n * n)
        .map(|i| {
            let (r, c) = (i / n, i % n);
            let m = ((n - r) % n) * n + (n - c) % n;
            let h = [h0[i][0] as f32 as f64, h0[i][1] as f32 as f64];
            let hm = [h0[m][0] as f32 as f64, -(h0[m][1] as f32 as f64)];
            let w = f64::from(omega[i] * t_last);
            let (cw, sw) = (w.cos(), w.sin());
            [
                h[0] * cw - h[1] * sw + hm[0] * cw + hm[1] * sw,
                h[0] * sw + h[1] * cw + hm[1] * cw - hm[0] * sw,
            ]
        })
        .collect();
    let want = cpu::fft2d(&spec, n, n, true);
    let max = want.iter().map(|v| v[0].abs()).fold(0.0f64, f64::max);
    let (mut err, mut imag) = (0.0f64, 0.0f64);
    for (i, w) in want.iter().enumerate() {
        err = err.max((f64::from(got[2 * i]) - w[0]).abs());
        imag = imag.max(f64::from(got[2 * i + 1]).abs());
    }
    println!(
        "last frame: max height {max:.3e}, max error vs f64 oracle {:.1e} of it, max imaginary part {:.1e} of it",
        err / max,
        imag / max
    );
    if err > 1e-4 * max || imag > 1e-4 * max {
        return Err("the GPU heights disagree with the oracle".into());
    }
    write_png(&out, n, &got)?;
    println!("wrote {out}");
    Ok(())
}

/// Heights as a lit grayscale image: slope shading plus height, so the swell reads as waves.
fn write_png(path: &str, n: usize, field: &[f32]) -> Result<(), Error> {
    let h = |r: usize, c: usize| f64::from(field[2 * ((r % n) * n + c % n)]);
    let max = (0..n * n)
        .map(|i| f64::from(field[2 * i]).abs())
        .fold(1e-30, f64::max);
    let mut pixels = Vec::with_capacity(n * n);
    for r in 0..n {
        for c in 0..n {
            let dx = (h(r, c + 1) - h(r, c + n - 1)) / max;
            let dy = (h(r + 1, c) - h(r + n - 1, c)) / max;
            let light = (0.5 - 0.6 * dx - 0.3 * dy + 0.35 * h(r, c) / max).clamp(0.0, 1.0);
            pixels.push((light * 255.0) as u8);
        }
    }
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut enc = png::Encoder::new(file, n as u32, n as u32);
    enc.set_color(png::ColorType::Grayscale);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()?.write_image_data(&pixels)?;
    Ok(())
}

fn read(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<Vec<u32>, Error> {
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: buffer.size(),
        usage: BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
    ctx.queue.submit([encoder.finish()]);
    let slice = staging.slice(..);
    let (tx, rx) = mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    ctx.device.poll(wgpu::PollType::wait_indefinitely())?;
    rx.recv()??;
    let words = bytemuck::cast_slice(&slice.get_mapped_range()?).to_vec();
    Ok(words)
}
