//! Camera math, plain Rust: the screen's regions, pixels ↔ ticks and rows, zoom about a
//! point, pan, and the time axis's ticks and their labels. Ticks are the trace's integer
//! time unit (nanoseconds since the trace origin; see `gpugraph_trace::span`).
//!
//! The span draw maps the closed window `[start, end]` linearly onto the plot's width (start
//! at the left edge, end at the right edge) and row `row_scroll + k` to the plot's `k`-th
//! `row_height` band, exactly as [`Camera::x_of`] and [`Camera::y_of_row`] do.

/// A rectangle in logical pixels (origin top-left, y down).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rect {
    /// Left edge.
    pub x: f32,
    /// Top edge.
    pub y: f32,
    /// Width.
    pub w: f32,
    /// Height.
    pub h: f32,
}

impl Rect {
    /// A rectangle from its left, top, width and height.
    pub const fn new(x: f32, y: f32, w: f32, h: f32) -> Self {
        Self { x, y, w, h }
    }
    /// Right edge.
    pub fn right(&self) -> f32 {
        self.x + self.w
    }
    /// Bottom edge.
    pub fn bottom(&self) -> f32 {
        self.y + self.h
    }
    /// Whether `(x, y)` lies inside (left/top edges inclusive, right/bottom exclusive).
    pub fn contains(&self, x: f32, y: f32) -> bool {
        x >= self.x && x < self.right() && y >= self.y && y < self.bottom()
    }
}

/// Height of the time axis band at the top, logical px.
pub const AXIS_HEIGHT: f32 = 26.0;
/// Width of the lane label gutter at the left, logical px.
pub const LABEL_WIDTH: f32 = 200.0;
/// Width of the process column inside the gutter (the rest is the thread column).
pub const PROCESS_COLUMN: f32 = 80.0;
/// Width of the inspector panel at the right, logical px.
pub const INSPECTOR_WIDTH: f32 = 270.0;
/// Shortest window, ticks.
pub const MIN_WINDOW: u64 = 10;

/// Where things are on screen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Regions {
    /// The whole surface.
    pub screen: Rect,
    /// The time axis (above the plot).
    pub axis: Rect,
    /// Lane labels (left of the plot).
    pub labels: Rect,
    /// The spans.
    pub plot: Rect,
    /// The inspector panel, when shown.
    pub inspector: Option<Rect>,
}

impl Regions {
    /// The regions of a `width × height` (logical px) surface.
    pub fn of(width: f32, height: f32, inspector: bool) -> Self {
        let (width, height) = (width.max(1.0), height.max(1.0));
        let panel = if inspector {
            INSPECTOR_WIDTH.min(width * 0.4)
        } else {
            0.0
        };
        let label_w = LABEL_WIDTH.min(width * 0.3);
        let axis_h = AXIS_HEIGHT.min(height * 0.3);
        let plot_w = (width - label_w - panel).max(1.0);
        let plot_h = (height - axis_h).max(1.0);
        Self {
            screen: Rect::new(0.0, 0.0, width, height),
            axis: Rect::new(label_w, 0.0, plot_w, axis_h),
            labels: Rect::new(0.0, axis_h, label_w, plot_h),
            plot: Rect::new(label_w, axis_h, plot_w, plot_h),
            inspector: inspector.then(|| Rect::new(width - panel, 0.0, panel, height)),
        }
    }
}

/// The visible time window and row scroll.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Window start, ticks (inclusive).
    pub start: u64,
    /// Window end, ticks (inclusive, `> start`).
    pub end: u64,
    /// The layout row at the top of the plot (fractional while scrolling).
    pub row_scroll: f32,
    /// Height of one layout row, logical px.
    pub row_height: f32,
    /// The trace's last tick (bounds panning and zooming out).
    pub trace_end: u64,
}

