//! The end of a GPU aggregate's run: the lookup sides are awaited, the data's bounds checked
//! against the program's exact arithmetic, the program run over the staged chunks (or the
//! page scan's streamed accumulation finished), and the partial-state batch emitted.

use std::time::Instant;

use datafusion::arrow::array::{new_empty_array, ArrayRef, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::metrics::MetricBuilder;
use gpugraph_command::wgpu;

use super::{source_bounds, FallbackReason, Pages, Run};
use crate::cache::Prepared;
use crate::kernel;
use crate::lookup::LookupTable;

impl Run {
    /// Checks the bounds, runs the program over `prepared` and emits the partial states (or
    /// the CPU plan's when the data does not fit); `pages` is the page scan's decode status
    /// and the accumulation its chunks were streamed into, `lookup` the tasks building the
    /// joins' lookup sides, `started` the run's start (for the `kernel_done_at` milestone).
    pub(super) async fn finish(
        &self,
        prepared: &Prepared,
        pages: Option<Pages<'_>>,
        lookup: Vec<tokio::task::JoinHandle<Result<Result<LookupTable, String>>>>,
        started: Instant,
    ) -> Result<Vec<RecordBatch>> {
        let external = |e: kernel::KernelError| DataFusionError::External(Box::new(e));
        let mut tables = Vec::with_capacity(lookup.len());
        let mut refused = None;
        for task in lookup {
            // Every task is awaited, so none outlives the query.
            match task
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))??
            {
                Ok(table) => tables.push(table),
                Err(why) => refused = refused.or(Some(why)),
            }
        }
        if let Some(why) = refused {
            return self.cpu(FallbackReason::Lookup(why)).await;
        }
        let converter = &prepared.converter;
        // The code maps' tables, from the complete dictionaries, after the joins' sides.
        let mapped = Instant::now();
        // Each key map's distinct values, by value code.
        let mut keyed: Vec<ArrayRef> = Vec::new();
        for (m, map) in self.plan.maps.iter().enumerate() {
            let k = self.plan.coded.iter().position(|&c| c == map.column);
            let values = match k.map(|k| converter.dictionary(k)).transpose()?.flatten() {
                Some(values) => values,
                None => new_empty_array(map.field.data_type()),
            };
            let table = if self.plan.key_maps.contains(&m) {
                map.key_table(&values).map(|(table, distinct)| {
                    keyed.push(distinct);
                    table
                })
            } else {
                map.table(&values)
            };
            match table {
                Ok(table) => tables.push(table),
                Err(why) => return self.cpu(FallbackReason::CodeMap(why)).await,
            }
        }
        if !self.plan.maps.is_empty() {
            MetricBuilder::new(&self.metrics)
                .subset_time("code_map_time", 0)
                .add_duration(mapped.elapsed());
        }
        crate::lookup::place(&mut tables);
        let kernel_time = MetricBuilder::new(&self.metrics).subset_time("gpu_kernel_time", 0);
        let chunks = &prepared.chunks;
        let spans = match self
            .plan
            .check_bounds(&source_bounds(converter, &self.plan), &tables)
        {
            Ok(spans) => spans,
            Err(why) => return self.cpu(FallbackReason::Bounds(why)).await,
        };
        // Coded string columns past the group keys only filter.
        let mut cards = converter.cardinalities();
        cards.truncate(self.plan.keys.len());
        // Key maps' digits follow, in key-map order (`keyed` is in map order, which the
        // planner made the same).
        cards.extend(keyed.iter().map(|d| d.len() as u32));
        let (source_groups, groups) = self.plan.group_count(&cards, &tables);
        let too_many = |words_per_group, max| FallbackReason::TooManyGroups {
            groups,
            lookup_rows: self.plan.lookup_row.is_some(),
            words_per_group,
            max,
        };
        // Checked before the program is built: its group-index strides are products of the
        // cardinalities.
        if groups > kernel::MAX_GROUPS {
            return self.cpu(too_many(None, kernel::MAX_GROUPS)).await;
        }
        let nullable = chunks.iter().fold(0, |m, c| m | c.has_valid);
        let shapes: Vec<_> = tables.iter().map(|l| l.shape.clone()).collect();
        let code = |k: usize, v: Option<&str>| converter.code_of(k, v);
        let (program, words) = self.plan.program(&cards, nullable, &shapes, &code, &spans);
        let most = kernel::max_groups(&self.gpu, program.words_per_group());
        if groups > most {
            return self
                .cpu(too_many(Some(program.words_per_group()), most))
                .await;
        }
        let binding = self.gpu.device.limits().max_storage_buffer_binding_size as usize;
        let bytes: usize = tables.iter().map(|l| l.buffer_words() * 4).sum();
        if bytes > binding {
            return self
                .cpu(FallbackReason::LookupBinding { bytes, binding })
                .await;
        }
        let buffer = if tables.is_empty() {
            None
        } else {
            let staged = Instant::now();
            let built = kernel::keymap::lookup_buffer(&self.gpu, &tables).map_err(external)?;
            MetricBuilder::new(&self.metrics)
                .subset_time("lookup_upload_time", 0)
                .add_duration(staged.elapsed());
            match built {
                Ok(buffer) => Some(buffer),
                Err(why) => return self.cpu(FallbackReason::Lookup(why)).await,
            }
        };
        let live = chunks.iter().filter(|c| c.rows > 0).count();
        let (status, streamed) = match pages {
            Some(p) => (Some(p.status), p.streamed.filter(|a| a.passes() == live)),
            None => (None, None),
        };
        let (acc, times) = match streamed {
            Some(acc) => {
                MetricBuilder::new(&self.metrics)
                    .global_counter("streamed_chunks")
                    .add(live);
                let encoder =
                    self.gpu
                        .device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("gpugraph-datafusion-aggregate"),
                        });
                acc.finish(&self.gpu, encoder)
            }
            None => kernel::run(&self.gpu, &program, groups, chunks, buffer.as_ref()),
        }
        .map_err(external)?;
        kernel_time.add_duration(times.kernel);
        if let Some(status) = status {
            status.check(&self.gpu).map_err(external)?;
        }
        MetricBuilder::new(&self.metrics)
            .subset_time("kernel_done_at", 0)
            .add_duration(started.elapsed());
        if let Some(gpu) = times.gpu {
            MetricBuilder::new(&self.metrics)
                .subset_time("gpu_time", 0)
                .add_duration(gpu);
        }
        // The chunks' passes alone (gpu_time less the gaps between passes), and the first
        // chunk's, which shows a device still waking up.
        if let Some(first) = times.chunks.first() {
            MetricBuilder::new(&self.metrics)
                .subset_time("gpu_first_chunk_time", 0)
                .add_duration(*first);
            MetricBuilder::new(&self.metrics)
                .subset_time("gpu_chunks_time", 0)
                .add_duration(times.chunks.iter().sum());
        }
        // A key-set or payload run ([`super::set`]) keeps its one group's presence bitmaps
        // and counts.
        if let Some(out) = &self.bits {
            let found = words
                .iter()
                .map(|w| match w.bits {
                    Some((at, span)) => {
                        let at = at as usize;
                        let bits = acc.get(at..at + span.words as usize).unwrap_or_default();
                        super::set::Found::Bits(span.lo, bits.to_vec())
                    }
                    None => {
                        let at = w.count as usize;
                        let word = |i: usize| acc.get(at + i).copied().unwrap_or(0) as u64;
                        super::set::Found::Count(word(0) | word(1) << 32)
                    }
                })
                .collect();
            if let Ok(mut out) = out.lock() {
                *out = Some(found);
            }
            return Ok(Vec::new());
        }
        // The state batch from the accumulators (group keys, and each COUNT(DISTINCT)'s
        // values listed from its bitmaps).
        let output_time = MetricBuilder::new(&self.metrics).subset_time("output_time", 0);
        let start = Instant::now();
        let batch = self.plan.output(
            &acc,
            &words,
            program.words_per_group(),
            (source_groups, groups),
            &tables,
            &|k, g| match k.checked_sub(self.plan.keys.len()) {
                None => converter.key_values(k, g),
                Some(j) => {
                    let stride: usize = cards[..k].iter().map(|&c| c as usize).product();
                    let card = (cards[k] as usize).max(1);
                    let at = UInt32Array::from_iter_values(
                        g.iter().map(|&g| ((g / stride.max(1)) % card) as u32),
                    );
                    Ok(take(keyed[j].as_ref(), &at, None)?)
                }
            },
        )?;
        output_time.add_elapsed(start);
        Ok(vec![batch])
    }
}
