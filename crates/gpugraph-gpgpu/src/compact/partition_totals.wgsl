// Partitioned indexed-range compaction, last step (one workgroup): partitions without source
// rows (never dispatched) get count 0 and overflow 0; the total count is the sum of all
// partition counts; the invalid-range count is the number of partitions whose [start, end) is
// reversed, or non-empty and not inside the partition's own ids [base, base + rows).
// params: [0] partitions P, [1] counts offset, [2] overflow offset, [3] has overflow,
// [4] total offset, [5] invalid offset, [6] has invalid, [7] ranges offset,
// then [8 + 2k] = base of partition k, [9 + 2k] = its source rows.

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> ranges: array<u32>;
@group(0) @binding(2) var<storage, read_write> counts: array<u32>;
@group(0) @binding(3) var<storage, read_write> overflow: array<u32>;
@group(0) @binding(4) var<storage, read_write> total: array<u32>;
@group(0) @binding(5) var<storage, read_write> invalid: array<u32>;

var<workgroup> sums: array<u32, WORKGROUP_SIZE>;
var<workgroup> bad: array<u32, WORKGROUP_SIZE>;

#include "shared/tree_reduce.wgsl"

// The hook of shared/tree_reduce.wgsl.
fn tree_combine(slot: u32, other: u32) {
    sums[slot] += sums[other];
    bad[slot] += bad[other];
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn partition_totals(@builtin(local_invocation_index) lane: u32) {
    let partitions = params[0];
    var sum = 0u;
    var wrong = 0u;
    for (var k = lane; k < partitions; k += WORKGROUP_SIZE) {
        let base = params[8u + 2u * k];
        let rows = params[9u + 2u * k];
        if (rows == 0u) {
            counts[params[1] + k] = 0u;
            if (params[3] != 0u) {
                overflow[params[2] + k] = 0u;
            }
        } else {
            sum += counts[params[1] + k];
        }
        let start = ranges[params[7] + 2u * k];
        let end = ranges[params[7] + 2u * k + 1u];
        if (end < start || (end > start && (start < base || end > base + rows))) {
            wrong += 1u;
        }
    }
    sums[lane] = sum;
    bad[lane] = wrong;
    tree_reduce(lane, WORKGROUP_SIZE);
    if (lane == 0u) {
        total[params[4]] = sums[0];
        if (params[6] != 0u) {
            invalid[params[5]] = bad[0];
        }
    }
}
