// GpuSceneVisibility (`visibility.rs`; oracle `cpu::sphere_visibility`). Includes
// `record.wgsl`. Two nodes:
//   reset (one invocation): the visible count and overflow to 0;
//   cull (ROWS_PER_INVOCATION slots per invocation, a tile of TILE_ROWS slots per
//        workgroup): a live slot whose sphere meets the frustum is appended to the visible
//        list: each invocation keeps its visible slots as a bit mask, takes a place for them
//        in its workgroup's block from one workgroup atomic, and the block comes from one
//        atomic on the count per tile. The list holds each visible slot once, in no
//        particular order (the draw generation's lowest-row-wins claim does not depend on
//        it); no mask is written.
// Why tiles of 4,096 slots: every workgroup adding its block to the one count word is an
// atomic on one address, which the GPU serializes (62,500 workgroups of 256 slots at 16M
// records took 0.65 ms on an H100, where reading the 256 MB of bounds needs ~0.1-0.2 ms);
// 16 slots per invocation make it 3,907 atomics and give each invocation 16 independent
// loads in flight. The loads are unconditional (clamped to the last slot) and the sphere
// test branch-free, so the compiler can issue them all before the first test.
// With PACKED the slot's sphere and liveness come from the packed bounds view (16 bytes a
// slot, `bounds.rs` states the encoding), else from the record's `flags` and `sphere` words.

#include "gpu_scene/record.wgsl"

override PACKED: bool = true;
const WORKGROUP_SIZE: u32 = 256u;
// At most 32: an invocation's visible slots are the bits of one u32.
const ROWS_PER_INVOCATION: u32 = 16u;
const TILE_ROWS: u32 = WORKGROUP_SIZE * ROWS_PER_INVOCATION;
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

// Branch-free (`&` does not short-circuit): the same f32 operations and decisions as the
// oracle, with no control flow that would keep the next slot's load waiting.
fn sphere_visible(b: vec4<u32>) -> bool {
    let center = bitcast<vec3<f32>>(b.xyz);
    let radius = bitcast<f32>(b.w);
    var keep = finite(center.x) & finite(center.y) & finite(center.z) & finite(radius)
        & !(radius < 0.0);
    // Kept on the boundary: tangent spheres (distance == -radius) stay visible.
    for (var p = 0u; p < 6u; p += 1u) {
        keep = keep & (plane_distance(view.planes[p], center) >= -radius);
    }
    return keep;
}

// Slot `row`'s bounds as the sphere test reads them (packed: `[x, y, z, radius]` words) and
// whether it is live.
fn slot_bounds(row: u32) -> vec4<u32> {
    if PACKED {
        return bounds[params.bounds_base + row];
    }
    let at = params.record_base + row * RECORD_WORDS;
    let s = SPHERE_WORD;
    // The record's sphere, its liveness in the sign bit of w as the packed view stores it
    // (a hole gets w = 0, which is never live).
    let w = records[at + s + 3u];
    let live = records[at + FLAGS_WORD] != 0u;
    let radius = select(w ^ SIGN, SIGN, (w & ~SIGN) == 0u);
    return vec4<u32>(
        records[at + s], records[at + s + 1u], records[at + s + 2u], select(0u, radius, live)
    );
}

fn visible(b: vec4<u32>) -> bool {
    return ((b.w & SIGN) != 0u) & sphere_visible(vec4<u32>(b.xyz, b.w ^ SIGN));
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
    // Slot k of this invocation: first + k * WORKGROUP_SIZE (each load instruction of the
    // workgroup reads consecutive rows).
    let first = (wid.y * nwg.x + wid.x) * TILE_ROWS + lid;
    let last = params.rows - 1u;
    var mask = 0u;
    for (var k = 0u; k < ROWS_PER_INVOCATION; k += 1u) {
        let row = first + k * WORKGROUP_SIZE;
        let b = slot_bounds(min(row, last));
        mask |= select(0u, 1u << k, (row <= last) & visible(b));
    }
    let mine = countOneBits(mask);
    if lid == 0u {
        atomicStore(&tally, 0u);
    }
    workgroupBarrier();
    var place = 0u;
    if mine != 0u {
        place = atomicAdd(&tally, mine);
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
    var at = block_base + place;
    while mask != 0u {
        let k = firstTrailingBit(mask);
        mask &= mask - 1u;
        if at < params.output_capacity {
            output[params.output_base + at] = first + k * WORKGROUP_SIZE;
        }
        at += 1u;
    }
}
