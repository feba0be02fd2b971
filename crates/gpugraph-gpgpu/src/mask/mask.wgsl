// Mask composition over INPUTS source-aligned u32 masks (zero/nonzero) into a canonical 0/1
// output. The host generates the `in_k` bindings and the COMBINE expression per operation
// (see mask::shader_source); bindings start at aligned offsets, so params carry element
// offsets: params[0] = row count, params[1] = output offset, params[2 + k] = input k offset.
// LIVE (a live count bounds the input rows): params[LIVE_PARAM] = chunk row of i = 0,
// params[LIVE_PARAM + 1] = offset of the count in `live`; rows at or past min(count, rows of
// the chunk) are written 0.

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
//INPUT_BINDINGS

const WORKGROUP_SIZE: u32 = 256u;
const ROWS_PER_THREAD: u32 = 4u;

@compute @workgroup_size(WORKGROUP_SIZE)
fn combine_masks(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
                 @builtin(local_invocation_index) lane: u32) {
    let count = params[0];
#ifdef LIVE
    let live_rows = min(live[params[LIVE_PARAM + 1u]], params[LIVE_PARAM + 2u]);
    let first_row = params[LIVE_PARAM];
#endif
    let base = linear_workgroup(wg, num_wg) * WORKGROUP_SIZE * ROWS_PER_THREAD + lane;
    for (var r = 0u; r < ROWS_PER_THREAD; r++) {
        let i = base + r * WORKGROUP_SIZE;
        if (i < count) {
#ifdef LIVE
            out[params[1] + i] = select(0u, 1u, (first_row + i < live_rows) && (COMBINE));
#else
            out[params[1] + i] = select(0u, 1u, COMBINE);
#endif
        }
    }
}
