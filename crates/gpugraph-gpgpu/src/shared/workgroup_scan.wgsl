// Workgroup and subgroup scans of (segment-start flag, value) pairs, shared by the chained
// scans: the pair operator, padded slot storage, a Kogge-Stone workgroup scan, and the
// exclusive prefixes of every slot of a tile (workgroup memory, or subgroup builtins with
// SUBGROUPS). The including kernel defines WG_SIZE, VEC4_PER_THREAD, PADDED_SLOTS and the
// broadcast `sh_tile_aggregate`; SEGMENTED adds the flag half of each pair.

// Slot pairs (x = segment-start flag, y = value), padded.
var<workgroup> sh_value: array<u32, PADDED_SLOTS>;
#ifdef SEGMENTED
var<workgroup> sh_flag: array<u32, PADDED_SLOTS>;
#endif
// Double-buffered Kogge-Stone scan over one pair per invocation.
var<workgroup> ks_value: array<u32, 2u * WG_SIZE>;
#ifdef SEGMENTED
var<workgroup> ks_flag: array<u32, 2u * WG_SIZE>;
#endif

// ---------------------------------------------------------------------------------------------
// Pairs and workgroup memory helpers.

fn combine(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x | b.x, select(a.y + b.y, b.y, b.x != 0u));
}

fn pad(slot: u32) -> u32 {
    return slot + (slot >> 5u);
}


fn store_slot(slot: u32, p: vec2<u32>) {
    sh_value[pad(slot)] = p.y;
#ifdef SEGMENTED
    sh_flag[pad(slot)] = p.x;
#endif
}

fn load_slot(slot: u32) -> vec2<u32> {
    var p = vec2<u32>(0u, sh_value[pad(slot)]);
#ifdef SEGMENTED
    p.x = sh_flag[pad(slot)];
#endif
    return p;
}

fn ks_store(index: u32, p: vec2<u32>) {
    ks_value[index] = p.y;
#ifdef SEGMENTED
    ks_flag[index] = p.x;
#endif
}

fn ks_load(index: u32) -> vec2<u32> {
    var p = vec2<u32>(0u, ks_value[index]);
#ifdef SEGMENTED
    p.x = ks_flag[index];
#endif
    return p;
}

// ---------------------------------------------------------------------------------------------
// Workgroup scans.

struct PairScan {
    exclusive: vec2<u32>,
    total: vec2<u32>,
}

// Exclusive scan of one pair per invocation, in invocation order (Kogge-Stone, one barrier per
// step). Callers separate two calls by at least one barrier.
fn workgroup_scan(tid: u32, p: vec2<u32>) -> PairScan {
    var acc = p;
    var buf = 0u;
    ks_store(tid, acc);
    workgroupBarrier();
    for (var d = 1u; d < WG_SIZE; d <<= 1u) {
        if tid >= d {
            acc = combine(ks_load(buf * WG_SIZE + tid - d), acc);
        }
        buf ^= 1u;
        ks_store(buf * WG_SIZE + tid, acc);
        workgroupBarrier();
    }
    var r: PairScan;
    r.exclusive = vec2<u32>(0u);
    if tid > 0u {
        r.exclusive = ks_load(buf * WG_SIZE + tid - 1u);
    }
    r.total = ks_load(buf * WG_SIZE + WG_SIZE - 1u);
    return r;
}

// In: pairs[i] = aggregate of slot i * WG_SIZE + tid. Out: the exclusive prefix of that slot
// within the tile; sh_tile_aggregate = the tile's aggregate. Workgroup memory only: the slots
// are transposed so that each invocation folds VEC4_PER_THREAD consecutive slots, then one
// workgroup scan over invocations.
fn slot_prefixes_shared(tid: u32, pairs: ptr<function, array<vec2<u32>, VEC4_PER_THREAD>>) {
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        store_slot(i * WG_SIZE + tid, (*pairs)[i]);
    }
    workgroupBarrier();
    var run = vec2<u32>(0u);
    var before: array<vec2<u32>, VEC4_PER_THREAD>;
