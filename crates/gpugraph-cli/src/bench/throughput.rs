//! Throughput benches (`bench copy|mask|scan|compact|...`): one compiled graph per case, timed
//! on the GPU with timestamps bracketing the whole graph (wall clock where the adapter has no
//! timestamps), against the bandwidth floor ([`super::floor`]: a WGSL streaming copy kernel of
//! the same bytes) timed in the same process.
//! Every case checks its result against the CPU oracle before its timing is reported.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{CompiledGraph, EncodeOptions};
use serde::Serialize;

use super::report::{self, Summary, Table};
use crate::gpu::Gpu;

/// One measured case, as printed and as written to JSON (`bench/combine.py` reads `op`,
/// `elements` and `median_ms`).
#[derive(Clone, Debug, Serialize)]
pub struct ThroughputRow {
    /// Operation name, e.g. `scan-exclusive`.
    pub op: String,
    /// Elements processed.
    pub elements: u64,
    /// Bytes the operation must move per element at minimum (reads + writes).
    pub bytes_per_element: f64,
    /// Median GPU time in milliseconds.
    pub median_ms: f64,
    /// Fastest run.
    pub min_ms: f64,
    /// Slowest run.
    pub max_ms: f64,
    /// Elements per second at the median.
    pub elements_per_s: f64,
    /// `elements × bytes_per_element / median`, in GB/s (10^9).
    pub gb_per_s: f64,
    /// Median time of the floor: the copy kernel moving `elements × bytes_per_element / 2`
    /// bytes (the same traffic, read + write).
    pub floor_median_ms: f64,
    /// Floor bandwidth (read + write) in GB/s.
    pub floor_gb_per_s: f64,
    /// `gb_per_s / floor_gb_per_s`: 1.0 is the floor. Above 1.0 means the bench counted
    /// less traffic than the primitive moves (or the data sat in a cache): a bench bug, and
    /// the table marks it with `!`.
    pub ratio_to_floor: f64,
    /// `gpu-timestamps` or `wall-clock`.
    pub timing: &'static str,
    /// Per-node times against each node's own floor (benches that ask for them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<super::nodes::NodeRow>,
}

/// Times `repeat` encodes of `graph`, each bracketed by timestamps, in one submission after
/// two warm-up encodes. Returns milliseconds per run.
pub fn time_graph(
    gpu: &Gpu,
    graph: &mut CompiledGraph,
    repeat: u32,
) -> Result<(Summary, &'static str)> {
    time_encoded(gpu, repeat, |enc| {
        graph
            .encode(enc, &EncodeOptions::default())
            .context("encoding the graph")?;
        Ok(())
    })
}

/// Default GPU warm-up before every timed case, in milliseconds (`GPUGRAPH_BENCH_WARMUP_MS`
/// overrides it).
///
/// Why time-based: on the NVIDIA H200 (2026-12-01, bench/README.md) a GPU left idle for the
/// second or so that the host spends generating inputs and CPU oracles needs ~150 ms of
/// sustained load before it runs at full speed again. With two warm-up runs, every case whose
/// host preparation was long (the 2^27–2^28 sizes) was timed at 0.3–0.5× of what it reaches
/// once warm — the "512 MiB cliff".
pub const WARMUP_MS: u64 = 300;

fn warmup() -> std::time::Duration {
    let ms = std::env::var("GPUGRAPH_BENCH_WARMUP_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(WARMUP_MS);
    std::time::Duration::from_millis(ms)
}

/// Times `repeat` recordings of `record`, each bracketed by timestamps, in one submission after
/// a warm-up of at least two runs and [`WARMUP_MS`] of GPU load (batches of recordings that
/// double until one batch takes ≥ 20 ms; the last batch is repeated, unstamped, at the start
/// of the timed submission). Returns milliseconds per recording and the timing source.
pub fn time_encoded(
    gpu: &Gpu,
    repeat: u32,
    mut record: impl FnMut(&mut wgpu::CommandEncoder) -> Result<()>,
) -> Result<(Summary, &'static str)> {
    let device = gpu.device();
    // Warm-up: pipelines, caches, and the GPU's clocks (see WARMUP_MS).
    let (start, budget) = (Instant::now(), warmup());
    let (mut runs, mut batch) = (0u32, 1u32);
    while runs < 2 || start.elapsed() < budget {
        let mut enc = device.create_command_encoder(&Default::default());
        for _ in 0..batch {
            record(&mut enc)?;
        }
        let t0 = Instant::now();
        gpu.submit_and_wait(enc.finish())?;
        runs += batch;
        if t0.elapsed().as_millis() < 20 && batch < 1 << 16 {
            batch *= 2;
        }
    }
    if !device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
        let mut samples = Vec::new();
        for _ in 0..repeat {
            let mut enc = device.create_command_encoder(&Default::default());
            record(&mut enc)?;
            let t0 = Instant::now();
            gpu.submit_and_wait(enc.finish())?;
            samples.push(report::ms(t0.elapsed()));
        }
        return Ok((Summary::of(&samples), "wall-clock"));
    }
    // Timestamps in empty passes around each run: the begin stamp precedes the graph's
    // commands, the end stamp waits for them (Vulkan writes pass-end stamps at bottom of pipe).
    let queries = 2 * repeat;
    let set = device.create_query_set(&wgpu::QuerySetDescriptor {
        label: Some("bench-timestamps"),
        ty: wgpu::QueryType::Timestamp,
        count: queries,
    });
    let resolve = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench-resolve"),
        size: queries as u64 * 8,
        usage: U::QUERY_RESOLVE | U::COPY_SRC,
        mapped_at_creation: false,
    });
    let staging = gpu.staging("bench-staging", queries as u64 * 8);
    let mut enc = device.create_command_encoder(&Default::default());
    // The last warm-up batch again (≥ 20 ms of load when it could be), unstamped, in the same
    // submission: the host's wait between the warm-up and the timed runs must not let the
    // clocks drop (H200: one run in ~20 at 2.4x the median, and once a whole process, when the
    // timed runs followed a separate submission).
    for _ in 0..batch {
        record(&mut enc)?;
    }
    for r in 0..repeat {
        stamp(&mut enc, &set, Some(2 * r), None);
        record(&mut enc)?;
        stamp(&mut enc, &set, None, Some(2 * r + 1));
    }
    enc.resolve_query_set(&set, 0..queries, &resolve, 0);
    enc.copy_buffer_to_buffer(&resolve, 0, &staging, 0, queries as u64 * 8);
    gpu.submit_and_wait(enc.finish())?;
    let words = gpu.read_u32(&staging)?;
    let period = gpu.queue().get_timestamp_period() as f64;
    let samples: Vec<f64> = (0..repeat as usize)
        .map(|r| {
            let t = |q: usize| words[2 * q] as u64 | (words[2 * q + 1] as u64) << 32;
            t(2 * r + 1).saturating_sub(t(2 * r)) as f64 * period / 1e6
        })
        .collect();
    Ok((Summary::of(&samples), "gpu-timestamps"))
}

