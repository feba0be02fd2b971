// Exact uint32 word operations for program trees (loop counters, predicates, and an
// order-sensitive accumulation that shows which iterations and branches ran).
// counter_step: counter += 1; pred = counter < limit (one invocation).
// compare:      out = a >= threshold (one invocation).
// mix:          target[i] = target[i] * 31 + constant + word + i (wrapping; rows grid).

struct WordParams {
    n: u32,
    constant: u32,
    limit: u32,
    off_target: u32,
    off_word: u32,
    off_counter: u32,
    off_pred: u32,
    pad0: u32,
}

@group(0) @binding(0) var<uniform> params: WordParams;
@group(0) @binding(1) var<storage, read_write> target_words: array<u32>;
@group(0) @binding(2) var<storage, read> word: array<u32>;
@group(0) @binding(3) var<storage, read_write> counter: array<u32>;
@group(0) @binding(4) var<storage, read_write> pred: array<u32>;
@group(0) @binding(5) var<storage, read> cmp_in: array<u32>;
@group(0) @binding(6) var<storage, read_write> cmp_out: array<u32>;

@compute @workgroup_size(1)
fn counter_step() {
    let c = counter[params.off_counter] + 1u;
    counter[params.off_counter] = c;
    pred[params.off_pred] = select(0u, 1u, c < params.limit);
}

@compute @workgroup_size(1)
fn compare() {
    cmp_out[params.off_pred] = select(0u, 1u, cmp_in[params.off_counter] >= params.limit);
}

@compute @workgroup_size(64)
fn mix(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wid.x + wid.y * nwg.x) * 64u + lid;
    if (i < params.n) {
        let t = params.off_target + i;
        target_words[t] = target_words[t] * 31u + params.constant + word[params.off_word] + i;
    }
}
