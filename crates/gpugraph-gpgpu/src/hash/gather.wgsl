// Row gather: output row j = source row indices[j] (WIDTH u32 words per row) for
// j < min(count, capacity); an index of MISS writes zero words and a 0 validity flag.
#include "shared/dispatch.wgsl"

const MISS: u32 = 0xffffffffu;

struct Params {
    capacity: u32,
    count_offset: u32,
    index_offset: u32,
    source_offset: u32,
    output_offset: u32,
    valid_offset: u32,
    source_valid_offset: u32,
    source_rows: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> indices: array<u32>;
@group(0) @binding(2) var<storage, read> source: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;
#ifdef COUNT
@group(0) @binding(4) var<storage, read> count: array<u32>;
#endif
#ifdef VALID_OUT
@group(0) @binding(5) var<storage, read_write> valid_out: array<u32>;
#endif
#ifdef SOURCE_VALID
@group(0) @binding(6) var<storage, read> source_valid: array<u32>;
#endif

@compute @workgroup_size(WG_SIZE)
fn gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let j = linear_workgroup(wid, nwg) * WG_SIZE + lid;
    var n = params.capacity;
#ifdef COUNT
    n = min(n, count[params.count_offset]);
#endif
    if j >= n {
        return;
    }
    let index = indices[params.index_offset + j];
    // An index past the source is treated as a miss: never read outside the source view.
    let hit = index != MISS && index < params.source_rows;
    for (var w = 0u; w < WIDTH; w += 1u) {
        var word = 0u;
        if hit {
            word = source[params.source_offset + index * WIDTH + w];
        }
        output[params.output_offset + j * WIDTH + w] = word;
    }
#ifdef VALID_OUT
    var ok = hit;
#ifdef SOURCE_VALID
    if hit {
        ok = source_valid[params.source_valid_offset + index] != 0u;
    }
#endif
    valid_out[params.valid_offset + j] = select(0u, 1u, ok);
#endif
}
