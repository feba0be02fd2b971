// Mask composition over source-aligned u32 masks (zero/nonzero) into a canonical 0/1 output,
// one row at a time (any alignment). Parameters, bindings and the operator: combine.wgsl.
#include "shared/dispatch.wgsl"
#include "mask/combine.wgsl"

alias Word = u32;
alias Truth = bool;

@compute @workgroup_size(WORKGROUP_SIZE)
fn combine_masks(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
                 @builtin(local_invocation_index) lane: u32) {
    let count = params.count;
#ifdef LIVE
    let live_rows = min(live[params.live_off], params.rows);
    let first_row = params.first_row;
#endif
    let base = linear_workgroup(wg, num_wg) * WORKGROUP_SIZE * ROWS_PER_THREAD + lane;
    for (var r = 0u; r < ROWS_PER_THREAD; r++) {
        let i = base + r * WORKGROUP_SIZE;
        if (i < count) {
#unroll K in 3..INPUTS_END
            let x_K = in_K[params.in_off[K - 3] + i] != 0u;
#end_unroll
            var c = x_3;
#unroll K in 4..INPUTS_END
            c = fold(c, x_K);
#end_unroll
#ifdef LIVE
            out[params.out_off + i] = select(0u, 1u, (first_row + i < live_rows) && finish(c));
#else
            out[params.out_off + i] = select(0u, 1u, finish(c));
#endif
        }
    }
}
