//! The readback ring: a few 16-byte `MAP_READ` buffers. A frame that finds a free slot
//! copies the visible span count, the drawn edge count and the pick result into it and asks
//! for an asynchronous map after its submission; [`ReadbackRing::collect`] takes whatever
//! has arrived without waiting. A frame that finds no free slot simply reads nothing back:
//! readbacks never gate a frame.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use gpugraph_trace::frame::FrameBuffers;
use gpugraph_trace::NO_SPAN;
use web_time::Instant;

const FREE: u8 = 0;
const RECORDED: u8 = 1;
const MAPPING: u8 = 2;
const READY: u8 = 3;
const FAILED: u8 = 4;
const SLOT_BYTES: u64 = 16;

/// What one frame's readback says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Readback {
    /// The frame's serial.
    pub serial: u64,
    /// Visible spans.
    pub visible: u32,
    /// Drawn dependency edges.
    pub edges: u32,
    /// The picked span (when the frame had a pick).
    pub picked: Option<u32>,
    /// Milliseconds from the frame's submission to the result being seen here.
    pub latency_ms: f64,
}

struct Slot {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
    serial: u64,
    submitted: Option<Instant>,
}

/// The ring (see the module doc).
pub struct ReadbackRing {
    slots: Vec<Slot>,
}

impl ReadbackRing {
    /// `n` slots.
    pub fn new(device: &wgpu::Device, n: usize) -> Self {
        Self {
            slots: (0..n.max(1))
                .map(|k| Slot {
                    buffer: device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(&format!("viewer/readback-{k}")),
                        size: SLOT_BYTES,
                        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    }),
                    state: Arc::new(AtomicU8::new(FREE)),
                    serial: 0,
                    submitted: None,
                })
                .collect(),
        }
    }

    /// Slots waiting for the GPU.
    pub fn in_flight(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.state.load(Ordering::Acquire) != FREE)
            .count()
    }

    /// Records the copies of frame `serial`'s results into a free slot; `None` when every
    /// slot is busy (nothing recorded).
    pub fn record(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        b: &FrameBuffers,
        serial: u64,
    ) -> Option<usize> {
        let k = self
            .slots
            .iter()
            .position(|s| s.state.load(Ordering::Acquire) == FREE)?;
        let s = &mut self.slots[k];
        // draw_args words 1 and 5 are the instance counts; pick is [lane + 1, span].
        encoder.copy_buffer_to_buffer(&b.draw_args, 4, &s.buffer, 0, 4);
        encoder.copy_buffer_to_buffer(&b.draw_args, 20, &s.buffer, 4, 4);
        encoder.copy_buffer_to_buffer(&b.pick, 0, &s.buffer, 8, 8);
        s.state.store(RECORDED, Ordering::Release);
        s.serial = serial;
        Some(k)
    }

    /// Asks for slot `k`'s map (call right after submitting the frame that recorded it).
    pub fn map(&mut self, k: usize) {
        let s = &mut self.slots[k];
        s.submitted = Some(Instant::now());
        s.state.store(MAPPING, Ordering::Release);
        let state = s.state.clone();
        s.buffer.slice(..).map_async(
            wgpu::MapMode::Read,
            move |r: Result<(), wgpu::BufferAsyncError>| {
                state.store(if r.is_ok() { READY } else { FAILED }, Ordering::Release);
            },
        );
    }

    /// Returns a slot whose frame was never submitted (an encode failed) to the free list.
    pub fn abandon(&mut self, k: usize) {
        self.slots[k].state.store(FREE, Ordering::Release);
    }

    /// Every result that has arrived, oldest first; frees their slots. Never waits.
    pub fn collect(&mut self) -> Vec<Readback> {
        let mut out = Vec::new();
        for s in &mut self.slots {
            match s.state.load(Ordering::Acquire) {
                READY => {
                    let words: Option<[u32; 4]> = s.buffer.get_mapped_range(..).ok().map(|view| {
                        let mut w = [0u32; 4];
                        w.copy_from_slice(bytemuck::cast_slice(&view[..]));
                        w
                    });
                    s.buffer.unmap();
                    s.state.store(FREE, Ordering::Release);
                    let Some(words) = words else { continue };
                    out.push(Readback {
                        serial: s.serial,
                        visible: words[0],
                        edges: words[1],
                        picked: (words[3] != NO_SPAN).then_some(words[3]),
                        latency_ms: s.submitted.map_or(0.0, |t| t.elapsed().as_secs_f64() * 1e3),
                    });
                }
                FAILED => s.state.store(FREE, Ordering::Release),
                _ => {}
            }
        }
        out.sort_by_key(|r| r.serial);
        out
    }
}
