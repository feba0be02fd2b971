//! The aggregate kernel: uploads converted chunks and runs a
//! [`Program`](crate::program::Program) over them into per-group accumulators
//! (`accumulation.rs`).
//!
//! The program is compiled to WGSL (`compile.rs`) around the accumulation and flush code of
//! `aggregate.wgsl`, one pipeline per program shape from the device's `DeviceCache`: a query
//! repeated, or repeated with other literals, compiles nothing. The exact 64-bit and 96-bit
//! integer arithmetic lives in the template's reviewed helpers, and `program::run_cpu` is the
//! oracle the kernel tests compare against. The expression language's kernels
//! (`gpugraph-program`) compute in f32/u32 without SQL nulls, which the exact decimal sums
//! here need.

use bytemuck::{Pod, Zeroable};
use gpugraph_command::{wgpu, GpuContext};
use gpugraph_tables::upload::{FillFn, Source, Target};

use crate::convert::{Chunk, Part};
use crate::plan::MAX_SLOTS;
use crate::program::ProgramError;

mod accumulation;
mod compile;
pub mod keymap;
mod pack;
pub use accumulation::{run, Accumulation, RunTimes};
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
    /// A kernel's command graph was refused (a declaration the shader disagrees with, a
    /// dispatch past the device's limits).
    #[error("the kernel's command graph failed: {0}")]
    Graph(#[from] gpugraph_command::GraphError),
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
    /// A chunk with nulls in slots the kernel was compiled without null flags for (a
    /// planner bug).
    #[error(
        "a chunk carries nulls in column slots {slots:#b}, which the kernel was compiled without"
    )]
    NullsNotCompiled {
        /// The slots.
        slots: u32,
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

pub(crate) fn storage(
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

#[cfg(test)]
mod tests;
