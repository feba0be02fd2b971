//! PNG plots of the report (histogram, CDF, heatmaps) through `plotters` ([`crate::chart`]):
//! labelled axes named by their columns, a log-scale count axis on request (`--log-y`, for
//! heavy-tailed values) and colour bars with labelled ticks on the heatmaps.

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::report::{GridReport, Report, ValueReport};
use crate::chart::{font, plot_error, tick, viridis, Area, Image};

const BAR: RGBColor = RGBColor(70, 130, 180);
const LINE: RGBColor = RGBColor(200, 60, 40);
const EMPTY: RGBColor = RGBColor(245, 245, 245);

/// Plot size in pixels.
pub const W: u32 = 960;
/// Plot height in pixels.
pub const H: u32 = 600;

/// How the plots are drawn.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlotOptions {
    /// Histogram counts on a log scale (`--log-y`).
    pub log_y: bool,
}

/// `[lo, hi]` widened by 0.5 on each side when degenerate (one value).
fn span(lo: f64, hi: f64) -> Range<f64> {
    if hi > lo {
        lo..hi
    } else {
        lo - 0.5..hi + 0.5
    }
}

/// "no data" in the middle of a titled, empty chart.
fn no_data(area: &Area<'_>, title: &str) -> Result<()> {
    let area = area.titled(title, font(24)).map_err(plot_error)?;
    let (w, h) = area.dim_in_pixel();
    area.draw(&Text::new(
        "no data",
        (w as i32 / 2 - 40, h as i32 / 2),
        font(28).color(&LINE),
    ))
    .map_err(plot_error)
}

/// Bars `(left, right, count)` over `x` with the count axis `y` (linear or log).
fn bars<Y>(
    area: &Area<'_>,
    title: &str,
    x_name: &str,
    y_name: &str,
    x: Range<f64>,
    y: Y,
    bars: &[(f64, f64, f64)],
) -> Result<()>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let floor = y.range().start;
    let mut chart = ChartBuilder::on(area)
        .caption(title, font(24))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(90)
        .build_cartesian_2d(RangedCoordf64::from(x), y)
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .x_desc(x_name)
        .y_desc(y_name)
        .axis_desc_style(font(18))
        .label_style(font(15))
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(plot_error)?;
    chart
        .draw_series(bars.iter().filter(|b| b.2 > 0.0).map(|&(l, r, c)| {
            // A sliver of white between neighbours keeps bins apart.
            let inset = (r - l) * 0.04;
            Rectangle::new([(l + inset, floor), (r - inset, c)], BAR.filled())
        }))
        .map_err(plot_error)?;
    Ok(())
}

/// The histogram of the report's value as bars over the edges; counts on a log axis with
/// `log_y` (starting at half a row, so a bin of one row still shows).
pub fn histogram(v: &ValueReport, options: PlotOptions) -> Result<Image> {
    let h = &v.histogram;
    let edges: Vec<f64> = h.edges.iter().map(|e| e.unwrap_or(f64::NAN)).collect();
    let (lo, hi) = (edges[0], edges[edges.len() - 1]);
    let peak = h.counts.iter().copied().max().unwrap_or(0) as f64;
    let title = format!("Histogram of {} ({} bins)", v.column, h.counts.len());
    let ok = !h.invalid_edges && lo.is_finite() && hi.is_finite() && peak > 0.0;
    Image::draw(W, H, |area| {
        if !ok {
            return no_data(area, &title);
        }
        let rows: Vec<(f64, f64, f64)> = h
            .counts
            .iter()
            .enumerate()
            .map(|(i, &c)| (edges[i], edges[i + 1], c as f64))
            .collect();
        if options.log_y {
            let y = LogCoord::from((0.5..(peak * 2.0).max(10.0)).log_scale());
            bars(
                area,
                &title,
                &v.column,
                "rows (log scale)",
                span(lo, hi),
                y,
                &rows,
            )
        } else {
            let y = RangedCoordf64::from(0.0..peak * 1.05);
            bars(area, &title, &v.column, "rows", span(lo, hi), y, &rows)
        }
    })
}

