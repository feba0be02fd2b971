// compact: append each kept live slot to indices; inverse maps slots to their place.
struct Params { n: u32, indices_capacity: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> keep: array<u32>;
@group(0) @binding(2) var<storage, read_write> indices: array<i32>;
@group(0) @binding(3) var<storage, read_write> indices_count: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> inverse: array<i32>;
// @when COUNT device
@group(0) @binding(5) var<storage, read> domain_count: array<u32>;
// @end

fn zero_n() -> u32 { return params.n; }

fn live_n() -> u32 {
    var live = zero_n();
    // @when COUNT device
    live = min(domain_count[0], zero_n());
    // @end
    return live;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i >= zero_n() { return; }
    if i >= live_n() || keep[i] == 0u {
        inverse[i] = -1;
        return;
    }
    // The counter counts every kept slot, so past the capacity it states the overflow.
    let k = atomicAdd(&indices_count[0], 1u);
    if k < params.indices_capacity {
        indices[k] = i32(i);
        inverse[i] = i32(k);
    } else {
        inverse[i] = -1;
    }
}
