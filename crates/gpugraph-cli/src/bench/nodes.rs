//! Per-node GPU times of a bench graph against the floor of each node's own traffic (`bench
//! sort`: the histogram, every digit pass and the key transforms), so the gap to the floor is
//! visible per pass and not only in total.
//!
//! Times come from profiled encodes ([`EncodeOptions::profile`]: one pass per node with
//! timestamp writes), taken after the case's whole-graph timing so the GPU is warm; the floor
//! of a node is the WGSL copy kernel moving the same bytes ([`Floor::time`]). Devices without
//! `TIMESTAMP_QUERY` give no node rows.

use anyhow::{Context, Result};
use gpugraph_command::wgpu;
use gpugraph_command::{CompiledGraph, EncodeOptions};
use serde::Serialize;

use super::floor::Floor;
use super::report::{median, Table};
use crate::gpu::Gpu;

/// One node of a case, as printed and written to JSON (under the case's `nodes`).
#[derive(Clone, Debug, Serialize)]
pub struct NodeRow {
    /// Node id, e.g. `sort-keys.pass2`.
    pub node: String,
    /// Median GPU time of the node's pass, in milliseconds.
    pub median_ms: f64,
    /// Bytes per element the node moves (reads + writes).
    pub bytes_per_element: f64,
    /// Median time of the copy kernel moving the same bytes.
    pub floor_median_ms: f64,
    /// `floor_median_ms / median_ms`: 1.0 is the floor.
    pub ratio_to_floor: f64,
}

/// Times every node of `graph` that `bytes_of` names over `repeat` profiled encodes;
/// `bytes_of(node)`: bytes per element (reads + writes) the node moves, `None` leaves it out.
pub fn time_nodes(
    gpu: &Gpu,
    graph: &mut CompiledGraph,
    n: u64,
    repeat: u32,
    floor: &mut Floor,
    bytes_of: &dyn Fn(&str) -> Option<f64>,
) -> Result<Vec<NodeRow>> {
    if !gpu
        .device()
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY)
    {
        return Ok(Vec::new());
    }
    let mut samples: Vec<(String, Vec<f64>)> = Vec::new();
    for _ in 0..repeat {
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        graph
            .encode(
                &mut enc,
                &EncodeOptions {
                    profile: true,
                    ..Default::default()
                },
            )
            .context("encoding a profiled run")?;
        gpu.submit_and_wait(enc.finish())?;
        let timings = graph
            .read_timings(gpu.queue())
            .context("reading node timings")?;
        for t in timings {
            let Some(ns) = t.gpu_ns else { continue };
            match samples.iter_mut().find(|(id, _)| *id == t.node) {
                Some((_, v)) => v.push(ns / 1e6),
                None => samples.push((t.node, vec![ns / 1e6])),
            }
        }
    }
    let mut rows = Vec::new();
    for (node, ms) in samples {
        let Some(bytes) = bytes_of(&node) else {
            continue;
        };
        let t = median(&ms);
        // The floor copies `b` bytes: reads b and writes b, so half the node's traffic.
        let f = floor.time(gpu, (n as f64 * bytes / 2.0) as u64, repeat)?;
        rows.push(NodeRow {
            node,
            median_ms: t,
            bytes_per_element: bytes,
            floor_median_ms: f.median,
            ratio_to_floor: if t > 0.0 { f.median / t } else { 0.0 },
        });
    }
    Ok(rows)
}

/// Prints the node rows of every case that has them, one table.
pub fn print_nodes<'a>(cases: impl IntoIterator<Item = (u64, &'a [NodeRow])>) {
    let mut table = Table::new([
        "node",
        "elements",
        "median ms",
        "B/elem",
        "floor ms",
        "x floor",
    ]);
    let mut any = false;
    for (n, rows) in cases {
        for r in rows {
            any = true;
            table.row([
                r.node.clone(),
                n.to_string(),
                format!("{:.4}", r.median_ms),
                format!("{}", r.bytes_per_element),
                format!("{:.4}", r.floor_median_ms),
                format!("{:.2}", r.ratio_to_floor),
            ]);
        }
    }
    if any {
        println!("per node (profiled: one pass per node):");
        print!("{table}");
    }
}
