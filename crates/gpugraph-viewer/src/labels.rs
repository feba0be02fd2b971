//! Lane labels and their hit areas, plain Rust. Rows come from the trace crate's
//! layout ([`gpugraph_trace::layout::thread_rows`]), the very layout the GPU frame computes, so
//! a label sits on the row its spans are drawn on.
//!
//! The label gutter has two columns: the process column holds one label per process (on the
//! first row of its first thread; clicking it collapses or expands the process) and the
//! thread column one label per shown thread (on its first row; clicking it collapses or
//! expands the thread).

use gpugraph_trace::{layout, TraceModel, TraceView};

use crate::camera::{Camera, Rect, PROCESS_COLUMN};

/// What a label names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabelKind {
    /// A process (index into `TraceModel::processes`).
    Process(u32),
    /// A thread (global thread index).
    Thread(u32),
}

/// One label: what it names, its text and the rows it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// What it names.
    pub kind: LabelKind,
    /// Its text.
    pub text: String,
    /// First layout row.
    pub row: u32,
    /// Layout rows it covers (the thread's height, or the process's rows).
    pub rows: u32,
    /// Whether it is collapsed.
    pub collapsed: bool,
}

/// The label of every process with threads and every thread with rows, in row order
/// (processes before their first thread).
pub fn labels(model: &TraceModel, view: &TraceView) -> Vec<Label> {
    let rows = layout::thread_rows(model, view);
    let mut out = Vec::new();
    for (p, proc_) in model.processes.iter().enumerate() {
        let p = p as u32;
        if proc_.threads.is_empty() {
            continue;
        }
        let first = rows[proc_.threads.start as usize];
        let height: u32 = proc_.threads.clone().map(|t| rows[t as usize].0).sum();
        let collapsed = view.collapsed_processes.contains(&p);
        let name = proc_.name.as_deref().unwrap_or("");
        out.push(Label {
            kind: LabelKind::Process(p),
            text: format!("{} {} {name}", if collapsed { "▸" } else { "▾" }, proc_.pid)
                .trim_end()
                .to_string(),
            row: first.1,
            rows: height.max(1),
            collapsed,
        });
        if collapsed {
            continue;
        }
        for t in proc_.threads.clone() {
            let (h, row) = rows[t as usize];
            if h == 0 {
                continue;
            }
            let th = &model.threads[t as usize];
            let collapsed = view.collapsed_threads.contains(&t);
            let name = th.name.as_deref().unwrap_or("");
            out.push(Label {
                kind: LabelKind::Thread(t),
                text: format!("{} {} {name}", if collapsed { "▸" } else { "▾" }, th.tid)
                    .trim_end()
                    .to_string(),
                row,
                rows: h,
                collapsed,
            });
        }
    }
    out
}

/// Layout rows in total under `view`.
pub fn total_rows(model: &TraceModel, view: &TraceView) -> u32 {
    layout::thread_rows(model, view)
        .last()
        .map_or(0, |&(h, r)| r + h)
}

/// Where `label` is drawn and clicked: one row tall, in its column of the gutter `gutter`
/// (`plot` gives the rows' vertical placement).
pub fn label_rect(label: &Label, camera: &Camera, gutter: Rect, plot: Rect) -> Rect {
    let y = camera.y_of_row(plot, label.row);
    let col = PROCESS_COLUMN.min(gutter.w * 0.5);
    match label.kind {
        LabelKind::Process(_) => Rect::new(gutter.x, y, col, camera.row_height),
        LabelKind::Thread(_) => Rect::new(gutter.x + col, y, gutter.w - col, camera.row_height),
    }
}

/// The label under `(x, y)`, if any (only labels inside the gutter count).
pub fn hit_label(
    labels: &[Label],
    camera: &Camera,
    gutter: Rect,
    plot: Rect,
    x: f32,
    y: f32,
) -> Option<LabelKind> {
    if !gutter.contains(x, y) {
        return None;
    }
    labels
        .iter()
        .find(|l| label_rect(l, camera, gutter, plot).contains(x, y))
        .map(|l| l.kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::Regions;
    use gpugraph_trace::{parse_chrome_trace, IngestOptions};

    fn model() -> TraceModel {
        parse_chrome_trace(
            br#"[
            {"ph":"M","name":"process_name","pid":1,"args":{"name":"server"}},
            {"ph":"M","name":"thread_name","pid":1,"tid":7,"args":{"name":"main"}},
            {"ph":"X","name":"a","pid":1,"tid":7,"ts":0,"dur":100},
            {"ph":"X","name":"b","pid":1,"tid":7,"ts":10,"dur":20},
            {"ph":"X","name":"c","pid":1,"tid":8,"ts":0,"dur":20},
            {"ph":"X","name":"d","pid":2,"tid":1,"ts":5,"dur":20}
            ]"#,
            IngestOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn labels_follow_the_layout_oracle() {
        let m = model();
        let v = TraceView::default();
        let l = labels(&m, &v);
        let kinds: Vec<_> = l.iter().map(|l| (l.kind, l.row, l.rows)).collect();
        assert_eq!(
            kinds,
            vec![
                (LabelKind::Process(0), 0, 3),
                (LabelKind::Thread(0), 0, 2),
                (LabelKind::Thread(1), 2, 1),
                (LabelKind::Process(1), 3, 1),
                (LabelKind::Thread(2), 3, 1),
            ]
        );
        assert_eq!(l[0].text, "▾ 1 server");
        assert_eq!(l[1].text, "▾ 7 main");
        assert_eq!(total_rows(&m, &v), 4);
        let v = TraceView {
            collapsed_processes: [0].into(),
            ..Default::default()
        };
        let l = labels(&m, &v);
        assert_eq!(l[0].text, "▸ 1 server");
        assert_eq!((l[1].kind, l[1].row), (LabelKind::Process(1), 1));
        assert_eq!(total_rows(&m, &v), 2);
    }

    #[test]
    fn clicks_find_the_label_under_them() {
        let m = model();
        let v = TraceView::default();
        let l = labels(&m, &v);
        let r = Regions::of(1000.0, 400.0, false);
        let c = Camera::fit(m.end);
        let y = |row: u32| c.y_of_row(r.plot, row) + 2.0;
        let hit = |x, y| hit_label(&l, &c, r.labels, r.plot, x, y);
        assert_eq!(hit(10.0, y(0)), Some(LabelKind::Process(0)));
        assert_eq!(hit(10.0, y(3)), Some(LabelKind::Process(1)));
        assert_eq!(hit(150.0, y(2)), Some(LabelKind::Thread(1)));
        assert_eq!(hit(10.0, y(1)), None, "a process label is one row tall");
        assert_eq!(hit(500.0, y(0)), None, "the plot is not the gutter");
    }
}
