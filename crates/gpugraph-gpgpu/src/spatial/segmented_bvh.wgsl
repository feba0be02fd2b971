// SegmentedBvh (after spatial/common.wgsl and spatial/bvh_build.wgsl): many independent
// hierarchies of one leaf capacity (`params.leaves` <= SUB_MAX) packed in shared buffers, one
// workgroup per tree. Tree descriptors are two vec4
// per tree: (item offset, items, node offset, leaf offset) and (tree index, -, -, -), the index
// addressing the tree's two status rows;
// this dispatch reads descriptors level_first .. level_first + level_count. Child pairs are
// tree-local heap indices; generated IDs are tree-local item indices.

@group(0) @binding(10) var<storage, read> trees: array<vec4<u32>>;

@compute @workgroup_size(SUB_MAX)
fn build_trees(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let w = wid.y * nwg.x + wid.x;
    if (w >= params.level_count) {
        return;
    }
    let tree = trees[2u * (params.level_first + w)];
    let tree_index = trees[2u * (params.level_first + w) + 1u].x;
    let leaves = params.leaves;
    let in_use = lid < leaves;
    var lo = vec3<f32>(INF);
    var hi = vec3<f32>(-INF);
    if (in_use) {
        var id = NO_ID;
        if (lid < min(tree.y, leaves)) {
            let row = tree.x + lid;
            let a = load3(false, row);
            let b = load3(true, row);
            if (valid_box(a, b)) {
                lo = a;
                hi = b;
            }
#ifdef EXPLICIT_IDS
            id = source_ids[params.id_off + row];
#else
            id = lid;
#endif
        }
        store_node(tree.z + leaves - 1u + lid, lo, hi, NO_ID, NO_ID);
        leaf_ids[params.leaf_ids_off + tree.w + lid] = id;
        sub_lo[lid] = lo;
        sub_hi[lid] = hi;
        if (lid == 0u) {
            status[params.status_off + 2u * tree_index] = min(tree.y, leaves);
            status[params.status_off + 2u * tree_index + 1u] = select(0u, 1u, tree.y > leaves);
        }
    }
    for (var k = 1u; k <= params.sub_levels; k += 1u) {
        workgroupBarrier();
        let n = leaves >> k;
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
            let i = (1u << (params.sub_levels - k)) - 1u + lid;
            store_node(tree.z + i, l, h, 2u * i + 1u, 2u * i + 2u);
        }
    }
}
