// Fused stable compaction: the chained scan of selection flags (shared/chained_scan.wgsl)
// whose epilogue scatters the survivors instead of writing the prefix. Host side:
// compact/kernel.rs; assembled by scan/source.rs (`Variant::compact`).
//
// The input stream is a selection-flag
// stream, normalized to 0/1 as it is loaded, and the scan is the plain exclusive sum (never
// segmented). Instead of writing the prefix, the epilogue scatters each selected row's value to
// output[prefix] when prefix < capacity (stable: prefixes increase in source order), and the
// workgroup of tile `count_tile` writes the total (its inclusive prefix) to the count word, the
// overflow flag (total > capacity) and status word 1 (for a later distribution pass). Values
// are read only for vec4 groups holding a selected row. One pass: flags and values read once,
// survivors written once, 8 bytes of tile status.
//
// PARTITIONS: every chunk is an independent sequence (its first tile never looks
// back), its candidates are only the rows whose global id `id_base + row` lies in the chunk's
// GPU-resident [start, end) row of `ranges`, and the value of a survivor is that global id (no
// values binding). Flags outside the window are never loaded.

#include "shared/chained_scan.wgsl"

// One per chunk dispatch; written once when the plan is compiled (plan.rs `ScanParams`).
struct ScanParams {
    len: u32,            // elements in this chunk
    input_offset: u32,   // element offset of the chunk inside the input binding
    output_offset: u32,  // element offset of the chunk inside the output binding
    flags_offset: u32,   // element offset of the chunk inside the flags binding
    tile_base: u32,      // global id of this chunk's first tile
    ticket_base: u32,    // value of the ticket counter when this dispatch starts
    tiles: u32,          // tiles in this chunk
    mode: u32,           // MODE_INCLUSIVE or 0 (exclusive)
    live_offset: u32,    // LIVE_COUNT: element offset of the count word inside live_words
    // compact/kernel.rs `CompactParams`.
    value_offset: u32,   // element offset of the chunk's values inside the values binding
    capacity: u32,       // output rows; survivors at positions >= capacity are not written
    count_offset: u32,   // element offset of the count word inside the count binding
    overflow_offset: u32,// element offset of the overflow word inside the overflow binding
    count_tile: u32,     // global id of the tile whose workgroup writes the count
    id_base: u32,        // PARTITIONS: global id of the chunk's first row
    range_offset: u32,   // PARTITIONS: element offset of the chunk's [start, end) in ranges
    has_overflow: u32,   // 1 when the overflow word is bound
}

// Compaction: input_* are the selection flags, output_words the dense survivors.
@group(0) @binding(4) var<storage, read_write> count_words: array<u32>;
@group(0) @binding(8) var<storage, read_write> overflow_words: array<u32>;
#ifdef PARTITIONS
@group(0) @binding(6) var<storage, read> ranges: array<u32>;
#else
@group(0) @binding(6) var<storage, read> value_words: array<u32>;
@group(0) @binding(7) var<storage, read> value_vec4: array<vec4<u32>>;
#endif

#ifdef PARTITIONS
// The chunk's candidate window [win_lo, win_hi), chunk-relative; set before any load.
var<private> win_lo: u32;
var<private> win_hi: u32;
#endif

// Whether `tile` starts a sequence, so nothing before it is summed: the first tile of the
// logical sequence, or with PARTITIONS the first tile of every chunk.
fn sequence_start(tile: u32) -> bool {
#ifdef PARTITIONS
    return tile == params.tile_base;
#else
    return tile == 0u;
#endif
}

// ---------------------------------------------------------------------------------------------
// Global memory access. `e` is the chunk-relative index of the first of four elements.

fn load_values(e: u32, vector: bool) -> vec4<u32> {
#ifdef PARTITIONS
    if e + 4u <= win_lo || e >= win_hi {
        return vec4<u32>(0u);
    }
#endif
    // Selection flags: any nonzero word selects its row.
    var v = select(vec4<u32>(0u), vec4<u32>(1u), load_input(e, vector) != vec4<u32>(0u));
#ifdef PARTITIONS
    let row = vec4<u32>(e) + vec4<u32>(0u, 1u, 2u, 3u);
    v = select(vec4<u32>(0u), v, (row >= vec4<u32>(win_lo)) & (row < vec4<u32>(win_hi)));
#endif
    return v;
}

