//! A parsed row group on the GPU: [`read_staged`] parses one column chunk straight into an
//! upload slab (`upload.rs`), page by page on the worker that decompressed it, and
//! [`PageChunk::encode`] records the copies out of the slabs and the expansion of each slot
//! into a 32-bit column the aggregate kernel binds (a dispatch node per slot of one command
//! graph, encoded after the copies), on the worker that completes the row group.
//!
//! Why straight into staging: holding a row group's decompressed pages until its last
//! column was parsed cost a second pass over cold memory, and fresh allocations for each
//! page (TPC-H SF 10 Q6 from Parquet on the H200 host, 2026-12-04: 1.23 s of reading and
//! 0.46 s of staging summed over 16 threads for 58 row groups). Why the expansion on the
//! workers: one thread creating each row group's buffers, bind groups and submission took
//! 1.46 ms a row group while 16 decoders fed it, 84 ms of the scan's 103 ms after its first
//! row group. The thread that receives a chunk now only submits it.

use std::ops::Range;

use gpugraph_command::{
    grid_for, wgpu, Access, Binding, CommandGraph, CompiledGraph, DataViewDescriptor, DispatchNode,
    EncodeOptions, GpuContext, GraphError, Grid, ShaderSource, VectorFormat,
};
use gpugraph_tables::readback;

use super::upload::{Slab, UploadPool};
use super::{read_column, region_bound, HostChunk, HostColumn, PageScan, RegionSink, RowGroupTask};
use crate::convert::Misfit;
use crate::kernel::{GpuChunk, KernelError, SlotLayout};

/// One column slot of a row group queued for the GPU: its byte region in one upload slab,
/// its pieces and lookup table in another; the slabs go back to `pool` once the row group's
/// expansion has run.
#[derive(Debug)]
pub struct StagedColumn {
    region: Slab,
    /// Bytes of `region` written (4-aligned).
    region_len: u64,
    meta: Slab,
    pool: UploadPool,
    pieces: Range<u64>,
    table: Range<u64>,
    /// Bytes staged.
    pub bytes: u64,
    /// Where its staging time went.
    pub times: StageTimes,
}

/// Where a column chunk's staging time went, beside decompressing and parsing its pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageTimes {
    /// Writing the region into upload memory.
    pub write: std::time::Duration,
    /// Taking its slabs from the pool (creating them when none is idle).
    pub alloc: std::time::Duration,
    /// Reading the column chunk from its file.
    pub read: std::time::Duration,
}

impl std::ops::Add for StageTimes {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            write: self.write + o.write,
            alloc: self.alloc + o.alloc,
            read: self.read + o.read,
        }
    }
}

/// A row group staged for the GPU (see the module docs).
#[derive(Debug)]
pub struct PageChunk {
    /// Rows.
    pub rows: usize,
    /// Per slot (values, then keys).
    columns: Vec<StagedColumn>,
}

/// A [`RegionSink`] over a slab's upload memory, timing its writes.
struct Staging(wgpu::BufferViewMut, std::time::Duration);

impl RegionSink for Staging {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        let start = std::time::Instant::now();
        self.0.slice(at..at + bytes.len()).copy_from_slice(bytes);
        self.1 += start.elapsed();
    }
}

/// Reads and parses column `slot` of `task`'s row group into slabs of `pool` (see the
/// module docs); `table` gives the words the parsed column's indices look up (its
/// dictionary's, or the query's codes for it), or a misfit. A read error is the outer
/// error; a page the GPU cannot expand, or a table's misfit, the inner one.
pub fn read_staged(
    ctx: &GpuContext,
    pool: &UploadPool,
    scan: &PageScan,
    task: &RowGroupTask,
    slot: usize,
    table: impl FnOnce(&HostColumn) -> Result<Vec<u32>, Misfit>,
) -> Result<Result<StagedColumn, Misfit>, String> {
    let started = std::time::Instant::now();
    let region = pool.acquire(ctx, region_bound(scan, task, slot) as u64);
    let view = region.view()?;
    let mut alloc = started.elapsed();
    let mut sink = Staging(view, std::time::Duration::ZERO);
    let column = match read_column(scan, task, slot, &mut sink)? {
        Ok(c) => c,
        Err(misfit) => return Ok(Err(misfit)),
    };
    let write = sink.1;
    drop(sink);
    let words = match table(&column) {
        Ok(w) => w,
        Err(misfit) => return Ok(Err(misfit)),
    };
    let started = std::time::Instant::now();
    let staged = StagedColumn::with_meta(ctx, pool, region, &column, &words)?;
    alloc += started.elapsed();
    let times = StageTimes {
        write,
        alloc,
        read: column.read_time,
    };
    Ok(Ok(StagedColumn { times, ..staged }))
}

