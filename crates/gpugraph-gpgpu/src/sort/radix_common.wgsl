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
