// Bvh build and refit (after spatial/common.wgsl): a complete binary tree in heap order (node
// i has children 2i + 1 and 2i + 2; leaf slot j is node leaves - 1 + j). `build_subtrees`
// loads the leaves (source order, or a Morton permutation) and reduces each SUB-leaf subtree
// in one workgroup; `build_level` reduces one level above the subtrees per dispatch.
// `morton_codes` writes the Morton key of each item's center for the optional ordering.
// Invalid items (non-finite, or min > max) get the empty box [MAX, -MAX]: never intersected.

struct BvhParams {
    rows: u32,          // source items available
    leaves: u32,        // leaf capacity (power of two)
    lo_off: u32,
    hi_off: u32,
    id_off: u32,
    nodes_off: u32,     // word offset of node 0 (8 words per node)
    children_off: u32,  // word offset of node 0's child pair
    leaf_ids_off: u32,
    status_off: u32,
    depth: u32,         // levels below the root: log2(leaves)
    sub: u32,           // leaves per subtree workgroup: min(leaves, SUB_MAX)
    sub_levels: u32,    // log2(sub)
    level_first: u32,   // build_level: first node of the level
    level_count: u32,   // build_level: nodes in the level
    morton_bits: u32,   // bits per axis of the Morton quantization
    pad0: u32,
    morton_min: vec4<f32>,
    morton_scale: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: BvhParams;
@group(0) @binding(1) var<storage, read> lower: array<f32>;
@group(0) @binding(2) var<storage, read> upper: array<f32>;
#ifdef EXPLICIT_IDS
@group(0) @binding(3) var<storage, read> source_ids: array<u32>;
#endif
#ifdef ORDERED
@group(0) @binding(4) var<storage, read> order: array<u32>;
#endif
@group(0) @binding(5) var<storage, read_write> nodes: array<f32>;
@group(0) @binding(6) var<storage, read_write> children: array<u32>;
@group(0) @binding(7) var<storage, read_write> leaf_ids: array<u32>;
@group(0) @binding(8) var<storage, read_write> status: array<u32>;
@group(0) @binding(9) var<storage, read_write> codes: array<u32>;

const NO_ID: u32 = 0xffffffffu;
// Empty boxes are [MAX, -MAX] (min > max): unions ignore them, every test rejects them.
const INF: f32 = 3.40282347e38;

fn load3(from_upper: bool, row: u32) -> vec3<f32> {
    var p = vec3<f32>(0.0);
    if (from_upper) {
        let o = params.hi_off + DIMS * row;
        p = vec3<f32>(upper[o], upper[o + 1u], 0.0);
        if (DIMS == 3u) {
            p.z = upper[o + 2u];
        }
    } else {
        let o = params.lo_off + DIMS * row;
        p = vec3<f32>(lower[o], lower[o + 1u], 0.0);
        if (DIMS == 3u) {
            p.z = lower[o + 2u];
        }
    }
    return p;
}

fn valid_box(lo: vec3<f32>, hi: vec3<f32>) -> bool {
    var ok = point_finite(lo) && point_finite(hi) && lo.x <= hi.x && lo.y <= hi.y;
    if (DIMS == 3u) {
        ok = ok && lo.z <= hi.z;
    }
    return ok;
}

fn store_node(i: u32, lo: vec3<f32>, hi: vec3<f32>, left: u32, right: u32) {
    let o = params.nodes_off + 8u * i;
    nodes[o] = lo.x;
    nodes[o + 1u] = lo.y;
    nodes[o + 2u] = lo.z;
    nodes[o + 3u] = 0.0;
    nodes[o + 4u] = hi.x;
    nodes[o + 5u] = hi.y;
    nodes[o + 6u] = hi.z;
    nodes[o + 7u] = 0.0;
    children[params.children_off + 2u * i] = left;
    children[params.children_off + 2u * i + 1u] = right;
}

var<workgroup> sub_lo: array<vec3<f32>, SUB_MAX>;
var<workgroup> sub_hi: array<vec3<f32>, SUB_MAX>;

@compute @workgroup_size(SUB_MAX)
fn build_subtrees(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    // One workgroup per subtree over a 2-D grid (past the per-dimension limit); the spare
    // workgroups of the split leave together (uniform: before any barrier).
    let w = wid.y * nwg.x + wid.x;
    if (w >= params.leaves / params.sub) {
        return;
    }
    let in_use = lid < params.sub;
    let j = w * params.sub + lid;
    var lo = vec3<f32>(INF);
    var hi = vec3<f32>(-INF);
    if (in_use) {
        var id = NO_ID;
        if (j < min(params.rows, params.leaves)) {
#ifdef ORDERED
            let row = order[j];
#else
            let row = j;
#endif
            let a = load3(false, row);
            let b = load3(true, row);
            if (valid_box(a, b)) {
                lo = a;
                hi = b;
            }
#ifdef EXPLICIT_IDS
            id = source_ids[params.id_off + row];
#else
            id = row;
#endif
        }
        store_node(params.leaves - 1u + j, lo, hi, NO_ID, NO_ID);
        leaf_ids[params.leaf_ids_off + j] = id;
        sub_lo[lid] = lo;
        sub_hi[lid] = hi;
    }
    if (w == 0u && lid == 0u) {
        status[params.status_off] = min(params.rows, params.leaves);
        status[params.status_off + 1u] = select(0u, 1u, params.rows > params.leaves);
        status[params.status_off + 2u] = params.depth + 1u;
    }
    for (var k = 1u; k <= params.sub_levels; k += 1u) {
        workgroupBarrier();
        let n = params.sub >> k;
        var l = vec3<f32>(0.0);
        var h = vec3<f32>(0.0);
        if (lid < n) {
            l = min(sub_lo[2u * lid], sub_lo[2u * lid + 1u]);
            h = max(sub_hi[2u * lid], sub_hi[2u * lid + 1u]);
        }
        workgroupBarrier();
        if (lid < n) {
            sub_lo[lid] = l;
            sub_hi[lid] = h;
            let level = params.depth - k;
            let i = (1u << level) - 1u + w * n + lid;
            store_node(i, l, h, 2u * i + 1u, 2u * i + 2u);
        }
    }
}

fn load_node(i: u32) -> array<vec3<f32>, 2> {
    let o = params.nodes_off + 8u * i;
    return array<vec3<f32>, 2>(
        vec3<f32>(nodes[o], nodes[o + 1u], nodes[o + 2u]),
        vec3<f32>(nodes[o + 4u], nodes[o + 5u], nodes[o + 6u]),
    );
}

@compute @workgroup_size(WG)
fn build_level(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let t = linear_row(wid, nwg, lid);
    if (t >= params.level_count) {
        return;
    }
    let i = params.level_first + t;
    let a = load_node(2u * i + 1u);
    let b = load_node(2u * i + 2u);
    store_node(i, min(a[0], b[0]), max(a[1], b[1]), 2u * i + 1u, 2u * i + 2u);
}

// Spreads the low 16 bits of x to the even bits.
fn part1by1(v: u32) -> u32 {
    var x = v & 0x0000ffffu;
    x = (x | (x << 8u)) & 0x00ff00ffu;
    x = (x | (x << 4u)) & 0x0f0f0f0fu;
    x = (x | (x << 2u)) & 0x33333333u;
    x = (x | (x << 1u)) & 0x55555555u;
    return x;
}

// Spreads the low 10 bits of x to every third bit.
fn part1by2(v: u32) -> u32 {
    var x = v & 0x000003ffu;
    x = (x | (x << 16u)) & 0xff0000ffu;
    x = (x | (x << 8u)) & 0x0300f00fu;
    x = (x | (x << 4u)) & 0x030c30c3u;
    x = (x | (x << 2u)) & 0x09249249u;
    return x;
}

fn quantize(v: f32, lo: f32, scale: f32) -> u32 {
    let top = f32((1u << params.morton_bits) - 1u);
    return u32(clamp(floor((v - lo) * scale), 0.0, top));
}

@compute @workgroup_size(WG)
fn morton_codes(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let row = linear_row(wid, nwg, lid);
    if (row >= params.rows) {
        return;
    }
    let a = load3(false, row);
    let b = load3(true, row);
    var code = NO_ID;
    if (valid_box(a, b)) {
        let c = (a + b) * 0.5;
        let m = params.morton_min;
        let s = params.morton_scale;
        let qx = quantize(c.x, m.x, s.x);
        let qy = quantize(c.y, m.y, s.y);
        if (DIMS == 3u) {
            code = part1by2(qx) | (part1by2(qy) << 1u) | (part1by2(quantize(c.z, m.z, s.z)) << 2u);
        } else {
            code = part1by1(qx) | (part1by1(qy) << 1u);
        }
    }
    codes[row] = code;
}
