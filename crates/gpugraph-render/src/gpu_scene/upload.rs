//! Staged mutation uploads (spec 6.1b's upload cost): [`GpuScene::mutate_staged`] packs a
//! transaction's dirty record ranges into one [`GpuSceneUpload`] — one queue write when it is
//! the first transaction since the last encode, three when it joins transactions still staged,
//! whatever the number of ranges — and a scatter dispatch node in the consumer's graph copies
//! them into the records; a `bounds` node after it re-derives the packed bounds rows and draw
//! key rows ([`super::bounds`]) of the slots whose feeding words were staged, so the packed
//! views cost no upload bytes.
//!
//! Why: [`GpuScene::mutate`] issues one `queue.write_buffer` per merged range, and each of
//! those makes its own staging allocation in wgpu; a patch of 1,000 scattered records costs
//! milliseconds of CPU that way. Staged, the same patch is packed straight into staging
//! memory with no intermediate copy: into one of the upload's two persistent host buffers
//! (`MAP_WRITE | COPY_SRC`) while it is mapped, which the encode that takes the round copies
//! into the storage ([`GpuSceneUpload::encode`]) and the next round maps again — no
//! allocation at all — or, when neither is mapped yet (the device was not polled since the
//! encode that copied it), into the one write's staging memory (`Queue::write_buffer_with`:
//! one allocation in wgpu, its Vulkan buffer and memory created and freed per write). A round
//! (the transactions between two encodes) goes wholly one way, so the copy at encode never
//! lands on bytes a queue write staged.
//!
//! Layout: one storage buffer of `2 × runs + 7 + words` words. The run table (`(record word,
//! first payload word)` pairs) fills the first `2 × runs` words from their end downwards — run
//! `i` at words `2 × (runs − i − 1)` — then come the header (staged words, staged runs, 0, 0,
//! and the scatter's indirect arguments `x, 1, 1`) and the payload words. So the first
//! transaction's runs, the header and its payload are one contiguous range of the buffer: one
//! write. A transaction joining staged ones writes its runs below theirs, the header, and its
//! payload after theirs.
//!
//! Contract. A staged transaction changes the CPU copy and the state block at once (the state
//! is one queue write, as in `mutate`), and the records when the next encode of a graph that
//! holds the upload's nodes ([`GpuSceneUpload::add_to_graph`]) is submitted; the scatter runs
//! before anything in that graph reads the records (declared uses order it). Transactions
//! staged before that encode accumulate; one that touches bytes still staged is staged again
//! together with them from the CPU copy (as a first transaction: one write), because the
//! scatter writes all runs at once and a word staged twice could land either way. The encode
//! that takes them must be submitted before the next staged transaction:
//! [`GpuSceneUpload::encode`] (called by [`crate::gpu_scene::GpuSceneFrame::encode`]) records
//! the host buffer's copy and tells the upload to start over at word 0. A transaction that does not fit what is left of the upload
//! is written the way `mutate` writes, together with the ranges still staged (from the CPU
//! copy, which is newest), and the staged ones are dropped (a 4-byte write zeroes the
//! scatter's arguments; the report counts it as a queue write, not as staging bytes): the
//! result is the same, only the cost differs. The `settle` node zeroes the dispatch arguments
//! after the scatter, so encodes without a new transaction dispatch nothing.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use gpugraph_command::{
    Binding, CommandGraph, DataView, DispatchNode, Grid, ShaderSource, VectorFormat,
};
use wgpu::BufferUsages as U;

use super::ranges::{intersects, merge};
use super::{
    GpuScene, GpuSceneError, GpuSceneMutation, GpuSceneMutationReport, GpuSceneViews,
    GPU_SCENE_RECORD_BYTES,
};
use crate::RenderError;

const WGSL: &str = include_str!("upload.wgsl");
const WORKGROUP: u32 = 256;
/// Words one scatter dispatch covers with x workgroups alone (65,535 × 256).
pub const GPU_SCENE_UPLOAD_MAX_WORDS: u32 = 65_535 * WORKGROUP;
/// Header words: staged words, staged runs, two zeros, the scatter's `x, 1, 1`.
const HEADER_WORDS: u64 = 7;

/// Constants of the scatter (WGSL `Params`): element offsets inside the staging binding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
struct UploadParams {
    record_base: u32,
    staging_base: u32,
    /// The header's first word (= 2 × the run capacity).
    header: u32,
    /// Payload word 0 (= header + 7).
    payload: u32,
    /// Element offset of packed bounds row 0 (in float32x4 rows).
    bounds_base: u32,
    /// Element offset of draw key row 0 (in uint32x4 rows).
    keys_base: u32,
    reserved: [u32; 2],
}

