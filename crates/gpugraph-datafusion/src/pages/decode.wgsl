// Expands one column slot of a Parquet row group: one workgroup per piece (`mod.rs`'s
// `Piece`), one invocation per value. The oracle is `expand_cpu`.

#include "shared/dispatch.wgsl"

struct Piece {
    row: u32,
    count: u32,
    src: u32,
    kind: u32,
    width: u32,
    value: u32,
    table_len: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> pieces: array<Piece>;
// The column's byte region as little-endian words, a zero word after the last payload.
@group(0) @binding(1) var<storage, read> region: array<u32>;
// Dictionary entries as words (value columns) or the query's key codes.
@group(0) @binding(2) var<storage, read> table: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
// Word 0: set when an index falls past the dictionary (a corrupt page).
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;

fn lookup(index: u32, len: u32) -> u32 {
    if (index >= len) {
        atomicOr(&status[0], 1u);
        return 0u;
    }
    return table[index];
}

@compute @workgroup_size(256)
fn expand(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let p = linear_workgroup(wg, groups);
    if (p >= arrayLength(&pieces)) {
        return;
    }
    let piece = pieces[p];
    if (t >= piece.count) {
        return;
    }
    var v = 0u;
    switch piece.kind {
        case 0u: {
            v = lookup(piece.value, piece.table_len);
        }
        case 1u: {
            let bit = piece.src * 8u + t * piece.width;
            let w = bit >> 5u;
            let s = bit & 31u;
            var x = region[w] >> s;
            if (s + piece.width > 32u) {
                x = x | (region[w + 1u] << (32u - s));
            }
            var mask = 0xffffffffu;
            if (piece.width < 32u) {
                mask = (1u << piece.width) - 1u;
            }
            v = lookup(x & mask, piece.table_len);
        }
        default: {
            v = region[piece.src / 4u + t];
        }
    }
    out[piece.row + t] = v;
}
