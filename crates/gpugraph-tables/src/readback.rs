//! Explicit READBACK: the only place in this crate that copies GPU data to the CPU.
//!
//! Every function here records copies into a fresh staging buffer (after the caller's
//! recorded work, for [`submit_and_read`]), SUBMITS them on the given queue and BLOCKS the calling thread until the device has finished and the staging
//! buffer is mapped. Use them for tests, diagnostics and application decisions that
//! genuinely belong on the CPU; never inside a per-frame dependency chain.

use std::sync::mpsc;

use wgpu::BufferUsages;

use gpugraph_command::GpuContext;

use crate::data::{cast_bytes, GpuData};
use crate::error::TableError;

// The readback of a range lives here, not in `data`: this module is the crate's one copy to
// the CPU, and `data` stays below it.
impl GpuData {
    /// READBACK (submits on `ctx.queue` and blocks until done): the row payloads, packed,
    /// `len() × row_byte_length()` bytes; strided padding is dropped. Needs `COPY_SRC`.
    /// Empty ranges return at once without GPU work.
    pub fn read_back_bytes(&self, ctx: &GpuContext) -> Result<Vec<u8>, TableError> {
        let mut rows = read_data_rows(&ctx.device, &ctx.queue, &[self])?;
        Ok(rows.pop().unwrap_or_default())
    }

    /// READBACK (submits on `ctx.queue` and blocks until done): the row payloads cast to `T`
    /// (e.g. `u32` or `[f32; 3]` for `float32x3`, `u16` bits for `float16`). Fails when the
    /// payload bytes are not a whole number of `T`.
    pub fn read_back<T: bytemuck::Pod>(&self, ctx: &GpuContext) -> Result<Vec<T>, TableError> {
        cast_bytes(&self.read_back_bytes(ctx)?)
    }
}

const ALIGN: u64 = wgpu::COPY_BUFFER_ALIGNMENT;

/// One byte range to copy, widened to the copy alignment.
struct Planned {
    /// Index into the caller's ranges.
    index: usize,
    /// Aligned first byte in the source buffer.
    src_offset: u64,
    /// Aligned byte count.
    size: u64,
    /// Where the aligned range lands in the staging buffer.
    staging_offset: u64,
    /// Bytes between the aligned start and the requested start.
    lead: u64,
    /// Requested byte count.
    requested: u64,
}

/// READBACK (submits and blocks): copies `size` bytes at `byte_offset` of `buffer` to the CPU.
///
/// Reads `buffer` (which needs `COPY_SRC`); writes and destroys a private staging buffer;
/// submits one command buffer on `queue` and waits for it. A zero `size` returns at once
/// without GPU work. The range is widened to 4-byte copy alignment internally, so a range
/// that ends in the unaligned tail of a buffer whose size is not a multiple of 4 is rejected.
pub fn read_bytes(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
    byte_offset: u64,
    size: u64,
) -> Result<Vec<u8>, TableError> {
    let mut out = read_ranges(device, queue, &[(buffer, byte_offset, size)])?;
    Ok(out.pop().unwrap_or_default())
}

/// READBACK (submits and blocks): the row payloads of several ranges, one `Vec<u8>` per
/// range, each `len × row_byte_length` bytes (strides are removed), in one submission.
///
/// Reads the ranges' buffers (which need `COPY_SRC`); creates, maps and destroys one
/// staging buffer. Empty ranges cost nothing; if all are empty nothing is submitted.
pub fn read_data_rows(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    ranges: &[&GpuData],
) -> Result<Vec<Vec<u8>>, TableError> {
    let spans: Vec<(&wgpu::Buffer, u64, u64)> = ranges
        .iter()
        .map(|d| (d.buffer(), d.byte_offset(), d.byte_span()))
        .collect();
    let raw = read_ranges(device, queue, &spans)?;
    Ok(ranges
        .iter()
        .zip(raw)
        .map(|(d, bytes)| extract_rows(&bytes, d.len(), d.byte_stride(), d.row_byte_length()))
        .collect())
}

/// Packs `length` rows of `row_bytes` bytes, `stride` bytes apart, out of a span that starts at
/// row 0.
pub(crate) fn extract_rows(span: &[u8], length: u64, stride: u64, row_bytes: u64) -> Vec<u8> {
    if stride == row_bytes {
        return span[..(length * row_bytes) as usize].to_vec();
    }
    let mut out = Vec::with_capacity((length * row_bytes) as usize);
    for row in 0..length {
        let start = (row * stride) as usize;
        out.extend_from_slice(&span[start..start + row_bytes as usize]);
    }
    out
}

