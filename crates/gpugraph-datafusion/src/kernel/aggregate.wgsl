// Partial aggregation: the accumulation and flush code around a query's row program, which
// kernel/compile.rs compiles to `fn run_rows` (and `fn load_constants`, which reads the
// program's constants into private variables once per invocation) and appends to this file.
//
// Every invocation walks rows with a grid stride, UNROLL rows per step (rows row, row +
// stride, ...), and runs the row program on each: all the step's column loads are issued
// first, so an invocation has UNROLL rows' loads in flight instead of waiting on one row's
// filter before the next column's load. Values are 64-bit two's-complement integers (vec2:
// x low word, y high word) with SQL null flags. Sums and counts accumulate per group in
// three-word (96-bit) integers, word-wise atomic adds with explicit carries (a word whose
// addend and carry are both zero is skipped, so a small positive value costs one atomic),
// first in workgroup memory when the groups fit (several copies, so that invocations adding
// to one group contend less), then the copies are summed and flushed into `acc`.

struct Params {
    rows: u32,
    words_per_group: u32,
    groups: u32,
    // 0: accumulate into `acc` directly; else groups * words_per_group (<= PRIVATE_WORDS).
    private_words: u32,
    row_stride: u32,
    // Bit c: column c holds ceil(rows / 32) validity words from slots[c].z on.
    has_valid: u32,
    // Index of the first constant (lo, hi) in `program`.
    constants: u32,
    // Index of the first word kind in `program`, after the constants.
    kinds: u32,
    // Copies of the private accumulators in workgroup memory (>= 1 when private_words != 0):
    // invocation lid adds into copy lid % copies, so rows of one group from different
    // invocations mostly hit different addresses instead of serializing on one.
    copies: u32,
    // Words between copies: private_words rounded up to odd, so copies start in different
    // memory banks.
    copy_stride: u32,
    pad0: u32,
    pad1: u32,
    // Per column slot (kernel/pack.rs): x the base added to unpacked offsets, y log2 of
    // values per word (0: 32-bit words; 1: 16-bit and 2: 8-bit offsets from x), z the word
    // index of its validity words.
    slots: array<vec4<u32>, 8>,
}

const PRIVATE_WORDS: u32 = 4096u;
// Rows per step of an invocation (kernel/compile.rs emits `run_rows` for this many).
const UNROLL: u32 = 4u;
const KIND_SUM: u32 = 0u;
const KIND_MIN: u32 = 1u;
const KIND_MAX: u32 = 2u;
const KIND_CONTINUED: u32 = 3u;
const KIND_BITS: u32 = 4u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> program: array<u32>;
@group(0) @binding(2) var<storage, read_write> acc: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read> col0: array<u32>;
@group(0) @binding(4) var<storage, read> col1: array<u32>;
@group(0) @binding(5) var<storage, read> col2: array<u32>;
@group(0) @binding(6) var<storage, read> col3: array<u32>;
@group(0) @binding(7) var<storage, read> col4: array<u32>;
@group(0) @binding(8) var<storage, read> col5: array<u32>;
@group(0) @binding(9) var<storage, read> col6: array<u32>;
@group(0) @binding(10) var<storage, read> col7: array<u32>;
// A many-to-one join's lookup side (program.rs `LookupShape`): the key map, then the lookup
// columns' words.
@group(0) @binding(11) var<storage, read> lookup: array<u32>;

const NO_ROW: u32 = 0xffffffffu;

// The lookup row of the key at offset d (an i64) from the first of n keys, or NO_ROW.
fn probe(d: vec2<u32>, n: vec2<u32>, base: vec2<u32>) -> u32 {
    if (d.y != 0u || d.x >= n.x) { return NO_ROW; }
    return lookup[base.x + d.x];
}

// Word `at.x + row.x` of the lookup buffer; 0 for a missing row (its null flag says so).
fn gather(at: vec2<u32>, row: vec2<u32>) -> u32 {
    if (row.x == NO_ROW) { return 0u; }
    return lookup[at.x + row.x];
}

var<workgroup> wacc: array<atomic<u32>, PRIVATE_WORDS>;

// A column word as i64: i32 values sign-extended.
fn widen(v: u32) -> vec2<u32> {
    return vec2<u32>(v, select(0u, 0xffffffffu, (v & 0x80000000u) != 0u));
}

// An i32 as i64 (kernel/compile.rs keeps values known to fit i32 as i32).
fn widen_i(v: i32) -> vec2<u32> {
    return vec2<u32>(bitcast<u32>(v), select(0u, 0xffffffffu, v < 0i));
}

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn neg64(a: vec2<u32>) -> vec2<u32> {
    return add64(~a, vec2<u32>(1u, 0u));
}

// The full 64-bit product of two u32, from 16-bit halves.
fn mul32(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}

// The low 64 bits of a * b: the exact product whenever it fits i64 (checked on the host).
fn mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let p = mul32(a.x, b.x);
    return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}

fn lt64(a: vec2<u32>, b: vec2<u32>) -> bool {
    let ah = bitcast<i32>(a.y);
    let bh = bitcast<i32>(b.y);
    return ah < bh || (ah == bh && a.x < b.x);
}

fn eq64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x == b.x && a.y == b.y;
}

fn truth(v: vec2<u32>) -> bool {
    return v.x != 0u || v.y != 0u;
}

fn boolean(b: bool) -> vec2<u32> {
    return vec2<u32>(select(0u, 1u, b), 0u);
}

// Adds `v` to word `at` of the workgroup's private accumulators or of `acc`; returns the old
// value. `private_acc` is uniform across a dispatch, so the branch never diverges.
fn add_word(private_acc: bool, at: u32, v: u32) -> u32 {
    if (private_acc) {
        return atomicAdd(&wacc[at], v);
    }
    return atomicAdd(&acc[at], v);
}