impl StagedColumn {
    /// `column`'s pieces and `words` staged beside its `region` slab.
    fn with_meta(
        ctx: &GpuContext,
        pool: &UploadPool,
        region: Slab,
        column: &HostColumn,
        words: &[u32],
    ) -> Result<Self, String> {
        let align = ctx
            .device
            .limits()
            .min_storage_buffer_offset_alignment
            .max(16) as u64;
        let pieces = 0..std::mem::size_of_val(column.pieces.as_slice()) as u64;
        let start = pieces.end.div_ceil(align) * align;
        // A binding is never empty: a slot without a table still gets a word.
        let table = start..start + 4 * words.len().max(1) as u64;
        let meta = pool.acquire(ctx, table.end);
        let mut view = meta.view()?;
        view.slice(..pieces.end as usize)
            .copy_from_slice(bytemuck::cast_slice(&column.pieces));
        let words = if words.is_empty() { &[0u32][..] } else { words };
        view.slice(table.start as usize..table.end as usize)
            .copy_from_slice(bytemuck::cast_slice(words));
        drop(view);
        let region_len = (column.region_len as u64).div_ceil(4) * 4;
        Ok(Self {
            times: StageTimes::default(),
            bytes: region_len + table.end,
            region,
            region_len,
            meta,
            pool: pool.clone(),
            pieces,
            table,
        })
    }
}

/// Stages a row group parsed into memory (tests and tools) in slabs of `pool`: each slot's
/// region, pieces and `tables` entry, as [`read_staged`] does while it parses.
pub fn stage(
    ctx: &GpuContext,
    pool: &UploadPool,
    chunk: HostChunk,
    tables: &[Vec<u32>],
) -> Result<PageChunk, String> {
    let mut columns = Vec::new();
    for (s, (column, bytes)) in chunk.columns.iter().zip(&chunk.regions).enumerate() {
        // The copy takes the column's stated region, which may run past the bytes given.
        let region = pool.acquire(ctx, bytes.len().max(column.region_len) as u64);
        let mut view = region.view()?;
        view.slice(..bytes.len()).copy_from_slice(bytes);
        drop(view);
        let words = tables.get(s).map_or(&[][..], |t| t.as_slice());
        columns.push(StagedColumn::with_meta(ctx, pool, region, column, words)?);
    }
    Ok(PageChunk::new(chunk.rows, columns))
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
        let bytes = readback::read_bytes(&ctx.device, &ctx.queue, &self.buffer, 0, 4)?;
        let word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if word != 0 {
            return Err(KernelError::Readback(
                "a Parquet page holds a dictionary index past its dictionary (a corrupt file)"
                    .into(),
            ));
        }
        Ok(())
    }
}

impl PageChunk {
    /// Row group of `rows` rows from its staged columns (values, then keys).
    pub fn new(rows: usize, columns: Vec<StagedColumn>) -> Self {
        Self { rows, columns }
    }

    /// Bytes staged.
    pub fn bytes(&self) -> u64 {
        self.columns.iter().map(|c| c.bytes).sum()
    }

    /// Where its columns' staging time went.
    pub fn times(&self) -> StageTimes {
        self.columns
            .iter()
            .fold(StageTimes::default(), |t, c| t + c.times)
    }

    /// [`Self::encode`], submitted: the returned chunk's columns are ready for any later
    /// submission.
    pub fn expand(self, ctx: &GpuContext, status: &DecodeStatus) -> Result<GpuChunk, KernelError> {
        let (chunk, commands) = self.encode(ctx, status)?;
        ctx.queue.submit([commands]);
        Ok(chunk)
    }

