//! PNG plots of the report (histogram, CDF, heatmaps) drawn on a [`Canvas`] (the CLI's small
//! rasterizer; text in the embedded [`crate::font`]), so no system font or graphics library is
//! needed.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::report::{short, GridReport, Report};
use crate::canvas::{ticks, Canvas, Rgb};
use crate::font;

const INK: Rgb = [40, 40, 40];
const GRID: Rgb = [225, 225, 225];
const BAR: Rgb = [70, 130, 180];
const LINE: Rgb = [200, 60, 40];
const EMPTY: Rgb = [245, 245, 245];

/// Plot size in pixels.
const W: u32 = 800;
const H: u32 = 500;
/// Plot-area margins: left, right, top, bottom.
const MARGIN: (u32, u32, u32, u32) = (80, 30, 50, 60);

/// The linear map of a plot axis: data `[lo, hi]` to pixels `[p0, p1]`.
#[derive(Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
}

impl Axis {
    fn new(lo: f64, hi: f64, p0: u32, p1: u32) -> Self {
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else {
            (lo - 0.5, lo + 0.5)
        };
        Self {
            lo,
            hi,
            p0: p0 as f64,
            p1: p1 as f64,
        }
    }
    fn px(&self, v: f64) -> i64 {
        (self.p0 + (v - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)).round() as i64
    }
}

/// A frame: the plot area, axes with ticks and labels, a title and axis names.
struct Frame {
    canvas: Canvas,
    x: Axis,
    y: Axis,
}

impl Frame {
    fn new(title: &str, x_name: &str, y_name: &str, x: (f64, f64), y: (f64, f64)) -> Self {
        let (ml, mr, mt, mb) = MARGIN;
        let mut canvas = Canvas::new(W, H);
        let xa = Axis::new(x.0, x.1, ml, W - mr);
        let ya = Axis::new(y.0, y.1, H - mb, mt);
        canvas.text_centered((W / 2) as i64, 14, title, 2, INK);
        for t in ticks(xa.lo, xa.hi, 8) {
            let px = xa.px(t);
            canvas.line((px, mt as i64), (px, (H - mb) as i64), GRID);
            canvas.line((px, (H - mb) as i64), (px, (H - mb + 5) as i64), INK);
            canvas.text_centered(px, (H - mb + 9) as i64, &short(t), 1, INK);
        }
        for t in ticks(ya.lo, ya.hi, 6) {
            let py = ya.py(t);
            canvas.line((ml as i64, py), ((W - mr) as i64, py), GRID);
            canvas.line(((ml - 5) as i64, py), (ml as i64, py), INK);
            let label = short(t);
            let w = font::text_width(&label, 1) as i64;
            canvas.text(ml as i64 - 9 - w, py - 3, &label, 1, INK);
        }
        canvas.text_centered(
            ((ml + W - mr) / 2) as i64,
            (H - mb + 28) as i64,
            x_name,
            2,
            INK,
        );
        canvas.text(8, (mt - 16) as i64, y_name, 1, INK);
        Self {
            canvas,
            x: xa,
            y: ya,
        }
    }

    /// Redraws the axis lines on top of the data.
    fn finish(mut self) -> Canvas {
        let (ml, mr, mt, mb) = MARGIN;
        self.canvas
            .line((ml as i64, mt as i64), (ml as i64, (H - mb) as i64), INK);
        self.canvas.line(
            (ml as i64, (H - mb) as i64),
            ((W - mr) as i64, (H - mb) as i64),
            INK,
        );
        self.canvas
    }
}

impl Axis {
    fn py(&self, v: f64) -> i64 {
        self.px(v)
    }
}

