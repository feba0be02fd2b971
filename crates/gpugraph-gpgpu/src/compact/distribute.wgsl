// Distribution of a staged compaction into one chunk of a chunked output: the fused kernel
// wrote the first `capacity` survivors densely into `staged` and the survivor count into
// status word 1; this copies the staged rows that fall into the chunk's logical positions
// [position, position + rows) and exist (< min(count, capacity)). Rows past the count are not
// written. params: [0] rows in the chunk, [1] element offset of the chunk in `out`,
// [2] logical position of the chunk's first row, [3] capacity (all output rows).

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read> staged: array<u32>;
@group(0) @binding(3) var<storage, read> status: array<u32>;

#include "shared/row_driver.wgsl"

// Survivors staged before this workgroup's rows (set before the row loop).
var<private> written: u32;

// Row i of the chunk (shared/row_driver.wgsl).
fn visit_row(i: u32) {
    let position = params[2];
    if (position + i < written) {
        out[params[1] + i] = staged[position + i];
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn distribute(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
              @builtin(local_invocation_index) lane: u32) {
    written = min(status[1], params[3]);
    drive_rows(wg, num_wg, lane, WORKGROUP_SIZE, params[0]);
}
