// Mask composition four rows per vec4<u32>: used when the output and every input start on a
// 16-byte boundary (the tail rows, or misaligned views, go through mask.wgsl). Parameters,
// bindings and the operator: combine.wgsl (offsets and the count in vec4 slots).
//
// Each invocation issues all its loads before its first store: storage bindings may alias as
// far as the driver compiler knows, so a load after a store would wait for it. The loops are
// unrolled so the per-invocation arrays stay in registers.
#include "shared/dispatch.wgsl"
#include "mask/combine.wgsl"

alias Word = vec4<u32>;
alias Truth = vec4<bool>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn combine_masks(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
                 @builtin(local_invocation_index) lane: u32) {
    let count = params.count;
    let out_off = params.out_off;
    let base = linear_workgroup(wg, num_wg) * WORKGROUP_SIZE * VECS_PER_THREAD + lane;
#ifdef LIVE
    let live_rows = min(live[params.live_off], params.rows);
    let first_row = params.first_row;
#endif
#unroll K in 3..INPUTS_END
    let off_K = params.in_off[K - 3];
    var v_K: array<vec4<u32>, VECS_PER_THREAD>;
#unroll
    for (var r = 0u; r < VECS_PER_THREAD; r += 1u) {
        let i = base + r * WORKGROUP_SIZE;
        if (i < count) { v_K[r] = in_K[off_K + i]; }
    }
#end_unroll
#unroll
    for (var r = 0u; r < VECS_PER_THREAD; r += 1u) {
        let i = base + r * WORKGROUP_SIZE;
        if (i < count) {
            var c = v_3[r] != vec4<u32>(0u);
#unroll K in 4..INPUTS_END
            c = fold(c, v_K[r] != vec4<u32>(0u));
#end_unroll
#ifdef LIVE
            let rows = vec4<u32>(first_row + 4u * i) + vec4<u32>(0u, 1u, 2u, 3u);
            let alive = rows < vec4<u32>(live_rows);
            out[out_off + i] = select(vec4<u32>(0u), vec4<u32>(1u), alive & finish(c));
#else
            out[out_off + i] = select(vec4<u32>(0u), vec4<u32>(1u), finish(c));
#endif
        }
    }
}
