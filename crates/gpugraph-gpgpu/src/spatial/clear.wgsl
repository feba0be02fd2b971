// Zeroes `rows` uint32 words of a view (outputs cleared before they accumulate).

struct ClearParams {
    off: u32,
    rows: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: ClearParams;
@group(0) @binding(1) var<storage, read_write> target_words: array<u32>;

@compute @workgroup_size(WG)
fn clear(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * WG + lid;
    if (i < params.rows) {
        target_words[params.off + i] = 0u;
    }
}
