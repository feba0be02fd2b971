//! gpugraph-host: one-shot calls of the gpgpu primitives on host slices — upload the inputs,
//! build and run one graph, wait, read the results back.
//!
//! This is the convenience layer for callers that hold their data on the CPU and want one
//! answer (the CLI's file commands, the Python package); GPU-resident pipelines build their
//! own graphs from the gpgpu algorithms instead. Every function takes the caller's
//! [`GpuContext`], blocks until the GPU finished, and reports wgpu validation and
//! out-of-memory errors of its own work as [`HostError::Device`] (through error scopes, so
//! a device-wide error handler sees nothing of them). Empty inputs return empty results
//! without GPU work.

#![warn(missing_docs)]

mod ops;

pub use ops::{
    argsort, compact, cumsum, fft2, group_by_mean, histogram, sort, sort_words, GroupMeans,
    HistogramCounts,
};

use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    BufferDescriptor, CommandGraph, DataView, EncodeOptions, GpuContext, GraphError, VectorFormat,
};
use gpugraph_gpgpu::AlgorithmError;
use gpugraph_tables::TableError;

/// Errors of the one-shot calls.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The primitive refused its configuration or views.
    #[error(transparent)]
    Algorithm(#[from] AlgorithmError),
    /// Building or encoding the graph failed.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// Uploading or reading back failed.
    #[error(transparent)]
    Table(#[from] TableError),
    /// wgpu reported an error (validation, out of memory, a lost device) during `during`.
    #[error("GPU error while {during}: {message}")]
    Device {
        /// The step: "running sort", ...
        during: String,
        /// wgpu's message.
        message: String,
    },
    /// Two inputs that must be aligned have different lengths.
    #[error("{what} has {got} elements but {other} has {expected}; they must be aligned")]
    Length {
        /// The misaligned input.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The input it must match.
        other: &'static str,
        /// That input's length.
        expected: usize,
    },
    /// An input has more elements than the primitive addresses (32-bit row indices).
    #[error("{what} has {got} elements; at most {max} are supported")]
    TooLarge {
        /// The input.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The largest supported length.
        max: u64,
    },
    /// A 2-D FFT side is not a power of two.
    #[error("fft2: the {what} is {got}; both sides must be powers of two (1, 2, 4, ...)")]
    NotPowerOfTwo {
        /// "height" or "width".
        what: &'static str,
        /// The side.
        got: usize,
    },
}

/// The largest row count any call takes: row ids and counts are 32-bit.
pub const MAX_ROWS: u64 = u32::MAX as u64;

fn check_rows(what: &'static str, len: usize) -> Result<u64, HostError> {
    if len as u64 > MAX_ROWS {
        return Err(HostError::TooLarge {
            what,
            got: len,
            max: MAX_ROWS,
        });
    }
    Ok(len as u64)
}

fn check_aligned(
    (what, got): (&'static str, usize),
    (other, expected): (&'static str, usize),
) -> Result<(), HostError> {
    if got != expected {
        return Err(HostError::Length {
            what,
            got,
            other,
            expected,
        });
    }
    Ok(())
}

/// A STORAGE | COPY_SRC | COPY_DST buffer of at least 4 bytes holding `bytes` (a multiple of
/// 4 long), written through bounded staging before the next submission.
fn upload(ctx: &GpuContext, label: &str, bytes: &[u8]) -> Result<wgpu::Buffer, HostError> {
    let buffer = output(ctx, label, bytes.len() as u64);
    if !bytes.is_empty() {
        gpugraph_tables::upload::write_parts(&ctx.device, &ctx.queue, &buffer, &[(0, bytes)])?;
    }
    Ok(buffer)
}

/// A STORAGE | COPY_SRC | COPY_DST buffer of `bytes` bytes (at least 4, zero-initialized).
fn output(ctx: &GpuContext, label: &str, bytes: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(4).next_multiple_of(4),
        usage: U::STORAGE | U::COPY_SRC | U::COPY_DST,
        mapped_at_creation: false,
    })
}

/// Imports `buffer` whole into `graph` as `id`: a packed `format` view of its first `rows`.
fn import(
    graph: &mut CommandGraph,
    id: &str,
    buffer: &wgpu::Buffer,
    format: VectorFormat,
    rows: u64,
) -> Result<DataView, HostError> {
    let h = graph.import_buffer(
        BufferDescriptor::new(id, buffer.size(), buffer.usage()),
        buffer,
    )?;
    Ok(graph.create_packed_view(h, format, rows)?)
}

/// Compiles, encodes and submits `graph` once and waits for the GPU; wgpu errors raised on
/// the way are returned, naming `what`.
fn run(ctx: &GpuContext, graph: CommandGraph, what: &str) -> Result<(), HostError> {
    let scopes = Scopes::push(ctx);
    let result = (|| -> Result<(), HostError> {
        let mut compiled = graph.compile()?;
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
        compiled.encode(&mut enc, &EncodeOptions::default())?;
        let index = ctx.queue.submit([enc.finish()]);
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: None,
            })
            .map_err(|e| HostError::Device {
                during: format!("waiting for {what}"),
                message: e.to_string(),
            })?;
        Ok(())
    })();
    // A wgpu error explains a failure better than what followed from it.
    scopes.pop(&format!("running {what}"))?;
    result
}

/// READBACK (submits and blocks): the first `len` 32-bit words of `buffer`.
fn read_words(ctx: &GpuContext, buffer: &wgpu::Buffer, len: u64) -> Result<Vec<u32>, HostError> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let scopes = Scopes::push(ctx);
    let bytes = gpugraph_tables::readback::read_bytes(&ctx.device, &ctx.queue, buffer, 0, len * 4);
    scopes.pop("reading results back")?;
    Ok(bytemuck::pod_collect_to_vec(&bytes?))
}

/// Validation and out-of-memory error scopes around one step.
struct Scopes {
    validation: wgpu::ErrorScopeGuard,
    memory: wgpu::ErrorScopeGuard,
}

impl Scopes {
    fn push(ctx: &GpuContext) -> Self {
        let validation = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let memory = ctx.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        Self { validation, memory }
    }

    fn pop(self, during: &str) -> Result<(), HostError> {
        let memory = pollster::block_on(self.memory.pop());
        let validation = pollster::block_on(self.validation.pop());
        match memory.or(validation) {
            Some(e) => Err(HostError::Device {
                during: during.to_string(),
                message: e.to_string(),
            }),
            None => Ok(()),
        }
    }
}
