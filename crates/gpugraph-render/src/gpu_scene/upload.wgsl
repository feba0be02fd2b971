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
    bounds_base: u32,
    keys_base: u32,
    reserved2: u32,
    reserved3: u32,
}

const NO_WORD: u32 = 0xffffffffu;
const RECORD_WORDS: u32 = 32u;
const SIGN: u32 = 0x80000000u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> records: array<u32>;
@group(0) @binding(2) var<storage, read> staging: array<u32>;
@group(0) @binding(3) var<storage, read_write> staging_rw: array<u32>;
@group(0) @binding(4) var<storage, read> records_in: array<u32>;
@group(0) @binding(5) var<storage, read_write> bounds_out: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> keys_out: array<vec4<u32>>;

// Word of run `i`'s pair.
fn run_at(i: u32) -> u32 {
    return params.staging_base + params.header - 2u * (i + 1u);
}

// The record word (relative to record 0) staged payload word `w` lands on, or NO_WORD past
// the staged words: a binary search finds its run (the last one starting at or before it;
// run 0 starts at word 0).
fn target_word(w: u32) -> u32 {
    let h = params.staging_base + params.header;
    let words = staging[h];
    let n = staging[h + 1u];
    if (w >= words || n == 0u) {
        return NO_WORD;
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
    return staging[run_at(lo)] + (w - staging[run_at(lo) + 1u]);
}

// One invocation per staged payload word.
@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>) {
    let dst = target_word(gid.x);
    if (dst == NO_WORD) {
        return;
    }
    records[params.record_base + dst] = staging[params.staging_base + params.payload + gid.x];
}

// After the scatter, one invocation per staged payload word: a `flags` (word 1) or `sphere`
// (words 4..8) word re-derives its slot's packed bounds row, a `flags`, `group_id`,
// `geometry_id` (words 1..4) or `command_slot` (word 11) word its draw key row (`bounds.rs`
// states both encodings), from the record, now whole. Several words of one slot write the
// same row with the same value.
@compute @workgroup_size(256)
fn bounds(@builtin(global_invocation_id) gid: vec3<u32>) {
    let dst = target_word(gid.x);
    if (dst == NO_WORD) {
        return;
    }
    let field = dst % RECORD_WORDS;
    let slot = dst / RECORD_WORDS;
    let at = params.record_base + slot * RECORD_WORDS;
    if (field == 1u || (field >= 4u && field < 8u)) {
        let r = records_in[at + 7u];
        var w = 0u;
        if (records_in[at + 1u] != 0u) {
            w = select(r ^ SIGN, SIGN, (r & ~SIGN) == 0u);
        }
        bounds_out[params.bounds_base + slot] =
            vec4<u32>(records_in[at + 4u], records_in[at + 5u], records_in[at + 6u], w);
    }
    if ((field >= 1u && field < 4u) || field == 11u) {
        keys_out[params.keys_base + slot] = vec4<u32>(
            records_in[at + 1u], records_in[at + 2u], records_in[at + 3u], records_in[at + 11u]
        );
    }
}

// After the scatter: later encodes of the same graph dispatch no workgroups until the next
// staged mutation writes the arguments again.
@compute @workgroup_size(1)
fn settle() {
    staging_rw[params.staging_base + params.header + 4u] = 0u;
}