/// The CDF of the value: cumulative fraction at each bin's upper edge, linear within bins.
pub fn cdf(report: &Report) -> Result<Option<Image>> {
    let Some(v) = report.value.as_ref() else {
        return Ok(None);
    };
    let h = &v.histogram;
    let edges: Vec<f64> = h.edges.iter().map(|e| e.unwrap_or(f64::NAN)).collect();
    let (lo, hi) = (edges[0], edges[edges.len() - 1]);
    let ok = !h.invalid_edges
        && lo.is_finite()
        && hi.is_finite()
        && h.cumulative.last().is_some_and(|&t| t > 0);
    let title = format!("CDF of {}", v.column);
    let image = Image::draw(W, H, |area| {
        if !ok {
            return no_data(area, &title);
        }
        let mut chart = ChartBuilder::on(area)
            .caption(&title, font(24))
            .margin(16)
            .x_label_area_size(56)
            .y_label_area_size(90)
            .build_cartesian_2d(span(lo, hi), 0.0..1.02)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc(v.column.as_str())
            .y_desc("fraction of rows ≤ x")
            .axis_desc_style(font(18))
            .label_style(font(15))
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(plot_error)?;
        let points: Vec<(f64, f64)> = std::iter::once((lo, 0.0))
            .chain(h.cdf.iter().enumerate().map(|(i, &p)| (edges[i + 1], p)))
            .collect();
        chart
            .draw_series(std::iter::once(PathElement::new(
                points,
                LINE.stroke_width(3),
            )))
            .map_err(plot_error)?;
        Ok(())
    })?;
    Ok(Some(image))
}

/// Colour scale of a heatmap: value → colour, and the colour bar's axis.
enum Scale {
    /// Counts: colour by ln(count) over [1, max].
    LogCount { max: f64 },
    /// Means: colour linear over [lo, hi].
    Linear { lo: f64, hi: f64 },
}

impl Scale {
    fn t(&self, v: f64) -> f64 {
        match *self {
            Scale::LogCount { max } if max > 1.0 => v.ln() / max.ln(),
            Scale::LogCount { .. } => 1.0,
            Scale::Linear { lo, hi } if hi > lo => (v - lo) / (hi - lo),
            // A single value takes the top colour.
            Scale::Linear { .. } => 1.0,
        }
    }
}

/// The colour bar: bands from low (bottom) to high, with labelled ticks on `y`.
fn colour_bar<Y>(area: &Area<'_>, label: &str, y: Y, scale: &Scale) -> Result<()>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let Range { start, end } = y.range();
    // Tick labels right of the bar (they may run into the margin, never over the colours),
    // the bar's name rotated left of it.
    let mut chart = ChartBuilder::on(area)
        .margin_top(56)
        .margin_bottom(72)
        .margin_left(34)
        .margin_right(4)
        .right_y_label_area_size(60)
        .build_cartesian_2d(0.0..1.0, y)
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .label_style(font(14))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(plot_error)?;
    let (_, h) = area.dim_in_pixel();
    area.draw(&Text::new(
        label.to_string(),
        (14, h as i32 / 2),
        font(15)
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))
    .map_err(plot_error)?;
    const STEPS: usize = 200;
    let log = matches!(scale, Scale::LogCount { .. });
    let at = |k: usize| {
        let u = k as f64 / STEPS as f64;
        if log {
            (start.ln() + (end.ln() - start.ln()) * u).exp()
        } else {
            start + (end - start) * u
        }
    };
    chart
        .draw_series((0..STEPS).map(|k| {
            let (a, b) = (at(k), at(k + 1));
            Rectangle::new(
                [(0.0, a), (1.0, b)],
                viridis(scale.t((a + b) / 2.0)).filled(),
            )
        }))
        .map_err(plot_error)?;
    Ok(())
}

