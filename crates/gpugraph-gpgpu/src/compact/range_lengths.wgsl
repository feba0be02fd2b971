// Indexed-range compaction, step 1: the clamped length of every range (scanned next into
// range ends) and the number of invalid ranges (scalars[0]).
// params: [0] ranges R, [1] element offset of the [start, end) pairs in `ranges`,
// [2] source rows n.

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> ranges: array<u32>;
@group(0) @binding(2) var<storage, read_write> lengths: array<u32>;
@group(0) @binding(3) var<storage, read_write> scalars: array<atomic<u32>>;

@compute @workgroup_size(1)
fn clear_scalars() {
    atomicStore(&scalars[0], 0u);
}

#include "shared/row_driver.wgsl"

// Range i (shared/row_driver.wgsl).
fn visit_row(i: u32) {
    let n = params[2];
    let start = ranges[params[1] + 2u * i];
    let end = ranges[params[1] + 2u * i + 1u];
    let c = clamped_range(start, end, n);
    lengths[i] = c.y - c.x;
    if (range_invalid(start, end, n)) {
        atomicAdd(&scalars[0], 1u);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn range_lengths(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
                 @builtin(local_invocation_index) lane: u32) {
    drive_rows(wg, num_wg, lane, WORKGROUP_SIZE, params[0]);
}
