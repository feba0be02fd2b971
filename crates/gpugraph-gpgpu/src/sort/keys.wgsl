// Order-preserving key transforms around the uint32 ascending radix core (sort/keys.rs).
// `encode` maps each key to a uint32 whose ascending order is the requested order; `decode`
// maps the sorted codes back to the original key bits, in place. CPU twins: cpu::KeyCode's
// encode and decode; the contract (NaN canonicalization, key_bits) is keys.rs's SortOptions.
//
// Integer keys (uint32 and int32): code = (bits + bias) ^ flip (wrapping), where `bias` =
// 2^(key_bits-1) moves the int32 range [-2^(key_bits-1), 2^(key_bits-1)) onto [0, 2^key_bits)
// (0 for uint32) and `flip` = 2^key_bits - 1 for descending order reverses the order inside
// key_bits (0 ascending). Both steps are bijections of u32, so decoding restores every key's
// exact bits, even for keys outside the promised key_bits.
// Float keys (float32, key_bits 32): every NaN becomes the code 0xffffffff (last, in both
// directions, all NaNs equal); other keys take the usual sign-magnitude flip, complemented
// for descending order. Pure bit operations: no float arithmetic, so no NaN or denormal
// behaviour of the device is involved.
#include "shared/dispatch.wgsl"

struct KeyParams {
    rows: u32,
    src: u32,        // element offsets of the views inside their bindings
    dst: u32,
    is_float: u32,
    descending: u32,
    bias: u32,
    flip: u32,
    pad0: u32,
}

const NAN_CODE: u32 = 0xffffffffu;
const CANONICAL_NAN: u32 = 0x7fc00000u;
const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: KeyParams;
// `#ifdef DECODE`: the decode variant works in place on one binding.
#ifdef DECODE
@group(0) @binding(1) var<storage, read_write> dst_keys: array<u32>;
#else
@group(0) @binding(1) var<storage, read> src_keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst_keys: array<u32>;
#endif

fn encode_key(bits: u32) -> u32 {
    if params.is_float != 0u {
        if (bits & 0x7fffffffu) > 0x7f800000u {
            return NAN_CODE;
        }
        var code = bits | 0x80000000u;
        if (bits & 0x80000000u) != 0u {
            code = ~bits;
        }
        if params.descending != 0u {
            code = ~code;
        }
        return code;
    }
    return (bits + params.bias) ^ params.flip;
}

fn decode_key(code: u32) -> u32 {
    if params.is_float != 0u {
        if code == NAN_CODE {
            return CANONICAL_NAN;
        }
        var c = code;
        if params.descending != 0u {
            c = ~c;
        }
        if (c & 0x80000000u) != 0u {
            return c & 0x7fffffffu;
        }
        return ~c;
    }
    return (code ^ params.flip) - params.bias;
}

fn row_of(wg: vec3<u32>, num_wg: vec3<u32>, lid: u32) -> u32 {
    return linear_workgroup(wg, num_wg) * WG + lid;
}

#ifndef DECODE
@compute @workgroup_size(256)
fn encode(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = row_of(wg, num_wg, lid);
    if row < params.rows {
        dst_keys[params.dst + row] = encode_key(src_keys[params.src + row]);
    }
}
#else

@compute @workgroup_size(256)
fn decode(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = row_of(wg, num_wg, lid);
    if row < params.rows {
        dst_keys[params.dst + row] = decode_key(dst_keys[params.dst + row]);
    }
}
#endif
