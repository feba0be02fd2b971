//! Input events → view changes, plain Rust (both shells feed the same events).
//!
//! * Drag in the plot: pan (time and rows). Wheel: zoom about the pointer (`dy`), pan in
//!   time (`dx`). W/S: zoom in/out about the plot's centre; A/D: pan left/right.
//! * Click on a span: select it (a GPU pick; the result arrives a frame or two later).
//!   Shift-click: toggle it as a dependency-focus seed. Click on empty time: clear the
//!   selection.
//! * Click on a process label: collapse/expand the process; on a thread label: the thread.
//! * `[` / `]`: fewer/more focus hops. Escape: clear focus and selection. 0: fit the trace.
//!   I: show/hide the inspector.
//! * Pointer over the plot (no button down): a hover pick, whose span gets the tooltip.
//! * `/`: type a search (span name substring) in the plot's prompt; Enter applies it,
//!   Backspace deletes, Escape clears the search ([`Controller::key_name`]).

use gpugraph_trace::{Pick, TraceModel};

use crate::camera::{Camera, Regions};
use crate::labels::{self, LabelKind};
use crate::state::{ViewState, MAX_HOPS};

/// Keys the viewer acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// Zoom in.
    W,
    /// Pan left (earlier).
    A,
    /// Zoom out.
    S,
    /// Pan right (later).
    D,
    /// Clear focus and selection.
    Escape,
    /// Show/hide the inspector.
    I,
    /// Fit the whole trace.
    Fit,
    /// One focus hop more.
    HopsUp,
    /// One focus hop fewer.
    HopsDown,
}

impl Key {
    /// The key of a DOM `KeyboardEvent.key` / winit logical key text.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "w" | "W" => Self::W,
            "a" | "A" => Self::A,
            "s" | "S" => Self::S,
            "d" | "D" => Self::D,
            "Escape" => Self::Escape,
            "i" | "I" => Self::I,
            "0" => Self::Fit,
            "]" => Self::HopsUp,
            "[" => Self::HopsDown,
            _ => return None,
        })
    }
}

/// One input event, positions in logical px of the surface.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InputEvent {
    /// A button went down (`primary`: the left button).
    PointerDown {
        /// x.
        x: f32,
        /// y.
        y: f32,
        /// The primary button.
        primary: bool,
    },
    /// The pointer moved.
    PointerMove {
        /// x.
        x: f32,
        /// y.
        y: f32,
    },
    /// A button went up; with no drag in between this is a click.
    PointerUp {
        /// x.
        x: f32,
        /// y.
        y: f32,
        /// Shift held.
        shift: bool,
    },
    /// A wheel turn (DOM `deltaX`/`deltaY` in px; positive `dy` zooms out).
    Wheel {
        /// Pointer x.
        x: f32,
        /// Pointer y.
        y: f32,
        /// Horizontal delta.
        dx: f32,
        /// Vertical delta.
        dy: f32,
    },
    /// The pointer left the surface.
    PointerLeave,
    /// A key press.
    Key(Key),
    /// The surface changed size (logical px, and physical px per logical px).
    Resize {
        /// Width.
        width: f32,
        /// Height.
        height: f32,
        /// Device pixel ratio.
        scale: f32,
    },
}

/// What a pick's answer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickPurpose {
    /// A click: select the span.
    Select,
    /// A shift-click: toggle the span as a focus seed.
    ToggleSeed,
    /// The pointer moved over the plot: the span gets the tooltip.
    Hover,
}

/// A pick the controller asks the GPU for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PickRequest {
    /// What to pick.
    pub pick: Pick,
    /// What its answer is for.
    pub purpose: PickPurpose,
}

/// Drags shorter than this (logical px) are clicks.
pub const CLICK_SLOP: f32 = 4.0;

/// Pointer tracking and the event → [`ViewState`] mapping.
#[derive(Clone, Debug, PartialEq)]
pub struct Controller {
    /// Surface size, logical px.
    pub size: (f32, f32),
    /// Physical px per logical px.
    pub scale: f32,
    down: Option<(f32, f32)>,
    last: (f32, f32),
    dragged: bool,
    pointer: Option<(f32, f32)>,
}

impl Controller {
    /// A controller for a `width × height` (logical px) surface.
    pub fn new(width: f32, height: f32, scale: f32) -> Self {
        Self {
            size: (width, height),
            scale,
            down: None,
            last: (0.0, 0.0),
            dragged: false,
            pointer: None,
        }
    }

    /// The pointer's last position over the surface (logical px), `None` once it left.
    pub fn pointer(&self) -> Option<(f32, f32)> {
        self.pointer
    }

