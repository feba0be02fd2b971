// GridIndex build (after spatial/common.wgsl). `build_keys` gives every row of one chunk its
// cell key (or `invalid_key` = cells for non-finite and out-of-domain rows) and its ID, and
// counts rows per cell; a stable sort by key and an exclusive scan of the counts follow as
// their own nodes; `store_ids` copies the sorted IDs' accepted, capacity-bounded prefix and
// publishes (accepted, overflow, outside).

struct BuildParams {
    domain: Domain,
    rows: u32,        // rows of this chunk
    base: u32,        // global row of the chunk's first row (generated IDs, key rows)
    pos_off: u32,     // word offset of the chunk's first coordinate in its binding
    id_off: u32,      // row offset of the chunk's first explicit ID
    invalid_key: u32, // = cells
    capacity: u32,    // object ID rows
    offsets_off: u32,
    ids_out_off: u32,
    status_off: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: BuildParams;
@group(0) @binding(1) var<storage, read> positions: array<f32>;
#ifdef EXPLICIT_IDS
@group(0) @binding(2) var<storage, read> source_ids: array<u32>;
#endif
@group(0) @binding(3) var<storage, read_write> keys: array<u32>;
@group(0) @binding(4) var<storage, read_write> values: array<u32>;
@group(0) @binding(5) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read> offsets: array<u32>;
@group(0) @binding(7) var<storage, read> sorted_values: array<u32>;
@group(0) @binding(8) var<storage, read_write> object_ids: array<u32>;
@group(0) @binding(9) var<storage, read_write> status: array<u32>;
@group(0) @binding(10) var<storage, read> outside_count: array<u32>;

fn load_point(i: u32) -> vec3<f32> {
    let o = params.pos_off + DIMS * i;
    var p = vec3<f32>(positions[o], positions[o + 1u], 0.0);
    if (DIMS == 3u) {
        p.z = positions[o + 2u];
    }
    return p;
}

@compute @workgroup_size(WG)
fn build_keys(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid);
    if (i >= params.rows) {
        return;
    }
    let p = load_point(i);
    var key = params.invalid_key;
    if (in_domain(params.domain, p)) {
        key = cell_index(params.domain, cell_coords(params.domain, p));
        atomicAdd(&counts[key], 1u);
    } else if (point_finite(p)) {
        // Finite rows outside the domain: counted in the spare last bucket (the exclusive
        // scan's total excludes it), published so queries reaching outside can say so.
        atomicAdd(&counts[params.invalid_key], 1u);
    }
#ifdef EXPLICIT_IDS
    let id = source_ids[params.id_off + i];
#else
    let id = params.base + i;
#endif
    keys[params.base + i] = key;
    values[params.base + i] = id;
}

@compute @workgroup_size(WG)
fn store_ids(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = linear_row(wid, nwg, lid);
    let accepted = offsets[params.offsets_off + params.invalid_key];
    let stored = min(accepted, params.capacity);
    if (i == 0u) {
        status[params.status_off] = accepted;
        status[params.status_off + 1u] = select(0u, 1u, accepted > params.capacity);
        status[params.status_off + 2u] = outside_count[params.invalid_key];
    }
    if (i >= params.capacity) {
        return;
    }
    var id = 0xffffffffu;
    if (i < stored) {
        id = sorted_values[i];
    }
    object_ids[params.ids_out_off + i] = id;
}
