// The batched draw of InstancedCubes: from the record's instanceCount (the visible count),
// the indirect arguments of ceil(count / cubes) instances of `cubes` cubes each, and the count
// itself for the vertex stage (which drops the last batch's cubes past it).

struct Params {
    count_offset: u32,
    args_offset: u32,
    drawn_offset: u32,
    cubes: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> count: array<u32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;
@group(0) @binding(3) var<storage, read_write> drawn: array<u32>;

@compute @workgroup_size(64)
fn batches(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    if lid != 0u || wid.x != 0u || wid.y != 0u {
        return;
    }
    let n = count[params.count_offset];
    let a = params.args_offset;
    // drawIndexed: indexCount, instanceCount, firstIndex, baseVertex, firstInstance.
    args[a] = 36u * params.cubes;
    args[a + 1u] = n / params.cubes + select(0u, 1u, n % params.cubes != 0u);
    args[a + 2u] = 0u;
    args[a + 3u] = 0u;
    args[a + 4u] = 0u;
    drawn[params.drawn_offset] = n;
}
