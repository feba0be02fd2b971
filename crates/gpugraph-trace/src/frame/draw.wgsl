// The trace frame's picture (frame/draw.rs): one instanced quad per visible span (ids from
// the span compaction, instance count from its indirect record) and one line per drawn
// edge, in a viewport of the view's time window (x) and rows [row_first, row_first +
// row_count) (y). Times go to float32 only after the 64-bit difference to the window start,
// so pixels stay exact far from the trace origin.

#include "common.wgsl"

override PX_W: f32 = 0.002;
override PX_H: f32 = 0.002;

#include "frame/params.wgsl"

@group(0) @binding(0) var<uniform> fp: FrameParams;
@group(0) @binding(1) var<storage, read> spans: array<u32>;
@group(0) @binding(2) var<storage, read> rows: array<u32>;
@group(0) @binding(3) var<storage, read> ids: array<u32>;
@group(0) @binding(4) var<storage, read> edge_ids: array<u32>;
@group(0) @binding(5) var<storage, read> edge_ends: array<u32>;

struct VOut {
    @builtin(position) pos: vec4<f32>,
    @location(0) color: vec4<f32>,
}

fn load_span(i: u32) -> Span {
    var w: array<u32, 8>;
    for (var k = 0u; k < 8u; k++) {
        w[k] = spans[i * SPAN_WORDS + k];
    }
    return unpack_span(w);
}

fn sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return add64(a, neg64(b));
}

fn f64_of(t: vec2<u32>) -> f32 {
    return f32(t.y) * 4294967296.0 + f32(t.x);
}

// NDC x of tick `t` in the window (clamped a little outside the viewport).
fn x_of(t: vec2<u32>) -> f32 {
    let ws = vec2<u32>(fp.window_start_lo, fp.window_start_hi);
    let we = vec2<u32>(fp.window_end_lo, fp.window_end_hi);
    let width = max(f64_of(sub64(we, ws)), 1.0);
    var d = 0.0;
    if lt64(t, ws) {
        d = -f64_of(sub64(ws, t));
    } else {
        d = f64_of(sub64(t, ws));
    }
    return clamp(-1.0 + 2.0 * d / width, -1.5, 1.5);
}

// NDC y of the top of row `r`.
fn y_of(r: f32) -> f32 {
    return 1.0 - 2.0 * (r - f32(fp.row_first)) / f32(max(fp.row_count, 1u));
}

fn palette(name: u32, group: u32) -> vec4<f32> {
    let h = name * 2654435761u;
    let c = vec3<f32>(f32(h & 255u), f32((h >> 8u) & 255u), f32((h >> 16u) & 255u)) / 255.0;
    var base = 0.35 + 0.55 * c;
    if group == 1u {
        base = vec3<f32>(0.1, 0.1, 0.1);
    } else if group == 2u {
        base = vec3<f32>(0.85, 0.1, 0.1);
    }
    return vec4<f32>(base, 1.0);
}

@vertex
fn vs_span(@builtin(vertex_index) v: u32, @builtin(instance_index) k: u32) -> VOut {
    let i = ids[k];
    let s = load_span(i);
    let x0 = x_of(s.start);
    let x1 = max(x_of(span_end(s)), x0 + PX_W);
    let r = f32(rows[i]);
    let y0 = y_of(r);
    let y1 = y_of(r + 1.0) + PX_H;
    // Two triangles: (0,1,2), (2,1,3) over corners (x0,y0) (x1,y0) (x0,y1) (x1,y1).
    let corner = array<u32, 6>(0u, 1u, 2u, 2u, 1u, 3u)[v];
    let x = select(x0, x1, (corner & 1u) != 0u);
    let y = select(y0, y1, (corner & 2u) != 0u);
    var out: VOut;
    out.pos = vec4<f32>(x, y, 0.0, 1.0);
    out.color = palette(s.group, draw_group(s.flags));
    return out;
}

@vertex
fn vs_edge(@builtin(vertex_index) v: u32, @builtin(instance_index) k: u32) -> VOut {
    let e = edge_ids[k];
    let a = edge_ends[2u * e];
    let b = edge_ends[2u * e + 1u];
    var p: vec2<f32>;
    if v == 0u {
        p = vec2<f32>(x_of(span_end(load_span(a))), y_of(f32(rows[a]) + 0.5));
    } else {
        p = vec2<f32>(x_of(load_span(b).start), y_of(f32(rows[b]) + 0.5));
    }
    var out: VOut;
    out.pos = vec4<f32>(p, 0.0, 1.0);
    out.color = vec4<f32>(0.1, 0.2, 0.9, 1.0);
    return out;
}

@fragment
fn fs(in: VOut) -> @location(0) vec4<f32> {
    return in.color;
}
