// hash_hook: push each live point onto its cell's bucket list.
struct Params { n: u32, cell: f32, table_size: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> points: array<f32>;
@group(0) @binding(2) var<storage, read_write> heads: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> next: array<u32>;
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

fn bucket(c: vec3<i32>) -> u32 {
    let h = u32(c.x) * 73856093u ^ u32(c.y) * 19349663u ^ u32(c.z) * 83492791u;
    return h & (params.table_size - 1u);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i >= live_n() { return; }
    let p = vec3<f32>(points[3u * i], points[3u * i + 1u], points[3u * i + 2u]);
    let c = vec3<i32>(floor(p / params.cell));
    next[i] = atomicExchange(&heads[bucket(c)], i + 1u);
}
