// One cube per visible instance, CUBES of them per drawn instance (vertex 8j + corner of
// instance b is corner `corner` of cube b * CUBES + j): cube i picks the visible ID, the ID
// picks the instance's sphere, the cube is inscribed in it. Cubes past the drawn count (the
// last batch's tail) or past the compacted capacity (an overflowing count) are moved outside
// the clip volume instead of reading past the IDs.

override CUBES: u32 = 32u;

struct Camera {
    view_projection: mat4x4<f32>,
    capacity: u32,
    batch: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> camera: Camera;
@group(0) @binding(1) var<storage, read> spheres: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> visible: array<u32>;
// The visible count (written by the batching dispatch from the draw record).
@group(0) @binding(3) var<storage, read> drawn: array<u32>;

struct Out {
    @builtin(position) position: vec4<f32>,
    @location(0) color: vec3<f32>,
    @location(1) @interpolate(flat) id: u32,
}

fn hash(x: u32) -> u32 {
    var h = x * 0x9e3779b1u;
    h = (h ^ (h >> 15u)) * 0x85ebca77u;
    return h ^ (h >> 13u);
}

@vertex
fn vs(@builtin(vertex_index) v: u32, @builtin(instance_index) b: u32) -> Out {
    var out: Out;
    let i = b * CUBES + (v >> 3u);
    if i >= min(drawn[0], camera.capacity) {
        out.position = vec4<f32>(2.0, 2.0, 2.0, 1.0);
        return out;
    }
    let id = visible[i];
    let s = spheres[id];
    let corner = vec3<f32>(f32(v & 1u), f32((v >> 1u) & 1u), f32((v >> 2u) & 1u)) * 2.0 - 1.0;
    let half = s.w * 0.57735;
    out.position = camera.view_projection * vec4<f32>(s.xyz + corner * half, 1.0);
    let h = hash(id);
    let base = vec3<f32>(f32(h & 255u), f32((h >> 8u) & 255u), f32((h >> 16u) & 255u)) / 255.0;
    out.color = (0.35 + 0.65 * base) * (0.7 + 0.3 * (corner.y * 0.5 + 0.5));
    out.id = id;
    return out;
}

@fragment
fn fs(in: Out) -> @location(0) vec4<f32> {
    return vec4<f32>(in.color, 1.0);
}

// The picking variant: (object ID, batch ID) into an IndexPickingTarget (rg32uint).
@fragment
fn fs_pick(in: Out) -> @location(0) vec2<u32> {
    return vec2<u32>(in.id, camera.batch);
}
