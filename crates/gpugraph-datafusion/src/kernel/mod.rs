//! The aggregate kernel: uploads converted chunks and runs a [`Program`] over them into
//! per-group accumulators.
//!
//! The program is compiled to WGSL (`compile.rs`) around the accumulation and flush code of
//! `aggregate.wgsl`, one pipeline per program shape from the device's `DeviceCache`: a query
//! repeated, or repeated with other literals, compiles nothing. The exact 64-bit and 96-bit
//! integer arithmetic lives in the template's reviewed helpers, and `program::run_cpu` is the
//! oracle the kernel tests compare against. The expression language's kernels
//! (`gpugraph-program`) compute in f32/u32 without SQL nulls, which the exact decimal sums
//! here need.

use std::time::{Duration, Instant};

use bytemuck::{Pod, Zeroable};
use gpugraph_command::{wgpu, GpuContext};
use gpugraph_gpgpu::kernel::{parameter_buffer, Binding, Kernel};
use gpugraph_tables::upload::{FillFn, Source, Target};

use crate::convert::{Chunk, Part};
use crate::plan::MAX_SLOTS;
use crate::program::{Program, ProgramError};

mod compile;
pub mod keymap;
mod pack;
pub use compile::shader;
pub use pack::SlotLayout;
use pack::Stream;

/// Accumulator words a workgroup keeps privately (the kernel's `PRIVATE_WORDS`).
pub const PRIVATE_WORDS: usize = 4096;

/// Most groups one aggregation may have: groups past what the workgroups keep privately
/// ([`PRIVATE_WORDS`]) accumulate straight into device memory, so TPC-H Q3's groups (one per
/// qualifying order, 1.5M at SF 10) fit. The accumulators also travel to the device and back,
/// so [`max_groups`] also bounds their bytes.
pub const MAX_GROUPS: usize = 1 << 24;

/// Most accumulator words an aggregation may have (256 MiB).
const MAX_ACC_WORDS: usize = 1 << 26;

/// Most groups of `words_per_group` words each that one aggregation may have on `ctx`'s
/// device.
pub fn max_groups(ctx: &GpuContext, words_per_group: usize) -> usize {
    let binding = (ctx.device.limits().max_storage_buffer_binding_size / 4) as usize;
    MAX_GROUPS.min(binding.min(MAX_ACC_WORDS) / words_per_group.max(1))
}

/// Storage buffers the kernel binds (program, accumulators, column slots, lookup).
pub const STORAGE_BUFFERS: u32 = 3 + MAX_SLOTS as u32;

const WORKGROUP: u32 = 256;

/// Errors of running the aggregate kernel.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The program is malformed (a planner bug).
    #[error("the row program is malformed: {0}")]
    Program(#[from] ProgramError),
    /// Uploading a chunk or reading the accumulators back failed.
    #[error("moving data to or from the GPU failed: {0}")]
    Transfer(#[from] gpugraph_tables::TableError),
    /// More groups than the kernel accumulates.
    #[error("{groups} groups ({words} accumulator words each); the GPU aggregates at most {max}")]
    TooManyGroups {
        /// Groups asked for.
        groups: usize,
        /// Words per group.
        words: usize,
        /// The limit.
        max: usize,
    },
    /// Writing the initial accumulators or reading them back failed.
    #[error("moving the accumulators failed: {0}")]
    Readback(String),
    /// Host data could not be written into a device buffer.
    #[error("staging {what} ({bytes} bytes) on the device failed: {reason}")]
    Stage {
        /// What was staged.
        what: &'static str,
        /// Its size.
        bytes: u64,
        /// Why.
        reason: String,
    },
    /// A chunk of more rows than a dispatch addresses.
    #[error("a chunk of {rows} rows; at most {max} per dispatch")]
    ChunkTooLarge {
        /// Rows.
        rows: usize,
        /// The limit.
        max: usize,
    },
}

/// The kernel's `Params` (checked against the WGSL by a naga test).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct Params {
    /// Rows of the chunk.
    pub rows: u32,
    /// Accumulator words per group.
    pub words_per_group: u32,
    /// Groups.
    pub groups: u32,
    /// 0, or groups × words per group when a workgroup accumulates privately.
    pub private_words: u32,
    /// Invocations launched (the grid stride).
    pub row_stride: u32,
    /// Bit s: slot s carries validity words.
    pub has_valid: u32,
    /// First constant word in the program buffer.
    pub constants: u32,
    /// First word kind in the program buffer.
    pub kinds: u32,
    /// Copies of the private accumulators per workgroup (see [`private_copies`]).
    pub copies: u32,
    /// Words between two copies (odd, so copies start in different banks).
    pub copy_stride: u32,
    /// Padding.
    pub pad: [u32; 2],
    /// Per column slot: (base, log2 values per word, first validity word, 0) (`pack.rs`).
    pub slots: [[u32; 4]; MAX_SLOTS],
}

