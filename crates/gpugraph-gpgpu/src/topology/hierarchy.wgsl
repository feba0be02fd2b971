// Effective child heights of a one-level hierarchy (header: WG), over one intersection of a
// child-state chunk with a parent-state chunk: the global child ID selects its parent, so
// chunk boundaries of the two vectors are independent.

struct HeightParams {
    rows: u32,
    start: u32,
    child_base: u32,
    parent_base: u32,
    child_off: u32,
    parent_off: u32,
    heights_off: u32,
    children_per_parent: u32,
    expanded_child: u32,
    collapsed_child: u32,
    collapsed_parent: u32,
    pad0: u32,
}

@group(0) @binding(0) var<uniform> params: HeightParams;
@group(0) @binding(1) var<storage, read> parent_states: array<u32>;
@group(0) @binding(2) var<storage, read> child_states: array<u32>;
@group(0) @binding(3) var<storage, read_write> heights: array<u32>;

@compute @workgroup_size(WG)
fn heights_of(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid;
    if (i >= params.rows) {
        return;
    }
    let local = params.start + i;
    let g = params.child_base + local;
    let parent = g / params.children_per_parent - params.parent_base;
    var h = 0u;
    if (parent_states[params.parent_off + parent] != 0u) {
        h = select(params.collapsed_child, params.expanded_child,
                   child_states[params.child_off + local] != 0u);
    } else if (g % params.children_per_parent == 0u) {
        h = params.collapsed_parent;
    }
    heights[params.heights_off + local] = h;
}
