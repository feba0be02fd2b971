//! The bandwidth floor every throughput row is divided by: a WGSL streaming copy kernel
//! (`floor.wgsl`: vec4 loads and stores, grid-stride, four loads in flight per invocation) moving
//! the same bytes in the same process.
//!
//! Why not `vkCmdCopyBuffer` (a graph copy node): on the NVIDIA H200 it runs at 410–850 GB/s
//! while a copy kernel moves the same bytes at ~4 TB/s, so dividing by it reported primitives
//! at 2–4× "the floor" when they were at 0.2–0.4×. The copy node stays as its own row of
//! `bench copy`.
//!
//! Primitives that read more than they write are held to the floor of their own mix: HBM reads
//! alone run faster than a copy's even mix, so against the copy kernel a reduction read 1.03×
//! and a mask composition (8 bytes read, 4 written) 1.04× "the floor" on an H200.
//! `floor.wgsl`'s `stream_read` (the same loads, folded, nothing stored) is the floor of
//! read-only primitives, and `stream_mixed` (writing one word of every k it reads, interleaved)
//! that of the others; each is tuned and timed like the copy.
//!
//! The kernel is tuned like any other: every candidate grid (workgroups per dispatch) is timed
//! at each traffic size and the fastest median is the floor. Traffic larger than one binding
//! (`chunk`) is copied as several dispatches over one reused buffer pair; the pair is far larger
//! than any cache, so re-reading it costs full bandwidth.

use std::collections::HashMap;

use anyhow::{bail, Result};
use bytemuck::{Pod, Zeroable};
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_gpgpu::kernel::{Access, Kernel};

use super::report::Summary;
use super::throughput::time_encoded;
use crate::gpu::Gpu;

const WGSL: &str = include_str!("floor.wgsl");
const WORKGROUP: u32 = 256;
/// Largest buffer of the pair: past the H200's L2 (50 MB) by far, under every binding limit.
const MAX_CHUNK: u64 = 1 << 30;
/// Workgroups per dispatch tried by the tuner (grid-stride covers the rest).
pub const GRID_CANDIDATES: [u32; 6] = [1024, 2048, 4096, 8192, 16384, 65535];

/// `floor.wgsl`'s `Params`.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    words: u32,
    seed: u32,
    _pad: [u32; 2],
}

/// The copy kernel, its fill twin, a reusable buffer pair and the tuned floor per byte count.
pub struct Floor {
    copy: Kernel,
    read: Kernel,
    fill: Kernel,
    chunk: u64,
    pair: Option<(wgpu::Buffer, wgpu::Buffer)>,
    tuned: HashMap<u64, (u32, Summary)>,
    tuned_read: HashMap<u64, Summary>,
    mixed: Kernel,
    tuned_mixed: HashMap<(u64, u32), Summary>,
}

/// One timed dispatch shape of the copy kernel.
pub struct FloorVariant {
    /// Workgroups per dispatch.
    pub workgroups: u32,
    /// Milliseconds per copy.
    pub time: Summary,
}

impl Floor {
    /// Compiles the kernels for `gpu`; buffers are created on first use.
    pub fn new(gpu: &Gpu) -> Self {
        let device = gpu.device();
        let limits = device.limits();
        let chunk = MAX_CHUNK
            .min(limits.max_storage_buffer_binding_size)
            .min(limits.max_buffer_size)
            / 256
            * 256;
        Self {
            copy: floor_kernel(gpu, "copy"),
            read: floor_kernel(gpu, "stream_read"),
            fill: floor_kernel(gpu, "fill"),
            chunk,
            pair: None,
            tuned: HashMap::new(),
            tuned_read: HashMap::new(),
            mixed: floor_kernel(gpu, "stream_mixed"),
            tuned_mixed: HashMap::new(),
        }
    }

    /// The floor of a primitive that reads `read` and writes `written` bytes, by k = `read /
    /// written` rounded: the copy kernel of half the traffic for k <= 1, the mixed kernel
    /// (k planes read, one written) for k in 2..=16, the read-only kernel beyond (writes are
    /// then at most 1/17 of the traffic).
    pub fn time_traffic(
        &mut self,
        gpu: &Gpu,
        read: u64,
        written: u64,
        repeat: u32,
    ) -> Result<Summary> {
        let k = if written == 0 {
            f64::INFINITY
        } else {
            (read as f64 / written as f64).round()
        };
        if k <= 1.0 {
            return self.time(gpu, (read + written) / 2, repeat);
        }
        let k = if k > 16.0 { 0 } else { k as u32 };
        self.time_stream(gpu, read, k, repeat)
    }

