// CSR sparse matrix × dense vector, one row per invocation: y[row] = Σ values[k] · x[cols[k]]
// for k in row_offsets[row] .. row_offsets[row + 1]. Offsets are clamped to nnz and columns
// outside x are skipped, so malformed matrices never read out of bounds (their rows are then
// partial sums; nothing is read back to validate them).
// params: [rows, row_offsets, cols, values, x, y element offsets..., x length, nnz]
#include "shared/dispatch.wgsl"

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> row_offsets: array<u32>;
@group(0) @binding(3) var<storage, read> cols: array<u32>;
@group(0) @binding(4) var<storage, read> vals: array<f32>;
@group(0) @binding(5) var<storage, read> x: array<f32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn spmv_csr(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
            @builtin(local_invocation_index) lane: u32) {
    let row = linear_workgroup(wg, num_wg) * WORKGROUP_SIZE + lane;
    if (row >= params[0]) {
        return;
    }
    let nnz = params[7];
    let start = min(row_offsets[params[1] + row], nnz);
    let end = min(row_offsets[params[1] + row + 1u], nnz);
    var acc = 0.0;
    for (var k = start; k < end; k++) {
        let c = cols[params[2] + k];
        if (c < params[6]) {
            acc += vals[params[3] + k] * x[params[4] + c];
        }
    }
    y[params[5] + row] = acc;
}
