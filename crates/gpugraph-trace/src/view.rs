//! [`TraceView`]: everything an interaction changes, as plain data. The GPU frame turns it
//! into buffer writes ([`crate::frame::TraceFrame::write_view`]); the CPU oracle
//! ([`crate::cpu::frame`]) reads it directly.

use std::collections::BTreeSet;

use crate::span::{DRAW_GROUPS, NO_SPAN};

/// Which way dependency focus walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FocusDirection {
    /// Downstream: along dependencies.
    Forward,
    /// Upstream: against dependencies.
    Backward,
    /// The union of both walks (not undirected reachability).
    Both,
}

/// Dependency focus: only spans within `hops` dependency links of a seed stay visible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Focus {
    /// Canonical span IDs; IDs past the span count are ignored.
    pub seeds: Vec<u32>,
    /// Links walked (at most the frame's compiled `max_hops`).
    pub hops: u32,
    /// Direction.
    pub direction: FocusDirection,
}

/// What to pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The innermost visible span on layout row `row` containing `time` (ties: lowest ID).
    Row {
        /// Ticks since the trace origin.
        time: u64,
        /// Layout row.
        row: u32,
    },
    /// The innermost visible span of thread `thread` containing `time` (ties: lowest ID).
    Thread {
        /// Ticks since the trace origin.
        time: u64,
        /// Global thread index.
        thread: u32,
    },
}

/// One frame's interaction state (see the module doc).
///
/// Visibility of span `s`: `[start, end]` meets the closed `window`, its duration is within
/// `[min_duration, max_duration]`, its draw group's bit is set in `groups`, its name matches
/// `name` (when given), and its lane is shown: every lane of an expanded thread of an
/// expanded process, lane 0 only of a collapsed thread (its one row) or of a collapsed
/// process (one activity row for the whole process); with `focus`, it must also be within
/// the focus hops of a seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceView {
    /// Closed time window, ticks since the origin.
    pub window: (u64, u64),
    /// Shortest duration shown, ticks.
    pub min_duration: u64,
    /// Longest duration shown, ticks.
    pub max_duration: u64,
    /// Bit `g` shows draw group `g` ([`crate::SpanFlags::draw_group`]).
    pub groups: u32,
    /// Only spans of this name (group) ID.
    pub name: Option<u32>,
    /// Collapsed process indices.
    pub collapsed_processes: BTreeSet<u32>,
    /// Collapsed thread indices.
    pub collapsed_threads: BTreeSet<u32>,
    /// Dependency focus.
    pub focus: Option<Focus>,
    /// Picking.
    pub pick: Option<Pick>,
    /// Layout rows in the picture: `(first, count)`; `None`: every row.
    pub rows: Option<(u32, u32)>,
}

impl Default for TraceView {
    fn default() -> Self {
        Self {
            window: (0, u64::MAX),
            min_duration: 0,
            max_duration: u64::MAX,
            groups: (1 << DRAW_GROUPS) - 1,
            name: None,
            collapsed_processes: BTreeSet::new(),
            collapsed_threads: BTreeSet::new(),
            focus: None,
            pick: None,
            rows: None,
        }
    }
}

impl TraceView {
    /// `name` as the GPU sees it ([`NO_SPAN`] = any).
    pub fn name_word(&self) -> u32 {
        self.name.unwrap_or(NO_SPAN)
    }

    /// Whether the window alone decides visibility: no duration, group or name filter, no
    /// collapse, no focus, and the window in order (its start at or before its end). Such a
    /// view shows every lane of every thread at its expanded row, which the frame's blocks
    /// mode relies on (`crate::frame::blocks`).
    pub fn is_plain(&self) -> bool {
        let all_groups = (1u32 << DRAW_GROUPS) - 1;
        self.window.0 <= self.window.1
            && self.min_duration == 0
            && self.max_duration >= crate::span::MAX_SPAN_DURATION
            && self.groups & all_groups == all_groups
            && self.name.is_none()
            && self.collapsed_processes.is_empty()
            && self.collapsed_threads.is_empty()
            && self.focus.is_none()
    }
}
