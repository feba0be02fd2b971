// BvhQuery (after spatial/common.wgsl): invocation t owns the subtree rooted at level SPLIT.
// It first tests that subtree's ancestors (each visited ancestor is counted once, by the
// leftmost invocation below it), then walks the subtree depth first without a stack (heap
// order: a left child is odd, its right sibling follows it). Hits append through an atomic
// counter (append order unspecified); `finish` clamps the stored count and sets the output
// overflow flag. Status: count, required, flags, visited (cleared by an earlier node).

struct BvhQueryParams {
    query_off: u32,
    nodes_off: u32,
    leaf_ids_off: u32,
    bvh_status_off: u32,
    leaves: u32,
    split: u32,        // subtree level owned per invocation: min(depth, SPLIT_MAX)
    cand_off: u32,
    cand_cap: u32,
    status_off: u32,
    mask_off: u32,
    mask_len: u32,
    pad0: u32,
}

@group(0) @binding(0) var<uniform> params: BvhQueryParams;
@group(0) @binding(1) var<storage, read> query: array<u32>;
@group(0) @binding(2) var<storage, read> nodes: array<f32>;
@group(0) @binding(3) var<storage, read> leaf_ids: array<u32>;
@group(0) @binding(4) var<storage, read> bvh_status: array<u32>;
@group(0) @binding(5) var<storage, read_write> candidates: array<u32>;
@group(0) @binding(6) var<storage, read_write> status: array<atomic<u32>>;
#ifdef MASK
@group(0) @binding(7) var<storage, read_write> mask: array<u32>;
#endif

// Whether node i's box passes the query: contains the point, intersects the box, or lies
// within the radius (squared distance from the center to the box). Empty boxes fail.
fn node_test(q: Query, qb: QueryBox, i: u32) -> bool {
    let o = params.nodes_off + 8u * i;
    let lo = vec3<f32>(nodes[o], nodes[o + 1u], nodes[o + 2u]);
    let hi = vec3<f32>(nodes[o + 4u], nodes[o + 5u], nodes[o + 6u]);
    if (!(lo.x <= hi.x)) {
        return false;
    }
    if (q.kind == 2u) {
        let d = max(max(lo - q.a, vec3<f32>(0.0)), q.a - hi);
        var d2 = d.x * d.x;
        d2 = d2 + d.y * d.y;
        if (DIMS == 3u) {
            d2 = d2 + d.z * d.z;
        }
        return d2 <= q.b.x * q.b.x;
    }
    var ok = lo.x <= qb.hi.x && hi.x >= qb.lo.x && lo.y <= qb.hi.y && hi.y >= qb.lo.y;
    if (DIMS == 3u) {
        ok = ok && lo.z <= qb.hi.z && hi.z >= qb.lo.z;
    }
    return ok;
}

fn emit(slot: u32) {
    let id = leaf_ids[params.leaf_ids_off + slot];
    if (id == 0xffffffffu) {
        return;
    }
    let at = atomicAdd(&status[params.status_off + 1u], 1u);
    if (at < params.cand_cap) {
        candidates[params.cand_off + at] = id;
    }
#ifdef MASK
    if (id < params.mask_len) {
        mask[params.mask_off + id] = 1u;
    } else {
        atomicOr(&status[params.status_off + 2u], 4u);
    }
#endif
}

@compute @workgroup_size(WG)
fn traverse(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x;
    let s = params.split;
    if (t >= (1u << s)) {
        return;
    }
    let o = params.query_off;
    let q = decode_query(query[o], vec3<u32>(query[o + 1u], query[o + 2u], query[o + 3u]),
                         vec3<u32>(query[o + 4u], query[o + 5u], query[o + 6u]));
    let qb = query_box(q);
    if (t == 0u && bvh_status[params.bvh_status_off + 1u] != 0u) {
        atomicOr(&status[params.status_off + 2u], 1u);
    }
    if (!qb.valid) {
        if (t == 0u) {
            atomicOr(&status[params.status_off + 2u], 8u);
        }
        return;
    }
    let first_leaf = params.leaves - 1u;
    var visited = 0u;
    for (var l = 0u; l < s; l += 1u) {
        let node = (1u << l) - 1u + (t >> (s - l));
        if ((t & ((1u << (s - l)) - 1u)) == 0u) {
            visited += 1u;
        }
        if (!node_test(q, qb, node)) {
            atomicAdd(&status[params.status_off + 3u], visited);
            return;
        }
    }
    let root = (1u << s) - 1u + t;
    var node = root;
    loop {
        visited += 1u;
        let hit = node_test(q, qb, node);
        if (hit && node < first_leaf) {
            node = 2u * node + 1u;
            continue;
        }
        if (hit) {
            emit(node - first_leaf);
        }
        // Next: up while at a right child (or done at the subtree root), then the sibling.
        var done = false;
        loop {
            if (node == root) {
                done = true;
                break;
            }
            if ((node & 1u) == 1u) {
                node = node + 1u;
                break;
            }
            node = (node - 1u) / 2u;
        }
        if (done) {
            break;
        }
    }
    atomicAdd(&status[params.status_off + 3u], visited);
}

@compute @workgroup_size(1)
fn finish() {
    let required = atomicLoad(&status[params.status_off + 1u]);
    atomicStore(&status[params.status_off], min(required, params.cand_cap));
    if (required > params.cand_cap) {
        atomicOr(&status[params.status_off + 2u], 2u);
    }
}