/// Most private accumulator copies per workgroup. Measured on the H200 (2026-12-02, TPC-H
/// SF 10, `bench tpch --variants gpu-warm,gpu-host`, `GPUGRAPH_AGG_COPIES`): Q6 (one group,
/// 6 words) ran its chunks in 2.4 ms of GPU time with 256 copies and 1.0 ms with 16, because
/// a workgroup's flush walks every copy; Q1 (108 words, 37 copies) moved 3.6 → 3.9 ms at 16.
pub const MAX_COPIES: usize = 32;

/// Copies of `words` private accumulator words that fit [`PRIVATE_WORDS`], at most
/// [`MAX_COPIES`], and the stride between them: `words` rounded up to odd.
pub fn private_copies(words: usize) -> (u32, u32) {
    let stride = (words | 1).max(1);
    let copies = (PRIVATE_WORDS / stride).clamp(1, MAX_COPIES);
    (copies as u32, stride as u32)
}

/// A launch-shape override from the environment, for measuring the kernel on a device
/// without rebuilding: `GPUGRAPH_AGG_WORKGROUPS` (most workgroups per chunk with private
/// accumulators, default 1024) and `GPUGRAPH_AGG_COPIES` (most private accumulator copies,
/// default as [`private_copies`]); the exec's `GPUGRAPH_SCAN_THREADS` and
/// `GPUGRAPH_CHUNK_ROWS` (and `GPUGRAPH_PAGE_DECODE=0`, which keeps Parquet pages on the
/// host's Arrow reader). Results do not depend on any of them.
pub(crate) fn tuning(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or(default)
}

/// One uploaded chunk: a buffer per column slot.
#[derive(Debug)]
pub struct GpuChunk {
    /// Rows.
    pub rows: u32,
    /// Column slot buffers.
    pub buffers: Vec<wgpu::Buffer>,
    /// Bit s: slot s carries validity words.
    pub has_valid: u32,
    /// Per slot, how its values are packed (see `pack.rs`).
    pub layouts: Vec<SlotLayout>,
}

impl GpuChunk {
    /// Bytes of its column buffers (what its upload moved, padding included).
    pub fn bytes(&self) -> u64 {
        self.buffers.iter().map(wgpu::Buffer::size).sum()
    }
}

fn storage(
    device: &wgpu::Device,
    label: &str,
    bytes: u64,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16).div_ceil(16) * 16,
        usage: wgpu::BufferUsages::STORAGE | usage,
        mapped_at_creation: false,
    })
}

