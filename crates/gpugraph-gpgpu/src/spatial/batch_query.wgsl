// BatchGridIndexQuery (after spatial/common.wgsl): one workgroup per query. The workgroup
// walks the query's cell rectangle row by row (each (y, z) row of cells is one contiguous
// slice of the index's IDs), its invocations striding over each slice, tests every stored
// point exactly (query_matches) and folds (hits, wrapping ID sum, candidates, flags) through
// workgroup atomics; invocation 0 publishes them. Integer sums, so the result does not depend
// on the order the invocations ran in. Why a workgroup per query: one query's candidates are
// a few contiguous slices, so a workgroup reads them coalesced, and Q queries fill the device
// in one dispatch instead of the single-query path's Q dependent dispatches.

struct BatchParams {
    domain: Domain,
    queries_off: u32,
    query_count: u32,
    offsets_off: u32,
    ids_off: u32,
    index_status_off: u32,
    capacity: u32,      // index object ID rows
    pos_off: u32,
    pos_rows: u32,
    hits_off: u32,
    status_off: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: BatchParams;
@group(0) @binding(1) var<storage, read> queries: array<u32>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read> object_ids: array<u32>;
@group(0) @binding(4) var<storage, read> index_status: array<u32>;
@group(0) @binding(5) var<storage, read> positions: array<f32>;
@group(0) @binding(6) var<storage, read_write> hits: array<u32>;
#ifdef STATUS
@group(0) @binding(7) var<storage, read_write> status: array<u32>;
#endif

var<workgroup> wg_hits: atomic<u32>;
var<workgroup> wg_sum: atomic<u32>;
var<workgroup> wg_flags: atomic<u32>;

fn axis_range(lo: f32, hi: f32, dmin: f32, dmax: f32, scale: f32, n: u32) -> vec2<u32> {
    // Empty (x > y) when the query misses the domain on this axis.
    if (hi < dmin || lo > dmax) {
        return vec2<u32>(1u, 0u);
    }
    return vec2<u32>(axis_cell(max(lo, dmin), dmin, scale, n), axis_cell(min(hi, dmax), dmin, scale, n));
}

fn load_point(i: u32) -> vec3<f32> {
    let o = params.pos_off + DIMS * i;
    var p = vec3<f32>(positions[o], positions[o + 1u], 0.0);
    if (DIMS == 3u) {
        p.z = positions[o + 2u];
    }
    return p;
}

@compute @workgroup_size(WG)
fn batch_query(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let qi = wid.y * nwg.x + wid.x;
    if (qi >= params.query_count) {
        return;
    }
    if (lid == 0u) {
        atomicStore(&wg_hits, 0u);
        atomicStore(&wg_sum, 0u);
        atomicStore(&wg_flags, 0u);
    }
    workgroupBarrier();
    let o = params.queries_off + qi * QUERY_WORDS;
    let q = decode_query(queries[o], vec3<u32>(queries[o + 1u], queries[o + 2u], queries[o + 3u]),
                         vec3<u32>(queries[o + 4u], queries[o + 5u], queries[o + 6u]));
    let qb = query_box(q);
    let d = params.domain;
    let stored = min(index_status[params.index_status_off], params.capacity);
    var n_hits = 0u;
    var id_sum = 0u;
    var flags = 0u;
    var base = 0u;
    if (qb.valid) {
        let rx = axis_range(qb.lo.x, qb.hi.x, d.min.x, d.max.x, d.scale.x, d.cells.x);
        let ry = axis_range(qb.lo.y, qb.hi.y, d.min.y, d.max.y, d.scale.y, d.cells.y);
        var rz = vec2<u32>(0u, 0u);
        if (DIMS == 3u) {
            rz = axis_range(qb.lo.z, qb.hi.z, d.min.z, d.max.z, d.scale.z, d.cells.z);
        }
        if (rx.x <= rx.y && ry.x <= ry.y && rz.x <= rz.y) {
            for (var cz = rz.x; cz <= rz.y; cz += 1u) {
                for (var cy = ry.x; cy <= ry.y; cy += 1u) {
                    let c0 = cell_index(d, vec3<u32>(rx.x, cy, cz));
                    let c1 = cell_index(d, vec3<u32>(rx.y, cy, cz)) + 1u;
                    let s = min(offsets[params.offsets_off + c0], stored);
                    let e = max(min(offsets[params.offsets_off + c1], stored), s);
                    for (var k = s + lid; k < e; k += WG) {
                        let id = object_ids[params.ids_off + k];
                        if (id >= params.pos_rows) {
                            flags |= 4u;
                        } else if (query_matches(q, qb, load_point(id))) {
                            n_hits += 1u;
                            id_sum += id;
                        }
                    }
                    base += e - s;
                }
            }
        }
    }
    if (n_hits != 0u) {
        atomicAdd(&wg_hits, n_hits);
        atomicAdd(&wg_sum, id_sum);
    }
    if (flags != 0u) {
        atomicOr(&wg_flags, flags);
    }
    workgroupBarrier();
    if (lid == 0u) {
        hits[params.hits_off + 2u * qi] = atomicLoad(&wg_hits);
        hits[params.hits_off + 2u * qi + 1u] = atomicLoad(&wg_sum);
#ifdef STATUS
        var f = atomicLoad(&wg_flags);
        if (index_status[params.index_status_off + 1u] != 0u) {
            f |= 1u;
        }
        if (!qb.valid) {
            f |= 8u;
        } else if (index_status[params.index_status_off + 2u] != 0u) {
            var out = any(qb.lo.xy < d.min.xy) || any(qb.hi.xy > d.max.xy);
            if (DIMS == 3u) {
                out = out || qb.lo.z < d.min.z || qb.hi.z > d.max.z;
            }
            if (out) {
                f |= 16u;
            }
        }
        status[params.status_off + 2u * qi] = base;
        status[params.status_off + 2u * qi + 1u] = f;
#endif
    }
}
