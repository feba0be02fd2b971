// Grid cell keys, assembled after keyed/keyed.wgsl (which supplies `params`, `KeyIn` =
// vec2<f32> and `NO_KEY`). key_f0 = (x_min, x_max, y_min, y_max), key_f1 = (x_scale,
// y_scale) with scale = cells / (max - min), key_u = (nx, ny). Cells are row-major
// (cy * nx + cx); each axis maps [min, max] with max included in the last cell, by
// floor((v - min) * scale) in float32 (reproduced bit for bit by the CPU oracle).

fn axis_cell(v: f32, lo: f32, scale: f32, n: u32) -> u32 {
    let y = floor((v - lo) * scale);
    if (y >= f32(n)) {
        return n - 1u;
    }
    return u32(y);
}

fn row_key(p: KeyIn) -> u32 {
    let d = params.key_f0;
    if (!(p.x >= d.x && p.x <= d.y && p.y >= d.z && p.y <= d.w)) {
        return NO_KEY;
    }
    let cx = axis_cell(p.x, d.x, params.key_f1.x, params.key_u.x);
    let cy = axis_cell(p.y, d.z, params.key_f1.y, params.key_u.y);
    return cy * params.key_u.x + cx;
}