    /// The fastest grid of `stream_read` (`k` = 0) or `stream_mixed` (`k` planes read, one
    /// written) over `bytes` bytes read.
    fn time_stream(&mut self, gpu: &Gpu, bytes: u64, k: u32, repeat: u32) -> Result<Summary> {
        let bytes = round16(bytes);
        let cached = if k == 0 {
            self.tuned_read.get(&bytes)
        } else {
            self.tuned_mixed.get(&(bytes, k))
        };
        if let Some(t) = cached {
            return Ok(t.clone());
        }
        let (piece, candidates) = self.candidates(gpu, bytes);
        let (src, dst) = self.pair(gpu, piece)?;
        let kernel = if k == 0 { &self.read } else { &self.mixed };
        let mut best: Option<Summary> = None;
        for workgroups in candidates {
            let t = time_stream_kernel(gpu, kernel, &src, &dst, bytes, workgroups, repeat, k)?;
            if best.as_ref().is_none_or(|b| t.median < b.median) {
                best = Some(t);
            }
        }
        let best = best.expect("at least one candidate");
        if k == 0 {
            self.tuned_read.insert(bytes, best.clone());
        } else {
            self.tuned_mixed.insert((bytes, k), best.clone());
        }
        Ok(best)
    }

    /// The floor for copying `bytes` bytes (read once, written once): the fastest candidate's
    /// timing, tuned once per byte count and remembered.
    pub fn time(&mut self, gpu: &Gpu, bytes: u64, repeat: u32) -> Result<Summary> {
        let bytes = round16(bytes);
        if let Some((_, t)) = self.tuned.get(&bytes) {
            return Ok(t.clone());
        }
        let best = self
            .variants(gpu, bytes, repeat)?
            .into_iter()
            .min_by(|a, b| a.time.median.total_cmp(&b.time.median))
            .expect("at least one candidate");
        self.tuned
            .insert(bytes, (best.workgroups, best.time.clone()));
        Ok(best.time)
    }

    /// Every candidate grid timed for `bytes` bytes.
    pub fn variants(&mut self, gpu: &Gpu, bytes: u64, repeat: u32) -> Result<Vec<FloorVariant>> {
        let bytes = round16(bytes);
        let (piece, candidates) = self.candidates(gpu, bytes);
        let (src, dst) = self.pair(gpu, piece)?;
        let variants = candidates
            .into_iter()
            .map(|workgroups| {
                let time =
                    time_copy_kernel(gpu, &self.copy, &src, &dst, bytes, workgroups, repeat)?;
                Ok(FloorVariant { workgroups, time })
            })
            .collect::<Result<Vec<_>>>()?;
        verify_copy(gpu, &src, &dst, piece)?;
        Ok(variants)
    }

    /// The buffer-pair size for `bytes` of traffic and the grids to try (GRID_CANDIDATES capped
    /// by the work and the dispatch limit).
    fn candidates(&self, gpu: &Gpu, bytes: u64) -> (u64, Vec<u32>) {
        let max_groups = gpu.device().limits().max_compute_workgroups_per_dimension;
        let piece = bytes.min(self.chunk);
        let needed = (piece / 16).div_ceil(WORKGROUP as u64).max(1);
        let mut candidates: Vec<u32> = GRID_CANDIDATES
            .iter()
            .map(|&g| (g as u64).min(needed).min(max_groups as u64) as u32)
            .collect();
        candidates.dedup();
        (piece, candidates)
    }

    /// Times the copy kernel (the tuned grid for `bytes`) from `src` to `dst`: how fast the
    /// floor runs over buffers placed some other way (`bench memory`).
    pub fn time_pair(
        &mut self,
        gpu: &Gpu,
        src: &wgpu::Buffer,
        dst: &wgpu::Buffer,
        repeat: u32,
    ) -> Result<Summary> {
        let bytes = src.size().min(dst.size()) / 16 * 16;
        self.time(gpu, bytes, repeat)?;
        let workgroups = self.tuned[&bytes].0;
        let t = time_copy_kernel(gpu, &self.copy, src, dst, bytes, workgroups, repeat)?;
        verify_copy(gpu, src, dst, bytes)?;
        Ok(t)
    }

    /// The fill kernel (hashed pattern), for probes that fill their own buffers.
    pub fn fill(&self, gpu: &Gpu, buffer: &wgpu::Buffer, seed: u32) -> Result<()> {
        fill(gpu, &self.fill, buffer, seed)
    }

    /// The buffer pair, at least `bytes` long, its source filled with a hashed pattern.
    fn pair(&mut self, gpu: &Gpu, bytes: u64) -> Result<(wgpu::Buffer, wgpu::Buffer)> {
        if let Some((s, d)) = &self.pair {
            if s.size() >= bytes {
                return Ok((s.clone(), d.clone()));
            }
        }
        if let Some((s, d)) = self.pair.take() {
            s.destroy();
            d.destroy();
        }
        let make = |label| {
            gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: U::STORAGE | U::COPY_SRC | U::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let (src, dst) = (make("floor-src"), make("floor-dst"));
        fill(gpu, &self.fill, &src, 1)?;
        fill(gpu, &self.fill, &dst, 2)?;
        self.pair = Some((src.clone(), dst.clone()));
        Ok((src, dst))
    }
}

/// Fails unless the first and last words of `dst` (up to 16 Mi words each) equal `src`'s: a
/// floor that did not copy would time nothing.
fn verify_copy(gpu: &Gpu, src: &wgpu::Buffer, dst: &wgpu::Buffer, bytes: u64) -> Result<()> {
    let words = (bytes / 4).min(1 << 24);
    let (a, b) = (gpu.read_back(src, words)?, gpu.read_back(dst, words)?);
    if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
        bail!(
            "floor: the copy kernel left word {i} as {:#x} where the source has {:#x}",
            b[i],
            a[i]
        );
    }
    Ok(())
}

