// Integer column to float32 (round to nearest, as WGSL's conversion): out[i] = f32(x[i]),
// SIGNED selects sint32 or uint32 input. params: [rows, out offset, input offset].

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> column: array<u32>;

fn row(i: u32) {
    let bits = column[params[2] + i];
    if (SIGNED) {
        out[params[1] + i] = f32(bitcast<i32>(bits));
    } else {
        out[params[1] + i] = f32(bits);
    }
}
