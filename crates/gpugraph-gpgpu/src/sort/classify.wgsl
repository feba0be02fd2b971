// Segmented sort, stage 1: assigns every segment to its width class without a CPU readback.
// Each class gets a compact list of segment ids and the indirect dispatch arguments of its
// sort_segments dispatch (local.wgsl). CPU twin: cpu::classify_segments.
//
// Generated header (source.rs): CLASSIFY_WG, LOCAL_ROWS, CLASSES (width classes in use),
// CLASS_WIDTHS (array of their widths, ascending), LIST_HEADER_WORDS.
//
// `lists` layout: [count of class c: CLASSES words | ... up to LIST_HEADER_WORDS |
//                  segment ids of class c at LIST_HEADER_WORDS + c * segments ...].
// `args` layout: class c's (x, y, z) workgroup counts at words 3c .. 3c + 2.
#include "shared/dispatch.wgsl"

struct ClassifyParams {
    segments: u32,   // rows of the offsets and lengths views
    rows: u32,       // rows of the keys (and values) view
    max_width: u32,  // declared widest segment; longer ones are rejected
    offsets: u32,    // element offsets of the views inside their bindings
    lengths: u32,
    rejected: u32,
    max_dim: u32,    // device limit on workgroups per dispatch dimension
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: ClassifyParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> lengths: array<u32>;
@group(0) @binding(3) var<storage, read_write> lists: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> args: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> rejected: array<atomic<u32>>;

// Zeroes the counts, the rejected counter and the workgroup counts (z = 1). One workgroup.
@compute @workgroup_size(CLASSIFY_WG)
fn clear_classes(@builtin(local_invocation_index) t: u32) {
    if t < CLASSES {
        atomicStore(&lists[t], 0u);
        atomicStore(&args[3u * t], 0u);
        atomicStore(&args[3u * t + 1u], 0u);
        atomicStore(&args[3u * t + 2u], 1u);
    }
    if t == 0u {
        atomicStore(&rejected[params.rejected], 0u);
    }
}

// One invocation per segment. Segments of 0 or 1 rows are already sorted and skipped; those
// longer than max_width or reaching past the keys view are counted in `rejected` and left
// untouched. The others are appended to their class list (order inside a class is
// irrelevant: segments are independent), and the class's grid grows to cover them:
// x = min(workgroups, max_dim), y = ceil(workgroups / max_dim).
@compute @workgroup_size(CLASSIFY_WG)
fn classify(
    @builtin(local_invocation_index) lt: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
) {
    let s = linear_workgroup(wg, num_wg) * CLASSIFY_WG + lt;
    if s >= params.segments {
        return;
    }
    let len = lengths[params.lengths + s];
    if len == 0u {
        return;
    }
    let start = offsets[params.offsets + s];
    if len > params.max_width || start > params.rows || len > params.rows - start {
        atomicAdd(&rejected[params.rejected], 1u);
        return;
    }
    if len == 1u {
        return;
    }
    var c = 0u;
    while c + 1u < CLASSES && CLASS_WIDTHS[c] < len {
        c += 1u;
    }
    let slot = atomicAdd(&lists[c], 1u);
    atomicStore(&lists[LIST_HEADER_WORDS + c * params.segments + slot], s);
    let group = slot / (LOCAL_ROWS / CLASS_WIDTHS[c]);
    atomicMax(&args[3u * c], min(group + 1u, params.max_dim));
    atomicMax(&args[3u * c + 1u], group / params.max_dim + 1u);
}
