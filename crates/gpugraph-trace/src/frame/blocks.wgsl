// Block summaries (frame/blocks.rs; oracle cpu::block_summaries), built once per load by the
// frame's build graph: each thread's start-sorted spans cut into blocks of BLOCK_SPANS
// consecutive spans, one invocation per block summarizing them for the span LOD's block pass
// (lod/lod.wgsl), which then handles a zoomed-out block without visiting its spans. A record
// is BLOCK_WORDS words:
//   [first span, end span (exclusive), thread, lane entries (BLOCK_LANES_OVERFLOW: the block
//    has more distinct lanes than BLOCK_LANES), max end lo, hi, max duration lo, hi],
// then BLOCK_LANES entries of 8 words, one per distinct lane in order of first appearance:
//   [lane, spans on it, first start lo, hi, max end lo, hi, largest gap lo, hi],
// where the gap is how far a span of the lane starts after every earlier span of the lane in
// the block ended (0 when they overlap or touch): with it, the block pass proves the lane's
// pixel columns contiguous. Durations are the 48 bits the kernels read. Records past the
// blocks of the loaded threads are zero.

const BLOCK_SPANS: u32 = 64u;
const BLOCK_LANES: u32 = 8u;
const BLOCK_WORDS: u32 = 72u;
const BLOCK_LANES_OVERFLOW: u32 = 0xffffffffu;

@group(0) @binding(0) var<storage, read> spans: array<u32>;
@group(0) @binding(1) var<storage, read> thread_spans: array<u32>;
// Per thread its first block, then the total (thread capacity + 1 words; threads past the
// loaded ones hold the total: no blocks).
@group(0) @binding(2) var<storage, read> thread_blocks: array<u32>;
@group(0) @binding(3) var<storage, read_write> blocks: array<u32>;

fn max64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, lt64(a, b));
}

@compute @workgroup_size(64)
fn build_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let b = linear_row(wid, nwg, lid, 64u);
    let base = b * BLOCK_WORDS;
    if base + BLOCK_WORDS > arrayLength(&blocks) {
        return;
    }
    var w: array<u32, BLOCK_WORDS>;
    for (var k = 0u; k < BLOCK_WORDS; k++) {
        w[k] = 0u;
    }
    let last = arrayLength(&thread_blocks) - 1u;
    if b < thread_blocks[last] {
        // The thread: the last whose first block is at or before b.
        var lo = 0u;
        var hi = last;
        while lo < hi {
            let mid = lo + (hi - lo) / 2u;
            if thread_blocks[mid] <= b {
                lo = mid + 1u;
            } else {
                hi = mid;
            }
        }
        let t = lo - 1u;
        let first = thread_spans[2u * t] + BLOCK_SPANS * (b - thread_blocks[t]);
        let end = min(first + BLOCK_SPANS, thread_spans[2u * t + 1u]);
        w[0] = first;
        w[1] = end;
        w[2] = t;
        var lanes = 0u;
        var overflow = false;
        var max_end = vec2<u32>(0u, 0u);
        var max_dur = vec2<u32>(0u, 0u);
        for (var i = first; i < end; i++) {
            let start = vec2<u32>(spans[i * SPAN_WORDS], spans[i * SPAN_WORDS + 1u]);
            let dur = vec2<u32>(spans[i * SPAN_WORDS + 2u], spans[i * SPAN_WORDS + 3u] & 0xffffu);
            let lane = spans[i * SPAN_WORDS + 5u] >> 16u;
            let e = add64(start, dur);
            max_end = max64(max_end, e);
            max_dur = max64(max_dur, dur);
            var k = 0u;
            while k < lanes && w[8u + 8u * k] != lane {
                k++;
            }
            let at = 8u + 8u * k;
            if k < lanes {
                let lane_end = vec2<u32>(w[at + 4u], w[at + 5u]);
                if lt64(lane_end, start) {
                    let gap = add64(start, neg64(lane_end));
                    let g = max64(vec2<u32>(w[at + 6u], w[at + 7u]), gap);
                    w[at + 6u] = g.x;
                    w[at + 7u] = g.y;
                }
                let m = max64(lane_end, e);
                w[at + 4u] = m.x;
                w[at + 5u] = m.y;
                w[at + 1u] += 1u;
            } else if lanes < BLOCK_LANES {
                w[at] = lane;
                w[at + 1u] = 1u;
                w[at + 2u] = start.x;
                w[at + 3u] = start.y;
                w[at + 4u] = e.x;
                w[at + 5u] = e.y;
                lanes++;
            } else {
                overflow = true;
            }
        }
        w[3] = select(lanes, BLOCK_LANES_OVERFLOW, overflow);
        w[4] = max_end.x;
        w[5] = max_end.y;
        w[6] = max_dur.x;
        w[7] = max_dur.y;
    }
    for (var k = 0u; k < BLOCK_WORDS; k++) {
        blocks[base + k] = w[k];
    }
}
