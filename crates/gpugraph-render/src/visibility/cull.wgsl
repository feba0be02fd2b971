// Visibility of one chunk of instances: bounds against the frustum, time range, LOD band and
// selection, intersected into a 0/1 flag per row (the source-aligned mask); `cull_ids` also
// writes each visible row's generated stable ID (its global row index). The compaction reads
// the values of selected rows only, so invisible rows' IDs are never written: with a few
// percent visible that saves 4 bytes per row of memory traffic.
//
// Optional inputs are selected by override constants; an absent input's binding holds the
// bounds view again (read-only) and is never read. Inputs may be strided (a field of
// interleaved records, e.g. a GPUScene's sphere): each has its own row stride in words.

override BOX_BOUNDS: bool = false;
override USE_TIME: bool = false;
override USE_LOD: bool = false;
override USE_SELECTION: bool = false;
const WORKGROUP_SIZE: u32 = 256u;

struct View {
    planes: array<vec4<f32>, 6>,
    eye: vec4<f32>,
    time: vec2<f32>,
    pad: vec2<f32>,
}

struct Chunk {
    rows: u32,
    id_base: u32,
    bounds_offset: u32,
    bounds_max_offset: u32,
    time_offset: u32,
    lod_offset: u32,
    selection_offset: u32,
    flags_offset: u32,
    ids_offset: u32,
    bounds_stride: u32,
    bounds_max_stride: u32,
    time_stride: u32,
    lod_stride: u32,
    selection_stride: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<uniform> chunk: Chunk;
@group(0) @binding(2) var<storage, read> bounds: array<f32>;
@group(0) @binding(3) var<storage, read> bounds_max: array<f32>;
@group(0) @binding(4) var<storage, read> time_range: array<f32>;
@group(0) @binding(5) var<storage, read> lod: array<f32>;
@group(0) @binding(6) var<storage, read> selection: array<u32>;
@group(0) @binding(7) var<storage, read_write> flags: array<u32>;
@group(0) @binding(8) var<storage, read_write> ids: array<u32>;

// Finite by bit pattern: comparisons against NaN may be folded away by fast-math compilers.
fn finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn finite3(v: vec3<f32>) -> bool {
    return finite(v.x) && finite(v.y) && finite(v.z);
}

fn load4(a: u32, row: u32) -> vec4<f32> {
    let i = a + row * chunk.bounds_stride;
    return vec4<f32>(bounds[i], bounds[i + 1u], bounds[i + 2u], bounds[i + 3u]);
}

fn load3(a: u32, row: u32) -> vec3<f32> {
    let i = a + row * chunk.bounds_stride;
    return vec3<f32>(bounds[i], bounds[i + 1u], bounds[i + 2u]);
}

fn load_max(row: u32) -> vec3<f32> {
    let i = chunk.bounds_max_offset + row * chunk.bounds_max_stride;
    return vec3<f32>(bounds_max[i], bounds_max[i + 1u], bounds_max[i + 2u]);
}

// The signed distance of `p` to `plane`, products and sums spelled out in the order the CPU
// oracle (`visibility/cpu.rs`) evaluates them in f32.
fn plane_distance(plane: vec4<f32>, p: vec3<f32>) -> f32 {
    return ((plane.x * p.x + plane.y * p.y) + plane.z * p.z) + plane.w;
}

fn visible(row: u32) -> bool {
    var center: vec3<f32>;
    if BOX_BOUNDS {
        // Three words: a box corner may be a float32x3 field followed by another field.
        let lo = load3(chunk.bounds_offset, row);
        let hi = load_max(row);
        if !(finite3(lo) && finite3(hi)) || any(hi < lo) {
            return false;
        }
        center = (lo + hi) * 0.5;
        for (var p = 0u; p < 6u; p += 1u) {
            let plane = view.planes[p];
            // The corner farthest along the plane normal: outside it, the whole box is.
            let corner = select(lo, hi, plane.xyz >= vec3<f32>(0.0));
            if !(plane_distance(plane, corner) >= 0.0) {
                return false;
            }
        }
    } else {
        let b = load4(chunk.bounds_offset, row);
        center = b.xyz;
        let radius = b.w;
        if !(finite3(center) && finite(radius)) || radius < 0.0 {
            return false;
        }
        // Kept on the boundary: tangent spheres (distance == -radius) stay visible.
        for (var p = 0u; p < 6u; p += 1u) {
            if !(plane_distance(view.planes[p], center) >= -radius) {
                return false;
            }
        }
    }
    if USE_TIME {
        let i = chunk.time_offset + row * chunk.time_stride;
        let start = time_range[i];
        let end = time_range[i + 1u];
        if !(start <= view.time.y && end >= view.time.x) {
            return false;
        }
    }
    if USE_LOD {
        // Squared distances: no square root, whose precision devices do not share.
        let i = chunk.lod_offset + row * chunk.lod_stride;
        let near = lod[i];
        let far = lod[i + 1u];
        let e = center - view.eye.xyz;
        let dd = (e.x * e.x + e.y * e.y) + e.z * e.z;
        if !((near <= 0.0 || dd >= near * near) && (far > 0.0 && dd < far * far)) {
            return false;
        }
    }
    if USE_SELECTION {
        if selection[chunk.selection_offset + row * chunk.selection_stride] == 0u {
            return false;
        }
    }
    return true;
}

fn row_of(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * WORKGROUP_SIZE + lid;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn cull(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = row_of(wid, nwg, lid);
    if row >= chunk.rows {
        return;
    }
    flags[chunk.flags_offset + row] = select(0u, 1u, visible(row));
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn cull_ids(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = row_of(wid, nwg, lid);
    if row >= chunk.rows {
        return;
    }
    let keep = visible(row);
    flags[chunk.flags_offset + row] = select(0u, 1u, keep);
    if keep {
        ids[chunk.ids_offset + row] = chunk.id_base + row;
    }
}
