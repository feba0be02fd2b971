// Grid positions: out[i] = (tx, ty) with t = (v - lo) / (hi - lo) clamped to [0, 1], where
// [lo, hi] is the GPU-resident extent of the axis, so the grid binning runs on the unit square
// whatever the data's domain (known only on the GPU). A degenerate extent (lo == hi) puts
// every value at 0.5, the centre of the domain [lo - 0.5, hi + 0.5]; an empty extent (NaN)
// and non-finite values give NaN, which the grid ignores.
// params: [rows, out offset (components), x offset, y offset, x extent offset, y extent offset].

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> xs: array<f32>;
@group(0) @binding(3) var<storage, read> ys: array<f32>;
@group(0) @binding(4) var<storage, read> x_extent: array<f32>;
@group(0) @binding(5) var<storage, read> y_extent: array<f32>;

fn finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn unit(v: f32, lo: f32, hi: f32) -> f32 {
    let nan = bitcast<f32>(0x7fc00000u);
    if (!finite(v) || !finite(lo) || !finite(hi)) {
        return nan;
    }
    if (hi > lo) {
        return clamp((v - lo) / (hi - lo), 0.0, 1.0);
    }
    return 0.5;
}

fn row(i: u32) {
    let o = params[1] + 2u * i;
    out[o] = unit(xs[params[2] + i], x_extent[params[4]], x_extent[params[4] + 1u]);
    out[o + 1u] = unit(ys[params[3] + i], y_extent[params[5]], y_extent[params[5] + 1u]);
}