    /// Records the copies out of every slot's slabs and its expansion through its staged
    /// table; the columns are ready once the returned commands are submitted, and the slabs
    /// go back to their pool when that submission completes (or are freed if the commands
    /// are dropped unsubmitted).
    pub fn encode(
        self,
        ctx: &GpuContext,
        status: &DecodeStatus,
    ) -> Result<(GpuChunk, wgpu::CommandBuffer), KernelError> {
        let device = &ctx.device;
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("gpugraph-datafusion-pages-expand"),
        });
        let max = device.limits().max_compute_workgroups_per_dimension;
        // The copies out of the slabs come before the graph's dispatches that read them; the
        // slabs go back to their pool when this command buffer's submission completes.
        let mut bound = Vec::new();
        for staged in self.columns {
            let (region, meta) = (staged.region.device().clone(), staged.meta.device().clone());
            staged
                .pool
                .copy(&mut encoder, staged.region, staged.region_len);
            staged
                .pool
                .copy(&mut encoder, staged.meta, staged.table.end);
            bound.push(Bound {
                region,
                region_len: staged.region_len,
                meta,
                pieces: staged.pieces,
                table: staged.table,
            });
        }
        let buffers: Vec<wgpu::Buffer> = bound
            .iter()
            .map(|_| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("gpugraph-datafusion-column"),
                    size: (self.rows as u64 * 4).max(16).div_ceil(16) * 16,
                    // COPY_SRC: tests read the expanded columns back.
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                })
            })
            .collect();
        let too_large = KernelError::ChunkTooLarge {
            rows: self.rows,
            max: max as usize * max as usize * 256,
        };
        if bound.iter().any(|b| grid_for(b.pieces(), max).is_none()) {
            return Err(too_large);
        }
        let mut compiled = expand_graph(device, &bound, &buffers, &status.buffer)?;
        compiled.encode(&mut encoder, &EncodeOptions::default())?;
        let chunk = GpuChunk {
            rows: self.rows as u32,
            layouts: vec![SlotLayout::new(self.rows, None); buffers.len()],
            buffers,
            has_valid: 0,
        };
        Ok((chunk, encoder.finish()))
    }
}

/// One slot's staged buffers as the expansion binds them: the region (its first
/// `region_len` bytes) and, in `meta`, the pieces and the table.
struct Bound {
    region: wgpu::Buffer,
    region_len: u64,
    meta: wgpu::Buffer,
    pieces: Range<u64>,
    table: Range<u64>,
}

impl Bound {
    /// Pieces (32 bytes each): the expansion's workgroups.
    fn pieces(&self) -> u64 {
        (self.pieces.end - self.pieces.start) / 32
    }
}

/// The expansion of a row group: one dispatch node per slot with pieces (`decode.wgsl`, a
/// workgroup per piece), reading the slot's staged buffers and writing its column in `out`
/// and the shared `status` word.
fn expand_graph(
    device: &wgpu::Device,
    bound: &[Bound],
    out: &[wgpu::Buffer],
    status: &wgpu::Buffer,
) -> Result<CompiledGraph, GraphError> {
    let mut graph = CommandGraph::new("gpugraph-datafusion pages expand", device);
    let import = |graph: &mut CommandGraph, id: String, buffer: &wgpu::Buffer| {
        graph.import_buffer_once(id, buffer, wgpu::BufferUsages::STORAGE)
    };
    let status = import(&mut graph, "status".into(), status)?;
    let words = |r: &Range<u64>| {
        DataViewDescriptor::packed(VectorFormat::Uint32, (r.end - r.start) / 4).at_offset(r.start)
    };
    for (s, (b, out)) in bound.iter().zip(out).enumerate() {
        let count = b.pieces();
        if count == 0 {
            continue;
        }
        let region = import(&mut graph, format!("region {s}"), &b.region)?;
        let meta = import(&mut graph, format!("meta {s}"), &b.meta)?;
        let out = import(&mut graph, format!("column {s}"), out)?;
        let pieces = graph.create_data_view(meta, words(&b.pieces))?;
        let table = graph.create_data_view(meta, words(&b.table))?;
        let region = graph.create_data_view(region, words(&(0..b.region_len)))?;
        graph.add_dispatch_node(
            DispatchNode::new(
                format!("expand {s}"),
                ShaderSource::new("datafusion/pages/decode", include_str!("decode.wgsl")),
                "expand",
                vec![
                    Binding::read(0, pieces),
                    Binding::read(1, region),
                    Binding::read(2, table),
                    Binding::handle(3, out, Access::ReadWrite),
                    Binding::handle(4, status, Access::ReadWrite),
                ],
                Grid::Rows {
                    rows: count,
                    rows_per_workgroup: 1,
                },
            )
            .private_bind_group(),
        )?;
    }
    graph.compile()
}
