//! WGSL helper functions of the generated shaders, each the GPU twin of a rule in `eval.rs`.
//!
//! WGSL (like Vulkan without float controls) lets a compiler assume floats are finite, fold
//! `x * 0`, `x - x` or `x / 0`, contract `a * b + c` into a fused multiply-add, reassociate,
//! and flush subnormals. The helpers pin one answer down on every device:
//! - `keep_*` / `hold_*`: opaque identities, `x ^ zero` and `x | zero` with `zero = ~fence`
//!   read at run time. Every float operand passes through one (left operands through `keep`,
//!   right ones through `hold`, so `x - x` has two operands the compiler cannot prove equal)
//!   and literals are XORed with the same zero (an AND with all ones would not hide a literal
//!   0: `0 & m` is 0 for every m, and lavapipe then folded `0 - a` into `-a`); no float
//!   operation can then be folded, contracted or reassociated with another.
//! - `ftz_*`: subnormals become a zero of the same sign, on every load and every result (what
//!   GPUs that flush do; the ones that do not are made to agree).
//! - `neg_*` / `abs_*`: sign-bit operations (exact for ±0 and NaN).
//! - `div_f32`, `sqrt_f32`, `sin_f32`, ..., `pow_f32`: IEEE / C99 special cases decided on the
//!   bits before the builtin runs; the builtin only sees finite, in-domain arguments.
//! - comparisons of floats map bits to an ordered integer key (NaN never ordered).
//!
//! Width-generic helpers are named `<base>_<suffix>` with suffix `f32`, `v2f`, `v3f` or `v4f`.

use crate::expr::types::{IntegerRounding, ScalarType, ValueType};

/// The WGSL type and its bit type for a helper suffix.
fn suffix_types(sfx: &str) -> Option<(String, String)> {
    Some(match sfx {
        "f32" => ("f32".into(), "u32".into()),
        "v2f" | "v3f" | "v4f" => {
            let n = &sfx[1..2];
            (format!("vec{n}<f32>"), format!("vec{n}<u32>"))
        }
        _ => return None,
    })
}

/// The suffix of width-generic float helpers for `width` components.
pub(crate) fn suffix(width: u8) -> &'static str {
    match width {
        1 => "f32",
        2 => "v2f",
        3 => "v3f",
        _ => "v4f",
    }
}

fn generic(base: &str, t: &str, u: &str) -> Option<String> {
    let body = match base {
        "keep" => "// Opaque identity (left operands): ~fence is zero at run time.\n\
                   fn NAME(x: $T) -> $T { return bitcast<$T>(bitcast<$U>(x) ^ $U(~fence)); }",
        "hold" => "// Opaque identity (right operands): ~fence is zero at run time.\n\
                   fn NAME(x: $T) -> $T { return bitcast<$T>(bitcast<$U>(x) | $U(~fence)); }",
        "ftz" => "// Subnormal -> zero of the same sign.\n\
                  fn NAME(x: $T) -> $T {\n    let b = bitcast<$U>(x);\n    \
                  return select(x, bitcast<$T>(b & $U(0x80000000u)), (b & $U(0x7f800000u)) == $U(0u));\n}",
        "neg" => "// Negation flips the sign bit (-0 and NaN included).\n\
                  fn NAME(x: $T) -> $T { return bitcast<$T>(bitcast<$U>(x) ^ $U(0x80000000u)); }",
        "abs" => "// Magnitude clears the sign bit.\n\
                  fn NAME(x: $T) -> $T { return bitcast<$T>(bitcast<$U>(x) & $U(0x7fffffffu)); }",
        _ => return None,
    };
    Some(format!("{body}\n"))
        .map(|s| s.replace("NAME", &format!("{base}_SFX")))
        .map(|s| s.replace("$T", t).replace("$U", u))
}

/// WGSL `bool` / `vecN<bool>`: components that are not zero (floats: not ±0, by bits).
pub(crate) fn truthy(c: &str, ty: ValueType) -> String {
    match (ty.scalar, ty.width) {
        (ScalarType::Float32, 1) => format!("(bitcast<u32>({c}) & 0x7fffffffu) != 0u"),
        (ScalarType::Float32, w) => {
            format!("(bitcast<vec{w}<u32>>({c}) & vec{w}<u32>(0x7fffffffu)) != vec{w}<u32>()")
        }
        (_, 1) => format!("{c} != {}()", ty.scalar.wgsl()),
        (_, w) => format!("{c} != vec{w}<{}>()", ty.scalar.wgsl()),
    }
}

