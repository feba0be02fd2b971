// Indexed-range compaction, step 3: candidate c (0 <= c < max_candidates) is row
// c - (ends[r] - len_r) of the first range r with ends[r] > c (ends: inclusive sums of the
// clamped lengths), i.e. source id end'_r - (ends[r] - c). Writes its id and its 0/1
// selection (flags[id] != 0); candidates past the total are not selected.
// params: [0] ranges R (>= 1), [1] element offset of the pairs in `ranges`, [2] source rows n,
// [3] element offset of `flags`, [4] max candidates.

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> ranges: array<u32>;
@group(0) @binding(2) var<storage, read> ends: array<u32>;
@group(0) @binding(3) var<storage, read> flags: array<u32>;
@group(0) @binding(4) var<storage, read_write> ids: array<u32>;
@group(0) @binding(5) var<storage, read_write> selected: array<u32>;

#include "shared/row_driver.wgsl"

// Candidates below the total (set before the row loop).
var<private> total: u32;

// Candidate c (shared/row_driver.wgsl).
fn visit_row(c: u32) {
    if (c >= total) {
        ids[c] = 0u;
        selected[c] = 0u;
        return;
    }
    let range_count = params[0];
    // At most 32 halvings: bounded for drivers that cap loop iterations.
    var lo = 0u;
    var hi = range_count - 1u;
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        if (ends[mid] > c) {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    let pair = clamped_range(ranges[params[1] + 2u * lo], ranges[params[1] + 2u * lo + 1u], params[2]);
    let id = pair.y - (ends[lo] - c);
    ids[c] = id;
    selected[c] = select(0u, 1u, flags[params[3] + id] != 0u);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn expand_candidates(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
                     @builtin(local_invocation_index) lane: u32) {
    total = ends[params[0] - 1u];
    drive_rows(wg, num_wg, lane, WORKGROUP_SIZE, params[4]);
}
