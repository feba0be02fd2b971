// Copies n words, cast by value: a Float column meeting an i32 or u32 binding is read as the
// numbers it holds (truncated toward zero, saturated to the type's range; NaN is 0), an Int or
// UInt column meeting an f32 binding likewise; i32 <-> u32 saturates (a negative number is 0).
struct Params { n: u32, mode: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i >= params.n { return; }
    let w = src[i];
    // NaN by its bits: shader compilers may fold `f != f` away.
    let nan = (w & 0x7fffffffu) > 0x7f800000u;
    var out = w;
    switch params.mode {
        case 1u: {
            let f = bitcast<f32>(w);
            if nan { out = 0u; }
            else if f >= 2147483647.0 { out = bitcast<u32>(2147483647i); }
            else if f <= -2147483648.0 { out = bitcast<u32>(-2147483647i - 1i); }
            else { out = bitcast<u32>(i32(f)); }
        }
        case 2u: {
            let f = bitcast<f32>(w);
            if nan || f <= 0.0 { out = 0u; }
            else if f >= 4294967295.0 { out = 4294967295u; }
            else { out = u32(f); }
        }
        case 3u: { out = bitcast<u32>(f32(bitcast<i32>(w))); }
        case 4u: { out = bitcast<u32>(f32(w)); }
        case 5u: { out = select(w, 0u, bitcast<i32>(w) < 0i); }
        case 6u: { out = min(w, 2147483647u); }
        default: {}
    }
    dst[i] = out;
}
