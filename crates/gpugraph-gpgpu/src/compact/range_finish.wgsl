// Indexed-range compaction, last step: publishes the invalid-range count and adds bit 2 to
// the overflow word when the candidate rows (the last range end) exceed max_candidates, so
// rows past the bound were never examined. Runs after the compaction wrote bit 1.
// params: [0] ranges R (>= 1), [1] max candidates, [2] invalid offset, [3] has invalid,
// [4] overflow offset, [5] has overflow.

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> scalars: array<u32>;
@group(0) @binding(2) var<storage, read> ends: array<u32>;
@group(0) @binding(3) var<storage, read_write> invalid: array<u32>;
@group(0) @binding(4) var<storage, read_write> overflow: array<u32>;

const CANDIDATES_EXCEEDED: u32 = 2u;

@compute @workgroup_size(1)
fn finish_ranges() {
    if (params[3] != 0u) {
        invalid[params[2]] = scalars[0];
    }
    if (params[5] != 0u && ends[params[0] - 1u] > params[1]) {
        overflow[params[4]] = overflow[params[4]] | CANDIDATES_EXCEEDED;
    }
}