/// Uploads `chunk` through the tables crate's staging ring (one upload at a time uses it; a
/// caller may upload from another thread while it converts the next chunk).
pub fn upload(ctx: &GpuContext, chunk: &Chunk) -> Result<GpuChunk, KernelError> {
    let max = (u32::MAX / 2) as usize;
    if chunk.rows > max {
        return Err(KernelError::ChunkTooLarge {
            rows: chunk.rows,
            max,
        });
    }
    let layouts: Vec<SlotLayout> = (0..chunk.columns.len())
        .map(|s| SlotLayout::new(chunk.rows, chunk.bounds.get(s).copied().flatten()))
        .collect();
    let streams: Vec<Stream<'_>> = chunk.columns.iter().map(|p| Stream::new(p)).collect();
    let buffers: Vec<wgpu::Buffer> = streams
        .iter()
        .zip(&layouts)
        .map(|(stream, layout)| {
            let words = layout.valid_at as usize + stream.len() - chunk.rows.min(stream.len());
            storage(
                &ctx.device,
                "gpugraph-datafusion-column",
                words as u64 * 4,
                wgpu::BufferUsages::COPY_DST,
            )
        })
        .collect();
    // Key codes are mapped into the query's codes, and narrow slots packed, as the staging
    // buffers fill (on the upload's threads).
    let part_fills: Vec<Vec<Box<FillFn<'_>>>> = chunk
        .columns
        .iter()
        .map(|parts| {
            parts
                .iter()
                .map(|part| -> Box<FillFn<'_>> {
                    Box::new(move |at: u64, out: &mut [u8]| {
                        let out: &mut [u32] = bytemuck::cast_slice_mut(out);
                        part.write(at as usize / 4, out);
                        Ok(())
                    })
                })
                .collect()
        })
        .collect();
    let rows = chunk.rows;
    let packed_fills: Vec<[Box<FillFn<'_>>; 2]> = streams
        .iter()
        .zip(&layouts)
        .map(|(stream, &layout)| -> [Box<FillFn<'_>>; 2] {
            let values = move |at: u64, out: &mut [u8]| {
                let out: &mut [u32] = bytemuck::cast_slice_mut(out);
                let per = 1usize << layout.shift;
                let first = at as usize / 4 * per;
                let n = (out.len() * per).min(rows - first.min(rows));
                let mut scratch = vec![0u32; n];
                stream.read(first, &mut scratch);
                pack::pack(&scratch, layout, out);
                Ok(())
            };
            let validity = move |at: u64, out: &mut [u8]| {
                stream.read(rows + at as usize / 4, bytemuck::cast_slice_mut(out));
                Ok(())
            };
            [Box::new(values), Box::new(validity)]
        })
        .collect();
    // Every part of every column in one pass through the staging ring: packed back to back,
    // one submission per staging buffer rather than per column or part.
    let mut targets = Vec::new();
    for (s, (parts, buffer)) in chunk.columns.iter().zip(&buffers).enumerate() {
        let layout = layouts[s];
        if layout.shift > 0 {
            let extra = streams[s].len().saturating_sub(rows) as u64 * 4;
            let [values, validity] = &packed_fills[s];
            targets.push(Target {
                buffer,
                offset: 0,
                source: Source::Fill {
                    len: layout.valid_at as u64 * 4,
                    row: 4,
                    fill: values.as_ref(),
                },
            });
            if extra > 0 {
                targets.push(Target {
                    buffer,
                    offset: layout.valid_at as u64 * 4,
                    source: Source::Fill {
                        len: extra,
                        row: 4,
                        fill: validity.as_ref(),
                    },
                });
            }
            continue;
        }
        let mut offset = 0u64;
        for (part, f) in parts.iter().zip(&part_fills[s]) {
            targets.push(Target {
                buffer,
                offset,
                source: match part {
                    Part::Words(words) => Source::Bytes(bytemuck::cast_slice(words)),
                    Part::Codes { codes, .. } => Source::Fill {
                        len: codes.len() as u64 * 4,
                        row: 4,
                        fill: f.as_ref(),
                    },
                },
            });
            offset += part.len() as u64 * 4;
        }
    }
    gpugraph_tables::upload::write_targets(&ctx.device, &ctx.queue, &targets)?;
    Ok(GpuChunk {
        rows: chunk.rows as u32,
        buffers,
        has_valid: chunk.has_valid,
        layouts,
    })
}

/// Times of one [`run`].
#[derive(Clone, Debug, Default)]
pub struct RunTimes {
    /// From submission until the accumulators are on the host (host clock; reading a few
    /// accumulator words back is part of it).
    pub kernel: Duration,
    /// The dispatches' time on the GPU, from the first chunk's start to the last one's end
    /// (timestamp queries; `None` where the device has none, or without rows).
    pub gpu: Option<Duration>,
    /// Each timed chunk's own GPU time (its compute pass), in order: every chunk up to 511,
    /// then the last one. Empty without timestamp queries.
    pub chunks: Vec<Duration>,
}

