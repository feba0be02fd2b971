// forest/height_keep: candidates on the ground, kept between the shore and the tree line. The
// CPU twin is `forest_oracle` in crates/gpugraph-cli/tests/procgen.rs.
struct Params { n: u32, cells: u32, size: f32, water: f32, shore: f32, treeline: f32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> points: array<f32>;
@group(0) @binding(2) var<storage, read> height: array<f32>;
@group(0) @binding(3) var<storage, read_write> ground: array<f32>;
@group(0) @binding(4) var<storage, read_write> keep: array<u32>;
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

fn sample(x: u32, z: u32) -> f32 { return height[z * params.cells + x]; }

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i >= zero_n() { return; }
    var g = vec4<f32>(0.0);
    var k = 0u;
    if i < live_n() {
        let spacing = params.size / f32(params.cells - 1u);
        let x = points[3u * i];
        let z = points[3u * i + 1u];
        let gx = x / spacing;
        let gz = z / spacing;
        let cx = min(u32(floor(gx)), params.cells - 2u);
        let cz = min(u32(floor(gz)), params.cells - 2u);
        let fx = gx - f32(cx);
        let fz = gz - f32(cz);
        let h00 = sample(cx, cz);
        let h10 = sample(cx + 1u, cz);
        let h01 = sample(cx, cz + 1u);
        let h11 = sample(cx + 1u, cz + 1u);
        let near = h00 + (h10 - h00) * fx;
        let far = h01 + (h11 - h01) * fx;
        let y = near + (far - near) * fz;
        let dx = ((h10 - h00) * (1.0 - fz) + (h11 - h01) * fz) / spacing;
        let dz = (far - near) / spacing;
        g = vec4<f32>(x, y, z, sqrt(dx * dx + dz * dz));
        if y > params.water + params.shore && y < params.treeline { k = 1u; }
    }
    ground[4u * i] = g.x;
    ground[4u * i + 1u] = g.y;
    ground[4u * i + 2u] = g.z;
    ground[4u * i + 3u] = g.w;
    keep[i] = k;
}