/// Writes a hashed (never zero) pattern over all of `buffer` on the GPU.
pub fn fill(gpu: &Gpu, kernel: &Kernel, buffer: &wgpu::Buffer, seed: u32) -> Result<()> {
    let device = gpu.device();
    let words = buffer.size() / 16;
    if words > u32::MAX as u64 {
        bail!(
            "floor: a {}-byte buffer is too large to fill",
            buffer.size()
        );
    }
    let params = uniform(gpu, words as u32, seed);
    // The layout has a read-only source slot; a fill must not bind its target there too.
    let scratch = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("floor-fill-scratch"),
        size: 16,
        usage: U::STORAGE,
        mapped_at_creation: false,
    });
    let group = kernel.bind_group(
        device,
        &[
            scratch.as_entire_buffer_binding(),
            buffer.as_entire_buffer_binding(),
            params.as_entire_buffer_binding(),
        ],
    );
    let groups = (words.div_ceil(WORKGROUP as u64)).clamp(
        1,
        device.limits().max_compute_workgroups_per_dimension as u64,
    ) as u32;
    let mut enc = device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&kernel.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    }
    gpu.submit_and_wait(enc.finish())
}

/// Times copying `bytes` from `src` to `dst` (both at least `min(bytes, chunk)` long) as
/// consecutive dispatches of at most one buffer each, `workgroups` per dispatch.
pub fn time_copy_kernel(
    gpu: &Gpu,
    kernel: &Kernel,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
    bytes: u64,
    workgroups: u32,
    repeat: u32,
) -> Result<Summary> {
    time_stream_kernel(gpu, kernel, src, dst, bytes, workgroups, repeat, 0)
}

/// [`time_copy_kernel`] for any entry of `floor.wgsl`, passing `seed` in its parameters.
#[allow(clippy::too_many_arguments)]
fn time_stream_kernel(
    gpu: &Gpu,
    kernel: &Kernel,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
    bytes: u64,
    workgroups: u32,
    repeat: u32,
    seed: u32,
) -> Result<Summary> {
    let device = gpu.device();
    let chunk = src.size().min(dst.size()) / 16 * 16;
    let (full, rest) = (bytes / chunk, bytes % chunk);
    let group_for = |piece: u64| {
        let params = uniform(gpu, (piece / 16) as u32, seed);
        kernel.bind_group(
            device,
            &[
                wgpu::BufferBinding {
                    buffer: src,
                    offset: 0,
                    size: wgpu::BufferSize::new(piece),
                },
                wgpu::BufferBinding {
                    buffer: dst,
                    offset: 0,
                    size: wgpu::BufferSize::new(piece),
                },
                params.as_entire_buffer_binding(),
            ],
        )
    };
    let full_group = (full > 0).then(|| group_for(chunk));
    let rest_group = (rest > 0).then(|| group_for(rest));
    let (t, _) = time_encoded(gpu, repeat, |enc| {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("floor-copy"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&kernel.pipeline);
        for _ in 0..full {
            pass.set_bind_group(0, full_group.as_ref().expect("full chunks"), &[]);
            pass.dispatch_workgroups(workgroups, 1, 1);
        }
        if let Some(g) = &rest_group {
            pass.set_bind_group(0, g, &[]);
            pass.dispatch_workgroups(workgroups, 1, 1);
        }
        Ok(())
    })?;
    Ok(t)
}

fn uniform(gpu: &Gpu, words: u32, seed: u32) -> wgpu::Buffer {
    let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("floor-params"),
        size: std::mem::size_of::<Params>() as u64,
        usage: U::UNIFORM | U::COPY_DST,
        mapped_at_creation: false,
    });
    let p = Params {
        words,
        seed,
        _pad: [0; 2],
    };
    gpu.queue().write_buffer(&buffer, 0, bytemuck::bytes_of(&p));
    buffer
}

fn round16(bytes: u64) -> u64 {
    bytes.max(16).div_ceil(16) * 16
}

/// `entry` (`copy`, `stream_read`, `stream_mixed` or `fill`) of `floor.wgsl`, compiled for `gpu`.
pub fn floor_kernel(gpu: &Gpu, entry: &str) -> Kernel {
    Kernel::new(
        gpu.device(),
        &format!("floor-{entry}"),
        WGSL,
        entry,
        &[Access::Read, Access::ReadWrite, Access::Uniform],
        &[("WORKGROUP", WORKGROUP as f64)],
    )
}
