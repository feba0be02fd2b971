//! The analysis report: `report.json` (the machine-readable contract, documented on
//! [`Report`]) and the text summary printed on stdout.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::load::thousands;
use crate::output::{write_json, Table};

/// The version of the `report.json` layout; raised whenever a field changes meaning or goes.
/// 2: `schema_version`, `count_scopes`, `notes`, `grid.value_counts`; grid counts no longer
/// depend on the value column; the grid domain contains every counted point.
/// 3: `groups` leaves out groups with no row passing the filters, listed in
/// `groups_without_selected_rows`; `graph.pipelines_created`, `graph.pipeline_cache`.
pub const SCHEMA_VERSION: u32 = 3;

/// Which rows each count of the report covers (also written into report.json as
/// `count_scopes`, so a reader need not guess).
pub fn count_scopes() -> Vec<(&'static str, &'static str)> {
    vec![
        ("rows", "every row of the file"),
        ("selected", "rows passing every --filter (all rows without filters)"),
        ("value.count", "selected rows whose value is non-null and finite"),
        ("value.nonfinite", "selected rows whose value is NaN or infinite"),
        ("value.nulls", "null values of the whole column (not only selected rows)"),
        ("value.histogram", "selected rows whose value is non-null and finite"),
        ("groups[].count", "selected rows with a non-null group and, with --value, a non-null finite value"),
        ("grid.counts", "selected rows whose x and y are non-null and finite (whatever the value)"),
        ("grid.value_counts", "grid.counts rows whose z (--z, else the value) is also non-null and finite (the rows grid.mean averages)"),
    ]
}

fn scopes_as_map<S: serde::Serializer>(
    v: &[(&'static str, &'static str)],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(v.iter().map(|(k, d)| (*k, *d)))
}

/// `report.json`. Floats are float32 results written in their shortest round-trip decimal
/// form; non-finite values (empty groups' means, an empty extent) are `null`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Which rows each count covers, by field path ([`count_scopes`]).
    #[serde(serialize_with = "scopes_as_map")]
    pub count_scopes: Vec<(&'static str, &'static str)>,
    /// The analyzed file.
    pub file: String,
    /// Its format (`csv`, `parquet`, `arrow-ipc-file`, `arrow-ipc-stream`).
    pub format: &'static str,
    /// Adapter and backend the graph ran on.
    pub device: String,
    /// Rows read.
    pub rows: u64,
    /// Rows passing every filter (`rows` without filters).
    pub selected: u64,
    /// The filters as given (ANDed).
    pub filters: Vec<String>,
    /// The value column's statistics (`null` without `--value`).
    pub value: Option<ValueReport>,
    /// How group and grid means summed their values: `atomic` (float atomics, order varies)
    /// or `deterministic` (`--deterministic`: fixed-point, bit-identical across runs).
    pub summation: &'static str,
    /// The group column (`null` without `--group`).
    pub group_column: Option<String>,
    /// Per group, sorted by key: selected rows with a non-null group and (with `--value`) a
    /// finite value, and their mean value (`null` when empty or without `--value`). With
    /// filters, a group none of whose rows passed them is left out (pandas' groupby after
    /// filtering has no such group) and named in `groups_without_selected_rows`; a group with
    /// selected rows but no finite value stays with count 0 and mean `null`.
    pub groups: Vec<GroupRow>,
    /// Keys (sorted) of the groups left out of `groups` because no row of theirs passed the
    /// filters; empty without filters.
    pub groups_without_selected_rows: Vec<String>,
    /// The x/y grid (`null` without `--x/--y`).
    pub grid: Option<GridReport>,
    /// What the run did differently from plain float32 (float64 filters compared in float64,
    /// widened grid domains), one sentence each.
    pub notes: Vec<String>,
    /// Wall-clock milliseconds per phase.
    pub timings_ms: Timings,
    /// Size of the one compiled graph.
    pub graph: GraphInfo,
}

/// Statistics of the value column over the selected rows.
#[derive(Clone, Debug, Serialize)]
pub struct ValueReport {
    /// Column name.
    pub column: String,
    /// `[min, max]` of the finite selected values (`null` when there are none).
    pub extent: Option<[f64; 2]>,
    /// Selected finite values (`null` when invalid edges hid it).
    pub count: Option<u64>,
    /// Selected non-null values that are NaN or infinite (ignored everywhere).
    pub nonfinite: u64,
    /// Null rows of the column in the whole file (not only the selected rows).
    pub nulls: u64,
    /// The histogram.
    pub histogram: HistogramReport,
}

