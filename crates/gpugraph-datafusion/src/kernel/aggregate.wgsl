// Partial aggregation by a row-program interpreter (see kernel/mod.rs and program.rs).
//
// Every invocation walks rows with a grid stride and runs the query's one program per row: a
// postfix list of (opcode, argument) pairs over a stack of 64-bit two's-complement integers
// (vec2: x low word, y high word) with SQL null flags. One pipeline serves every query: the
// query lives in the `program` buffer, not in the WGSL. Sums and counts accumulate per group
// in three-word (96-bit) integers, word-wise atomic adds with explicit carries, first in
// workgroup memory when the groups fit (several copies, so that invocations adding to one
// group contend less), then the copies are summed and flushed into `acc`.

struct Params {
    rows: u32,
    instructions: u32,
    words_per_group: u32,
    groups: u32,
    // 0: accumulate into `acc` directly; else groups * words_per_group (<= PRIVATE_WORDS).
    private_words: u32,
    row_stride: u32,
    // Bit c: column c holds ceil(rows / 32) validity words after its `rows` values.
    has_valid: u32,
    // Index of the first constant (lo, hi) in `program`, after the instructions.
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
}

const PRIVATE_WORDS: u32 = 4096u;
const STACK: u32 = 16u;

const OP_LOAD: u32 = 0u;
const OP_CONST: u32 = 1u;
const OP_NULL: u32 = 2u;
const OP_ADD: u32 = 3u;
const OP_SUB: u32 = 4u;
const OP_MUL: u32 = 5u;
const OP_NEG: u32 = 6u;
const OP_EQ: u32 = 7u;
const OP_NE: u32 = 8u;
const OP_LT: u32 = 9u;
const OP_LE: u32 = 10u;
const OP_GT: u32 = 11u;
const OP_GE: u32 = 12u;
const OP_AND: u32 = 13u;
const OP_OR: u32 = 14u;
const OP_NOT: u32 = 15u;
const OP_IS_NULL: u32 = 16u;
const OP_IS_NOT_NULL: u32 = 17u;
const OP_SELECT: u32 = 18u;
const OP_FILTER: u32 = 19u;
const OP_GROUP: u32 = 20u;
const OP_SUM: u32 = 21u;
const OP_COUNT: u32 = 22u;
const OP_MIN: u32 = 23u;
const OP_MAX: u32 = 24u;

const KIND_SUM: u32 = 0u;
const KIND_MIN: u32 = 1u;
const KIND_MAX: u32 = 2u;
const KIND_CONTINUED: u32 = 3u;

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

var<workgroup> wacc: array<atomic<u32>, PRIVATE_WORDS>;

fn word(c: u32, i: u32) -> u32 {
    switch c {
        case 0u: { return col0[i]; }
        case 1u: { return col1[i]; }
        case 2u: { return col2[i]; }
        case 3u: { return col3[i]; }
        case 4u: { return col4[i]; }
        case 5u: { return col5[i]; }
        case 6u: { return col6[i]; }
        default: { return col7[i]; }
    }
}

