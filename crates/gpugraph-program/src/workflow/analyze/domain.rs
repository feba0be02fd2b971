//! The extent the positions kernel (positions.wgsl) maps onto the unit square, on the host:
//! what hosts use to report the domain the GPU used, and what the oracle (`cpu`) builds on.

/// One float32 step outwards from `v` (down when `up` is false), as positions.wgsl's
/// `step_out`: zero steps to the smallest normal number, the largest finite value stays.
pub fn step_out(v: f32, up: bool) -> f32 {
    let b = v.to_bits();
    if b & 0x7fff_ffff == 0 {
        return if up {
            f32::from_bits(0x0080_0000)
        } else {
            f32::from_bits(0x8080_0000)
        };
    }
    if b & 0x7fff_ffff == 0x7f7f_ffff && (v > 0.0) == up {
        return v;
    }
    if (v > 0.0) == up {
        f32::from_bits(b + 1)
    } else {
        f32::from_bits(b - 1)
    }
}

/// The extent `[lo, hi]` the positions kernel maps onto `[0, 1]`: widened one step outwards
/// when `widen`.
pub fn widened([lo, hi]: [f32; 2], widen: bool) -> [f32; 2] {
    if widen && lo.is_finite() && hi.is_finite() {
        [step_out(lo, false), step_out(hi, true)]
    } else {
        [lo, hi]
    }
}
