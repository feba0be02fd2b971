// Equal-width histogram edges from a GPU-resident extent [lo, hi]:
// edge_j = lo + (hi - lo) * (j / BINS), with edge_0 = lo and edge_BINS = hi exactly. A
// degenerate extent (lo == hi) widens to [lo - 0.5, hi + 0.5] (as numpy does); an empty
// extent (NaN) gives NaN edges, which the histogram reports as invalid (all-zero counts).
// When hi - lo overflows float32 (e.g. [-2e38, 2e38]) the edges are interpolated as
// lo * (1 - t) + hi * t instead (no intermediate exceeds the extent), clamped to [lo, hi].
// params: [edge count, out offset, extent offset]. One workgroup strides over the edges.

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> extent: array<f32>;

@compute @workgroup_size(WG)
fn edges_main(@builtin(local_invocation_index) lane: u32) {
    let count = params[0];
    let bins = count - 1u;
    var lo = extent[params[2]];
    var hi = extent[params[2] + 1u];
    if (lo == hi) {
        lo = lo - 0.5;
        hi = hi + 0.5;
    }
    let width = hi - lo;
    // Infinite by its bits (NaN, from an empty extent, keeps the plain formula).
    let wide = (bitcast<u32>(width) & 0x7fffffffu) == 0x7f800000u;
    for (var j = lane; j < count; j += WG) {
        let t = f32(j) / f32(bins);
        var e = lo + width * t;
        if (wide) {
            e = clamp(lo * (1.0 - t) + hi * t, lo, hi);
        }
        if (j == 0u) {
            e = lo;
        }
        if (j == bins) {
            e = hi;
        }
        out[params[1] + j] = e;
    }
}
