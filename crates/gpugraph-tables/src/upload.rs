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
//! created on first need and kept for the next upload. [`write_targets`] packs any number of
//! destination ranges (a column's chunks, each its own buffer) back to back into them: a
//! buffer is filled through its mapping by the thread pool (bytes copied, or produced in place
//! by a [`Source::Fill`] so converted data never exists whole on the host), unmapped, copied
//! into the destinations by one submission and mapped again for writing while the host fills
//! the next one; it is waited for only when its turn comes round again. One upload at a time
//! uses the ring (others wait): concurrent rings would each allocate staging and share one bus.
//! [`release_staging`] frees a device's buffers. Uploads of at most [`SMALL`] bytes keep the
//! queue's own staging.

use wgpu::BufferUsages;

use crate::error::TableError;

/// Bytes of one staging buffer (and so of the largest single copy).
///
/// Measured on the H200 (2026-12-02, one host, `analyze` of 50M rows, 1,000 MB, three runs
/// each, pieces × buffers): 8 MiB × 4 11.4–12.1 GB/s; 16 × 4 9.3–12.0; 16 × 2 8.5–12.0;
/// 4 × 8 9.1–10.3; 8 × 8 8.9–9.7; 16 × 8 9.2–9.5; 32 × 4 8.5–10.6; 64 × 4 7.1–7.7; 32 × 8
/// 6.3–7.4. Every process pays for creating its staging (host-visible memory), so less of it
/// in flight is faster as long as four buffers keep the bus busy.
pub const PIECE: u64 = 8 << 20;
/// Most staging bytes per device: [`RING`] buffers of [`PIECE`] bytes.
pub const IN_FLIGHT: u64 = 32 << 20;
/// Staging buffers per device.
pub const RING: usize = (IN_FLIGHT / PIECE) as usize;
/// Uploads of at most this many bytes go through `Queue::write_buffer` instead of a ring.
pub const SMALL: u64 = 1 << 20;

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
    let targets: Vec<Target<'_>> = parts
        .iter()
        .map(|&(offset, bytes)| Target {
            buffer,
            offset,
            source: Source::Bytes(bytes),
        })
        .collect();
    match write_targets(device, queue, &targets)? {
        Outcome::Written => Ok(()),
        // Byte sources never stop.
        Outcome::Stopped => unreachable!("a byte source stopped an upload"),
    }
}

/// A source that writes its bytes on demand: `fill(at, out)` writes bytes
/// `at .. at + out.len()` of the source into `out` (8-byte aligned). `at` and `out.len()` are
/// multiples of the source's `row` bytes (and of 4), except that the last call of a source
/// ends at its length. It is called from several threads at once on disjoint ranges, in no
/// particular order. `Err(Stopped)` ends the upload: the source keeps its own error.
pub type FillFn<'a> = dyn Fn(u64, &mut [u8]) -> Result<(), Stopped> + Sync + 'a;

/// A [`FillFn`] failed; the upload stopped and the destination holds partial data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

/// What [`write_targets`] writes at one destination range.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// Bytes already in host memory (copied into staging).
    Bytes(&'a [u8]),
    /// `len` bytes written by `fill` straight into staging (through a cache-sized scratch per
    /// thread), so a converted column never exists whole on the host.
    Fill {
        /// Bytes the source writes.
        len: u64,
        /// The source's row size: every call but a source's last covers whole rows.
        row: u64,
        /// Writes the bytes.
        fill: &'a FillFn<'a>,
    },
}

impl Source<'_> {
    fn len(&self) -> u64 {
        match self {
            Source::Bytes(b) => b.len() as u64,
            Source::Fill { len, .. } => *len,
        }
    }
}

/// One destination range of [`write_targets`]: `source` lands at byte `offset` (a multiple
/// of 4) of `buffer` (which needs `COPY_DST`), its end zero-padded to a multiple of 4.
pub struct Target<'a> {
    /// The destination.
    pub buffer: &'a wgpu::Buffer,
    /// Byte offset in `buffer`.
    pub offset: u64,
    /// What lands there.
    pub source: Source<'a>,
}

/// How [`write_targets`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every target is written (for the next submission on the queue).
    Written,
    /// A [`Source::Fill`] returned [`Stopped`]; nothing after the staging buffer it was
    /// filling was submitted and the destinations hold partial data.
    Stopped,
}

