// One pass of a batched complex FFT: every workgroup transforms C independent sequences of
// length L (interleaved re, im f32) entirely in registers and workgroup memory, Stockham
// auto-sort: stage 0 has radix R0 (1, 2, 4 or 8), the STAGES8 later stages radix 8. Stage 0
// loads from `src` and the last stage stores to `dst`, so a pass reads and writes every element
// once. Sequence s = (g * outer_count + o) * inner + i (i = s & (inner - 1),
// o = (s >> inner_shift) & outer_mask, g = s >> group_shift) has element k at
// off + g * group + o * outer + i * inner_stride + k * elem; forward exponent e^{-2πi jk/L}; an inverse is
// conj ∘ forward ∘ conj, applied per pass (`conj` = -1), scaled at the store.
//
// Header: L, C, T (invocations), V (values per invocation = C·L/T; V8, V4, V2 = V/8, V/4,
// V/2), R0, STAGES8, STAGES8_REST = max(STAGES8 - 1, 0), R_LAST (the last stage's radix),
// E = C·L; all lengths, counts and strides are powers of two;
// defines SEQ_FAST_IN / SEQ_FAST_OUT (adjacent invocations take adjacent sequences, for
// coalesced strided columns; SEQ_FAST_LAST: the mapping of the last stage), PACKED (vec2
// workgroup array; else re and im are exchanged in turn through an f32 array of E words,
// halving workgroup memory), SWIZZLE (see `shi`), INTERLEAVE (every stage maps adjacent
// invocations to adjacent sequences and workgroup memory is element-major, see `sh_at`), TWIDDLE (the four-step
// twiddle w_tw_n^(idx·k) applied before the store, idx the inner or outer sequence index).

struct FftParams {
    in_off: u32,
    out_off: u32,
    seqs: u32,
    inner: u32,
    in_inner: u32,
    in_outer: u32,
    in_elem: u32,
    tw_n: u32,
    out_inner: u32,
    out_outer: u32,
    out_elem: u32,
    tw_outer: u32,
    conj: f32,
    scale: f32,
    inner_shift: u32,
    outer_mask: u32,
    group_shift: u32,
    in_group: u32,
    out_group: u32,
    pad0: u32,
}

@group(0) @binding(0) var<uniform> p: FftParams;
@group(0) @binding(1) var<storage, read> src: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec2<f32>>;

#ifdef PACKED
var<workgroup> sh: array<vec2<f32>, E>;
#else
var<workgroup> sh: array<f32, E>;
#endif

const TAU: f32 = 6.283185307179586;
const SQRT_HALF: f32 = 0.70710678118654752;

// e^{-2πi m/n} for m < n ≤ 2^31, n a power of two: the fraction m/n is reduced to [-1/2, 1/2)
// in integers, so the only roundings are m/n itself (exact below 2^24) and one multiply.
fn cis_neg(m: u32, n: u32) -> vec2<f32> {
    var s = i32(m);
    if (m >= n / 2u) {
        s = i32(m) - i32(n);
    }
    let a = -TAU * (f32(s) / f32(n));
    return vec2<f32>(cos(a), sin(a));
}

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// -i · a
fn mul_neg_i(a: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.y, -a.x);
}

fn dft4(x0: vec2<f32>, x1: vec2<f32>, x2: vec2<f32>, x3: vec2<f32>) -> array<vec2<f32>, 4> {
    let a0 = x0 + x2;
    let a1 = x0 - x2;
    let a2 = x1 + x3;
    let a3 = mul_neg_i(x1 - x3);
    return array<vec2<f32>, 4>(a0 + a2, a1 + a3, a0 - a2, a1 - a3);
}

fn dft8(x: array<vec2<f32>, 8>) -> array<vec2<f32>, 8> {
    let e = dft4(x[0], x[2], x[4], x[6]);
    let o = dft4(x[1], x[3], x[5], x[7]);
    let o1 = SQRT_HALF * vec2<f32>(o[1].x + o[1].y, o[1].y - o[1].x);
    let o2 = mul_neg_i(o[2]);
    let o3 = SQRT_HALF * vec2<f32>(o[3].y - o[3].x, -(o[3].x + o[3].y));
    return array<vec2<f32>, 8>(
        e[0] + o[0], e[1] + o1, e[2] + o2, e[3] + o3,
        e[0] - o[0], e[1] - o1, e[2] - o2, e[3] - o3,
    );
}

// Sequence-in-workgroup c and item j of item q of a stage whose items per sequence are `span`.
fn item(q: u32, span: u32, seq_fast: bool) -> vec2<u32> {
#ifdef INTERLEAVE
    return vec2<u32>(q % C, q / C);
#else
    if (seq_fast) {
        return vec2<u32>(q % C, q / C);
    }
    return vec2<u32>(q / span, q % span);
#endif
}