/// Histogram and CDF of the value.
#[derive(Clone, Debug, Serialize)]
pub struct HistogramReport {
    /// `uniform` (equal width over the extent) or `edges` (given).
    pub kind: &'static str,
    /// Bin edges (bins + 1); bin i is `[e_i, e_i+1)`, the last bin includes its upper edge.
    pub edges: Vec<Option<f64>>,
    /// Values per bin.
    pub counts: Vec<u64>,
    /// Cumulative counts (inclusive).
    pub cumulative: Vec<u64>,
    /// Cumulative fraction of the binned values (the CDF at each bin's upper edge).
    pub cdf: Vec<f64>,
    /// Finite values outside the edges (given edges only).
    pub outside: u64,
    /// The edges were not strictly increasing on the GPU (no finite value, or an extent too
    /// narrow for distinct float32 edges): counts are all zero.
    pub invalid_edges: bool,
}

/// One group.
#[derive(Clone, Debug, Serialize)]
pub struct GroupRow {
    /// The group's string.
    pub key: String,
    /// Selected rows with this group and (with `--value`) a non-null finite value.
    pub count: u64,
    /// Mean value of those rows.
    pub mean: Option<f64>,
}

/// Grid binning of x/y and the per-cell mean of z (`--z`, else the value).
#[derive(Clone, Debug, Serialize)]
pub struct GridReport {
    /// x column.
    pub x: String,
    /// y column.
    pub y: String,
    /// `[min, max]` of x over the grid's rows (`null` when none); contains every counted
    /// point (widened one float32 step on each side when the column's float32 upload rounded
    /// values, by 0.5 when degenerate). Cell `cx` covers
    /// `[min + cx w, min + (cx + 1) w)` with `w = (max - min) / nx`, the last one closed.
    pub x_domain: Option<[f64; 2]>,
    /// `[min, max]` of y over the grid's rows (as `x_domain`).
    pub y_domain: Option<[f64; 2]>,
    /// `[nx, ny]`.
    pub bins: [u32; 2],
    /// Points per cell, row-major: cell `(cx, cy)` at index `cy * nx + cx`, cx = 0 at the
    /// lowest x and cy = 0 at the lowest y (so the first `nx` entries are the bottom row).
    pub counts: Vec<u32>,
    /// The column averaged per cell (`--z`, else the `--value` column; absent without
    /// either).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub z: Option<String>,
    /// Per cell (same order), the points whose z is non-null and finite: the rows the mean
    /// averages (absent without z).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_counts: Option<Vec<u32>>,
    /// Row-major mean of z per cell (`null` for cells without a finite z; absent without
    /// z).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<Vec<Option<f64>>>,
}

/// Wall-clock milliseconds per phase.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timings {
    /// Reading the file into Arrow record batches.
    pub load: f64,
    /// Waiting, after the load, for the device that opens while the file loads (0 when the
    /// device was ready first).
    pub device_wait: f64,
    /// Uploading the columns into GPU buffers.
    pub upload: f64,
    /// Building and compiling the graph (pipelines, transients).
    pub compile: f64,
    /// Encoding, submitting and waiting for the one submission.
    pub gpu: f64,
    /// Mapping and decoding the results.
    pub readback: f64,
    /// Writing report.json and the plots.
    pub output: f64,
    /// Everything.
    pub total: f64,
}

/// Graph facts for the report.
#[derive(Clone, Debug, Serialize)]
pub struct GraphInfo {
    /// Nodes in execution order.
    pub nodes: Vec<String>,
    /// Bytes of graph-owned transients actually allocated.
    pub transient_bytes: u64,
    /// Bytes of imported (uploaded) buffers.
    pub imported_bytes: u64,
    /// Compute pipelines this run created (the rest came from the in-process cache).
    pub pipelines_created: u64,
    /// The driver pipeline cache the compile went through (`null` when off or unsupported:
    /// `GPUGRAPH_PIPELINE_CACHE=off`, a backend other than Vulkan).
    pub pipeline_cache: Option<PipelineCacheReport>,
}

