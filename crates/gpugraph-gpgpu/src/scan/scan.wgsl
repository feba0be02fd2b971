// Single-pass chained scan of u32 with decoupled look-back and decoupled fallback.
//
// The CPU twin of this file is `cpu.rs` (the plain loop); the dispatch side is `kernel.rs`,
// the tile planning is `plan.rs`.
//
// This text is assembled by `source.rs`: a generated header defines the tunables
//     WG_SIZE          invocations per workgroup
//     VEC4_PER_THREAD  vec4<u32> slots per invocation per tile (tile = WG_SIZE * VEC4_PER_THREAD * 4)
//     LOOKBACK_WINDOW  predecessor tiles inspected in parallel per look-back step (<= WG_SIZE)
//     SPIN_LIMIT       look-back steps without progress before the workgroup falls back
// and the line preprocessor resolves `#ifdef` on SEGMENTED (segment-start flags are bound),
// SUBGROUPS (subgroup builtins are used), SUBGROUP_LOOKBACK, LIVE_COUNT, and two testing
// switches: FORCE_FALLBACK (the look-back ignores the published status of tiles of this chunk, so every predecessor is
// recomputed) and REVERSE_TILES (tickets map to tiles last-first, so workgroups wait on tiles
// that have not started: the schedule of a device without forward-progress guarantees).
//
// Algorithm (Merrill & Garland's chained scan; Smith, Levien & Owens' decoupled fallback):
//  1. A tiny `clear_status` dispatch zeroes the tile counter and every tile status word.
//  2. Each workgroup of `scan_tiles` takes a ticket from the atomic counter. Tickets are handed
//     out in the order workgroups start, so a tile's predecessors were taken by workgroups that
//     started earlier. Ticket - ticket_base is the tile index inside this chunk; tickets past
//     the chunk's tile count (padding of a 2-D dispatch) exit at once.
//  3. The tile (WG_SIZE * VEC4_PER_THREAD vec4 slots, slot s = i * WG_SIZE + thread) is loaded
//     with coalesced vec4 loads, scanned in registers and workgroup memory, and its aggregate is
//     published at once. A tile whose aggregate does not depend on its predecessors (it contains
//     a segment start, or it is the first tile of the logical sequence) publishes it as its
//     inclusive prefix right away.
//  4. Look-back: LOOKBACK_WINDOW invocations each read one predecessor's status; invocation 0
//     folds the window from the nearest predecessor backwards, up to the first tile that has
//     not published (stop there and retry) or that has published its inclusive prefix (done).
//  5. Decoupled fallback: after SPIN_LIMIT consecutive steps without progress the whole
//     workgroup loads the stalled predecessor's input and reduces it itself, publishes that
//     reduction (it helps other waiters), folds it in, and continues further back. So a
//     workgroup never waits forever on a workgroup that the device does not schedule: devices
//     without forward-progress guarantees between workgroups cannot hang (Mesa lavapipe,
//     Apple GPUs, ...). It also bounds the look-back's loop iterations to about
//     (SPIN_LIMIT + 1) per tile walked back, which matters on Mesa 22.x lavapipe: gallivm
//     silently leaves any shader loop after 65,535 iterations in total per invocation, so an
//     unbounded spin there does not hang but returns a wrong carry.
//  6. The tile publishes its inclusive prefix, adds the carry and writes its outputs.
//
// Chunked sequences: chunk k is scanned by its own dispatch whose tiles have global ids after
// chunk k-1's (`tile_base`). All dispatches share the status buffer, so the first tile of chunk
// k looks back into chunk k-1, which has completed (wgpu orders dispatches that write the same
// storage buffer). Its tiles are therefore never recomputed; they could not be (that input is
// not bound here).
//
// Segments: the scan operator works on pairs (f, v) where f != 0 means "a segment starts in this
// run" and v is the sum since the last start of the run (or the whole run when f == 0):
//     (fa, va) . (fb, vb) = (fa | fb, fb != 0 ? vb : va + vb)
// which is associative. A tile containing a segment start therefore has an aggregate that is
// already its inclusive prefix, so it publishes TILE_INCLUSIVE and look-back stops there.
// The exclusive result is always inclusive - value (0 at a segment start).
//
// The chained-scan machinery shared with the fused compaction is in shared/ (chained_scan,
// tile_status, workgroup_scan); this file holds what only the scan does.

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
}

@group(0) @binding(4) var<storage, read_write> output_vec4: array<vec4<u32>>;

// Whether `tile` starts a sequence, so nothing before it is summed: the first tile of the
// logical sequence.
fn sequence_start(tile: u32) -> bool {
    return tile == 0u;
}

// ---------------------------------------------------------------------------------------------
// Global memory access. `e` is the chunk-relative index of the first of four elements.

fn load_values(e: u32, vector: bool) -> vec4<u32> {
    return load_input(e, vector);
}

fn store_values(e: u32, v: vec4<u32>, vector: bool) {
    if vector {
        output_vec4[(params.output_offset + e) >> 2u] = v;
        return;
    }
#unroll
    for (var c = 0u; c < 4u; c += 1u) {
        if e + c < params.len {
            output_words[params.output_offset + e + c] = v[c];
        }
    }
}

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
#include "shared/chained_scan_tile.wgsl"
#include "shared/chained_scan_carry.wgsl"

    let inclusive = (params.mode & MODE_INCLUSIVE) != 0u;
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        let e = tile_start + 4u * (i * WG_SIZE + tid);
        let prefix = pairs[i];
        let before = select(carry + prefix.y, prefix.y, prefix.x != 0u);
        var out = add_before(r[i], s[i], before);
        if !inclusive {
            out -= x[i];
        }
        store_values(e, out, vector_out);
    }
}
