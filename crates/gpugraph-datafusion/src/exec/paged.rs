//! The Parquet page scan's part of a GPU aggregate's run (`pages/`): row groups are read,
//! decompressed and parsed by the decoders into upload slabs, expanded on the GPU as they
//! arrive, and (plans without group keys, coded strings or lookups) aggregated as they
//! arrive. A page the GPU cannot expand ends the scan; the run reads the source again
//! through the Arrow reader then.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::metrics::{Count, MetricBuilder, Time};
use futures::{FutureExt, StreamExt};
use gpugraph_command::wgpu;

use super::{source_bounds, Run};
use crate::cache::Prepared;
use crate::convert::{Converter, Misfit};
use crate::kernel;
use crate::pages::{self, DecodeStatus, HostColumn, Table};
use crate::scan::DirectScan;

/// How a page scan ended.
pub(super) enum PageScanned {
    /// Every row group expanded: the chunks (and their dictionaries and bounds), and the
    /// accumulation they were streamed into, if any.
    Done {
        prepared: Prepared,
        streamed: Option<Box<kernel::Accumulation>>,
    },
    /// A page the GPU cannot expand (another encoding, a null, a value past i32), and which.
    Refused(Option<Misfit>),
}

/// The run's scan metrics a page scan adds to.
pub(super) struct ScanMetrics {
    pub decode_time: Time,
    pub convert_time: Time,
    pub upload_time: Time,
    pub rows_in: Count,
    pub upload_bytes: Count,
}

