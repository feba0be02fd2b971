// Initialization and finalization of the keyed accumulators (see keyed.wgsl for the layout).
// The same generated header precedes this file. `init` writes identities to every word of
// `acc` once per encoding; `finalize` decodes one key per invocation into the caller's views:
// count, sum (0 for empty keys), min/max (NaN for empty keys), mean = sum / count (NaN for
// empty keys), and invocation 0 also writes the ignored-row count and the gate flag.

struct Params {
    keys: u32,
    words: u32,
    count_off: u32,
    sum_off: u32,
    min_off: u32,
    max_off: u32,
    mean_off: u32,
    ignored_off: u32,
    flag_off: u32,
    // 0x7fc00000, passed in because a NaN const-expression is a shader-creation error.
    nan_bits: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> acc: array<u32>;
@group(0) @binding(2) var<storage, read_write> out_count: array<u32>;
@group(0) @binding(3) var<storage, read_write> out_sum: array<f32>;
@group(0) @binding(4) var<storage, read_write> out_min: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_max: array<f32>;
@group(0) @binding(6) var<storage, read_write> out_mean: array<f32>;
@group(0) @binding(7) var<storage, read_write> out_ignored: array<u32>;
@group(0) @binding(8) var<storage, read_write> out_flag: array<u32>;

const NONE: u32 = 0xffffffffu;
const MIN_IDENTITY: u32 = 0xff800000u;
const MAX_IDENTITY: u32 = 0x007fffffu;

fn decode(e: u32) -> f32 {
    return bitcast<f32>(select(~e, e & 0x7fffffffu, (e & 0x80000000u) != 0u));
}

// Both kernels stride over their range with every launched invocation (the grid is bounded).
fn invocation(wg: vec3<u32>, num_wg: vec3<u32>, lane: u32) -> u32 {
    return linear_workgroup(wg, num_wg) * WG + lane;
}

fn invocations(num_wg: vec3<u32>) -> u32 {
    return num_wg.x * num_wg.y * WG;
}

@compute @workgroup_size(WG)
fn init(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    for (var i = invocation(wg, num_wg, lane); i < params.words; i += invocations(num_wg)) {
        var v = 0u;
        if (i >= STATUS_WORDS) {
            let s = (i - STATUS_WORDS) % STRIDE;
            if (s == MIN_AT) {
                v = MIN_IDENTITY;
            } else if (s == MAX_AT) {
                v = MAX_IDENTITY;
            }
        }
        acc[i] = v;
    }
}

fn finalize_key(k: u32) {
    let nan = bitcast<f32>(params.nan_bits);
    let base = STATUS_WORDS + k * STRIDE;
    var count = 0u;
    if (COUNT_AT != NONE) {
        count = acc[base + COUNT_AT];
    }
    var sum = 0.0;
    if (SUM_AT != NONE) {
        sum = bitcast<f32>(acc[base + SUM_AT]);
    }
    if (HAS_COUNT) {
        out_count[params.count_off + k] = count;
    }
    if (HAS_SUM) {
        out_sum[params.sum_off + k] = sum;
    }
    if (HAS_MIN) {
        let e = acc[base + MIN_AT];
        out_min[params.min_off + k] = select(decode(e), nan, e == MIN_IDENTITY);
    }
    if (HAS_MAX) {
        let e = acc[base + MAX_AT];
        out_max[params.max_off + k] = select(decode(e), nan, e == MAX_IDENTITY);
    }
    if (HAS_MEAN) {
        out_mean[params.mean_off + k] = select(sum / f32(count), nan, count == 0u);
    }
}

@compute @workgroup_size(WG)
fn finalize(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,
            @builtin(local_invocation_index) lane: u32) {
    let first = invocation(wg, num_wg, lane);
    if (first == 0u) {
        if (HAS_IGNORED) {
            out_ignored[params.ignored_off] = acc[0];
        }
        if (HAS_FLAG) {
            out_flag[params.flag_off] = acc[1];
        }
    }
    for (var k = first; k < params.keys; k += invocations(num_wg)) {
        finalize_key(k);
    }
}
