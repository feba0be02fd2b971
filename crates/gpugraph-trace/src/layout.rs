//! The thread-row layout of a frame: which rows each thread occupies once processes and
//! threads are collapsed. The GPU frame computes it from the same per-thread table
//! ([`thread_layout`]); hosts (label placement, the viewer's panels) read it from here, and
//! the oracle (`cpu`) re-exports it.

use crate::model::TraceModel;
use crate::view::TraceView;

/// Per thread: `(process, lanes, first thread of its process)`, what the layout needs.
pub fn thread_layout(model: &TraceModel) -> Vec<(u32, u32, bool)> {
    model
        .threads
        .iter()
        .enumerate()
        .map(|(t, th)| {
            let first = model.processes[th.process as usize].threads.start == t as u32;
            (th.process, th.lanes, first)
        })
        .collect()
}

/// Layout rows of every thread: `(height, first row)`.
pub fn thread_rows(model: &TraceModel, view: &TraceView) -> Vec<(u32, u32)> {
    thread_rows_of(&thread_layout(model), view)
}

/// [`thread_rows`] from a [`thread_layout`].
pub fn thread_rows_of(layout: &[(u32, u32, bool)], view: &TraceView) -> Vec<(u32, u32)> {
    let mut row = 0u32;
    layout
        .iter()
        .enumerate()
        .map(|(t, &(p, lanes, first))| {
            let h = if view.collapsed_processes.contains(&p) {
                u32::from(first)
            } else if view.collapsed_threads.contains(&(t as u32)) {
                lanes.min(1)
            } else {
                lanes
            };
            let r = (h, row);
            row = row.wrapping_add(h);
            r
        })
        .collect()
}
