// Vector multiply-add over float32 components: out[i] = x[i] * scale + addend[i]. The host
// binds each chunk's aligned ranges and passes element offsets: params[0] = components,
// params[1] = out offset, params[2] = x offset, params[3] = addend offset, params[4] = word
// of the scale in `scale_src` (the parameter buffer itself for a host value, params[5]).
// IN_PLACE (defined by the host): the addend is `out` itself (read-write state), each
// invocation reading and then writing its own component; otherwise a separate binding.
#include "shared/dispatch.wgsl"

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> scale_src: array<u32>;
#ifndef IN_PLACE
@group(0) @binding(4) var<storage, read> addend: array<f32>;
#endif

@compute @workgroup_size(WORKGROUP_SIZE)
fn vector_madd(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
               @builtin(local_invocation_index) lane: u32) {
    let count = params[0];
    let s = bitcast<f32>(scale_src[params[4]]);
    let base = linear_workgroup(wg, num_wg) * WORKGROUP_SIZE * ITEMS_PER_THREAD + lane;
    for (var r = 0u; r < ITEMS_PER_THREAD; r++) {
        let i = base + r * WORKGROUP_SIZE;
        if (i < count) {
#ifdef IN_PLACE
            out[params[1] + i] = x[params[2] + i] * s + out[params[1] + i];
#else
            out[params[1] + i] = x[params[2] + i] * s + addend[params[3] + i];
#endif
        }
    }
}