// The global offset of element 0 of sequence s (relative to the view).
fn seq_base(s: u32, inner_stride: u32, outer_stride: u32, group_stride: u32) -> u32 {
    let g = s >> p.group_shift;
    let o = (s >> p.inner_shift) & p.outer_mask;
    let i = s & (p.inner - 1u);
    return g * group_stride + o * outer_stride + i * inner_stride;
}

// Radix-R butterflies of the V/R items this invocation holds (values v[i·R + r]), with the
// Stockham twiddles of a stage whose sub-transforms so far have length ns.
fn butterflies(v: ptr<function, array<vec2<f32>, V>>, t: u32, radix: u32, ns: u32, seq_fast: bool) {
    let span = L / radix;
    if (radix == 8u) {
        #unroll
        for (var i = 0u; i < V8; i += 1u) {
            let j = item(t + i * T, span, seq_fast).y;
            var x: array<vec2<f32>, 8>;
            x[0] = (*v)[i * 8u];
            if (ns > 1u) {
                let m = j % ns;
                let w1 = cis_neg(m, ns * 8u);
                let w2 = cis_neg(2u * m, ns * 8u);
                let w4 = cis_neg(4u * m, ns * 8u);
                let w3 = cmul(w1, w2);
                x[1] = cmul((*v)[i * 8u + 1u], w1);
                x[2] = cmul((*v)[i * 8u + 2u], w2);
                x[3] = cmul((*v)[i * 8u + 3u], w3);
                x[4] = cmul((*v)[i * 8u + 4u], w4);
                x[5] = cmul((*v)[i * 8u + 5u], cmul(w4, w1));
                x[6] = cmul((*v)[i * 8u + 6u], cmul(w4, w2));
                x[7] = cmul((*v)[i * 8u + 7u], cmul(w4, w3));
            } else {
                x[1] = (*v)[i * 8u + 1u];
                x[2] = (*v)[i * 8u + 2u];
                x[3] = (*v)[i * 8u + 3u];
                x[4] = (*v)[i * 8u + 4u];
                x[5] = (*v)[i * 8u + 5u];
                x[6] = (*v)[i * 8u + 6u];
                x[7] = (*v)[i * 8u + 7u];
            }
            let y = dft8(x);
            (*v)[i * 8u] = y[0];
            (*v)[i * 8u + 1u] = y[1];
            (*v)[i * 8u + 2u] = y[2];
            (*v)[i * 8u + 3u] = y[3];
            (*v)[i * 8u + 4u] = y[4];
            (*v)[i * 8u + 5u] = y[5];
            (*v)[i * 8u + 6u] = y[6];
            (*v)[i * 8u + 7u] = y[7];
        }
    } else if (radix == 4u) {
        // Only stage 0 (ns = 1) has radix 4 or 2: no twiddles.
        #unroll
        for (var i = 0u; i < V4; i += 1u) {
            let y = dft4((*v)[i * 4u], (*v)[i * 4u + 1u], (*v)[i * 4u + 2u], (*v)[i * 4u + 3u]);
            (*v)[i * 4u] = y[0];
            (*v)[i * 4u + 1u] = y[1];
            (*v)[i * 4u + 2u] = y[2];
            (*v)[i * 4u + 3u] = y[3];
        }
    } else if (radix == 2u) {
        #unroll
        for (var i = 0u; i < V2; i += 1u) {
            let a = (*v)[i * 2u];
            let b = (*v)[i * 2u + 1u];
            (*v)[i * 2u] = a + b;
            (*v)[i * 2u + 1u] = a - b;
        }
    }
}

// Workgroup-memory index of value r of item q of a stage (radix, ns) when it is read (its
// input, stride L/radix) or written (its Stockham output position).
fn input_index(q: u32, r: u32, radix: u32, seq_fast: bool) -> u32 {
    let span = L / radix;
    let cj = item(q, span, seq_fast);
    return sh_at(cj.x, cj.y + r * span);
}

// The workgroup-memory word of element `e` of sequence `c`: with INTERLEAVE element-major,
// so the C adjacent sequences that adjacent invocations hold in every stage are adjacent
// words whatever the stage's stride (no bank conflicts for C ≥ 32); else sequence-major.
fn sh_at(c: u32, e: u32) -> u32 {
#ifdef INTERLEAVE
    return e * C + c;
#else
    return shi(c * L + e);
#endif
}

// The physical workgroup-memory word of logical index i: with SWIZZLE, the low 3 bits are
// XORed with the 32-word row, so the stride-8 writes after stage 0 hit 32 banks (a bijection
// within each row, so reads through the same map stay correct).
fn shi(i: u32) -> u32 {
#ifdef SWIZZLE
    return i ^ ((i >> 5u) & 7u);
#else
    return i;
#endif
}

