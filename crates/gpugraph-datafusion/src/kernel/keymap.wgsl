// A join's direct-addressed key map (`keymap.rs`): word base + d of `map` holds the lookup
// row whose key is first_key + d, or NO_ROW. `clear` fills the map; `scatter` unpacks each
// lookup row's record (`lookup/records.rs`): it writes the row into its key's word, counting
// the words it found taken (a repeated key: not many-to-one), and each column's value into
// the column's words, which share the buffer with the map. A semi or anti join's key set
// (`key_set` = 1) writes 0 into its keys' words instead: a key may repeat there, and the map is
// then the same whichever row writes last. A key set the device found itself (a presence bitmap
// of the keys less first_key, `records` then) becomes its map in one pass: `expand`.

const NO_ROW: u32 = 0xffffffffu;

struct Params {
    rows: u32,
    keys: u32,
    stride: u32,
    // First word of this side's map in the buffer every lookup side shares.
    base: u32,
    // Words per record.
    record: u32,
    // Bits of a record's key-map word, and the word of a null key.
    key_bits: u32,
    none: u32,
    // Lookup columns (entries of `fields`).
    columns: u32,
    // 1: the side is a key set (no columns, repeated keys allowed).
    key_set: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> records: array<u32>;
@group(0) @binding(2) var<storage, read_write> map: array<atomic<u32>>;
// [0]: rows whose word was taken; [1]: the smallest such word.
@group(0) @binding(3) var<storage, read_write> repeats: array<atomic<u32>, 2>;
// Per column: its first word in `map`, its first bit in a record, its bits, its smallest
// value (the record holds the value less it).
@group(0) @binding(4) var<storage, read> fields: array<vec4<u32>>;

@compute @workgroup_size(256)
fn clear(@builtin(global_invocation_id) id: vec3<u32>) {
    for (var d = id.x; d < params.keys; d += params.stride) {
        atomicStore(&map[params.base + d], NO_ROW);
    }
}

// Bits bit .. bit + bits of row r's record (bits <= 32; a field may cross a word).
fn field(r: u32, bit: u32, bits: u32) -> u32 {
    if bits == 0u {
        return 0u;
    }
    let w = r * params.record + bit / 32u;
    let s = bit % 32u;
    var v = records[w] >> s;
    if s + bits > 32u {
        v |= records[w + 1u] << (32u - s);
    }
    if bits < 32u {
        v &= (1u << bits) - 1u;
    }
    return v;
}

@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) id: vec3<u32>) {
    for (var r = id.x; r < params.rows; r += params.stride) {
        for (var j = 0u; j < params.columns; j++) {
            let f = fields[j];
            atomicStore(&map[f.x + r], field(r, f.y, f.z) + f.w);
        }
        let d = field(r, 0u, params.key_bits);
        if d == params.none {
            continue;
        }
        if params.key_set == 1u {
            atomicStore(&map[params.base + d], 0u);
            continue;
        }
        if atomicExchange(&map[params.base + d], r) != NO_ROW {
            atomicAdd(&repeats[0], 1u);
            atomicMin(&repeats[1], d);
        }
    }
}

// Whether bit d of bitmap b (`record` words each) in `records` is set.
fn has_bit(b: u32, d: u32) -> bool {
    return ((records[b * params.record + d / 32u] >> (d % 32u)) & 1u) == 1u;
}

// Word d of the map is 0 (a key set) or d (a payload side: the lookup row of a key is its
// offset) when bit d of the presence bitmap (bitmap 0 of `records`) is set, else NO_ROW: a
// side the GPU aggregated itself (`lookup::LookupTable::from_bits`, `from_payload_bits`).
// Each payload column's entry of `fields` is (its first word in `map`, its first value
// bitmap, its value count, the word of its first value in `records`): word d of the column
// is the value whose bitmap has bit d set (0 for a key absent).
@compute @workgroup_size(256)
fn expand(@builtin(global_invocation_id) id: vec3<u32>) {
    for (var d = id.x; d < params.keys; d += params.stride) {
        let row = select(d, 0u, params.key_set == 1u);
        atomicStore(&map[params.base + d], select(NO_ROW, row, has_bit(0u, d)));
        for (var j = 0u; j < params.columns; j++) {
            let f = fields[j];
            var v = 0u;
            for (var i = 0u; i < f.z; i++) {
                if has_bit(f.y + i, d) {
                    v = records[f.w + i];
                }
            }
            atomicStore(&map[f.x + d], v);
        }
    }
}
