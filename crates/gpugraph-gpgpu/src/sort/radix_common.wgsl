// Shared by radix_histogram.wgsl and radix_pass.wgsl: parameters, the key source bindings,
// key loads and the workgroup scan. The generated header (source.rs) defines
//     RADIX_BITS, RADIX, PASSES, WG_SIZE (= RADIX), KEYS_PER_THREAD, TILE_ROWS and the
//     look-back and multisplit constants.

// One per dispatch, written when the graph compiles (radix.rs `PassParams`).
struct RadixParams {
    rows: u32,            // keys in the domain
    tiles: u32,           // tiles per pass
    shift: u32,           // bit position of this pass's digit
    ticket_word: u32,     // scratch word of this pass's tile ticket counter
    histogram_word: u32,  // scratch word of this pass's (exclusive) digit histogram
    status_word: u32,     // scratch word of this pass's tile status rows (pass 0 for the histogram)
    src_keys: u32,        // element offset of the domain in the src_keys binding
    dst_keys: u32,        // element offset of the domain in the dst_keys binding
    src_values: u32,      // element offset of the domain in the src_values binding
    dst_values: u32,      // element offset of the domain in the dst_values binding
    tiles_per_group: u32, // tiles per workgroup of the histogram pass
    // Fused key transform (KEY_CODE; keys.rs, cpu::KeyCode): `encode` != 0: keys are encoded
    // as they are loaded (the histogram and the first pass read the caller's keys); `decode`
    // != 0: keys are decoded as they are stored (the last pass writes the caller's output).
    encode: u32,
    decode: u32,
    code_float: u32,      // float32 keys (else integers)
    code_bias: u32,       // added to integer keys: 2^(key_bits-1) for int32, else 0
    code_flip: u32,       // XORed into the code: 2^key_bits - 1 descending, else 0
    // Key windows (radix.rs `KeyWindows`: a domain larger than one storage binding): this
    // dispatch handles tiles [tile_base, tile_end) and binds only their rows, so src_keys and
    // src_values are offsets of domain row 0 that wrap (u32) below the binding; one binding
    // per domain: 0 and tiles.
    tile_base: u32,
    tile_end: u32,
    // SPLIT_DST: output rows at or past `split` are stored through the _hi bindings, at the
    // (wrapping) offsets of domain row 0 in them.
    split: u32,
    dst_keys_hi: u32,
    dst_values_hi: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: RadixParams;
// The source keys, bound twice over the same bytes: as words (partial tiles, unaligned
// offsets) and as vec4 (whole tiles at a 4-element aligned offset).
@group(0) @binding(1) var<storage, read> src_keys: array<u32>;
@group(0) @binding(2) var<storage, read> src_keys4: array<vec4<u32>>;
// Tickets, histograms and tile status (layout: plan.rs).
@group(0) @binding(3) var<storage, read_write> scratch: array<atomic<u32>>;

// A key past the end of the domain: it ranks after every real key of its tile (its digit is
// the largest and its position the latest), so it never lands inside the valid prefix.
const PAD_KEY: u32 = 0xffffffffu;

var<workgroup> sh_scan: array<u32, WG_SIZE>;

fn digit_of(key: u32, shift: u32) -> u32 {
    return (key >> shift) & (RADIX - 1u);
}

#ifdef KEY_CODE
const NAN_CODE: u32 = 0xffffffffu;
const CANONICAL_NAN: u32 = 0x7fc00000u;

// The code of key bits (keys.wgsl's encode_key with the descending complement folded into
// code_flip, which is all ones for descending float32 keys): every NaN becomes NAN_CODE,
// last in both directions.
fn encode_key(bits: u32) -> u32 {
    if params.code_float != 0u {
        if (bits & 0x7fffffffu) > 0x7f800000u {
            return NAN_CODE;
        }
        return (bits ^ select(0x80000000u, 0xffffffffu, (bits >> 31u) != 0u)) ^ params.code_flip;
    }
    return (bits + params.code_bias) ^ params.code_flip;
}

// The key bits of a code; NaNs come back canonical.
fn decode_key(code: u32) -> u32 {
    if params.code_float != 0u {
        if code == NAN_CODE {
            return CANONICAL_NAN;
        }
        let c = code ^ params.code_flip;
        return c ^ select(0xffffffffu, 0x80000000u, (c >> 31u) != 0u);
    }
    return (code ^ params.code_flip) - params.code_bias;
}
#endif

// A loaded key as the pass sorts it: its code when this dispatch encodes.
fn key_in(bits: u32) -> u32 {
#ifdef KEY_CODE
    if params.encode != 0u {
        return encode_key(bits);
    }
#endif
    return bits;
}

// A sorted key as it is stored: its bits when this dispatch decodes.
fn key_out(code: u32) -> u32 {
#ifdef KEY_CODE
    if params.decode != 0u {
        return decode_key(code);
    }
#endif
    return code;
}

// Four keys (as sorted: key_in) starting at domain row `e`; rows at or past `end` read as
// PAD_KEY.
fn load_key4(e: u32, end: u32) -> vec4<u32> {
    var v = vec4<u32>(PAD_KEY);
    if e + 4u <= end && (params.src_keys & 3u) == 0u {
        v = src_keys4[(params.src_keys + e) >> 2u];
#ifdef KEY_CODE
        if params.encode != 0u {
            v = vec4<u32>(encode_key(v.x), encode_key(v.y), encode_key(v.z), encode_key(v.w));
        }
#endif
        return v;
    }
    for (var c = 0u; c < 4u; c += 1u) {
        if e + c < end {
            v[c] = key_in(src_keys[params.src_keys + e + c]);
        }
    }
    return v;
}

#ifdef SUBGROUPS
// Set by the entry point. With full subgroups (sg_full) the entry point numbers invocations
// t = sg_id * sg_size + sg_lane, so subgroup scans run in invocation order whatever the
// driver's lane mapping; otherwise t is the local invocation index and scans use sh_scan.
var<private> sg_full: bool;
var<private> sg_lane: u32;
var<private> sg_size: u32;
var<private> sg_id: u32;
var<private> sg_count: u32;
var<workgroup> sh_scan_total: u32;

// workgroup_scan with subgroup scans: 3 barriers instead of 2 per Hillis-Steele step (18 for
// 256 invocations). The first subgroup scans the subgroup totals, sg_size at a time.
fn workgroup_scan_subgroups(v: u32) -> vec2<u32> {
    let incl = subgroupInclusiveAdd(v);
    if sg_lane == sg_size - 1u {
        sh_scan[sg_id] = incl;
    }
    workgroupBarrier();
    if sg_id == 0u {
        var carry = 0u;
        for (var base = 0u; base < sg_count; base += sg_size) {
            let i = base + sg_lane;
            var p = 0u;
            if i < sg_count {
                p = sh_scan[i];
            }
            let pi = subgroupInclusiveAdd(p);
            if i < sg_count {
                sh_scan[i] = carry + pi - p;
            }
            carry += subgroupShuffle(pi, sg_size - 1u);
        }
        if sg_lane == 0u {
            sh_scan_total = carry;
        }
    }
    workgroupBarrier();
    let r = vec2<u32>(sh_scan[sg_id] + incl - v, sh_scan_total);
    workgroupBarrier();
    return r;
}
#endif

// Exclusive scan of one value per invocation in invocation order: (exclusive, total).
// Ends with a barrier, so calls can follow each other.
fn workgroup_scan(t: u32, v: u32) -> vec2<u32> {
#ifdef SUBGROUP_SCANS
    if sg_full {
        return workgroup_scan_subgroups(v);
    }
#endif
    return workgroup_scan_shared(t, v);
}

// Hillis-Steele over one array with a barrier between the reads and the writes of each step.
fn workgroup_scan_shared(t: u32, v: u32) -> vec2<u32> {
    var acc = v;
    sh_scan[t] = acc;
    workgroupBarrier();
    for (var d = 1u; d < WG_SIZE; d <<= 1u) {
        var add = 0u;
        if t >= d {
            add = sh_scan[t - d];
        }
        workgroupBarrier();
        acc += add;
        sh_scan[t] = acc;
        workgroupBarrier();
    }
    let total = sh_scan[WG_SIZE - 1u];
    workgroupBarrier();
    return vec2<u32>(acc - v, total);
}
