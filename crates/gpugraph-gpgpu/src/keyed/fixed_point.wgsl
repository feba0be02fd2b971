// Fixed-point units of deterministic sums (Summation::Deterministic), shared by keyed.wgsl and
// keyed_finalize.wgsl; the CPU twins are cpu::fixed_point_exponent and cpu::fixed_point_term.

// Exponent e of a key's fixed-point unit 2^(e-31): every |value| of the key is below 2^e.
// Clamped so that the scale factor 2^(31-e) is a normal float (ldexp is exact) and subnormal
// values always quantize to 0 (some devices flush them). Mirrors cpu::fixed_point_exponent.
fn fixed_exponent(max_abs_bits: u32) -> i32 {
    return clamp(i32((max_abs_bits >> 23u) & 0xffu) - 126, -94, 128);
}

// v in units of 2^(e-31), rounded to nearest (ties to even), as 64-bit two's complement
// (x: low, y: high). The scaling is exact and |result| < 2^31.
fn fixed_term(v: f32, e: i32) -> vec2<u32> {
    let m = u32(round(ldexp(abs(v), 31 - e)));
    if (v < 0.0 && m != 0u) {
        return vec2<u32>(0u - m, 0xffffffffu);
    }
    return vec2<u32>(m, 0u);
}