pub(crate) fn cast_helper(
    from: ScalarType,
    to: ScalarType,
    rounding: IntegerRounding,
) -> Option<&'static str> {
    use IntegerRounding::*;
    use ScalarType::*;
    Some(match (from, to, rounding) {
        (a, b, _) if a == b => return None,
        (Float32, Sint32, Truncate) => "cast_f32_i32_trunc",
        (Float32, Sint32, Nearest) => "cast_f32_i32_nearest",
        (Float32, Uint32, Truncate) => "cast_f32_u32_trunc",
        (Float32, Uint32, Nearest) => "cast_f32_u32_nearest",
        (Sint32, Float32, _) => "cast_i32_f32",
        (Uint32, Float32, _) => "cast_u32_f32",
        (Sint32, Uint32, _) => "cast_i32_u32",
        (Uint32, Sint32, _) => "cast_u32_i32",
        _ => unreachable!("equal types handled first"),
    })
}

/// The source of helper `name` (empty for an unknown name).
pub(crate) fn helper_source(name: &str) -> String {
    if let Some((base, sfx)) = name.rsplit_once('_') {
        if let Some((t, u)) = suffix_types(sfx) {
            if let Some(s) = generic(base, &t, &u) {
                return s.replace("SFX", sfx);
            }
        }
    }
    match name {
        "cast_f32_i32_trunc" => CAST_F32_I32_TRUNC,
        "cast_f32_i32_nearest" => CAST_F32_I32_NEAREST,
        "cast_f32_u32_trunc" => CAST_F32_U32_TRUNC,
        "cast_f32_u32_nearest" => CAST_F32_U32_NEAREST,
        "cast_i32_f32" => CAST_I32_F32,
        "cast_u32_f32" => CAST_U32_F32,
        "cast_i32_u32" => CAST_I32_U32,
        "cast_u32_i32" => CAST_U32_I32,
        "eq_f32" => EQ_F32,
        "order_f32" => ORDER_F32,
        "div_f32" => DIV_F32,
        "sqrt_f32" => SQRT_F32,
        "sin_f32" => SIN_F32,
        "cos_f32" => COS_F32,
        "tan_f32" => TAN_F32,
        "exp_f32" => EXP_F32,
        "log_f32" => LOG_F32,
        "pow_f32" => POW_F32,
        _ => "",
    }
    .to_string()
}

/// Helpers a helper calls (added with it).
pub(crate) fn helper_dependencies(name: &str) -> &'static [&'static str] {
    match name {
        "cast_i32_f32" => &["cast_u32_f32"],
        "pow_f32" => &["keep_f32", "hold_f32"],
        _ => &[],
    }
}

// Float→integer: NaN and range are decided on the bits before any float operation, because
// WGSL lets implementations assume floats are finite. 0x4f000000 = 2^31, 0x4f800000 = 2^32.
const CAST_F32_I32_TRUNC: &str = "// float32 -> sint32: truncate, saturate, NaN -> 0.
fn cast_f32_i32_trunc(v: f32) -> i32 {
    let bits = bitcast<u32>(v);
    let mag = bits & 0x7fffffffu;
    if (mag > 0x7f800000u) { return 0i; }
    if (mag >= 0x4f000000u) { return select(2147483647i, bitcast<i32>(0x80000000u), bits >= 0x80000000u); }
    return i32(v);
}
";

// `trunc(v) + sign(v)` when the dropped fraction is at least one half: exact (the fraction of a
// float32 is representable), unlike `v + 0.5`, which rounds 0.49999997 up.
const CAST_F32_I32_NEAREST: &str = "// float32 -> sint32: nearest (ties away from zero), saturate, NaN -> 0.
fn cast_f32_i32_nearest(v: f32) -> i32 {
    let bits = bitcast<u32>(v);
    let mag = bits & 0x7fffffffu;
    if (mag > 0x7f800000u) { return 0i; }
    if (mag >= 0x4f000000u) { return select(2147483647i, bitcast<i32>(0x80000000u), bits >= 0x80000000u); }
    let t = trunc(v);
    return i32(select(t, t + sign(v), abs(v - t) >= 0.5f));
}
";