// Words at .. at + 3 += (a0, a1, a2) mod 2^96: each word's carry goes into the next word's add,
// so concurrent adds in any order give the exact sum. Adding zero to a word changes nothing,
// so the upper words are touched only when their addend or carry is not zero.
fn add96_at(private_acc: bool, at: u32, a0: u32, a1: u32, a2: u32) {
    let old0 = add_word(private_acc, at, a0);
    let c0 = select(0u, 1u, old0 + a0 < old0);
    let m = a1 + c0;
    var c1 = select(0u, 1u, m < a1);
    if (m != 0u) {
        let old1 = add_word(private_acc, at + 1u, m);
        c1 += select(0u, 1u, old1 + m < old1);
    }
    let top = a2 + c1;
    if (top != 0u) {
        add_word(private_acc, at + 2u, top);
    }
}

// The sum at word `at` of a group layout: in this invocation's private copy, or in `acc`.
fn add96(private_acc: bool, copy_base: u32, at: u32, a0: u32, a1: u32, a2: u32) {
    add96_at(private_acc, select(at, copy_base + at, private_acc), a0, a1, a2);
}

fn kind_of(w: u32) -> u32 {
    return program[params.kinds + w % params.words_per_group];
}

// Adds the i64 `v` (sign-extended to 96 bits) to the sum at word `at` of the group layout.
fn accumulate_sum(private_acc: bool, copy_base: u32, at: u32, v: vec2<u32>) {
    let ext = select(0u, 0xffffffffu, (v.y & 0x80000000u) != 0u);
    add96(private_acc, copy_base, at, v.x, v.y, ext);
}

// Minima and maxima keep i32 values (checked on the host) with the sign bit flipped, which
// orders them as u32.
fn accumulate_min(private_acc: bool, copy_base: u32, at: u32, v: u32) {
    if (private_acc) {
        atomicMin(&wacc[copy_base + at], v ^ 0x80000000u);
    } else {
        atomicMin(&acc[at], v ^ 0x80000000u);
    }
}

fn accumulate_max(private_acc: bool, copy_base: u32, at: u32, v: u32) {
    if (private_acc) {
        atomicMax(&wacc[copy_base + at], v ^ 0x80000000u);
    } else {
        atomicMax(&acc[at], v ^ 0x80000000u);
    }
}

// Sets `bit` of bitmap word `at` (COUNT(DISTINCT)). Most rows find their value already seen,
// so a load first keeps them from serializing on the word's atomic.
fn mark(private_acc: bool, copy_base: u32, at: u32, bit: u32) {
    if (private_acc) {
        if ((atomicLoad(&wacc[copy_base + at]) & bit) == 0u) {
            atomicOr(&wacc[copy_base + at], bit);
        }
    } else if ((atomicLoad(&acc[at]) & bit) == 0u) {
        atomicOr(&acc[at], bit);
    }
}

@compute @workgroup_size(256)
fn aggregate(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let private_acc = params.private_words != 0u;
    load_constants();
    let used = select(0u, params.copies * params.copy_stride, private_acc);
    for (var w = lid; w < used; w += 256u) {
        let inside = w % params.copy_stride;
        // The padding word of each copy is never added to: its kind does not matter.
        let kind = kind_of(min(inside, params.private_words - 1u));
        atomicStore(&wacc[w], select(0u, 0xffffffffu, kind == KIND_MIN));
    }
    workgroupBarrier();
    let copy_base = select(0u, (lid % max(params.copies, 1u)) * params.copy_stride, private_acc);
    let first = (wid.x + wid.y * nwg.x) * 256u + lid;
    for (var row = first; row < params.rows; row += UNROLL * params.row_stride) {
        run_rows(row, private_acc, copy_base);
    }
    workgroupBarrier();
    for (var w = lid; w < params.private_words; w += 256u) {
        let kind = kind_of(w);
        if (kind == KIND_SUM) {
            // The copies' 96-bit sums, added with carries (mod 2^96, like the atomics).
            var s = vec3<u32>(0u, 0u, 0u);
            for (var c = 0u; c < params.copies; c++) {
                let at = c * params.copy_stride + w;
                let v0 = atomicLoad(&wacc[at]);
                let v1 = atomicLoad(&wacc[at + 1u]);
                let v2 = atomicLoad(&wacc[at + 2u]);
                let lo = s.x + v0;
                let c0 = select(0u, 1u, lo < s.x);
                let mid = s.y + v1;
                let c1 = select(0u, 1u, mid < s.y);
                let mid2 = mid + c0;
                let c2 = select(0u, 1u, mid2 < mid);
                s = vec3<u32>(lo, mid2, s.z + v2 + c1 + c2);
            }
            if ((s.x | s.y | s.z) != 0u) {
                add96_at(false, w, s.x, s.y, s.z);
            }
        } else if (kind == KIND_MIN) {
            var m = 0xffffffffu;
            for (var c = 0u; c < params.copies; c++) {
                m = min(m, atomicLoad(&wacc[c * params.copy_stride + w]));
            }
            if (m != 0xffffffffu) {
                atomicMin(&acc[w], m);
            }
        } else if (kind == KIND_MAX) {
            var m = 0u;
            for (var c = 0u; c < params.copies; c++) {
                m = max(m, atomicLoad(&wacc[c * params.copy_stride + w]));
            }
            if (m != 0u) {
                atomicMax(&acc[w], m);
            }
        } else if (kind == KIND_BITS) {
            var m = 0u;
            for (var c = 0u; c < params.copies; c++) {
                m |= atomicLoad(&wacc[c * params.copy_stride + w]);
            }
            if (m != 0u) {
                atomicOr(&acc[w], m);
            }
        }
    }
}
