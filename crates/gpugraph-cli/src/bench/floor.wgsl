// The bandwidth floor: a streaming copy of vec4<u32> words, grid-stride, with UNROLL independent
// loads in flight per invocation before their stores (memory-level parallelism is what a
// streaming kernel is short of, not arithmetic). `fill` writes a hashed pattern so probes never
// time zeros (which some memory systems compress).

override WORKGROUP: u32 = 256u;

struct Params {
    // vec4 words to copy or fill.
    words: u32,
    // Pattern seed (fill only).
    seed: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(WORKGROUP)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let threads = groups.x * WORKGROUP;
    let n = params.words;
    var i = gid.x;
    // Four loads issued before any store; the tail loop takes what is left.
    loop {
        if i + 3u * threads >= n || i + 3u * threads < i {
            break;
        }
        let a = src[i];
        let b = src[i + threads];
        let c = src[i + 2u * threads];
        let d = src[i + 3u * threads];
        dst[i] = a;
        dst[i + threads] = b;
        dst[i + 2u * threads] = c;
        dst[i + 3u * threads] = d;
        i += 4u * threads;
    }
    loop {
        if i >= n {
            break;
        }
        dst[i] = src[i];
        i += threads;
    }
}

fn hash(x: u32) -> u32 {
    var h = x * 747796405u + 2891336453u;
    h = ((h >> ((h >> 28u) + 4u)) ^ h) * 277803737u;
    return (h >> 22u) ^ h;
}

@compute @workgroup_size(WORKGROUP)
fn fill(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let threads = groups.x * WORKGROUP;
    var i = gid.x;
    loop {
        if i >= params.words {
            break;
        }
        let base = (i * 4u) ^ params.seed;
        dst[i] = vec4<u32>(hash(base), hash(base + 1u), hash(base + 2u), hash(base + 3u));
        i += threads;
    }
}

// The read-only floor (primitives that read far more than they write: reductions, histograms,
// group aggregation): the same grid-stride loads as `copy`, folded by xor. An invocation
// stores its fold only in the (about 2^-128) case that it equals the seed, so the loads cannot
// be elided and nothing is written in practice.
@compute @workgroup_size(WORKGROUP)
fn stream_read(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let threads = groups.x * WORKGROUP;
    let n = params.words;
    var i = gid.x;
    var acc = vec4<u32>(0u);
    loop {
        if i + 3u * threads >= n || i + 3u * threads < i {
            break;
        }
        let a = src[i];
        let b = src[i + threads];
        let c = src[i + 2u * threads];
        let d = src[i + 3u * threads];
        acc ^= (a ^ b) ^ (c ^ d);
        i += 4u * threads;
    }
    loop {
        if i >= n {
            break;
        }
        acc ^= src[i];
        i += threads;
    }
    if all(acc == vec4<u32>(params.seed)) {
        dst[gid.x % arrayLength(&dst)] = acc;
    }
}

// The mixed floor (primitives that read more than they write: masks, compaction): the read
// words form k = params.seed planes of W = words / k words (a mask's k inputs); invocation j
// reads word j of every plane and stores their xor at j, grid-stride, two rows in flight.
@compute @workgroup_size(WORKGROUP)
fn stream_mixed(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let threads = groups.x * WORKGROUP;
    let k = max(params.seed, 1u);
    let w = params.words / k;
    var j = gid.x;
    loop {
        if j + threads >= w || j + threads < j {
            break;
        }
        var a = src[j];
        var b = src[j + threads];
        for (var m = 1u; m < k; m += 1u) {
            a ^= src[j + m * w];
            b ^= src[j + threads + m * w];
        }
        dst[j] = a;
        dst[j + threads] = b;
        j += 2u * threads;
    }
    loop {
        if j >= w {
            break;
        }
        var a = src[j];
        for (var m = 1u; m < k; m += 1u) {
            a ^= src[j + m * w];
        }
        dst[j] = a;
        j += threads;
    }
}
