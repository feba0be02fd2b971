// scatter (fold pass): dst[index[i]] = fold(dst[index[i]], src[i]) for each live slot i; a slot
// at or past the live count reaches no place.
struct Params { n: u32, dst_len: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<i32>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read_write> dst: array<atomic<i32>>;
// @when COUNT device
@group(0) @binding(4) var<storage, read> domain_count: array<u32>;
// @end

fn zero_n() -> u32 { return params.n; }

fn live_n() -> u32 {
    var live = zero_n();
    // @when COUNT device
    live = min(domain_count[0], zero_n());
    // @end
    return live;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i >= live_n() { return; }
    let j = index[i];
    if j < 0 || u32(j) >= params.dst_len { return; }
    // @when OP add
    atomicAdd(&dst[u32(j)], src[i]);
    // @end
    // @when OP min
    atomicMin(&dst[u32(j)], src[i]);
    // @end
    // @when OP max
    atomicMax(&dst[u32(j)], src[i]);
    // @end
}
