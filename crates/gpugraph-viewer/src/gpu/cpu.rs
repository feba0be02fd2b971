//! What the trace's CPU oracle answers under the viewer's current view: the reference the
//! GPU picks and visible counts are checked against (tests, and the web page's check hooks).
//! The only module of the viewer that imports `gpugraph_trace::cpu`.

use gpugraph_trace::cpu;

use super::Viewer;

impl Viewer {
    /// The CPU oracle's pick for a click at `(x, y)` (logical px) under the current view:
    /// what the GPU pick of that click must return.
    pub fn oracle_pick(&self, x: f32, y: f32) -> Option<u32> {
        let r = self.regions();
        let cam = &self.state.camera;
        let (time, row) = (cam.tick_at(r.plot, x)?, cam.row_at(r.plot, y)?);
        let view = self
            .state
            .trace_view(Some(gpugraph_trace::Pick::Row { time, row }));
        cpu::frame(&self.model, &view, self.frame.config().max_ancestor_depth).picked
    }

    /// The CPU oracle's visible span count under the current view.
    pub fn oracle_visible(&self) -> usize {
        let view = self.state.trace_view(None);
        cpu::frame(&self.model, &view, self.frame.config().max_ancestor_depth)
            .visible_ids
            .len()
    }
}
