// Initialization and finalization of the keyed accumulators (see keyed.wgsl for the layout).
// The same generated header precedes this file. `init` writes identities to every word of
// `acc` once per encoding; `finalize` decodes one key per invocation into the caller's views:
// count, sum (0 for empty keys), min/max (NaN for empty keys), mean = sum / count (NaN for
// empty keys), and invocation 0 also writes the ignored-row count and the gate flag.

#include "shared/dispatch.wgsl"
#include "keyed/fixed_point.wgsl"

struct Params {
    keys: u32,
    words: u32,
    count_off: u32,
    sum_off: u32,
    min_off: u32,
    max_off: u32,
    mean_off: u32,
    ignored_off: u32,
    flag_off: u32,
    // 0x7fc00000, passed in because a NaN const-expression is a shader-creation error.
    nan_bits: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> acc: array<u32>;
@group(0) @binding(2) var<storage, read_write> out_count: array<u32>;
@group(0) @binding(3) var<storage, read_write> out_sum: array<f32>;
@group(0) @binding(4) var<storage, read_write> out_min: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_max: array<f32>;
@group(0) @binding(6) var<storage, read_write> out_mean: array<f32>;
@group(0) @binding(7) var<storage, read_write> out_ignored: array<u32>;
@group(0) @binding(8) var<storage, read_write> out_flag: array<u32>;

const NONE: u32 = 0xffffffffu;
const MIN_IDENTITY: u32 = 0xff800000u;
const MAX_IDENTITY: u32 = 0x007fffffu;

fn decode(e: u32) -> f32 {
    return bitcast<f32>(select(~e, e & 0x7fffffffu, (e & 0x80000000u) != 0u));
}

// Both kernels stride over their range with every launched invocation (the grid is bounded).
fn invocation(wg: vec3<u32>, num_wg: vec3<u32>, lane: u32) -> u32 {
    return linear_workgroup(wg, num_wg) * WG + lane;
}

fn invocations(num_wg: vec3<u32>) -> u32 {
    return num_wg.x * num_wg.y * WG;
}

@compute @workgroup_size(WG)
fn init(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    for (var i = invocation(wg, num_wg, lane); i < params.words; i += invocations(num_wg)) {
        var v = 0u;
        if (i >= STATUS_WORDS) {
            let s = (i - STATUS_WORDS) % STRIDE;
            if (s == MIN_AT) {
                v = MIN_IDENTITY;
            } else if (s == MAX_AT) {
                v = MAX_IDENTITY;
            }
        }
        acc[i] = v;
    }
}

// Low 32 bits of the 64-bit (hi:lo) shifted right by s in 1..=63.
fn shr64(lo: u32, hi: u32, s: u32) -> u32 {
    if (s >= 32u) {
        return hi >> (s - 32u);
    }
    return (lo >> s) | (hi << (32u - s));
}

// Whether any of the bits [0, n) of (hi:lo) is set, n in 0..=63.
fn low_bits_set(lo: u32, hi: u32, n: u32) -> bool {
    if (n == 0u) {
        return false;
    }
    if (n < 32u) {
        return (lo & ((1u << n) - 1u)) != 0u;
    }
    if (n == 32u) {
        return lo != 0u;
    }
    return lo != 0u || (hi & ((1u << (n - 32u)) - 1u)) != 0u;
}

// Bit n of (hi:lo), n in 0..=63.
fn bit64(lo: u32, hi: u32, n: u32) -> bool {
    if (n < 32u) {
        return ((lo >> n) & 1u) != 0u;
    }
    return ((hi >> (n - 32u)) & 1u) != 0u;
}

// The fixed-point total (hi:lo, two's complement, units of 2^(e-31)) rounded once to the
// nearest float32, ties to even, with integer operations only so that every device gives the
// same bits (float conversions and additions may round either way under WGSL's rules).
// Mirrors cpu::fixed_point_sum. e >= -94 keeps every nonzero result normal; a result beyond
// float32's range is infinite, as the float sum would be.
fn fixed_to_f32(lo_in: u32, hi_in: u32, scale_bits: u32) -> f32 {
    let negative = (hi_in & 0x80000000u) != 0u;
    var lo = lo_in;
    var hi = hi_in;
    if (negative) {
        lo = ~lo_in + 1u;
        hi = ~hi_in + select(0u, 1u, lo == 0u);
    }
    if (lo == 0u && hi == 0u) {
        return 0.0;
    }
    // p: position of the leading one of the magnitude.
    var p = i32(firstLeadingBit(lo));
    if (hi != 0u) {
        p = 32 + i32(firstLeadingBit(hi));
    }
    var significand: u32;
    if (p <= 23) {
        significand = lo << u32(23 - p);
    } else {
        let shift = u32(p - 23);
        significand = shr64(lo, hi, shift);
        let half = bit64(lo, hi, shift - 1u);
        let sticky = low_bits_set(lo, hi, shift - 1u);
        if (half && (sticky || (significand & 1u) != 0u)) {
            significand += 1u;
            if (significand == 0x1000000u) {
                significand >>= 1u;
                p += 1;
            }
        }
    }
    let sign = select(0u, 0x80000000u, negative);
    let biased = p + fixed_exponent(scale_bits) - 31 + 127;
    if (biased >= 255) {
        // Infinity built at run time (an infinite constant expression is a shader error).
        return bitcast<f32>(sign | (params.nan_bits & 0x7f800000u));
    }
    return bitcast<f32>(sign | (u32(biased) << 23u) | (significand & 0x7fffffu));
}

fn finalize_key(k: u32) {
    let nan = bitcast<f32>(params.nan_bits);
    let base = STATUS_WORDS + k * STRIDE;
    var count = 0u;
    if (COUNT_AT != NONE) {
        count = acc[base + COUNT_AT];
    }
    var sum = 0.0;
    if (FIXED_SUM) {
        sum = fixed_to_f32(acc[base + SUM_AT], acc[base + SUM_AT + 1u], acc[base + SCALE_AT]);
    } else if (SUM_AT != NONE) {
        sum = bitcast<f32>(acc[base + SUM_AT]);
    }
    if (HAS_COUNT) {
        out_count[params.count_off + k] = count;
    }
    if (HAS_SUM) {
        out_sum[params.sum_off + k] = sum;
    }
    if (HAS_MIN) {
        let e = acc[base + MIN_AT];
        out_min[params.min_off + k] = select(decode(e), nan, e == MIN_IDENTITY);
    }
    if (HAS_MAX) {
        let e = acc[base + MAX_AT];
        out_max[params.max_off + k] = select(decode(e), nan, e == MAX_IDENTITY);
    }
    if (HAS_MEAN) {
        out_mean[params.mean_off + k] = select(sum / f32(count), nan, count == 0u);
    }
}

@compute @workgroup_size(WG)
fn finalize(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
            @builtin(local_invocation_index) lane: u32) {
    let first = invocation(wg, num_wg, lane);
    if (first == 0u) {
        if (HAS_IGNORED) {
            out_ignored[params.ignored_off] = acc[0];
        }
        if (HAS_FLAG) {
            out_flag[params.flag_off] = acc[1];
        }
    }
    for (var k = first; k < params.keys; k += invocations(num_wg)) {
        finalize_key(k);
    }
}
