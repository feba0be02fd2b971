//! `gpugraph bench plot`: one PNG chart from the JSON of throughput benches and, optionally,
//! of `bench/peers/peers.py`: for every benchmarked operation at its largest size, horizontal
//! bars of gpugraph's effective bandwidth and each peer's (both at gpugraph's minimum traffic
//! for the operation, so bars compare times), with the floor (the streaming kernel of the same traffic)
//! measured in the same run marked on each group.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Deserialize;

use crate::canvas::{ticks, Canvas, Rgb};
use crate::font;

/// Arguments of `bench plot`.
#[derive(Args, Clone, Debug)]
pub struct PlotArgs {
    /// JSON files written by `gpugraph bench <name> --json` and by `peers.py --json`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The PNG to write.
    #[arg(long, value_name = "FILE.png")]
    pub out: PathBuf,
}

#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    device: Option<String>,
    rows: Vec<Row>,
}

/// A row of either kind: ours carries `gb_per_s`, a peer's carries `peer`.
#[derive(Deserialize)]
struct Row {
    op: String,
    elements: u64,
    median_ms: f64,
    #[serde(default)]
    peer: Option<String>,
    #[serde(default)]
    bytes_per_element: Option<f64>,
    #[serde(default)]
    gb_per_s: Option<f64>,
    /// The floor (copy kernel) bandwidth; older files called it `copy_gb_per_s`.
    #[serde(default, alias = "copy_gb_per_s")]
    floor_gb_per_s: Option<f64>,
}

/// One group of bars: an operation (or kernel variant) at its largest measured size.
struct Group {
    label: String,
    ours: f64,
    /// The floor (streaming kernel of the same traffic) in GB/s; 0 when unknown.
    floor: f64,
    /// (peer name, GB/s at our minimum traffic).
    peers: Vec<(String, f64)>,
}

const INK: Rgb = [40, 40, 40];
const GRID: Rgb = [225, 225, 225];
const OURS: Rgb = [70, 130, 180];
const PEER: Rgb = [230, 150, 60];
const FLOOR: Rgb = [200, 40, 40];

const WIDTH: u32 = 1000;
const LEFT: u32 = 300;
const RIGHT: u32 = 40;
const TOP: u32 = 70;
const BOTTOM: u32 = 50;
const BAR: u32 = 12;
const GAP: u32 = 10;

/// Reads the files, draws the chart, writes `args.out`.
pub fn run(args: &PlotArgs) -> Result<()> {
    let mut ours: Vec<Row> = Vec::new();
    let mut peers: Vec<Row> = Vec::new();
    let mut device = None;
    for path in &args.files {
        let doc = read(path)?;
        for row in doc.rows {
            if row.peer.is_some() {
                peers.push(row);
            } else if row.gb_per_s.is_some() && row.bytes_per_element.is_some() {
                ours.push(row);
            } else {
                bail!(
                    "{}: row '{}' is neither a throughput bench row (gb_per_s, bytes_per_element) nor a peer row (peer)",
                    path.display(),
                    row.op
                );
            }
        }
        if doc.device.is_some() && device.is_none() {
            device = doc.device;
        }
    }
    let groups = groups(&ours, &peers);
    if groups.is_empty() {
        bail!("no throughput bench rows in {:?}", args.files);
    }
    let canvas = draw(&groups, device.as_deref().unwrap_or("unknown device"));
    canvas.save(&args.out)?;
    eprintln!(
        "bench plot: {} operations -> {}",
        groups.len(),
        args.out.display()
    );
    Ok(())
}

fn read(path: &Path) -> Result<Doc> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a bench JSON document ({{\"rows\": [{{\"op\", \"elements\", \"median_ms\", ...}}]}})",
            path.display()
        )
    })
}

/// Our rows at each op's largest size, in first-seen order, with the peers of the same base op
/// (the op without a `[variant]` suffix) and size.
fn groups(ours: &[Row], peers: &[Row]) -> Vec<Group> {
    let mut largest: BTreeMap<&str, u64> = BTreeMap::new();
    for r in ours {
        let e = largest.entry(r.op.as_str()).or_insert(0);
        *e = (*e).max(r.elements);
    }
    let mut out = Vec::new();
    for r in ours.iter().filter(|r| largest[r.op.as_str()] == r.elements) {
        let base = r.op.split('[').next().unwrap_or(&r.op);
        let bytes = r.bytes_per_element.unwrap_or(0.0) * r.elements as f64;
        let mut best: BTreeMap<&str, f64> = BTreeMap::new();
        for p in peers
            .iter()
            .filter(|p| p.op == base && p.elements == r.elements && p.median_ms > 0.0)
        {
            let gbps = bytes / (p.median_ms * 1e6);
            let name = p.peer.as_deref().unwrap_or("peer");
            let e = best.entry(name).or_insert(0.0);
            *e = e.max(gbps);
        }
        out.push(Group {
            label: format!("{} @ {}", r.op, size_label(r.elements)),
            ours: r.gb_per_s.unwrap_or(0.0),
            floor: r.floor_gb_per_s.unwrap_or(0.0),
            peers: best.into_iter().map(|(n, g)| (n.to_string(), g)).collect(),
        });
    }
    out
}

