// Virtual geometry selection (header: WG): one pass per breadth level decides every active
// node of the level — culled by its bounding sphere, refined into its children, or selected —
// and publishes to the next level through node-aligned request/block bits. A node is active
// when some parent requested it and no selected parent blocks it, so a selected parent and its
// children never appear together, whatever the convergence of child ranges.

const REQUEST: u32 = 1u;
const BLOCK: u32 = 2u;
const NEAR: f32 = 1e-6;

struct SelectParams {
    nodes: u32,
    roots: u32,
    begin: u32,
    end: u32,
    next_begin: u32,
    next_end: u32,
    spheres_off: u32,
    errors_off: u32,
    children_off: u32,
    view_off: u32,
    capacity: u32,
    total_off: u32,
    count_off: u32,
    total_out_off: u32,
    overflow_off: u32,
    pad0: u32,
}

@group(0) @binding(0) var<uniform> params: SelectParams;
@group(0) @binding(1) var<storage, read_write> state: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> selected: array<u32>;
@group(0) @binding(3) var<storage, read> spheres: array<f32>;
@group(0) @binding(4) var<storage, read> errors: array<f32>;
@group(0) @binding(5) var<storage, read> children: array<u32>;
@group(0) @binding(6) var<storage, read> view: array<u32>;
@group(0) @binding(7) var<storage, read> total: array<u32>;
@group(0) @binding(8) var<storage, read_write> count_out: array<u32>;
#ifdef TOTAL
@group(0) @binding(9) var<storage, read_write> total_out: array<u32>;
#endif
#ifdef OVERFLOW
@group(0) @binding(10) var<storage, read_write> overflow_out: array<u32>;
#endif

// Finite by bits: a comparison-based test could be folded away by a fast-math compiler.
fn is_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn view_f32(i: u32) -> f32 {
    return bitcast<f32>(view[params.view_off + i]);
}

fn linear_row(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * WG + lid;
}

// Outside some finite plane by more than the radius; non-finite planes or sums never cull.
fn culled(c: vec3<f32>, r: f32) -> bool {
    for (var p = 0u; p < 6u; p += 1u) {
        let n = vec3<f32>(view_f32(4u * p), view_f32(4u * p + 1u), view_f32(4u * p + 2u));
        let d = view_f32(4u * p + 3u);
        if (!(is_finite(n.x) && is_finite(n.y) && is_finite(n.z) && is_finite(d))) {
            continue;
        }
        let s = dot(n, c) + d;
        if (is_finite(s) && is_finite(r) && s < -r) {
            return true;
        }
    }
    return false;
}

// Projected error above the bound; non-finite inputs and a camera inside (or within NEAR of)
// the sphere prefer refinement.
fn must_refine(c: vec3<f32>, r: f32, err: f32) -> bool {
    let cam = vec3<f32>(view_f32(24u), view_f32(25u), view_f32(26u));
    let scale = view_f32(28u);
    let bound = view_f32(29u);
    if (!(is_finite(cam.x) && is_finite(cam.y) && is_finite(cam.z) && is_finite(scale)
          && is_finite(bound) && is_finite(err) && is_finite(r))) {
        return true;
    }
    let dist = length(c - cam) - r;
    if (!is_finite(dist) || !(dist > NEAR)) {
        return true;
    }
    let projected = err * scale / dist;
    return !is_finite(projected) || projected > bound;
}

@compute @workgroup_size(WG)
fn init(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid);
    if (i < params.nodes) {
        atomicStore(&state[i], select(0u, REQUEST, i < params.roots));
        selected[i] = 0u;
    }
}

@compute @workgroup_size(WG)
fn select_level(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let i = params.begin + linear_row(wid, nwg, lid);
    if (i >= params.end) {
        return;
    }
    let s = atomicLoad(&state[i]);
    if ((s & REQUEST) == 0u || (s & BLOCK) != 0u) {
        return;
    }
    let o = params.spheres_off + 4u * i;
    let c = vec3<f32>(spheres[o], spheres[o + 1u], spheres[o + 2u]);
    let r = spheres[o + 3u];
    if (culled(c, r)) {
        return;
    }
    let first = children[params.children_off + 2u * i];
    let n = children[params.children_off + 2u * i + 1u];
    let valid = n > 0u && first >= params.next_begin && first <= params.next_end
        && n <= params.next_end - first;
    if (valid && must_refine(c, r, errors[params.errors_off + i])) {
        for (var k = 0u; k < n; k += 1u) {
            atomicOr(&state[first + k], REQUEST);
        }
        return;
    }
    selected[i] = 1u;
    if (valid) {
        for (var k = 0u; k < n; k += 1u) {
            atomicOr(&state[first + k], BLOCK);
        }
    }
}

// count = min(total, capacity), and the optional total and overflow words.
@compute @workgroup_size(1)
fn publish() {
    let t = total[params.total_off];
    count_out[params.count_off] = min(t, params.capacity);
#ifdef TOTAL
    total_out[params.total_out_off] = t;
#endif
#ifdef OVERFLOW
    overflow_out[params.overflow_off] = select(0u, 1u, t > params.capacity);
#endif
}
