//! `GpuPartialAggregateExec`: a partial aggregate and its projection/filter chain, run on the
//! GPU; and `CpuFallbackExec`, the transparent marker of a partial aggregate left on the CPU.
//!
//! The exec streams its source's batches (every partition, each on its own task, so Parquet
//! decoding runs on DataFusion's threads), converts each batch to the kernel's words as it
//! arrives (many at once on the runtime's threads), merges them in arrival order, uploads a
//! chunk every [`CHUNK_ROWS`] rows on a blocking thread while the merge goes on, and after
//! the last batch checks the bounds, runs the program and emits the partial-state batch
//! DataFusion's final aggregate expects. A Parquet source whose pages the GPU expands itself
//! (`pages/`) arrives as row groups instead, and a plan without group keys, coded strings or
//! lookups aggregates each one as it arrives ([`kernel::Accumulation::encode_streamed`]), so only the last
//! row group's pass is left after the scan. Whenever the data does not fit the GPU's exact
//! arithmetic (a value past i32, an intermediate past i64, too many groups) it runs the
//! original CPU partial aggregate it keeps instead, and says why in its display
//! (`EXPLAIN ANALYZE`) and [`Self::fallback`].

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::{RecordBatchReceiverStream, RecordBatchStreamAdapter};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties, SendableRecordBatchStream,
};
use futures::{Stream, StreamExt};
use gpugraph_command::GpuContext;

mod fallback;
mod finish;
mod paged;
mod set;
mod shares;

pub use fallback::{CpuFallbackExec, FallbackReason};
use paged::{PageScanned, ScanMetrics};

use crate::cache::{GpuCache, Prepared};
use crate::convert::{Chunk, Converter};
use crate::kernel::{self, GpuChunk};
use crate::pages::DecodeStatus;
use crate::plan::{AggKind, GpuPlan, GroupKey};
use crate::scan::{DirectScan, Scanned};
use crate::share::Share;

/// Rows per uploaded chunk (one dispatch each). 4M rows: a run pays a parameter buffer, a
/// bind group and a flush of the workgroups' private accumulators per chunk (15 at TPC-H
/// SF 10 instead of 29 at 2M), while the last chunk's upload, which nothing overlaps, stays
/// ~16 MB per column.
pub const CHUNK_ROWS: usize = 1 << 22;

/// Most rows per chunk of a source the GPU column cache keeps (64M).
pub const CACHED_CHUNK_ROWS: usize = 1 << 26;

/// Rows per chunk of a cached source: every warm run pays a parameter buffer, a bind group,
/// a compute pass and a flush of the private accumulators per chunk, so fewer, larger chunks
/// make each of them cheaper, while only the one run that fills the cache uploads later. On
/// the H200 (TPC-H SF 10, 2026-12-03, `bench/h200-q6-sweep.sh`) one 60M-row chunk instead of
/// 15 took Q6 warm from 7.0 to 5.3 ms and its GPU time from 2.8 to 2.1 ms. At most
/// [`CACHED_CHUNK_ROWS`], and half what one storage binding holds in 32-bit words (a slot's
/// validity words share its buffer); never below [`CHUNK_ROWS`].
fn cached_chunk_rows(gpu: &GpuContext) -> usize {
    let binding = gpu.device.limits().max_storage_buffer_binding_size as usize;
    (binding / 8).clamp(CHUNK_ROWS, CACHED_CHUNK_ROWS)
}

/// Decoding threads of the scan: every core but [`UPLOAD_CORES`] (at least one), or
/// `GPUGRAPH_SCAN_THREADS`.
fn scan_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
    let default = cores.saturating_sub(UPLOAD_CORES).max(1);
    kernel::tuning("GPUGRAPH_SCAN_THREADS", default as u32) as usize
}

/// Cores the scan leaves to the merge and the staging fills, so uploads keep pace with the
/// decoders instead of queueing behind them until the scan ends.
const UPLOAD_CORES: usize = 0;

/// A partial aggregate run on the GPU (see the module docs).
#[derive(Debug)]
pub struct GpuPartialAggregateExec {
    plan: GpuPlan,
    cpu: Arc<dyn ExecutionPlan>,
    gpu: Arc<GpuContext>,
    /// Every device the aggregate runs on, `gpu` first ([`Self::with_devices`]).
    devices: Vec<Arc<GpuContext>>,
    cache: GpuCache,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
    fallback: Arc<Mutex<Option<FallbackReason>>>,
    pages: Arc<Mutex<Option<String>>>,
}

