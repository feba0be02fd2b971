// GpuSceneVisibility (`visibility.rs`; oracle `cpu::sphere_visibility`). Included after
// `record.wgsl`. Two nodes:
//   reset (one invocation): the visible count and overflow to 0;
//   cull (one invocation per slot): a live slot whose sphere meets the frustum is appended
//        to the visible list: a place in its workgroup's block from a workgroup atomic, the
//        block from one atomic on the count per workgroup. The list holds each visible slot
//        once, in no particular order (the draw generation's lowest-row-wins claim does not
//        depend on it); no mask is written.
// With PACKED the slot's sphere and liveness come from the packed bounds view (16 bytes a
// slot, `bounds.rs` states the encoding), else from the record's `flags` and `sphere` words.

override PACKED: bool = true;
const WORKGROUP_SIZE: u32 = 256u;
const SIGN: u32 = 0x80000000u;
const SPHERE_WORD: u32 = 4u;

struct View {
    planes: array<vec4<f32>, 6>,
    eye: vec4<f32>,
    time: vec2<f32>,
    pad: vec2<f32>,
}

struct Params {
    rows: u32,
    bounds_base: u32,
    record_base: u32,
    output_base: u32,
    output_capacity: u32,
    count_base: u32,
    overflow_base: u32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read> bounds: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> records: array<u32>;
@group(0) @binding(4) var<storage, read_write> output: array<u32>;
@group(0) @binding(5) var<storage, read_write> count: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> overflow: array<atomic<u32>>;

var<workgroup> tally: atomic<u32>;
var<workgroup> block_base: u32;

// Finite by bit pattern: comparisons against NaN may be folded away by fast-math compilers.
fn finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

// The f32 operations and their order of `visibility/cull.wgsl` (the oracle's).
fn plane_distance(plane: vec4<f32>, p: vec3<f32>) -> f32 {
    return ((plane.x * p.x + plane.y * p.y) + plane.z * p.z) + plane.w;
}

fn sphere_visible(b: vec4<u32>) -> bool {
    let center = bitcast<vec3<f32>>(b.xyz);
    let radius = bitcast<f32>(b.w);
    if !(finite(center.x) && finite(center.y) && finite(center.z) && finite(radius))
        || radius < 0.0 {
        return false;
    }
    // Kept on the boundary: tangent spheres (distance == -radius) stay visible.
    for (var p = 0u; p < 6u; p += 1u) {
        if !(plane_distance(view.planes[p], center) >= -radius) {
            return false;
        }
    }
    return true;
}

fn visible(row: u32) -> bool {
    if PACKED {
        let b = bounds[params.bounds_base + row];
        if (b.w & SIGN) == 0u {
            return false;
        }
        return sphere_visible(vec4<u32>(b.xyz, b.w ^ SIGN));
    }
    let at = params.record_base + row * RECORD_WORDS;
    if records[at + FLAGS_WORD] == 0u {
        return false;
    }
    let s = SPHERE_WORD;
    return sphere_visible(
        vec4<u32>(records[at + s], records[at + s + 1u], records[at + s + 2u], records[at + s + 3u])
    );
}

@compute @workgroup_size(1)
fn reset() {
    atomicStore(&count[params.count_base], 0u);
    atomicStore(&overflow[params.overflow_base], 0u);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn cull(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = linear_row(wid, nwg, lid, WORKGROUP_SIZE);
    let keep = row < params.rows && visible(row);
    if lid == 0u {
        atomicStore(&tally, 0u);
    }
    workgroupBarrier();
    var place = 0u;
    if keep {
        place = atomicAdd(&tally, 1u);
    }
    workgroupBarrier();
    let n = atomicLoad(&tally);
    if lid == 0u && n != 0u {
        let base = atomicAdd(&count[params.count_base], n);
        block_base = base;
        if base + n > params.output_capacity {
            atomicStore(&overflow[params.overflow_base], 1u);
        }
    }
    workgroupBarrier();
    if keep && block_base + place < params.output_capacity {
        output[params.output_base + block_base + place] = row;
    }
}