/// Viridis-like colour for `t` in `[0, 1]`.
pub fn viridis(t: f64) -> Rgb {
    const STOPS: [Rgb; 5] = [
        [68, 1, 84],
        [59, 82, 139],
        [33, 145, 140],
        [94, 201, 98],
        [253, 231, 37],
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let f = t * (STOPS.len() - 1) as f64;
    let i = (f.floor() as usize).min(STOPS.len() - 2);
    let u = f - i as f64;
    let mut out = [0u8; 3];
    for c in 0..3 {
        out[c] = (STOPS[i][c] as f64 * (1.0 - u) + STOPS[i + 1][c] as f64 * u).round() as u8;
    }
    out
}

fn no_data(canvas: &mut Canvas) {
    canvas.text_centered((W / 2) as i64, (H / 2) as i64, "NO DATA", 3, LINE);
}

/// The histogram of the report's value as bars over the edges.
pub fn histogram(report: &Report) -> Option<Canvas> {
    let v = report.value.as_ref()?;
    let h = &v.histogram;
    let edges: Vec<f64> = h.edges.iter().map(|e| e.unwrap_or(f64::NAN)).collect();
    let (lo, hi) = (edges[0], edges[edges.len() - 1]);
    let peak = h.counts.iter().copied().max().unwrap_or(0) as f64;
    let title = format!("HISTOGRAM OF {} ({} BINS)", v.column, h.counts.len());
    let ok = !h.invalid_edges && lo.is_finite() && hi.is_finite();
    let (x0, x1) = if ok { (lo, hi) } else { (0.0, 1.0) };
    let mut f = Frame::new(
        &title,
        &v.column,
        "COUNT",
        (x0, x1),
        (0.0, (peak * 1.05).max(1.0)),
    );
    if !ok || peak == 0.0 {
        no_data(&mut f.canvas);
        return Some(f.finish());
    }
    for (i, &c) in h.counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let (a, b) = (f.x.px(edges[i]), f.x.px(edges[i + 1]));
        let gap = if b - a > 3 { 1 } else { 0 };
        let top = f.y.py(c as f64);
        f.canvas.fill(a + gap, top, b.max(a + 1), f.y.py(0.0), BAR);
    }
    Some(f.finish())
}

/// The CDF of the value: cumulative fraction at each bin's upper edge, linear within bins.
pub fn cdf(report: &Report) -> Option<Canvas> {
    let v = report.value.as_ref()?;
    let h = &v.histogram;
    let edges: Vec<f64> = h.edges.iter().map(|e| e.unwrap_or(f64::NAN)).collect();
    let (lo, hi) = (edges[0], edges[edges.len() - 1]);
    let ok = !h.invalid_edges
        && lo.is_finite()
        && hi.is_finite()
        && h.cumulative.last().is_some_and(|&t| t > 0);
    let (x0, x1) = if ok { (lo, hi) } else { (0.0, 1.0) };
    let title = format!("CDF OF {}", v.column);
    let mut f = Frame::new(&title, &v.column, "FRACTION <= X", (x0, x1), (0.0, 1.0));
    if !ok {
        no_data(&mut f.canvas);
        return Some(f.finish());
    }
    let mut prev = (f.x.px(lo), f.y.py(0.0));
    for (i, p) in h.cdf.iter().enumerate() {
        let next = (f.x.px(edges[i + 1]), f.y.py(*p));
        f.canvas.thick_line(prev, next, LINE);
        prev = next;
    }
    Some(f.finish())
}