impl GpuPartialAggregateExec {
    /// The GPU form of `cpu` (the partial `AggregateExec` that `plan` was made from).
    pub fn new(
        plan: GpuPlan,
        cpu: Arc<dyn ExecutionPlan>,
        gpu: Arc<GpuContext>,
        cache: GpuCache,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&plan.schema)),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            plan,
            cpu,
            devices: vec![Arc::clone(&gpu)],
            gpu,
            cache,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
            fallback: Arc::new(Mutex::new(None)),
            pages: Arc::new(Mutex::new(None)),
        }
    }

    /// This aggregate split over `devices` (the first one is the exec's own; an empty list
    /// keeps it): each runs it over its [`Share`] of the source (`share.rs`) and DataFusion's
    /// final aggregate merges their groups. One device changes nothing.
    pub fn with_devices(mut self, devices: Vec<Arc<GpuContext>>) -> Self {
        if let Some(first) = devices.first() {
            self.gpu = Arc::clone(first);
            self.devices = devices;
        }
        self
    }

    /// How many devices the aggregate runs on.
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// Why the last execution ran the CPU plan instead, if it did (the sentence).
    pub fn fallback(&self) -> Option<String> {
        self.fallback_reason().map(|r| r.to_string())
    }

    /// Why the last execution ran the CPU plan instead, if it did.
    pub fn fallback_reason(&self) -> Option<FallbackReason> {
        self.fallback.lock().ok().and_then(|f| f.clone())
    }

    /// Whether a GPU run's output never repeats a group ([`GpuPlan::unique_groups`]); a run
    /// that fell back to the CPU ([`Self::fallback`]) may.
    pub fn unique_groups(&self) -> bool {
        // Two devices' shares may hold the same group.
        self.devices.len() == 1 && self.plan.unique_groups()
    }

    /// Why the last execution's Parquet scan decoded pages on the host rather than on the
    /// GPU (`pages.rs`), if it read Parquet itself and did.
    pub fn pages_on_host(&self) -> Option<String> {
        self.pages.lock().ok().and_then(|f| f.clone())
    }
}

impl DisplayAs for GpuPartialAggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let schema = self.plan.source.schema();
        let name = |c: &usize| schema.field(*c).name().clone();
        let keys: Vec<String> = self
            .plan
            .groups
            .iter()
            .map(|g| match *g {
                GroupKey::Source(k) => name(&self.plan.keys[k]),
                GroupKey::Mapped(j) => self
                    .plan
                    .key_maps
                    .get(j)
                    .and_then(|&m| self.plan.maps.get(m))
                    .map_or_else(String::new, |m| format!("{m} by code")),
                GroupKey::Lookup(j) => self
                    .plan
                    .lookup_row
                    .as_ref()
                    .and_then(|(s, _)| self.plan.lookups.get(*s)?.groups.get(j))
                    .map_or_else(String::new, |g| format!("lookup {g}")),
            })
            .collect();
        let values: Vec<String> = self.plan.values.iter().map(name).collect();
        let aggregates: Vec<String> = self
            .plan
            .aggregates
            .iter()
            .map(|a| format!("{:?}", a.kind).to_lowercase())
            .collect();
        write!(
            f,
            "GpuPartialAggregateExec: on=GPU, filters={}, gby=[{}], aggr=[{}], columns=[{}]",
            self.plan.predicates.len(),
            keys.join(", "),
            aggregates.join(", "),
            values.join(", ")
        )?;
        let strings: Vec<String> = self.plan.coded[self.plan.keys.len()..]
            .iter()
            .map(name)
            .collect();
        if !strings.is_empty() {
            write!(f, ", strings=[{}]", strings.join(", "))?;
        }
        if !self.plan.params.is_empty() {
            let params: Vec<String> = self
                .plan
                .params
                .iter()
                .map(|(p, _)| p.to_string())
                .collect();
            write!(f, ", values at run time=[{}]", params.join(", "))?;
        }
        if !self.plan.maps.is_empty() {
            // Evaluated once per distinct string on the host, looked up by code on the GPU.
            let maps: Vec<String> = self.plan.maps.iter().map(ToString::to_string).collect();
            write!(f, ", by code=[{}]", maps.join(", "))?;
        }
        for (s, l) in self.plan.lookups.iter().enumerate() {
            if let Some(kind) = l.set {
                // The other input's keys, which the streamed rows test their key against;
                // found by a GPU plan of their own where the planner made one.
                let on_gpu = self.plan.sets.iter().any(|(side, _)| *side == s);
                let how = if on_gpu { " from GPU columns" } else { "" };
                write!(f, ", {kind} join=[set key={}{how}]", l.key)?;
                continue;
            }
            let columns: Vec<String> = l.columns.iter().map(ToString::to_string).collect();
            let extremes = self.plan.extremes.iter().any(|(side, ..)| *side == s);
            // Where the side comes from: a GPU plan of its own (collected after all when
            // the data refuses it), or DataFusion's CPU plan and why.
            let from = match self.plan.payloads.iter().find(|(side, _)| *side == s) {
                _ if extremes => " from GPU columns".to_string(),
                Some((_, Ok(_))) => " from GPU columns".to_string(),
                Some((_, Err(why))) => format!(", collected on the CPU: {why}"),
                None => String::new(),
            };
            write!(
                f,
                ", lookup=[key={}, columns=[{}]{from}]",
                l.key,
                columns.join(", "),
            )?;
        }
        if self.devices.len() > 1 {
            write!(f, ", devices={}", self.devices.len())?;
        }
        if let Some(why) = self.pages_on_host() {
            write!(f, ", pages decoded on the host: {why}")?;
        }
        if let Some(why) = self.fallback() {
            write!(f, ", ran on CPU: {why}")?;
        }
        Ok(())
    }
}

