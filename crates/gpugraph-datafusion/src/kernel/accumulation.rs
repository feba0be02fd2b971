//! Running a [`Program`] over uploaded chunks: an [`Accumulation`] holds the compiled kernel
//! and the accumulators; its passes are encoded into one submission ([`run`]) or submitted
//! one by one as a scan hands over chunks ([`Accumulation::add`]), and it is read back once.

use std::time::{Duration, Instant};

use gpugraph_command::{wgpu, GpuContext};
use gpugraph_gpgpu::kernel::{parameter_buffer, Access, Kernel};

use super::{
    max_groups, private_copies, shader, storage, tuning, GpuChunk, KernelError, Params, MAX_SLOTS,
    PRIVATE_WORDS, WORKGROUP,
};
use crate::program::Program;

/// Times of one [`run`].
#[derive(Clone, Debug, Default)]
pub struct RunTimes {
    /// From submission until the accumulators are on the host (host clock; reading a few
    /// accumulator words back is part of it).
    pub kernel: Duration,
    /// The dispatches' time on the GPU, from the first chunk's start to the last one's end
    /// (timestamp queries; `None` where the device has none, or without rows); for passes
    /// submitted one by one ([`Accumulation::add`]), the sum of the timed passes.
    pub gpu: Option<Duration>,
    /// Each timed chunk's own GPU time (its compute pass), in order: every chunk up to 511,
    /// then the last one. Empty without timestamp queries.
    pub chunks: Vec<Duration>,
}

/// Runs `program` over `chunks` into `groups` groups, with `lookup` the lookup buffer of a
/// join (`program::LookupShape`); returns the accumulator words (group-major,
/// [`Program::words_per_group`] each). One submission and one wait.
pub fn run(
    ctx: &GpuContext,
    program: &Program,
    groups: usize,
    chunks: &[GpuChunk],
    lookup: Option<&wgpu::Buffer>,
) -> Result<(Vec<u32>, RunTimes), KernelError> {
    let nullable = chunks.iter().fold(0, |m, c| m | c.has_valid);
    let mut acc = Accumulation::new(ctx, program, groups, nullable)?;
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("gpugraph-datafusion-aggregate"),
        });
    for chunk in chunks {
        acc.encode(ctx, &mut encoder, chunk, lookup)?;
    }
    acc.finish(ctx, encoder)
}

/// Most chunks whose passes an [`Accumulation`] times one by one; later chunks reuse the last
/// timestamp pair, so it always holds the last chunk's pass.
const TIMED_CHUNKS: usize = 512;

/// An aggregation in progress: the compiled kernel and the accumulators that the passes of
/// [`Accumulation::encode`] (or [`Accumulation::add`], one submission per chunk, for chunks
/// that arrive while a scan goes on) add into, and that [`Accumulation::finish`] reads back.
pub struct Accumulation {
    kernel: Kernel,
    program_buffer: wgpu::Buffer,
    acc: wgpu::Buffer,
    placeholder: wgpu::Buffer,
    encoded: crate::program::Encoded,
    /// Slots that may hold nulls, as the shader was compiled for.
    nullable: u32,
    groups: usize,
    words_per_group: usize,
    words: usize,
    private: bool,
    copies: u32,
    copy_stride: u32,
    /// Timestamp queries (two per timed pass) and their resolve buffer.
    timer: Option<(wgpu::QuerySet, wgpu::Buffer)>,
    /// Chunks with rows encoded so far.
    passes: usize,
    /// Parameter buffers and bind groups of submitted passes.
    keep: Vec<(wgpu::Buffer, wgpu::BindGroup)>,
    /// Whether [`Accumulation::add`] submitted passes on their own.
    streamed: bool,
}

