//! [`run_once`]: encode a compiled graph once, submit once, wait, and only then map the
//! staging copies of what the caller asked for. The [`RunLog`] records the order, so tests
//! can assert that nothing was mapped or read between submit and completion.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use gpugraph_command::wgpu;
use gpugraph_command::{CompiledGraph, EncodeOptions};

use super::error::ProgramTreeError;

/// One step of a run, in the order it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEvent {
    /// The graph and the staging copies were recorded.
    Encoded,
    /// The command buffer was submitted.
    Submitted,
    /// The device reported the submission complete.
    Completed,
    /// A staging buffer was mapped for reading.
    Mapped,
}

/// What [`run_once`] did.
#[derive(Clone, Debug, Default)]
pub struct RunLog {
    /// Events in order.
    pub events: Vec<RunEvent>,
    /// Wall time of the encode.
    pub encode: Duration,
    /// Wall time from submit to completion (the GPU work).
    pub gpu: Duration,
}

impl RunLog {
    /// Submissions made.
    pub fn submits(&self) -> usize {
        self.events
            .iter()
            .filter(|e| **e == RunEvent::Submitted)
            .count()
    }

    /// Maps requested after a submit and before its completion (must be 0).
    pub fn maps_in_flight(&self) -> usize {
        let mut in_flight = false;
        let mut n = 0;
        for e in &self.events {
            match e {
                RunEvent::Submitted => in_flight = true,
                RunEvent::Completed => in_flight = false,
                RunEvent::Mapped if in_flight => n += 1,
                _ => {}
            }
        }
        n
    }
}

/// Encodes `graph` once into one encoder followed by copies of `readbacks` (`(buffer,
/// bytes from offset 0)`, each a COPY_SRC buffer) into staging buffers, submits once, waits
/// for completion, then maps and returns the bytes.
pub fn run_once(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    graph: &mut CompiledGraph,
    readbacks: &[(&wgpu::Buffer, u64)],
) -> Result<(Vec<Vec<u8>>, RunLog), ProgramTreeError> {
    let id = graph.id().to_string();
    let fail = |reason: String| ProgramTreeError::Run {
        graph: id.clone(),
        reason,
    };
    let mut log = RunLog::default();
    let t0 = Instant::now();
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("program run"),
    });
    graph.encode(&mut encoder, &EncodeOptions::default())?;
    let staging: Vec<(wgpu::Buffer, u64)> = readbacks
        .iter()
        .map(|(src, bytes)| {
            let size = bytes.div_ceil(4).max(1) * 4;
            let s = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("program readback"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            encoder.copy_buffer_to_buffer(src, 0, &s, 0, size);
            (s, *bytes)
        })
        .collect();
    log.events.push(RunEvent::Encoded);
    log.encode = t0.elapsed();
    let t1 = Instant::now();
    let submission = queue.submit([encoder.finish()]);
    log.events.push(RunEvent::Submitted);
    device
        .poll(wgpu::PollType::Wait {
            submission_index: Some(submission),
            timeout: None,
        })
        .map_err(|e| fail(format!("waiting for the device failed: {e}")))?;
    log.gpu = t1.elapsed();
    log.events.push(RunEvent::Completed);
    let mut out = Vec::with_capacity(staging.len());
    for (s, bytes) in &staging {
        let (tx, rx) = mpsc::channel();
        s.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        log.events.push(RunEvent::Mapped);
        device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map_err(|e| fail(format!("waiting for a map failed: {e}")))?;
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(fail(format!("mapping a readback failed: {e}"))),
            Err(_) => return Err(fail("the map callback never ran".into())),
        }
        {
            let view = s
                .get_mapped_range(..)
                .map_err(|e| fail(format!("reading a mapped readback failed: {e}")))?;
            out.push(view[..*bytes as usize].to_vec());
        }
        s.unmap();
        s.destroy();
    }
    Ok((out, log))
}
