//! Uploads into plain device-local buffers through a small ring of reused staging buffers.
//!
//! Why not `mapped_at_creation` or one `Queue::write_buffer` of the whole column: both stage
//! the data in one host-visible allocation as large as the column. On the NVIDIA H200
//! (2026-12-01, `gpugraph bench memory`, bench/README.md) a process that had made host-visible
//! allocations of hundreds of MiB ran every later streaming kernel over buffers of 256 MiB or
//! more at ~1.6 TB/s instead of ~4 TB/s, buffers created plain and filled on the GPU included.
//!
//! Why not `Queue::write_buffer` per piece either (the previous design): every call allocates
//! a fresh host-visible staging buffer, so each byte also paid for an allocation, its mapping
//! and the first-touch page faults of new memory (on lavapipe a fifth of the upload time was
//! the kernel clearing fresh pages). Here each device has at most [`RING`] staging buffers of
//! [`PIECE`] bytes ([`IN_FLIGHT`] in all; only the device that uploaded last keeps them),
//! created on first need and kept for the next upload (a table uploads one buffer per column chunk, so one call is often a single piece):
//! a buffer is filled through its mapping (large pieces by several threads at once),
//! unmapped, copied into the destination by its own submission and mapped again for writing
//! while the host fills the next one; it is waited for only when its turn comes round again.
//! [`release_staging`] frees a device's buffers. Uploads of at most [`SMALL`] bytes keep the
//! queue's own staging.

use wgpu::BufferUsages;

use crate::data::BASE_USAGE;
use crate::error::TableError;

/// Bytes of one staging buffer (and so of the largest single copy).
pub const PIECE: u64 = 16 << 20;
/// Most staging bytes per device: [`RING`] buffers of [`PIECE`] bytes.
pub const IN_FLIGHT: u64 = 64 << 20;
/// Staging buffers per device.
pub const RING: usize = (IN_FLIGHT / PIECE) as usize;
/// Uploads of at most this many bytes go through `Queue::write_buffer` instead of a ring.
pub const SMALL: u64 = 1 << 20;
/// Pieces larger than this are copied into the mapping by several threads.
const PARALLEL_COPY: usize = 2 << 20;

/// Writes `parts` (byte offset, bytes) into `buffer` (which needs `COPY_DST`) through bounded,
/// reused staging (see the module docs). Offsets must be multiples of 4; a part whose length
/// is not is padded with zero bytes to the next multiple of 4 (the caller's layout leaves
/// room: buffers are rounded up to 4 and parts start at aligned offsets). The data is in
/// place for the next submission on `queue`: every staging copy has been submitted (the last
/// [`RING`] may still run) when this returns.
pub fn write_parts(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
    parts: &[(u64, &[u8])],
) -> Result<(), TableError> {
    let padded = |len: usize| (len as u64).div_ceil(4) * 4;
    let total: u64 = parts.iter().map(|(_, b)| padded(b.len())).sum();
    if total == 0 {
        return Ok(());
    }
    if total <= SMALL {
        for &(offset, bytes) in parts {
            let whole = bytes.len() / 4 * 4;
            if whole > 0 {
                queue.write_buffer(buffer, offset, &bytes[..whole]);
            }
            if whole < bytes.len() {
                let mut tail = [0u8; 4];
                tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
                queue.write_buffer(buffer, offset + whole as u64, &tail);
            }
        }
        return Ok(());
    }
    let mut ring = Ring::new(device, buffer)?;
    for &(offset, bytes) in parts {
        let mut at = 0usize;
        while at < bytes.len() {
            let room = ring.room(queue)?;
            let take = (bytes.len() - at).min(room);
            ring.stage(offset + at as u64, &bytes[at..at + take]);
            at += take;
        }
    }
    ring.submit(queue)?;
    ring.finish();
    Ok(())
}

type Pool = std::sync::Mutex<std::collections::HashMap<wgpu::Device, Vec<Slot>>>;

/// The idle staging buffers of every device, each mapped or waiting for its last copy.
fn pool() -> &'static Pool {
    static POOL: std::sync::OnceLock<Pool> = std::sync::OnceLock::new();
    POOL.get_or_init(Default::default)
}

/// Frees the staging buffers [`write_parts`] keeps for `device` (at most [`IN_FLIGHT`]
/// bytes of host-visible memory); the next large upload creates them again.
pub fn release_staging(device: &wgpu::Device) {
    pool()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(device);
}

