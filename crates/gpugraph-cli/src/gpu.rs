//! GPU plumbing shared by the commands: opening a [`GpuContext`] whose wgpu errors are
//! collected instead of panicking, submit-and-wait, and explicit readback of a staging buffer.
//!
//! The CLI is a convenience layer: unlike the libraries, it submits and reads back.

use std::sync::{mpsc, Arc, Mutex};

use anyhow::{bail, Context, Result};
use gpugraph_command::{wgpu, GpuContext};

/// A device opened for one CLI command, with a sink for wgpu's uncaptured errors.
pub struct Gpu {
    /// Adapter, device, queue and capabilities.
    pub ctx: GpuContext,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Gpu {
    /// Selects the adapter (`WGPU_BACKEND`, `GPUGRAPH_ADAPTER` apply) and opens a device whose
    /// uncaptured wgpu errors are recorded for [`Gpu::check`] rather than panicking.
    pub fn open() -> Result<Self> {
        let ctx = GpuContext::new().context("opening a GPU device")?;
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&errors);
        ctx.device
            .on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                if let Ok(mut v) = sink.lock() {
                    v.push(one_line(&e.to_string()));
                }
            }));
        Ok(Self { ctx, errors })
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.ctx.device
    }

    /// The queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.ctx.queue
    }

    /// Fails with the first wgpu error reported since the last check, naming `during`.
    pub fn check(&self, during: &str) -> Result<()> {
        let mut errors = match self.errors.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(first) = errors.first().cloned() {
            let more = errors.len() - 1;
            errors.clear();
            if more > 0 {
                bail!("wgpu error during {during}: {first} (and {more} more)");
            }
            bail!("wgpu error during {during}: {first}");
        }
        Ok(())
    }

    /// Submits `commands` and blocks until the GPU finished them.
    pub fn submit_and_wait(&self, commands: wgpu::CommandBuffer) -> Result<()> {
        let index = self.queue().submit([commands]);
        self.device()
            .poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: None,
            })
            .context("waiting for the GPU")?;
        self.check("submission")
    }

    /// Maps `staging` (MAP_READ, already written by a finished submission) and returns its
    /// contents as `u32` words; unmaps it again.
    pub fn read_u32(&self, staging: &wgpu::Buffer) -> Result<Vec<u32>> {
        let slice = staging.slice(..);
        let (tx, rx) = mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device()
            .poll(wgpu::PollType::wait_indefinitely())
            .context("waiting for a buffer mapping")?;
        rx.recv()
            .context("the mapping callback never ran")?
            .context("mapping the readback buffer")?;
        let words = {
            let bytes = slice
                .get_mapped_range()
                .context("reading the mapped range")?;
            bytemuck::pod_collect_to_vec::<u8, u32>(&bytes)
        };
        staging.unmap();
        self.check("readback")?;
        Ok(words)
    }
}

/// Collapses a possibly multi-line message into one line (`"; "` between lines).
pub fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}