/// Writes every target through the reused staging ring, packing targets back to back into
/// each staging buffer (one submission per full buffer, whatever the number of targets) and
/// filling a buffer from several threads while the previous one copies. Targets of at most
/// [`SMALL`] bytes in all go through `Queue::write_buffer`.
pub fn write_targets(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    targets: &[Target<'_>],
) -> Result<Outcome, TableError> {
    let padded = |len: u64| len.div_ceil(4) * 4;
    let total: u64 = targets.iter().map(|t| padded(t.source.len())).sum();
    if total == 0 {
        return Ok(Outcome::Written);
    }
    if total <= SMALL {
        for t in targets {
            let owned;
            let bytes = match &t.source {
                Source::Bytes(b) => *b,
                Source::Fill { len, fill, .. } => {
                    let mut v = vec![0u64; (*len as usize).div_ceil(8)];
                    let out = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut v)[..*len as usize];
                    if fill(0, out).is_err() {
                        return Ok(Outcome::Stopped);
                    }
                    owned = v;
                    &bytemuck::cast_slice::<u64, u8>(&owned)[..*len as usize]
                }
            };
            let whole = bytes.len() / 4 * 4;
            if whole > 0 {
                queue.write_buffer(t.buffer, t.offset, &bytes[..whole]);
            }
            if whole < bytes.len() {
                let mut tail = [0u8; 4];
                tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
                queue.write_buffer(t.buffer, t.offset + whole as u64, &tail);
            }
        }
        return Ok(Outcome::Written);
    }
    let largest = targets.iter().map(|t| t.buffer.size()).max().unwrap_or(0);
    let mut ring = Ring::new(device, largest)?;
    for t in targets {
        let len = t.source.len();
        // Pieces of a fill source end on whole rows and words (copies are word multiples).
        let step = match &t.source {
            Source::Bytes(_) => 4,
            Source::Fill { row, .. } => lcm((*row).max(1), 4),
        };
        let mut at = 0u64;
        while at < len {
            let room = ring.room(queue)? as u64;
            let rest = len - at;
            let take = if padded(rest) <= room {
                rest
            } else {
                room / step * step
            };
            if take == 0 {
                // Not one step fits: move on to the next staging buffer.
                if ring.submit(queue)? == Outcome::Stopped {
                    ring.finish();
                    return Ok(Outcome::Stopped);
                }
                ring.advance()?;
                continue;
            }
            ring.stage(t, at, take);
            at += take;
            if ring.stopped {
                break;
            }
        }
        if ring.stopped {
            ring.finish();
            return Ok(Outcome::Stopped);
        }
    }
    let outcome = ring.submit(queue)?;
    ring.finish();
    Ok(outcome)
}

fn lcm(a: u64, b: u64) -> u64 {
    let gcd = |mut x: u64, mut y: u64| {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    a / gcd(a, b) * b
}

type Pool = std::sync::Mutex<std::collections::HashMap<wgpu::Device, Vec<Slot>>>;

/// The idle staging buffers of every device, each mapped or waiting for its last copy.
fn pool() -> &'static Pool {
    static POOL: std::sync::OnceLock<Pool> = std::sync::OnceLock::new();
    POOL.get_or_init(Default::default)
}

/// One upload at a time per process uses the ring: concurrent uploads would each create a
/// ring of their own (fresh host-visible allocations, the costliest part of a copy) and
/// share one bus anyway; each upload fills its staging from several threads instead.
fn ring_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
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

/// A range of the current staging buffer and what fills it.
struct Pending<'a> {
    /// Offset in the staging buffer.
    staging: u64,
    /// Offset in the source.
    at: u64,
    /// Bytes of the source (the staging range is this rounded up to 4).
    len: u64,
    source: &'a Source<'a>,
}

/// The staging ring of one [`write_targets`] call and the copies of the slot being filled.
struct Ring<'a> {
    device: &'a wgpu::Device,
    _exclusive: std::sync::MutexGuard<'static, ()>,
    /// The largest destination (named by allocation errors).
    largest: u64,
    slots: Vec<Slot>,
    current: usize,
    /// Bytes filled in the current slot.
    filled: u64,
    /// (staging offset, destination, destination offset, bytes) copies of the current slot.
    copies: Vec<(u64, &'a wgpu::Buffer, u64, u64)>,
    /// What fills the current slot, written in one parallel pass at submission.
    pending: Vec<Pending<'a>>,
    /// A fill stopped: nothing more is staged or submitted.
    stopped: bool,
}

