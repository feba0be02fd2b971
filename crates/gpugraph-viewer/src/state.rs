//! [`ViewState`]: what the user has done to the view, plain data (camera, collapse, focus,
//! search, selection), turned into the trace crate's [`TraceView`] every frame, and the URL
//! hash that shares a view (`#w=START,END&f=SEED,SEED&h=HOPS&p=COLLAPSED,…`).

use std::collections::BTreeSet;

use gpugraph_trace::{Focus, FocusDirection, Pick, TraceModel, TraceView};

use crate::camera::Camera;
use crate::ViewerError;

/// Focus hops compiled into the frame (a view may ask for fewer).
pub const MAX_HOPS: u32 = 8;

/// The interaction state (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct ViewState {
    /// Window and rows.
    pub camera: Camera,
    /// Collapsed process indices.
    pub collapsed_processes: BTreeSet<u32>,
    /// Collapsed thread indices.
    pub collapsed_threads: BTreeSet<u32>,
    /// Dependency focus seeds (span IDs); empty: no focus.
    pub focus_seeds: Vec<u32>,
    /// Focus hops (`0..=MAX_HOPS`).
    pub hops: u32,
    /// Focus direction.
    pub direction: FocusDirection,
    /// The search text as typed.
    pub search: String,
    /// The name ID the search resolved to (`None`: no filter).
    pub name: Option<u32>,
    /// Shortest span duration shown, ticks (0: no lower bound).
    pub min_duration: u64,
    /// Longest span duration shown, ticks (`u64::MAX`: no upper bound).
    pub max_duration: u64,
    /// The selected span.
    pub selected: Option<u32>,
    /// The span under the pointer (a GPU pick), whose tooltip is shown.
    pub hovered: Option<u32>,
    /// The search text being typed in the plot's search prompt (`/` opens it, Enter applies
    /// it, Escape clears the search); `None`: not typing.
    pub search_edit: Option<String>,
    /// Whether the inspector panel is shown.
    pub inspector: bool,
}

impl ViewState {
    /// The whole trace, nothing collapsed, focused or selected.
    pub fn new(model: &TraceModel) -> Self {
        Self {
            camera: Camera::fit(model.end),
            collapsed_processes: BTreeSet::new(),
            collapsed_threads: BTreeSet::new(),
            focus_seeds: Vec::new(),
            hops: 2,
            direction: FocusDirection::Both,
            search: String::new(),
            name: None,
            min_duration: 0,
            max_duration: u64::MAX,
            selected: None,
            hovered: None,
            search_edit: None,
            inspector: true,
        }
    }

    /// The trace crate's view of this state, with `pick`.
    pub fn trace_view(&self, pick: Option<Pick>) -> TraceView {
        TraceView {
            window: self.camera.window(),
            collapsed_processes: self.collapsed_processes.clone(),
            collapsed_threads: self.collapsed_threads.clone(),
            name: self.name,
            min_duration: self.min_duration,
            max_duration: self.max_duration,
            focus: (!self.focus_seeds.is_empty()).then(|| Focus {
                seeds: self.focus_seeds.clone(),
                hops: self.hops,
                direction: self.direction,
            }),
            pick,
            ..TraceView::default()
        }
    }

    /// Sets the search text and resolves it to a name: the name equal to it, else the first
    /// name containing it (ASCII case-insensitive); an empty text clears the filter. Returns
    /// whether a name matched (no match filters everything out, as a search should).
    pub fn set_search(&mut self, model: &TraceModel, text: &str) -> bool {
        self.search = text.to_string();
        if text.is_empty() {
            self.name = None;
            return true;
        }
        let lower = text.to_ascii_lowercase();
        let found = model.names.iter().position(|n| n == text).or_else(|| {
            model
                .names
                .iter()
                .position(|n| n.to_ascii_lowercase().contains(&lower))
        });
        // No match: a name ID past the names, which no span has.
        self.name = Some(found.map_or(model.names.len() as u32, |i| i as u32));
        found.is_some()
    }

    /// Toggles `span` as a focus seed.
    pub fn toggle_seed(&mut self, span: u32) {
        match self.focus_seeds.iter().position(|&s| s == span) {
            Some(i) => {
                self.focus_seeds.remove(i);
            }
            None if self.focus_seeds.len() < 64 => self.focus_seeds.push(span),
            None => {}
        }
    }

