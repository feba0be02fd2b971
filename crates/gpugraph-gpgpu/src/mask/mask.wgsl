// Mask composition over INPUTS source-aligned u32 masks (zero/nonzero) into a canonical 0/1
// output. The host generates the input bindings, their loads and the COMBINE expression per
// operation (see mask::shader_source); bindings start at aligned offsets, so params carry
// element offsets: params[0] = row count, params[1] = output offset, params[2 + k] = input k
// offset.
//
// Every load of an invocation is issued before its first store: storage bindings may alias as
// far as the driver compiler knows, so a load after a store waits for it, and rows handled one
// after another became one memory round trip each (0.65x the copy floor on an H200).

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
//INPUT_BINDINGS

const WORKGROUP_SIZE: u32 = 256u;
const ROWS_PER_THREAD: u32 = 8u;

@compute @workgroup_size(WORKGROUP_SIZE)
fn combine_masks(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
                 @builtin(local_invocation_index) lane: u32) {
    let count = params[0];
    let out_off = params[1];
    let base = linear_workgroup(wg, num_wg) * WORKGROUP_SIZE * ROWS_PER_THREAD + lane;
//INPUT_LOADS
    for (var r = 0u; r < ROWS_PER_THREAD; r++) {
        let i = base + r * WORKGROUP_SIZE;
        if (i < count) {
            out[out_off + i] = select(0u, 1u, COMBINE);
        }
    }
}