impl<'a> Ring<'a> {
    /// The device's pooled staging buffers (or a new one when it has none).
    fn new(device: &'a wgpu::Device, largest: u64) -> Result<Self, TableError> {
        let exclusive = ring_lock();
        let pooled = pool()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(device)
            .unwrap_or_default();
        let mut ring = Self {
            device,
            _exclusive: exclusive,
            largest,
            slots: pooled,
            current: 0,
            filled: 0,
            copies: Vec::new(),
            pending: Vec::new(),
            stopped: false,
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
            if self.submit(queue)? == Outcome::Stopped {
                return Ok(0);
            }
            self.advance()?;
        }
        Ok((PIECE - self.filled) as usize)
    }

    /// Moves to the next staging buffer (the current one was submitted).
    fn advance(&mut self) -> Result<(), TableError> {
        if self.slots.len() < RING {
            self.slots.push(Slot::new(self.device));
            self.current = self.slots.len() - 1;
        } else {
            self.current = (self.current + 1) % self.slots.len();
            self.wait_mapped(self.current)?;
        }
        Ok(())
    }

    /// Queues bytes `at .. at + len` of `target`'s source (at most [`Ring::room`], rounded
    /// up to 4) for the current slot.
    fn stage(&mut self, target: &'a Target<'a>, at: u64, len: u64) {
        let padded = len.div_ceil(4) * 4;
        debug_assert!(self.filled + padded <= PIECE);
        self.copies
            .push((self.filled, target.buffer, target.offset + at, padded));
        self.pending.push(Pending {
            staging: self.filled,
            at,
            len,
            source: &target.source,
        });
        self.filled += padded;
    }

    /// Fills the current slot's mapping (in parallel), unmaps it, submits its copies and maps
    /// it again. A stopped fill submits nothing and leaves the slot mapped.
    fn submit(&mut self, queue: &wgpu::Queue) -> Result<Outcome, TableError> {
        if self.stopped {
            return Ok(Outcome::Stopped);
        }
        if self.copies.is_empty() {
            return Ok(Outcome::Written);
        }
        let slot = &mut self.slots[self.current];
        {
            let mut view = slot
                .staging
                .slice(..self.filled)
                .get_mapped_range_mut()
                .map_err(|e| TableError::Allocation {
                    bytes: self.largest,
                    reason: format!("mapping an upload staging buffer failed: {e}"),
                })?;
            let ok = fill_slot(view.slice(..), &self.pending);
            if !ok {
                self.stopped = true;
            }
        }
        if self.stopped {
            self.copies.clear();
            self.pending.clear();
            self.filled = 0;
            return Ok(Outcome::Stopped);
        }
        slot.staging.unmap();
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("gpugraph-tables-upload"),
            });
        for &(from, to, at, len) in &self.copies {
            encoder.copy_buffer_to_buffer(&slot.staging, from, to, at, len);
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
        Ok(Outcome::Written)
    }

    /// Blocks until slot `i`'s copy finished and its mapping is back.
    fn wait_mapped(&mut self, i: usize) -> Result<(), TableError> {
        let slot = &mut self.slots[i];
        let Some(index) = slot.reading.take() else {
            return Ok(()); // Never submitted (or stopped): still mapped.
        };
        let failed = |reason: String| TableError::Allocation {
            bytes: self.largest,
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

/// Bytes one job of [`fill_slot`] writes: large enough to amortize the job, small enough that
/// a fill's scratch stays in cache between the conversion and the copy into the mapping.
const JOB: u64 = 256 << 10;

/// Writes every pending range into `view` (the slot's mapping from offset 0) with jobs of at
/// most [`JOB`] bytes spread over the thread pool: one core's `memcpy` into mapped (often
/// write-combined) memory is what bounds a host's upload rate. False when a fill stopped.
fn fill_slot(mut view: wgpu::WriteOnly<'_, [u8]>, pending: &[Pending<'_>]) -> bool {
    use rayon::prelude::*;
    let mut jobs: Vec<(SendWriteOnly<'_>, &Source<'_>, u64, u64)> = Vec::new();
    let mut cursor = 0u64;
    for p in pending {
        let (_, rest) = view.split_at((p.staging - cursor) as usize);
        view = rest;
        cursor = p.staging;
        let step = match p.source {
            Source::Bytes(_) => JOB,
            Source::Fill { row, .. } => {
                (JOB / lcm((*row).max(1), 8)).max(1) * lcm((*row).max(1), 8)
            }
        };
        let mut at = 0u64;
        while at < p.len {
            let len = step.min(p.len - at);
            // The range's last job also owns the zero padding to the next word.
            let span = if at + len == p.len {
                len.div_ceil(4) * 4
            } else {
                len
            };
            let (head, rest) = view.split_at(span as usize);
            view = rest;
            cursor += span;
            jobs.push((SendWriteOnly(head), p.source, p.at + at, len));
            at += len;
        }
    }
    jobs.into_par_iter()
        .map(|(mut target, source, at, len)| {
            let len = len as usize;
            match source {
                Source::Bytes(bytes) => {
                    let body = &bytes[at as usize..at as usize + len];
                    let whole = len / 4 * 4;
                    target.0.slice(..whole).copy_from_slice(&body[..whole]);
                    if whole < len {
                        let mut word = [0u8; 4];
                        word[..len - whole].copy_from_slice(&body[whole..]);
                        target.0.slice(whole..).copy_from_slice(&word);
                    }
                    true
                }
                Source::Fill { fill, .. } => SCRATCH.with_borrow_mut(|scratch| {
                    scratch.resize(JOB as usize / 8 + 1, 0);
                    let out: &mut [u8] = bytemuck::cast_slice_mut(scratch.as_mut_slice());
                    let padded = len.div_ceil(4) * 4;
                    out[len..padded].fill(0);
                    let ok = fill(at, &mut out[..len]).is_ok();
                    target.0.copy_from_slice(&out[..padded]);
                    ok
                }),
            }
        })
        .reduce(|| true, |a, b| a && b)
}

thread_local! {
    /// Each pool thread's fill scratch (8-byte aligned: fills cast it to their element type).
    static SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A `WriteOnly<[u8]>` that may move to another thread.
struct SendWriteOnly<'a>(wgpu::WriteOnly<'a, [u8]>);

// SAFETY: `WriteOnly<'a, T>` is wgpu's exclusive, write-only `&'a mut T`; wgpu implements
// `Send` for it whenever `T: Send` but its impl implicitly requires `T: Sized`, which leaves
// out slices. `[u8]` is `Send`, the pieces are disjoint (`split_at`), and the parallel pass
// ends before the mapping is unmapped, exactly as with `&mut [u8]`.
unsafe impl Send for SendWriteOnly<'_> {}

/// The usage of every buffer this crate creates: bindable, copyable both ways.
pub(crate) const BASE_USAGE: BufferUsages = BufferUsages::STORAGE
    .union(BufferUsages::COPY_SRC)
    .union(BufferUsages::COPY_DST);

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
    let (mut buffers, ()) = create_table_buffers(device, &[content_bytes], extra_usage, |b| {
        write_parts(device, queue, &b[0], parts)
    })?;
    Ok(buffers.remove(0))
}

