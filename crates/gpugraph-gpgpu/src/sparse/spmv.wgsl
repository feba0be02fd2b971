// y = A·x for a CSR matrix; with DOT also one partial of x·y per workgroup (the fused
// SpMV + dot of conjugate gradients, q = A·p and p·q in one pass).
// Each workgroup owns ROWS_PER_WG consecutive rows. thread-row: invocation `lid` takes rows
// base + k·WG + lid. SUBGROUP_ROW: LANES consecutive invocations (one subgroup slice; the
// host only picks it when the smallest subgroup holds LANES) share a row, stride through its
// nonzeros (coalesced loads) and combine with subgroupShuffleXor.
#include "shared/dispatch.wgsl"
#include "sparse/common.wgsl"

struct SpmvParams {
    rows: u32,
    off_offsets: u32,
    off_cols: u32,
    off_vals: u32,
    off_x: u32,
    off_y: u32,
    off_dot: u32,
    pad0: u32,
}

@group(0) @binding(0) var<uniform> params: SpmvParams;
@group(0) @binding(1) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(2) var<storage, read> cols: array<u32>;
@group(0) @binding(3) var<storage, read> vals: array<f32>;
@group(0) @binding(4) var<storage, read> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
#ifdef DOT
@group(0) @binding(6) var<storage, read_write> partials: array<f32>;
#endif

fn row_sum(row: u32, lane: u32, step: u32) -> f32 {
    let start = row_offsets[params.off_offsets + row];
    let end = row_offsets[params.off_offsets + row + 1u];
    var acc = 0.0;
    for (var k = start + lane; k < end; k += step) {
        acc += vals[params.off_vals + k] * x[params.off_x + cols[params.off_cols + k]];
    }
    return acc;
}

@compute @workgroup_size(WG)
fn spmv(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let wg = linear_workgroup(wid, nwg);
    let base = wg * ROWS_PER_WG;
    var dot = 0.0;
#ifdef SUBGROUP_ROW
    let group = lid / LANES;
    let lane = lid % LANES;
    for (var k = 0u; k < ROWS_PER_WG / (WG / LANES); k += 1u) {
        let row = base + k * (WG / LANES) + group;
        var acc = 0.0;
        if (row < params.rows) {
            acc = row_sum(row, lane, LANES);
        }
        for (var m = 1u; m < LANES; m = m << 1u) {
            acc += subgroupShuffleXor(acc, m);
        }
        if (row < params.rows && lane == 0u) {
            y[params.off_y + row] = acc;
#ifdef DOT
            dot += x[params.off_x + row] * acc;
#endif
        }
    }
#else
    for (var k = 0u; k < ROWS_PER_WG / WG; k += 1u) {
        let row = base + k * WG + lid;
        if (row < params.rows) {
            let acc = row_sum(row, 0u, 1u);
            y[params.off_y + row] = acc;
#ifdef DOT
            dot += x[params.off_x + row] * acc;
#endif
        }
    }
#endif
#ifdef DOT
    let s = workgroup_sum(lid, dot);
    if (lid == 0u) {
        partials[params.off_dot + wg] = s;
    }
#endif
}