/// The persisted driver pipeline cache of a run (`timings_ms.compile` shows its effect).
#[derive(Clone, Debug, Serialize)]
pub struct PipelineCacheReport {
    /// The cache file (read at start, rewritten when the command succeeds).
    pub file: String,
    /// What happened to the file's data: `"missing"` (first run), `{"offered": {"bytes": n}}`
    /// (handed to the driver, which uses what still matches) or `{"refused": {"reason": ...}}`.
    pub loaded: gpugraph_command::LoadStatus,
}

/// A float32 result as JSON: its shortest round-trip decimal, `null` when not finite.
pub fn num(x: f32) -> Option<f64> {
    if x.is_finite() {
        format!("{x}").parse().ok()
    } else {
        None
    }
}

/// An extent as JSON (`null` unless both ends are finite).
pub fn extent(e: Option<[f32; 2]>) -> Option<[f64; 2]> {
    let [lo, hi] = e?;
    Some([num(lo)?, num(hi)?])
}

impl Report {
    /// Writes `report.json` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        write_json(&dir.join("report.json"), self)
    }

    /// The human-readable summary.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let share = if self.rows > 0 {
            self.selected as f64 * 100.0 / self.rows as f64
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "{} ({}): {} rows, {} selected ({share:.1}%) on {}",
            self.file,
            self.format,
            thousands(self.rows),
            thousands(self.selected),
            self.device
        );
        for f in &self.filters {
            let _ = writeln!(s, "  filter: {f}");
        }
        for n in &self.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        if let Some(v) = &self.value {
            let _ = writeln!(s, "\nvalue '{}'", v.column);
            let ext = v.extent.map_or("none".to_string(), |[a, b]| {
                format!("[{}, {}]", short(a), short(b))
            });
            let count = v.count.map_or("?".to_string(), thousands);
            let _ = writeln!(
                s,
                "  selected rows: extent {ext}, {count} finite, {} non-finite; whole column: {} null",
                thousands(v.nonfinite),
                thousands(v.nulls)
            );
            let h = &v.histogram;
            if h.invalid_edges && v.extent.is_none() {
                let _ = writeln!(s, "  histogram: no finite value selected");
            } else if h.invalid_edges {
                let _ = writeln!(
                    s,
                    "  histogram: the extent {ext} is too narrow for {} distinct float32 edges; use fewer --bins or --edges",
                    h.counts.len() + 1
                );
            } else {
                let _ = writeln!(s, "  histogram ({} bins, {}):", h.counts.len(), h.kind);
                let peak = h.counts.iter().copied().max().unwrap_or(0).max(1);
                let decimals = edge_decimals(&h.edges);
                let labels: Vec<String> = (0..h.counts.len())
                    .map(|i| {
                        let lo = h.edges[i].map_or("nan".into(), |e| edge_text(e, decimals));
                        let hi = h.edges[i + 1].map_or("nan".into(), |e| edge_text(e, decimals));
                        let close = if i + 1 == h.counts.len() { "]" } else { ")" };
                        format!("[{lo}, {hi}{close}")
                    })
                    .collect();
                let lw = labels.iter().map(String::len).max().unwrap_or(0);
                let cw = h
                    .counts
                    .iter()
                    .map(|&c| thousands(c).len())
                    .max()
                    .unwrap_or(0);
                for (i, label) in labels.iter().enumerate() {
                    let c = h.counts[i];
                    let bar = "#".repeat(((c as f64 / peak as f64) * 40.0).round() as usize);
                    let _ = writeln!(
                        s,
                        "    {label:<lw$}  {:>cw$}  cdf {:.3}  {bar}",
                        thousands(c),
                        h.cdf[i]
                    );
                }
                if h.outside > 0 {
                    let _ = writeln!(
                        s,
                        "  {} finite values outside the edges",
                        thousands(h.outside)
                    );
                }
            }
        }
        if let Some(g) = &self.group_column {
            let counted = match &self.value {
                Some(v) => format!(
                    "selected rows with a non-null '{g}' and a finite '{}'",
                    v.column
                ),
                None => format!("selected rows with a non-null '{g}'"),
            };
            let omitted = match self.groups_without_selected_rows.len() {
                0 => String::new(),
                n => format!("; {n} without rows passing the filters not shown"),
            };
            let _ = writeln!(
                s,
                "\ngroups by '{g}' ({}{omitted}; count = {counted}; '-' = no such row):",
                self.groups.len()
            );
            let mut t = Table::new(["key", "count", "mean"]);
            for row in &self.groups {
                t.row([
                    row.key.clone(),
                    thousands(row.count),
                    row.mean.map_or("-".into(), |m| format!("{m:.4}")),
                ]);
            }
            for line in t.to_string().lines() {
                let _ = writeln!(s, "    {line}");
            }
        }
        if let Some(g) = &self.grid {
            let dom = |d: Option<[f64; 2]>| {
                d.map_or("none".to_string(), |[a, b]| {
                    format!("[{}, {}]", short(a), short(b))
                })
            };
            let filled = g.counts.iter().filter(|&&c| c > 0).count();
            let total: u64 = g.counts.iter().map(|&c| c as u64).sum();
            let _ = writeln!(
                s,
                "\ngrid {} x {}: x '{}' in {}, y '{}' in {}; {} points (selected, finite x and y) in {filled} of {} cells (max {})",
                g.bins[0],
                g.bins[1],
                g.x,
                dom(g.x_domain),
                g.y,
                dom(g.y_domain),
                thousands(total),
                g.counts.len(),
                thousands(g.counts.iter().copied().max().unwrap_or(0) as u64)
            );
            if let Some(z) = &g.z {
                let _ = writeln!(s, "  cell means of '{z}' (heatmap_mean.png)");
            }
        }
        let t = &self.timings_ms;
        let _ = writeln!(
            s,
            "\ntimings (ms): load {:.1}, device wait {:.1}, upload {:.1}, compile {:.1}, gpu {:.1}, readback {:.1}, output {:.1}, total {:.1}",
            t.load, t.device_wait, t.upload, t.compile, t.gpu, t.readback, t.output, t.total
        );
        let _ = writeln!(s, "graph: {} nodes", self.graph.nodes.len());
        s
    }
}

