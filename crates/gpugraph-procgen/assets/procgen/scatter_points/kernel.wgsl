// scatter_points: hashed uniform points in a cube.
struct Params { n: u32, seed: u32, extent: f32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> points: array<f32>;
// @when COUNT device
@group(0) @binding(2) var<storage, read> domain_count: array<u32>;
// @end

fn zero_n() -> u32 { return params.n; }

fn live_n() -> u32 {
    var live = zero_n();
    // @when COUNT device
    live = min(domain_count[0], zero_n());
    // @end
    return live;
}

fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

fn unit(v: u32) -> f32 { return f32(v >> 8u) / 16777216.0; }

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i >= zero_n() { return; }
    var p = vec3<f32>(0.0);
    if i < live_n() {
        let h = pcg(i ^ pcg(params.seed));
        let hx = pcg(h);
        let hy = pcg(hx);
        let hz = pcg(hy);
        p = vec3<f32>(unit(hx), unit(hy), unit(hz)) * params.extent;
    }
    points[3u * i] = p.x;
    points[3u * i + 1u] = p.y;
    points[3u * i + 2u] = p.z;
}
