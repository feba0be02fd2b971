//! Staged mutation uploads (spec 6.1b's upload cost): [`GpuScene::mutate_staged`] packs a
//! transaction's dirty record ranges into one [`GpuSceneUpload`] with four queue writes
//! (payload words, run table, counts, dispatch arguments), whatever the number of ranges, and
//! a scatter dispatch node in the consumer's graph copies them into the records.
//!
//! Why: [`GpuScene::mutate`] issues one `queue.write_buffer` per merged range, and each of
//! those makes its own staging allocation in wgpu; a patch of 1,000 scattered records costs
//! milliseconds of CPU that way. Staged, the same patch is a few memcpys and four writes.
//!
//! Contract. A staged transaction changes the CPU copy and the state block at once (the state
//! is one queue write, as in `mutate`), and the records when the next encode of a graph that
//! holds the upload's nodes ([`GpuSceneUpload::add_to_graph`]) is submitted; the scatter runs
//! before anything in that graph reads the records (declared uses order it). Transactions
//! staged before that encode accumulate; one that touches bytes still staged is staged again
//! together with them from the CPU copy, because the scatter writes all runs at once and a
//! word staged twice could land either way. The encode that takes them must be submitted before the next staged
//! transaction: [`GpuSceneUpload::mark_encoded`] (called by [`crate::GpuSceneFrame::encode`])
//! tells the upload to start over at word 0. A transaction that does not fit what is left
//! of the upload is written the way `mutate` writes, together with the ranges still staged
//! (from the CPU copy, which is newest), and the staged ones are dropped: the result is the
//! same, only the cost differs. The `settle` node zeroes the dispatch arguments after the
//! scatter, so encodes without a new transaction dispatch nothing.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use gpugraph_command::{
    Binding, CommandGraph, DataView, DispatchNode, Grid, ShaderSource, VectorFormat,
};
use wgpu::BufferUsages as U;

use super::mutation::merge;
use super::{
    GpuScene, GpuSceneError, GpuSceneMutation, GpuSceneMutationReport, GpuSceneViews,
    GPU_SCENE_RECORD_BYTES,
};
use crate::RenderError;

const WGSL: &str = include_str!("upload.wgsl");
const WORKGROUP: u32 = 256;
/// Words one scatter dispatch covers with x workgroups alone (65,535 × 256).
pub const GPU_SCENE_UPLOAD_MAX_WORDS: u32 = 65_535 * WORKGROUP;

/// Constants of the scatter (WGSL `Params`): element offsets inside each binding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
struct UploadParams {
    record_base: u32,
    payload_base: u32,
    runs_base: u32,
    counts_base: u32,
    args_base: u32,
    reserved: [u32; 3],
}

/// Staging storage for [`GpuScene::mutate_staged`] (see the module doc): payload words, a
/// run table, counts and the scatter's indirect arguments, for one scene.
#[derive(Debug)]
pub struct GpuSceneUpload {
    label: String,
    records: wgpu::Buffer,
    payload: wgpu::Buffer,
    runs: wgpu::Buffer,
    counts: wgpu::Buffer,
    args: wgpu::Buffer,
    word_capacity: u32,
    run_capacity: u32,
    staged_words: u32,
    staged_runs: u32,
    /// Byte ranges staged and not yet taken by an encode (relative to slot 0).
    staged: Vec<Range<u64>>,
    encoded: Arc<AtomicBool>,
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
        let buffer = |name: &str, bytes: u64, usage: U| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(&format!("{label}/{name}")),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        let storage = U::STORAGE | U::COPY_DST;
        Ok(Self {
            records: scene.record_buffer().clone(),
            payload: buffer("payload", u64::from(word_capacity) * 4, storage),
            runs: buffer("runs", u64::from(run_capacity) * 8, storage),
            counts: buffer("counts", 16, storage),
            args: buffer("args", 16, storage | U::INDIRECT),
            word_capacity,
            run_capacity,
            staged_words: 0,
            staged_runs: 0,
            staged: Vec::new(),
            encoded: Arc::new(AtomicBool::new(false)),
            label,
        })
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
        if self.encoded.load(Ordering::Relaxed) {
            0
        } else {
            self.staged_words
        }
    }

    /// Tells the upload that a graph holding its nodes was encoded: the next staged
    /// transaction starts at word 0 (that encode must be submitted first).
    pub fn mark_encoded(&self) {
        self.encoded.store(true, Ordering::Relaxed);
    }

    /// The flag [`Self::mark_encoded`] sets, for a frame that encodes without holding the
    /// upload.
    pub(crate) fn encoded_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.encoded)
    }

    /// Adds `{id}/scatter` (indirect, one invocation per staged word) and `{id}/settle` over
    /// `scene`'s views (the scene this upload was made for, imported into `graph`). Add them
    /// before the nodes that read the records. Compiles and submits nothing.
    pub fn add_to_graph(
        &self,
        graph: &mut CommandGraph,
        scene: &GpuSceneViews,
        id: &str,
    ) -> Result<(), RenderError> {
        let import = |graph: &mut CommandGraph, name: &str, b: &wgpu::Buffer, usage: U| {
            let h = graph.import_buffer_once(format!("{id}/{name}"), b, usage)?;
            graph.create_packed_view(h, VectorFormat::Uint32, b.size() / 4)
        };
        let payload = import(graph, "payload", &self.payload, U::STORAGE)?;
        let runs = import(graph, "runs", &self.runs, U::STORAGE)?;
        let counts = import(graph, "counts", &self.counts, U::STORAGE)?;
        let args = import(graph, "args", &self.args, U::STORAGE | U::INDIRECT)?;
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let base = |v: &DataView| v.aligned_range(align).element_offset as u32;
        let params = UploadParams {
            record_base: base(&scene.record_words),
            payload_base: base(&payload),
            runs_base: base(&runs),
            counts_base: base(&counts),
            args_base: base(&args),
            reserved: [0; 3],
        };
        let shader = ShaderSource::new("render/gpu_scene/upload", WGSL);
        let indirect = graph.create_data_view(
            graph
                .imported_handle(&self.args)
                .expect("imported just above"),
            gpugraph_command::DataViewDescriptor::packed(VectorFormat::Uint32, 3),
        )?;
        graph.add_dispatch_node(DispatchNode::new(
            format!("{id}/scatter"),
            shader.clone(),
            "scatter",
            vec![
                Binding::params(0, &params),
                Binding::read_write(1, scene.record_words),
                Binding::read(2, payload),
                Binding::read(3, runs),
                Binding::read(4, counts),
            ],
            Grid::Indirect(indirect),
        ))?;
        graph.add_dispatch_node(DispatchNode::new(
            format!("{id}/settle"),
            shader,
            "settle",
            vec![Binding::params(0, &params), Binding::read_write(5, args)],
            Grid::Workgroups([1, 1, 1]),
        ))?;
        Ok(())
    }
}

