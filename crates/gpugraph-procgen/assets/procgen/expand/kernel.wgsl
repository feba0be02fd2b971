// expand: each live slot takes counts[i] child slots through owner's counter.
struct Params {
    n: u32,
    k: u32,
    owner_capacity: u32,
    // @when ELEMENTS device
    offsets_capacity: u32,
    // @end
}
@group(0) @binding(0) var<uniform> params: Params;
// @when COUNTS column
@group(0) @binding(1) var<storage, read> counts: array<u32>;
// @end
@group(0) @binding(2) var<storage, read_write> offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> owner: array<i32>;
@group(0) @binding(4) var<storage, read_write> owner_count: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> local_index: array<i32>;
// @when COUNT device
@group(0) @binding(6) var<storage, read> domain_count: array<u32>;
// @end
// @when ELEMENTS device
@group(0) @binding(7) var<storage, read> element_count: array<u32>;
// @end

fn zero_n() -> u32 { return params.n; }

fn live_n() -> u32 {
    var live = zero_n();
    // @when COUNT device
    live = min(domain_count[0], zero_n());
    // @end
    return live;
}

/// Appends element i's children and writes where they start.
fn expand_one(i: u32) {
    var c = params.k;
    // @when COUNTS column
    c = counts[i];
    // @end
    let base = atomicAdd(&owner_count[0], c);
    offsets[i] = base;
    for (var t = 0u; t < c; t++) {
        let k = base + t;
        if k >= params.owner_capacity { break; }
        owner[k] = i32(i);
        local_index[k] = i32(t);
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    // @when ELEMENTS plain
    if i >= zero_n() { return; }
    if i >= live_n() {
        offsets[i] = 0u;
        return;
    }
    expand_one(i);
    // @end
    // @when ELEMENTS device
    // The elements are element_count's, whatever the dispatch covers: stride by all of it.
    let stride = nwg.x * nwg.y * 64u;
    let elements = min(element_count[0], params.offsets_capacity);
    for (var e = i; e < params.offsets_capacity; e += stride) {
        if e < elements {
            expand_one(e);
        } else {
            offsets[e] = 0u;
        }
    }
    // @end
}
