// Expands an Arrow validity bitmap (LSB first, 1 = valid) into the uint32 validity mask the
// GPU primitives read (one word per row, 1 valid, 0 null). Both bindings are exactly one
// chunk: `bits` starts at the chunk's first row, `mask` has one word per row of the chunk, so
// the kernel needs no parameters. A grid of more workgroups than one dimension allows is split
// over x and y (`Grid::Rows`); `linear_workgroup` recovers the row.

#include "shared/dispatch.wgsl"

@group(0) @binding(0) var<storage, read> bits: array<u32>;
@group(0) @binding(1) var<storage, read_write> mask: array<u32>;

@compute @workgroup_size(256)
fn expand(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = linear_workgroup(wg, groups) * 256u + lid;
    if (row >= arrayLength(&mask)) {
        return;
    }
    mask[row] = (bits[row >> 5u] >> (row & 31u)) & 1u;
}
