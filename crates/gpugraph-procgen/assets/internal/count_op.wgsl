// One step of growing arithmetic over live counts, evaluated on the device: out = a (op) b,
// saturating at u32::MAX. An operand is a count word (its *_live flag set) or a constant.
struct Params { op: u32, a_const: u32, b_const: u32, a_live: u32, b_live: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(1)
fn main() {
    let x = select(params.a_const, a[0], params.a_live != 0u);
    let y = select(params.b_const, b[0], params.b_live != 0u);
    var r = 0u;
    switch params.op {
        case 0u: { r = select(x + y, 4294967295u, x + y < x); }
        case 1u: {
            if x != 0u && y > 4294967295u / x { r = 4294967295u; } else { r = x * y; }
        }
        case 2u: { r = min(x, y); }
        default: { r = max(x, y); }
    }
    out[0] = r;
}