/// Runs `program` over `chunks` into `groups` groups, with `lookup` the lookup buffer of a
/// join (`program::LookupShape`); returns the accumulator words (group-major,
/// [`Program::words_per_group`] each).
pub fn run(
    ctx: &GpuContext,
    program: &Program,
    groups: usize,
    chunks: &[GpuChunk],
    lookup: Option<&wgpu::Buffer>,
) -> Result<(Vec<u32>, RunTimes), KernelError> {
    program.check()?;
    let wpg = program.words_per_group();
    let words = groups * wpg;
    let most = max_groups(ctx, wpg);
    if groups > most {
        return Err(KernelError::TooManyGroups {
            groups,
            words: wpg,
            max: most,
        });
    }
    let device = &ctx.device;
    let encoded = program.encode();
    let nullable = chunks.iter().fold(0, |m, c| m | c.has_valid);
    let wgsl = shader(program, nullable);
    let kernel = Kernel::new(
        device,
        "gpugraph-datafusion-aggregate",
        &wgsl,
        "aggregate",
        &[
            Binding::Uniform,
            Binding::StorageRead,
            Binding::StorageReadWrite,
            Binding::StorageRead,
            Binding::StorageRead,
            Binding::StorageRead,
            Binding::StorageRead,
            Binding::StorageRead,
            Binding::StorageRead,
            Binding::StorageRead,
            Binding::StorageRead,
            Binding::StorageRead,
        ],
        &[],
    );
    let program_buffer = parameter_buffer(
        device,
        "gpugraph-datafusion-program",
        bytemuck::cast_slice(&encoded.words),
    );
    // Written at creation: no staging ring and no submission before the dispatches.
    let initial = program.initial_accumulators(groups);
    let acc = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gpugraph-datafusion-accumulators"),
        size: (words as u64 * 4).max(16).div_ceil(16) * 16,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    });
    {
        let mut view = acc
            .slice(..)
            .get_mapped_range_mut()
            .map_err(|e| KernelError::Readback(format!("mapping the accumulators failed: {e}")))?;
        view.slice(..words * 4)
            .copy_from_slice(bytemuck::cast_slice(&initial));
    }
    acc.unmap();
    let placeholder = storage(
        device,
        "gpugraph-datafusion-unused",
        16,
        wgpu::BufferUsages::empty(),
    );
    let private = (words | 1) <= PRIVATE_WORDS;
    let (copies, copy_stride) = if private {
        let (copies, stride) = private_copies(words);
        (copies.min(tuning("GPUGRAPH_AGG_COPIES", copies)), stride)
    } else {
        (0, 0)
    };
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("gpugraph-datafusion-aggregate"),
    });
    let mut keep = Vec::new();
    // A compute pass per chunk, each timed at its start and end (the first 511 chunks and the
    // last one; more would outgrow a query set), so a run reports its chunks' GPU times.
    let live: Vec<&GpuChunk> = chunks.iter().filter(|c| c.rows > 0).collect();
    let timed = live.len().clamp(1, 512);
    let slot_of = |i: usize| {
        if i + 1 == live.len() {
            Some(timed - 1)
        } else {
            (i + 1 < timed).then_some(i)
        }
    };
    let timer = ctx.capabilities().timestamp_query.then(|| {
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("gpugraph-datafusion-aggregate-time"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * timed as u32,
        });
        let resolved = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpugraph-datafusion-aggregate-time"),
            size: 16 * timed as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        (set, resolved)
    });
    {
        for (i, chunk) in live.iter().enumerate() {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("gpugraph-datafusion-aggregate"),
                timestamp_writes: timer.as_ref().zip(slot_of(i)).map(|((set, _), s)| {
                    wgpu::ComputePassTimestampWrites {
                        query_set: set,
                        beginning_of_pass_write_index: Some(2 * s as u32),
                        end_of_pass_write_index: Some(2 * s as u32 + 1),
                    }
                }),
            });
            // Private accumulators pay a flush per workgroup: fewer, longer-running groups.
            let cap = if private {
                tuning("GPUGRAPH_AGG_WORKGROUPS", 1024).clamp(1, 65_535)
            } else {
                65_535
            };
            let workgroups = chunk.rows.div_ceil(WORKGROUP).min(cap);
            let params = Params {
                rows: chunk.rows,
                words_per_group: wpg as u32,
                groups: groups as u32,
                private_words: if private { words as u32 } else { 0 },
                row_stride: workgroups * WORKGROUP,
                has_valid: chunk.has_valid,
                constants: encoded.constants,
                kinds: encoded.kinds,
                copies,
                copy_stride,
                pad: [0; 2],
                slots: std::array::from_fn(|s| {
                    chunk.layouts.get(s).copied().unwrap_or_default().words()
                }),
            };
            let params = parameter_buffer(
                device,
                "gpugraph-datafusion-params",
                bytemuck::bytes_of(&params),
            );
            let mut resources = vec![
                params.as_entire_buffer_binding(),
                program_buffer.as_entire_buffer_binding(),
                acc.as_entire_buffer_binding(),
            ];
            for s in 0..MAX_SLOTS {
                resources.push(
                    chunk
                        .buffers
                        .get(s)
                        .unwrap_or(&placeholder)
                        .as_entire_buffer_binding(),
                );
            }
            resources.push(lookup.unwrap_or(&placeholder).as_entire_buffer_binding());
            let group = kernel.bind_group(device, &resources);
            pass.set_pipeline(&kernel.pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(workgroups, 1, 1);
            keep.push(params);
        }
    }
    // The accumulators and the timestamps are copied to one staging buffer in the same
    // submission as the dispatches, so a run costs one submission and one wait.
    let acc_bytes = words as u64 * 4;
    let ticks_at = acc_bytes.div_ceil(8) * 8;
    let ticks_bytes = 16 * timed as u64;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gpugraph-datafusion-readback"),
        size: (ticks_at + ticks_bytes).div_ceil(16) * 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    if acc_bytes > 0 {
        encoder.copy_buffer_to_buffer(&acc, 0, &staging, 0, acc_bytes);
    }
    if let Some((set, resolved)) = &timer {
        encoder.resolve_query_set(set, 0..2 * timed as u32, resolved, 0);
        encoder.copy_buffer_to_buffer(resolved, 0, &staging, ticks_at, ticks_bytes);
    }
    let start = Instant::now();
    let mapped = submit_and_map(ctx, encoder, &staging);
    let kernel_time = start.elapsed();
    acc.destroy();
    if let Err(reason) = mapped {
        staging.destroy();
        return Err(KernelError::Readback(reason));
    }
    let view = staging.slice(..).get_mapped_range();
    let (out, gpu, chunk_times) = {
        let Ok(view) = view else {
            staging.destroy();
            return Err(KernelError::Readback(
                "the mapped readback buffer has no view".into(),
            ));
        };
        let out: Vec<u32> = bytemuck::pod_collect_to_vec(&view[..acc_bytes as usize]);
        let mut chunk_times = Vec::new();
        let gpu = timer.as_ref().filter(|_| !live.is_empty()).map(|_| {
            let end = ticks_at as usize + ticks_bytes as usize;
            let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&view[ticks_at as usize..end]);
            let period = ctx.queue.get_timestamp_period() as f64;
            let span =
                |a: u64, b: u64| Duration::from_nanos((b.saturating_sub(a) as f64 * period) as u64);
            chunk_times = ticks.chunks(2).map(|t| span(t[0], t[1])).collect();
            span(ticks[0], ticks[2 * timed - 1])
        });
        (out, gpu, chunk_times)
    };
    staging.destroy();
    Ok((
        out,
        RunTimes {
            kernel: kernel_time,
            gpu,
            chunks: chunk_times,
        },
    ))
}

/// Submits `encoder` and maps `staging` (`MAP_READ`, written by the submission) once the
/// device is done.
fn submit_and_map(
    ctx: &GpuContext,
    encoder: wgpu::CommandEncoder,
    staging: &wgpu::Buffer,
) -> Result<(), String> {
    let submission = ctx.queue.submit([encoder.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |result| {
        let _ = tx.send(result);
    });
    let waited = ctx.device.poll(wgpu::PollType::Wait {
        submission_index: Some(submission),
        timeout: None,
    });
    // The callback runs inside a successful wait; never block on it otherwise.
    match waited.map(|_| rx.try_recv()) {
        Err(e) => Err(format!("waiting for the device failed: {e}")),
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(e))) => Err(format!("mapping the readback buffer failed: {e}")),
        Ok(Err(_)) => Err("the map callback did not run during the wait".to_string()),
    }
}

#[cfg(test)]
mod tests;
