//! Uploads into plain device-local buffers through bounded staging.
//!
//! Why not `mapped_at_creation` or one `Queue::write_buffer` of the whole column: both stage
//! the data in one host-visible allocation as large as the column. On the NVIDIA H200
//! (2026-12-01, `gpugraph bench memory`, bench/README.md) a process that had made host-visible
//! allocations of hundreds of MiB ran every later streaming kernel over buffers of 256 MiB or
//! more at ~1.6 TB/s instead of ~4 TB/s, buffers created plain and filled on the GPU included.
//! Here the bytes go through the queue in pieces of at most [`PIECE`] bytes, with at most
//! [`IN_FLIGHT`] bytes of staging alive: after every `IN_FLIGHT / 2` bytes the pending writes
//! are submitted and the previous batch is waited for, so the copy of one batch overlaps the
//! host's writing of the next and staging memory stays small and reused.

use wgpu::BufferUsages;

use crate::data::BASE_USAGE;
use crate::error::TableError;

/// Largest single staged write.
pub const PIECE: u64 = 16 << 20;
/// Most staging bytes alive at once (two batches).
pub const IN_FLIGHT: u64 = 64 << 20;

/// Writes `parts` (byte offset, bytes) into `buffer` through `queue` in bounded pieces (see the
/// module docs). Offsets must be multiples of 4; a part whose length is not is padded with
/// zero bytes to the next multiple of 4 (the caller's layout leaves room: buffers are rounded
/// up to 4 and parts start at aligned offsets). The data is in place for the next submission.
pub fn write_parts(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
    parts: &[(u64, &[u8])],
) -> Result<(), TableError> {
    let mut batch = 0u64;
    let mut previous: Option<wgpu::SubmissionIndex> = None;
    let mut flush = |batch: &mut u64, force: bool| -> Result<(), TableError> {
        if *batch == 0 || (!force && *batch < IN_FLIGHT / 2) {
            return Ok(());
        }
        let index = queue.submit([]);
        if let Some(p) = previous.replace(index) {
            device
                .poll(wgpu::PollType::Wait {
                    submission_index: Some(p),
                    timeout: None,
                })
                .map_err(|e| TableError::Allocation {
                    bytes: buffer.size(),
                    reason: format!("waiting for an upload batch failed: {e}"),
                })?;
        }
        *batch = 0;
        Ok(())
    };
    for &(offset, bytes) in parts {
        let whole = bytes.len() / 4 * 4;
        let mut at = 0usize;
        while at < whole {
            let end = (at + PIECE as usize).min(whole);
            queue.write_buffer(buffer, offset + at as u64, &bytes[at..end]);
            batch += (end - at) as u64;
            at = end;
            flush(&mut batch, false)?;
        }
        if whole < bytes.len() {
            let mut tail = [0u8; 4];
            tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
            queue.write_buffer(buffer, offset + whole as u64, &tail);
            batch += 4;
        }
    }
    flush(&mut batch, true)
}

/// Checks `extra_usage` and creates a plain (device-local) `BASE_USAGE | extra_usage` buffer of
/// `content_bytes` (rounded up to 4, at least 4) holding `parts` (byte offset, bytes), written
/// by [`write_parts`].
pub(crate) fn create_filled_buffer(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    parts: &[(u64, &[u8])],
    content_bytes: u64,
    extra_usage: BufferUsages,
) -> Result<wgpu::Buffer, TableError> {
    let map = BufferUsages::MAP_READ | BufferUsages::MAP_WRITE;
    if extra_usage.intersects(map) {
        return Err(TableError::InvalidUsage {
            usage: extra_usage,
            reason: "table buffers are storage buffers and cannot be mappable; read back through a staging copy".into(),
        });
    }
    let size = content_bytes
        .div_ceil(wgpu::COPY_BUFFER_ALIGNMENT)
        .saturating_mul(wgpu::COPY_BUFFER_ALIGNMENT)
        .max(wgpu::COPY_BUFFER_ALIGNMENT);
    let max = device.limits().max_buffer_size;
    if size > max {
        return Err(TableError::BufferTooLarge { bytes: size, max });
    }
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gpugraph-tables-upload"),
        size,
        usage: BASE_USAGE | extra_usage,
        mapped_at_creation: false,
    });
    write_parts(device, queue, &buffer, parts)?;
    let oom_error = pollster::block_on(oom.pop());
    let validation_error = pollster::block_on(validation.pop());
    if let Some(e) = oom_error.or(validation_error) {
        return Err(TableError::Allocation {
            bytes: size,
            reason: e.to_string(),
        });
    }
    Ok(buffer)
}