/// `Ok` for partition 0, the only one the GPU execs (`name`) produce: each emits its whole
/// output at once.
pub(crate) fn one_partition(name: &str, partition: usize) -> Result<()> {
    if partition == 0 {
        return Ok(());
    }
    Err(DataFusionError::Internal(format!(
        "{name} has one partition, asked for {partition}"
    )))
}

/// The one child of an exec (`name`) that takes one, or an error naming how many it was
/// given.
pub(crate) fn one_child(
    name: &str,
    mut children: Vec<Arc<dyn ExecutionPlan>>,
) -> Result<Arc<dyn ExecutionPlan>> {
    match children.len() {
        1 => Ok(children.swap_remove(0)),
        n => Err(DataFusionError::Internal(format!(
            "{name} has one child, given {n}"
        ))),
    }
}

/// Batches of every partition of `plan`, each partition on its own task.
/// The stream of the batches `run` resolves to (or its error): how the GPU execs, which
/// produce their output at once after reading their whole input, answer `execute`.
pub(crate) fn batches_of(
    schema: datafusion::arrow::datatypes::SchemaRef,
    run: impl std::future::Future<Output = Result<Vec<RecordBatch>>> + Send + 'static,
) -> SendableRecordBatchStream {
    let batches = futures::stream::once(run).flat_map(|r| {
        let items: Vec<Result<RecordBatch>> = match r {
            Ok(batches) => batches.into_iter().map(Ok).collect(),
            Err(e) => vec![Err(e)],
        };
        futures::stream::iter(items)
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, batches))
}

pub(crate) fn all_partitions(
    plan: &Arc<dyn ExecutionPlan>,
    context: &Arc<TaskContext>,
) -> SendableRecordBatchStream {
    partitions_of(plan, context, Share::WHOLE)
}

/// Batches of the partitions of `plan` that `share` takes, each partition on its own task.
pub(crate) fn partitions_of(
    plan: &Arc<dyn ExecutionPlan>,
    context: &Arc<TaskContext>,
    share: Share,
) -> SendableRecordBatchStream {
    let partitions = plan.output_partitioning().partition_count();
    let mut builder = RecordBatchReceiverStream::builder(plan.schema(), partitions.max(1) * 2);
    for p in (0..partitions).filter(|&p| share.takes(p)) {
        let tx = builder.tx();
        let plan = Arc::clone(plan);
        let context = Arc::clone(context);
        builder.spawn(async move {
            let mut stream = match plan.execute(p, context) {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return Ok(());
                }
            };
            while let Some(batch) = stream.next().await {
                if tx.send(batch).await.is_err() {
                    break;
                }
            }
            Ok(())
        });
    }
    builder.build()
}