impl Camera {
    /// The whole trace, first row at the top.
    pub fn fit(trace_end: u64) -> Self {
        Self {
            start: 0,
            end: trace_end.max(MIN_WINDOW),
            row_scroll: 0.0,
            row_height: 18.0,
            trace_end,
        }
    }
    /// The window as `TraceView::window` wants it.
    pub fn window(&self) -> (u64, u64) {
        (self.start, self.end)
    }
    /// Window width in ticks.
    pub fn width(&self) -> f64 {
        (self.end - self.start) as f64
    }
    /// The (fractional) tick under x.
    pub fn time_at(&self, plot: Rect, x: f32) -> f64 {
        self.start as f64 + f64::from((x - plot.x) / plot.w.max(1.0)) * self.width()
    }
    /// The tick under x, when x is inside the plot horizontally.
    pub fn tick_at(&self, plot: Rect, x: f32) -> Option<u64> {
        if x < plot.x || x >= plot.right() {
            return None;
        }
        Some(self.time_at(plot, x).max(0.0).floor() as u64)
    }
    /// The x of tick `t` (may lie outside the plot).
    pub fn x_of(&self, plot: Rect, t: u64) -> f32 {
        let d = if t >= self.start {
            (t - self.start) as f64
        } else {
            -((self.start - t) as f64)
        };
        plot.x + (d / self.width().max(1.0)) as f32 * plot.w
    }
    /// The layout row under y, when y is inside the plot vertically.
    pub fn row_at(&self, plot: Rect, y: f32) -> Option<u32> {
        if y < plot.y || y >= plot.bottom() {
            return None;
        }
        let r = self.row_scroll + (y - plot.y) / self.row_height;
        (r >= 0.0).then_some(r.floor() as u32)
    }
    /// The y of the top of layout row `row`.
    pub fn y_of_row(&self, plot: Rect, row: u32) -> f32 {
        plot.y + (row as f32 - self.row_scroll) * self.row_height
    }
    /// Zooms by `factor` (< 1: in) keeping tick `anchor` where it is on screen.
    pub fn zoom(&mut self, factor: f64, anchor: f64) {
        let w = self.width();
        let max_w = (self.trace_end.max(MIN_WINDOW) as f64) * 1.5;
        let new_w = (w * factor).clamp(MIN_WINDOW as f64, max_w.max(MIN_WINDOW as f64));
        let f = if w > 0.0 {
            (anchor - self.start as f64) / w
        } else {
            0.5
        };
        let start = anchor - f.clamp(0.0, 1.0) * new_w;
        self.set_window(start, new_w);
    }
    /// Zooms by `factor` about the tick under x.
    pub fn zoom_at(&mut self, plot: Rect, factor: f64, x: f32) {
        let anchor = self.time_at(plot, x.clamp(plot.x, plot.right()));
        self.zoom(factor, anchor);
    }
    /// Moves the picture by `(dx, dy)` logical px (drag right: earlier times come into view;
    /// drag down: earlier rows), rows clamped to `[0, total_rows - 1]`.
    pub fn pan(&mut self, plot: Rect, dx: f32, dy: f32, total_rows: u32) {
        let dt = -f64::from(dx / plot.w.max(1.0)) * self.width();
        self.set_window(self.start as f64 + dt, self.width());
        self.row_scroll -= dy / self.row_height;
        self.clamp_rows(total_rows);
    }
    /// Keeps the row scroll within `[0, total_rows - 1]`.
    pub fn clamp_rows(&mut self, total_rows: u32) {
        let max = total_rows.saturating_sub(1) as f32;
        self.row_scroll = self.row_scroll.clamp(0.0, max);
    }
    /// Sets the window to `[start, start + width]`, kept within `[0, trace_end + width / 2]`
    /// at the end and `0` at the start.
    pub fn set_window(&mut self, start: f64, width: f64) {
        let width = width.max(MIN_WINDOW as f64).round();
        let latest = (self.trace_end as f64 + width * 0.5 - width).max(0.0);
        let start = start.clamp(0.0, latest).round();
        self.start = start as u64;
        self.end = (start + width) as u64;
    }
}

/// Axis ticks of `[start, end]`: a 1-2-5 step giving at most `max_ticks` ticks, and the
/// multiples of it inside the window.
pub fn ticks(start: u64, end: u64, max_ticks: u32) -> (u64, Vec<u64>) {
    let w = end.saturating_sub(start).max(1) as f64;
    let raw = w / f64::from(max_ticks.max(1));
    let mut mag = 1u64;
    while (mag as f64) * 10.0 <= raw {
        mag *= 10;
    }
    let step = [1, 2, 5, 10]
        .iter()
        .map(|k| k * mag)
        .find(|&s| s as f64 >= raw)
        .unwrap_or(10 * mag)
        .max(1);
    let first = start.div_ceil(step) * step;
    let out = (0..)
        .map(|k| first + k * step)
        .take_while(|&t| t <= end)
        .take(max_ticks as usize + 1)
        .collect();
    (step, out)
}

/// `t` ticks (nanoseconds) as text with the unit that suits `step` and just enough
/// decimals to tell ticks `step` apart: `1.5 ms`, `250 µs`, `12 s`.
pub fn format_time(t: u64, step: u64) -> String {
    let (unit, name) = match step {
        0..1_000 => (1u64, "ns"),
        1_000..1_000_000 => (1_000, "µs"),
        1_000_000..1_000_000_000 => (1_000_000, "ms"),
        _ => (1_000_000_000, "s"),
    };
    let mut decimals = 0usize;
    let mut s = step.max(1);
    while s < unit && decimals < 9 {
        s *= 10;
        decimals += 1;
    }
    let v = t as f64 / unit as f64;
    format!("{v:.decimals$} {name}")
}