fn stamp(
    enc: &mut wgpu::CommandEncoder,
    set: &wgpu::QuerySet,
    begin: Option<u32>,
    end: Option<u32>,
) {
    let pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("bench-stamp"),
        timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
            query_set: set,
            beginning_of_pass_write_index: begin,
            end_of_pass_write_index: end,
        }),
    });
    drop(pass);
}

/// Builds the row from a measured graph time and the floor time of the same traffic.
pub fn row(
    op: &str,
    elements: u64,
    bytes_per_element: f64,
    t: &Summary,
    floor: &Summary,
    timing: &'static str,
) -> ThroughputRow {
    let bytes = elements as f64 * bytes_per_element;
    let gbs = |ms: f64| {
        if ms > 0.0 {
            bytes / (ms * 1e-3) / 1e9
        } else {
            0.0
        }
    };
    ThroughputRow {
        op: op.to_string(),
        elements,
        bytes_per_element,
        median_ms: t.median,
        min_ms: t.min,
        max_ms: t.max,
        elements_per_s: if t.median > 0.0 {
            elements as f64 / (t.median * 1e-3)
        } else {
            0.0
        },
        gb_per_s: gbs(t.median),
        floor_median_ms: floor.median,
        floor_gb_per_s: gbs(floor.median),
        ratio_to_floor: if t.median > 0.0 {
            floor.median / t.median
        } else {
            0.0
        },
        timing,
        nodes: Vec::new(),
    }
}

/// Prints the rows as a table.
pub fn print_rows(rows: &[ThroughputRow]) {
    let mut table = Table::new([
        "op",
        "elements",
        "median ms",
        "[min-max]",
        "Gelem/s",
        "GB/s",
        "floor GB/s",
        "x floor",
        "timing",
    ]);
    for r in rows {
        table.row([
            r.op.clone(),
            r.elements.to_string(),
            format!("{:.4}", r.median_ms),
            format!("[{:.4}-{:.4}]", r.min_ms, r.max_ms),
            format!("{:.2}", r.elements_per_s / 1e9),
            format!("{:.1}", r.gb_per_s),
            format!("{:.1}", r.floor_gb_per_s),
            if r.ratio_to_floor > 1.0 {
                format!("{:.2}!", r.ratio_to_floor)
            } else {
                format!("{:.2}", r.ratio_to_floor)
            },
            r.timing.to_string(),
        ]);
    }
    print!("{table}");
}

/// Parses `--sizes` entries: plain counts or powers written `2^28`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if let Some(exp) = t.strip_prefix("2^") {
        let e: u32 = exp.parse().map_err(|_| format!("bad size '{t}'"))?;
        if e > 40 {
            return Err(format!("size '{t}' is too large"));
        }
        return Ok(1u64 << e);
    }
    t.parse::<u64>()
        .map_err(|_| format!("bad size '{t}' (use a count or 2^k)"))
}

/// Fails unless `got == want`, naming the first differing index.
pub fn check_equal(what: &str, got: &[u32], want: &[u32]) -> Result<()> {
    if got.len() != want.len() {
        bail!(
            "{what}: result has {} rows, expected {}",
            got.len(),
            want.len()
        );
    }
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        bail!(
            "{what}: row {i} is {} but the CPU oracle says {}",
            got[i],
            want[i]
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_counts_and_powers() {
        assert_eq!(parse_size("2^28"), Ok(1 << 28));
        assert_eq!(parse_size(" 1000 "), Ok(1000));
        assert!(parse_size("2^x").is_err());
        assert!(parse_size("lots").is_err());
    }
}