impl GpuScene {
    /// [`Self::mutate`] through `upload` (see [`crate::gpu_scene::upload`]): the same
    /// validation, CPU copy, state write and report (`record_writes` are the runs staged,
    /// `staging_bytes` the run table, counts and arguments), with the record bytes staged in
    /// four queue writes and copied by the upload's scatter node at the next submitted encode.
    /// Fails, changing nothing, where `mutate` fails or when `upload` belongs to another scene.
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
        let (mut report, state) = self.apply_to_copy(mutation)?;
        if upload.encoded.swap(false, Ordering::Relaxed) {
            upload.staged_words = 0;
            upload.staged_runs = 0;
            upload.staged.clear();
        }
        // One scatter writes all staged runs at once, in no order: a word staged twice
        // would land either way. A transaction touching what is still staged is therefore
        // staged afresh together with it, from the CPU copy (which holds the newest bytes).
        let restage = intersects(&upload.staged, &report.record_writes);
        let ranges: Vec<Range<u64>> = if restage {
            upload.staged_words = 0;
            upload.staged_runs = 0;
            let mut all = std::mem::take(&mut upload.staged);
            all.extend(report.record_writes.iter().cloned());
            merge(all)
        } else {
            report.record_writes.clone()
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
            for r in merge(all) {
                queue.write_buffer(
                    &self.records,
                    self.record_offset + r.start,
                    &records[r.start as usize..r.end as usize],
                );
            }
            upload.staged_words = 0;
            upload.staged_runs = 0;
            queue.write_buffer(&upload.counts, 0, bytemuck::cast_slice(&[0u32; 4]));
            queue.write_buffer(&upload.args, 0, bytemuck::cast_slice(&[0u32, 1, 1, 0]));
            self.write_state(queue, state, &mut report);
            return Ok(report);
        }
        if runs > 0 {
            let mut payload: Vec<u8> = Vec::with_capacity(report.record_bytes as usize);
            let mut table: Vec<u32> = Vec::with_capacity(2 * runs as usize);
            let mut src = upload.staged_words;
            for r in &ranges {
                // Word of the scene's record view (which starts at `record_offset`).
                table.push((r.start / 4) as u32);
                table.push(src);
                payload.extend_from_slice(&records[r.start as usize..r.end as usize]);
                src += ((r.end - r.start) / 4) as u32;
            }
            queue.write_buffer(
                &upload.payload,
                u64::from(upload.staged_words) * 4,
                &payload,
            );
            queue.write_buffer(
                &upload.runs,
                u64::from(upload.staged_runs) * 8,
                bytemuck::cast_slice(&table),
            );
            upload.staged_words = src;
            upload.staged_runs += runs as u32;
            let mut staged = std::mem::take(&mut upload.staged);
            staged.extend(ranges.iter().cloned());
            upload.staged = merge(staged);
            let counts = [upload.staged_words, upload.staged_runs, 0, 0];
            queue.write_buffer(&upload.counts, 0, bytemuck::cast_slice(&counts));
            let args = [upload.staged_words.div_ceil(WORKGROUP), 1, 1];
            queue.write_buffer(&upload.args, 0, bytemuck::cast_slice(&args));
            // Restaged bytes of earlier transactions count here too: the total is exact.
            report.staging_bytes = 8 * runs + 16 + 12 + 4 * words - report.record_bytes;
        }
        self.write_state(queue, state, &mut report);
        Ok(report)
    }
}

/// Whether two sorted, disjoint range lists share a byte.
fn intersects(a: &[Range<u64>], b: &[Range<u64>]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].end <= b[j].start {
            i += 1;
        } else if b[j].end <= a[i].start {
            j += 1;
        } else {
            return true;
        }
    }
    false
}

/// Payload words of `records` whole records: for sizing an upload for whole-record
/// transactions.
pub fn record_words(records: u32) -> u32 {
    records.saturating_mul((GPU_SCENE_RECORD_BYTES / 4) as u32)
}
