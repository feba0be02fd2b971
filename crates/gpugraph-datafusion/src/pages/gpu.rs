//! A parsed row group on the GPU: [`stage`] writes its payloads, pieces and lookup tables
//! into the queue's staging memory for one device buffer on the worker that parsed it, and
//! [`PageChunk::encode`] records the expansion of each slot into a 32-bit column the
//! aggregate kernel binds, on the same worker.
//!
//! Why on the workers: on the H200 host (TPC-H SF 10 Q6 from Parquet, 2026-12-04) one thread
//! creating each row group's buffers, bind groups and submission took 1.46 ms a row group
//! while 16 decoders fed it: 84 ms of the scan's 103 ms after its first row group, with the
//! decoders waiting on it. The thread that receives a chunk now only submits it.

use std::ops::Range;

use gpugraph_command::{wgpu, GpuContext};
use gpugraph_gpgpu::kernel::{grid_for, Binding, Kernel};

use super::HostChunk;
use crate::kernel::{GpuChunk, KernelError, SlotLayout};

/// One slot's place in the staging buffer.
#[derive(Clone, Debug)]
struct Staged {
    region: Range<u64>,
    pieces: Range<u64>,
    /// The words the slot's indices are looked up in.
    table: Range<u64>,
}

/// A row group staged for the GPU (see the module docs).
#[derive(Debug)]
pub struct PageChunk {
    /// Rows.
    pub rows: usize,
    /// The device buffer the payloads and pieces are queued for.
    input: wgpu::Buffer,
    slots: Vec<Staged>,
    /// Bytes staged.
    pub bytes: u64,
}

/// Stages `chunk` into the queue's staging memory for one new device buffer (see the module
/// docs), with `tables`: per slot, the words its indices look up (the dictionary's for
/// value slots, the query's codes for keys).
pub fn stage(
    ctx: &GpuContext,
    chunk: HostChunk,
    tables: &[Vec<u32>],
) -> Result<PageChunk, KernelError> {
    let align = ctx
        .device
        .limits()
        .min_storage_buffer_offset_alignment
        .max(16) as u64;
    let up = |x: u64| x.div_ceil(align) * align;
    let mut at = 0u64;
    let mut slots = Vec::new();
    for (s, c) in chunk.columns.iter().enumerate() {
        let region = at..at + c.region_len as u64;
        at = up(region.end);
        let pieces = at..at + (c.pieces.len() * std::mem::size_of::<super::Piece>()) as u64;
        at = up(pieces.end);
        // A binding is never empty: a slot without a table still gets a word.
        let words = tables.get(s).map_or(0, |t| t.len()).max(1);
        let table = at..at + 4 * words as u64;
        at = up(table.end);
        slots.push(Staged {
            region,
            pieces,
            table,
        });
    }
    let size = at.max(align);
    let input = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gpugraph-datafusion-pages"),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    // The queue's own staging memory, written here and copied at the next submission (the
    // exec's expansion of this chunk): unlike a buffer mapped at creation, wgpu does not
    // zero it first, so every byte is written once. Bytes between slots stay unwritten;
    // no binding covers them.
    let mut view = std::num::NonZeroU64::new(size)
        .and_then(|n| ctx.queue.write_buffer_with(&input, 0, n))
        .ok_or_else(|| KernelError::Stage {
            what: "a row group's pages",
            bytes: size,
            reason: "the queue gave no staging memory".into(),
        })?;
    for (c, s) in chunk.columns.iter().zip(&slots) {
        let base = s.region.start as usize;
        c.write_region(|at, bytes| {
            view.slice(base + at..base + at + bytes.len())
                .copy_from_slice(bytes)
        });
        view.slice(s.pieces.start as usize..s.pieces.end as usize)
            .copy_from_slice(bytemuck::cast_slice(&c.pieces));
    }
    for (s, staged) in slots.iter().enumerate() {
        let words = tables.get(s).map_or(&[0u32][..], |t| t.as_slice());
        let words = if words.is_empty() { &[0u32][..] } else { words };
        view.slice(staged.table.start as usize..staged.table.end as usize)
            .copy_from_slice(bytemuck::cast_slice(words));
    }
    drop(view);
    Ok(PageChunk {
        rows: chunk.rows,
        input,
        slots,
        bytes: size,
    })
}

/// The expand kernels' shared error word (see `decode.wgsl`), read once after the query
/// (clones share the word).
#[derive(Clone, Debug)]
pub struct DecodeStatus {
    buffer: wgpu::Buffer,
}

