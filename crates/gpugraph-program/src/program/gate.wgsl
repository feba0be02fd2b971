// The gate of a GPU-gated region: one workgroup that turns a predicate word into the
// indirect workgroup counts of every dispatch in the region (its geometry, or 0 when the
// region is inactive), and keeps the region's state words:
//   state[0] = active (then-branch / loop body), state[1] = active else-branch,
//   state[2] = iterations a loop ran.
// Modes: 0 loop, first iteration (active = parent ∧ pred; iterations = active);
//        1 loop, later iteration (active = active ∧ pred; iterations += active);
//        2 conditional (then = parent ∧ pred, else = parent ∧ ¬pred).
// Every count written is clamped to max_count (the device's per-dimension limit; the
// compiler already refuses larger geometry), so the counts are within the limit by
// construction and the device may skip wgpu's indirect-dispatch validation.

struct GateParams {
    mode: u32,
    count: u32,
    pred_off: u32,
    parent_off: u32,
    has_parent: u32,
    max_count: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: GateParams;
@group(0) @binding(1) var<storage, read> geometry: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> pred: array<u32>;
@group(0) @binding(3) var<storage, read> parent: array<u32>;
@group(0) @binding(4) var<storage, read_write> state: array<u32>;
@group(0) @binding(5) var<storage, read_write> args: array<u32>;

var<workgroup> gate_on: vec2<u32>;

@compute @workgroup_size(64)
fn gate(@builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        var up = 1u;
        if (params.has_parent != 0u) {
            up = select(0u, 1u, parent[params.parent_off] != 0u);
        }
        let p = select(0u, 1u, pred[params.pred_off] != 0u);
        var a0 = 0u;
        var a1 = 0u;
        if (params.mode == 0u) {
            a0 = up & p;
            state[2] = a0;
        } else if (params.mode == 1u) {
            a0 = select(0u, 1u, state[0] != 0u) & p;
            state[2] = state[2] + a0;
        } else {
            a0 = up & p;
            a1 = up & (1u - p);
        }
        state[0] = a0;
        state[1] = a1;
        gate_on = vec2<u32>(a0, a1);
    }
    workgroupBarrier();
    let on = gate_on;
    for (var i = lid; i < params.count; i += 64u) {
        let g = min(geometry[i], vec4<u32>(params.max_count, params.max_count, params.max_count, 1u));
        let run = select(on.x, on.y, g.w == 1u) != 0u;
        args[3u * i] = select(0u, g.x, run);
        args[3u * i + 1u] = select(0u, g.y, run);
        args[3u * i + 2u] = select(0u, g.z, run);
    }
}