/// Staging storage for [`GpuScene::mutate_staged`] (see the module doc): one buffer of run
/// table, header (counts and the scatter's indirect arguments) and payload words, for one
/// scene.
#[derive(Debug)]
pub struct GpuSceneUpload {
    label: String,
    records: wgpu::Buffer,
    staging: wgpu::Buffer,
    word_capacity: u32,
    run_capacity: u32,
    staged_words: u32,
    staged_runs: u32,
    /// Byte ranges staged and not yet taken by an encode (relative to slot 0).
    staged: Vec<Range<u64>>,
    /// Scratch for one transaction's run table.
    table: Vec<u32>,
    /// What the encodes that take the staged bytes share with this upload.
    link: UploadLink,
}

/// Host buffers per upload: one being written while the one copied by the last encode
/// maps again.
const RING_BUFFERS: usize = 2;

/// One host-visible staging buffer of the ring (`MAP_WRITE | COPY_SRC`, the size of the
/// upload's storage).
#[derive(Debug)]
struct HostBuffer {
    buffer: wgpu::Buffer,
    /// Set by the map callback.
    mapped: Arc<AtomicBool>,
    /// Copied by an encode since it was last mapped (to map again once that encode was
    /// submitted: when the next round starts).
    copied: bool,
}

/// The staged bytes' way to the GPU, shared by the upload and the encodes that take them.
#[derive(Debug, Default)]
struct RingState {
    buffers: Vec<HostBuffer>,
    /// The host buffer holding this round's bytes and the byte range they span (`None`: the
    /// round went through queue writes, or nothing is staged).
    pending: Option<(usize, Range<u64>)>,
    /// Whether an encode took the staged bytes (the next transaction starts a new round).
    encoded: bool,
}

/// An encode's handle on an upload's staged bytes ([`GpuSceneUpload::encode`]).
#[derive(Clone, Debug)]
pub(crate) struct UploadLink {
    staging: wgpu::Buffer,
    ring: Arc<Mutex<RingState>>,
}

impl UploadLink {
    /// Records the copy of the round's host bytes (if the round went through the ring) into
    /// the upload's storage, and marks the round taken.
    pub(crate) fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((i, range)) = ring.pending.take() {
            let host = &mut ring.buffers[i];
            host.buffer.unmap();
            host.mapped.store(false, Ordering::Release);
            host.copied = true;
            encoder.copy_buffer_to_buffer(
                &host.buffer,
                range.start,
                &self.staging,
                range.start,
                range.end - range.start,
            );
        }
        ring.encoded = true;
    }
}