    /// The hover pick at `(x, y)`: `None` (and no tooltip) off the plot's spans' area.
    fn hover(&self, x: f32, y: f32, state: &mut ViewState) -> Option<PickRequest> {
        let r = self.regions(state);
        let cam = &state.camera;
        let hit = r
            .plot
            .contains(x, y)
            .then(|| Some((cam.tick_at(r.plot, x)?, cam.row_at(r.plot, y)?)))
            .flatten();
        if hit.is_none() {
            state.hovered = None;
        }
        hit.map(|(time, row)| PickRequest {
            pick: Pick::Row { time, row },
            purpose: PickPurpose::Hover,
        })
    }

    /// The screen regions for `state`.
    pub fn regions(&self, state: &ViewState) -> Regions {
        Regions::of(self.size.0, self.size.1, state.inspector)
    }

    /// Applies `event` to `state`; returns the pick to run, if the event was a click on the
    /// plot. Returns whether anything changed as the second value (a redraw is due).
    pub fn handle(
        &mut self,
        event: InputEvent,
        state: &mut ViewState,
        model: &TraceModel,
    ) -> (Option<PickRequest>, bool) {
        let r = self.regions(state);
        match event {
            InputEvent::Resize {
                width,
                height,
                scale,
            } => {
                self.size = (width.max(1.0), height.max(1.0));
                self.scale = scale.max(0.1);
                (None, true)
            }
            InputEvent::PointerDown { x, y, primary } => {
                if primary {
                    self.down = Some((x, y));
                    self.last = (x, y);
                    self.dragged = false;
                }
                (None, false)
            }
            InputEvent::PointerMove { x, y } => {
                self.pointer = Some((x, y));
                let Some(d) = self.down else {
                    self.last = (x, y);
                    let had = state.hovered.is_some();
                    let pick = self.hover(x, y, state);
                    return (pick, had && state.hovered.is_none());
                };
                if !self.dragged && (x - d.0).hypot(y - d.1) < CLICK_SLOP {
                    return (None, false);
                }
                self.dragged = true;
                state.hovered = None;
                let total = labels::total_rows(model, &state.trace_view(None));
                state
                    .camera
                    .pan(r.plot, x - self.last.0, y - self.last.1, total);
                self.last = (x, y);
                (None, true)
            }
            InputEvent::PointerUp { x, y, shift } => {
                let was_click = self.down.is_some() && !self.dragged;
                self.down = None;
                self.dragged = false;
                if !was_click {
                    return (None, false);
                }
                self.click(x, y, shift, state, model, r)
            }
            InputEvent::Wheel { x, y, dx, dy } => {
                if !r.plot.contains(x, y) && !r.axis.contains(x, y) {
                    return (None, false);
                }
                if dy != 0.0 {
                    let factor = 1.0015f64.powf(f64::from(dy.clamp(-500.0, 500.0)));
                    state.camera.zoom_at(r.plot, factor, x);
                }
                if dx != 0.0 {
                    let total = labels::total_rows(model, &state.trace_view(None));
                    state.camera.pan(r.plot, -dx, 0.0, total);
                }
                // The span under a shown tooltip changed with the view (no pick otherwise:
                // a zoom sequence costs no pick passes).
                let pick = if state.hovered.is_some() {
                    self.hover(x, y, state)
                } else {
                    None
                };
                (pick, dx != 0.0 || dy != 0.0)
            }
            InputEvent::PointerLeave => {
                self.pointer = None;
                (None, state.hovered.take().is_some())
            }
            InputEvent::Key(k) => {
                let mid = r.plot.x + r.plot.w * 0.5;
                let c = &mut state.camera;
                match k {
                    Key::W => c.zoom_at(r.plot, 0.8, mid),
                    Key::S => c.zoom_at(r.plot, 1.25, mid),
                    Key::A => c.pan(r.plot, r.plot.w * 0.2, 0.0, u32::MAX),
                    Key::D => c.pan(r.plot, -r.plot.w * 0.2, 0.0, u32::MAX),
                    Key::Fit => *c = Camera::fit(model.end),
                    Key::Escape => {
                        state.focus_seeds.clear();
                        state.selected = None;
                    }
                    Key::I => state.inspector = !state.inspector,
                    Key::HopsUp => state.hops = (state.hops + 1).min(MAX_HOPS),
                    Key::HopsDown => state.hops = state.hops.saturating_sub(1),
                }
                (None, true)
            }
        }
    }

