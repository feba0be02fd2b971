// forest/slope_keep: gentle ground inside a grove. The CPU twin is `forest_oracle` in
// crates/gpugraph-cli/tests/procgen.rs (the noise is forest/terrain's).
struct Params { n: u32, max_slope: f32, groves: f32, density: f32, seed: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ground: array<f32>;
@group(0) @binding(2) var<storage, read> indices: array<i32>;
@group(0) @binding(3) var<storage, read_write> keep: array<u32>;
// @when COUNT device
@group(0) @binding(4) var<storage, read> domain_count: array<u32>;
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

fn lattice(x: u32, z: u32, salt: u32) -> f32 {
    return f32(pcg((x * 73856093u) ^ pcg(z ^ salt)) >> 8u) / 16777216.0;
}

fn lerp(a: f32, b: f32, t: f32) -> f32 { return a + (b - a) * t; }

fn value_noise(p: vec2<f32>, salt: u32) -> f32 {
    let c = floor(p);
    let f = p - c;
    let s = f * f * (3.0 - 2.0 * f);
    let x = u32(c.x);
    let z = u32(c.y);
    let top = lerp(lattice(x, z, salt), lattice(x + 1u, z, salt), s.x);
    let bottom = lerp(lattice(x, z + 1u, salt), lattice(x + 1u, z + 1u, salt), s.x);
    return lerp(top, bottom, s.y);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i >= zero_n() { return; }
    var k = 0u;
    if i < live_n() {
        let s = u32(indices[i]);
        let g = vec4<f32>(ground[4u * s], ground[4u * s + 1u], ground[4u * s + 2u],
                          ground[4u * s + 3u]);
        let grove = value_noise(vec2<f32>(g.x, g.z) * params.groves, params.seed);
        if g.w < params.max_slope && grove > params.density { k = 1u; }
    }
    keep[i] = k;
}