#unroll
    for (var k = 0u; k < VEC4_PER_THREAD; k += 1u) {
        before[k] = run;
        run = combine(run, load_slot(tid * VEC4_PER_THREAD + k));
    }
    let scanned = workgroup_scan(tid, run);
#unroll
    for (var k = 0u; k < VEC4_PER_THREAD; k += 1u) {
        store_slot(tid * VEC4_PER_THREAD + k, combine(scanned.exclusive, before[k]));
    }
    if tid == 0u {
        sh_tile_aggregate = scanned.total;
    }
    workgroupBarrier();
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        (*pairs)[i] = load_slot(i * WG_SIZE + tid);
    }
}

#ifdef SUBGROUPS
// Inclusive segmented scan across the subgroup, any subgroup size: a plain inclusive sum, minus
// the plain sum before the last segment start at or before this lane.
fn subgroup_scan(p: vec2<u32>, lane: u32) -> vec2<u32> {
#ifdef SEGMENTED
    let sum = subgroupInclusiveAdd(p.y);
    // 1 + the highest lane <= this one whose pair holds a segment start (0: none). The ballot
    // is four words wide, enough for any subgroup size WGSL allows (<= 128).
    let ballot = subgroupBallot(p.x != 0u);
    var last = 0u;
#unroll
    for (var w = 0u; w < 4u; w += 1u) {
        let first_lane = 32u * w;
        if first_lane <= lane {
            var bits = ballot[w];
            if lane - first_lane < 31u {
                bits &= (2u << (lane - first_lane)) - 1u;
            }
            if bits != 0u {
                last = first_lane + firstLeadingBit(bits) + 1u;
            }
        }
    }
    let base = subgroupShuffle(sum - p.y, max(last, 1u) - 1u);
    return select(vec2<u32>(0u, sum), vec2<u32>(1u, sum - base), last != 0u);
#else
    return vec2<u32>(0u, subgroupInclusiveAdd(p.y));
#endif
}

// Exclusive counterpart of subgroup_scan, given the lane's own pair `p` and its inclusive `incl`.
fn subgroup_exclusive(p: vec2<u32>, incl: vec2<u32>, lane: u32) -> vec2<u32> {
#ifdef SEGMENTED
    let up = subgroupShuffleUp(incl, 1u);
    return select(up, vec2<u32>(0u), lane == 0u);
#else
    return vec2<u32>(0u, incl.y - p.y);
#endif
}

// Same contract as slot_prefixes_shared, with subgroup scans: one subgroup scan per slot row,
// the subgroup aggregates (VEC4_PER_THREAD * sg_count of them, in tile order) scanned by the
// first subgroup. Requires full subgroups and tid = sg_id * sg_size + lane.
fn slot_prefixes_subgroup(
    lane: u32,
    sg_size: u32,
    sg_id: u32,
    sg_count: u32,
    pairs: ptr<function, array<vec2<u32>, VEC4_PER_THREAD>>,
) {
    var lane_before: array<vec2<u32>, VEC4_PER_THREAD>;
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        let incl = subgroup_scan((*pairs)[i], lane);
        lane_before[i] = subgroup_exclusive((*pairs)[i], incl, lane);
        if lane == sg_size - 1u {
            store_slot(i * sg_count + sg_id, incl);
        }
    }
    workgroupBarrier();
    let parts = VEC4_PER_THREAD * sg_count;
    if sg_id == 0u {
        var carry = vec2<u32>(0u);
        for (var base = 0u; base < parts; base += sg_size) {
            let index = base + lane;
            var p = vec2<u32>(0u);
            if index < parts {
                p = load_slot(index);
            }
            let incl = subgroup_scan(p, lane);
            let ex = subgroup_exclusive(p, incl, lane);
            if index < parts {
                store_slot(index, combine(carry, ex));
            }
            carry = combine(carry, subgroupShuffle(incl, sg_size - 1u));
        }
        if lane == 0u {
            sh_tile_aggregate = carry;
        }
    }
    workgroupBarrier();
#unroll
    for (var i = 0u; i < VEC4_PER_THREAD; i += 1u) {
        (*pairs)[i] = combine(load_slot(i * sg_count + sg_id), lane_before[i]);
    }
}
#endif