    fn click(
        &mut self,
        x: f32,
        y: f32,
        shift: bool,
        state: &mut ViewState,
        model: &TraceModel,
        r: Regions,
    ) -> (Option<PickRequest>, bool) {
        let view = state.trace_view(None);
        let ls = labels::labels(model, &view);
        if let Some(kind) = labels::hit_label(&ls, &state.camera, r.labels, r.plot, x, y) {
            let toggle = |set: &mut std::collections::BTreeSet<u32>, k: u32| {
                if !set.remove(&k) {
                    set.insert(k);
                }
            };
            match kind {
                LabelKind::Process(p) => toggle(&mut state.collapsed_processes, p),
                LabelKind::Thread(t) => toggle(&mut state.collapsed_threads, t),
            }
            let total = labels::total_rows(model, &state.trace_view(None));
            state.camera.clamp_rows(total);
            return (None, true);
        }
        let (Some(time), Some(row)) = (
            state.camera.tick_at(r.plot, x),
            state.camera.row_at(r.plot, y),
        ) else {
            return (None, false);
        };
        let purpose = if shift {
            PickPurpose::ToggleSeed
        } else {
            PickPurpose::Select
        };
        (
            Some(PickRequest {
                pick: Pick::Row { time, row },
                purpose,
            }),
            true,
        )
    }

