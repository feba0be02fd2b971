// scan: exclusive prefix sum in one workgroup, tile by tile; the total past the live count.
struct Params { n: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<i32>;
@group(0) @binding(2) var<storage, read_write> dst: array<i32>;
@group(0) @binding(3) var<storage, read_write> total: array<i32>;
// @when COUNT device
@group(0) @binding(4) var<storage, read> domain_count: array<u32>;
// @end

var<workgroup> tile: array<i32, 256>;
var<workgroup> live_shared: u32;

fn zero_n() -> u32 { return params.n; }

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    if lid == 0u {
        var live = zero_n();
        // @when COUNT device
        live = min(domain_count[0], zero_n());
        // @end
        live_shared = live;
    }
    // Uniform for the barriers below: every invocation loops over the same tiles.
    let live = workgroupUniformLoad(&live_shared);
    var carry = 0i;
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
    for (var i = live + lid; i < zero_n(); i += 256u) {
        dst[i] = carry;
    }
    if lid == 0u { total[0] = carry; }
}