impl DecodeStatus {
    /// A cleared status word.
    pub fn new(ctx: &GpuContext) -> Self {
        // Zeroed at creation (wgpu clears new buffers).
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpugraph-datafusion-pages-status"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Self { buffer }
    }

    /// Whether every expansion so far found its indices within their dictionaries (waits
    /// for the device).
    pub fn check(&self, ctx: &GpuContext) -> Result<(), KernelError> {
        let readback = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpugraph-datafusion-pages-status-readback"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("gpugraph-datafusion-pages-status"),
            });
        encoder.copy_buffer_to_buffer(&self.buffer, 0, &readback, 0, 16);
        let submission = ctx.queue.submit([encoder.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        readback.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(submission),
                timeout: None,
            })
            .map_err(|e| KernelError::Readback(format!("waiting for the device failed: {e}")))?;
        match rx.try_recv() {
            Ok(Ok(())) => {}
            _ => {
                return Err(KernelError::Readback(
                    "mapping the page status failed".into(),
                ))
            }
        }
        let word = {
            let view = readback
                .slice(..)
                .get_mapped_range()
                .map_err(|e| KernelError::Readback(e.to_string()))?;
            u32::from_le_bytes([view[0], view[1], view[2], view[3]])
        };
        readback.destroy();
        if word != 0 {
            return Err(KernelError::Readback(
                "a Parquet page holds a dictionary index past its dictionary (a corrupt file)"
                    .into(),
            ));
        }
        Ok(())
    }
}

fn kernel(device: &wgpu::Device) -> Kernel {
    Kernel::new(
        device,
        "gpugraph-datafusion-pages-expand",
        include_str!("decode.wgsl"),
        "expand",
        &[
            Binding::StorageRead,
            Binding::StorageRead,
            Binding::StorageRead,
            Binding::StorageReadWrite,
            Binding::StorageReadWrite,
        ],
        &[],
    )
}

impl PageChunk {
    /// [`Self::encode`], submitted: the returned chunk's columns are ready for any later
    /// submission.
    pub fn expand(self, ctx: &GpuContext, status: &DecodeStatus) -> Result<GpuChunk, KernelError> {
        let (chunk, commands) = self.encode(ctx, status)?;
        ctx.queue.submit([commands]);
        Ok(chunk)
    }

    /// Records the expansion of every slot through its staged table; the columns are ready
    /// once the returned commands are submitted (the staged bytes travel with the first
    /// submission after [`stage`], which this one or an earlier one is).
    pub fn encode(
        self,
        ctx: &GpuContext,
        status: &DecodeStatus,
    ) -> Result<(GpuChunk, wgpu::CommandBuffer), KernelError> {
        let device = &ctx.device;
        let kernel = kernel(device);
        let input = &self.input;
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("gpugraph-datafusion-pages-expand"),
        });
        let max = device.limits().max_compute_workgroups_per_dimension;
        let mut buffers = Vec::new();
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("gpugraph-datafusion-pages-expand"),
                timestamp_writes: None,
            });
            for staged in &self.slots {
                let out = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("gpugraph-datafusion-column"),
                    size: (self.rows as u64 * 4).max(16).div_ceil(16) * 16,
                    // COPY_SRC: tests read the expanded columns back.
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                let pieces = (staged.pieces.end - staged.pieces.start) / 32;
                if pieces > 0 {
                    let range = |r: &Range<u64>| wgpu::BufferBinding {
                        buffer: input,
                        offset: r.start,
                        size: std::num::NonZeroU64::new(r.end - r.start),
                    };
                    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some("gpugraph-datafusion-pages-expand"),
                        layout: &kernel.layout,
                        entries: &[
                            entry(0, range(&staged.pieces)),
                            entry(1, range(&staged.region)),
                            entry(2, range(&staged.table)),
                            entry(3, out.as_entire_buffer_binding()),
                            entry(4, status.buffer.as_entire_buffer_binding()),
                        ],
                    });
                    let grid = grid_for(pieces, max).ok_or(KernelError::ChunkTooLarge {
                        rows: self.rows,
                        max: max as usize * max as usize * 256,
                    })?;
                    kernel.dispatch(&mut pass, &group, grid);
                }
                buffers.push(out);
            }
        }
        let chunk = GpuChunk {
            rows: self.rows as u32,
            layouts: vec![SlotLayout::new(self.rows, None); buffers.len()],
            buffers,
            has_valid: 0,
        };
        Ok((chunk, encoder.finish()))
    }
}

fn entry(binding: u32, buffer: wgpu::BufferBinding<'_>) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: wgpu::BindingResource::Buffer(buffer),
    }
}
