//! [`ReadbackRing`] (spec Tranche 4.2, GPUReadbackRing): reusable staging slots for
//! asynchronous readback (picks, counts) that overlap rendering without reusing a mapped
//! buffer.
//!
//! A [`ReadbackTicket`] owns one slot from acquisition until it is read or cancelled:
//! acquire → [`ReadbackRing::record_copy`] into the caller's encoder → the caller submits →
//! [`ReadbackRing::request_map`] → [`ReadbackRing::status`] / [`ReadbackRing::read`] (never
//! waits) or [`ReadbackRing::wait`] (waits explicitly). Tickets complete in any order. A slot
//! whose buffer is mapped or being mapped is never handed out again until it is unmapped:
//! cancelling a ticket whose map is in flight parks the slot until the map finishes.
//!
//! The ring owns its staging buffers ([`ReadbackRing::destroy`] destroys them) but never
//! submits, and waits only where the caller asks ([`ReadbackRing::wait`],
//! [`ReadbackRing::acquire_waiting`]). A failed map (a lost device) fails that ticket by name;
//! [`ReadbackRing::mark_lost`] propagates a device loss the application observed to every
//! ticket and later call.

use std::sync::{Arc, Mutex};

use crate::RenderError;

/// Where a ticket stands (see [`ReadbackRing::status`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TicketStatus {
    /// Acquired; the copy may be recorded; not yet mapped.
    Recording,
    /// Map requested; the GPU or the map has not finished.
    Pending,
    /// Mapped: [`ReadbackRing::read`] returns the bytes without waiting.
    Ready,
    /// The map failed (device lost or destroyed); the message says why.
    Failed(String),
}

type MapResult = Arc<Mutex<Option<Result<(), String>>>>;

#[derive(Debug)]
enum SlotState {
    Free,
    Held {
        generation: u64,
        bytes: u64,
        map: Option<MapResult>,
    },
    /// Cancelled while a map was in flight: free once the map finished and is undone.
    Parked(MapResult),
}

/// A claim on one staging slot of a [`ReadbackRing`] (not `Clone`: read or cancel it once).
#[derive(Debug, PartialEq, Eq)]
pub struct ReadbackTicket {
    slot: usize,
    generation: u64,
}

impl ReadbackTicket {
    /// The slot index (for diagnostics).
    pub fn slot(&self) -> usize {
        self.slot
    }
}

/// Reusable staging slots for asynchronous readback (see the module doc).
pub struct ReadbackRing {
    label: String,
    device: wgpu::Device,
    buffers: Vec<wgpu::Buffer>,
    states: Vec<SlotState>,
    slot_bytes: u64,
    next_generation: u64,
    destroyed: bool,
    lost: Option<String>,
}

