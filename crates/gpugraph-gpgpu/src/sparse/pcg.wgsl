// The fused passes of Jacobi-preconditioned conjugate gradients. One `#ifdef` per pass (each
// binds what it uses). Scalars live in one uint32 buffer (floats bitcast): RZ = r·z of the
// current step, PQ = p·q, ALPHA, BETA, RR = r·r, TOL2 = (tol·|b|)², PRED = 1 while
// r·r > TOL2 (the loop's predicate word, read by the gate kernel), RZ_NEW = the newest r·z.
// Vector passes own ROWS_PER_WG rows per workgroup (invocation lid: base + k·WG + lid) and
// write one partial per workgroup. The scalars α and β are folded from the previous pass's
// partials by EVERY workgroup of the pass that uses them (same data, same fixed order, so
// every workgroup gets the same bits) and workgroup 0 records them: an iteration is three
// dispatches (SpMV + p·q, update, direction), not five. No word is both read by one
// workgroup and written by another in the same pass (RZ_NEW → RZ moves in the update).
#include "shared/dispatch.wgsl"
#include "sparse/common.wgsl"

const S_RZ: u32 = 0u;
const S_PQ: u32 = 1u;
const S_ALPHA: u32 = 2u;
const S_BETA: u32 = 3u;
const S_RR: u32 = 4u;
const S_TOL2: u32 = 5u;
const S_PRED: u32 = 6u;
const S_RZ_NEW: u32 = 7u;

