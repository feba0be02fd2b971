// The explorer's renderer (application policy, not part of GPUScene): one indexed draw per
// generated command; `instance_index` is the command's firstInstance, the scene row, whose
// transform places the geometry and whose object ID the pick pass writes. Included after the
// library's `record.wgsl` (SceneRecord).

struct Camera {
    view_projection: mat4x4<f32>,
}

@group(0) @binding(0) var<uniform> camera: Camera;
@group(0) @binding(1) var<storage, read> records: array<SceneRecord>;
@group(1) @binding(0) var<uniform> material: vec4<f32>;

struct VOut {
    @builtin(position) position: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) @interpolate(flat) object_id: u32,
}

@vertex
fn vs(
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @builtin(instance_index) row: u32,
) -> VOut {
    let r = records[row];
    var out: VOut;
    out.position = camera.view_projection * (r.transform * vec4<f32>(position, 1.0));
    out.normal = normalize((r.transform * vec4<f32>(normal, 0.0)).xyz);
    out.object_id = r.object_id;
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
    return vec2<u32>(in.object_id, 0u);
}
