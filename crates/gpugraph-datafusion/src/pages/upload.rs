//! Upload slabs reused across the row groups and queries of a session: a mapped upload
//! buffer the page parser writes into, and the device buffer it is copied to for the expand
//! kernel.
//!
//! Why: staging each column chunk through `Queue::write_buffer_with` and a fresh device
//! buffer made every column chunk allocate twice from the device's memory allocator (one
//! lock for all 16 decoders), its upload memory came and went in blocks of 64–128 MiB of
//! pinned host memory as submissions completed, and handing the staging back to the queue
//! took the lock the submitting thread holds while it submits. On the H200 host the
//! allocation alone was 16–32% of the page scan's decoding (TPC-H SF 10 from Parquet,
//! 2026-12-04, `stage_alloc_time`); on lavapipe the decoders' time fell 6–24x with slabs
//! (`bench/results/lavapipe/2026-12-04-upload-pool/`). A slab goes back to its pool when the submission that copies and expands it completes
//! (`map_buffer_on_submit` maps its upload buffer again then), so a scan reaches a steady
//! set of slabs after its first few row groups and later queries start from it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use gpugraph_command::{wgpu, GpuContext};

/// Smallest slab: column chunks below it share its size class.
const MIN_SLAB: u64 = 64 << 10;
/// Above this, size classes step by it instead of doubling (a 40 MiB chunk takes 48 MiB,
/// not 64).
const STEP_SLAB: u64 = 16 << 20;
/// Most bytes of idle slabs a pool keeps (each byte once in upload memory and once in
/// device memory); a slab returning past it is freed. A TPC-H SF 10 Q1 scan holds one row
/// group per decoder in flight: 16 × 7 columns, the largest in an 8 MiB class.
const MAX_IDLE_BYTES: u64 = 1 << 30;

/// A mapped upload buffer (`MAP_WRITE | COPY_SRC`) and a device buffer (`STORAGE |
/// COPY_DST | COPY_SRC`) of the same size. Owned by one column chunk from
/// [`UploadPool::acquire`] until the submission of [`UploadPool::copy`]'s commands completes.
#[derive(Debug)]
pub struct Slab {
    upload: wgpu::Buffer,
    device: wgpu::Buffer,
    /// The device both live on.
    owner: wgpu::Device,
}

impl Slab {
    /// Bytes either buffer holds.
    pub fn size(&self) -> u64 {
        self.upload.size()
    }

    /// The device buffer the kernels bind (its bytes past the copied length are stale).
    pub fn device(&self) -> &wgpu::Buffer {
        &self.device
    }

    /// A writable view of the whole upload buffer (drop it before [`UploadPool::copy`]).
    pub fn view(&self) -> Result<wgpu::BufferViewMut, String> {
        self.upload
            .get_mapped_range_mut(..)
            .map_err(|e| format!("an upload slab of {} bytes: {e}", self.size()))
    }
}

/// A session's idle [`Slab`]s by size class (cheap to clone: clones share them). A pool
/// keeps the slabs of the first device it serves; slabs for another device are made and
/// freed as needed, never mixed in.
#[derive(Clone, Debug, Default)]
pub struct UploadPool {
    idle: Arc<Mutex<Idle>>,
    created: Arc<AtomicU64>,
}

#[derive(Debug, Default)]
struct Idle {
    /// The device the slabs live on (the first one served).
    device: Option<wgpu::Device>,
    slabs: HashMap<u64, Vec<Slab>>,
    bytes: u64,
}

/// The size class of a slab holding `bytes`.
fn class_of(bytes: u64) -> u64 {
    let bytes = bytes.max(MIN_SLAB);
    if bytes <= STEP_SLAB {
        bytes.next_power_of_two()
    } else {
        bytes.div_ceil(STEP_SLAB) * STEP_SLAB
    }
}