/// Creates plain (device-local) table buffers of usage `STORAGE | COPY_SRC | COPY_DST |
/// extra_usage`, one per entry of `content_bytes` (each rounded up to 4, at least 4), then
/// runs `write` on them (e.g. [`write_targets`]); a validation or out-of-memory error raised
/// by either is returned as [`TableError::Allocation`] naming the bytes in all. Fails without
/// allocating when `extra_usage` holds a map flag or a size exceeds `max_buffer_size`.
pub fn create_table_buffers<T>(
    device: &wgpu::Device,
    content_bytes: &[u64],
    extra_usage: BufferUsages,
    write: impl FnOnce(&[wgpu::Buffer]) -> Result<T, TableError>,
) -> Result<(Vec<wgpu::Buffer>, T), TableError> {
    let map = BufferUsages::MAP_READ | BufferUsages::MAP_WRITE;
    if extra_usage.intersects(map) {
        return Err(TableError::InvalidUsage {
            usage: extra_usage,
            reason: "table buffers are storage buffers and cannot be mappable; read back through a staging copy".into(),
        });
    }
    let sizes: Vec<u64> = content_bytes
        .iter()
        .map(|b| {
            b.div_ceil(wgpu::COPY_BUFFER_ALIGNMENT)
                .saturating_mul(wgpu::COPY_BUFFER_ALIGNMENT)
                .max(wgpu::COPY_BUFFER_ALIGNMENT)
        })
        .collect();
    let max = device.limits().max_buffer_size;
    if let Some(&size) = sizes.iter().find(|&&s| s > max) {
        return Err(TableError::BufferTooLarge { bytes: size, max });
    }
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let buffers: Vec<wgpu::Buffer> = sizes
        .iter()
        .map(|&size| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("gpugraph-tables-upload"),
                size,
                usage: BASE_USAGE | extra_usage,
                mapped_at_creation: false,
            })
        })
        .collect();
    let written = write(&buffers);
    let oom_error = pollster::block_on(oom.pop());
    let validation_error = pollster::block_on(validation.pop());
    if let Some(e) = oom_error.or(validation_error) {
        return Err(TableError::Allocation {
            bytes: sizes.iter().sum(),
            reason: e.to_string(),
        });
    }
    Ok((buffers, written?))
}