/// What a page scan hands to [`Run::finish`]: its decode status and the accumulation it
/// streamed its chunks into, if any.
struct Pages<'a> {
    status: &'a DecodeStatus,
    streamed: Option<kernel::Accumulation>,
}

/// The bounds of source column `c` so far, as [`GpuPlan::check_bounds`] reads them.
fn source_bounds<'a>(
    converter: &'a Converter,
    plan: &'a GpuPlan,
) -> impl Fn(usize) -> (i128, i128) + 'a {
    move |c: usize| {
        let slot = plan.values.iter().position(|&v| v == c).unwrap_or(0);
        let s = converter.stats(slot);
        (s.min as i128, s.max as i128)
    }
}

struct Run {
    plan: GpuPlan,
    cpu: Arc<dyn ExecutionPlan>,
    gpu: Arc<GpuContext>,
    cache: GpuCache,
    metrics: ExecutionPlanMetricsSet,
    fallback: Arc<Mutex<Option<FallbackReason>>>,
    pages: Arc<Mutex<Option<String>>>,
    context: Arc<TaskContext>,
    /// Where a key-set run ([`set`]) leaves its presence bitmap instead of emitting batches;
    /// `None` for the exec's own run.
    bits: Option<set::BitsOut>,
    /// The part of the source this run reads (one device's of several; `shares.rs`).
    share: Share,
}

impl Run {
    async fn cpu(&self, why: FallbackReason) -> Result<Vec<RecordBatch>> {
        if let Ok(mut f) = self.fallback.lock() {
            *f = Some(why);
        }
        // A key-set run's refusal: its side is collected on the CPU instead. A share's: the
        // exec runs the whole CPU plan once all shares are done (`shares.rs`).
        if self.bits.is_some() || !self.share.is_whole() {
            return Ok(Vec::new());
        }
        MetricBuilder::new(&self.metrics)
            .global_counter("cpu_fallback")
            .add(1);
        let mut stream = all_partitions(&self.cpu, &self.context);
        let mut out = Vec::new();
        while let Some(batch) = stream.next().await {
            out.push(batch?);
        }
        Ok(out)
    }

    /// Uploads `chunk` on a blocking thread, so the merge goes on with the next chunk
    /// meanwhile; resolves to the GPU chunk and the upload's own time.
    fn upload(
        &self,
        chunk: Chunk,
    ) -> tokio::task::JoinHandle<(Result<GpuChunk, kernel::KernelError>, Duration)> {
        let gpu = Arc::clone(&self.gpu);
        tokio::task::spawn_blocking(move || {
            let start = Instant::now();
            let uploaded = kernel::upload(&gpu, &chunk);
            (uploaded, start.elapsed())
        })
    }

