//! PNG plots of the report (histogram, CDF, heatmaps) drawn by a small rasterizer into an RGB
//! canvas and written with the `png` crate; text uses the embedded [`super::font`], so no
//! system font or graphics library is needed.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::font;
use super::report::{short, GridReport, Report};

type Rgb = [u8; 3];

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

/// An RGB image.
pub struct Canvas {
    w: u32,
    h: u32,
    px: Vec<u8>,
}

impl Canvas {
    /// A `w × h` canvas filled with white.
    pub fn new(w: u32, h: u32) -> Self {
        Self {
            w,
            h,
            px: vec![255; (w * h * 3) as usize],
        }
    }

    /// Sets one pixel (ignored outside the canvas).
    pub fn set(&mut self, x: i64, y: i64, c: Rgb) {
        if x >= 0 && y >= 0 && (x as u32) < self.w && (y as u32) < self.h {
            let i = ((y as u32 * self.w + x as u32) * 3) as usize;
            self.px[i..i + 3].copy_from_slice(&c);
        }
    }

    /// The pixel at `(x, y)`.
    #[cfg(test)]
    pub fn get(&self, x: u32, y: u32) -> Rgb {
        let i = ((y * self.w + x) * 3) as usize;
        [self.px[i], self.px[i + 1], self.px[i + 2]]
    }

    /// Fills the rectangle `[x0, x1) × [y0, y1)`.
    pub fn fill(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        for y in y0.max(0)..y1.min(self.h as i64) {
            for x in x0.max(0)..x1.min(self.w as i64) {
                self.set(x, y, c);
            }
        }
    }

    /// A 1-pixel line (Bresenham).
    pub fn line(&mut self, (mut x0, mut y0): (i64, i64), (x1, y1): (i64, i64), c: Rgb) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let mut err = dx + dy;
        loop {
            self.set(x0, y0, c);
            if x0 == x1 && y0 == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x0 += sx;
            }
            if e2 <= dx {
                err += dx;
                y0 += sy;
            }
        }
    }

    /// A 2-pixel-thick line.
    pub fn thick_line(&mut self, a: (i64, i64), b: (i64, i64), c: Rgb) {
        self.line(a, b, c);
        self.line((a.0, a.1 + 1), (b.0, b.1 + 1), c);
    }

    /// Draws `text` with its top-left corner at `(x, y)`.
    pub fn text(&mut self, x: i64, y: i64, text: &str, scale: u32, c: Rgb) {
        let s = scale as i64;
        for (k, ch) in text.chars().enumerate() {
            let ox = x + k as i64 * font::ADVANCE as i64 * s;
            for (row, bits) in font::glyph(ch).iter().enumerate() {
                for col in 0..font::WIDTH {
                    if bits & (1 << (font::WIDTH - 1 - col)) != 0 {
                        let px = ox + col as i64 * s;
                        let py = y + row as i64 * s;
                        self.fill(px, py, px + s, py + s, c);
                    }
                }
            }
        }
    }

    /// Draws `text` centred on `cx`.
    pub fn text_centered(&mut self, cx: i64, y: i64, text: &str, scale: u32, c: Rgb) {
        let w = font::text_width(text, scale) as i64;
        self.text(cx - w / 2, y, text, scale, c);
    }

    /// Writes the canvas as an 8-bit RGB PNG.
    pub fn save(&self, path: &Path) -> Result<()> {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut enc = png::Encoder::new(BufWriter::new(file), self.w, self.h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc
            .write_header()
            .with_context(|| format!("writing {}", path.display()))?;
        writer
            .write_image_data(&self.px)
            .with_context(|| format!("writing {}", path.display()))?;
        writer
            .finish()
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// "Nice" tick positions (steps of 1, 2 or 5 × 10^k) covering about `target` intervals of
/// `[lo, hi]`.
pub fn ticks(lo: f64, hi: f64, target: u32) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

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
