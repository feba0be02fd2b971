//! A parsed row group on the GPU: [`stage`] writes its payloads and pieces into the queue's
//! staging memory for one device buffer on the worker that parsed it (so staging runs on
//! every decoding core, not behind one upload lock), and [`PageChunk::expand`] submits the
//! copy with the expansion of each slot into a 32-bit column the aggregate kernel binds.

use std::ops::Range;

use gpugraph_command::{wgpu, GpuContext};
use gpugraph_gpgpu::kernel::{grid_for, parameter_buffer, Binding, Kernel};

use super::{HostChunk, Table};
use crate::convert::ColumnStats;
use crate::kernel::{GpuChunk, KernelError, SlotLayout};

/// One slot's place in the staging buffer.
#[derive(Clone, Debug)]
struct Staged {
    region: Range<u64>,
    pieces: Range<u64>,
}

/// A row group staged for the GPU (see the module docs).
#[derive(Debug)]
pub struct PageChunk {
    /// Rows.
    pub rows: usize,
    /// The device buffer the payloads and pieces are queued for.
    input: wgpu::Buffer,
    slots: Vec<Staged>,
    /// Per slot: its dictionary.
    pub tables: Vec<Table>,
    /// Per slot: bounds of its values (value slots).
    pub stats: Vec<ColumnStats>,
    /// Bytes staged.
    pub bytes: u64,
}

/// Stages `chunk` into a new mapped upload buffer (see the module docs).
pub fn stage(ctx: &GpuContext, chunk: HostChunk) -> Result<PageChunk, KernelError> {
    let align = ctx
        .device
        .limits()
        .min_storage_buffer_offset_alignment
        .max(16) as u64;
    let up = |x: u64| x.div_ceil(align) * align;
    let mut at = 0u64;
    let mut slots = Vec::new();
    for c in &chunk.columns {
        let region = at..at + c.region_len as u64;
        at = up(region.end);
        let pieces = at..at + (c.pieces.len() * std::mem::size_of::<super::Piece>()) as u64;
        at = up(pieces.end);
        slots.push(Staged { region, pieces });
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
    drop(view);
    Ok(PageChunk {
        rows: chunk.rows,
        input,
        slots,
        tables: chunk.columns.iter().map(|c| c.table.clone()).collect(),
        stats: chunk.columns.iter().map(|c| c.stats).collect(),
        bytes: size,
    })
}

/// The expand kernels' shared error word (see `decode.wgsl`), read once after the query.
#[derive(Debug)]
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
    /// Uploads the chunk and expands every slot through `tables` (per slot, its words: the
    /// dictionary's for value slots, the query's codes for keys), submitting the work; the
    /// returned chunk's columns are ready for any later submission.
    pub fn expand(
        self,
        ctx: &GpuContext,
        tables: &[Vec<u32>],
        status: &DecodeStatus,
    ) -> Result<GpuChunk, KernelError> {
        let device = &ctx.device;
        let kernel = kernel(device);
        let input = &self.input;
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("gpugraph-datafusion-pages-expand"),
        });
        let max = device.limits().max_compute_workgroups_per_dimension;
        let mut buffers = Vec::new();
        let mut keep = Vec::new();
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("gpugraph-datafusion-pages-expand"),
                timestamp_writes: None,
            });
            for (s, staged) in self.slots.iter().enumerate() {
                let out = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("gpugraph-datafusion-column"),
                    size: (self.rows as u64 * 4).max(16).div_ceil(16) * 16,
                    // COPY_SRC: tests read the expanded columns back.
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                let pieces = (staged.pieces.end - staged.pieces.start) / 32;
                if pieces > 0 {
                    let words = tables.get(s).map_or(&[][..], |t| t.as_slice());
                    let table = parameter_buffer(
                        device,
                        "gpugraph-datafusion-pages-table",
                        bytemuck::cast_slice(words),
                    );
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
                            entry(2, table.as_entire_buffer_binding()),
                            entry(3, out.as_entire_buffer_binding()),
                            entry(4, status.buffer.as_entire_buffer_binding()),
                        ],
                    });
                    let grid = grid_for(pieces, max).ok_or(KernelError::ChunkTooLarge {
                        rows: self.rows,
                        max: max as usize * max as usize * 256,
                    })?;
                    kernel.dispatch(&mut pass, &group, grid);
                    keep.push(table);
                }
                buffers.push(out);
            }
        }
        // The queued page writes go first: this submission copies them.
        ctx.queue.submit([encoder.finish()]);
        Ok(GpuChunk {
            rows: self.rows as u32,
            layouts: vec![SlotLayout::new(self.rows, None); buffers.len()],
            buffers,
            has_valid: 0,
        })
    }
}

fn entry(binding: u32, buffer: wgpu::BufferBinding<'_>) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: wgpu::BindingResource::Buffer(buffer),
    }
}
