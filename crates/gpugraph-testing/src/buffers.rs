//! Test buffers: uploads of host data and outputs poisoned before a run.

use gpugraph_command::wgpu::{self, BufferUsages};
use gpugraph_command::GpuContext;

/// Written into outputs before a run, so a row the kernel never writes is caught.
pub const POISON: u32 = 0xDEAD_BEEF;

/// A STORAGE | COPY_SRC | COPY_DST buffer holding `data` (at least 4 bytes).
pub fn upload<T: bytemuck::Pod>(ctx: &GpuContext, data: &[T]) -> wgpu::Buffer {
    let usage = BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST;
    upload_padded(ctx, data, usage, 4)
}

/// A `usage | COPY_DST` buffer holding `data`, `max(min_bytes, data bytes)` rounded up to
/// whole words long; the bytes past `data` are zero.
pub fn upload_padded<T: bytemuck::Pod>(
    ctx: &GpuContext,
    data: &[T],
    usage: BufferUsages,
    min_bytes: u64,
) -> wgpu::Buffer {
    let bytes: &[u8] = bytemuck::cast_slice(data);
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test-data"),
        size: (bytes.len() as u64).max(min_bytes).div_ceil(4) * 4,
        usage: usage | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    if !bytes.is_empty() {
        // `write_buffer` needs a whole number of words; the tail past `data` stays zero.
        let mut padded = bytes.to_vec();
        padded.resize(bytes.len().div_ceil(4) * 4, 0);
        ctx.queue.write_buffer(&buffer, 0, &padded);
    }
    buffer
}

/// A `usage | COPY_DST` buffer of `words` words (at least one), every word [`POISON`].
pub fn poisoned(ctx: &GpuContext, words: usize, usage: BufferUsages) -> wgpu::Buffer {
    upload_padded(ctx, &vec![POISON; words.max(1)], usage, 4)
}

/// Fills all of `buffer` (COPY_DST, a whole number of words long) with [`POISON`], queued
/// before any work submitted after this call.
pub fn poison(ctx: &GpuContext, buffer: &wgpu::Buffer) {
    let words = vec![POISON; (buffer.size() / 4) as usize];
    ctx.queue
        .write_buffer(buffer, 0, bytemuck::cast_slice(&words));
}