impl Accumulation {
    /// Compiles `program` for chunks whose null-carrying slots are among `nullable`, and
    /// creates the accumulators of `groups` groups with their initial values.
    pub fn new(
        ctx: &GpuContext,
        program: &Program,
        groups: usize,
        nullable: u32,
    ) -> Result<Self, KernelError> {
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
        let wgsl = shader(program, nullable);
        let kernel = Kernel::new(
            device,
            "gpugraph-datafusion-aggregate",
            &wgsl,
            "aggregate",
            &[
                Access::Uniform,
                Access::Read,
                Access::ReadWrite,
                Access::Read,
                Access::Read,
                Access::Read,
                Access::Read,
                Access::Read,
                Access::Read,
                Access::Read,
                Access::Read,
                Access::Read,
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
            let mut view = acc.slice(..).get_mapped_range_mut().map_err(|e| {
                KernelError::Readback(format!("mapping the accumulators failed: {e}"))
            })?;
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
        let timer = ctx.capabilities().timestamp_query.then(|| {
            let set = device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("gpugraph-datafusion-aggregate-time"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * TIMED_CHUNKS as u32,
            });
            let resolved = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("gpugraph-datafusion-aggregate-time"),
                size: 16 * TIMED_CHUNKS as u64,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            (set, resolved)
        });
        Ok(Self {
            kernel,
            program_buffer,
            acc,
            placeholder,
            encoded,
            nullable,
            groups,
            words_per_group: wpg,
            words,
            private,
            copies,
            copy_stride,
            timer,
            passes: 0,
            keep: Vec::new(),
            streamed: false,
        })
    }

    /// Encodes `chunk`'s pass (a compute pass of its own, timed) into `encoder`; `lookup` is
    /// the lookup buffer of a join. Nothing runs until the encoder is submitted.
    pub fn encode(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        chunk: &GpuChunk,
        lookup: Option<&wgpu::Buffer>,
    ) -> Result<(), KernelError> {
        if chunk.rows == 0 {
            return Ok(());
        }
        if chunk.has_valid & !self.nullable != 0 {
            return Err(KernelError::NullsNotCompiled {
                slots: chunk.has_valid & !self.nullable,
            });
        }
        let device = &ctx.device;
        let slot = self.passes.min(TIMED_CHUNKS - 1) as u32;
        self.passes += 1;
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("gpugraph-datafusion-aggregate"),
            timestamp_writes: self.timer.as_ref().map(|(set, _)| {
                wgpu::ComputePassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: Some(2 * slot),
                    end_of_pass_write_index: Some(2 * slot + 1),
                }
            }),
        });
        // Private accumulators pay a flush per workgroup: fewer, longer-running groups.
        let cap = if self.private {
            tuning("GPUGRAPH_AGG_WORKGROUPS", 1024).clamp(1, 65_535)
        } else {
            65_535
        };
        let workgroups = chunk.rows.div_ceil(WORKGROUP).min(cap);
        let params = Params {
            rows: chunk.rows,
            words_per_group: self.words_per_group as u32,
            groups: self.groups as u32,
            private_words: if self.private { self.words as u32 } else { 0 },
            row_stride: workgroups * WORKGROUP,
            has_valid: chunk.has_valid,
            constants: self.encoded.constants,
            kinds: self.encoded.kinds,
            copies: self.copies,
            copy_stride: self.copy_stride,
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
            self.program_buffer.as_entire_buffer_binding(),
            self.acc.as_entire_buffer_binding(),
        ];
        for s in 0..MAX_SLOTS {
            resources.push(
                chunk
                    .buffers
                    .get(s)
                    .unwrap_or(&self.placeholder)
                    .as_entire_buffer_binding(),
            );
        }
        resources.push(
            lookup
                .unwrap_or(&self.placeholder)
                .as_entire_buffer_binding(),
        );
        let group = self.kernel.bind_group(device, &resources);
        pass.set_pipeline(&self.kernel.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(workgroups, 1, 1);
        drop(pass);
        self.keep.push((params, group));
        Ok(())
    }

    /// [`Accumulation::encode`] for a chunk streamed in while the scan still runs (the
    /// caller submits `encoder`, without waiting).
    pub fn encode_streamed(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        chunk: &GpuChunk,
        lookup: Option<&wgpu::Buffer>,
    ) -> Result<(), KernelError> {
        self.encode(ctx, encoder, chunk, lookup)?;
        self.streamed = true;
        Ok(())
    }

    /// Chunks with rows added so far.
    pub fn passes(&self) -> usize {
        self.passes
    }

    /// Appends the readback to `encoder`, submits it and waits; returns the accumulator
    /// words (group-major) and the passes' GPU times.
    pub fn finish(
        self,
        ctx: &GpuContext,
        mut encoder: wgpu::CommandEncoder,
    ) -> Result<(Vec<u32>, RunTimes), KernelError> {
        let device = &ctx.device;
        let timed = self.passes.clamp(1, TIMED_CHUNKS);
        // The accumulators and the timestamps are copied to one staging buffer in the same
        // submission as the last dispatches, so a run costs one wait.
        let acc_bytes = self.words as u64 * 4;
        let ticks_at = acc_bytes.div_ceil(8) * 8;
        let ticks_bytes = 16 * timed as u64;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpugraph-datafusion-readback"),
            size: (ticks_at + ticks_bytes).div_ceil(16) * 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if acc_bytes > 0 {
            encoder.copy_buffer_to_buffer(&self.acc, 0, &staging, 0, acc_bytes);
        }
        let timer = self.timer.as_ref().filter(|_| self.passes > 0);
        if let Some((set, resolved)) = timer {
            encoder.resolve_query_set(set, 0..2 * timed as u32, resolved, 0);
            encoder.copy_buffer_to_buffer(resolved, 0, &staging, ticks_at, ticks_bytes);
        }
        let start = Instant::now();
        let mapped = submit_and_map(ctx, encoder, &staging);
        let kernel_time = start.elapsed();
        self.acc.destroy();
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
            let gpu = timer.map(|_| {
                let end = ticks_at as usize + ticks_bytes as usize;
                let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&view[ticks_at as usize..end]);
                let period = ctx.queue.get_timestamp_period() as f64;
                let span = |a: u64, b: u64| {
                    Duration::from_nanos((b.saturating_sub(a) as f64 * period) as u64)
                };
                chunk_times = ticks.chunks(2).map(|t| span(t[0], t[1])).collect();
                span(ticks[0], ticks[2 * timed - 1])
            });
            // Passes submitted one by one while a scan went on have its work between them:
            // their own times, summed, are the GPU time.
            let gpu = if self.streamed {
                gpu.map(|_| chunk_times.iter().sum())
            } else {
                gpu
            };
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
}

/// Submits `encoder` and maps `staging` (`MAP_READ`, written by the submission) once the
/// device is done.
pub(crate) fn submit_and_map(
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
