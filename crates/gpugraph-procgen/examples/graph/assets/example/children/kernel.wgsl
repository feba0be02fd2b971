// children: place each child on a ring around its survivor.
struct Params { n: u32, k: u32, ring: f32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> points: array<f32>;
@group(0) @binding(2) var<storage, read> indices: array<i32>;
@group(0) @binding(3) var<storage, read> owner: array<i32>;
@group(0) @binding(4) var<storage, read> local_index: array<i32>;
@group(0) @binding(5) var<storage, read_write> child_points: array<f32>;
// @when COUNT device
@group(0) @binding(6) var<storage, read> domain_count: array<u32>;
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
    let c = (wid.y * nwg.x + wid.x) * 64u + lid;
    if c >= zero_n() { return; }
    var p = vec3<f32>(0.0);
    if c < live_n() {
        let s = u32(indices[u32(owner[c])]);
        let a = 6.2831853 * f32(local_index[c]) / f32(max(params.k, 1u));
        p = vec3<f32>(points[3u * s], points[3u * s + 1u], points[3u * s + 2u])
            + params.ring * vec3<f32>(cos(a), sin(a), 0.0);
    }
    child_points[3u * c] = p.x;
    child_points[3u * c + 1u] = p.y;
    child_points[3u * c + 2u] = p.z;
}