    /// A key by name (DOM `KeyboardEvent.key`, or the native shell's equivalent: `Enter`,
    /// `Escape`, `Backspace`, or the typed text) — the one key path of both shells. While
    /// the search prompt is open every key edits it (Enter applies the text through
    /// [`ViewState::set_search`], Escape clears the search); otherwise `/` opens it and the
    /// rest go through [`Key::from_name`]. Returns whether the key was used (a redraw is
    /// due).
    pub fn key_name(&mut self, name: &str, state: &mut ViewState, model: &TraceModel) -> bool {
        if let Some(text) = &mut state.search_edit {
            match name {
                "Enter" => {
                    let text = std::mem::take(text);
                    state.search_edit = None;
                    state.set_search(model, &text);
                }
                "Escape" => {
                    state.search_edit = None;
                    state.set_search(model, "");
                }
                "Backspace" => {
                    text.pop();
                }
                _ if name.chars().count() == 1 => text.push_str(name),
                _ => return false,
            }
            return true;
        }
        if name == "/" {
            state.search_edit = Some(state.search.clone());
            return true;
        }
        match Key::from_name(name) {
            Some(k) => self.handle(InputEvent::Key(k), state, model).1,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpugraph_trace::{cpu, parse_chrome_trace, IngestOptions};

    fn model() -> TraceModel {
        parse_chrome_trace(
            br#"[
            {"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1000},
            {"ph":"X","name":"b","pid":1,"tid":1,"ts":100,"dur":200},
            {"ph":"X","name":"c","pid":1,"tid":2,"ts":500,"dur":400},
            {"ph":"X","name":"d","pid":2,"tid":1,"ts":0,"dur":50}
            ]"#,
            IngestOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_click_on_a_span_picks_what_the_oracle_picks() {
        let m = model();
        let mut s = ViewState::new(&m);
        let mut c = Controller::new(1200.0, 400.0, 1.0);
        let r = c.regions(&s);
        // Row 1 (span b, lane 1 of thread 0) at 20% of the window: tick 200 µs.
        let (x, y) = (
            r.plot.x + r.plot.w * 0.2,
            s.camera.y_of_row(r.plot, 1) + 5.0,
        );
        c.handle(
            InputEvent::PointerDown {
                x,
                y,
                primary: true,
            },
            &mut s,
            &m,
        );
        let (pick, changed) = c.handle(InputEvent::PointerUp { x, y, shift: false }, &mut s, &m);
        let pick = pick.expect("a click on the plot picks");
        assert!(changed && pick.purpose == PickPurpose::Select);
        let oracle = cpu::frame(&m, &s.trace_view(Some(pick.pick)), 64).picked;
        assert_eq!(oracle.map(|i| m.name_of(i)), Some("b"));
    }

    #[test]
    fn hovering_a_span_asks_for_a_hover_pick() {
        let m = model();
        let mut s = ViewState::new(&m);
        let mut c = Controller::new(1200.0, 400.0, 1.0);
        let r = c.regions(&s);
        let (x, y) = (
            r.plot.x + r.plot.w * 0.2,
            s.camera.y_of_row(r.plot, 1) + 5.0,
        );
        let (pick, _) = c.handle(InputEvent::PointerMove { x, y }, &mut s, &m);
        let pick = pick.expect("the pointer over the plot picks");
        assert_eq!(pick.purpose, PickPurpose::Hover);
        assert_eq!(c.pointer(), Some((x, y)));
        let oracle = cpu::frame(&m, &s.trace_view(Some(pick.pick)), 64).picked;
        assert_eq!(oracle.map(|i| m.name_of(i)), Some("b"));
        // Over the labels: no pick, and the tooltip goes.
        s.hovered = oracle;
        let (pick, changed) = c.handle(
            InputEvent::PointerMove {
                x: r.labels.x + 5.0,
                y,
            },
            &mut s,
            &m,
        );
        assert!(pick.is_none() && changed && s.hovered.is_none());
        s.hovered = oracle;
        let (pick, changed) = c.handle(InputEvent::PointerLeave, &mut s, &m);
        assert!(pick.is_none() && changed && s.hovered.is_none() && c.pointer().is_none());
    }

    #[test]
    fn the_search_prompt_types_applies_and_clears() {
        let m = model();
        let mut s = ViewState::new(&m);
        let mut c = Controller::new(1200.0, 400.0, 1.0);
        let w0 = s.camera.window();
        assert!(c.key_name("/", &mut s, &m));
        assert_eq!(s.search_edit.as_deref(), Some(""));
        // Keys type while the prompt is open: `w` and `0` are text, not zoom and fit.
        for k in ["x", "w", "Backspace", "Backspace", "C"] {
            assert!(c.key_name(k, &mut s, &m), "{k}");
        }
        assert_eq!(s.search_edit.as_deref(), Some("C"));
        assert_eq!(s.camera.window(), w0);
        assert_eq!(s.name, None, "nothing applied before Enter");
        assert!(c.key_name("Enter", &mut s, &m));
        assert_eq!((s.search_edit.as_deref(), s.search.as_str()), (None, "C"));
        let f = cpu::frame(&m, &s.trace_view(None), 64);
        let names: Vec<&str> = f.visible_ids.iter().map(|&i| m.name_of(i)).collect();
        assert_eq!(names, ["c"], "the filter the web shell's search box sets");
        // `/` reopens with the current text; Escape clears the search.
        assert!(c.key_name("/", &mut s, &m));
        assert_eq!(s.search_edit.as_deref(), Some("C"));
        assert!(!c.key_name("F5", &mut s, &m), "named keys do not type");
        assert!(c.key_name("Escape", &mut s, &m));
        assert_eq!((s.search_edit.as_deref(), s.name), (None, None));
        // With the prompt closed, keys act again.
        assert!(c.key_name("w", &mut s, &m));
        assert!(s.camera.width() < (w0.1 - w0.0) as f64);
        assert!(!c.key_name("q", &mut s, &m));
    }

    #[test]
    fn drags_pan_and_wheels_zoom() {
        let m = model();
        let mut s = ViewState::new(&m);
        let mut c = Controller::new(1200.0, 400.0, 1.0);
        let r = c.regions(&s);
        let (x, y) = (r.plot.x + 100.0, r.plot.y + 10.0);
        let w0 = s.camera.window();
        c.handle(
            InputEvent::Wheel {
                x,
                y,
                dx: 0.0,
                dy: -200.0,
            },
            &mut s,
            &m,
        );
        let w1 = s.camera.window();
        assert!(w1.1 - w1.0 < w0.1 - w0.0, "zoomed in");
        c.handle(
            InputEvent::PointerDown {
                x,
                y,
                primary: true,
            },
            &mut s,
            &m,
        );
        c.handle(InputEvent::PointerMove { x: x - 50.0, y }, &mut s, &m);
        let (pick, _) = c.handle(
            InputEvent::PointerUp {
                x: x - 50.0,
                y,
                shift: false,
            },
            &mut s,
            &m,
        );
        assert!(pick.is_none(), "a drag is no click");
        assert!(s.camera.start > w1.0, "dragged left: later times");
        c.handle(InputEvent::Key(Key::Fit), &mut s, &m);
        assert_eq!(s.camera.window(), w0);
    }

    #[test]
    fn a_click_on_a_process_label_collapses_it() {
        let m = model();
        let mut s = ViewState::new(&m);
        let mut c = Controller::new(1200.0, 400.0, 1.0);
        let r = c.regions(&s);
        let (x, y) = (r.labels.x + 5.0, s.camera.y_of_row(r.plot, 0) + 5.0);
        c.handle(
            InputEvent::PointerDown {
                x,
                y,
                primary: true,
            },
            &mut s,
            &m,
        );
        let (pick, changed) = c.handle(InputEvent::PointerUp { x, y, shift: false }, &mut s, &m);
        assert!(pick.is_none() && changed);
        assert_eq!(s.collapsed_processes, [0].into());
        let f = cpu::frame(&m, &s.trace_view(None), 64);
        assert_eq!(
            f.visible_ids.len(),
            3,
            "lane 0 of both threads of process 0 (a, c), and d"
        );
    }
}