/// One staging buffer of the ring: [`PIECE`] bytes, `MAP_WRITE | COPY_SRC`.
struct Slot {
    staging: wgpu::Buffer,
    /// Set by the `map_async` callback once the buffer is writable again.
    mapped: std::sync::Arc<std::sync::Mutex<Option<Result<(), wgpu::BufferAsyncError>>>>,
    /// The submission that reads it, until it is mapped again.
    reading: Option<wgpu::SubmissionIndex>,
}

impl Slot {
    /// Writable now: never submitted, or its mapping came back.
    fn ready(&self) -> bool {
        self.reading.is_none()
            || matches!(
                *self.mapped.lock().unwrap_or_else(|e| e.into_inner()),
                Some(Ok(()))
            )
    }

    fn new(device: &wgpu::Device) -> Self {
        Self {
            staging: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("gpugraph-tables-staging"),
                size: PIECE,
                usage: BufferUsages::MAP_WRITE | BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            }),
            mapped: Default::default(),
            reading: None,
        }
    }
}

/// The staging ring of one [`write_parts`] call and the copies of the slot being filled.
struct Ring<'a> {
    device: &'a wgpu::Device,
    destination: &'a wgpu::Buffer,
    slots: Vec<Slot>,
    current: usize,
    /// Bytes filled in the current slot.
    filled: u64,
    /// (staging offset, destination offset, bytes) copies of the current slot.
    copies: Vec<(u64, u64, u64)>,
    /// Host bytes of the current slot not yet copied into its mapping (copied in one go, so
    /// large pieces can be split across threads).
    pending: Vec<(u64, &'a [u8])>,
}

impl<'a> Ring<'a> {
    /// The device's pooled staging buffers (or a new one when it has none).
    fn new(device: &'a wgpu::Device, destination: &'a wgpu::Buffer) -> Result<Self, TableError> {
        let pooled = pool()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(device)
            .unwrap_or_default();
        let mut ring = Self {
            device,
            destination,
            slots: pooled,
            current: 0,
            filled: 0,
            copies: Vec::new(),
            pending: Vec::new(),
        };
        // Start on a buffer whose copy is done (callbacks of finished copies fire in this
        // non-blocking poll), else a new one while under RING, else wait for the first: a
        // table uploads chunk after chunk, each smaller than a buffer, and must not wait for
        // the previous chunk's copy.
        let _ = device.poll(wgpu::PollType::Poll);
        if let Some(i) = ring.slots.iter().position(Slot::ready) {
            ring.slots.rotate_left(i);
        } else if ring.slots.len() < RING {
            ring.slots.insert(0, Slot::new(device));
        }
        ring.wait_mapped(0)?;
        Ok(ring)
    }

    /// Bytes the current slot can still take (submitting it and moving on when it is full).
    fn room(&mut self, queue: &wgpu::Queue) -> Result<usize, TableError> {
        if self.filled == PIECE {
            self.submit(queue)?;
            if self.slots.len() < RING {
                self.slots.push(Slot::new(self.device));
                self.current = self.slots.len() - 1;
            } else {
                self.current = (self.current + 1) % self.slots.len();
                self.wait_mapped(self.current)?;
            }
        }
        Ok((PIECE - self.filled) as usize)
    }

    /// Queues `bytes` (at most [`Ring::room`]) for destination offset `offset`.
    fn stage(&mut self, offset: u64, bytes: &'a [u8]) {
        // Copies must be 4-byte multiples: a part's last, partial word is zero-padded (its
        // start is aligned, and only a part's end can be unaligned).
        let len = (bytes.len() as u64).div_ceil(4) * 4;
        debug_assert!(self.filled + len <= PIECE);
        debug_assert!(self
            .pending
            .last()
            .is_none_or(|&(s, b)| s + (b.len() as u64).div_ceil(4) * 4 == self.filled));
        self.copies.push((self.filled, offset, len));
        self.pending.push((self.filled, bytes));
        self.filled += len;
    }

