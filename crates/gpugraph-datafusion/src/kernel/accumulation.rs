//! Running a [`Program`] over uploaded chunks: an [`Accumulation`] holds the program's shader
//! and the accumulators; its passes (dispatch nodes of command graphs) are encoded into one
//! submission ([`run`]) or into the scan's submissions as it hands over chunks
//! ([`Accumulation::encode_streamed`]), and it is read back once, through the tables crate's
//! readback, in the submission of the last passes.

use std::time::{Duration, Instant};

use gpugraph_command::wgpu::util::DeviceExt;
use gpugraph_command::{
    wgpu, Access, Binding, BufferHandle, CommandGraph, CompiledGraph, DispatchNode, EncodeOptions,
    GpuContext, GraphError, Grid, ShaderSource,
};
use gpugraph_tables::readback;

use super::{
    max_groups, private_copies, shader, tuning, GpuChunk, KernelError, Params, MAX_SLOTS,
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
    /// streamed in with a scan ([`Accumulation::encode_streamed`]), the sum of the passes.
    pub gpu: Option<Duration>,
    /// Each chunk's own GPU time (its compute pass), in order. Empty without timestamp
    /// queries.
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
    let chunks: Vec<&GpuChunk> = chunks.iter().collect();
    acc.encode(ctx, &mut encoder, &chunks, lookup)?;
    acc.finish(ctx, encoder)
}

