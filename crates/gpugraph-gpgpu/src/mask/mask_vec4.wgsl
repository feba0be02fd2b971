// The body of a mask composition, four rows per vec4<u32>: used when the output and every
// input start on a 16-byte boundary (the tail rows, or misaligned views, go through
// mask.wgsl). The host generates the input bindings, their loads and the COMBINE expression
// over vec4<bool> (mask::shader_source). params[0] = vec4 count, params[1] = output vec4
// offset, params[2 + k] = input k vec4 offset. LIVE: as in mask.wgsl (first_row is the
// chunk row of vec4 0's first component).
//
// Each invocation issues all its loads before its first store: storage bindings may alias as
// far as the driver compiler knows, so a load after a store would wait for it. The loops are
// `#unroll`ed so the per-invocation arrays stay in registers.

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<u32>>;
//INPUT_BINDINGS

const WORKGROUP_SIZE: u32 = 256u;
const VECS_PER_THREAD: u32 = 4u;

@compute @workgroup_size(WORKGROUP_SIZE)
fn combine_masks(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
                 @builtin(local_invocation_index) lane: u32) {
    let count = params[0];
    let out_off = params[1];
    let base = linear_workgroup(wg, num_wg) * WORKGROUP_SIZE * VECS_PER_THREAD + lane;
#ifdef LIVE
    let live_rows = min(live[params[LIVE_PARAM + 1u]], params[LIVE_PARAM + 2u]);
    let first_row = params[LIVE_PARAM];
#endif
//INPUT_LOADS
#unroll
    for (var r = 0u; r < VECS_PER_THREAD; r += 1u) {
        let i = base + r * WORKGROUP_SIZE;
        if (i < count) {
#ifdef LIVE
            let rows = vec4<u32>(first_row + 4u * i) + vec4<u32>(0u, 1u, 2u, 3u);
            let alive = rows < vec4<u32>(live_rows);
            out[out_off + i] = select(vec4<u32>(0u), vec4<u32>(1u), alive & (COMBINE));
#else
            out[out_off + i] = select(vec4<u32>(0u), vec4<u32>(1u), COMBINE);
#endif
        }
    }
}
