//! READBACK for checks, through `gpugraph_tables::readback` (the one path production reads
//! back through): each call submits, blocks until the copy is done and panics, naming the
//! buffer's label, when the readback fails. Never inside a timed path.

use gpugraph_command::{wgpu, GpuContext};
use gpugraph_tables::readback;

/// `size` bytes at `byte_offset` of `buffer` (COPY_SRC), after the work already submitted.
pub fn read_bytes(ctx: &GpuContext, buffer: &wgpu::Buffer, byte_offset: u64, size: u64) -> Vec<u8> {
    readback::read_bytes(&ctx.device, &ctx.queue, buffer, byte_offset, size)
        .unwrap_or_else(|e| panic!("reading back {byte_offset}+{size} bytes: {e}"))
}

/// `len` elements of `T` from element `offset` of `buffer` (COPY_SRC).
pub fn read<T: bytemuck::Pod>(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    offset: usize,
    len: usize,
) -> Vec<T> {
    let size = std::mem::size_of::<T>() as u64;
    let bytes = read_bytes(ctx, buffer, offset as u64 * size, len as u64 * size);
    // A copy, not a cast: the byte vector is not aligned for `T`.
    bytemuck::pod_collect_to_vec(&bytes)
}

/// All of `buffer` (COPY_SRC, a whole number of words long) as u32 words.
pub fn read_buffer(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Vec<u32> {
    read(ctx, buffer, 0, (buffer.size() / 4) as usize)
}

/// Submits `encoder` (work already recorded in it, e.g. a compiled graph's encode) together
/// with the copy of `len` elements of `T` at element `offset` of `buffer`, in one submission,
/// and returns them.
pub fn submit_and_read<T: bytemuck::Pod>(
    ctx: &GpuContext,
    encoder: wgpu::CommandEncoder,
    buffer: &wgpu::Buffer,
    offset: usize,
    len: usize,
) -> Vec<T> {
    let size = std::mem::size_of::<T>() as u64;
    let mut out = readback::submit_and_read(
        &ctx.device,
        &ctx.queue,
        encoder,
        &[(buffer, offset as u64 * size, len as u64 * size)],
    )
    .unwrap_or_else(|e| panic!("submitting and reading back {len} elements: {e}"));
    bytemuck::pod_collect_to_vec(&out.pop().unwrap_or_default())
}

/// The bytes of a `MAP_READ` buffer the code under test copied its results into (its own
/// readback target, e.g. a frame's pick or image buffer), once the queue has finished with
/// it; the buffer is unmapped again, so the code can reuse it.
pub fn map_read(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Vec<u8> {
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        // The receiver outlives the poll below; a send error cannot happen.
        let _ = tx.send(r);
    });
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("waiting for the device");
    rx.recv()
        .expect("the map callback ran")
        .unwrap_or_else(|e| panic!("mapping a MAP_READ buffer: {e}"));
    let bytes = buffer
        .get_mapped_range(..)
        .expect("the mapped range")
        .to_vec();
    buffer.unmap();
    bytes
}
