// predicate_keep: the delete-by-predicate flags of the example graph.
struct Params { n: u32, threshold: f32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> points: array<f32>;
@group(0) @binding(2) var<storage, read_write> keep: array<u32>;
// @when COUNT device
@group(0) @binding(3) var<storage, read> domain_count: array<u32>;
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
    var k = 0u;
    if i < live_n() {
        let s = points[3u * i] + points[3u * i + 1u] + points[3u * i + 2u];
        k = select(0u, 1u, s < params.threshold);
    }
    keep[i] = k;
}
