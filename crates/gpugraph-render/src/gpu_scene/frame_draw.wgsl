// The scene frame's renderer (spec 6.3): one indexed draw per generated command;
// `instance_index` is the command's firstInstance, the record's slot in its layer, whose
// transform places the geometry and whose object ID the pick pass writes. Records are read as
// words from `layer.record_base` (a table partition starts anywhere 4-byte aligned inside its
// batch's buffer, which a binding offset cannot express). Word layout: record.wgsl.

struct Camera {
    view_projection: mat4x4<f32>,
}

struct Layer {
    record_base: u32,
    index: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> camera: Camera;
@group(0) @binding(1) var<storage, read> records: array<u32>;
@group(0) @binding(2) var<uniform> layer: Layer;
@group(1) @binding(0) var<uniform> material: vec4<f32>;

struct VOut {
    @builtin(position) position: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) @interpolate(flat) object_id: u32,
}

fn column(base: u32, c: u32) -> vec4<f32> {
    let w = base + 16u + 4u * c;
    return vec4<f32>(
        bitcast<f32>(records[w]),
        bitcast<f32>(records[w + 1u]),
        bitcast<f32>(records[w + 2u]),
        bitcast<f32>(records[w + 3u]),
    );
}

@vertex
fn vs(
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @builtin(instance_index) row: u32,
) -> VOut {
    let base = layer.record_base + row * 32u;
    let transform = mat4x4<f32>(column(base, 0u), column(base, 1u), column(base, 2u), column(base, 3u));
    var out: VOut;
    out.position = camera.view_projection * (transform * vec4<f32>(position, 1.0));
    out.normal = normalize((transform * vec4<f32>(normal, 0.0)).xyz + vec3<f32>(0.0, 1e-6, 0.0));
    out.object_id = records[base];
    return out;
}

@fragment
fn fs(in: VOut) -> @location(0) vec4<f32> {
    let light = normalize(vec3<f32>(0.4, 0.8, 0.3));
    let lambert = 0.35 + 0.65 * max(dot(normalize(in.normal), light), 0.0);
    return vec4<f32>(material.rgb * lambert, 1.0);
}

@fragment
fn fs_pick(in: VOut) -> @location(0) vec2<u32> {
    return vec2<u32>(in.object_id, layer.index);
}
