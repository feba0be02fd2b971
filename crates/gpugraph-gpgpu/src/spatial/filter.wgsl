// PointSpatialFilter (after spatial/common.wgsl): the exact predicate of one GPU-resident query
// over every row of a chunk (`filter_rows`) or over compact candidate rows (`filter_candidates`,
// after the mask was cleared). Both write 1 / 0 into the same source-row-addressed mask
// (MASK) and / or add each hit to (count, wrapping sum of rows) (HITS, cleared before).

struct FilterParams {
    query_off: u32,
    pos_off: u32,
    rows: u32,          // rows of this chunk (all rows: positions rows)
    base: u32,          // global row of the chunk's first row
    mask_off: u32,
    cand_off: u32,
    cand_cap: u32,
    cand_count_off: u32,
    hits_off: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: FilterParams;
@group(0) @binding(1) var<storage, read> query: array<u32>;
@group(0) @binding(2) var<storage, read> positions: array<f32>;
@group(0) @binding(3) var<storage, read> candidates: array<u32>;
@group(0) @binding(4) var<storage, read> cand_count: array<u32>;
#ifdef MASK
@group(0) @binding(5) var<storage, read_write> mask: array<u32>;
#endif
#ifdef HITS
@group(0) @binding(6) var<storage, read_write> hits: array<atomic<u32>>;
#endif

fn publish(row: u32, hit: bool) {
#ifdef MASK
    mask[params.mask_off + row] = select(0u, 1u, hit);
#endif
#ifdef HITS
    if (hit) {
        atomicAdd(&hits[params.hits_off], 1u);
        atomicAdd(&hits[params.hits_off + 1u], row);
    }
#endif
}

fn load_point(i: u32) -> vec3<f32> {
    let o = params.pos_off + DIMS * i;
    var p = vec3<f32>(positions[o], positions[o + 1u], 0.0);
    if (DIMS == 3u) {
        p.z = positions[o + 2u];
    }
    return p;
}

fn load_query() -> Query {
    let o = params.query_off;
    return decode_query(query[o], vec3<u32>(query[o + 1u], query[o + 2u], query[o + 3u]),
                        vec3<u32>(query[o + 4u], query[o + 5u], query[o + 6u]));
}

@compute @workgroup_size(WG)
fn filter_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid);
    if (i >= params.rows) {
        return;
    }
    let q = load_query();
    publish(params.base + i, query_matches(q, query_box(q), load_point(i)));
}

@compute @workgroup_size(WG)
fn filter_candidates(@builtin(workgroup_id) wid: vec3<u32>,
                     @builtin(num_workgroups) nwg: vec3<u32>,
                     @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid);
    let count = min(cand_count[params.cand_count_off], params.cand_cap);
    if (i >= count) {
        return;
    }
    let row = candidates[params.cand_off + i];
    if (row >= params.rows) {
        return;
    }
    let q = load_query();
    publish(row, query_matches(q, query_box(q), load_point(row)));
}
