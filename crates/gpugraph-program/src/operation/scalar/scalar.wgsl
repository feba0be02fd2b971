// One scalar arithmetic step on the GPU: out = a OP b over one value of type T (generated:
// the recipe's header aliases `T`, and the host's `fn apply` includes this file). Operands are read as 32-bit words from
// their bindings at params[0] / params[1]; a host value's binding is this parameter buffer,
// so host and GPU operands take the same path. params[2] is the output word.

@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read> a_src: array<u32>;
@group(0) @binding(3) var<storage, read> b_src: array<u32>;

@compute @workgroup_size(1)
fn scalar_operation() {
    let a = bitcast<T>(a_src[params[0]]);
    let b = bitcast<T>(b_src[params[1]]);
    out[params[2]] = bitcast<u32>(apply(a, b));
}
