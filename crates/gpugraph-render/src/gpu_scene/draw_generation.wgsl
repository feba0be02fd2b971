// GPUSceneDrawGeneration (`draw_generation.rs`; oracles `cpu::draw_generation` and, with
// CLASSIFY, `cpu::resource_groups`). Includes `record.wgsl` and `group_classify.wgsl`. Two nodes over one binding layout:
//   prepare (one invocation): snapshots what to clear (every command on the first encode,
//            the commands the previous encode published afterwards), the rows to iterate
//            (every slot, or min(count, capacity) listed rows), writes both indirect grids
//            and zeroes the three diagnostics;
//   generate, three indirect dispatches:
//     clear:   those commands' instanceCount and firstInstance to 0, their owners to INVALID;
//     claim:   every eligible row (active, visible, valid slot) counts as required; an
//              out-of-range slot sets overflow, an in-range one takes atomicMin(owner, row);
//     publish: the owning row writes instanceCount = 1 and firstInstance = row, counts as
//              published and appends its slot to the published list; a row that lost its
//              slot sets overflow. With CLASSIFY it also classifies the command it published
//              into the resource groups (prepare zeroed their counts and flags).
// With KEYED, a row's flags and command slot come from the scene's draw keys view (`bounds.rs`
// states it: one 16-byte row per slot), else from its record's words.
// Renderer-authored words of each command (counts, offsets) are never written. The required
// and published counts are summed per workgroup first and added once per workgroup: every
// row adding to one global word would serialize hundreds of thousands of atomics on one
// address (a third of the frame at 1M records on an H100). Claim and publish take
// ROWS_PER_INVOCATION rows per invocation (a tile of ROW_TILE rows per workgroup) for the
// same reason: the GPU serializes atomics on one word, and a tile of 256 rows made four of
// them (required, published twice, the lead group) per 256 rows iterated.
//
// `state` (persistent between encodes): word 0 initialized, 1 published (the list's length),
// 2 commands to clear, 3 clear every command, 4 rows to iterate, then the owners (one per
// command) at `owner_base`, then the published slots at `published_slots_base`.

#include "gpu_scene/record.wgsl"
#include "gpu_scene/group_classify.wgsl"

override CLASSIFY: bool = false;
const WORKGROUP_SIZE: u32 = 256u;
const ROWS_PER_INVOCATION: u32 = 4u;
const ROW_TILE: u32 = WORKGROUP_SIZE * ROWS_PER_INVOCATION;
const STATE_INITIALIZED: u32 = 0u;
const STATE_PUBLISHED: u32 = 1u;
const STATE_CLEAR_COUNT: u32 = 2u;
const STATE_CLEAR_ALL: u32 = 3u;
const STATE_ROWS: u32 = 4u;

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
    state_base: u32,
    published_slots_base: u32,
    published_capacity: u32,
    listed: u32,
    rows_base: u32,
    rows_capacity: u32,
    count_base: u32,
    args_base: u32,
    max_workgroups: u32,
    keys_base: u32,
    group_count: u32,
    counts_base: u32,
    flags_base: u32,
    group_overflow_base: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> records: array<u32>;
@group(0) @binding(2) var<storage, read> visibility: array<u32>;
@group(0) @binding(3) var<storage, read_write> commands: array<u32>;
@group(0) @binding(4) var<storage, read_write> state: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> required: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> published: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> overflow: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read> rows: array<u32>;
@group(0) @binding(9) var<storage, read_write> args: array<u32>;
@group(0) @binding(10) var<storage, read_write> count: array<u32>;
@group(0) @binding(11) var<storage, read> keys: array<vec4<u32>>;
@group(0) @binding(12) var<storage, read> groups: array<vec4<u32>>;
@group(0) @binding(13) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(14) var<storage, read_write> group_flags: array<atomic<u32>>;
@group(0) @binding(15) var<storage, read_write> group_overflow: array<atomic<u32>>;

var<workgroup> tally: atomic<u32>;
var<workgroup> block_base: u32;

fn state_load(word: u32) -> u32 {
    return atomicLoad(&state[params.state_base + word]);
}

fn state_store(word: u32, value: u32) {
    atomicStore(&state[params.state_base + word], value);
}

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

// The indirect grid of `n` rows, `tile` a workgroup, at `at` of `args`: x up to the
// per-dimension limit, the rest over y (as `Grid::Rows` splits; `linear_row` reads it back).
fn write_grid(at: u32, n: u32, tile: u32) {
    let groups = n / tile + select(0u, 1u, n % tile != 0u);
    let x = min(groups, params.max_workgroups);
    args[params.args_base + at] = x;
    args[params.args_base + at + 1u] = select(1u, (groups + x - 1u) / max(x, 1u), groups > x);
    args[params.args_base + at + 2u] = 1u;
}

