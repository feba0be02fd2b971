// Expands an Arrow validity bitmap (LSB first, 1 = valid) into the uint32 validity mask the
// GPU primitives read (one word per row, 1 valid, 0 null). Both bindings are exactly one
// chunk: `bits` starts at the chunk's first row, `mask` has one word per row of the chunk, so
// the kernel needs no parameters. Dispatched as a 2-D grid when one dimension is not enough.

@group(0) @binding(0) var<storage, read> bits: array<u32>;
@group(0) @binding(1) var<storage, read_write> mask: array<u32>;

@compute @workgroup_size(256)
fn expand(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let row = gid.x + gid.y * groups.x * 256u;
    if (row >= arrayLength(&mask)) {
        return;
    }
    mask[row] = (bits[row >> 5u] >> (row & 31u)) & 1u;
}
