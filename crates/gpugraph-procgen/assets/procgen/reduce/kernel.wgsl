// reduce: out[s] = fold of src over segment s; the last live segment ends at the live count and
// a segment past the live segments is not written.
struct Params { n: u32, starts_len: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> starts: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// @when COUNT device
@group(0) @binding(4) var<storage, read> domain_count: array<u32>;
// @end
// @when SEGMENTS device
@group(0) @binding(5) var<storage, read> segment_count: array<u32>;
// @end

fn zero_n() -> u32 { return params.n; }

fn live_n() -> u32 {
    var live = zero_n();
    // @when COUNT device
    live = min(domain_count[0], zero_n());
    // @end
    return live;
}

fn live_segments() -> u32 {
    var s = params.starts_len;
    // @when SEGMENTS device
    s = min(segment_count[0], params.starts_len);
    // @end
    return s;
}

fn clamp_start(x: i32, live: u32) -> u32 {
    return min(u32(max(x, 0)), live);
}

fn identity() -> f32 {
    // @when OP min
    return bitcast<f32>(0x7f800000u);
    // @end
    // @when OP max
    return bitcast<f32>(0xff800000u);
    // @end
    // @when OP sum
    return 0.0;
    // @end
}

fn fold(a: f32, b: f32) -> f32 {
    // @when OP min
    return min(a, b);
    // @end
    // @when OP max
    return max(a, b);
    // @end
    // @when OP sum
    return a + b;
    // @end
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    let live = live_n();
    let count = live_segments();
    for (var s = lid; s < count; s += 256u) {
        let a = clamp_start(starts[s], live);
        var b = live;
        if s + 1u < count { b = clamp_start(starts[s + 1u], live); }
        var acc = identity();
        for (var i = a; i < b; i++) { acc = fold(acc, src[i]); }
        out[s] = acc;
    }
}