fn output_index(q: u32, r: u32, radix: u32, ns: u32, seq_fast: bool) -> u32 {
    let cj = item(q, L / radix, seq_fast);
    let j = cj.y;
    return sh_at(cj.x, (j / ns) * ns * radix + (j % ns) + r * ns);
}

// Moves the outputs of stage (radix_a, ns_a) into the inputs of the next, radix-8, stage.
fn exchange(v: ptr<function, array<vec2<f32>, V>>, t: u32, radix_a: u32, ns_a: u32, fast_a: bool, fast_b: bool) {
    workgroupBarrier();
#ifdef PACKED
    #unroll
    for (var k = 0u; k < V; k += 1u) {
        sh[output_index(t + (k / radix_a) * T, k % radix_a, radix_a, ns_a, fast_a)] = (*v)[k];
    }
    workgroupBarrier();
    #unroll
    for (var k = 0u; k < V; k += 1u) {
        (*v)[k] = sh[input_index(t + (k / 8u) * T, k % 8u, 8u, fast_b)];
    }
#else
    var re: array<f32, V>;
    #unroll
    for (var k = 0u; k < V; k += 1u) {
        sh[output_index(t + (k / radix_a) * T, k % radix_a, radix_a, ns_a, fast_a)] = (*v)[k].x;
    }
    workgroupBarrier();
    #unroll
    for (var k = 0u; k < V; k += 1u) {
        re[k] = sh[input_index(t + (k / 8u) * T, k % 8u, 8u, fast_b)];
    }
    workgroupBarrier();
    #unroll
    for (var k = 0u; k < V; k += 1u) {
        sh[output_index(t + (k / radix_a) * T, k % radix_a, radix_a, ns_a, fast_a)] = (*v)[k].y;
    }
    workgroupBarrier();
    #unroll
    for (var k = 0u; k < V; k += 1u) {
        (*v)[k] = vec2<f32>(re[k], sh[input_index(t + (k / 8u) * T, k % 8u, 8u, fast_b)]);
    }
#endif
}

#ifdef SEQ_FAST_IN
const FAST_IN: bool = true;
#else
const FAST_IN: bool = false;
#endif
#ifdef SEQ_FAST_OUT
const FAST_OUT: bool = true;
#else
const FAST_OUT: bool = false;
#endif
#ifdef SEQ_FAST_LAST
const FAST_LAST: bool = true;
#else
const FAST_LAST: bool = false;
#endif

@compute @workgroup_size(T)
fn fft_pass(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let first = (wid.y * nwg.x + wid.x) * C;
    if (first >= p.seqs) {
        return;
    }
    var v: array<vec2<f32>, V>;
    // Stage 0 reads its inputs from global memory (sequences past the end read zeros).
    #unroll
    for (var k = 0u; k < V; k += 1u) {
        let cj = item(t + (k / R0) * T, L / R0, FAST_IN);
        let s = first + cj.x;
        var x = vec2<f32>(0.0);
        if (s < p.seqs) {
            let g = p.in_off + seq_base(s, p.in_inner, p.in_outer, p.in_group)
                + (cj.y + (k % R0) * (L / R0)) * p.in_elem;
            x = src[g];
        }
        v[k] = vec2<f32>(x.x, p.conj * x.y);
    }
    butterflies(&v, t, R0, 1u, FAST_IN);
    if (STAGES8 > 0u) {
        let fast1 = (STAGES8 == 1u) && FAST_OUT;
        exchange(&v, t, R0, 1u, FAST_IN, fast1);
        butterflies(&v, t, 8u, R0, fast1);
    }
    // Later radix-8 stages, unrolled so every shift and mask below is a constant: stage
    // 2 + s works on sub-transforms of length R0 · 8^(s+1).
    #unroll
    for (var s = 0u; s < STAGES8_REST; s += 1u) {
        let ns = R0 << (3u * (s + 1u));
        let fast = (s + 2u == STAGES8) && FAST_OUT;
        exchange(&v, t, 8u, ns / 8u, false, fast);
        butterflies(&v, t, 8u, ns, fast);
    }
    // The last stage's outputs are in natural order: item j's value r is element j + r·L/R.
    #unroll
    for (var k = 0u; k < V; k += 1u) {
        let cj = item(t + (k / R_LAST) * T, L / R_LAST, FAST_LAST);
        let s = first + cj.x;
        if (s < p.seqs) {
            let e = cj.y + (k % R_LAST) * (L / R_LAST);
            var y = v[k];
#ifdef TWIDDLE
            var idx = s & (p.inner - 1u);
            if (p.tw_outer != 0u) {
                idx = (s >> p.inner_shift) & p.outer_mask;
            }
            y = cmul(y, cis_neg((idx * e) & (p.tw_n - 1u), p.tw_n));
#endif
            let g = p.out_off + seq_base(s, p.out_inner, p.out_outer, p.out_group) + e * p.out_elem;
            dst[g] = p.scale * vec2<f32>(y.x, p.conj * y.y);
        }
    }
}
