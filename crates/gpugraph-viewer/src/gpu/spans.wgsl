// The viewer's span draw (gpu/draw.rs): one quad (six vertices) per visible span and one
// line (two vertices) per drawn dependency, as plain non-instanced draws whose vertex counts
// args.wgsl derives on the GPU from the trace frame's compaction counts (SwiftShader and
// other software rasterizers pay a fixed cost per instance, so a million instances of one
// quad are far slower than one draw of six million vertices), in a viewport that is the plot rectangle. x maps the closed
// window [start, start + width] onto [-1, 1]; y maps row `row_scroll` to the top and
// `row_scroll + rows_in_view` to the bottom. Times become float32 only after the 64-bit
// difference to the window start, so pixels stay exact far from the trace origin.

struct Params {
    window_start: vec2<u32>,
    window_width: f32,
    row_scroll: f32,
    rows_in_view: f32,
    selected: u32,
    px_w: f32,
    px_h: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> spans: array<u32>;
@group(0) @binding(2) var<storage, read> rows: array<u32>;
@group(0) @binding(3) var<storage, read> ids: array<u32>;
@group(0) @binding(4) var<storage, read> edge_ids: array<u32>;
@group(0) @binding(5) var<storage, read> edge_ends: array<u32>;

struct VOut {
    @builtin(position) pos: vec4<f32>,
    @location(0) color: vec4<f32>,
}

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn neg64(a: vec2<u32>) -> vec2<u32> {
    return add64(vec2<u32>(~a.x, ~a.y), vec2<u32>(1u, 0u));
}
fn lt64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}
fn f_of(t: vec2<u32>) -> f32 {
    return f32(t.y) * 4294967296.0 + f32(t.x);
}

fn span_start(i: u32) -> vec2<u32> {
    return vec2<u32>(spans[i * 8u], spans[i * 8u + 1u]);
}
fn span_end(i: u32) -> vec2<u32> {
    return add64(span_start(i), vec2<u32>(spans[i * 8u + 2u], spans[i * 8u + 3u] & 0xffffu));
}

// NDC x of tick t (clamped a little outside the viewport).
fn x_of(t: vec2<u32>) -> f32 {
    var d = 0.0;
    if lt64(t, p.window_start) {
        d = -f_of(add64(p.window_start, neg64(t)));
    } else {
        d = f_of(add64(t, neg64(p.window_start)));
    }
    return clamp(-1.0 + 2.0 * d / max(p.window_width, 1.0), -1.5, 1.5);
}

fn y_of(r: f32) -> f32 {
    return clamp(1.0 - 2.0 * (r - p.row_scroll) / max(p.rows_in_view, 1e-3), -1.5, 1.5);
}

// SpanFlags::draw_group: 2 anomalies (unfinished, overlap, clamped), 1 instants, 0 others.
fn draw_group(flags: u32) -> u32 {
    if (flags & (8u | 32u | 256u)) != 0u {
        return 2u;
    }
    if (flags & (4u | 16u)) != 0u {
        return 1u;
    }
    return 0u;
}

fn palette(name: u32, group: u32) -> vec3<f32> {
    let h = name * 2654435761u;
    let c = vec3<f32>(f32(h & 255u), f32((h >> 8u) & 255u), f32((h >> 16u) & 255u)) / 255.0;
    var base = 0.45 + 0.45 * c;
    if group == 1u {
        base = vec3<f32>(0.15, 0.15, 0.15);
    } else if group == 2u {
        base = vec3<f32>(0.85, 0.15, 0.15);
    }
    return base;
}

@vertex
fn vs_span(@builtin(vertex_index) vi: u32) -> VOut {
    let k = vi / 6u;
    let v = vi % 6u;
    let i = ids[k];
    let x0 = x_of(span_start(i));
    let x1 = max(x_of(span_end(i)), x0 + p.px_w);
    let r = f32(rows[i]);
    let y0 = y_of(r);
    let y1 = min(y_of(r + 1.0) + p.px_h, y0 - p.px_h);
    let corner = array<u32, 6>(0u, 1u, 2u, 2u, 1u, 3u)[v];
    var out: VOut;
    out.pos = vec4<f32>(
        select(x0, x1, (corner & 1u) != 0u),
        select(y0, y1, (corner & 2u) != 0u),
        0.0,
        1.0
    );
    var c = palette(spans[i * 8u + 6u], draw_group(spans[i * 8u + 3u] >> 16u));
    if i == p.selected {
        c = vec3<f32>(1.0, 0.55, 0.0);
    }
    out.color = vec4<f32>(c, 1.0);
    return out;
}

@vertex
fn vs_edge(@builtin(vertex_index) vi: u32) -> VOut {
    let k = vi / 2u;
    let v = vi % 2u;
    let e = edge_ids[k];
    let a = edge_ends[2u * e];
    let b = edge_ends[2u * e + 1u];
    var pos: vec2<f32>;
    if v == 0u {
        pos = vec2<f32>(x_of(span_end(a)), y_of(f32(rows[a]) + 0.5));
    } else {
        pos = vec2<f32>(x_of(span_start(b)), y_of(f32(rows[b]) + 0.5));
    }
    var out: VOut;
    out.pos = vec4<f32>(pos, 0.0, 1.0);
    out.color = vec4<f32>(0.1, 0.2, 0.85, 1.0);
    return out;
}

@fragment
fn fs(in: VOut) -> @location(0) vec4<f32> {
    return in.color;
}
