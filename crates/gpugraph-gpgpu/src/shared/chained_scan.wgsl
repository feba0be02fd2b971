// The chained scan of u32 tiles (Merrill & Garland's single-pass scan with decoupled
// look-back and Smith, Levien & Owens' decoupled fallback), shared by the scan
// (scan/scan.wgsl) and the fused compaction (compact/compact.wgsl): tile constants, the
// bindings both use, segment starts, per-vec4 scans, the fallback's tile reduction and the
// status clear. Each kernel supplies `params` (a `ScanParams` with at least the fields below),
// `fn load_values(e: u32, vector: bool) -> vec4<u32>`, `fn sequence_start(tile: u32) -> bool`
// and its `scan_tiles` entry point, whose body includes shared/chained_scan_ticket.wgsl,
// shared/chained_scan_tile.wgsl and shared/chained_scan_carry.wgsl. The algorithm is described in scan/scan.wgsl.
#include "shared/chained_lookback.wgsl"
#include "shared/workgroup_scan.wgsl"

const TILE_VEC4: u32 = WG_SIZE * VEC4_PER_THREAD;
const TILE_ELEMS: u32 = TILE_VEC4 * 4u;
// Workgroup arrays indexed by slot are padded by one word every 32 so that reading
// VEC4_PER_THREAD consecutive slots per invocation does not hit the same bank.
const PADDED_SLOTS: u32 = TILE_VEC4 + (TILE_VEC4 >> 5u) + 1u;

const MODE_INCLUSIVE: u32 = 1u;

@group(0) @binding(0) var<uniform> params: ScanParams;
// Each stream is bound twice over the same bytes: as words (partial tiles, unaligned offsets)
// and as vec4 (full tiles at a 4-element aligned offset).
@group(0) @binding(1) var<storage, read> input_words: array<u32>;
@group(0) @binding(2) var<storage, read> input_vec4: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> output_words: array<u32>;
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;
#ifdef SEGMENTED
@group(0) @binding(6) var<storage, read> flag_words: array<u32>;
@group(0) @binding(7) var<storage, read> flag_vec4: array<vec4<u32>>;
#endif

#ifdef LIVE_COUNT
// The input's live count: rows at or past min(count, len) read as 0 and start no segment.
@group(0) @binding(9) var<storage, read> live_words: array<u32>;
var<private> live_len: u32;
#endif

// Broadcasts.
var<workgroup> sh_ticket: u32;
var<workgroup> sh_tile_aggregate: vec2<u32>;
var<workgroup> sh_first_start: u32;
var<workgroup> sh_need_lookback: u32;

// The input's four elements from chunk-relative index `e` (one vec4 load when the tile is
// full and aligned); elements past the chunk or the live count read as 0.
fn load_input(e: u32, vector: bool) -> vec4<u32> {
    var v = vec4<u32>(0u);
    if vector {
        v = input_vec4[(params.input_offset + e) >> 2u];
    } else {
#unroll
        for (var c = 0u; c < 4u; c += 1u) {
            if e + c < params.len {
                v[c] = input_words[params.input_offset + e + c];
            }
        }
    }
#ifdef LIVE_COUNT
    v = select(vec4<u32>(0u), v, vec4<u32>(e) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(live_len));
#endif
    return v;
}

// 1 where a segment starts. `first_tile` marks the first tile of the logical sequence, whose
// first element always starts a segment.
fn load_starts(e: u32, vector: bool, first_tile: bool) -> vec4<u32> {
#ifdef SEGMENTED
    var f = vec4<u32>(0u);
    if vector {
        f = flag_vec4[(params.flags_offset + e) >> 2u];
    } else {
#unroll
        for (var c = 0u; c < 4u; c += 1u) {
            if e + c < params.len {
                f[c] = flag_words[params.flags_offset + e + c];
            }
        }
    }
#ifdef LIVE_COUNT
    f = select(vec4<u32>(0u), f, vec4<u32>(e) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(live_len));
#endif
    var s = select(vec4<u32>(0u), vec4<u32>(1u), f != vec4<u32>(0u));
    if first_tile && e == 0u {
        s.x = 1u;
    }
    return s;
#else
    return vec4<u32>(0u);
#endif
}


// Inclusive segmented scan of one vec4 (restarting at starts).
fn scan_vec4(x: vec4<u32>, s: vec4<u32>) -> vec4<u32> {
    var r = x;
    r.y = select(r.x + x.y, x.y, s.y != 0u);
    r.z = select(r.y + x.z, x.z, s.z != 0u);
    r.w = select(r.z + x.w, x.w, s.w != 0u);
    return r;
}

fn vec4_pair(r: vec4<u32>, s: vec4<u32>) -> vec2<u32> {
    return vec2<u32>(select(0u, 1u, any(s != vec4<u32>(0u))), r.w);
}

// Adds `before` (the segmented sum of everything before this vec4) to the lanes that precede
// the vec4's first segment start.
fn add_before(r: vec4<u32>, s: vec4<u32>, before: u32) -> vec4<u32> {
    let open_x = s.x == 0u;
    let open_y = open_x && s.y == 0u;
    let open_z = open_y && s.z == 0u;
    let open_w = open_z && s.w == 0u;
    let open = vec4<bool>(open_x, open_y, open_z, open_w);
    return r + select(vec4<u32>(0u), vec4<u32>(before), open);
}

// ---------------------------------------------------------------------------------------------
// Decoupled fallback: reduce a predecessor tile of this chunk from its input.

fn reduce_tile(lid: u32, tile: u32) -> vec2<u32> {
    let tile_start = (tile - params.tile_base) * TILE_ELEMS;
    let full = params.len - tile_start >= TILE_ELEMS;
    let vector_in = full && (params.input_offset & 3u) == 0u;
    let vector_flags = full && (params.flags_offset & 3u) == 0u;
    // Blocked: invocation lid folds its VEC4_PER_THREAD consecutive slots in order (this path is
    // rare, so coalescing matters less than reusing the ordered workgroup scan).
    var run = vec2<u32>(0u);
#unroll
    for (var k = 0u; k < VEC4_PER_THREAD; k += 1u) {
        let e = tile_start + 4u * (lid * VEC4_PER_THREAD + k);
        let x = load_values(e, vector_in);
        let s = load_starts(e, vector_flags, sequence_start(tile));
        run = combine(run, vec4_pair(scan_vec4(x, s), s));
    }
    return workgroup_scan(lid, run).total;
}

// ---------------------------------------------------------------------------------------------
// Entry points.

// Zeroes every word of the status binding (ticket counter and tile states). 1-D grid-stride
// loop, so any dispatch width works.
@compute @workgroup_size(WG_SIZE)
fn clear_status(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let words = arrayLength(&status);
    let stride = groups.x * WG_SIZE;
    for (var i = gid.x; i < words; i += stride) {
        atomicStore(&status[i], 0u);
    }
}
