//! The UI drawn over the spans with egui's painter (egui 0.37 / egui-wgpu 0.37 are built on
//! wgpu 30; text uses egui's embedded open-licensed fonts): the time axis with tick labels
//! and grid lines, the lane labels, the selection outline, focus seeds, the details of the
//! selected span, the hovered span's tooltip, the search prompt and the inspector panel. Nothing here takes input: the viewer's own
//! controller does (labels' hit areas are [`crate::labels`]'s).

use egui::{Align2, Color32, FontId, Pos2, Stroke, StrokeKind};
use gpugraph_trace::{layout, TraceModel, TraceView};

use crate::camera::{self, Rect, Regions};
use crate::labels::{self, Label, LabelKind};
use crate::state::ViewState;
use crate::tooltip::Tooltip;

/// What the inspector shows besides the state.
#[derive(Clone, Debug, Default)]
pub struct InspectorInfo {
    /// The frame graph's nodes in execution order.
    pub nodes: Vec<String>,
    /// Frame graph compilations so far (one per loaded trace).
    pub compiles: u32,
    /// Pipelines the device cache has created.
    pub pipelines_created: u64,
    /// Visible spans (last readback).
    pub visible: Option<u32>,
    /// Drawn edges (last readback).
    pub edges: Option<u32>,
    /// Frames drawn.
    pub frames: u64,
    /// Mean wall time between frames, ms.
    pub frame_ms: f64,
    /// CPU time of the last frame's encode, ms.
    pub encode_ms: f64,
    /// Submission → readback of the last result, ms.
    pub gpu_ms: f64,
}

