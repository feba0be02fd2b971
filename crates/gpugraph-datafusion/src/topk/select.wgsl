// Radix selection of the k smallest rows of word-planar keys (`select.rs`). Word w of row r is
// keys[w * rows + r] for w < words, and r itself for w == words (ties keep input order, so
// every row's key is unique). The host lists the 8-bit digits in which rows differ, most
// significant first (`digits`: word << 8 | shift); each step counts the candidates' values
// of the next digit (`histogram`), then one invocation picks the digit value holding the
// k-th candidate (`choose`). Candidates are rows that equal `prefix` on the fixed bits
// (`fixmask`); a step whose chosen digit holds exactly the rows still wanted ends the
// search. `gather` then appends every row at most `prefix` on the fixed bits: exactly k.

const MAX_WORDS: u32 = 16u;

struct Params {
    rows: u32,
    // Key words per row, the row word not counted.
    words: u32,
    stride: u32,
    capacity: u32,
}

struct State {
    // Rows still wanted among the candidates.
    remaining: u32,
    // 1 once the candidates with the chosen digits are all wanted.
    done: u32,
    step: u32,
    steps: u32,
    fixmask: array<u32, MAX_WORDS>,
    prefix: array<u32, MAX_WORDS>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read> digits: array<u32>;
@group(0) @binding(3) var<storage, read_write> state: State;
@group(0) @binding(4) var<storage, read_write> hist: array<atomic<u32>, 256>;
// [0]: rows gathered; then the rows.
@group(0) @binding(5) var<storage, read_write> gathered: array<atomic<u32>>;

var<workgroup> local_hist: array<atomic<u32>, 256>;
// The state as the workgroup starts: every invocation reads the same words.
var<workgroup> fix: array<u32, MAX_WORDS>;
var<workgroup> pre: array<u32, MAX_WORDS>;
var<workgroup> searching: u32;
var<workgroup> digit: u32;

fn word(w: u32, r: u32) -> u32 {
    if w < params.words {
        return keys[w * params.rows + r];
    }
    return r;
}

fn load_state(lid: u32) {
    if lid < MAX_WORDS {
        fix[lid] = state.fixmask[lid];
        pre[lid] = state.prefix[lid];
    }
    if lid == 0u {
        let live = state.done == 0u && state.step < state.steps;
        searching = select(0u, 1u, live);
        digit = select(0u, digits[min(state.step, state.steps - 1u)], live);
    }
}

// Whether row r equals the prefix on the fixed bits of words 0..=last.
fn candidate(r: u32, last: u32) -> bool {
    for (var w = 0u; w <= last; w++) {
        let m = fix[w];
        if m != 0u && (word(w, r) & m) != pre[w] {
            return false;
        }
    }
    return true;
}

@compute @workgroup_size(256)
fn histogram(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    atomicStore(&local_hist[lid], 0u);
    load_state(lid);
    workgroupBarrier();
    if searching != 0u {
        let w = digit >> 8u;
        let shift = digit & 31u;
        // Runs of one digit value count once: the first steps often see every row in one
        // bucket, and 256 invocations adding to one workgroup counter serialize.
        var run_digit = 0u;
        var run = 0u;
        for (var r = gid.x; r < params.rows; r += params.stride) {
            if !candidate(r, w) {
                continue;
            }
            let d = (word(w, r) >> shift) & 0xffu;
            if d != run_digit {
                if run > 0u {
                    atomicAdd(&local_hist[run_digit], run);
                }
                run_digit = d;
                run = 0u;
            }
            run += 1u;
        }
        if run > 0u {
            atomicAdd(&local_hist[run_digit], run);
        }
    }
    workgroupBarrier();
    let c = atomicLoad(&local_hist[lid]);
    if c > 0u {
        atomicAdd(&hist[lid], c);
    }
}

@compute @workgroup_size(1)
fn choose() {
    if state.done != 0u || state.step >= state.steps {
        return;
    }
    let d = digits[state.step];
    let w = d >> 8u;
    let shift = d & 31u;
    let want = state.remaining;
    var before = 0u;
    for (var v = 0u; v < 256u; v++) {
        let c = atomicLoad(&hist[v]);
        if before + c >= want {
            state.remaining = want - before;
            state.fixmask[w] |= 0xffu << shift;
            state.prefix[w] |= v << shift;
            if c == want - before {
                state.done = 1u;
            }
            break;
        }
        before += c;
    }
    for (var v = 0u; v < 256u; v++) {
        atomicStore(&hist[v], 0u);
    }
    state.step += 1u;
}

// Whether row r is at most the prefix on the fixed bits, word by word.
fn at_most(r: u32) -> bool {
    for (var w = 0u; w <= params.words; w++) {
        let m = fix[w];
        if m == 0u {
            continue;
        }
        let a = word(w, r) & m;
        if a != pre[w] {
            return a < pre[w];
        }
    }
    return true;
}

@compute @workgroup_size(256)
fn gather(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    load_state(lid);
    workgroupBarrier();
    for (var r = gid.x; r < params.rows; r += params.stride) {
        if at_most(r) {
            let i = atomicAdd(&gathered[0], 1u);
            if i < params.capacity {
                atomicStore(&gathered[1u + i], r);
            }
        }
    }
}
