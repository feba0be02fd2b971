// Validates GPU-resident histogram edges at every encoding: finite and strictly increasing.
// One workgroup writes the verdict into the accumulators' gate word (status word 1, see
// keyed/keyed.wgsl), which makes the accumulate pass skip every row (counts stay zero) and
// which finalize publishes as the caller's flag word (1 = invalid).

struct Params {
    edge_count: u32,
    edges_off: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> edges: array<f32>;
@group(0) @binding(2) var<storage, read_write> acc: array<u32>;

var<workgroup> bad: atomic<u32>;

fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

@compute @workgroup_size(WG)
fn validate_edges(@builtin(local_invocation_index) lane: u32) {
    if (lane == 0u) {
        atomicStore(&bad, 0u);
    }
    workgroupBarrier();
    for (var j = lane; j < params.edge_count; j += WG) {
        let e = edges[params.edges_off + j];
        var ok = is_finite(e);
        if (j > 0u) {
            ok = ok && edges[params.edges_off + j - 1u] < e;
        }
        if (!ok) {
            atomicOr(&bad, 1u);
        }
    }
    workgroupBarrier();
    if (lane == 0u) {
        acc[1] = atomicLoad(&bad);
    }
}
