//! The per-session GPU column cache: a partial aggregate over an in-memory table whose batches
//! were converted and uploaded once finds them GPU-resident the next time ("warm").
//!
//! Entries are keyed by the source's identity — the memory table's batches themselves (the
//! addresses of their column arrays, which the entry keeps alive so they cannot be reused by
//! other data) and the source's display (its projection) — and by the columns read. A file
//! source is read again every time: its identity would be a path whose contents may change.
//! Why whole column sets rather than single columns: chunk boundaries, key dictionaries and
//! column bounds are shared by a query's columns, and the GPU keeps a chunk's columns as
//! separate buffers anyway; two queries over different column sets hold their own copies.

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::Array;
use datafusion::arrow::record_batch::RecordBatch;
// foldhash: a key holds an entry per column of every batch (100k+ for TPC-H SF 10), hashed
// on every query.
use datafusion::common::HashMap;
use datafusion::datasource::memory::{DataSourceExec, MemorySourceConfig};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{displayable, ExecutionPlan};

use crate::convert::Converter;
use crate::kernel::GpuChunk;
use crate::pages::UploadPool;
use crate::share::Share;

/// Converted, uploaded data of one source and column set.
#[derive(Debug)]
pub struct Prepared {
    /// Dictionaries and bounds of the conversion.
    pub converter: Converter,
    /// The uploaded chunks.
    pub chunks: Vec<GpuChunk>,
}

/// The identity of a cached source.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceKey {
    display: String,
    /// The source's projected schema, since the display need not show the projection.
    schema: String,
    projection: Option<Vec<usize>>,
    buffers: Vec<(usize, usize)>,
    values: Vec<usize>,
    keys: Vec<usize>,
    /// Which device's share of the source the entry holds (each device caches its own).
    share: Share,
}

impl SourceKey {
    /// The key of `share` of this source.
    pub fn shared(mut self, share: Share) -> Self {
        self.share = share;
        self
    }
}

#[derive(Debug)]
struct Entry {
    prepared: Arc<Prepared>,
    /// Keeps the batches (and so the buffer addresses in the key) alive.
    _batches: Vec<Vec<RecordBatch>>,
}

/// The cache (cheap to clone: clones share entries). Disabled caches never hold anything.
#[derive(Clone, Debug, Default)]
pub struct GpuCache {
    enabled: bool,
    entries: Arc<Mutex<HashMap<SourceKey, Entry>>>,
    /// The session's upload slabs, which page scans reuse whether or not columns are cached.
    uploads: UploadPool,
    /// The slabs of each further device the session's scans ran on ([`Self::uploads_for`]).
    others: Arc<Mutex<Vec<(gpugraph_command::wgpu::Device, UploadPool)>>>,
}

impl GpuCache {
    /// An empty cache; `enabled == false` makes every lookup miss and every insert a no-op.
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            entries: Arc::default(),
            uploads: UploadPool::new(),
            others: Arc::default(),
        }
    }

    /// The session's upload slabs (see [`UploadPool`]).
    pub fn uploads(&self) -> &UploadPool {
        &self.uploads
    }

    /// The upload slabs for scans on `device`: [`Self::uploads`] for the first device a scan
    /// asks for, a pool of its own for each other one. Why: a pool keeps the slabs of one
    /// device only and makes and frees another's on every scan, so with several devices
    /// (`--devices`) every device but the first would pay its slabs' allocation each run.
    pub fn uploads_for(&self, device: &gpugraph_command::wgpu::Device) -> UploadPool {
        let mut others = self.others.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, pool)) = others.iter().find(|(d, _)| d == device) {
            return pool.clone();
        }
        let pool = if others.is_empty() {
            self.uploads.clone()
        } else {
            UploadPool::new()
        };
        others.push((device.clone(), pool.clone()));
        pool
    }

    /// The key of `source` read at `values` and `keys`, when it is an in-memory table.
    pub fn key(
        &self,
        source: &Arc<dyn ExecutionPlan>,
        values: &[usize],
        keys: &[usize],
    ) -> Option<(SourceKey, Vec<Vec<RecordBatch>>)> {
        if !self.enabled {
            return None;
        }
        // DataFusion may spread a one-partition table round-robin over its threads.
        let mut source = source;
        while let Some(r) = source.downcast_ref::<RepartitionExec>() {
            source = r.input();
        }
        let exec = source.downcast_ref::<DataSourceExec>()?;
        let memory = exec.data_source().downcast_ref::<MemorySourceConfig>()?;
        let partitions = memory.partitions().to_vec();
        let mut buffers = Vec::new();
        for batch in partitions.iter().flatten() {
            // The column's own allocation identifies it while the entry keeps it alive
            // (`to_data` would build an `ArrayData` per column of every batch, milliseconds
            // per query on a large table).
            buffers.extend(
                batch
                    .columns()
                    .iter()
                    .map(|c| (Arc::as_ptr(c) as *const u8 as usize, c.len())),
            );
        }
        let key = SourceKey {
            display: displayable(source.as_ref()).one_line().to_string(),
            schema: format!("{:?}", source.schema().fields()),
            projection: memory.projection().clone(),
            buffers,
            values: values.to_vec(),
            keys: keys.to_vec(),
            share: Share::WHOLE,
        };
        Some((key, partitions))
    }

    /// The prepared data of `key`, if cached.
    pub fn get(&self, key: &SourceKey) -> Option<Arc<Prepared>> {
        let entries = self.entries.lock().ok()?;
        entries.get(key).map(|e| Arc::clone(&e.prepared))
    }

    /// Caches `prepared` under `key`, keeping `batches` alive with it.
    pub fn insert(&self, key: SourceKey, batches: Vec<Vec<RecordBatch>>, prepared: Arc<Prepared>) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(
                key,
                Entry {
                    prepared,
                    _batches: batches,
                },
            );
        }
    }

    /// Drops every entry (frees their GPU buffers once no query uses them) and the idle
    /// upload slabs.
    pub fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.clear();
        }
        self.uploads.clear();
    }
}