fn is_valid(c: u32, row: u32) -> bool {
    if (((params.has_valid >> c) & 1u) == 0u) {
        return true;
    }
    return ((word(c, params.rows + row / 32u) >> (row % 32u)) & 1u) != 0u;
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

// acc[at .. at + 3] += (a0, a1, a2) mod 2^96: each word's carry goes into the next word's add,
// so concurrent adds in any order give the exact sum.
fn add96_global(at: u32, a0: u32, a1: u32, a2: u32) {
    let old0 = atomicAdd(&acc[at], a0);
    let c0 = select(0u, 1u, old0 + a0 < old0);
    let m = a1 + c0;
    let pre = select(0u, 1u, m < a1);
    let old1 = atomicAdd(&acc[at + 1u], m);
    let c1 = select(0u, 1u, old1 + m < old1) + pre;
    atomicAdd(&acc[at + 2u], a2 + c1);
}

fn add96_private(at: u32, a0: u32, a1: u32, a2: u32) {
    let old0 = atomicAdd(&wacc[at], a0);
    let c0 = select(0u, 1u, old0 + a0 < old0);
    let m = a1 + c0;
    let pre = select(0u, 1u, m < a1);
    let old1 = atomicAdd(&wacc[at + 1u], m);
    let c1 = select(0u, 1u, old1 + m < old1) + pre;
    atomicAdd(&wacc[at + 2u], a2 + c1);
}

fn add96(private_acc: bool, copy_base: u32, at: u32, a0: u32, a1: u32, a2: u32) {
    if (private_acc) {
        add96_private(copy_base + at, a0, a1, a2);
    } else {
        add96_global(at, a0, a1, a2);
    }
}

fn kind_of(w: u32) -> u32 {
    return program[params.kinds + w % params.words_per_group];
}

fn run_row(row: u32, private_acc: bool, copy_base: u32) {
    var value: array<vec2<u32>, STACK>;
    var nul: array<bool, STACK>;
    var sp = 0u;
    var group = 0u;
    for (var pc = 0u; pc < params.instructions; pc++) {
        let op = program[2u * pc];
        let arg = program[2u * pc + 1u];
        switch op {
            case OP_LOAD: {
                let v = word(arg, row);
                value[sp] = vec2<u32>(v, select(0u, 0xffffffffu, (v & 0x80000000u) != 0u));
                nul[sp] = !is_valid(arg, row);
                sp++;
            }
            case OP_CONST: {
                let at = params.constants + 2u * arg;
                value[sp] = vec2<u32>(program[at], program[at + 1u]);
                nul[sp] = false;
                sp++;
            }
            case OP_NULL: {
                value[sp] = vec2<u32>(0u, 0u);
                nul[sp] = true;
                sp++;
            }
            case OP_ADD, OP_SUB, OP_MUL, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE: {
                sp--;
                let b = value[sp];
                let a = value[sp - 1u];
                var r = vec2<u32>(0u, 0u);
                switch op {
                    case OP_ADD: { r = add64(a, b); }
                    case OP_SUB: { r = add64(a, neg64(b)); }
                    case OP_MUL: { r = mul64(a, b); }
                    case OP_EQ: { r = boolean(eq64(a, b)); }
                    case OP_NE: { r = boolean(!eq64(a, b)); }
                    case OP_LT: { r = boolean(lt64(a, b)); }
                    case OP_LE: { r = boolean(!lt64(b, a)); }
                    case OP_GT: { r = boolean(lt64(b, a)); }
                    default: { r = boolean(!lt64(a, b)); }
                }
                value[sp - 1u] = r;
                nul[sp - 1u] = nul[sp - 1u] || nul[sp];
            }
            case OP_NEG: {
                value[sp - 1u] = neg64(value[sp - 1u]);
            }
            case OP_AND: {
                // SQL three-valued AND: false wins over null.
                sp--;
                let a_false = !nul[sp - 1u] && !truth(value[sp - 1u]);
                let b_false = !nul[sp] && !truth(value[sp]);
                let any_null = nul[sp - 1u] || nul[sp];
                value[sp - 1u] = boolean(!(a_false || b_false) && !any_null);
                nul[sp - 1u] = !(a_false || b_false) && any_null;
            }
            case OP_OR: {
                // SQL three-valued OR: true wins over null.
                sp--;
                let a_true = !nul[sp - 1u] && truth(value[sp - 1u]);
                let b_true = !nul[sp] && truth(value[sp]);
                let any_null = nul[sp - 1u] || nul[sp];
                value[sp - 1u] = boolean(a_true || b_true);
                nul[sp - 1u] = !(a_true || b_true) && any_null;
            }
            case OP_NOT: {
                value[sp - 1u] = boolean(!truth(value[sp - 1u]));
            }
            case OP_IS_NULL: {
                value[sp - 1u] = boolean(nul[sp - 1u]);
                nul[sp - 1u] = false;
            }
            case OP_IS_NOT_NULL: {
                value[sp - 1u] = boolean(!nul[sp - 1u]);
                nul[sp - 1u] = false;
            }
            case OP_SELECT: {
                // Stack: else, then, condition. A null condition takes the else branch.
                sp -= 2u;
                let take = !nul[sp + 1u] && truth(value[sp + 1u]);
                if (take) {
                    value[sp - 1u] = value[sp];
                    nul[sp - 1u] = nul[sp];
                }
            }
            case OP_FILTER: {
                sp--;
                if (nul[sp] || !truth(value[sp])) {
                    return;
                }
            }
            case OP_GROUP: {
                sp--;
                group = value[sp].x;
                if (group >= params.groups) {
                    return;
                }
            }
            case OP_SUM: {
                sp--;
                if (!nul[sp]) {
                    let v = value[sp];
                    let ext = select(0u, 0xffffffffu, (v.y & 0x80000000u) != 0u);
                    add96(private_acc, copy_base, group * params.words_per_group + arg, v.x, v.y, ext);
                }
            }
            case OP_COUNT: {
                sp--;
                if (!nul[sp]) {
                    add96(private_acc, copy_base, group * params.words_per_group + arg, 1u, 0u, 0u);
                }
            }
            case OP_MIN, OP_MAX: {
                sp--;
                if (!nul[sp]) {
                    // Values fit i32 (checked on the host): flipping the sign bit orders them
                    // as u32.
                    let key = value[sp].x ^ 0x80000000u;
                    let at = group * params.words_per_group + arg;
                    if (private_acc) {
                        let p = copy_base + at;
                        if (op == OP_MIN) { atomicMin(&wacc[p], key); } else { atomicMax(&wacc[p], key); }
                    } else {
                        if (op == OP_MIN) { atomicMin(&acc[at], key); } else { atomicMax(&acc[at], key); }
                    }
                }
            }
            default: {
                return;
            }
        }
    }
}

@compute @workgroup_size(256)
fn aggregate(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let private_acc = params.private_words != 0u;
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
    for (var row = first; row < params.rows; row += params.row_stride) {
        run_row(row, private_acc, copy_base);
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
                add96_global(w, s.x, s.y, s.z);
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
        }
    }
}