/// `2^k` for powers of two, else the count.
fn size_label(n: u64) -> String {
    if n.is_power_of_two() && n >= 1024 {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

fn draw(groups: &[Group], device: &str) -> Canvas {
    let bars: u32 = groups.iter().map(|g| 1 + g.peers.len() as u32).sum();
    let height = TOP + BOTTOM + bars * BAR + groups.len() as u32 * GAP;
    let mut c = Canvas::new(WIDTH, height);
    let max = groups
        .iter()
        .flat_map(|g| {
            [g.ours, g.floor]
                .into_iter()
                .chain(g.peers.iter().map(|p| p.1))
        })
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max)
        * 1.05;
    let px = |v: f64| LEFT as i64 + ((v / max) * (WIDTH - LEFT - RIGHT) as f64).round() as i64;
    c.text_centered(
        (WIDTH / 2) as i64,
        10,
        "THROUGHPUT AT MINIMUM TRAFFIC, GB/S",
        2,
        INK,
    );
    c.text_centered((WIDTH / 2) as i64, 32, device, 1, INK);
    // Legend.
    let mut x = LEFT as i64;
    for (color, name, bar) in [
        (OURS, "GPUGRAPH", true),
        (PEER, "PEER (SAME RUN)", true),
        (FLOOR, "FLOOR (STREAMING KERNEL, SAME TRAFFIC)", false),
    ] {
        if bar {
            c.fill(x, 48, x + 14, 56, color);
        } else {
            c.fill(x + 6, 44, x + 8, 60, color);
        }
        c.text(x + 20, 49, name, 1, INK);
        x += 20 + font::text_width(name, 1) as i64 + 30;
    }
    let bottom = (height - BOTTOM) as i64;
    for t in ticks(0.0, max, 8) {
        let p = px(t);
        c.line((p, TOP as i64), (p, bottom), GRID);
        c.text_centered(p, bottom + 8, &format!("{t}"), 1, INK);
    }
    let mut y = TOP as i64;
    for g in groups {
        let rows = 1 + g.peers.len() as i64;
        let label_y = y + (rows * BAR as i64) / 2 - 4;
        let label = clip(&g.label, (LEFT - 12) / font::ADVANCE);
        let w = font::text_width(&label, 1) as i64;
        c.text(LEFT as i64 - 8 - w, label_y, &label, 1, INK);
        c.fill(LEFT as i64, y + 1, px(g.ours), y + BAR as i64 - 1, OURS);
        bar_value(&mut c, px(g.ours), y, g.ours);
        let mut py = y + BAR as i64;
        for (name, v) in &g.peers {
            c.fill(LEFT as i64, py + 1, px(*v), py + BAR as i64 - 1, PEER);
            bar_value(&mut c, px(*v), py, *v);
            let tag = clip(name, 24);
            let tw = font::text_width(&tag, 1) as i64;
            if px(*v) - LEFT as i64 > tw + 8 {
                c.text(LEFT as i64 + 4, py + 3, &tag, 1, [255, 255, 255]);
            }
            py += BAR as i64;
        }
        if g.floor > 0.0 {
            let f = px(g.floor);
            c.fill(f - 1, y - 2, f + 1, y + rows * BAR as i64 + 2, FLOOR);
        }
        y += rows * BAR as i64 + GAP as i64;
    }
    c.line((LEFT as i64, TOP as i64), (LEFT as i64, bottom), INK);
    c.line((LEFT as i64, bottom), ((WIDTH - RIGHT) as i64, bottom), INK);
    c
}

/// The value at the end of a bar.
fn bar_value(c: &mut Canvas, end: i64, y: i64, v: f64) {
    c.text(end + 4, y + 3, &format!("{v:.0}"), 1, INK);
}

/// `s` cut to `max` characters (with a trailing `~` when cut).
fn clip(s: &str, max: u32) -> String {
    let max = max.max(2) as usize;
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('~');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(op: &str, elements: u64, ms: f64, peer: Option<&str>) -> Row {
        Row {
            op: op.into(),
            elements,
            median_ms: ms,
            peer: peer.map(str::to_string),
            bytes_per_element: peer.is_none().then_some(8.0),
            gb_per_s: peer.is_none().then_some(8.0 * elements as f64 / (ms * 1e6)),
            floor_gb_per_s: peer.is_none().then_some(100.0),
        }
    }

    #[test]
    fn groups_keep_the_largest_size_and_pair_variants_with_the_base_op_peer() {
        let ours = [
            row("scan-exclusive", 1 << 20, 1.0, None),
            row("scan-exclusive", 1 << 24, 4.0, None),
            row("scan-exclusive[unroll=0]", 1 << 24, 8.0, None),
        ];
        let peers = [
            row("scan-exclusive", 1 << 24, 2.0, Some("torch.cumsum")),
            row("scan-exclusive", 1 << 24, 1.0, Some("torch.cumsum")),
            row("scan-exclusive", 1 << 20, 0.1, Some("cupy")),
        ];
        let g = groups(&ours, &peers);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].label, "scan-exclusive @ 2^24");
        assert_eq!(g[1].label, "scan-exclusive[unroll=0] @ 2^24");
        // The best of the peer's runs, at our traffic: 8 B × 2^24 / 1 ms.
        assert_eq!(g[0].peers.len(), 1);
        let want = 8.0 * (1u64 << 24) as f64 / 1e6;
        assert!((g[1].peers[0].1 - want).abs() < 1e-9);
        assert_eq!(size_label(1000), "1000");
        assert_eq!(clip("abcdef", 4), "abc~");
    }
}
