// jump: one pointer-jumping step (list ranking or a minimum over the path to the root).
struct Params { n: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> parent: array<i32>;
@group(0) @binding(2) var<storage, read> value: array<i32>;
@group(0) @binding(3) var<storage, read_write> parent_out: array<i32>;
@group(0) @binding(4) var<storage, read_write> value_out: array<i32>;
// @when COUNT device
@group(0) @binding(5) var<storage, read> domain_count: array<u32>;
// @end

fn zero_n() -> u32 { return params.n; }

fn live_n() -> u32 {
    var live = zero_n();
    // @when COUNT device
    live = min(domain_count[0], zero_n());
    // @end
    return live;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i >= zero_n() { return; }
    let live = live_n();
    if i >= live {
        parent_out[i] = i32(i);
        value_out[i] = 0;
        return;
    }
    let p = parent[i];
    if p < 0 || u32(p) >= live || u32(p) == i {
        parent_out[i] = i32(i);
        value_out[i] = value[i];
        return;
    }
    let pp = parent[u32(p)];
    if pp < 0 || u32(pp) >= live {
        parent_out[i] = p;
    } else {
        parent_out[i] = pp;
    }
    // @when OP rank
    value_out[i] = value[i] + value[u32(p)];
    // @end
    // @when OP min
    value_out[i] = min(value[i], value[u32(p)]);
    // @end
}
