// GPUSceneDrawGeneration (`draw_generation.rs`; oracle `cpu::draw_generation`). Included after
// `record.wgsl`. Three passes over one binding layout:
//   clear:   every command's instanceCount and firstInstance to 0, owners to INVALID,
//            the three diagnostics to 0;
//   claim:   every eligible row (active, visible, valid slot) counts as required; an
//            out-of-range slot sets overflow, an in-range one takes atomicMin(owner, row);
//   publish: the owning row writes instanceCount = 1 and firstInstance = row and counts as
//            published; a row that lost its slot sets overflow.
// Renderer-authored words of each command (counts, offsets) are never written. The required
// and published counts are summed per workgroup first and added once per workgroup: every
// row adding to one global word would serialize hundreds of thousands of atomics on one
// address (a third of the frame at 1M records on an H100).

const WORKGROUP_SIZE: u32 = 256u;

struct Params {
    scene_capacity: u32,
    command_capacity: u32,
    record_base: u32,
    visibility_base: u32,
    command_base: u32,
    command_words: u32,
    first_instance_word: u32,
    owner_base: u32,
    required_base: u32,
    published_base: u32,
    overflow_base: u32,
    use_visibility: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> records: array<u32>;
@group(0) @binding(2) var<storage, read> visibility: array<u32>;
@group(0) @binding(3) var<storage, read_write> commands: array<u32>;
@group(0) @binding(4) var<storage, read_write> owners: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> required: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> published: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> overflow: array<atomic<u32>>;

var<workgroup> tally: atomic<u32>;

// Adds `count` of every invocation of the workgroup to `total` with one atomic. Every
// invocation must reach it (a workgroup barrier inside).
fn add_per_workgroup(count: u32, lid: u32) -> u32 {
    if lid == 0u {
        atomicStore(&tally, 0u);
    }
    workgroupBarrier();
    if count != 0u {
        atomicAdd(&tally, count);
    }
    workgroupBarrier();
    return atomicLoad(&tally);
}

// The slot row `row` requests, or INVALID_REFERENCE when it takes no part.
fn requested_slot(row: u32) -> u32 {
    let flags = records[record_word(params.record_base, row, FLAGS_WORD)];
    if (flags & ACTIVE_FLAG) == 0u {
        return INVALID_REFERENCE;
    }
    if params.use_visibility != 0u && visibility[params.visibility_base + row] == 0u {
        return INVALID_REFERENCE;
    }
    return records[record_word(params.record_base, row, COMMAND_SLOT_WORD)];
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn clear(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let c = linear_row(wid, nwg, lid, WORKGROUP_SIZE);
    if c == 0u {
        atomicStore(&required[params.required_base], 0u);
        atomicStore(&published[params.published_base], 0u);
        atomicStore(&overflow[params.overflow_base], 0u);
    }
    if c >= params.command_capacity {
        return;
    }
    let at = params.command_base + c * params.command_words;
    commands[at + 1u] = 0u;
    commands[at + params.first_instance_word] = 0u;
    atomicStore(&owners[params.owner_base + c], INVALID_REFERENCE);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn claim(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = linear_row(wid, nwg, lid, WORKGROUP_SIZE);
    var slot = INVALID_REFERENCE;
    if row < params.scene_capacity {
        slot = requested_slot(row);
    }
    if slot != INVALID_REFERENCE {
        if slot >= params.command_capacity {
            atomicStore(&overflow[params.overflow_base], 1u);
        } else {
            atomicMin(&owners[params.owner_base + slot], row);
        }
    }
    let n = add_per_workgroup(select(0u, 1u, slot != INVALID_REFERENCE), lid);
    if lid == 0u && n != 0u {
        atomicAdd(&required[params.required_base], n);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn publish(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = linear_row(wid, nwg, lid, WORKGROUP_SIZE);
    var slot = INVALID_REFERENCE;
    if row < params.scene_capacity {
        slot = requested_slot(row);
    }
    var won = false;
    if slot != INVALID_REFERENCE && slot < params.command_capacity {
        if atomicLoad(&owners[params.owner_base + slot]) != row {
            atomicStore(&overflow[params.overflow_base], 1u);
        } else {
            let at = params.command_base + slot * params.command_words;
            commands[at + 1u] = 1u;
            commands[at + params.first_instance_word] = row;
            won = true;
        }
    }
    let n = add_per_workgroup(select(0u, 1u, won), lid);
    if lid == 0u && n != 0u {
        atomicAdd(&published[params.published_base], n);
    }
}