/// A heatmap of grid cells: `counts` on a log colour scale, or (with `means`) the mean of z.
fn heatmap(grid: &GridReport, means: bool) -> Result<Image> {
    let title = match (&grid.z, means) {
        (Some(z), true) => format!("Mean {z} by {} × {}", grid.x, grid.y),
        _ => format!("Rows by {} × {}", grid.x, grid.y),
    };
    let [nx, ny] = grid.bins;
    let values: Vec<Option<f64>> = if means {
        grid.mean.clone().unwrap_or_default()
    } else {
        grid.counts
            .iter()
            .map(|&c| (c > 0).then_some(c as f64))
            .collect()
    };
    let finite = values.iter().flatten().copied().filter(|v| v.is_finite());
    let (mut lo, mut hi) = (
        finite.clone().fold(f64::INFINITY, f64::min),
        finite.fold(f64::NEG_INFINITY, f64::max),
    );
    // Means: a few cells of a handful of rows (flights after midnight, hours late) would take
    // the whole colour range; the range spans the cell means of 1% to 99% of the rows instead,
    // and the rest saturate at the ends (the colour bar says so).
    let mut clipped = false;
    let robust = grid
        .value_counts
        .as_deref()
        .filter(|_| means)
        .and_then(|counts| row_percentiles(&values, counts, 0.01, 0.99));
    if let Some((a, b)) = robust {
        clipped = a > lo || b < hi;
        (lo, hi) = (a, b);
    }
    Image::draw(W, H, |area| {
        let (Some([x0, x1]), Some([y0, y1])) = (grid.x_domain, grid.y_domain) else {
            return no_data(area, &title);
        };
        if !lo.is_finite() {
            return no_data(area, &title);
        }
        let (main, bar) = area.split_horizontally(W - 130);
        let (x, y) = (span(x0, x1), span(y0, y1));
        let mut chart = ChartBuilder::on(&main)
            .caption(&title, font(24))
            .margin(16)
            .x_label_area_size(56)
            .y_label_area_size(90)
            .build_cartesian_2d(x.clone(), y.clone())
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(grid.x.as_str())
            .y_desc(grid.y.as_str())
            .axis_desc_style(font(18))
            .label_style(font(15))
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .draw()
            .map_err(plot_error)?;
        let scale = if means {
            Scale::Linear { lo, hi }
        } else {
            Scale::LogCount { max: hi }
        };
        let (w, h) = ((x.end - x.start) / nx as f64, (y.end - y.start) / ny as f64);
        chart
            .draw_series(
                (0..ny)
                    .flat_map(|cy| (0..nx).map(move |cx| (cx, cy)))
                    .map(|(cx, cy)| {
                        let colour = values[(cy * nx + cx) as usize]
                            .filter(|v| v.is_finite())
                            .map_or(EMPTY, |v| viridis(scale.t(v)));
                        let (a, b) = (x.start + w * cx as f64, y.start + h * cy as f64);
                        Rectangle::new([(a, b), (a + w, b + h)], colour.filled())
                    }),
            )
            .map_err(plot_error)?;
        match scale {
            Scale::LogCount { max } => {
                let top = if max > 1.0 { max } else { 2.0 };
                let y = LogCoord::from((1.0..top).log_scale());
                colour_bar(&bar, "rows per cell (log)", y, &scale)
            }
            Scale::Linear { lo, hi } => {
                let z = grid.z.as_deref().unwrap_or("value");
                let label = if clipped {
                    format!("mean {z} (1–99% of rows; ends saturate)")
                } else {
                    format!("mean {z}")
                };
                colour_bar(&bar, &label, RangedCoordf64::from(span(lo, hi)), &scale)
            }
        }
    })
}