    /// The shareable part of the state as a URL hash (without `#`).
    pub fn to_hash(&self) -> String {
        let list = |v: &mut dyn Iterator<Item = u32>| {
            v.map(|x| x.to_string()).collect::<Vec<_>>().join(",")
        };
        let mut parts = vec![format!("w={},{}", self.camera.start, self.camera.end)];
        if !self.focus_seeds.is_empty() {
            parts.push(format!("f={}", list(&mut self.focus_seeds.iter().copied())));
            parts.push(format!("h={}", self.hops));
        }
        if !self.collapsed_processes.is_empty() {
            parts.push(format!(
                "p={}",
                list(&mut self.collapsed_processes.iter().copied())
            ));
        }
        if let Some(s) = self.selected {
            parts.push(format!("s={s}"));
        }
        parts.join("&")
    }

    /// Applies a hash written by [`Self::to_hash`] (a leading `#` is ignored, unknown keys
    /// too). Fails, changing nothing, on a malformed value.
    pub fn apply_hash(&mut self, hash: &str, model: &TraceModel) -> Result<(), ViewerError> {
        let mut next = self.clone();
        let bad = |key: &str, value: &str| ViewerError::Hash {
            key: key.to_string(),
            value: value.to_string(),
        };
        let n = model.spans.len() as u32;
        for part in hash.trim_start_matches('#').split('&') {
            let Some((key, value)) = part.split_once('=') else {
                continue;
            };
            let nums = || -> Result<Vec<u64>, ViewerError> {
                value
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse::<u64>().map_err(|_| bad(key, value)))
                    .collect()
            };
            let ids = || -> Result<Vec<u32>, ViewerError> {
                nums()?
                    .into_iter()
                    .map(|x| u32::try_from(x).map_err(|_| bad(key, value)))
                    .collect()
            };
            match key {
                "w" => match nums()?[..] {
                    [a, b] if b > a => {
                        next.camera.set_window(a as f64, (b - a) as f64);
                    }
                    _ => return Err(bad(key, value)),
                },
                "f" => next.focus_seeds = ids()?.into_iter().filter(|&s| s < n).collect(),
                "h" => match ids()?[..] {
                    [h] if h <= MAX_HOPS => next.hops = h,
                    _ => return Err(bad(key, value)),
                },
                "p" => {
                    let p = model.processes.len() as u32;
                    next.collapsed_processes = ids()?.into_iter().filter(|&x| x < p).collect();
                }
                "s" => match ids()?[..] {
                    [s] if s < n => next.selected = Some(s),
                    _ => return Err(bad(key, value)),
                },
                _ => {}
            }
        }
        *self = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpugraph_trace::{parse_chrome_trace, IngestOptions};

    fn model() -> TraceModel {
        parse_chrome_trace(
            br#"[
            {"ph":"X","name":"load","pid":1,"tid":1,"ts":0,"dur":100},
            {"ph":"X","name":"Compute","pid":1,"tid":1,"ts":10,"dur":20},
            {"ph":"X","name":"draw","pid":2,"tid":1,"ts":0,"dur":900}
            ]"#,
            IngestOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn the_hash_round_trips() {
        let m = model();
        let mut s = ViewState::new(&m);
        s.camera.set_window(100_000.0, 200_000.0);
        s.focus_seeds = vec![0, 2];
        s.hops = 3;
        s.collapsed_processes = [1].into();
        s.selected = Some(1);
        let h = s.to_hash();
        assert_eq!(h, "w=100000,300000&f=0,2&h=3&p=1&s=1");
        let mut t = ViewState::new(&m);
        t.apply_hash(&format!("#{h}&zz=1"), &m).unwrap();
        assert_eq!(t, s);
        for bad in ["w=5,1", "w=a,b", "h=99", "s=7", "f=-1"] {
            let before = t.clone();
            assert!(t.apply_hash(bad, &m).is_err(), "{bad}");
            assert_eq!(t, before, "{bad} changed nothing");
        }
    }

    #[test]
    fn search_resolves_to_a_name() {
        let m = model();
        let mut s = ViewState::new(&m);
        assert!(s.set_search(&m, "compute"));
        assert_eq!(
            s.name.map(|n| m.names[n as usize].as_str()),
            Some("Compute")
        );
        assert!(!s.set_search(&m, "nothing"));
        assert_eq!(s.name, Some(m.names.len() as u32));
        assert!(s.set_search(&m, ""));
        assert_eq!(s.name, None);
        let v = s.trace_view(None);
        assert_eq!(v.window, (0, m.end));
        assert!(v.focus.is_none());
    }
}
