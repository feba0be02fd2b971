// Radix sort, stage 1 (one sweep over the keys): the digit histograms of all passes at once,
// their exclusive prefix sums, and zeroed tickets and tile status for the passes.
// CPU twin: cpu::digit_histograms. Dispatch order: clear_histograms, count_digits,
// scan_histograms (wgpu orders dispatches that share a storage buffer).
#include "shared/dispatch.wgsl"
#include "sort/radix_common.wgsl"

// HIST_COPIES copies of every pass's counters (invocation parity picks one), summed before the
// global atomics. Copies are COPY_STRIDE words apart, one more than their size, so one digit's
// counters in two copies sit in different banks.
const COPY_STRIDE: u32 = PASSES * RADIX + 1u;
var<workgroup> sh_count: array<atomic<u32>, HIST_COPIES * COPY_STRIDE>;

// Zeroes the tickets and histograms. One workgroup.
@compute @workgroup_size(WG_SIZE)
fn clear_histograms(@builtin(local_invocation_index) t: u32) {
    for (var i = t; i < HEADER_WORDS + PASSES * RADIX; i += WG_SIZE) {
        atomicStore(&scratch[i], 0u);
    }
}

// Workgroup g counts the digits of tiles tile_base + [g * tiles_per_group, ...) (below
// tile_end) for every pass in workgroup
// memory, then adds its nonzero counts to the global histograms, and zeroes the status rows of
// its tiles for every pass.
@compute @workgroup_size(WG_SIZE)
fn count_digits(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
) {
    let first_tile = params.tile_base + linear_workgroup(wg, num_wg) * params.tiles_per_group;
    if first_tile >= params.tile_end {
        return;
    }
    let last_tile = min(first_tile + params.tiles_per_group, params.tile_end);
    for (var p = 0u; p < PASSES; p += 1u) {
        let row = params.status_word + p * params.tiles * RADIX;
        for (var tile = first_tile; tile < last_tile; tile += 1u) {
            atomicStore(&scratch[row + tile * RADIX + t], 0u);
        }
    }
    let end = min(last_tile * TILE_ROWS, params.rows);
    let copy = (t % HIST_COPIES) * COPY_STRIDE;
    // Rounds of HIST_BATCH vec4 slots per invocation, striped so that the workgroup's loads of
    // one slot index are contiguous; the loads of a round are issued before any is counted.
    let round_rows = 4u * WG_SIZE * HIST_BATCH;
    for (var e0 = first_tile * TILE_ROWS; e0 < end; e0 += round_rows) {
        var k: array<vec4<u32>, HIST_BATCH>;
#unroll
        for (var b = 0u; b < HIST_BATCH; b += 1u) {
            k[b] = load_key4(e0 + 4u * (b * WG_SIZE + t), end);
        }
#unroll
        for (var b = 0u; b < HIST_BATCH; b += 1u) {
            let e = e0 + 4u * (b * WG_SIZE + t);
            for (var c = 0u; c < 4u; c += 1u) {
                if e + c < end {
                    for (var p = 0u; p < PASSES; p += 1u) {
                        atomicAdd(&sh_count[copy + p * RADIX + digit_of(k[b][c], p * RADIX_BITS)], 1u);
                    }
                }
            }
        }
    }
    workgroupBarrier();
    for (var p = 0u; p < PASSES; p += 1u) {
        var c = 0u;
        for (var i = 0u; i < HIST_COPIES; i += 1u) {
            c += atomicLoad(&sh_count[i * COPY_STRIDE + p * RADIX + t]);
        }
        if c != 0u {
            atomicAdd(&scratch[HISTOGRAM_WORD + p * RADIX + t], c);
        }
    }
}

// Replaces each pass's digit counts by their exclusive prefix sums: the first output row of
// each digit. One workgroup.
@compute @workgroup_size(WG_SIZE)
fn scan_histograms(@builtin(local_invocation_index) t: u32) {
    for (var p = 0u; p < PASSES; p += 1u) {
        let w = HISTOGRAM_WORD + p * RADIX + t;
        let s = workgroup_scan(t, atomicLoad(&scratch[w]));
        atomicStore(&scratch[w], s.x);
    }
}
