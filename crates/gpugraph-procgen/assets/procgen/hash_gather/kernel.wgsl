// hash_gather: walk the buckets of the 27 cells around each live query; list close points.
struct Params { n: u32, cell: f32, radius: f32, table_size: u32, pairs_capacity: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> queries: array<f32>;
@group(0) @binding(2) var<storage, read> points: array<f32>;
@group(0) @binding(3) var<storage, read> heads: array<u32>;
@group(0) @binding(4) var<storage, read> next: array<u32>;
@group(0) @binding(5) var<storage, read_write> pairs: array<u32>;
@group(0) @binding(6) var<storage, read_write> pairs_count: array<atomic<u32>>;
// @when COUNT device
@group(0) @binding(7) var<storage, read> domain_count: array<u32>;
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

fn point(j: u32) -> vec3<f32> {
    return vec3<f32>(points[3u * j], points[3u * j + 1u], points[3u * j + 2u]);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i >= live_n() { return; }
    let q = vec3<f32>(queries[3u * i], queries[3u * i + 1u], queries[3u * i + 2u]);
    let qc = vec3<i32>(floor(q / params.cell));
    let npoints = arrayLength(&next);
    for (var dz = -1; dz <= 1; dz++) {
        for (var dy = -1; dy <= 1; dy++) {
            for (var dx = -1; dx <= 1; dx++) {
                let c = qc + vec3<i32>(dx, dy, dz);
                var link = heads[bucket(c)];
                // A list is at most every point long; the bound keeps a corrupt list finite.
                for (var steps = 0u; link != 0u && steps < npoints; steps++) {
                    let j = link - 1u;
                    link = next[j];
                    let p = point(j);
                    // Only the points of cell c: two cells sharing a bucket list nothing twice.
                    if any(vec3<i32>(floor(p / params.cell)) != c) { continue; }
                    let d = p - q;
                    if dot(d, d) <= params.radius * params.radius {
                        let k = atomicAdd(&pairs_count[0], 1u);
                        if k < params.pairs_capacity {
                            pairs[2u * k] = i;
                            pairs[2u * k + 1u] = j;
                        }
                    }
                }
            }
        }
    }
}
