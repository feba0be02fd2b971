// GridIndexQuery (after spatial/common.wgsl): every invocation of a fixed grid walks the
// query's cell rectangle row by row (each (y, z) row of cells is one contiguous slice of the
// index's IDs), copying its strided share of each slice. No barriers, no atomics on the
// candidates: the output position of slice element k is the running slice total plus k, so
// candidates come out in row-major cell order, source order within a cell (deterministic).
// The status words (count, required, flags) and the mask were cleared by earlier nodes.

struct QueryParams {
    domain: Domain,
    query_off: u32,
    offsets_off: u32,
    ids_off: u32,
    index_status_off: u32,
    capacity: u32,      // index object ID rows
    cand_off: u32,
    cand_cap: u32,
    status_off: u32,
    mask_off: u32,
    mask_len: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: QueryParams;
@group(0) @binding(1) var<storage, read> query: array<u32>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read> object_ids: array<u32>;
@group(0) @binding(4) var<storage, read> index_status: array<u32>;
@group(0) @binding(5) var<storage, read_write> candidates: array<u32>;
@group(0) @binding(6) var<storage, read_write> status: array<atomic<u32>>;
#ifdef MASK
@group(0) @binding(7) var<storage, read_write> mask: array<u32>;
#endif

fn axis_range(lo: f32, hi: f32, dmin: f32, dmax: f32, scale: f32, n: u32) -> vec2<u32> {
    // Empty (x > y) when the query misses the domain on this axis.
    if (hi < dmin || lo > dmax) {
        return vec2<u32>(1u, 0u);
    }
    return vec2<u32>(axis_cell(max(lo, dmin), dmin, scale, n), axis_cell(min(hi, dmax), dmin, scale, n));
}

@compute @workgroup_size(WG)
fn query_cells(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x;
    let stride = WG * nwg.x;
    let o = params.query_off;
    let q = decode_query(query[o], vec3<u32>(query[o + 1u], query[o + 2u], query[o + 3u]),
                         vec3<u32>(query[o + 4u], query[o + 5u], query[o + 6u]));
    let qb = query_box(q);
    let d = params.domain;
    let accepted = index_status[params.index_status_off];
    let stored = min(accepted, params.capacity);
    var flags = 0u;
    if (index_status[params.index_status_off + 1u] != 0u) {
        flags |= 1u;
    }
    if (qb.valid && index_status[params.index_status_off + 2u] != 0u) {
        var out = any(qb.lo.xy < d.min.xy) || any(qb.hi.xy > d.max.xy);
        if (DIMS == 3u) {
            out = out || qb.lo.z < d.min.z || qb.hi.z > d.max.z;
        }
        if (out) {
            flags |= 16u;
        }
    }
    var base = 0u;
    if (!qb.valid) {
        flags |= 8u;
    } else {
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
                    for (var k = s + t; k < e; k += stride) {
                        let out = base + (k - s);
                        let id = object_ids[params.ids_off + k];
                        if (out < params.cand_cap) {
                            candidates[params.cand_off + out] = id;
                        }
#ifdef MASK
                        if (id < params.mask_len) {
                            mask[params.mask_off + id] = 1u;
                        } else {
                            atomicOr(&status[params.status_off + 2u], 4u);
                        }
#endif
                    }
                    base += e - s;
                }
            }
        }
    }
    if (base > params.cand_cap) {
        flags |= 2u;
    }
    if (t == 0u) {
        atomicStore(&status[params.status_off], min(base, params.cand_cap));
        atomicStore(&status[params.status_off + 1u], base);
        atomicOr(&status[params.status_off + 2u], flags);
    }
}