    async fn run(mut self) -> Result<Vec<RecordBatch>> {
        // DataFusion ran the scalar subqueries before executing this plan's input.
        if !self.plan.params.is_empty() {
            match self.plan.resolved() {
                Ok(plan) => self.plan = plan,
                Err(why) => return self.cpu(FallbackReason::Value(why)).await,
            }
        }
        let convert_time = MetricBuilder::new(&self.metrics).subset_time("convert_time", 0);
        let decode_time = MetricBuilder::new(&self.metrics).subset_time("decode_time", 0);
        let merge_time = MetricBuilder::new(&self.metrics).subset_time("merge_time", 0);
        let upload_time = MetricBuilder::new(&self.metrics).subset_time("upload_time", 0);
        // Per share, so a multi-device run shows each device's rows.
        let rows_in = MetricBuilder::new(&self.metrics).counter("input_rows", self.share.index);
        let upload_bytes = MetricBuilder::new(&self.metrics).counter("upload_bytes", 0);
        // Wall-clock milestones from the start of the run: where the critical path goes
        // (the scan and conversion, the uploads' tail, the kernel) when the summed times
        // above overlap.
        let started = Instant::now();
        let milestone = |name: &'static str| {
            MetricBuilder::new(&self.metrics)
                .subset_time(name, 0)
                .add_duration(started.elapsed());
        };
        if let Ok(mut f) = self.fallback.lock() {
            *f = None;
        }
        if let Ok(mut f) = self.pages.lock() {
            *f = None;
        }
        // The joins' lookup sides run on DataFusion's threads while the source streams in.
        let lookup = self.lookup_tasks();
        let external = |e: kernel::KernelError| DataFusionError::External(Box::new(e));
        let (source, source_share) = shares::source_of(&self.plan.source, self.share)?;
        let cached = self
            .cache
            .key(&source, &self.plan.values, &self.plan.coded)
            .map(|(key, batches)| (key.shared(self.share), batches));
        let prepared = match cached.as_ref().and_then(|(key, _)| self.cache.get(key)) {
            Some(hit) => {
                MetricBuilder::new(&self.metrics)
                    .global_counter("gpu_cache_hits")
                    .add(1);
                hit
            }
            None => {
                let schema = self.plan.source.schema();
                let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
                let mut converter =
                    Converter::new(&self.plan.values, &self.plan.coded, names.clone());
                let mut chunks = Vec::new();
                let mut uploads = Vec::new();
                // Batches convert on the runtime's threads, several at once, in arrival order;
                // only the merge (copies and a remap of batch-local key codes) runs here.
                let layout = converter.layout();
                let threads = scan_threads();
                let default_rows = if cached.is_some() {
                    cached_chunk_rows(&self.gpu)
                } else {
                    CHUNK_ROWS
                };
                let chunk_rows =
                    kernel::tuning("GPUGRAPH_CHUNK_ROWS", default_rows as u32) as usize;
                let direct = DirectScan::of(&self.plan.source, &self.plan.values, &self.plan.coded)
                    .map(|scan| scan.shared(self.share));
                let paged = direct
                    .as_ref()
                    .filter(|_| std::env::var("GPUGRAPH_PAGE_DECODE").map_or(true, |v| v != "0"))
                    .map(|scan| scan.pages(&self.plan.values, &self.plan.coded));
                let note_pages = |why: String| {
                    if let Ok(mut f) = self.pages.lock() {
                        *f = Some(why);
                    }
                };
                if let Some(Err(why)) = &paged {
                    note_pages(why.clone());
                }
                if let Some(Ok((pages, tasks))) = paged {
                    let status = DecodeStatus::new(&self.gpu);
                    let scan = ScanMetrics {
                        decode_time: decode_time.clone(),
                        convert_time: convert_time.clone(),
                        upload_time: upload_time.clone(),
                        rows_in: rows_in.clone(),
                        upload_bytes: upload_bytes.clone(),
                    };
                    let scanned = self
                        .page_scan((pages, tasks), &names, threads, &status, &scan, started)
                        .await?;
                    let refused = match scanned {
                        PageScanned::Done { prepared, streamed } => {
                            let pages = Pages {
                                status: &status,
                                streamed: streamed.map(|s| *s),
                            };
                            return self.finish(&prepared, Some(pages), lookup, started).await;
                        }
                        PageScanned::Refused(misfit) => misfit,
                    };
                    // A page the GPU cannot expand (another encoding, a null, a value past
                    // i32): the Arrow reader's path below reads the scan again and decides.
                    MetricBuilder::new(&self.metrics)
                        .global_counter("page_decode_refused")
                        .add(1);
                    if let Some(misfit) = refused {
                        note_pages(misfit.to_string());
                    }
                    converter = Converter::new(&self.plan.values, &self.plan.coded, names.clone());
                    chunks.clear();
                }
                let mut stream: Pin<Box<dyn Stream<Item = Scanned> + Send>> = match direct {
                    Some(scan) => {
                        MetricBuilder::new(&self.metrics)
                            .global_counter("direct_scan")
                            .add(1);
                        Box::pin(scan.stream(Arc::clone(&layout), threads))
                    }
                    None => Box::pin(
                        partitions_of(&source, &self.context, source_share)
                            .map(move |batch| {
                                let layout = Arc::clone(&layout);
                                async move {
                                    let batch = batch?;
                                    tokio::spawn(async move {
                                        let start = Instant::now();
                                        let converted = layout.convert(&batch);
                                        (converted, Duration::ZERO, start.elapsed())
                                    })
                                    .await
                                    .map_err(|e| DataFusionError::External(Box::new(e)))
                                }
                            })
                            .buffered(threads * 2),
                    ),
                };
                while let Some(converted) = stream.next().await {
                    let (converted, decoded, took) = converted?;
                    decode_time.add_duration(decoded);
                    convert_time.add_duration(took);
                    let converted = match converted {
                        Ok(c) => c,
                        Err(misfit) => {
                            drop(stream);
                            return self.cpu(FallbackReason::Misfit(misfit)).await;
                        }
                    };
                    rows_in.add(converted.rows());
                    let start = Instant::now();
                    converter.append(converted);
                    merge_time.add_elapsed(start);
                    if converter.pending_rows() >= chunk_rows {
                        uploads.push(self.upload(converter.take_chunk()));
                    }
                }
                if converter.pending_rows() > 0 {
                    uploads.push(self.upload(converter.take_chunk()));
                }
                milestone("scan_done_at");
                for upload in uploads {
                    let (chunk, took) = upload
                        .await
                        .map_err(|e| DataFusionError::External(Box::new(e)))?;
                    upload_time.add_duration(took);
                    let chunk = chunk.map_err(external)?;
                    upload_bytes.add(chunk.bytes() as usize);
                    chunks.push(chunk);
                }
                milestone("upload_done_at");
                let prepared = Arc::new(Prepared { converter, chunks });
                if let Some((key, batches)) = cached {
                    self.cache.insert(key, batches, Arc::clone(&prepared));
                }
                prepared
            }
        };
        self.finish(&prepared, None, lookup, started).await
    }

    /// The accumulation a page scan adds its chunks to as they arrive, for plans whose
    /// program does not depend on what the scan finds: no group keys or coded strings (their
    /// dictionaries grow with the scan) and no lookup sides (built meanwhile). TPC-H Q6 from
    /// Parquet waited 15 ms after its last row group for the aggregate over all 58 (H200,
    /// fcb26cb); now only the last chunk's pass is left. `None` for other plans, or when
    /// the kernel cannot be set up (the scan's end decides then).
    fn streamed_program(&self) -> Option<kernel::Accumulation> {
        let plan = &self.plan;
        if !plan.keys.is_empty()
            || !plan.coded.is_empty()
            || plan
                .aggregates
                .iter()
                .any(|a| a.kind == AggKind::CountDistinct)
            || !plan.lookups.is_empty()
            || plan.lookup_row.is_some()
        {
            return None;
        }
        let (_, groups) = plan.group_count(&[], &[]);
        // Page chunks carry no nulls: the program compiles without null flags, as `finish`
        // compiles it for them.
        let (program, _) = plan.program(&[], 0, &[], &|_, _| None, &[]);
        kernel::Accumulation::new(&self.gpu, &program, groups, 0).ok()
    }
}