const CAST_F32_U32_TRUNC: &str =
    "// float32 -> uint32: truncate, saturate (negatives -> 0), NaN -> 0.
fn cast_f32_u32_trunc(v: f32) -> u32 {
    let bits = bitcast<u32>(v);
    if ((bits & 0x7fffffffu) > 0x7f800000u || bits >= 0x80000000u) { return 0u; }
    if (bits >= 0x4f800000u) { return 4294967295u; }
    return u32(v);
}
";

const CAST_F32_U32_NEAREST: &str =
    "// float32 -> uint32: nearest (ties away from zero), saturate, NaN -> 0.
fn cast_f32_u32_nearest(v: f32) -> u32 {
    let bits = bitcast<u32>(v);
    if ((bits & 0x7fffffffu) > 0x7f800000u || bits >= 0x80000000u) { return 0u; }
    if (bits >= 0x4f800000u) { return 4294967295u; }
    let t = trunc(v);
    return u32(select(t, t + 1.0f, v - t >= 0.5f));
}
";

// Integer→float: WGSL leaves the rounding of inexact conversions to the implementation; this
// rounds to nearest even like the CPU. Above 2^24, keep the top 24 bits, round on the rest,
// then scale by an exact power of two.
const CAST_U32_F32: &str = "// uint32 -> float32: round to nearest even.
fn cast_u32_f32(x: u32) -> f32 {
    if (x < 0x1000000u) { return f32(x); }
    let shift = 8u - countLeadingZeros(x);
    var m = x >> shift;
    let rest = x & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (m & 1u) == 1u)) { m = m + 1u; }
    return f32(m) * bitcast<f32>((127u + shift) << 23u);
}
";

const CAST_I32_F32: &str =
    "// sint32 -> float32: round to nearest even (magnitude via cast_u32_f32).
fn cast_i32_f32(x: i32) -> f32 {
    let negative = x < 0i;
    let r = cast_u32_f32(select(bitcast<u32>(x), 0u - bitcast<u32>(x), negative));
    return select(r, -r, negative);
}
";

const CAST_I32_U32: &str = "// sint32 -> uint32: saturate (negatives -> 0).
fn cast_i32_u32(x: i32) -> u32 {
    return bitcast<u32>(max(x, 0i));
}
";

const CAST_U32_I32: &str = "// uint32 -> sint32: saturate at 2^31 - 1.
fn cast_u32_i32(x: u32) -> i32 {
    return bitcast<i32>(min(x, 2147483647u));
}
";

const EQ_F32: &str = "// Exact float32 equality by bits: -0 == 0, NaN equals nothing.
fn eq_f32(a: f32, b: f32) -> bool {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    let nan = (ua & 0x7fffffffu) > 0x7f800000u;
    return (ua == ub && !nan) || ((ua | ub) & 0x7fffffffu) == 0u;
}
";

// Ordered comparisons map a non-NaN float to an integer key with the same order (-0 == +0):
// integer compares are exact on every device; NaN is tested on the bits by the caller.
const ORDER_F32: &str =
    "// Float -> integer key of the same order (NaN excluded by the caller, -0 == 0).
fn order_f32(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let z = select(b, 0u, (b & 0x7fffffffu) == 0u);
    return select(z | 0x80000000u, ~z, z >= 0x80000000u);
}
";

// GPUs divide as x * (1 / y), and 1 / y underflows for |y| > 2^126 (WGSL bounds the error of
// x / y only for |y| in [2^-126, 2^126]): there divide by y / 4 and scale back, both exact.
const DIV_F32: &str = "// x / y, also for |y| > 2^126.
fn div_f32(x: f32, y: f32) -> f32 {
    if ((bitcast<u32>(y) & 0x7fffffffu) > 0x7e800000u) {
        let y4 = bitcast<f32>(bitcast<u32>(y * 0.25f) & fence);
        let q4 = bitcast<f32>(bitcast<u32>(x / y4) & fence);
        return q4 * 0.25f;
    }
    return x / y;
}
";

