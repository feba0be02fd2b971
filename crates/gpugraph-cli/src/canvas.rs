//! A small RGB rasterizer for the CLI's PNG plots (analyze reports, bench charts): filled
//! rectangles, lines, text in the embedded [`crate::font`], "nice" axis ticks, and PNG output
//! through the `png` crate. No system font or graphics library is needed.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use anyhow::{Context, Result};

use crate::font;

/// An RGB colour.
pub type Rgb = [u8; 3];

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

    /// Writes the canvas as an 8-bit RGB PNG (atomically: the file appears complete or not
    /// at all).
    pub fn save(&self, path: &Path) -> Result<()> {
        let out = crate::output::PendingFile::new(path, "PNG output")?;
        self.encode(out.file(), path)?;
        out.commit()
    }

    fn encode(&self, file: &File, path: &Path) -> Result<()> {
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
