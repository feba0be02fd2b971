// `--filter` predicate: out[i] = 1 when row i of the column is valid, not NaN, and satisfies
// the comparison; else 0. The host generates the constants (see nodes::Predicate):
//   KIND 0: float32 `x CMP THRESHOLD` (CMP 0..5 = < <= > >= == !=, NaN never passes);
//   KIND 1 / 2: sint32 / uint32 `(LO <= x <= HI) != INVERT` (integer comparisons are
//   normalized on the host to an inclusive range, exactly).
// params: [rows, out offset, column offset, validity offset].

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read> column: array<u32>;
@group(0) @binding(3) var<storage, read> validity: array<u32>;

fn passes(bits: u32) -> bool {
    if (KIND == 0u) {
        // NaN by its bits: comparisons with NaN are not to be trusted to any compiler.
        if ((bits & 0x7fffffffu) > 0x7f800000u) {
            return false;
        }
        let x = bitcast<f32>(bits);
        let t = bitcast<f32>(THRESHOLD);
        switch CMP {
            case 0u: { return x < t; }
            case 1u: { return x <= t; }
            case 2u: { return x > t; }
            case 3u: { return x >= t; }
            case 4u: { return x == t; }
            default: { return x != t; }
        }
    }
    var inside: bool;
    if (KIND == 1u) {
        let x = bitcast<i32>(bits);
        inside = x >= bitcast<i32>(LO) && x <= bitcast<i32>(HI);
    } else {
        inside = bits >= LO && bits <= HI;
    }
    return inside != INVERT;
}

fn row(i: u32) {
    var ok = passes(column[params[2] + i]);
    if (HAS_VALIDITY) {
        ok = ok && validity[params[3] + i] != 0u;
    }
    out[params[1] + i] = select(0u, 1u, ok);
}
