// forest/place: one tree instance per kept candidate.
struct Params { n: u32, tree: f32, seed: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ground: array<f32>;
@group(0) @binding(2) var<storage, read> outer: array<i32>;
@group(0) @binding(3) var<storage, read> inner: array<i32>;
@group(0) @binding(4) var<storage, read_write> trees: array<f32>;
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

fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i >= zero_n() { return; }
    var t = vec4<f32>(0.0);
    if i < live_n() {
        let s = u32(outer[u32(inner[i])]);
        let r = f32(pcg(s ^ pcg(params.seed)) >> 8u) / 16777216.0;
        t = vec4<f32>(ground[4u * s], ground[4u * s + 1u], ground[4u * s + 2u],
                      params.tree * (0.7 + 0.6 * r));
    }
    trees[4u * i] = t.x;
    trees[4u * i + 1u] = t.y;
    trees[4u * i + 2u] = t.z;
    trees[4u * i + 3u] = t.w;
}
