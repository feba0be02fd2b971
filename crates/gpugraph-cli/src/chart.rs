//! The CLI's PNG charts (analyze plots, `bench plot`) through `plotters`' bitmap backend: an
//! RGB buffer drawn with text in the embedded DejaVu Sans (plotters' `ab_glyph` feature; no
//! system font lookup, so a bare machine draws the same labels), encoded by the `png` crate
//! and written atomically.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

/// DejaVu Sans 2.37 (Debian's fonts-dejavu-core; licence in `assets/fonts/LICENSE-DejaVu.txt`).
static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// The drawing area charts draw on.
pub type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// Near-black ink for text and axes.
pub const INK: RGBColor = RGBColor(40, 40, 40);

/// Registers the embedded font as plotters' `sans-serif` (once per process).
fn register_font() -> Result<()> {
    static ONCE: Once = Once::new();
    let mut failed = false;
    ONCE.call_once(|| {
        failed = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_err();
    });
    if failed {
        return Err(anyhow!("the embedded DejaVu Sans font did not load"));
    }
    Ok(())
}

/// The text style of `px` pixels in the embedded font.
pub fn font(px: u32) -> TextStyle<'static> {
    ("sans-serif", px).into_font().color(&INK)
}

/// A drawn RGB image (`w × h`, 3 bytes per pixel, rows top to bottom).
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The pixels.
    pub rgb: Vec<u8>,
}

impl Image {
    /// Draws a `width × height` image on white with `draw`; plotters' errors (a bad range,
    /// a font that failed) come back as errors, never panics.
    pub fn draw(
        width: u32,
        height: u32,
        draw: impl FnOnce(&Area<'_>) -> Result<()>,
    ) -> Result<Self> {
        register_font()?;
        let mut rgb = vec![255u8; (width * height * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
            root.fill(&WHITE).map_err(plot_error)?;
            draw(&root)?;
            root.present().map_err(plot_error)?;
        }
        Ok(Self { width, height, rgb })
    }

    /// The pixel at `(x, y)`.
    #[cfg(test)]
    pub fn get(&self, x: u32, y: u32) -> [u8; 3] {
        let i = ((y * self.width + x) * 3) as usize;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// Writes the image as an 8-bit RGB PNG, atomically (the file appears complete or not at
    /// all).
    pub fn save(&self, path: &Path) -> Result<()> {
        let out = crate::output::PendingFile::new(path, "PNG output")?;
        self.encode(out.file())
            .with_context(|| format!("writing {}", path.display()))?;
        out.commit()
    }

    fn encode(&self, file: &File) -> Result<()> {
        let mut enc = png::Encoder::new(BufWriter::new(file), self.width, self.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header()?;
        writer.write_image_data(&self.rgb)?;
        writer.finish()?;
        Ok(())
    }
}

/// A plotters error as an `anyhow` error (its message names what failed).
pub fn plot_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

/// Viridis-like colour for `t` in `[0, 1]` (non-finite `t` takes the low end).
pub fn viridis(t: f64) -> RGBColor {
    const STOPS: [[u8; 3]; 5] = [
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
    let c = |k: usize| (STOPS[i][k] as f64 * (1.0 - u) + STOPS[i + 1][k] as f64 * u).round() as u8;
    RGBColor(c(0), c(1), c(2))
}

/// Short tick text: integers without decimals, others with up to 4 significant digits, very
/// large or small magnitudes in exponent form.
pub fn tick(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v == 0.0 { "0".into() } else { format!("{v}") };
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.2e}");
    }
    let digits = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
    let mut t = format!("{v:.digits$}");
    if t.contains('.') {
        t = t.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_colours_and_text_render() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(1500.0), "1500");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(-12.5), "-12.5");
        assert_eq!(tick(2.5e7), "2.50e7");
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(f64::NAN), RGBColor(68, 1, 84));
        // The embedded font draws ink: a word leaves dark pixels where it stands.
        let img = Image::draw(120, 40, |a| {
            a.draw(&Text::new("Delay", (5, 5), font(24)))
                .map_err(plot_error)
        })
        .unwrap();
        let dark = (0..40)
            .flat_map(|y| (0..120).map(move |x| (x, y)))
            .filter(|&(x, y)| img.get(x, y)[0] < 128)
            .count();
        assert!(dark > 50, "{dark} dark pixels");
        assert_eq!(img.get(119, 39), [255, 255, 255]);
    }
}