/// A heatmap of grid cells: `counts` on a log colour scale, or (with `means`) the mean value.
fn heatmap(grid: &GridReport, means: bool) -> Canvas {
    let (xd, yd) = (grid.x_domain, grid.y_domain);
    let x = xd.map_or(
        (0.0, 1.0),
        |[a, b]| if b > a { (a, b) } else { (a - 0.5, b + 0.5) },
    );
    let y = yd.map_or(
        (0.0, 1.0),
        |[a, b]| if b > a { (a, b) } else { (a - 0.5, b + 0.5) },
    );
    let title = if means {
        format!("MEAN VALUE BY {} × {}", grid.x, grid.y)
    } else {
        format!("ROWS BY {} × {} (LOG COLOUR)", grid.x, grid.y)
    };
    let mut f = Frame::new(&title, &grid.x, &grid.y, x, y);
    let [nx, ny] = grid.bins;
    let values: Vec<Option<f64>> = if means {
        grid.mean.clone().unwrap_or_default()
    } else {
        grid.counts
            .iter()
            .map(|&c| (c > 0).then(|| (c as f64).ln()))
            .collect()
    };
    let finite = values.iter().flatten().copied();
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    if xd.is_none() || yd.is_none() || !lo.is_finite() {
        no_data(&mut f.canvas);
        return f.finish();
    }
    let (lo, span) = if means { (lo, hi - lo) } else { (0.0, hi) };
    for cy in 0..ny {
        for cx in 0..nx {
            let v = values[(cy * nx + cx) as usize];
            // A single value (one count everywhere, or one mean) takes the top colour.
            let colour = v.map_or(EMPTY, |v| {
                viridis(if span > 0.0 { (v - lo) / span } else { 1.0 })
            });
            let xa = f.x.px(x.0 + (x.1 - x.0) * cx as f64 / nx as f64);
            let xb = f.x.px(x.0 + (x.1 - x.0) * (cx + 1) as f64 / nx as f64);
            let ya = f.y.py(y.0 + (y.1 - y.0) * (cy + 1) as f64 / ny as f64);
            let yb = f.y.py(y.0 + (y.1 - y.0) * cy as f64 / ny as f64);
            f.canvas
                .fill(xa, ya, xb.max(xa + 1), yb.max(ya + 1), colour);
        }
    }
    // Colour bar: low at the bottom, with its end values.
    let (_, mr, mt, mb) = MARGIN;
    let bx = (W - mr + 8) as i64;
    for py in mt..(H - mb) {
        let t = 1.0 - (py - mt) as f64 / (H - mb - mt) as f64;
        f.canvas
            .fill(bx, py as i64, bx + 10, py as i64 + 1, viridis(t));
    }
    let (top, bottom) = if means {
        (short(hi), short(lo))
    } else {
        (short(hi.exp().round()), "1".to_string())
    };
    f.canvas.text(bx - 20, (mt - 12) as i64, &top, 1, INK);
    f.canvas.text(bx - 4, (H - mb + 4) as i64, &bottom, 1, INK);
    f.finish()
}

/// Writes histogram.png, cdf.png, heatmap.png and (with a value) heatmap_mean.png for the
/// parts the report has; returns the paths written.
pub fn write_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut save = |name: &str, canvas: Option<Canvas>| -> Result<()> {
        if let Some(c) = canvas {
            let path = dir.join(name);
            c.save(&path)?;
            out.push(path);
        }
        Ok(())
    };
    save("histogram.png", histogram(report))?;
    save("cdf.png", cdf(report))?;
    if let Some(g) = &report.grid {
        save("heatmap.png", Some(heatmap(g, false)))?;
        if g.mean.is_some() {
            save("heatmap_mean.png", Some(heatmap(g, true)))?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ticks() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(
            ticks(-40.0, 120.0, 8),
            vec![-40.0, -20.0, 0.0, 20.0, 40.0, 60.0, 80.0, 100.0, 120.0]
        );
        let t = ticks(0.0, 1.0, 6);
        assert_eq!(t.len(), 6);
        assert_eq!(ticks(3.0, 3.0, 5), vec![3.0]);
    }

    #[test]
    fn canvas_draws_text_and_lines() {
        let mut c = Canvas::new(20, 10);
        c.text(0, 0, "1", 1, INK);
        assert_eq!(c.get(2, 0), INK, "top of the 1");
        assert_eq!(c.get(0, 0), [255, 255, 255]);
        c.line((0, 9), (19, 9), LINE);
        assert_eq!(c.get(19, 9), LINE);
        assert_eq!(viridis(0.0), [68, 1, 84]);
        assert_eq!(viridis(1.0), [253, 231, 37]);
    }
}
