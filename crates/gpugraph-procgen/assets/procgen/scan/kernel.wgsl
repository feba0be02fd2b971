// scan: exclusive prefix sum in one workgroup, tile by tile (or segment by segment); the total
// of the last group past the live count.
struct Params {
    n: u32,
    // @when SEGMENTS plain; SEGMENTS device
    starts_len: u32,
    // @end
}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<i32>;
@group(0) @binding(2) var<storage, read_write> dst: array<i32>;
// @when SEGMENTS none
@group(0) @binding(3) var<storage, read_write> total: array<i32>;
// @end
// @when SEGMENTS plain; SEGMENTS device
@group(0) @binding(3) var<storage, read> starts: array<i32>;
@group(0) @binding(5) var<storage, read_write> totals: array<i32>;
// @end
// @when COUNT device
@group(0) @binding(4) var<storage, read> domain_count: array<u32>;
// @end
// @when SEGMENTS device
@group(0) @binding(6) var<storage, read> segment_count: array<u32>;
// @end

var<workgroup> tile: array<i32, 256>;
var<workgroup> live_shared: u32;
var<workgroup> last_total: i32;

fn zero_n() -> u32 { return params.n; }

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    if lid == 0u {
        var live = zero_n();
        // @when COUNT device
        live = min(domain_count[0], zero_n());
        // @end
        live_shared = live;
        last_total = 0i;
    }
    // Uniform for the barriers below: every invocation loops over the same tiles.
    let live = workgroupUniformLoad(&live_shared);
    var carry = 0i;
    // @when SEGMENTS none
    for (var base = 0u; base < live; base += 256u) {
        let i = base + lid;
        var v = 0i;
        if i < live { v = src[i]; }
        tile[lid] = v;
        workgroupBarrier();
        for (var step = 1u; step < 256u; step <<= 1u) {
            var add = 0i;
            if lid >= step { add = tile[lid - step]; }
            workgroupBarrier();
            tile[lid] += add;
            workgroupBarrier();
        }
        if i < live { dst[i] = carry + tile[lid] - v; }
        carry += tile[255];
        workgroupBarrier();
    }
    if lid == 0u { total[0] = carry; }
    // @end
    // @when SEGMENTS plain; SEGMENTS device
    var count = params.starts_len;
    // @when SEGMENTS device
    count = min(segment_count[0], params.starts_len);
    // @end
    for (var s = lid; s < count; s += 256u) {
        let a = min(u32(max(starts[s], 0i)), live);
        var b = live;
        if s + 1u < count { b = min(u32(max(starts[s + 1u], 0i)), live); }
        var sum = 0i;
        for (var i = a; i < b; i++) {
            dst[i] = sum;
            sum += src[i];
        }
        totals[s] = sum;
        if s + 1u == count { last_total = sum; }
    }
    carry = workgroupUniformLoad(&last_total);
    // @end
    for (var i = live + lid; i < zero_n(); i += 256u) {
        dst[i] = carry;
    }
}