fn lock(m: &MapResult) -> std::sync::MutexGuard<'_, Option<Result<(), String>>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ReadbackRing {
    /// `slots` staging buffers of `slot_bytes` bytes each (`MAP_READ | COPY_DST`; sizes are
    /// rounded up to 4 bytes).
    pub fn new(device: &wgpu::Device, label: &str, slots: usize, slot_bytes: u64) -> Self {
        let slot_bytes = slot_bytes.max(4).div_ceil(4) * 4;
        let buffers = (0..slots)
            .map(|i| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("{label}: slot {i}")),
                    size: slot_bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .collect();
        Self {
            label: label.into(),
            device: device.clone(),
            buffers,
            states: (0..slots).map(|_| SlotState::Free).collect(),
            slot_bytes,
            next_generation: 1,
            destroyed: false,
            lost: None,
        }
    }

    /// Bytes one slot holds.
    pub fn slot_bytes(&self) -> u64 {
        self.slot_bytes
    }

    /// Slots in the ring.
    pub fn slots(&self) -> usize {
        self.buffers.len()
    }

    fn usable(&self) -> Result<(), RenderError> {
        if self.destroyed {
            return Err(RenderError::RingDestroyed {
                label: self.label.clone(),
            });
        }
        if let Some(message) = &self.lost {
            return Err(RenderError::ReadbackFailed {
                label: self.label.clone(),
                slot: usize::MAX,
                message: message.clone(),
            });
        }
        Ok(())
    }

    /// Returns parked slots whose map has finished to the free list (unmapping them).
    fn reclaim(&mut self) {
        for (i, state) in self.states.iter_mut().enumerate() {
            if let SlotState::Parked(map) = state {
                let done = lock(map).is_some();
                if done {
                    self.buffers[i].unmap();
                    *state = SlotState::Free;
                }
            }
        }
    }

    fn take_free(&mut self) -> Option<ReadbackTicket> {
        let slot = self
            .states
            .iter()
            .position(|s| matches!(s, SlotState::Free))?;
        let generation = self.next_generation;
        self.next_generation += 1;
        self.states[slot] = SlotState::Held {
            generation,
            bytes: 0,
            map: None,
        };
        Some(ReadbackTicket { slot, generation })
    }

    /// Immediate acquisition: a free slot now, or [`RenderError::RingExhausted`]; never waits.
    pub fn try_acquire(&mut self) -> Result<ReadbackTicket, RenderError> {
        self.usable()?;
        self.device.poll(wgpu::PollType::Poll).ok();
        self.reclaim();
        self.take_free().ok_or_else(|| RenderError::RingExhausted {
            label: self.label.clone(),
            slots: self.buffers.len(),
        })
    }

    /// Waiting acquisition: like [`Self::try_acquire`], but when only slots parked behind an
    /// in-flight map stand between the caller and a free slot, blocks until those maps
    /// finish. When every slot is held by a live ticket, waiting could never end (only the
    /// caller frees them): [`RenderError::RingExhausted`] at once.
    pub fn acquire_waiting(&mut self) -> Result<ReadbackTicket, RenderError> {
        if let Ok(t) = self.try_acquire() {
            return Ok(t);
        }
        self.usable()?;
        let parked = self
            .states
            .iter()
            .any(|s| matches!(s, SlotState::Parked(_)));
        if !parked {
            return Err(RenderError::RingExhausted {
                label: self.label.clone(),
                slots: self.buffers.len(),
            });
        }
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| self.failed(usize::MAX, e.to_string()))?;
        self.try_acquire()
    }

    fn failed(&self, slot: usize, message: String) -> RenderError {
        RenderError::ReadbackFailed {
            label: self.label.clone(),
            slot,
            message,
        }
    }

    fn held(&mut self, t: &ReadbackTicket) -> Result<&mut SlotState, RenderError> {
        self.usable()?;
        let live = matches!(
            self.states.get(t.slot),
            Some(SlotState::Held { generation, .. }) if *generation == t.generation
        );
        if !live {
            return Err(RenderError::StaleTicket {
                label: self.label.clone(),
                slot: t.slot,
            });
        }
        Ok(&mut self.states[t.slot])
    }

    /// Records a copy of `bytes` bytes at `offset` of `source` (`COPY_SRC`) into the
    /// ticket's slot, in the caller's encoder. Once per ticket, before [`Self::request_map`].
    pub fn record_copy(
        &mut self,
        ticket: &ReadbackTicket,
        encoder: &mut wgpu::CommandEncoder,
        source: &wgpu::Buffer,
        offset: u64,
        bytes: u64,
    ) -> Result<(), RenderError> {
        let slot_bytes = self.slot_bytes;
        let label = self.label.clone();
        let buffer = self.buffers[ticket.slot].clone();
        let state = self.held(ticket)?;
        let SlotState::Held { bytes: b, map, .. } = state else {
            unreachable!("held() returns held slots")
        };
        if map.is_some() || *b != 0 {
            return Err(RenderError::TicketState {
                label,
                slot: ticket.slot,
                state: "already recorded",
                needed: "a fresh ticket",
            });
        }
        let fits = offset
            .checked_add(bytes)
            .is_some_and(|end| end <= source.size());
        if bytes == 0
            || bytes > slot_bytes
            || !bytes.is_multiple_of(4)
            || !offset.is_multiple_of(4)
            || !fits
            || !source.usage().contains(wgpu::BufferUsages::COPY_SRC)
        {
            return Err(RenderError::ReadbackRange {
                label,
                offset,
                bytes,
                slot_bytes,
                source_bytes: source.size(),
            });
        }
        *b = bytes;
        encoder.copy_buffer_to_buffer(source, offset, &buffer, 0, bytes);
        Ok(())
    }

    /// Starts mapping the ticket's slot. Call after submitting the encoder that holds its copy
    /// (mapping first would make the submission fail: the buffer would be in use).
    pub fn request_map(&mut self, ticket: &ReadbackTicket) -> Result<(), RenderError> {
        let label = self.label.clone();
        let buffer = self.buffers[ticket.slot].clone();
        let state = self.held(ticket)?;
        let SlotState::Held { bytes, map, .. } = state else {
            unreachable!("held() returns held slots")
        };
        if *bytes == 0 || map.is_some() {
            return Err(RenderError::TicketState {
                label,
                slot: ticket.slot,
                state: if map.is_some() {
                    "mapping"
                } else {
                    "without a copy"
                },
                needed: "a recorded, submitted copy",
            });
        }
        let result: MapResult = Arc::new(Mutex::new(None));
        let sink = result.clone();
        buffer
            .slice(..*bytes)
            .map_async(wgpu::MapMode::Read, move |r| {
                *lock(&sink) = Some(r.map_err(|e| e.to_string()));
            });
        *map = Some(result);
        Ok(())
    }

    /// Where the ticket stands; polls the device without waiting.
    pub fn status(&mut self, ticket: &ReadbackTicket) -> Result<TicketStatus, RenderError> {
        self.device.poll(wgpu::PollType::Poll).ok();
        let state = self.held(ticket)?;
        let SlotState::Held { map, .. } = state else {
            unreachable!("held() returns held slots")
        };
        Ok(match map {
            None => TicketStatus::Recording,
            Some(m) => match &*lock(m) {
                None => TicketStatus::Pending,
                Some(Ok(())) => TicketStatus::Ready,
                Some(Err(e)) => TicketStatus::Failed(e.clone()),
            },
        })
    }

    /// The ticket's bytes when [`TicketStatus::Ready`]; frees the slot. Never waits: a pending
    /// ticket is [`RenderError::TicketState`] (and stays valid), a failed one
    /// [`RenderError::ReadbackFailed`] (and frees the slot).
    pub fn read(&mut self, ticket: ReadbackTicket) -> Result<Vec<u8>, RenderError> {
        match self.status(&ticket)? {
            TicketStatus::Ready => {
                let buffer = &self.buffers[ticket.slot];
                let SlotState::Held { bytes, .. } = self.states[ticket.slot] else {
                    unreachable!("status() checked the ticket")
                };
                let data = buffer
                    .slice(..bytes)
                    .get_mapped_range()
                    .map_err(|e| self.failed(ticket.slot, e.to_string()))?
                    .to_vec();
                buffer.unmap();
                self.states[ticket.slot] = SlotState::Free;
                Ok(data)
            }
            TicketStatus::Failed(message) => {
                self.states[ticket.slot] = SlotState::Free;
                Err(self.failed(ticket.slot, message))
            }
            other => Err(RenderError::TicketState {
                label: self.label.clone(),
                slot: ticket.slot,
                state: if other == TicketStatus::Recording {
                    "not mapped"
                } else {
                    "pending"
                },
                needed: "a finished map (wait() waits for it)",
            }),
        }
    }

    /// Waits (explicitly) until the ticket's map finished, then [`Self::read`]s it.
    pub fn wait(&mut self, ticket: ReadbackTicket) -> Result<Vec<u8>, RenderError> {
        if self.status(&ticket)? == TicketStatus::Recording {
            return self.read(ticket);
        }
        while self.status(&ticket)? == TicketStatus::Pending {
            self.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| self.failed(ticket.slot, e.to_string()))?;
        }
        self.read(ticket)
    }

    /// Gives the ticket's slot back without reading it. A slot whose map is in flight is
    /// parked until the map finishes (a mapped buffer is never handed out).
    pub fn cancel(&mut self, ticket: ReadbackTicket) -> Result<(), RenderError> {
        self.held(&ticket)?;
        let state = std::mem::replace(&mut self.states[ticket.slot], SlotState::Free);
        if let SlotState::Held { map: Some(m), .. } = state {
            let finished = lock(&m).is_some();
            if finished {
                self.buffers[ticket.slot].unmap();
            } else {
                self.states[ticket.slot] = SlotState::Parked(m);
            }
        }
        Ok(())
    }

    /// Fails every later call (and so every outstanding ticket) with `message`: how the
    /// application propagates a device loss it observed in its device-lost callback.
    pub fn mark_lost(&mut self, message: impl Into<String>) {
        self.lost = Some(message.into());
    }

    /// Destroys every staging buffer; outstanding tickets and later calls fail with
    /// [`RenderError::RingDestroyed`]. Idempotent.
    pub fn destroy(&mut self) {
        if self.destroyed {
            return;
        }
        self.destroyed = true;
        for b in &self.buffers {
            b.destroy();
        }
    }
}

impl Drop for ReadbackRing {
    fn drop(&mut self) {
        self.destroy();
    }
}