impl GpuSceneUpload {
    /// Staging for `scene` of `word_capacity` payload words (1 ..=
    /// [`GPU_SCENE_UPLOAD_MAX_WORDS`]; 4 bytes each) and `run_capacity` runs (8 bytes each).
    /// A transaction of 1,000 patched transforms needs 16,000 words and 1,000 runs.
    pub fn new(
        device: &wgpu::Device,
        scene: &GpuScene,
        word_capacity: u32,
        run_capacity: u32,
    ) -> Result<Self, GpuSceneError> {
        let label = format!("{}/upload", scene.label());
        if !(1..=GPU_SCENE_UPLOAD_MAX_WORDS).contains(&word_capacity) || run_capacity == 0 {
            return Err(GpuSceneError::UploadCapacity {
                scene: scene.label().into(),
                words: word_capacity,
                runs: run_capacity,
                max_words: GPU_SCENE_UPLOAD_MAX_WORDS,
            });
        }
        let words = 2 * u64::from(run_capacity) + HEADER_WORDS + u64::from(word_capacity);
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(&format!("{label}/staging")),
            size: words * 4,
            usage: U::STORAGE | U::INDIRECT | U::COPY_DST,
            mapped_at_creation: false,
        });
        let buffers = (0..RING_BUFFERS)
            .map(|k| HostBuffer {
                buffer: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("{label}/host-{k}")),
                    size: words * 4,
                    usage: U::MAP_WRITE | U::COPY_SRC,
                    mapped_at_creation: true,
                }),
                mapped: Arc::new(AtomicBool::new(true)),
                copied: false,
            })
            .collect();
        let link = UploadLink {
            staging: staging.clone(),
            ring: Arc::new(Mutex::new(RingState {
                buffers,
                pending: None,
                encoded: false,
            })),
        };
        Ok(Self {
            records: scene.record_buffer().clone(),
            staging,
            word_capacity,
            run_capacity,
            staged_words: 0,
            staged_runs: 0,
            staged: Vec::new(),
            table: Vec::new(),
            link,
            label,
        })
    }

    /// The same upload staging through queue writes alone, with no host buffers: for a caller
    /// that never polls the device (host buffers map again only when it is polled).
    pub fn without_host_buffers(self) -> Self {
        std::mem::take(&mut self.ring().buffers);
        self
    }

    /// Payload words this upload holds.
    pub fn word_capacity(&self) -> u32 {
        self.word_capacity
    }

    /// Runs this upload holds.
    pub fn run_capacity(&self) -> u32 {
        self.run_capacity
    }

    /// Words staged and not yet taken by an encode.
    pub fn staged_words(&self) -> u32 {
        if self.ring().encoded {
            0
        } else {
            self.staged_words
        }
    }

    /// Takes the staged transactions into `encoder`, which must then encode the graph
    /// holding the upload's nodes ([`Self::add_to_graph`]) and be submitted before the next
    /// staged transaction: records the copy of the bytes staged through the upload's mapped
    /// host buffer into its storage (when this round went that way), ahead of the scatter;
    /// the next staged transaction starts at word 0. [`crate::gpu_scene::GpuSceneFrame::encode`]
    /// calls it.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        self.link.encode(encoder);
    }

    /// The link a frame encodes through without holding the upload.
    pub(crate) fn link(&self) -> UploadLink {
        self.link.clone()
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, RingState> {
        self.link.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether an encode took the staged bytes since the last transaction: then a new round
    /// starts, and the host buffers that encode copied map again (it was submitted by now).
    fn start_round(&self) -> bool {
        let mut ring = self.ring();
        if !std::mem::take(&mut ring.encoded) {
            return false;
        }
        for b in ring.buffers.iter_mut().filter(|b| b.copied) {
            b.copied = false;
            let mapped = Arc::clone(&b.mapped);
            b.buffer.map_async(wgpu::MapMode::Write, .., move |r| {
                if r.is_ok() {
                    mapped.store(true, Ordering::Release);
                }
            });
        }
        true
    }

    /// Word of the header in the staging buffer.
    fn header_word(&self) -> u64 {
        2 * u64::from(self.run_capacity)
    }

    /// Adds `{id}/scatter` (indirect, one invocation per staged word), `{id}/bounds` (the
    /// same grid: each staged `flags` or `sphere` word re-derives its slot's packed bounds row,
    /// each staged `flags`, `group_id`, `geometry_id` or `command_slot` word its draw key row,
    /// from the scattered record, [`crate::gpu_scene::bounds`]; only for scenes with packed
    /// views) and `{id}/settle` over `scene`'s views (the scene this upload was made for,
    /// imported into `graph`). Add them before the nodes that read the records or the
    /// bounds. Compiles and submits nothing.
    pub fn add_to_graph(
        &self,
        graph: &mut CommandGraph,
        scene: &GpuSceneViews,
        id: &str,
    ) -> Result<(), RenderError> {
        let handle = graph.import_buffer_once(
            format!("{id}/staging"),
            &self.staging,
            U::STORAGE | U::INDIRECT,
        )?;
        let staging =
            graph.create_packed_view(handle, VectorFormat::Uint32, self.staging.size() / 4)?;
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let base = |v: &DataView| v.aligned_range(align).element_offset as u32;
        let header = self.header_word();
        let params = UploadParams {
            record_base: base(&scene.record_words),
            staging_base: base(&staging),
            header: header as u32,
            payload: (header + HEADER_WORDS) as u32,
            bounds_base: scene.bounds.map_or(0, |b| base(&b) / 4),
            keys_base: scene.keys.map_or(0, |b| base(&b) / 4),
            reserved: [0; 2],
        };
        let shader = ShaderSource::new("render/gpu_scene/upload", WGSL);
        let indirect = graph.create_data_view(
            handle,
            gpugraph_command::DataViewDescriptor::packed(VectorFormat::Uint32, 3)
                .at_offset(4 * (header + 4)),
        )?;
        graph.add_dispatch_node(DispatchNode::new(
            format!("{id}/scatter"),
            shader.clone(),
            "scatter",
            vec![
                Binding::params(0, &params),
                Binding::read_write(1, scene.record_words),
                Binding::read(2, staging),
            ],
            Grid::Indirect(indirect),
        ))?;
        if let (Some(bounds), Some(keys)) = (scene.bounds, scene.keys) {
            graph.add_dispatch_node(DispatchNode::new(
                format!("{id}/bounds"),
                shader.clone(),
                "bounds",
                vec![
                    Binding::params(0, &params),
                    Binding::read(2, staging),
                    Binding::read(4, scene.record_words),
                    Binding::read_write(5, bounds),
                    Binding::read_write(6, keys),
                ],
                Grid::Indirect(indirect),
            ))?;
        }
        graph.add_dispatch_node(DispatchNode::new(
            format!("{id}/settle"),
            shader,
            "settle",
            vec![Binding::params(0, &params), Binding::read_write(3, staging)],
            Grid::Workgroups([1, 1, 1]),
        ))?;
        Ok(())
    }

    /// Stages `ranges` of `records` (the scene's CPU copy, as bytes) after what is staged:
    /// the queue writes made, 0 when written into a mapped host buffer (see the module doc for
    /// the layout).
    fn stage(&mut self, queue: &wgpu::Queue, records: &[u8], ranges: &[Range<u64>]) -> usize {
        let runs = ranges.len() as u64;
        let words: u64 = ranges.iter().map(|r| (r.end - r.start) / 4).sum();
        let (old_runs, old_words) = (u64::from(self.staged_runs), u64::from(self.staged_words));
        // Run table, lowest address first: the last run first.
        self.table.clear();
        let mut src = old_words + words;
        for r in ranges.iter().rev() {
            src -= (r.end - r.start) / 4;
            self.table.push((r.start / 4) as u32);
            self.table.push(src as u32);
        }
        self.staged_words = (old_words + words) as u32;
        self.staged_runs = (old_runs + runs) as u32;
        let header_values = [
            self.staged_words,
            self.staged_runs,
            0,
            0,
            self.staged_words.div_ceil(WORKGROUP),
            1,
            1,
        ];
        let header = self.header_word();
        let table_bytes: &[u8] = bytemuck::cast_slice(&self.table);
        let header_bytes: &[u8] = bytemuck::cast_slice(&header_values);
        let table_at = 4 * (header - 2 * (old_runs + runs));
        let payload_at = 4 * (header + HEADER_WORDS + old_words);
        // A round goes wholly through one host buffer or wholly through queue writes: the
        // copy at encode spans the round's bytes, which queue writes (landing before it) must
        // not share. A round starts (no staged run) on a ready host buffer when there is one.
        let mut ring = self.link.ring.lock().unwrap_or_else(|e| e.into_inner());
        let host = match &ring.pending {
            Some((i, _)) => Some(*i),
            None if old_runs == 0 => ring
                .buffers
                .iter()
                .position(|b| !b.copied && b.mapped.load(Ordering::Acquire)),
            None => None,
        };
        if let Some(i) = host {
            if let Ok(mut view) = ring.buffers[i].buffer.get_mapped_range_mut(..) {
                view.put(table_at as usize, table_bytes);
                view.put(4 * header as usize, header_bytes);
                pack(&mut view, records, ranges, payload_at as usize);
                drop(view);
                let end = payload_at + 4 * words;
                let span = match ring.pending.take() {
                    Some((_, r)) => r.start.min(table_at)..r.end.max(end),
                    None => table_at..end,
                };
                ring.pending = Some((i, span));
                return 0;
            }
        }
        drop(ring);
        let size = |bytes: u64| wgpu::BufferSize::new(bytes).expect("nonempty");
        if old_runs == 0 {
            // Runs, header, payload: one range of the buffer.
            let total = 8 * runs + 4 * HEADER_WORDS + 4 * words;
            let mut view = queue
                .write_buffer_with(&self.staging, table_at, size(total))
                .expect("the staged range lies inside the upload");
            view.put(0, table_bytes);
            view.put(table_bytes.len(), header_bytes);
            pack(
                &mut view,
                records,
                ranges,
                table_bytes.len() + header_bytes.len(),
            );
            return 1;
        }
        queue.write_buffer(&self.staging, table_at, table_bytes);
        queue.write_buffer(&self.staging, 4 * header, header_bytes);
        let mut view = queue
            .write_buffer_with(&self.staging, payload_at, size(4 * words))
            .expect("the staged range lies inside the upload");
        pack(&mut view, records, ranges, 0);
        3
    }
}

/// A mapped range written at byte offsets (wgpu's two write-only views).
trait Put {
    fn put(&mut self, at: usize, bytes: &[u8]);
}

impl Put for wgpu::QueueWriteBufferView {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        self.slice(at..at + bytes.len()).copy_from_slice(bytes);
    }
}

