//! Submitting what a cook recorded and reading count words back: the device round trips the
//! cook, its planning waits and its recordings share.

use std::sync::mpsc;

use gpugraph_command::wgpu::{self, BufferUsages};
use gpugraph_command::{CompiledGraph, EncodeOptions};

use crate::error::{ProcgenError, Result};

/// `n` as a kernel's u32 count, or a named error.
pub(crate) fn u32_count(what: &str, n: u64) -> Result<u32> {
    u32::try_from(n).map_err(|_| ProcgenError::TooLarge {
        what: what.into(),
        value: n,
        limit: u64::from(u32::MAX),
    })
}

/// Encodes `compiled` and submits it.
pub(crate) fn submit(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    compiled: &mut CompiledGraph,
) -> Result<()> {
    let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("procgen cook"),
    });
    compiled.encode(&mut enc, &EncodeOptions::default())?;
    queue.submit([enc.finish()]);
    Ok(())
}

/// Reads the first `words` words of `buffer`, waiting for the work submitted before.
pub fn read_words(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
    words: u64,
) -> Result<Vec<u32>> {
    if words == 0 {
        return Ok(Vec::new());
    }
    let what = String::from("a column");
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("procgen readback"),
        size: words * 4,
        usage: BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(buffer, 0, &staging, 0, words * 4);
    queue.submit([enc.finish()]);
    let slice = staging.slice(..);
    let (tx, rx) = mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| ProcgenError::Map {
            what: what.clone(),
            message: e.to_string(),
        })?;
    rx.recv()
        .map_err(|e| ProcgenError::Map {
            what: what.clone(),
            message: e.to_string(),
        })?
        .map_err(|e| ProcgenError::Map {
            what: what.clone(),
            message: e.to_string(),
        })?;
    let out = {
        let view = slice.get_mapped_range().map_err(|e| ProcgenError::Map {
            what: what.clone(),
            message: e.to_string(),
        })?;
        bytemuck::cast_slice::<u8, u32>(&view).to_vec()
    };
    staging.unmap();
    Ok(out)
}
