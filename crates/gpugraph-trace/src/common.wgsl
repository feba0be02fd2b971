// Shared by the trace kernels (`#include "common.wgsl"`, the registry in shaders.rs): the linear row of a
// `Grid::Rows` dispatch (split over x and y past the per-dimension limit), the canonical span
// words (span.rs) and 64-bit tick arithmetic on (lo, hi) pairs, since WGSL has no u64.

fn linear_row(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, size: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * size + lid;
}

const NO_SPAN: u32 = 0xffffffffu;
const SPAN_WORDS: u32 = 8u;
const FLAG_INSTANT: u32 = 4u;
const FLAG_UNFINISHED: u32 = 8u;
const FLAG_ZERO_DURATION: u32 = 16u;
const FLAG_OVERLAP: u32 = 32u;
const FLAG_CLAMPED: u32 = 256u;

// (lo, hi) of a 64-bit tick count.
fn lt64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}
fn le64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return !lt64(b, a);
}
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn neg64(a: vec2<u32>) -> vec2<u32> {
    return add64(vec2<u32>(~a.x, ~a.y), vec2<u32>(1u, 0u));
}

struct Span {
    start: vec2<u32>,
    duration: vec2<u32>,
    flags: u32,
    thread: u32,
    process: u32,
    lane: u32,
    group: u32,
    source_id: u32,
}

fn unpack_span(w: array<u32, 8>) -> Span {
    var s: Span;
    s.start = vec2<u32>(w[0], w[1]);
    s.duration = vec2<u32>(w[2], w[3] & 0xffffu);
    s.flags = w[3] >> 16u;
    s.thread = w[4];
    s.process = w[5] & 0xffffu;
    s.lane = w[5] >> 16u;
    s.group = w[6];
    s.source_id = w[7];
    return s;
}

fn span_end(s: Span) -> vec2<u32> {
    return add64(s.start, s.duration);
}

// SpanFlags::draw_group.
fn draw_group(flags: u32) -> u32 {
    if (flags & (FLAG_UNFINISHED | FLAG_OVERLAP | FLAG_CLAMPED)) != 0u {
        return 2u;
    }
    if (flags & (FLAG_INSTANT | FLAG_ZERO_DURATION)) != 0u {
        return 1u;
    }
    return 0u;
}
