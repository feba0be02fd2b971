// Shared by radix_histogram.wgsl and radix_pass.wgsl: parameters, the key source bindings,
// key loads and the workgroup scan. The generated header (source.rs) defines
//     RADIX_BITS, RADIX, PASSES, WG_SIZE (= RADIX), KEYS_PER_THREAD, TILE_ROWS, SPIN_LIMIT.

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
    pad: u32,
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

// Four keys starting at domain row `e`; rows at or past `end` read as PAD_KEY.
fn load_key4(e: u32, end: u32) -> vec4<u32> {
    if e + 4u <= end && (params.src_keys & 3u) == 0u {
        return src_keys4[(params.src_keys + e) >> 2u];
    }
    var v = vec4<u32>(PAD_KEY);
    for (var c = 0u; c < 4u; c += 1u) {
        if e + c < end {
            v[c] = src_keys[params.src_keys + e + c];
        }
    }
    return v;
}

// Exclusive scan of one value per invocation in invocation order: (exclusive, total).
// Hillis-Steele over one array with a barrier between the reads and the writes of each step.
// Ends with a barrier, so calls can follow each other.
fn workgroup_scan(t: u32, v: u32) -> vec2<u32> {
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
