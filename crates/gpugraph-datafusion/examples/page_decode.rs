//! The page scan's host half alone: reads, decompresses and parses the pages of the named
//! columns of a Parquet file into memory, the way `GpuPartialAggregateExec` does before the
//! GPU expands them, on every core, and reports its rate. No GPU is used, so the host's
//! share of a scan from Parquet can be measured and profiled on any machine.
//!
//! `cargo run --release -p gpugraph-datafusion --example page_decode -- lineitem.parquet
//! l_shipdate l_discount l_quantity l_extendedprice [--key l_returnflag] [--threads N]`

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use datafusion::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use gpugraph_datafusion::pages::{read_column, region_bound, PageScan, RegionSink, RowGroupTask};

/// The CLI's allocator: the scan's allocations are part of what is measured.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A region written into a buffer reused from column to column, as the scan reuses slabs.
struct Scratch(Vec<u8>);

impl RegionSink for Scratch {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        self.0[at..at + bytes.len()].copy_from_slice(bytes);
    }
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(
        args.next()
            .ok_or("usage: page_decode FILE COLUMN... [--key COLUMN] [--threads N]")?,
    );
    let (mut values, mut keys) = (Vec::new(), Vec::new());
    let mut threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut repeat = 5usize;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--key" => keys.push(args.next().ok_or("--key takes a column")?),
            "--threads" => threads = number(args.next(), "--threads")?,
            "--repeat" => repeat = number(args.next(), "--repeat")?.max(1),
            _ => values.push(a),
        }
    }
    let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let loaded =
        ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| e.to_string())?;
    let (metadata, schema) = (Arc::clone(loaded.metadata()), Arc::clone(loaded.schema()));
    let slots: Vec<_> = values
        .iter()
        .chain(&keys)
        .map(|c| {
            schema
                .field_with_name(c)
                .map(|f| (c.clone(), f.data_type().clone()))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let scan = PageScan::of(&[(Arc::clone(&metadata), schema)], &slots, keys.len())?;
    let tasks: Vec<RowGroupTask> = (0..metadata.num_row_groups())
        .map(|row_group| RowGroupTask {
            path: path.clone(),
            metadata: Arc::clone(&metadata),
            row_group,
        })
        .collect();
    let mut runs = Vec::new();
    let mut parsed = 0;
    for _ in 0..repeat {
        let started = Instant::now();
        parsed = decode(&scan, &tasks, threads)?;
        runs.push(started.elapsed().as_secs_f64());
    }
    runs.sort_by(f64::total_cmp);
    let secs = runs[runs.len() / 2];
    let rows = metadata.file_metadata().num_rows();
    println!(
        "{} row groups x {} columns, {threads} threads, median of {repeat}: {:.1} ms [{:.1}-{:.1}], {:.1} M rows/s, {:.2} GB/s of regions parsed",
        tasks.len(),
        scan.slots(),
        secs * 1e3,
        runs[0] * 1e3,
        runs[runs.len() - 1] * 1e3,
        rows as f64 / secs / 1e6,
        parsed as f64 / secs / 1e9
    );
    Ok(())
}

fn number(arg: Option<String>, flag: &str) -> Result<usize, String> {
    arg.and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("{flag} takes a number"))
}

/// Every column chunk of `tasks` parsed on `threads` threads; returns the regions' bytes.
fn decode(scan: &PageScan, tasks: &[RowGroupTask], threads: usize) -> Result<usize, String> {
    let (next, parsed) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> Result<(), String> {
                    let mut scratch = Scratch(Vec::new());
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(task) = tasks.get(i / scan.slots()) else {
                            return Ok(());
                        };
                        let slot = i % scan.slots();
                        let bound = region_bound(scan, task, slot);
                        if scratch.0.len() < bound {
                            scratch.0.resize(bound, 0);
                        }
                        let column = read_column(scan, task, slot, &mut scratch)?
                            .map_err(|m| m.to_string())?;
                        parsed.fetch_add(column.region_len, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().map_err(|_| "a worker panicked".to_string())?)
    })?;
    Ok(parsed.into_inner())
}