/// The node list as the inspector prints it: nodes in execution order, where a run of more
/// than three consecutive nodes of one workflow (`frame/focus-forward/…`) becomes one line
/// naming the run's length and its first and last node.
pub fn node_lines(nodes: &[String]) -> Vec<String> {
    let group = |n: &str| -> String {
        let mut parts = n.splitn(3, '/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), Some(_)) => format!("{a}/{b}"),
            _ => n.to_string(),
        }
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < nodes.len() {
        let g = group(&nodes[i]);
        let mut j = i + 1;
        while j < nodes.len() && group(&nodes[j]) == g && g != nodes[j] {
            j += 1;
        }
        if j - i > 3 {
            let tail = |n: &str| n[g.len()..].trim_start_matches('/').to_string();
            out.push(format!(
                "{i:>2}-{} {g}/ ×{} ({}…{})",
                j - 1,
                j - i,
                tail(&nodes[i]),
                tail(&nodes[j - 1])
            ));
        } else {
            out.extend((i..j).map(|k| format!("{k:>2} {}", nodes[k])));
        }
        i = j;
    }
    out
}

fn r(x: Rect) -> egui::Rect {
    egui::Rect::from_min_size(Pos2::new(x.x, x.y), egui::vec2(x.w, x.h))
}

/// The layout row of span `id` under `view` (`None`: its lane is hidden).
pub fn span_row(model: &TraceModel, view: &TraceView, id: u32) -> Option<u32> {
    let s = model.spans.get(id as usize)?;
    let rows = layout::thread_rows(model, view);
    let (t, p, lane) = (s.thread, s.process(), s.lane());
    if view.collapsed_processes.contains(&p) {
        return (lane == 0).then(|| rows[model.processes[p as usize].threads.start as usize].1);
    }
    if view.collapsed_threads.contains(&t) && lane > 0 {
        return None;
    }
    Some(rows[t as usize].1 + lane)
}

/// Paints one frame's UI into `ctx` (see the module doc); `pointer` (logical px) places
/// the hovered span's tooltip.
pub fn paint(
    ctx: &egui::Context,
    model: &TraceModel,
    state: &ViewState,
    regions: &Regions,
    info: &InspectorInfo,
    pointer: Option<(f32, f32)>,
) {
    let painter = ctx.layer_painter(egui::LayerId::background());
    let cam = &state.camera;
    let view = state.trace_view(None);
    let text = Color32::from_gray(30);
    let small = FontId::monospace(11.0);
    let plot = regions.plot;

    // Time axis and grid.
    painter.rect_filled(r(regions.axis), 0.0, Color32::from_gray(236));
    let max_ticks = (plot.w / 110.0).max(2.0) as u32;
    let (step, ticks) = camera::ticks(cam.start, cam.end, max_ticks);
    let grid = painter.with_clip_rect(r(plot));
    for t in ticks {
        let x = cam.x_of(plot, t);
        painter.line_segment(
            [
                Pos2::new(x, regions.axis.bottom() - 6.0),
                Pos2::new(x, regions.axis.bottom()),
            ],
            Stroke::new(1.0, text),
        );
        painter.text(
            Pos2::new(x + 3.0, regions.axis.y + 3.0),
            Align2::LEFT_TOP,
            camera::format_time(t, step),
            small.clone(),
            text,
        );
        grid.line_segment(
            [Pos2::new(x, plot.y), Pos2::new(x, plot.bottom())],
            Stroke::new(1.0, Color32::from_black_alpha(28)),
        );
    }

    // Lane labels.
    let gutter = regions.labels;
    painter.rect_filled(r(gutter), 0.0, Color32::from_gray(246));
    let clip = painter.with_clip_rect(r(gutter));
    let ls: Vec<Label> = labels::labels(model, &view);
    for l in &ls {
        let lr = labels::label_rect(l, cam, gutter, plot);
        if lr.bottom() < gutter.y || lr.y > gutter.bottom() {
            continue;
        }
        let (font, color) = match l.kind {
            LabelKind::Process(_) => (FontId::monospace(12.0), Color32::from_rgb(20, 40, 110)),
            LabelKind::Thread(_) => (small.clone(), text),
        };
        let cell = painter.with_clip_rect(r(lr).intersect(r(gutter)));
        cell.text(
            Pos2::new(lr.x + 3.0, lr.y + lr.h * 0.5),
            Align2::LEFT_CENTER,
            &l.text,
            font,
            color,
        );
        if let LabelKind::Process(_) = l.kind {
            let y = cam.y_of_row(plot, l.row);
            let line = [Pos2::new(gutter.x, y), Pos2::new(plot.right(), y)];
            clip.line_segment(line, Stroke::new(1.0, Color32::from_gray(170)));
            grid.line_segment(line, Stroke::new(1.0, Color32::from_gray(170)));
        }
    }

    // Focus seeds and the selection.
    let outline = |id: u32, color: Color32, width: f32| {
        let Some(row) = span_row(model, &view, id) else {
            return;
        };
        let s = model.spans[id as usize];
        let x0 = cam.x_of(plot, s.start()).max(plot.x - 2.0);
        let x1 = cam
            .x_of(plot, s.end())
            .min(plot.right() + 2.0)
            .max(x0 + 1.0);
        let y = cam.y_of_row(plot, row);
        let rect = egui::Rect::from_min_max(Pos2::new(x0, y), Pos2::new(x1, y + cam.row_height));
        grid.rect_stroke(rect, 0.0, Stroke::new(width, color), StrokeKind::Outside);
    };
    if let Some(h) = state.hovered {
        outline(h, Color32::from_gray(90), 1.0);
    }
    for &seed in &state.focus_seeds {
        outline(seed, Color32::from_rgb(30, 60, 220), 2.0);
    }
    if let Some(sel) = state.selected {
        outline(sel, Color32::BLACK, 2.0);
        details(&painter, model, state, plot, sel);
    }
    if let (Some(t), Some((x, y))) = (state.hovered.and_then(|h| Tooltip::of(model, h)), pointer) {
        // Beside the pointer, flipped left/up where it would leave the plot.
        let lines = t.lines();
        let size = box_size(&lines, plot);
        let mut at = Pos2::new(x + 14.0, y + 16.0);
        if at.x + size.x > plot.right() {
            at.x = (x - 8.0 - size.x).max(plot.x);
        }
        if at.y + size.y > plot.bottom() {
            at.y = (y - 8.0 - size.y).max(plot.y);
        }
        text_box(&painter, egui::Rect::from_min_size(at, size), &lines);
    }
    if let Some(text) = &state.search_edit {
        let lines = [format!("search: {text}_  (Enter apply · Esc clear)")];
        let size = box_size(&lines, plot);
        let at = Pos2::new(plot.right() - size.x - 8.0, plot.y + 8.0);
        text_box(&painter, egui::Rect::from_min_size(at, size), &lines);
    }

    if let Some(panel) = regions.inspector {
        inspector(&painter, model, state, panel, info);
    }
}

fn details(painter: &egui::Painter, model: &TraceModel, state: &ViewState, plot: Rect, id: u32) {
    let (Some(s), Some(t)) = (model.spans.get(id as usize), Tooltip::of(model, id)) else {
        return;
    };
    let mut lines = t.lines();
    lines.push(format!(
        "span {id}  lane {}  flags {:#x}",
        s.lane(),
        s.flags().0
    ));
    lines.push(format!(
        "focus     {} seeds, {} hops",
        state.focus_seeds.len(),
        state.hops
    ));
    let size = egui::vec2(
        360.0f32.min(plot.w - 8.0).max(10.0),
        box_size(&lines, plot).y,
    );
    let rect =
        egui::Rect::from_min_size(Pos2::new(plot.x + 8.0, plot.bottom() - size.y - 8.0), size);
    text_box(painter, rect, &lines);
}

/// Line height of [`text_box`]es.
const LINE_H: f32 = 16.0;

/// The size of a [`text_box`] of `lines`: monospace 12 px (about 7.2 px a character), at
/// most the plot's width.
fn box_size(lines: &[String], plot: Rect) -> egui::Vec2 {
    let chars = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    egui::vec2(
        (chars as f32 * 7.3 + 14.0).min(plot.w - 8.0).max(10.0),
        LINE_H * lines.len() as f32 + 10.0,
    )
}

/// A pale box with `lines` of monospace text.
fn text_box(painter: &egui::Painter, rect: egui::Rect, lines: &[String]) {
    let font = FontId::monospace(12.0);
    painter.rect_filled(
        rect,
        4.0,
        Color32::from_rgba_unmultiplied(255, 255, 240, 240),
    );
    painter.rect_stroke(
        rect,
        4.0,
        Stroke::new(1.0, Color32::GRAY),
        StrokeKind::Inside,
    );
    let clip = painter.with_clip_rect(rect);
    for (k, line) in lines.iter().enumerate() {
        clip.text(
            Pos2::new(rect.min.x + 6.0, rect.min.y + 5.0 + LINE_H * k as f32),
            Align2::LEFT_TOP,
            line,
            font.clone(),
            Color32::from_gray(20),
        );
    }
}

fn inspector(
    painter: &egui::Painter,
    model: &TraceModel,
    state: &ViewState,
    panel: Rect,
    info: &InspectorInfo,
) {
    painter.rect_filled(r(panel), 0.0, Color32::from_gray(34));
    let clip = painter.with_clip_rect(r(panel));
    let mut y = panel.y + 8.0;
    let mut line = |s: &str, font: FontId, color: Color32| {
        clip.text(
            Pos2::new(panel.x + 10.0, y),
            Align2::LEFT_TOP,
            s,
            font,
            color,
        );
        y += 15.0;
    };
    let head = FontId::proportional(14.0);
    let mono = FontId::monospace(11.0);
    let fg = Color32::from_gray(225);
    let dim = Color32::from_gray(160);
    let opt = |v: Option<u32>| v.map_or("…".to_string(), |v| v.to_string());
    line("Inspector", head.clone(), Color32::WHITE);
    for s in [
        format!("spans loaded     {}", model.spans.len()),
        format!("visible spans    {}", opt(info.visible)),
        format!("drawn edges      {}", opt(info.edges)),
        format!("frames           {}", info.frames),
        format!("frame time       {:.1} ms", info.frame_ms),
        format!("encode (CPU)     {:.2} ms", info.encode_ms),
        format!("submit→readback  {:.1} ms", info.gpu_ms),
        format!("graph compiles   {}", info.compiles),
        format!("pipelines made   {}", info.pipelines_created),
        format!(
            "window           {}",
            camera::format_duration(state.camera.end - state.camera.start)
        ),
        format!(
            "focus            {} seeds, {} hops",
            state.focus_seeds.len(),
            state.hops
        ),
        format!(
            "search           {}",
            if state.search.is_empty() {
                "—"
            } else {
                &state.search
            }
        ),
    ] {
        line(&s, mono.clone(), fg);
    }
    y += 6.0;
    let mut line2 = |s: &str, font: FontId, color: Color32| {
        clip.text(
            Pos2::new(panel.x + 10.0, y),
            Align2::LEFT_TOP,
            s,
            font,
            color,
        );
        y += 14.0;
    };
    line2(
        &format!("Frame graph ({} nodes, in order)", info.nodes.len()),
        head,
        Color32::WHITE,
    );
    for l in node_lines(&info.nodes) {
        line2(&l, mono.clone(), dim);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_runs_of_one_workflow_fold_into_a_line() {
        let mut nodes = vec![
            "frame/thread_heights".to_string(),
            "frame/lane-offsets".into(),
        ];
        nodes.extend((1..=5).map(|k| format!("frame/focus-forward/expand/{k}")));
        nodes.push("frame/span_visibility".into());
        nodes.extend(["frame/ancestors/a", "frame/ancestors/b"].map(String::from));
        assert_eq!(
            node_lines(&nodes),
            vec![
                " 0 frame/thread_heights",
                " 1 frame/lane-offsets",
                " 2-6 frame/focus-forward/ ×5 (expand/1…expand/5)",
                " 7 frame/span_visibility",
                " 8 frame/ancestors/a",
                " 9 frame/ancestors/b",
            ]
        );
    }
}
