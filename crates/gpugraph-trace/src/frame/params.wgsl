// `FrameParams` (frame/mod.rs): the trace frame's per-frame uniform, shared by the frame's
// kernels and the span LOD's block pass (lod/lod.wgsl), which reads the window from it.

struct FrameParams {
    span_count: u32,
    dependency_count: u32,
    thread_count: u32,
    focus: u32,
    window_start_lo: u32,
    window_start_hi: u32,
    window_end_lo: u32,
    window_end_hi: u32,
    min_duration_lo: u32,
    min_duration_hi: u32,
    max_duration_lo: u32,
    max_duration_hi: u32,
    groups: u32,
    name: u32,
    pick_mode: u32,
    pick_target: u32,
    pick_time_lo: u32,
    pick_time_hi: u32,
    row_first: u32,
    row_count: u32,
    max_ancestor_depth: u32,
    plain: u32,
    block_count: u32,
    pad0: u32,
}
