// DependencyCsr (csr/mod.rs; oracle cpu::csr). Three entries over disjoint binding sets:
//   split:   the from / to words of every 16-byte dependency record into packed key arrays
//            (the stable radix sort needs packed keys);
//   offsets: offsets[v] = the first sorted position whose key is >= v (a lower bound), for
//            v in 0..=n, so row v's edges are [offsets[v], offsets[v+1]); keys >= n (records
//            naming no span) sort past every row and are left out;
//   gather:  neighbors[k] = the other endpoint of the record the sort put at position k.

#include "common.wgsl"

const WG: u32 = 256u;

struct Params {
    edges: u32,
    nodes: u32,
    deps_base: u32,
    a_base: u32,
    b_base: u32,
    c_base: u32,
    other_word: u32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> deps: array<u32>;
@group(0) @binding(2) var<storage, read_write> keys_from: array<u32>;
@group(0) @binding(3) var<storage, read_write> keys_to: array<u32>;
@group(0) @binding(4) var<storage, read> sorted: array<u32>;
@group(0) @binding(5) var<storage, read_write> offsets: array<u32>;
@group(0) @binding(6) var<storage, read> perm: array<u32>;
@group(0) @binding(7) var<storage, read_write> neighbors: array<u32>;

@compute @workgroup_size(WG)
fn split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let e = linear_row(wid, nwg, lid, WG);
    if e >= params.edges {
        return;
    }
    keys_from[params.a_base + e] = deps[params.deps_base + 4u * e];
    keys_to[params.b_base + e] = deps[params.deps_base + 4u * e + 1u];
}

@compute @workgroup_size(WG)
fn row_offsets(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let v = linear_row(wid, nwg, lid, WG);
    if v > params.nodes {
        return;
    }
    var lo = 0u;
    var hi = params.edges;
    while lo < hi {
        let mid = lo + (hi - lo) / 2u;
        if sorted[params.a_base + mid] < v {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    offsets[params.b_base + v] = lo;
}

@compute @workgroup_size(WG)
fn gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let k = linear_row(wid, nwg, lid, WG);
    if k >= params.edges {
        return;
    }
    let e = perm[params.c_base + k];
    neighbors[params.b_base + k] = deps[params.deps_base + 4u * e + params.other_word];
}