@compute @workgroup_size(1)
fn prepare() {
    var clear_count = params.command_capacity;
    var clear_all = 1u;
    if state_load(STATE_INITIALIZED) != 0u {
        clear_count = min(state_load(STATE_PUBLISHED), params.published_capacity);
        clear_all = 0u;
    }
    var n = params.scene_capacity;
    if params.listed != 0u {
        n = min(count[params.count_base], params.rows_capacity);
    }
    state_store(STATE_CLEAR_COUNT, clear_count);
    state_store(STATE_CLEAR_ALL, clear_all);
    state_store(STATE_PUBLISHED, 0u);
    state_store(STATE_INITIALIZED, 1u);
    state_store(STATE_ROWS, n);
    write_grid(0u, clear_count, WORKGROUP_SIZE);
    write_grid(3u, n, ROW_TILE);
    atomicStore(&required[params.required_base], 0u);
    atomicStore(&published[params.published_base], 0u);
    atomicStore(&overflow[params.overflow_base], 0u);
    if CLASSIFY {
        // Groups are few (a renderer's materials): one invocation zeroes them.
        for (var g = 0u; g < params.group_count; g += 1u) {
            atomicStore(&counts[params.counts_base + g], 0u);
            atomicStore(&group_flags[params.flags_base + g], 0u);
        }
        atomicStore(&group_overflow[params.group_overflow_base], 0u);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn clear(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = linear_row(wid, nwg, lid, WORKGROUP_SIZE);
    if i >= state_load(STATE_CLEAR_COUNT) {
        return;
    }
    var c = i;
    if state_load(STATE_CLEAR_ALL) == 0u {
        c = atomicLoad(&state[params.published_slots_base + i]);
    }
    if c >= params.command_capacity {
        return;
    }
    let at = params.command_base + c * params.command_words;
    commands[at + 1u] = 0u;
    commands[at + params.first_instance_word] = 0u;
    atomicStore(&state[params.owner_base + c], INVALID_REFERENCE);
}

// The scene row the `i`-th row of claim and publish looks at (of `n` iterated), or
// INVALID_REFERENCE.
fn row_at(i: u32, n: u32) -> u32 {
    if i >= n {
        return INVALID_REFERENCE;
    }
    var row = i;
    if params.listed != 0u {
        row = rows[params.rows_base + i];
    }
    return select(INVALID_REFERENCE, row, row < params.scene_capacity);
}

// Row `row`'s key (`row_key`) with `w` the slot it requests, INVALID_REFERENCE when it takes
// no part. The record path reads the slot's sector only for rows that take part.
fn requested_key(row: u32) -> vec4<u32> {
    var key = vec4<u32>(0u, 0u, 0u, INVALID_REFERENCE);
    if row == INVALID_REFERENCE {
        return key;
    }
    key = row_key(row, false);
    if (key.x & ACTIVE_FLAG) == 0u
        || (params.use_visibility != 0u && visibility[params.visibility_base + row] == 0u) {
        key.w = INVALID_REFERENCE;
        return key;
    }
    if !KEYED {
        key.w = records[record_word(params.record_base, row, COMMAND_SLOT_WORD)];
    }
    return key;
}

// The first of this invocation's rows: row k is first + k * WORKGROUP_SIZE (each load
// instruction of the workgroup reads consecutive list entries).
fn tile_first(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * ROW_TILE + lid;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn claim(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let first = tile_first(wid, nwg, lid);
    let n_rows = state_load(STATE_ROWS);
    var eligible = 0u;
    for (var k = 0u; k < ROWS_PER_INVOCATION; k += 1u) {
        let row = row_at(first + k * WORKGROUP_SIZE, n_rows);
        let slot = requested_key(row).w;
        if slot != INVALID_REFERENCE {
            eligible += 1u;
            if slot >= params.command_capacity {
                atomicStore(&overflow[params.overflow_base], 1u);
            } else {
                atomicMin(&state[params.owner_base + slot], row);
            }
        }
    }
    let n = add_per_workgroup(eligible, lid);
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
    let first = tile_first(wid, nwg, lid);
    let n_rows = state_load(STATE_ROWS);
    // The slots this invocation won (INVALID_REFERENCE where it did not) and, with
    // CLASSIFY, each one's group (classified here from the key already read, instead of
    // reading the command and the row again in a pass of its own).
    var won: array<u32, ROWS_PER_INVOCATION>;
    var group: array<u32, ROWS_PER_INVOCATION>;
    var wins = 0u;
    var lowest = INVALID_REFERENCE;
    for (var k = 0u; k < ROWS_PER_INVOCATION; k += 1u) {
        let row = row_at(first + k * WORKGROUP_SIZE, n_rows);
        let key = requested_key(row);
        let slot = key.w;
        won[k] = INVALID_REFERENCE;
        group[k] = INVALID_REFERENCE;
        if slot != INVALID_REFERENCE && slot < params.command_capacity {
            if atomicLoad(&state[params.owner_base + slot]) != row {
                atomicStore(&overflow[params.overflow_base], 1u);
            } else {
                let at = params.command_base + slot * params.command_words;
                commands[at + 1u] = 1u;
                commands[at + params.first_instance_word] = row;
                won[k] = slot;
                wins += 1u;
                if CLASSIFY {
                    group[k] = group_of(slot, key);
                    lowest = min(lowest, group[k]);
                }
            }
        }
    }
    // The winners' slots go to the published list: a place in the workgroup's block, the
    // block from one atomic on the list's length.
    if lid == 0u {
        atomicStore(&tally, 0u);
    }
    workgroupBarrier();
    var place = 0u;
    if wins != 0u {
        place = atomicAdd(&tally, wins);
    }
    workgroupBarrier();
    let n = atomicLoad(&tally);
    if lid == 0u && n != 0u {
        block_base = atomicAdd(&state[params.state_base + STATE_PUBLISHED], n);
        atomicAdd(&published[params.published_base], n);
    }
    workgroupBarrier();
    var at = block_base + place;
    for (var k = 0u; k < ROWS_PER_INVOCATION; k += 1u) {
        if won[k] != INVALID_REFERENCE {
            if at < params.published_capacity {
                atomicStore(&state[params.published_slots_base + at], won[k]);
            }
            at += 1u;
        }
    }
    if CLASSIFY {
        let lead = group_lead_of(lowest, lid);
        var mine = 0u;
        for (var k = 0u; k < ROWS_PER_INVOCATION; k += 1u) {
            mine += count_group(group[k], lead);
        }
        add_group_tally(mine, lead, lid);
    }
}