impl ExecutionPlan for GpuPartialAggregateExec {
    fn name(&self) -> &str {
        "GpuPartialAggregateExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        let mut children = vec![&self.plan.source];
        children.extend(self.plan.lookups.iter().map(|l| &l.input));
        children
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let mut plan = self.plan.clone();
        let mut children = children.into_iter();
        let wanted = 1 + plan.lookups.len();
        let mut next = || {
            children.next().ok_or_else(|| {
                DataFusionError::Internal(format!("GpuPartialAggregateExec has {wanted} children"))
            })
        };
        plan.source = next()?;
        for l in plan.lookups.iter_mut() {
            l.input = next()?;
        }
        Ok(Arc::new(
            Self::new(
                plan,
                Arc::clone(&self.cpu),
                Arc::clone(&self.gpu),
                self.cache.clone(),
            )
            .with_devices(self.devices.clone()),
        ))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        one_partition("GpuPartialAggregateExec", partition)?;
        if self.devices.len() > 1 {
            return Ok(batches_of(
                Arc::clone(&self.plan.schema),
                shares::run_shares(self.share_runs(&context)?, self.whole_run(context)),
            ));
        }
        Ok(batches_of(
            Arc::clone(&self.plan.schema),
            self.whole_run(context).run(),
        ))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

impl GpuPartialAggregateExec {
    /// The run of the whole source on the exec's own device.
    fn whole_run(&self, context: Arc<TaskContext>) -> Run {
        Run {
            plan: self.plan.clone(),
            cpu: Arc::clone(&self.cpu),
            gpu: Arc::clone(&self.gpu),
            cache: self.cache.clone(),
            metrics: self.metrics.clone(),
            fallback: Arc::clone(&self.fallback),
            pages: Arc::clone(&self.pages),
            context,
            bits: None,
            share: Share::WHOLE,
        }
    }
}