// The values of the selected rows among the four at chunk-relative `e` (others unspecified).
fn load_survivors(e: u32, selected: vec4<u32>, vector: bool) -> vec4<u32> {
#ifdef PARTITIONS
    return vec4<u32>(params.id_base + e) + vec4<u32>(0u, 1u, 2u, 3u);
#else
    if vector {
        return value_vec4[(params.value_offset + e) >> 2u];
    }
    var v = vec4<u32>(0u);
#unroll
    for (var c = 0u; c < 4u; c += 1u) {
        if selected[c] != 0u {
            v[c] = value_words[params.value_offset + e + c];
        }
    }
    return v;
#endif
}

#ifdef PARTITIONS
// The chunk's candidate rows: global ids [start, end) of its `ranges` row intersected with the
// chunk's own ids [id_base, id_base + len), as chunk-relative rows (empty when end <= start).
fn set_window() {
    let start = ranges[params.range_offset];
    let end = ranges[params.range_offset + 1u];
    let last = params.id_base + params.len;
    win_lo = clamp(start, params.id_base, last) - params.id_base;
    win_hi = max(clamp(end, params.id_base, last) - params.id_base, win_lo);
}
#endif

// Scans one chunk. Dispatch at least params.tiles workgroups in any shape (x * y * z); the
// tile comes from the ticket counter, not from the workgroup id.
@compute @workgroup_size(WG_SIZE)
fn scan_tiles(
    @builtin(local_invocation_index) lid: u32,
#ifdef SUBGROUP_BUILTINS
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(num_subgroups) sg_count: u32,
#endif
) {
#include "shared/chained_scan_ticket.wgsl"
#ifdef PARTITIONS
    set_window();
#endif
#include "shared/chained_scan_tile.wgsl"
#ifdef GATHER_EARLY
    // Issued before the look-back, so their latency overlaps its reads.
    let vector_values = full && (params.value_offset & 3u) == 0u;
    var sv: array<vec4<u32>, VEC4_PER_THREAD>;
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        if any(x[i] != vec4<u32>(0u)) {
            sv[i] = load_survivors(tile_start + 4u * (i * WG_SIZE + tid), x[i], vector_values);
        }
    }
#endif
#include "shared/chained_scan_carry.wgsl"

    // Survivors' values are loaded here, after the look-back, not with the flags: loading them
    // early cost registers and occupancy (H200, 2^28: 1.145 against 0.908 ms at 1 % selected).
    // GATHER_EARLY loads them before the look-back instead. Keep this block's shape: declaring
    // `sv` before the look-back for every variant made the NVIDIA default 20 % slower at 1 %
    // selected (1.02 against 0.855 ms, 2026-12-01).
#ifndef GATHER_EARLY
    let vector_values = full && (params.value_offset & 3u) == 0u;
#ifdef GATHER_FIRST
    var sv: array<vec4<u32>, VEC4_PER_THREAD>;
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        if any(x[i] != vec4<u32>(0u)) {
            sv[i] = load_survivors(tile_start + 4u * (i * WG_SIZE + tid), x[i], vector_values);
        }
    }
#endif
#endif
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        // x[i] holds 0/1 selections; r[i] their inclusive sums within the vec4.
        if any(x[i] != vec4<u32>(0u)) {
            let position = r[i] - x[i] + vec4<u32>(carry + pairs[i].y);
#ifdef GATHER_FIRST
            let v = sv[i];
#else
            let v = load_survivors(tile_start + 4u * (i * WG_SIZE + tid), x[i], vector_values);
#endif
#unroll
            for (var c = 0u; c < 4u; c += 1u) {
                if x[i][c] != 0u && position[c] < params.capacity {
                    output_words[params.output_offset + position[c]] = v[c];
                }
            }
        }
    }
    if lid == 0u && tile == params.count_tile {
        let count = carry + sh_tile_aggregate.y;
        count_words[params.count_offset] = count;
        if params.has_overflow != 0u {
            overflow_words[params.overflow_offset] = select(0u, 1u, count > params.capacity);
        }
        atomicStore(&status[1], count);
    }
}
