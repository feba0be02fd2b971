// forest/terrain: a value-noise height field (see bindings.yaml). The CPU twin is
// `terrain_height` in crates/gpugraph-cli/tests/procgen.rs: keep the two in step.
struct Params { n: u32, cells: u32, relief: f32, seed: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> height: array<f32>;

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
    if i >= params.n { return; }
    let last = f32(max(params.cells, 2u) - 1u);
    let u = f32(i % params.cells) / last;
    let v = f32(i / params.cells) / last;
    var q = vec2<f32>(u, v) * 3.0 + 4.0;
    var amp = 0.5;
    var e = 0.0;
    for (var o = 0u; o < 5u; o = o + 1u) {
        e = e + amp * value_noise(q, params.seed + o * 1013u);
        q = q * 2.0;
        amp = amp * 0.5;
    }
    let d = u - 0.5 - 0.25 * (v - 0.5);
    let valley = max(1.0 - d * d * 14.0, 0.0);
    height[i] = params.relief * (1.3 * e + 0.45 * v * v - 0.35 * valley - 0.35);
}