/// An aggregation in progress: the program's shader and the accumulators that the passes of
/// [`Accumulation::encode`] (or [`Accumulation::encode_streamed`], for chunks that arrive
/// while a scan goes on) add into, and that [`Accumulation::finish`] reads back.
///
/// Each call records one command graph: a dispatch node per chunk (`aggregate {i}`, its
/// parameters node-owned, the program and accumulators imported, unbound column slots
/// placeholders), compiled (the pipeline from the device cache: one per program shape) and
/// encoded into the caller's encoder, timed per node where the device has timestamp queries.
/// The compiled graphs are kept until [`Accumulation::finish`] reads their timings.
pub struct Accumulation {
    shader: ShaderSource,
    program_buffer: wgpu::Buffer,
    acc: wgpu::Buffer,
    encoded: crate::program::Encoded,
    /// Slots that may hold nulls, as the shader was compiled for.
    nullable: u32,
    groups: usize,
    words_per_group: usize,
    words: usize,
    private: bool,
    copies: u32,
    copy_stride: u32,
    /// Whether passes are timed (the device has timestamp queries).
    timed: bool,
    /// Chunks with rows encoded so far.
    passes: usize,
    /// The graphs encoded so far (their parameter buffers and bind groups, and timings).
    graphs: Vec<CompiledGraph>,
    /// Whether [`Accumulation::encode_streamed`] recorded passes.
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
        let shader = shader(program, nullable);
        let mut program_words = encoded.words.clone();
        program_words.resize(program_words.len().max(4).div_ceil(4) * 4, 0);
        let program_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("gpugraph-datafusion-program"),
            contents: bytemuck::cast_slice(&program_words),
            usage: wgpu::BufferUsages::STORAGE,
        });
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
        let private = (words | 1) <= PRIVATE_WORDS;
        let (copies, copy_stride) = if private {
            let (copies, stride) = private_copies(words);
            (copies.min(tuning("GPUGRAPH_AGG_COPIES", copies)), stride)
        } else {
            (0, 0)
        };
        Ok(Self {
            shader,
            program_buffer,
            acc,
            encoded,
            nullable,
            groups,
            words_per_group: wpg,
            words,
            private,
            copies,
            copy_stride,
            timed: ctx.capabilities().timestamp_query,
            passes: 0,
            graphs: Vec::new(),
            streamed: false,
        })
    }

    /// Encodes the passes of `chunks` (one dispatch node each, in order, each its own timed
    /// compute pass where the device times passes) into `encoder`; `lookup` is the lookup
    /// buffer of a join. Nothing runs until the encoder is submitted.
    pub fn encode(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        chunks: &[&GpuChunk],
        lookup: Option<&wgpu::Buffer>,
    ) -> Result<(), KernelError> {
        let live: Vec<&GpuChunk> = chunks.iter().copied().filter(|c| c.rows > 0).collect();
        if live.is_empty() {
            return Ok(());
        }
        if let Some(c) = live.iter().find(|c| c.has_valid & !self.nullable != 0) {
            return Err(KernelError::NullsNotCompiled {
                slots: c.has_valid & !self.nullable,
            });
        }
        let mut graph = CommandGraph::new("gpugraph-datafusion aggregate", &ctx.device);
        let acc = import(&mut graph, "accumulators", &self.acc)?;
        let program = import(&mut graph, "program", &self.program_buffer)?;
        let lookup = lookup
            .map(|l| import(&mut graph, "lookup", l))
            .transpose()?;
        for (i, chunk) in live.iter().enumerate() {
            let node = self.node(&mut graph, self.passes + i, chunk, [acc, program], lookup)?;
            graph.add_dispatch_node(node)?;
        }
        let mut compiled = graph.compile()?;
        compiled.encode(
            encoder,
            &EncodeOptions {
                overrides: &[],
                profile: self.timed,
            },
        )?;
        self.passes += live.len();
        self.graphs.push(compiled);
        Ok(())
    }

    /// The dispatch node of pass `pass` over `chunk`.
    fn node(
        &self,
        graph: &mut CommandGraph,
        pass: usize,
        chunk: &GpuChunk,
        [acc, program]: [BufferHandle; 2],
        lookup: Option<BufferHandle>,
    ) -> Result<DispatchNode, KernelError> {
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
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::handle(1, program, Access::Read),
            Binding::handle(2, acc, Access::ReadWrite),
        ];
        for s in 0..MAX_SLOTS {
            let slot = 3 + s as u32;
            bindings.push(match chunk.buffers.get(s) {
                Some(b) => {
                    let h = import(graph, &format!("pass {pass} slot {s}"), b)?;
                    Binding::handle(slot, h, Access::Read)
                }
                None => Binding::placeholder(slot, Access::Read),
            });
        }
        let slot = 3 + MAX_SLOTS as u32;
        bindings.push(match lookup {
            Some(h) => Binding::handle(slot, h, Access::Read),
            None => Binding::placeholder(slot, Access::Read),
        });
        Ok(DispatchNode::new(
            format!("aggregate {pass}"),
            self.shader.clone(),
            "aggregate",
            bindings,
            Grid::Workgroups([workgroups, 1, 1]),
        )
        .private_bind_group())
    }

    /// [`Accumulation::encode`] for chunks streamed in while the scan still runs (the
    /// caller submits `encoder`, without waiting).
    pub fn encode_streamed(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        chunks: &[&GpuChunk],
        lookup: Option<&wgpu::Buffer>,
    ) -> Result<(), KernelError> {
        self.encode(ctx, encoder, chunks, lookup)?;
        self.streamed = true;
        Ok(())
    }

    /// Chunks with rows added so far.
    pub fn passes(&self) -> usize {
        self.passes
    }

    /// Submits `encoder` with the accumulators' readback (one submission, one wait);
    /// returns the accumulator words (group-major) and the passes' GPU times.
    pub fn finish(
        self,
        ctx: &GpuContext,
        encoder: wgpu::CommandEncoder,
    ) -> Result<(Vec<u32>, RunTimes), KernelError> {
        // The accumulators and the passes' timestamps come back in the submission of the last
        // passes, so a run costs one wait.
        let acc_bytes = self.words as u64 * 4;
        let mut ranges = vec![(&self.acc, 0, acc_bytes)];
        ranges.extend(
            self.graphs
                .iter()
                .filter_map(CompiledGraph::timestamp_range)
                .map(|(buffer, bytes)| (buffer, 0, bytes)),
        );
        let start = Instant::now();
        let read = readback::submit_and_read(&ctx.device, &ctx.queue, encoder, &ranges);
        let kernel_time = start.elapsed();
        drop(ranges);
        self.acc.destroy();
        let mut read = read?.into_iter();
        let out: Vec<u32> = bytemuck::pod_collect_to_vec(&read.next().unwrap_or_default());
        let mut spans = Vec::new();
        for (graph, ticks) in self
            .graphs
            .iter()
            .filter(|g| g.timestamp_range().is_some())
            .zip(read)
        {
            for t in graph.timings_from(&ctx.queue, &ticks)? {
                if let (Some(start), Some(ns)) = (t.start_ns, t.gpu_ns) {
                    spans.push((start, ns));
                }
            }
        }
        let time = |ns: f64| Duration::from_nanos(ns.max(0.0) as u64);
        let chunks: Vec<Duration> = spans.iter().map(|&(_, ns)| time(ns)).collect();
        // Passes recorded as a scan handed them over have its work between them: their own
        // times, summed, are the GPU time; otherwise the first pass's start to the last's end.
        let gpu = match (spans.first(), spans.last()) {
            (Some(_), _) if self.streamed => Some(chunks.iter().sum()),
            (Some(&(first, _)), Some(&(last, ns))) => Some(time(last + ns - first)),
            _ => None,
        };
        Ok((
            out,
            RunTimes {
                kernel: kernel_time,
                gpu,
                chunks,
            },
        ))
    }
}

/// `buffer` under `id` in `graph` (the handle it already has there, if imported).
fn import(
    graph: &mut CommandGraph,
    id: &str,
    buffer: &wgpu::Buffer,
) -> Result<BufferHandle, GraphError> {
    graph.import_buffer_once(id, buffer, wgpu::BufferUsages::STORAGE)
}
