// `procgen run --render`: a height field shaded by height and normal, and instanced trees
// (a trunk and two cones each) standing at (x, y, z) with a scale, from the graph's columns.

struct View {
    view_projection: mat4x4<f32>,
    eye: vec4<f32>,
    cells: u32,
    size: f32,
    relief: f32,
    water: f32,
}

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<storage, read> heights: array<f32>;
@group(0) @binding(2) var<storage, read> trees: array<vec4<f32>>;

struct Out {
    @builtin(position) position: vec4<f32>,
    @location(0) albedo: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) world: vec3<f32>,
}

const SKY = vec3<f32>(0.64, 0.76, 0.88);
const SUN = vec3<f32>(-0.45, 0.75, 0.48);
const SEGMENTS: u32 = 10u;

fn height_at(x: i32, z: i32) -> f32 {
    let last = i32(view.cells) - 1;
    let cx = u32(clamp(x, 0, last));
    let cz = u32(clamp(z, 0, last));
    return heights[cz * view.cells + cx];
}

fn out_of(world: vec3<f32>, normal: vec3<f32>, albedo: vec3<f32>) -> Out {
    var o: Out;
    o.position = view.view_projection * vec4<f32>(world, 1.0);
    o.albedo = albedo;
    o.normal = normal;
    o.world = world;
    return o;
}

// The block's four sides: from the surface (the lake's level over water) down to a base below
// the water, quads × 6 vertices a side, after the surface's quads² × 6.
fn side(k: u32, quads: u32, spacing: f32) -> Out {
    let edge = k / (quads * 6u);
    var along = array<u32, 6>(0u, 1u, 1u, 0u, 1u, 0u);
    var up = array<u32, 6>(1u, 1u, 0u, 1u, 0u, 0u);
    let t = i32((k / 6u) % quads + along[k % 6u]);
    let last = i32(quads);
    var x = t;
    var z = 0;
    var normal = vec3<f32>(0.0, 0.0, -1.0);
    if edge == 1u {
        z = last;
        normal = vec3<f32>(0.0, 0.0, 1.0);
    } else if edge == 2u {
        x = 0;
        z = t;
        normal = vec3<f32>(-1.0, 0.0, 0.0);
    } else if edge == 3u {
        x = last;
        z = t;
        normal = vec3<f32>(1.0, 0.0, 0.0);
    }
    let top = up[k % 6u] == 1u;
    let surface = max(height_at(x, z), view.water);
    let y = select(min(view.water, surface) - 0.18 * view.relief, surface, top);
    let albedo = select(vec3<f32>(0.36, 0.27, 0.19), vec3<f32>(0.62, 0.48, 0.34), top);
    return out_of(vec3<f32>(f32(x) * spacing, y, f32(z) * spacing), normal, albedo);
}

@vertex
fn vs_terrain(@builtin(vertex_index) vi: u32) -> Out {
    let quads = view.cells - 1u;
    if vi >= quads * quads * 6u {
        return side(vi - quads * quads * 6u, quads, view.size / f32(quads));
    }
    let quad = vi / 6u;
    var corner_x = array<u32, 6>(0u, 1u, 1u, 0u, 1u, 0u);
    var corner_z = array<u32, 6>(0u, 0u, 1u, 0u, 1u, 1u);
    let x = i32(quad % quads + corner_x[vi % 6u]);
    let z = i32(quad / quads + corner_z[vi % 6u]);
    let spacing = view.size / f32(quads);
    let h = height_at(x, z);
    let dx = (height_at(x + 1, z) - height_at(x - 1, z)) / (2.0 * spacing);
    let dz = (height_at(x, z + 1) - height_at(x, z - 1)) / (2.0 * spacing);
    var normal = normalize(vec3<f32>(-dx, 1.0, -dz));
    let rel = h / view.relief;
    let sand = vec3<f32>(0.78, 0.71, 0.50);
    let grass = mix(vec3<f32>(0.36, 0.50, 0.21), vec3<f32>(0.50, 0.53, 0.30),
                    smoothstep(0.2, 0.6, rel));
    let rock = vec3<f32>(0.47, 0.44, 0.41);
    let snow = vec3<f32>(0.94, 0.95, 0.97);
    var albedo = mix(sand, grass, smoothstep(view.water + 0.3, view.water + 1.2, h));
    albedo = mix(albedo, rock, smoothstep(0.72, 0.62, normal.y));
    albedo = mix(albedo, snow, smoothstep(0.70, 0.80, rel) * smoothstep(0.55, 0.7, normal.y));
    var y = h;
    if h < view.water {
        // The lake: a flat surface, darker over deeper ground.
        let depth = clamp((view.water - h) / 4.0, 0.0, 1.0);
        albedo = mix(vec3<f32>(0.22, 0.45, 0.58), vec3<f32>(0.07, 0.20, 0.34), depth);
        normal = vec3<f32>(0.0, 1.0, 0.0);
        y = view.water;
    }
    return out_of(vec3<f32>(f32(x) * spacing, y, f32(z) * spacing), normal, albedo);
}