impl UploadPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Slabs this pool has created (a scan that reuses them stops adding to it).
    pub fn created(&self) -> u64 {
        self.created.load(Ordering::Relaxed)
    }

    /// A mapped slab of at least `bytes` bytes: an idle one of its size class, or a new one.
    pub fn acquire(&self, ctx: &GpuContext, bytes: u64) -> Slab {
        let class = class_of(bytes);
        if let Ok(mut idle) = self.idle.lock() {
            let device = idle.device.get_or_insert_with(|| ctx.device.clone());
            if *device == ctx.device {
                if let Some(slab) = idle.slabs.get_mut(&class).and_then(Vec::pop) {
                    idle.bytes -= class;
                    return slab;
                }
            }
        }
        self.created.fetch_add(1, Ordering::Relaxed);
        let buffer = |label: &str, usage, mapped_at_creation| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: class,
                usage,
                mapped_at_creation,
            })
        };
        Slab {
            upload: buffer(
                "gpugraph-datafusion-upload-slab",
                wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                true,
            ),
            // COPY_SRC: tests read what was copied.
            device: buffer(
                "gpugraph-datafusion-device-slab",
                wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_DST
                    | wgpu::BufferUsages::COPY_SRC,
                false,
            ),
            owner: ctx.device.clone(),
        }
    }

    /// Records the copy of `slab`'s first `bytes` (4-aligned) bytes to its device buffer into
    /// `encoder`, and hands the slab back to this pool once that command buffer's submission
    /// completes (a command buffer dropped unsubmitted frees it instead). The caller keeps a
    /// clone of [`Slab::device`] for the kernels it records after the copy.
    pub fn copy(&self, encoder: &mut wgpu::CommandEncoder, slab: Slab, bytes: u64) {
        slab.upload.unmap();
        if bytes > 0 {
            encoder.copy_buffer_to_buffer(&slab.upload, 0, &slab.device, 0, bytes);
        }
        let upload = slab.upload.clone();
        let pool = self.clone();
        encoder.map_buffer_on_submit(&upload, wgpu::MapMode::Write, .., move |mapped| {
            if mapped.is_ok() {
                pool.put_back(slab);
            }
        });
    }

    /// Frees every idle slab (slabs in flight still come back).
    pub fn clear(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.slabs.clear();
            idle.bytes = 0;
        }
    }

    fn put_back(&self, slab: Slab) {
        let class = slab.size();
        if let Ok(mut idle) = self.idle.lock() {
            if idle.device.as_ref() == Some(&slab.owner) && idle.bytes + class <= MAX_IDLE_BYTES {
                idle.bytes += class;
                idle.slabs.entry(class).or_default().push(slab);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::tests::{gpu, read_back};

    /// Writes `words` into a slab of `pool`, copies it and waits; returns its device buffer's
    /// words.
    fn round_trip(ctx: &GpuContext, pool: &UploadPool, words: &[u32]) -> Vec<u32> {
        let slab = pool.acquire(ctx, 4 * words.len() as u64);
        let mut view = slab.view().expect("mapped");
        view.slice(..4 * words.len())
            .copy_from_slice(bytemuck::cast_slice(words));
        drop(view);
        let device = slab.device().clone();
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        pool.copy(&mut encoder, slab, 4 * words.len() as u64);
        ctx.queue.submit([encoder.finish()]);
        // read_back waits for the queue, which maps the slab again and returns it.
        read_back(ctx, &device, words.len())
    }

    #[test]
    fn slabs_come_back_after_their_submission_and_clear_frees_them() {
        let ctx = gpu();
        let pool = UploadPool::new();
        let first: Vec<u32> = (0..5000).collect();
        assert_eq!(round_trip(&ctx, &pool, &first), first);
        assert_eq!(pool.created(), 1);
        // The same size class again: the slab, stale bytes and all, is reused, and what is
        // copied is what was written this time.
        let second: Vec<u32> = (0..3000).map(|i| i * 7 + 1).collect();
        assert_eq!(round_trip(&ctx, &pool, &second), second);
        assert_eq!(pool.created(), 1);
        // Another size class needs its own slab.
        let large = vec![9u32; (MIN_SLAB as usize / 4) * 3];
        assert_eq!(round_trip(&ctx, &pool, &large), large);
        assert_eq!(pool.created(), 2);
        pool.clear();
        assert_eq!(round_trip(&ctx, &pool, &first), first);
        assert_eq!(pool.created(), 3);
    }

    #[test]
    fn a_pool_shared_by_two_devices_keeps_only_the_first_ones_slabs() {
        let (first, second) = (gpu(), gpu());
        let pool = UploadPool::new();
        let words: Vec<u32> = (0..1000).collect();
        assert_eq!(round_trip(&first, &pool, &words), words);
        // The second device gets a slab of its own each time, and the first's idle one is
        // never handed to it.
        assert_eq!(round_trip(&second, &pool, &words), words);
        assert_eq!(round_trip(&second, &pool, &words), words);
        assert_eq!(pool.created(), 3);
        assert_eq!(round_trip(&first, &pool, &words), words);
        assert_eq!(pool.created(), 3);
    }

    #[test]
    fn a_slab_dropped_before_its_copy_is_freed_not_returned() {
        let ctx = gpu();
        let pool = UploadPool::new();
        drop(pool.acquire(&ctx, 100));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let slab = pool.acquire(&ctx, 100);
        pool.copy(&mut encoder, slab, 100);
        // Never submitted: the slab goes with the encoder.
        drop(encoder);
        let _ = ctx.device.poll(wgpu::PollType::wait_indefinitely());
        pool.acquire(&ctx, 100);
        assert_eq!(pool.created(), 3);
    }

    #[test]
    fn size_classes_double_then_step() {
        assert_eq!(class_of(0), MIN_SLAB);
        assert_eq!(class_of(MIN_SLAB + 1), 2 * MIN_SLAB);
        assert_eq!(class_of(5 << 20), 8 << 20);
        assert_eq!(class_of(STEP_SLAB), STEP_SLAB);
        assert_eq!(class_of(STEP_SLAB + 1), 2 * STEP_SLAB);
        assert_eq!(class_of(40 << 20), 48 << 20);
    }
}
