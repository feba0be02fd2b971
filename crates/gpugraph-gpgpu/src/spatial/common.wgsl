// Spatial cell arithmetic and query decoding shared by the grid build, the grid query and the
// point filter (header: DIMS = 2 or 3, WG). Reproduced bit for bit by spatial/domain.rs and
// spatial/query.rs: every rounding step is the same float32 operation in the same order.

struct Domain {
    min: vec4<f32>,
    max: vec4<f32>,
    scale: vec4<f32>,
    cells: vec4<u32>,
}

// Finite by bits: a comparison-based test could be folded away by a fast-math compiler.
fn is_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn axis_cell(v: f32, lo: f32, scale: f32, n: u32) -> u32 {
    let y = floor((v - lo) * scale);
    if (y >= f32(n)) {
        return n - 1u;
    }
    return u32(y);
}

fn point_finite(p: vec3<f32>) -> bool {
    var ok = is_finite(p.x) && is_finite(p.y);
    if (DIMS == 3u) {
        ok = ok && is_finite(p.z);
    }
    return ok;
}

fn in_domain(d: Domain, p: vec3<f32>) -> bool {
    if (!point_finite(p)) {
        return false;
    }
    var ok = p.x >= d.min.x && p.x <= d.max.x && p.y >= d.min.y && p.y <= d.max.y;
    if (DIMS == 3u) {
        ok = ok && p.z >= d.min.z && p.z <= d.max.z;
    }
    return ok;
}

// Cell coordinates of an in-domain point (z = 0 in 2-D).
fn cell_coords(d: Domain, p: vec3<f32>) -> vec3<u32> {
    var c = vec3<u32>(
        axis_cell(p.x, d.min.x, d.scale.x, d.cells.x),
        axis_cell(p.y, d.min.y, d.scale.y, d.cells.y),
        0u,
    );
    if (DIMS == 3u) {
        c.z = axis_cell(p.z, d.min.z, d.scale.z, d.cells.z);
    }
    return c;
}

fn cell_index(d: Domain, c: vec3<u32>) -> u32 {
    return (c.z * d.cells.y + c.y) * d.cells.x + c.x;
}

// One decoded query (SpatialQuery::words): kind 0 point (a), 1 bounds (a = min, b = max),
// 2 radius (a = center, b.x = radius).
struct Query {
    kind: u32,
    a: vec3<f32>,
    b: vec3<f32>,
}

const RADIUS_MARGIN: f32 = 9.5367431640625e-7; // 2^-20, as RADIUS_MARGIN in query.rs

fn decode_query(kind: u32, a: vec3<u32>, b: vec3<u32>) -> Query {
    return Query(kind, bitcast<vec3<f32>>(a), bitcast<vec3<f32>>(b));
}

// The closed box a query can match; valid = false for invalid queries.
struct QueryBox {
    lo: vec3<f32>,
    hi: vec3<f32>,
    valid: bool,
}

fn query_box(q: Query) -> QueryBox {
    var out = QueryBox(q.a, q.a, false);
    if (q.kind == 0u) {
        out.valid = point_finite(q.a);
    } else if (q.kind == 1u) {
        out.hi = q.b;
        var ok = point_finite(q.a) && point_finite(q.b) && q.a.x <= q.b.x && q.a.y <= q.b.y;
        if (DIMS == 3u) {
            ok = ok && q.a.z <= q.b.z;
        }
        out.valid = ok;
    } else if (q.kind == 2u) {
        let r = q.b.x;
        if (point_finite(q.a) && is_finite(r) && r >= 0.0) {
            let e = (abs(q.a) + vec3<f32>(r)) * RADIUS_MARGIN;
            out.lo = q.a - vec3<f32>(r) - e;
            out.hi = q.a + vec3<f32>(r) + e;
            out.valid = true;
        }
    }
    return out;
}

// The exact predicate (SpatialQuery::matches).
fn query_matches(q: Query, qb: QueryBox, p: vec3<f32>) -> bool {
    if (!qb.valid || !point_finite(p)) {
        return false;
    }
    if (q.kind == 2u) {
        let d = p - q.a;
        var d2 = d.x * d.x;
        d2 = d2 + d.y * d.y;
        if (DIMS == 3u) {
            d2 = d2 + d.z * d.z;
        }
        return d2 <= q.b.x * q.b.x;
    }
    // Point and bounds: inside the closed box (a point query's box is the point).
    var ok = p.x >= qb.lo.x && p.x <= qb.hi.x && p.y >= qb.lo.y && p.y <= qb.hi.y;
    if (DIMS == 3u) {
        ok = ok && p.z >= qb.lo.z && p.z <= qb.hi.z;
    }
    return ok;
}

// The linear row of an invocation in a 2-D grid of WG-row workgroups.
fn linear_row(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * WG + lid;
}
