// Nearest visible ancestor by a bounded walk up the parent chain (header: WG). A walk that
// meets a missing parent or follows max_depth hidden links (a cycle, an overlong chain) gives
// the caller's invalid value.

struct AncestorParams {
    rows: u32,
    max_depth: u32,
    invalid: u32,
    parents_off: u32,
    visible_off: u32,
    out_off: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: AncestorParams;
@group(0) @binding(1) var<storage, read> parents: array<u32>;
@group(0) @binding(2) var<storage, read> visible: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;

fn nearest_visible(i: u32) -> u32 {
    if (visible[params.visible_off + i] != 0u) {
        return i;
    }
    var cur = i;
    for (var link = 0u; link < params.max_depth; link += 1u) {
        let p = parents[params.parents_off + cur];
        if (p >= params.rows) {
            return params.invalid;
        }
        if (visible[params.visible_off + p] != 0u) {
            return p;
        }
        cur = p;
    }
    return params.invalid;
}

@compute @workgroup_size(WG)
fn project(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid;
    if (i < params.rows) {
        output[params.out_off + i] = nearest_visible(i);
    }
}
