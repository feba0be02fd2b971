// Staged GPUScene mutation (`upload.rs`): the payload words of every staged run are copied to
// their record words. The staging buffer holds the run table (run `i`'s `(record word, first
// payload word)` pair at words `header - 2(i + 1)`, runs ordered by first payload word), then
// the header (staged words, staged runs, 0, 0, the scatter's x, y, z), then the payload.
// Offsets are element offsets inside each binding (the graph binds aligned windows).

struct Params {
    record_base: u32,
    staging_base: u32,
    header: u32,
    payload: u32,
    reserved0: u32,
    reserved1: u32,
    reserved2: u32,
    reserved3: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> records: array<u32>;
@group(0) @binding(2) var<storage, read> staging: array<u32>;
@group(0) @binding(3) var<storage, read_write> staging_rw: array<u32>;

// Word of run `i`'s pair.
fn run_at(i: u32) -> u32 {
    return params.staging_base + params.header - 2u * (i + 1u);
}

// One invocation per staged payload word: a binary search finds its run (the last one
// starting at or before it; run 0 starts at word 0).
@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x;
    let h = params.staging_base + params.header;
    let words = staging[h];
    let n = staging[h + 1u];
    if (w >= words || n == 0u) {
        return;
    }
    var lo = 0u;
    var hi = n;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (staging[run_at(mid) + 1u] <= w) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let dst = staging[run_at(lo)];
    let src = staging[run_at(lo) + 1u];
    records[params.record_base + dst + (w - src)] =
        staging[params.staging_base + params.payload + w];
}

// After the scatter: later encodes of the same graph dispatch no workgroups until the next
// staged mutation writes the arguments again.
@compute @workgroup_size(1)
fn settle() {
    staging_rw[params.staging_base + params.header + 4u] = 0u;
}
