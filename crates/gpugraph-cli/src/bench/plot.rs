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

use plotters::prelude::*;

use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::chart::{font, plot_error, tick, Area, Image};

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

const OURS: RGBColor = RGBColor(70, 130, 180);
const PEER: RGBColor = RGBColor(230, 150, 60);
const FLOOR: RGBColor = RGBColor(200, 40, 40);

const WIDTH: u32 = 1200;
/// Pixels for the operation labels left of the bars.
const LEFT: u32 = 330;
/// Pixels above the bars (title, device, legend) and below (axis, its name).
const TOP: u32 = 110;
const BOTTOM: u32 = 70;
/// Pixels per bar and between groups.
const BAR: u32 = 24;
const GAP: u32 = 12;

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
    let image = draw(&groups, device.as_deref().unwrap_or("unknown device"))?;
    image.save(&args.out)?;
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

/// The chart: one horizontal bar per row (ours, then each peer), groups top to bottom in
/// the y units of "rows", GB/s along x, the floor as a red mark across its group.
fn draw(groups: &[Group], device: &str) -> Result<Image> {
    let rows: u32 = groups.iter().map(|g| 1 + g.peers.len() as u32).sum();
    let height = TOP + BOTTOM + rows * BAR + groups.len() as u32 * GAP;
    // Row units per group gap.
    let gap = GAP as f64 / BAR as f64;
    let total = rows as f64 + groups.len() as f64 * gap;
    let max = groups
        .iter()
        .flat_map(|g| {
            [g.ours, g.floor]
                .into_iter()
                .chain(g.peers.iter().map(|p| p.1))
        })
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max)
        * 1.12;
    Image::draw(WIDTH, height, |root: &Area<'_>| {
        root.draw(&Text::new(
            "Throughput at minimum traffic",
            (LEFT as i32, 10),
            font(24),
        ))
        .map_err(plot_error)?;
        root.draw(&Text::new(device.to_string(), (LEFT as i32, 38), font(15)))
            .map_err(plot_error)?;
        let mut chart = ChartBuilder::on(root)
            .margin_top(TOP - 30)
            .margin_right(30)
            .x_label_area_size(BOTTOM)
            .y_label_area_size(LEFT)
            .build_cartesian_2d(0.0..max, 0.0..total)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc("GB/s at minimum traffic")
            .axis_desc_style(font(17))
            .label_style(font(14))
            .x_label_formatter(&|v| tick(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(plot_error)?;
        // Rows count down from the top.
        let flip = |v: f64| total - v;
        let label_font = font(14);
        let value_font = font(13);
        let mut y = 0.0f64;
        for g in groups {
            let n = 1 + g.peers.len();
            // The group label, right-aligned left of the axis, clipped to fit.
            let (_, cy) = chart.backend_coord(&(0.0, flip(y + n as f64 / 2.0)));
            let label = fit(root, &g.label, &label_font, LEFT - 20)?;
            root.draw(&Text::new(
                label,
                (LEFT as i32 - 12, cy),
                label_font.pos(Pos::new(HPos::Right, VPos::Center)),
            ))
            .map_err(plot_error)?;
            let bars = std::iter::once(("gpugraph", g.ours, OURS))
                .chain(g.peers.iter().map(|(name, v)| (name.as_str(), *v, PEER)));
            for (k, (name, v, colour)) in bars.enumerate() {
                let (top, bottom) = (y + k as f64 + 0.1, y + k as f64 + 0.9);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(0.0, flip(top)), (v.max(0.0), flip(bottom))],
                        colour.filled(),
                    )))
                    .map_err(plot_error)?;
                let text = if k == 0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.0} {}", clip(name, 28))
                };
                let (px, py) = chart.backend_coord(&(v.max(0.0), flip((top + bottom) / 2.0)));
                root.draw(&Text::new(
                    text,
                    (px + 6, py),
                    value_font.pos(Pos::new(HPos::Left, VPos::Center)),
                ))
                .map_err(plot_error)?;
            }
            if g.floor > 0.0 {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(g.floor, flip(y)), (g.floor, flip(y + n as f64))],
                        FLOOR.stroke_width(3),
                    )))
                    .map_err(plot_error)?;
            }
            y += n as f64 + gap;
        }
        legend(root)
    })
}

/// The legend in a row above the bars: bar swatches and the floor's mark, each named.
fn legend(root: &Area<'_>) -> Result<()> {
    let style = font(15);
    let y = TOP as i32 - 46;
    let mut x = LEFT as i32;
    for (name, colour, bar) in [
        ("gpugraph", OURS, true),
        ("peer (same run)", PEER, true),
        ("floor (streaming kernel, same traffic)", FLOOR, false),
    ] {
        if bar {
            root.draw(&Rectangle::new(
                [(x, y - 7), (x + 18, y + 7)],
                colour.filled(),
            ))
        } else {
            root.draw(&PathElement::new(
                vec![(x + 9, y - 10), (x + 9, y + 10)],
                colour.stroke_width(3),
            ))
        }
        .map_err(plot_error)?;
        root.draw(&Text::new(
            name,
            (x + 26, y),
            style.pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(plot_error)?;
        let (w, _) = root.estimate_text_size(name, &style).map_err(plot_error)?;
        x += 26 + w as i32 + 36;
    }
    Ok(())
}

/// `text` clipped (with a trailing `~`) to at most `width` pixels in `style`.
fn fit(area: &Area<'_>, text: &str, style: &TextStyle<'_>, width: u32) -> Result<String> {
    let mut chars = text.chars().count();
    loop {
        let t = clip(text, chars as u32);
        let (w, _) = area.estimate_text_size(&t, style).map_err(plot_error)?;
        if w <= width || chars <= 2 {
            return Ok(t);
        }
        chars -= 1;
    }
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
