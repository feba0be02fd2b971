// Sorting inside one workgroup: a bitonic network over (key, row) pairs, so equal keys keep
// their row order (stable) and padding rows (PAD_KEY, row >= length) sort last.
// CPU twin: cpu::sort_pairs (one domain) and cpu::sort_segments.
//
// Generated header (source.rs): LOCAL_WG (invocations, one compare-exchange pair each),
// LOCAL_ROWS (= 2 * LOCAL_WG), SEGMENT_WIDTH (SEGMENTED only).
// `#ifdef` names: SEGMENTED (sort_segments: in place, many segments per workgroup; otherwise
// sort_domain: one domain of <= LOCAL_ROWS rows from src to dst), WRITE_VALUES, LOAD_VALUES
// (values read from src_values; without it sort_domain writes source rows).
#include "shared/dispatch.wgsl"

const PAD_KEY: u32 = 0xffffffffu;

var<workgroup> sk: array<u32, LOCAL_ROWS>;
var<workgroup> si: array<u32, LOCAL_ROWS>;

// Sorts sk/si ascending by (key, row) in independent runs of `width` rows (a power of two
// <= LOCAL_ROWS). Uniform control flow; begins after and ends with a barrier.
fn bitonic(lt: u32, width: u32) {
    for (var k = 2u; k <= width; k <<= 1u) {
        for (var j = k >> 1u; j > 0u; j >>= 1u) {
            let i = 2u * j * (lt / j) + (lt % j);
            let l = i + j;
            // The last merge of each run is ascending; earlier ones alternate.
            let ascending = k == width || (i & k) == 0u;
            let a = sk[i];
            let b = sk[l];
            let ai = si[i];
            let bi = si[l];
            let a_after_b = a > b || (a == b && ai > bi);
            if a_after_b == ascending {
                sk[i] = b;
                sk[l] = a;
                si[i] = bi;
                si[l] = ai;
            }
            workgroupBarrier();
        }
    }
}

#ifndef SEGMENTED
struct DomainParams {
    rows: u32,        // rows of the domain (<= LOCAL_ROWS)
    width: u32,       // power of two >= rows (>= 2)
    src_keys: u32,    // element offsets of the views inside their bindings
    dst_keys: u32,
    src_values: u32,
    dst_values: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: DomainParams;
@group(0) @binding(1) var<storage, read> src_keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst_keys: array<u32>;
#ifdef WRITE_VALUES
@group(0) @binding(3) var<storage, read_write> dst_values: array<u32>;
#endif
#ifdef LOAD_VALUES
@group(0) @binding(4) var<storage, read> src_values: array<u32>;
#endif

// One workgroup sorts the whole domain.
@compute @workgroup_size(LOCAL_WG)
fn sort_domain(@builtin(local_invocation_index) lt: u32) {
    for (var r = 0u; r < 2u; r += 1u) {
        let e = r * LOCAL_WG + lt;
        var key = PAD_KEY;
        if e < params.rows {
            key = src_keys[params.src_keys + e];
        }
        sk[e] = key;
        si[e] = e;
    }
    workgroupBarrier();
    bitonic(lt, params.width);
    for (var r = 0u; r < 2u; r += 1u) {
        let e = r * LOCAL_WG + lt;
        if e < params.rows {
            dst_keys[params.dst_keys + e] = sk[e];
#ifdef WRITE_VALUES
#ifdef LOAD_VALUES
            dst_values[params.dst_values + e] = src_values[params.src_values + si[e]];
#else
            dst_values[params.dst_values + e] = si[e];
#endif
#endif
        }
    }
}
#endif

#ifdef SEGMENTED
const SEGMENTS_PER_GROUP: u32 = LOCAL_ROWS / SEGMENT_WIDTH;

struct SegmentParams {
    keys: u32,        // element offsets of the views inside their bindings
    values: u32,
    offsets: u32,
    lengths: u32,
    count_word: u32,  // word of this width class's segment count in `lists`
    list_word: u32,   // first word of this width class's segment ids in `lists`
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: SegmentParams;
@group(0) @binding(1) var<storage, read_write> keys: array<u32>;
@group(0) @binding(2) var<storage, read> lists: array<u32>;
@group(0) @binding(3) var<storage, read> offsets: array<u32>;
@group(0) @binding(4) var<storage, read> lengths: array<u32>;
#ifdef WRITE_VALUES
@group(0) @binding(5) var<storage, read_write> values: array<u32>;
var<workgroup> sv: array<u32, LOCAL_ROWS>;
#endif

var<workgroup> seg_start: array<u32, SEGMENTS_PER_GROUP>;
var<workgroup> seg_len: array<u32, SEGMENTS_PER_GROUP>;

// Workgroup g sorts, in place, segments g * SEGMENTS_PER_GROUP ... of this width class's list
// (classify.wgsl checked that each lies inside the views and has <= SEGMENT_WIDTH rows).
// Launched indirectly; surplus workgroups of the 2-D grid find no segments and write nothing.
@compute @workgroup_size(LOCAL_WG)
fn sort_segments(
    @builtin(local_invocation_index) lt: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
) {
    let group = linear_workgroup(wg, num_wg);
    if lt < SEGMENTS_PER_GROUP {
        let slot = group * SEGMENTS_PER_GROUP + lt;
        var start = 0u;
        var len = 0u;
        if slot < lists[params.count_word] {
            let segment = lists[params.list_word + slot];
            start = offsets[params.offsets + segment];
            len = lengths[params.lengths + segment];
        }
        seg_start[lt] = start;
        seg_len[lt] = len;
    }
    workgroupBarrier();
    for (var r = 0u; r < 2u; r += 1u) {
        let e = r * LOCAL_WG + lt;
        let q = e / SEGMENT_WIDTH;
        let i = e % SEGMENT_WIDTH;
        var key = PAD_KEY;
        if i < seg_len[q] {
            let row = seg_start[q] + i;
            key = keys[params.keys + row];
#ifdef WRITE_VALUES
            sv[e] = values[params.values + row];
#endif
        }
        sk[e] = key;
        si[e] = i;
    }
    workgroupBarrier();
    bitonic(lt, SEGMENT_WIDTH);
    for (var r = 0u; r < 2u; r += 1u) {
        let e = r * LOCAL_WG + lt;
        let q = e / SEGMENT_WIDTH;
        let i = e % SEGMENT_WIDTH;
        if i < seg_len[q] {
            let row = seg_start[q] + i;
            keys[params.keys + row] = sk[e];
#ifdef WRITE_VALUES
            values[params.values + row] = sv[q * SEGMENT_WIDTH + si[e]];
#endif
        }
    }
}
#endif
