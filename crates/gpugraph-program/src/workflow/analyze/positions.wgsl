// Grid positions: out[i] = (tx, ty) with t = (v - lo) / (hi - lo) clamped to [0, 1], where
// [lo, hi] is the GPU-resident extent of the axis, so the grid binning runs on the unit square
// whatever the data's domain (known only on the GPU). A degenerate extent (lo == hi) puts
// every value at 0.5, the centre of the domain [lo - 0.5, hi + 0.5]; an empty extent (NaN)
// and non-finite values give NaN, which the grid ignores.
// When hi - lo overflows float32, t is computed from halved operands (exact scaling by 2).
// WIDEN_X / WIDEN_Y (set by the host for columns whose float32 upload rounded some values)
// first widen the extent by one float32 step on each side, so the domain contains every
// original value that rounded into it; the host reports the same widened domain.
// params: [rows, out offset (components), x offset, y offset, x extent offset, y extent offset].

#include "shared/dispatch.wgsl"
#include "analyze/driver.wgsl"

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> xs: array<f32>;
@group(0) @binding(3) var<storage, read> ys: array<f32>;
@group(0) @binding(4) var<storage, read> x_extent: array<f32>;
@group(0) @binding(5) var<storage, read> y_extent: array<f32>;

fn finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

// One float32 step away from zero... towards +inf (`up`) or -inf; zero steps to the smallest
// normal number, not a subnormal that a device may flush to zero. Finite input only; the
// largest finite value stays itself.
fn step_out(v: f32, up: bool) -> f32 {
    let b = bitcast<u32>(v);
    if ((b & 0x7fffffffu) == 0u) {
        return select(bitcast<f32>(0x80800000u), bitcast<f32>(0x00800000u), up);
    }
    if ((b & 0x7fffffffu) == 0x7f7fffffu && (v > 0.0) == up) {
        return v;
    }
    if ((v > 0.0) == up) {
        return bitcast<f32>(b + 1u);
    }
    return bitcast<f32>(b - 1u);
}

fn unit(v: f32, lo_in: f32, hi_in: f32, widen: bool) -> f32 {
    let nan = bitcast<f32>(0x7fc00000u);
    if (!finite(v) || !finite(lo_in) || !finite(hi_in)) {
        return nan;
    }
    var lo = lo_in;
    var hi = hi_in;
    if (widen) {
        lo = step_out(lo, false);
        hi = step_out(hi, true);
    }
    if (hi > lo) {
        let width = hi - lo;
        if (finite(width)) {
            return clamp((v - lo) / width, 0.0, 1.0);
        }
        return clamp((v * 0.5 - lo * 0.5) / (hi * 0.5 - lo * 0.5), 0.0, 1.0);
    }
    return 0.5;
}

fn row(i: u32) {
    let o = params[1] + 2u * i;
    out[o] = unit(xs[params[2] + i], x_extent[params[4]], x_extent[params[4] + 1u], WIDEN_X);
    out[o + 1u] = unit(ys[params[3] + i], y_extent[params[5]], y_extent[params[5] + 1u], WIDEN_Y);
}