impl Put for wgpu::BufferViewMut {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        self.slice(at..at + bytes.len()).copy_from_slice(bytes);
    }
}

/// Writes the bytes of `ranges` of `records` one after another from byte `at` of `view`.
fn pack(view: &mut impl Put, records: &[u8], ranges: &[Range<u64>], mut at: usize) {
    for r in ranges {
        let bytes = &records[r.start as usize..r.end as usize];
        view.put(at, bytes);
        at += bytes.len();
    }
}

impl GpuScene {
    /// [`Self::mutate`] through `upload` (see [`crate::gpu_scene::upload`]): the same
    /// validation, CPU copy, state write and report (`record_writes` are the runs staged,
    /// `staging_bytes` the run table, counts and arguments), with the record bytes staged in
    /// one queue write (three when joining transactions still staged) and copied by the
    /// upload's scatter node at the next submitted encode. Fails, changing nothing, where
    /// `mutate` fails or when `upload` belongs to another scene.
    pub fn mutate_staged(
        &mut self,
        queue: &wgpu::Queue,
        upload: &mut GpuSceneUpload,
        mutation: &GpuSceneMutation,
    ) -> Result<GpuSceneMutationReport, GpuSceneError> {
        if upload.records != self.records {
            return Err(GpuSceneError::ForeignUpload {
                scene: self.label.clone(),
                upload: upload.label.clone(),
            });
        }
        let super::mutation::Applied {
            mut report, state, ..
        } = self.apply_to_copy(mutation)?;
        if upload.start_round() {
            upload.staged_words = 0;
            upload.staged_runs = 0;
            upload.staged.clear();
        }
        // Whether the GPU's header holds arguments of transactions not yet taken.
        let pending = upload.staged_runs > 0;
        // One scatter writes all staged runs at once, in no order: a word staged twice
        // would land either way. A transaction touching what is still staged is therefore
        // staged afresh together with it, from the CPU copy (which holds the newest bytes).
        let restage = intersects(&upload.staged, &report.record_writes);
        let merged;
        let ranges: &[Range<u64>] = if restage {
            upload.staged_words = 0;
            upload.staged_runs = 0;
            let mut all = std::mem::take(&mut upload.staged);
            all.extend(report.record_writes.iter().cloned());
            merged = merge(all);
            &merged
        } else {
            &report.record_writes
        };
        let words: u64 = ranges.iter().map(|r| (r.end - r.start) / 4).sum();
        let runs = ranges.len() as u64;
        let fits = u64::from(upload.staged_words) + words <= u64::from(upload.word_capacity)
            && u64::from(upload.staged_runs) + runs <= u64::from(upload.run_capacity);
        let records: &[u8] = bytemuck::cast_slice(&self.cpu.as_ref().expect("checked").records);
        if !fits {
            // Written directly, with what is still staged: the CPU copy holds the newest bytes
            // of both, and the staged scatter is cancelled so it cannot overwrite them.
            let mut all = std::mem::take(&mut upload.staged);
            all.extend(ranges.iter().cloned());
            let all = merge(all);
            for r in &all {
                queue.write_buffer(
                    &self.records,
                    self.record_offset + r.start,
                    &records[r.start as usize..r.end as usize],
                );
                report.queue_writes += 1;
            }
            // Key rows from the bytes: those of earlier staged transactions are not known.
            self.write_bounds(queue, &all, None, &mut report);
            if pending {
                queue.write_buffer(
                    &upload.staging,
                    4 * (upload.header_word() + 4),
                    &0u32.to_ne_bytes(),
                );
                report.queue_writes += 1;
            }
            // Nor may a copy of the round's host bytes land.
            upload.ring().pending = None;
            upload.staged_words = 0;
            upload.staged_runs = 0;
            self.write_state(queue, state, &mut report);
            return Ok(report);
        }
        if runs > 0 {
            match upload.stage(queue, records, ranges) {
                0 => report.host_writes = 1,
                n => report.queue_writes += n,
            }
            if upload.staged.is_empty() {
                upload.staged.extend(ranges.iter().cloned());
            } else {
                let mut staged = std::mem::take(&mut upload.staged);
                staged.extend(ranges.iter().cloned());
                upload.staged = merge(staged);
            }
            // Restaged bytes of earlier transactions count here too: the total is exact.
            report.staging_bytes = 8 * runs + 4 * HEADER_WORDS + 4 * words - report.record_bytes;
        }
        self.write_state(queue, state, &mut report);
        Ok(report)
    }
}

/// Payload words of `records` whole records: for sizing an upload for whole-record
/// transactions.
pub fn record_words(records: u32) -> u32 {
    records.saturating_mul((GPU_SCENE_RECORD_BYTES / 4) as u32)
}