/// The cell means below which `lo` and above which `1 - hi` of the rows lie (each cell
/// weighted by its rows); `None` without a cell that has rows and a finite mean.
fn row_percentiles(means: &[Option<f64>], rows: &[u32], lo: f64, hi: f64) -> Option<(f64, f64)> {
    let mut cells: Vec<(f64, u64)> = means
        .iter()
        .zip(rows)
        .filter_map(|(m, &n)| m.filter(|m| m.is_finite() && n > 0).map(|m| (m, n as u64)))
        .collect();
    cells.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: u64 = cells.iter().map(|c| c.1).sum();
    let at = |q: f64| {
        let target = (q * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        cells.iter().find_map(|&(m, n)| {
            seen += n;
            (seen >= target).then_some(m)
        })
    };
    Some((at(lo)?, at(hi)?))
}

/// Writes histogram.png, cdf.png, heatmap.png and (with a grid mean) heatmap_mean.png for
/// the parts the report has; returns the paths written.
pub fn write_all(report: &Report, dir: &Path, options: PlotOptions) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut save = |name: &str, image: Option<Image>| -> Result<()> {
        if let Some(image) = image {
            let path = dir.join(name);
            image.save(&path)?;
            out.push(path);
        }
        Ok(())
    };
    save(
        "histogram.png",
        report
            .value
            .as_ref()
            .map(|v| histogram(v, options))
            .transpose()?,
    )?;
    save("cdf.png", cdf(report)?)?;
    if let Some(g) = &report.grid {
        save("heatmap.png", Some(heatmap(g, false)?))?;
        if g.mean.is_some() {
            save("heatmap_mean.png", Some(heatmap(g, true)?))?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::report::HistogramReport;

    /// A value report of `counts` over unit bins from 0.
    fn value(counts: &[u64]) -> ValueReport {
        let cumulative: Vec<u64> = counts
            .iter()
            .scan(0, |s, &c| {
                *s += c;
                Some(*s)
            })
            .collect();
        let total = *cumulative.last().unwrap() as f64;
        ValueReport {
            column: "arr_delay".into(),
            extent: Some([0.0, counts.len() as f64]),
            count: Some(total as u64),
            nonfinite: 0,
            nulls: 0,
            histogram: HistogramReport {
                kind: "uniform",
                edges: (0..=counts.len()).map(|e| Some(e as f64)).collect(),
                counts: counts.to_vec(),
                cdf: cumulative.iter().map(|&c| c as f64 / total).collect(),
                cumulative,
                outside: 0,
                invalid_edges: false,
            },
        }
    }

    /// Height in pixels of the rightmost bar: the bar-coloured pixels of the rightmost pixel
    /// column that has any.
    fn last_bar_height(img: &Image) -> u32 {
        let bar = [BAR.0, BAR.1, BAR.2];
        (0..img.width)
            .rev()
            .map(|x| (0..img.height).filter(|&y| img.get(x, y) == bar).count() as u32)
            .find(|&n| n > 0)
            .unwrap_or(0)
    }

    #[test]
    fn log_y_shows_the_tail_that_a_linear_axis_flattens() {
        // Heavy tail: one row in the last bin beside a thousand in the first.
        let v = value(&[1000, 10, 1]);
        let linear = histogram(&v, PlotOptions { log_y: false }).unwrap();
        let log = histogram(&v, PlotOptions { log_y: true }).unwrap();
        assert_eq!((linear.width, linear.height), (W, H));
        let (lin, lg) = (last_bar_height(&linear), last_bar_height(&log));
        // Linear: 1/1050 of the ~470-pixel axis is under a pixel, so the rightmost bar seen
        // is the 10-row one (about 4 pixels). Log over [0.5, 2000]: ln 2 / ln 4000 of it.
        assert!(lin <= 6, "linear tail bar {lin} px");
        assert!((20..=80).contains(&lg), "log tail bar {lg} px");
    }

    #[test]
    fn scales_map_values_onto_the_colour_range() {
        let s = Scale::LogCount { max: 100.0 };
        assert_eq!(s.t(1.0), 0.0);
        assert!((s.t(10.0) - 0.5).abs() < 1e-12);
        assert_eq!(Scale::LogCount { max: 1.0 }.t(1.0), 1.0);
        let s = Scale::Linear {
            lo: -10.0,
            hi: 30.0,
        };
        assert_eq!(s.t(10.0), 0.5);
        assert_eq!(Scale::Linear { lo: 3.0, hi: 3.0 }.t(3.0), 1.0);
        assert_eq!(span(2.0, 2.0), 1.5..2.5);
    }

    #[test]
    fn colour_range_follows_the_rows_not_the_outlier_cells() {
        // 1,000 rows in cells of mean 0..9, one cell of 2 rows at 500 minutes.
        let mut means: Vec<Option<f64>> = (0..10).map(|m| Some(m as f64)).collect();
        let mut rows = vec![100u32; 10];
        means.extend([Some(500.0), None, Some(f64::NAN)]);
        rows.extend([2, 0, 5]);
        assert_eq!(row_percentiles(&means, &rows, 0.01, 0.99), Some((0.0, 9.0)));
        // Enough rows in the outlier cell and it sets the top.
        rows[10] = 50;
        assert_eq!(
            row_percentiles(&means, &rows, 0.01, 0.99),
            Some((0.0, 500.0))
        );
        assert_eq!(row_percentiles(&[None], &[3], 0.01, 0.99), None);
    }
}