/// Decimals that show histogram edges at the precision their spacing asks for: three
/// significant digits of the narrowest bin (so 0.0999985 with bins 0.1 wide prints as 0.1);
/// `None` when the edges are too wide or too narrow for fixed notation.
pub fn edge_decimals(edges: &[Option<f64>]) -> Option<usize> {
    let finite: Vec<f64> = edges.iter().flatten().copied().collect();
    let width = finite
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|w| *w > 0.0)
        .fold(f64::INFINITY, f64::min);
    let big = finite.iter().fold(0f64, |m, e| m.max(e.abs()));
    if !width.is_finite() || !(1e-4..1e7).contains(&big.max(width)) || width < 1e-6 {
        return None;
    }
    Some((2 - width.log10().floor() as i64).clamp(0, 10) as usize)
}

/// An edge rounded to `decimals` (trailing zeros dropped), or [`short`] without them.
pub fn edge_text(e: f64, decimals: Option<usize>) -> String {
    let Some(d) = decimals else {
        return short(e);
    };
    let mut t = format!("{e:.d$}");
    if t.contains('.') {
        t = t.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if t == "-0" {
        t = "0".into();
    }
    t
}

/// A number in a short readable form (up to 6 significant digits).
pub fn short(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-4..1e7).contains(&a) {
        return format!("{x:.3e}");
    }
    let digits = (6 - 1 - a.log10().floor() as i32).clamp(0, 10) as usize;
    let mut t = format!("{x:.digits$}");
    if t.contains('.') {
        t = t.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(0.1), Some(0.1));
        assert_eq!(num(f32::NAN), None);
        assert_eq!(num(-40.0), Some(-40.0));
        assert_eq!(short(1272.0), "1272");
        assert_eq!(short(-0.125), "-0.125");
        assert_eq!(short(12.345678), "12.3457");
        assert_eq!(short(1e9), "1.000e9");
        assert_eq!(extent(Some([1.0, f32::NAN])), None);
    }

    #[test]
    fn edges_print_at_their_spacing() {
        let edges: Vec<Option<f64>> = [0.0, 0.0999985, 0.2, 0.3000001]
            .iter()
            .map(|&e| Some(e))
            .collect();
        let d = edge_decimals(&edges);
        assert_eq!(edge_text(0.0999985, d), "0.1");
        assert_eq!(edge_text(0.3000001, d), "0.3");
        let wide: Vec<Option<f64>> = vec![Some(-40.0), Some(-15.0), Some(10.0)];
        assert_eq!(edge_text(-15.0, edge_decimals(&wide)), "-15");
        let huge = vec![Some(-2e38), Some(0.0), Some(2e38)];
        assert_eq!(edge_text(2e38, edge_decimals(&huge)), "2.000e38");
    }
}
