// A join's direct-addressed key map (`keymap.rs`): word base + d of `map` holds the lookup
// row whose key is first_key + d, or NO_ROW. `clear` fills the map, `scatter` writes each row
// into its word and counts the words it found taken (a repeated key: not many-to-one).

const NO_ROW: u32 = 0xffffffffu;

struct Params {
    rows: u32,
    keys: u32,
    stride: u32,
    // First word of this side's map in the buffer every lookup side shares.
    base: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read_write> map: array<atomic<u32>>;
// [0]: rows whose word was taken; [1]: the smallest such word.
@group(0) @binding(3) var<storage, read_write> repeats: array<atomic<u32>, 2>;

@compute @workgroup_size(256)
fn clear(@builtin(global_invocation_id) id: vec3<u32>) {
    for (var d = id.x; d < params.keys; d += params.stride) {
        atomicStore(&map[params.base + d], NO_ROW);
    }
}

@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) id: vec3<u32>) {
    for (var r = id.x; r < params.rows; r += params.stride) {
        let d = offsets[r];
        if d == NO_ROW {
            continue;
        }
        if atomicExchange(&map[params.base + d], r) != NO_ROW {
            atomicAdd(&repeats[0], 1u);
            atomicMin(&repeats[1], d);
        }
    }
}