fn plan(ranges: &[(&wgpu::Buffer, u64, u64)]) -> Result<(Vec<Planned>, u64), TableError> {
    let mut planned = Vec::new();
    let mut cursor = 0u64;
    for (index, &(buffer, offset, size)) in ranges.iter().enumerate() {
        if size == 0 {
            continue;
        }
        if !buffer.usage().contains(BufferUsages::COPY_SRC) {
            return Err(TableError::MissingUsage {
                operation: "readback",
                needed: BufferUsages::COPY_SRC,
                actual: buffer.usage(),
            });
        }
        let out_of_bounds = || TableError::RangeOutOfBounds {
            byte_offset: offset,
            byte_span: size,
            buffer_size: buffer.size(),
        };
        let end = offset.checked_add(size).ok_or_else(out_of_bounds)?;
        if end > buffer.size() {
            return Err(out_of_bounds());
        }
        let src_offset = offset / ALIGN * ALIGN;
        let aligned_end = end.div_ceil(ALIGN) * ALIGN;
        if aligned_end > buffer.size() {
            return Err(TableError::Readback {
                reason: format!(
                    "range {offset}..{end} ends in the unaligned tail of a {}-byte buffer; copies need {ALIGN}-byte aligned sizes",
                    buffer.size()
                ),
            });
        }
        let aligned = aligned_end - src_offset;
        planned.push(Planned {
            index,
            src_offset,
            size: aligned,
            staging_offset: cursor,
            lead: offset - src_offset,
            requested: size,
        });
        cursor += aligned;
    }
    Ok((planned, cursor))
}

/// The shared implementation: one staging buffer, one submission, one map.
fn read_ranges(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    ranges: &[(&wgpu::Buffer, u64, u64)],
) -> Result<Vec<Vec<u8>>, TableError> {
    let (_, total) = plan(ranges)?;
    if total == 0 {
        return Ok(vec![Vec::new(); ranges.len()]);
    }
    let encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("gpugraph-tables-readback"),
    });
    submit_and_read(device, queue, encoder, ranges)
}

/// READBACK (submits and blocks): the bytes of `ranges` (buffer, byte offset, size) as they
/// are after the work already recorded in `encoder` (a compiled graph's encode), copied in
/// the same submission, so a computation and its readback cost one submission and one wait.
///
/// Reads the ranges' buffers (which need `COPY_SRC`); creates, maps and destroys one staging
/// buffer; always submits `encoder` (also when every range is empty). Ranges are checked
/// before anything is submitted: on a bad range `encoder` is dropped unsubmitted. A
/// validation or out-of-memory error raised by the submission (the caller's work included)
/// is [`TableError::Readback`].
pub fn submit_and_read(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    mut encoder: wgpu::CommandEncoder,
    ranges: &[(&wgpu::Buffer, u64, u64)],
) -> Result<Vec<Vec<u8>>, TableError> {
    let mut out = vec![Vec::new(); ranges.len()];
    let (planned, total) = plan(ranges)?;
    if total == 0 {
        queue.submit([encoder.finish()]);
        return Ok(out);
    }
    let max = device.limits().max_buffer_size;
    if total > max {
        return Err(TableError::BufferTooLarge { bytes: total, max });
    }

    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gpugraph-tables-readback"),
        size: total,
        usage: BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    for p in &planned {
        encoder.copy_buffer_to_buffer(
            ranges[p.index].0,
            p.src_offset,
            &staging,
            p.staging_offset,
            p.size,
        );
    }
    let submission = queue.submit([encoder.finish()]);
    let oom_error = pollster::block_on(oom.pop());
    let validation_error = pollster::block_on(validation.pop());
    if let Some(e) = oom_error.or(validation_error) {
        staging.destroy();
        return Err(TableError::Readback {
            reason: format!(
                "copying to the staging buffer failed (destroyed buffer, or one from another device): {e}"
            ),
        });
    }

    let (tx, rx) = mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |result| {
        // The receiver outlives the poll below; a send error cannot happen.
        let _ = tx.send(result);
    });
    let fail = |reason: String| {
        staging.destroy();
        TableError::Readback { reason }
    };
    device
        .poll(wgpu::PollType::Wait {
            submission_index: Some(submission),
            timeout: None,
        })
        .map_err(|e| fail(format!("waiting for the device failed: {e}")))?;
    match rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(fail(format!("mapping the staging buffer failed: {e}"))),
        Err(_) => return Err(fail("the map callback never ran".into())),
    }
    {
        let view = staging
            .get_mapped_range(..)
            .map_err(|e| fail(format!("reading the mapped staging buffer failed: {e}")))?;
        for p in &planned {
            let start = (p.staging_offset + p.lead) as usize;
            out[p.index] = view[start..start + p.requested as usize].to_vec();
        }
    }
    staging.unmap();
    staging.destroy();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::extract_rows;

    #[test]
    fn extract_rows_removes_stride_padding() {
        let span: Vec<u8> = (0..14).collect();
        // Three 2-byte rows, 6 bytes apart: span = 2·6 + 2 = 14.
        assert_eq!(extract_rows(&span, 3, 6, 2), vec![0, 1, 6, 7, 12, 13]);
        assert_eq!(
            extract_rows(&span[..8], 2, 4, 4),
            (0..8).collect::<Vec<u8>>()
        );
        assert!(extract_rows(&[], 0, 4, 4).is_empty());
    }
}