    /// Fills the current slot's mapping, unmaps it, submits its copies and maps it again.
    fn submit(&mut self, queue: &wgpu::Queue) -> Result<(), TableError> {
        if self.copies.is_empty() {
            return Ok(());
        }
        let slot = &mut self.slots[self.current];
        {
            let mut view = slot
                .staging
                .slice(..self.filled)
                .get_mapped_range_mut()
                .map_err(|e| TableError::Allocation {
                    bytes: self.destination.size(),
                    reason: format!("mapping an upload staging buffer failed: {e}"),
                })?;
            // The pending pieces lie back to back from offset 0 (see `stage`).
            let mut rest = view.slice(..);
            for &(_, bytes) in &self.pending {
                let padded = bytes.len().div_ceil(4) * 4;
                let (target, next) = rest.split_at(padded);
                rest = next;
                let whole = bytes.len() / 4 * 4;
                let (mut body, mut pad) = target.split_at(whole);
                copy_parallel(&mut body, &bytes[..whole]);
                if whole < bytes.len() {
                    let mut word = [0u8; 4];
                    word[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
                    pad.copy_from_slice(&word);
                }
            }
        }
        slot.staging.unmap();
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("gpugraph-tables-upload"),
            });
        for &(from, to, len) in &self.copies {
            encoder.copy_buffer_to_buffer(&slot.staging, from, self.destination, to, len);
        }
        slot.reading = Some(queue.submit([encoder.finish()]));
        let flag = std::sync::Arc::clone(&slot.mapped);
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = None;
        slot.staging
            .slice(..)
            .map_async(wgpu::MapMode::Write, move |r| {
                *flag.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        self.copies.clear();
        self.pending.clear();
        self.filled = 0;
        Ok(())
    }

    /// Blocks until slot `i`'s copy finished and its mapping is back.
    fn wait_mapped(&mut self, i: usize) -> Result<(), TableError> {
        let slot = &mut self.slots[i];
        let Some(index) = slot.reading.take() else {
            return Ok(()); // Never submitted: still mapped from creation.
        };
        let failed = |reason: String| TableError::Allocation {
            bytes: self.destination.size(),
            reason,
        };
        let mut wait = wgpu::PollType::Wait {
            submission_index: Some(index),
            timeout: None,
        };
        loop {
            self.device
                .poll(wait)
                .map_err(|e| failed(format!("waiting for an upload batch failed: {e}")))?;
            match slot.mapped.lock().unwrap_or_else(|e| e.into_inner()).take() {
                Some(Ok(())) => return Ok(()),
                Some(Err(e)) => {
                    return Err(failed(format!(
                        "remapping an upload staging buffer failed: {e}"
                    )))
                }
                // The submission is done; the mapping resolves on a later poll.
                None => wait = wgpu::PollType::wait_indefinitely(),
            }
        }
    }

    /// Hands the buffers back to the device's pool, their last copies possibly still running
    /// (the next user waits for its buffer's mapping).
    fn finish(self) {
        let mut pool = pool().lock().unwrap_or_else(|e| e.into_inner());
        // Only the device that uploaded last keeps staging: the process holds at most
        // `IN_FLIGHT` bytes of it (and no retired device alive) however many devices come
        // and go, as in a test binary.
        pool.retain(|d, _| d == self.device);
        let idle = pool.entry(self.device.clone()).or_default();
        idle.extend(self.slots);
        // Another call may have returned buffers meanwhile: keep the bound.
        idle.truncate(RING);
    }
}

/// `target.copy_from_slice(source)`, split across threads for large pieces: one core's
/// `memcpy` into mapped (often write-combined) memory is what bounds a host's upload rate.
fn copy_parallel(target: &mut wgpu::WriteOnly<'_, [u8]>, source: &[u8]) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
        .min(source.len() / PARALLEL_COPY * 2)
        .max(1);
    if threads == 1 {
        target.copy_from_slice(source);
        return;
    }
    let step = source.len().div_ceil(threads).div_ceil(64) * 64;
    std::thread::scope(|scope| {
        let mut rest = target.slice(..);
        for chunk in source.chunks(step) {
            let (head, tail) = rest.split_at(chunk.len());
            rest = tail;
            let head = SendWriteOnly(head);
            scope.spawn(move || head.copy_from(chunk));
        }
    });
}

/// A `WriteOnly<[u8]>` that may move to another thread.
struct SendWriteOnly<'a>(wgpu::WriteOnly<'a, [u8]>);

// SAFETY: `WriteOnly<'a, T>` is wgpu's exclusive, write-only `&'a mut T`; wgpu implements
// `Send` for it whenever `T: Send` but its impl implicitly requires `T: Sized`, which leaves
// out slices. `[u8]` is `Send`, the pieces are disjoint (`split_at`), and the scope joins
// every thread before the mapping is unmapped, exactly as with `&mut [u8]`.
unsafe impl Send for SendWriteOnly<'_> {}

impl SendWriteOnly<'_> {
    /// Takes the whole wrapper into a closure (a closure naming `.0` would capture only the
    /// field, which is not `Send`).
    fn copy_from(mut self, source: &[u8]) {
        self.0.copy_from_slice(source);
    }
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