impl Run {
    /// Scans `tasks`' row groups of `pages` on `threads` decoders (see the module docs);
    /// `names` are the source's column names, `status` collects the expansions' errors,
    /// `started` is the run's start (for the `scan_done_at` and `upload_done_at` milestones).
    pub(super) async fn page_scan(
        &self,
        (pages, tasks): (pages::PageScan, Vec<pages::RowGroupTask>),
        names: &[String],
        threads: usize,
        status: &DecodeStatus,
        metrics: &ScanMetrics,
        started: Instant,
    ) -> Result<PageScanned> {
        let ScanMetrics {
            decode_time,
            convert_time,
            upload_time,
            rows_in,
            upload_bytes,
        } = metrics;
        let milestone = |name: &'static str| {
            MetricBuilder::new(&self.metrics)
                .subset_time(name, 0)
                .add_duration(started.elapsed());
        };
        let external = |e: kernel::KernelError| DataFusionError::External(Box::new(e));
        let mut chunks = Vec::new();
        // The workers code key dictionaries and note bounds as they stage.
        let shared = Arc::new(Mutex::new(Converter::new(
            &self.plan.values,
            &self.plan.coded,
            names.to_vec(),
        )));
        let values = self.plan.values.len();
        let pool = self.cache.uploads_for(&self.gpu.device);
        let slabs_before = pool.created();
        let column = {
            let (shared, gpu) = (Arc::clone(&shared), Arc::clone(&self.gpu));
            let pool = pool.clone();
            move |scan: &pages::PageScan, task: &pages::RowGroupTask, s: usize| {
                let key = s.checked_sub(values);
                pages::read_staged(&gpu, &pool, scan, task, s, |c| {
                    page_table(&shared, s, key, c)
                })
            }
        };
        let prepare = {
            let (gpu, status) = (Arc::clone(&self.gpu), status.clone());
            move |rows: usize, columns: Vec<pages::StagedColumn>| {
                let staged = pages::PageChunk::new(rows, columns);
                let (bytes, written) = (staged.bytes(), staged.times());
                let (chunk, commands) = staged.encode(&gpu, &status).map_err(|e| e.to_string())?;
                Ok(Ok((chunk, commands, bytes, written)))
            }
        };
        let stream = DirectScan::page_stream(pages, tasks, threads, column, prepare);
        // Boxed so the drop at a refusal really ends the workers before the caller reads
        // again. Fused: the drain of waiting row groups may see the end before the loop does.
        let mut stream = Box::pin(stream.fuse());
        let mut rows = 0;
        let mut refused = None;
        let mut streaming = self.streamed_program();
        // Whether the decoders or this loop (the submissions) bound the scan.
        let wait_time = MetricBuilder::new(&self.metrics).subset_time("page_wait_time", 0);
        let submissions = MetricBuilder::new(&self.metrics).counter("page_submissions", 0);
        // The part of decode_time spent writing into upload slabs.
        let write_time = MetricBuilder::new(&self.metrics).subset_time("stage_write_time", 0);
        // The parts of decode_time spent taking upload slabs from the pool (creating them
        // when none is idle) and reading column chunks from their files.
        let alloc_time = MetricBuilder::new(&self.metrics).subset_time("stage_alloc_time", 0);
        let read_time = MetricBuilder::new(&self.metrics).subset_time("chunk_read_time", 0);
        let mut waited = Instant::now();
        'scan: while let Some(first) = stream.next().await {
            wait_time.add_elapsed(waited);
            if rows == 0 {
                milestone("first_page_at");
            }
            // Every row group already waiting goes in one submission: a
            // submission cost this thread 0.68 ms on the H200 host (TPC-H SF 10
            // Q6), more than a decoder takes to stage a row group.
            let mut ready = vec![first];
            while let Some(Some(more)) = stream.next().now_or_never() {
                ready.push(more);
            }
            let start = Instant::now();
            let mut commands = Vec::new();
            let mut encoder =
                self.gpu
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("gpugraph-datafusion-aggregate"),
                    });
            // This submission's chunks: `chunks[batch..]`.
            let batch = chunks.len();
            for scanned in ready {
                let (prepared, read, preparing) = scanned?;
                decode_time.add_duration(read);
                convert_time.add_duration(preparing);
                let (chunk, expansion, bytes, written) = match prepared {
                    Ok(p) => p,
                    Err(misfit) => {
                        refused = Some(misfit);
                        break 'scan;
                    }
                };
                rows += chunk.rows as usize;
                upload_bytes.add(bytes as usize);
                write_time.add_duration(written.write);
                alloc_time.add_duration(written.alloc);
                read_time.add_duration(written.read);
                commands.push(expansion);
                // Bounds so far (the staged row groups', a superset of the
                // received ones') must fit before a chunk is aggregated; when they
                // stop fitting, the check after the scan decides (it fails the
                // same way).
                if streaming.is_some() {
                    let fits = {
                        let c = shared.lock().unwrap_or_else(|e| e.into_inner());
                        let bounds = source_bounds(&c, &self.plan);
                        self.plan.check_bounds(&bounds, &[]).is_ok()
                    };
                    if !fits {
                        streaming = None;
                    }
                }
                chunks.push(chunk);
            }
            // One graph for the submission's chunks, after their expansions.
            if let Some(acc) = streaming.as_mut() {
                let batch: Vec<&kernel::GpuChunk> = chunks[batch..].iter().collect();
                acc.encode_streamed(&self.gpu, &mut encoder, &batch, None)
                    .map_err(external)?;
            }
            commands.push(encoder.finish());
            self.gpu.queue.submit(commands);
            upload_time.add_elapsed(start);
            submissions.add(1);
            waited = Instant::now();
        }
        // Slabs this scan had to create: later scans of the session reuse them.
        MetricBuilder::new(&self.metrics)
            .global_counter("upload_slabs_created")
            .add((pool.created() - slabs_before) as usize);
        if refused.is_none() {
            MetricBuilder::new(&self.metrics)
                .global_counter("page_decode")
                .add(1);
            rows_in.add(rows);
            milestone("scan_done_at");
            milestone("upload_done_at");
            // Every worker is done with it (the stream ended).
            let converter = std::mem::replace(
                &mut *shared.lock().unwrap_or_else(|e| e.into_inner()),
                Converter::new(&self.plan.values, &self.plan.coded, names.to_vec()),
            );
            return Ok(PageScanned::Done {
                prepared: Prepared { converter, chunks },
                streamed: streaming.map(Box::new),
            });
        }
        // Boxed, so dropping it here ends the workers before the caller reads again.
        drop(stream);
        Ok(PageScanned::Refused(refused))
    }
}

/// The words a parsed column slot's expansion looks its indices up in: a value
/// dictionary as it is, a key dictionary (`key`: the slot's place among the keys) as the
/// query's codes (coded in the one converter, so codes stay one numbering across row
/// groups); a value slot's bounds join the converter's.
fn page_table(
    converter: &Mutex<Converter>,
    slot: usize,
    key: Option<usize>,
    column: &HostColumn,
) -> Result<Vec<u32>, crate::convert::Misfit> {
    let mut converter = converter.lock().unwrap_or_else(|e| e.into_inner());
    match (&column.table, key) {
        (Table::Strings(strings), Some(k)) => converter.code_entries(k, Arc::clone(strings)),
        (Table::Words(words), _) => {
            converter.note_stats(slot, column.stats);
            Ok(words.clone())
        }
        (Table::Strings(_), None) => Err(crate::convert::Misfit {
            column: format!("slot {slot}"),
            what: "strings in a value slot".into(),
        }),
    }
}