struct PcgParams {
    n: u32,
    tiles: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: PcgParams;

#ifdef ROW_PASS
// The vector passes that leave a residual (START, UPDATE): the pass's `residual_row(i)`
// updates row i and returns (r_i, z_i); the workgroup's r·z and r·r sums over its
// ROWS_PER_WG rows become partials[wg] and partials[tiles + wg].
fn residual_rows(wg: u32, lid: u32) {
    var rz = 0.0;
    var rr = 0.0;
    for (var k = 0u; k < ROWS_PER_WG / WG; k += 1u) {
        let i = wg * ROWS_PER_WG + k * WG + lid;
        if (i < params.n) {
            let rzi = residual_row(i);
            rz += rzi.x * rzi.y;
            rr += rzi.x * rzi.x;
        }
    }
    let srz = workgroup_sum(lid, rz);
    let srr = workgroup_sum(lid, rr);
    if (lid == 0u) {
        partials[wg] = srz;
        partials[params.tiles + wg] = srr;
    }
}
#endif

#ifdef FOLD_PASS
// The passes that fold the residual partials (RHO, DIRECTION): (Σ r·z, Σ r·r), the same bits
// in every invocation of every workgroup.
fn fold_residual(lid: u32) -> vec2<f32> {
    var a = 0.0;
    var c = 0.0;
    for (var i = lid; i < params.tiles; i += WG) {
        a += partials[i];
        c += partials[params.tiles + i];
    }
    return vec2<f32>(workgroup_sum(lid, a), workgroup_sum(lid, c));
}

// RR = rr and PRED = PRED ∧ rr > TOL2.
fn record_rr(rr: f32) {
    scalars[S_RR] = bitcast<u32>(rr);
    let above = select(0u, 1u, rr > bitcast<f32>(scalars[S_TOL2]));
    scalars[S_PRED] = above & scalars[S_PRED];
}
#endif

#ifdef START
// r = b - q (q = A·x0), z = dinv ⊙ r, p = z; partials of r·z and r·r.
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> q: array<f32>;
@group(0) @binding(4) var<storage, read> dinv: array<f32>;
@group(0) @binding(5) var<storage, read_write> r: array<f32>;
@group(0) @binding(6) var<storage, read_write> z: array<f32>;
@group(0) @binding(7) var<storage, read_write> p: array<f32>;
@group(0) @binding(8) var<storage, read_write> partials: array<f32>;

fn residual_row(i: u32) -> vec2<f32> {
    let ri = b[i] - q[i];
    let zi = dinv[i] * ri;
    r[i] = ri;
    z[i] = zi;
    p[i] = zi;
    return vec2<f32>(ri, zi);
}

@compute @workgroup_size(WG)
fn pcg_start(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    residual_rows(linear_workgroup(wid, nwg), lid);
}
#endif

#ifdef UPDATE
// α = RZ_NEW / Σ p·q partials (a zero or non-finite p·q is a breakdown: p·Ap must be
// positive for an SPD matrix, so α = 0 and workgroup 0 clears PRED: the loop stops instead of
// spreading NaN); x += α·p, r -= α·q, z = dinv ⊙ r; partials of r·z and r·r.
@group(0) @binding(1) var<storage, read_write> scalars: array<u32>;
@group(0) @binding(2) var<storage, read> p: array<f32>;
@group(0) @binding(3) var<storage, read> q: array<f32>;
@group(0) @binding(4) var<storage, read> dinv: array<f32>;
@group(0) @binding(5) var<storage, read_write> x: array<f32>;
@group(0) @binding(6) var<storage, read_write> r: array<f32>;
@group(0) @binding(7) var<storage, read_write> z: array<f32>;
@group(0) @binding(8) var<storage, read_write> partials: array<f32>;
@group(0) @binding(9) var<storage, read> pq_partials: array<f32>;

// This workgroup's α (every workgroup folds the same one).
var<private> alpha: f32;

fn residual_row(i: u32) -> vec2<f32> {
    x[i] = x[i] + alpha * p[i];
    let ri = r[i] - alpha * q[i];
    let zi = dinv[i] * ri;
    r[i] = ri;
    z[i] = zi;
    return vec2<f32>(ri, zi);
}

@compute @workgroup_size(WG)
fn pcg_update(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let wg = linear_workgroup(wid, nwg);
    var acc = 0.0;
    for (var i = lid; i < params.tiles; i += WG) {
        acc += pq_partials[i];
    }
    let pq = workgroup_sum(lid, acc);
    let rz = bitcast<f32>(scalars[S_RZ_NEW]);
    alpha = rz / pq;
    // NaN and ±inf fail this test (NaN compares false; inf - inf is NaN).
    let ok = pq > 0.0 && (alpha - alpha) == 0.0;
    if (!ok) {
        alpha = 0.0;
    }
    if (wg == 0u && lid == 0u) {
        scalars[S_RZ] = bitcast<u32>(rz);
        scalars[S_PQ] = bitcast<u32>(pq);
        scalars[S_ALPHA] = bitcast<u32>(alpha);
        if (!ok) {
            scalars[S_PRED] = 0u;
        }
    }
    residual_rows(wg, lid);
}
#endif

#ifdef DIRECTION
// rz' = Σ r·z partials, β = rz' / RZ (0 when RZ is 0); p = z + β·p. Workgroup 0 also sums
// the r·r partials and writes BETA, RZ_NEW = rz', RR and PRED = PRED ∧ rr > TOL2 (a
// breakdown flagged by the update stays flagged).
@group(0) @binding(1) var<storage, read_write> scalars: array<u32>;
@group(0) @binding(2) var<storage, read> z: array<f32>;
@group(0) @binding(3) var<storage, read_write> p: array<f32>;
@group(0) @binding(4) var<storage, read> partials: array<f32>;

@compute @workgroup_size(WG)
fn pcg_direction(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let wg = linear_workgroup(wid, nwg);
    let folded = fold_residual(lid);
    let rz_new = folded.x;
    let rz = bitcast<f32>(scalars[S_RZ]);
    var beta = 0.0;
    if (rz != 0.0) {
        beta = rz_new / rz;
    }
    if (wg == 0u && lid == 0u) {
        scalars[S_BETA] = bitcast<u32>(beta);
        scalars[S_RZ_NEW] = bitcast<u32>(rz_new);
        record_rr(folded.y);
    }
    for (var k = 0u; k < ROWS_PER_WG / WG; k += 1u) {
        let i = wg * ROWS_PER_WG + k * WG + lid;
        if (i < params.n) {
            p[i] = z[i] + beta * p[i];
        }
    }
}
#endif

#ifdef RHO
// The prologue's scalars: rz = Σ r·z partials, rr = Σ r·r partials; RZ = RZ_NEW = rz,
// RR = rr, PRED = PRED ∧ rr > TOL2 (the host starts PRED at 1). One workgroup.
@group(0) @binding(1) var<storage, read_write> scalars: array<u32>;
@group(0) @binding(2) var<storage, read> partials: array<f32>;

@compute @workgroup_size(WG)
fn pcg_rho(@builtin(local_invocation_index) lid: u32) {
    let folded = fold_residual(lid);
    if (lid == 0u) {
        scalars[S_RZ] = bitcast<u32>(folded.x);
        scalars[S_RZ_NEW] = bitcast<u32>(folded.x);
        record_rr(folded.y);
    }
}
#endif