const SQRT_F32: &str = "// sqrt: ±0 and +inf are themselves; negatives and NaN are NaN.
fn sqrt_f32(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) == 0u || b == 0x7f800000u) { return x; }
    if (b > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    return sqrt(x);
}
";

const SIN_F32: &str = "// sin: ±0 keep their sign; ±inf and NaN are NaN.
fn sin_f32(x: f32) -> f32 {
    let m = bitcast<u32>(x) & 0x7fffffffu;
    if (m >= 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    if (m == 0u) { return x; }
    return sin(x);
}
";

const COS_F32: &str = "// cos: cos(±0) = 1; ±inf and NaN are NaN.
fn cos_f32(x: f32) -> f32 {
    let m = bitcast<u32>(x) & 0x7fffffffu;
    if (m >= 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    if (m == 0u) { return 1.0f; }
    return cos(x);
}
";

const TAN_F32: &str = "// tan: ±0 keep their sign; ±inf and NaN are NaN.
fn tan_f32(x: f32) -> f32 {
    let m = bitcast<u32>(x) & 0x7fffffffu;
    if (m >= 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    if (m == 0u) { return x; }
    return tan(x);
}
";

const EXP_F32: &str = "// exp: exp(±0) = 1, exp(+inf) = +inf, exp(-inf) = 0, NaN stays NaN.
fn exp_f32(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) > 0x7f800000u || b == 0x7f800000u) { return x; }
    if (b == 0xff800000u) { return 0.0f; }
    if ((b & 0x7fffffffu) == 0u) { return 1.0f; }
    return exp(x);
}
";

const LOG_F32: &str =
    "// log: log(±0) = -inf, log(1) = 0, log(+inf) = +inf, negatives and NaN are NaN.
fn log_f32(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) == 0u) { return bitcast<f32>(0xff800000u); }
    if (b > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    if (b == 0x7f800000u) { return x; }
    if (b == 0x3f800000u) { return 0.0f; }
    return log(x);
}
";

// C99 pow (what the CPU's f64 pow does) on the bits; WGSL's pow is exp2(y * log2(x)) with no
// guarantee for x <= 0, NaN or infinities. Only finite x > 0 reach exp2/log2.
const POW_F32: &str = "// pow with the C99 special cases; exp2(y * log2(|x|)) otherwise.
fn pow_f32(x: f32, y: f32) -> f32 {
    let bx = bitcast<u32>(x);
    let by = bitcast<u32>(y);
    let ax = bx & 0x7fffffffu;
    let ay = by & 0x7fffffffu;
    if (ay == 0u || bx == 0x3f800000u) { return 1.0f; }
    if (ax > 0x7f800000u || ay > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    let y_negative = by >= 0x80000000u;
    if (ay == 0x7f800000u) {
        if (ax == 0x3f800000u) { return 1.0f; }
        let grows = (ax > 0x3f800000u) != y_negative;
        return select(0.0f, bitcast<f32>(0x7f800000u), grows);
    }
    // Whether y is an integer, and odd: exponent e, fraction bits below 2^0.
    let e = i32(ay >> 23u) - 127;
    var integer = ay >= 0x4b800000u;
    var odd = false;
    if (e >= 0 && e < 24) {
        let m = (ay & 0x7fffffu) | 0x800000u;
        let drop = u32(23 - e);
        integer = (m & ((1u << drop) - 1u)) == 0u;
        odd = integer && ((m >> drop) & 1u) == 1u;
    }
    let flip = select(0u, 0x80000000u, bx >= 0x80000000u && odd);
    if (ax == 0u || ax == 0x7f800000u) {
        // |x| = 0: +inf for y < 0, 0 for y > 0; |x| = inf the other way round.
        let huge = (ax == 0u) == y_negative;
        return bitcast<f32>(select(0u, 0x7f800000u, huge) ^ flip);
    }
    if (bx >= 0x80000000u && !integer) { return bitcast<f32>(0x7fc00000u); }
    let l = keep_f32(log2(bitcast<f32>(ax)));
    let r = exp2(keep_f32(hold_f32(y) * l));
    return bitcast<f32>(bitcast<u32>(r) ^ flip);
}
";
