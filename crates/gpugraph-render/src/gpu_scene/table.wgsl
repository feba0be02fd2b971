// The table scene's record producer (`table.rs`; oracle `GpuTableScene::cpu_records`).
// Includes `record.wgsl`. One dispatch per nonempty batch: row `r` of the batch's
// coordinate columns becomes record `r` of the batch's partition, in canonical layout:
//   object_id     first_record + r (the table's global row)
//   flags         ACTIVE
//   group_id      the batch index (no group column) or the group column's value mod `groups`
//   geometry_id   0 (the renderer's one box)
//   sphere/aabb   the point ± radius, or the box (min/max per axis, each half extent at least
//                 radius); the sphere circumscribes the box
//   command_slot  group window g·rows + r (window 0 without a group column)
//   transform     translate(center) · scale(half extents): the unit box [-1, 1]³ onto the box
// Non-finite coordinates give non-finite bounds, which no frustum test passes.

#include "gpu_scene/record.wgsl"

const WORKGROUP_SIZE: u32 = 256u;
const GROUP_NONE: u32 = 0u;
const GROUP_U32: u32 = 1u;
const GROUP_I32: u32 = 2u;
const GROUP_F32: u32 = 3u;

struct Params {
    rows: u32,
    first_record: u32,
    batch: u32,
    groups: u32,
    group_kind: u32,
    has_z: u32,
    has_box: u32,
    has_z_max: u32,
    x_base: u32,
    y_base: u32,
    z_base: u32,
    x_max_base: u32,
    y_max_base: u32,
    z_max_base: u32,
    group_base: u32,
    record_base: u32,
    radius: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(2) var<storage, read> ys: array<f32>;
@group(0) @binding(3) var<storage, read> zs: array<f32>;
@group(0) @binding(4) var<storage, read> x_maxs: array<f32>;
@group(0) @binding(5) var<storage, read> y_maxs: array<f32>;
@group(0) @binding(6) var<storage, read> z_maxs: array<f32>;
@group(0) @binding(7) var<storage, read> group_words: array<u32>;
@group(0) @binding(8) var<storage, read_write> records: array<u32>;

fn group_of(r: u32) -> u32 {
    let k = max(params.groups, 1u);
    switch params.group_kind {
        case GROUP_U32: {
            return group_words[params.group_base + r] % k;
        }
        case GROUP_I32: {
            let v = bitcast<i32>(group_words[params.group_base + r]);
            return u32(((v % i32(k)) + i32(k)) % i32(k));
        }
        case GROUP_F32: {
            let f = floor(bitcast<f32>(group_words[params.group_base + r]));
            // NaN and values past i32 fall into group 0.
            if !(abs(f) < 2147483648.0) {
                return 0u;
            }
            let v = i32(f);
            return u32(((v % i32(k)) + i32(k)) % i32(k));
        }
        default: {
            return params.batch;
        }
    }
}

fn put(at: u32, v: f32) {
    records[at] = bitcast<u32>(v);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn produce(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let r = linear_row(wid, nwg, lid, WORKGROUP_SIZE);
    if r >= params.rows {
        return;
    }
    var a = vec3<f32>(xs[params.x_base + r], ys[params.y_base + r], 0.0);
    if params.has_z != 0u {
        a.z = zs[params.z_base + r];
    }
    var lo = a;
    var hi = a;
    if params.has_box != 0u {
        var b = vec3<f32>(x_maxs[params.x_max_base + r], y_maxs[params.y_max_base + r], a.z);
        if params.has_z_max != 0u {
            b.z = z_maxs[params.z_max_base + r];
        }
        lo = min(a, b);
        hi = max(a, b);
    }
    let center = (lo + hi) * 0.5;
    let half = max((hi - lo) * 0.5, vec3<f32>(params.radius));
    lo = center - half;
    hi = center + half;
    let g = group_of(r);
    let slot = select(0u, g, params.group_kind != GROUP_NONE) * params.rows + r;
    let at = params.record_base + r * RECORD_WORDS;
    records[at + 0u] = params.first_record + r;
    records[at + 1u] = ACTIVE_FLAG;
    records[at + 2u] = g;
    records[at + 3u] = 0u;
    put(at + 4u, center.x);
    put(at + 5u, center.y);
    put(at + 6u, center.z);
    put(at + 7u, length(half));
    put(at + 8u, lo.x);
    put(at + 9u, lo.y);
    put(at + 10u, lo.z);
    records[at + 11u] = slot;
    put(at + 12u, hi.x);
    put(at + 13u, hi.y);
    put(at + 14u, hi.z);
    records[at + 15u] = 0u;
    // Column-major translate(center) · scale(half).
    for (var w = 16u; w < 32u; w++) {
        records[at + w] = 0u;
    }
    put(at + 16u, half.x);
    put(at + 21u, half.y);
    put(at + 26u, half.z);
    put(at + 28u, center.x);
    put(at + 29u, center.y);
    put(at + 30u, center.z);
    put(at + 31u, 1.0);
}