// Tree vertices: SEGMENTS × 6 for the trunk (a cylinder), then SEGMENTS × 3 for each of two
// cones (their sides; seen from above the bases are hidden).
@vertex
fn vs_tree(@builtin(vertex_index) vi: u32, @builtin(instance_index) ii: u32) -> Out {
    let t = trees[ii];
    let s = t.w;
    let trunk = SEGMENTS * 6u;
    var a0: f32;
    var a1: f32;
    var local: vec3<f32>;
    var normal: vec3<f32>;
    var albedo: vec3<f32>;
    let step = 6.2831853 / f32(SEGMENTS);
    if vi < trunk {
        let seg = vi / 6u;
        var side = array<u32, 6>(0u, 1u, 1u, 0u, 1u, 0u);
        var top = array<u32, 6>(0u, 0u, 1u, 0u, 1u, 1u);
        let a = (f32(seg) + f32(side[vi % 6u])) * step;
        let r = 0.09 * s;
        local = vec3<f32>(r * cos(a), f32(top[vi % 6u]) * 0.6 * s - 0.1 * s, r * sin(a));
        normal = vec3<f32>(cos(a), 0.0, sin(a));
        albedo = vec3<f32>(0.30, 0.20, 0.12);
    } else {
        let k = vi - trunk;
        let cone = k / (SEGMENTS * 3u);
        let seg = (k / 3u) % SEGMENTS;
        let corner = k % 3u;
        let base = select(0.35, 1.0, cone == 1u) * s;
        let radius = select(0.62, 0.45, cone == 1u) * s;
        let tall = select(1.35, 1.15, cone == 1u) * s;
        let a = (f32(seg) + select(f32(corner - 1u), 0.5, corner == 0u)) * step;
        if corner == 0u {
            local = vec3<f32>(0.0, base + tall, 0.0);
        } else {
            local = vec3<f32>(radius * cos(a), base, radius * sin(a));
        }
        normal = normalize(vec3<f32>(tall * cos(a), radius, tall * sin(a)));
        // A little variety from the instance: darker and lighter greens.
        let shade = f32((ii * 2654435761u) >> 24u) / 255.0;
        albedo = mix(vec3<f32>(0.05, 0.26, 0.11), vec3<f32>(0.09, 0.36, 0.15), shade);
    }
    return out_of(t.xyz + local, normal, albedo);
}

@fragment
fn fs(in: Out) -> @location(0) vec4<f32> {
    let n = normalize(in.normal);
    let light = 0.38 + 0.78 * max(dot(n, normalize(SUN)), 0.0);
    let lit = in.albedo * light;
    let dist = length(in.world - view.eye.xyz);
    let fog = 1.0 - exp(-dist * 0.0022);
    return vec4<f32>(mix(lit, SKY, fog), 1.0);
}