/// A duration in ticks as text with a unit chosen by its size (`3.25 ms`).
pub fn format_duration(d: u64) -> String {
    match d {
        0..1_000 => format!("{d} ns"),
        1_000..1_000_000 => format!("{:.2} µs", d as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2} ms", d as f64 / 1e6),
        _ => format!("{:.3} s", d as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plot() -> Rect {
        Rect::new(200.0, 26.0, 1000.0, 500.0)
    }

    #[test]
    fn pixels_and_ticks_round_trip() {
        let c = Camera {
            start: 1_000,
            end: 11_000,
            ..Camera::fit(50_000)
        };
        let p = plot();
        assert_eq!(c.time_at(p, 200.0), 1_000.0);
        assert_eq!(c.time_at(p, 1200.0), 11_000.0);
        assert_eq!(c.tick_at(p, 700.0), Some(6_000));
        assert_eq!(c.tick_at(p, 199.0), None);
        assert_eq!(c.x_of(p, 6_000), 700.0);
        assert_eq!(c.x_of(p, 0), 100.0);
        assert_eq!(c.row_at(p, 26.0), Some(0));
        assert_eq!(c.row_at(p, 26.0 + 18.0 * 3.5), Some(3));
        assert_eq!(c.row_at(p, 10.0), None);
        assert_eq!(c.y_of_row(p, 3), 26.0 + 54.0);
    }

    #[test]
    fn zoom_keeps_the_anchor_in_place() {
        let mut c = Camera::fit(1_000_000);
        let p = plot();
        let x = 450.0;
        let before = c.time_at(p, x);
        c.zoom_at(p, 0.5, x);
        assert_eq!(c.width(), 500_000.0);
        assert!((c.time_at(p, x) - before).abs() <= 1.0);
        c.zoom_at(p, 1e-9, x);
        assert_eq!(c.end - c.start, MIN_WINDOW);
        c.zoom_at(p, 1e9, x);
        assert_eq!(c.start, 0);
        assert_eq!(c.end - c.start, 1_500_000);
    }

    #[test]
    fn pan_moves_time_and_rows_within_bounds() {
        let mut c = Camera::fit(1_000_000);
        let p = plot();
        c.zoom(0.1, 0.0);
        assert_eq!(c.window(), (0, 100_000));
        c.pan(p, -100.0, -36.0, 10);
        assert_eq!(c.window(), (10_000, 110_000));
        assert_eq!(c.row_scroll, 2.0);
        c.pan(p, 5000.0, 1000.0, 10);
        assert_eq!(c.window(), (0, 100_000));
        assert_eq!(c.row_scroll, 0.0);
        c.pan(p, -1e7, -1e5, 10);
        assert_eq!(c.end, 1_050_000);
        assert_eq!(c.row_scroll, 9.0);
    }

    #[test]
    fn regions_tile_the_screen() {
        let r = Regions::of(1280.0, 720.0, true);
        assert_eq!(r.plot.x, LABEL_WIDTH);
        assert_eq!(r.plot.right(), 1280.0 - INSPECTOR_WIDTH);
        assert_eq!(r.plot.bottom(), 720.0);
        assert_eq!(r.axis.bottom(), r.plot.y);
        let r = Regions::of(1280.0, 720.0, false);
        assert_eq!(r.plot.right(), 1280.0);
        assert!(r.inspector.is_none());
    }

    #[test]
    fn ticks_are_round_and_inside() {
        let (step, t) = ticks(1_234, 11_234, 10);
        assert_eq!(step, 1_000);
        assert_eq!(t.first(), Some(&2_000));
        assert_eq!(t.last(), Some(&11_000));
        let (step, t) = ticks(0, 3_000_000, 8);
        assert_eq!(step, 500_000);
        assert_eq!(t.len(), 7);
        assert_eq!(ticks(5, 5, 10).0, 1);
        assert_eq!(format_time(1_500_000, 500_000), "1500 µs");
        assert_eq!(format_time(3_000_000, 1_000_000), "3 ms");
        assert_eq!(format_time(250_000, 50_000), "250 µs");
        assert_eq!(format_time(12_000_000_000, 2_000_000_000), "12 s");
        assert_eq!(format_time(7, 1), "7 ns");
        assert_eq!(format_duration(3_250_000), "3.25 ms");
    }
}
