// TraceSceneProjection (scene/mod.rs; oracle cpu::scene_record): every span slot becomes one
// 128-byte GPUScene record (gpu_scene/record.rs in gpugraph-render), so the generic scene
// consumers (draw generation, resource groups, picking) see spans as scene objects:
//   object_id = span ID; flags = ACTIVE | span flags << 16; group_id = draw group;
//   geometry_id = name ID; box x = [start, end] ticks × units_per_tick, y = [row, row + 1]
//   (-1 for a hidden span), z = 0; sphere around the box; no command slot; identity transform.
// Slots past the loaded span count are written as holes (all zero).

#include "common.wgsl"

const WG: u32 = 256u;
const RECORD_WORDS: u32 = 32u;
const SCENE_ACTIVE: u32 = 1u;

struct Params {
    units_per_tick: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// The first 16 bytes of the frame's FrameParams (frame.wgsl).
struct FrameHead {
    span_count: u32,
    dependency_count: u32,
    thread_count: u32,
    focus: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> fp: FrameHead;
@group(0) @binding(2) var<storage, read> spans: array<u32>;
@group(0) @binding(3) var<storage, read> rows: array<u32>;
@group(0) @binding(4) var<storage, read_write> records: array<u32>;

fn ticks_f32(t: vec2<u32>) -> f32 {
    return f32(t.y) * 4294967296.0 + f32(t.x);
}

@compute @workgroup_size(WG)
fn project(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid, WG);
    if i >= arrayLength(&rows) {
        return;
    }
    var w: array<u32, 32>;
    if i < fp.span_count {
        var sw: array<u32, 8>;
        for (var k = 0u; k < 8u; k++) {
            sw[k] = spans[i * SPAN_WORDS + k];
        }
        let s = unpack_span(sw);
        let x0 = ticks_f32(s.start) * params.units_per_tick;
        let x1 = ticks_f32(span_end(s)) * params.units_per_tick;
        var y0 = -1.0;
        if rows[i] != NO_SPAN {
            y0 = f32(rows[i]);
        }
        let y1 = y0 + 1.0;
        let hx = (x1 - x0) * 0.5;
        w[0] = i;
        w[1] = SCENE_ACTIVE | (s.flags << 16u);
        w[2] = draw_group(s.flags);
        w[3] = s.group;
        w[4] = bitcast<u32>(x0 + hx);
        w[5] = bitcast<u32>(y0 + 0.5);
        w[6] = 0u;
        w[7] = bitcast<u32>(sqrt(hx * hx + 0.25));
        w[8] = bitcast<u32>(x0);
        w[9] = bitcast<u32>(y0);
        w[10] = 0u;
        w[11] = NO_SPAN;
        w[12] = bitcast<u32>(x1);
        w[13] = bitcast<u32>(y1);
        w[14] = 0u;
        w[15] = 0u;
        w[16] = bitcast<u32>(1.0);
        w[21] = bitcast<u32>(1.0);
        w[26] = bitcast<u32>(1.0);
        w[31] = bitcast<u32>(1.0);
    }
    for (var k = 0u; k < RECORD_WORDS; k++) {
        records[i * RECORD_WORDS + k] = w[k];
    }
}
