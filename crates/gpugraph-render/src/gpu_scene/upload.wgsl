// Staged GPUScene mutation (`upload.rs`): the payload words of every staged run are copied to
// their record words. `runs` holds (record word, first payload word) pairs sorted by the
// second; `counts` holds the staged words and runs. Offsets are element offsets inside each
// binding (the graph binds aligned windows).

struct Params {
    record_base: u32,
    payload_base: u32,
    runs_base: u32,
    counts_base: u32,
    args_base: u32,
    reserved0: u32,
    reserved1: u32,
    reserved2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> records: array<u32>;
@group(0) @binding(2) var<storage, read> payload: array<u32>;
@group(0) @binding(3) var<storage, read> runs: array<u32>;
@group(0) @binding(4) var<storage, read> counts: array<u32>;
@group(0) @binding(5) var<storage, read_write> args: array<u32>;

const SCATTER_WORKGROUP: u32 = 256u;

// One invocation per staged payload word: a binary search finds its run (the last one
// starting at or before it; run 0 starts at word 0).
@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x;
    let words = counts[params.counts_base];
    let n = counts[params.counts_base + 1u];
    if (w >= words || n == 0u) {
        return;
    }
    var lo = 0u;
    var hi = n;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (runs[params.runs_base + 2u * mid + 1u] <= w) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let dst = runs[params.runs_base + 2u * lo];
    let src = runs[params.runs_base + 2u * lo + 1u];
    records[params.record_base + dst + (w - src)] = payload[params.payload_base + w];
}

// After the scatter: later encodes of the same graph dispatch no workgroups until the next
// staged mutation writes the arguments again.
@compute @workgroup_size(1)
fn settle() {
    args[params.args_base] = 0u;
}
