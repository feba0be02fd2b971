// GPUSceneResourceGroups (`resource_groups.rs`; oracle `cpu::resource_groups`). Includes
// `record.wgsl`. Two passes over one binding layout:
//   clear:    counts, per-group flags and the global flags to 0; with a live-command list,
//             classify's indirect grid from the list's count;
//   classify: per command (every one, or each of the live-command list) with
//             instanceCount != 0, its scene row (firstInstance) must be a
//             live slot (else global SCENE_INVALID_ROW) whose group has a descriptor (else
//             global SCENE_UNKNOWN_GROUP); a command outside the group's window sets the
//             group's MISPLACED bit, a geometry other than the group's fixed one its
//             GEOMETRY_MISMATCH bit; otherwise the group's count goes up by one.
// Row keys, descriptor lookup and the per-workgroup counting: `group_classify.wgsl`.

#include "gpu_scene/record.wgsl"
#include "gpu_scene/group_classify.wgsl"

const WORKGROUP_SIZE: u32 = 256u;

struct Params {
    scene_capacity: u32,
    command_capacity: u32,
    group_count: u32,
    record_base: u32,
    command_base: u32,
    command_words: u32,
    first_instance_word: u32,
    counts_base: u32,
    flags_base: u32,
    group_overflow_base: u32,
    listed: u32,
    live_base: u32,
    live_capacity: u32,
    live_count_base: u32,
    args_base: u32,
    max_workgroups: u32,
    keys_base: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> records: array<u32>;
@group(0) @binding(2) var<storage, read> commands: array<u32>;
@group(0) @binding(3) var<storage, read> groups: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> group_flags: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> group_overflow: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read> live: array<u32>;
@group(0) @binding(8) var<storage, read> live_count: array<u32>;
@group(0) @binding(9) var<storage, read_write> args: array<u32>;
@group(0) @binding(10) var<storage, read> keys: array<vec4<u32>>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn clear(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = linear_row(wid, nwg, lid, WORKGROUP_SIZE);
    if g == 0u {
        atomicStore(&group_overflow[params.group_overflow_base], 0u);
        if params.listed != 0u {
            // Classify's grid: one row per live command, x up to the per-dimension limit and
            // the rest over y (as `Grid::Rows` splits; `linear_row` reads it back).
            let groups = (live_commands() + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;
            let x = min(groups, params.max_workgroups);
            args[params.args_base] = x;
            args[params.args_base + 1u] = select(1u, (groups + x - 1u) / max(x, 1u), groups > x);
            args[params.args_base + 2u] = 1u;
        }
    }
    if g >= params.group_count {
        return;
    }
    atomicStore(&counts[params.counts_base + g], 0u);
    atomicStore(&group_flags[params.flags_base + g], 0u);
}

// Live commands listed.
fn live_commands() -> u32 {
    return min(live_count[params.live_count_base], params.live_capacity);
}

// The command the `i`-th classify invocation looks at, or INVALID_REFERENCE.
fn command_at(i: u32) -> u32 {
    if params.listed == 0u {
        return i;
    }
    if i >= live_commands() {
        return INVALID_REFERENCE;
    }
    return live[params.live_base + i];
}

// The group command `c` counts towards, or INVALID_REFERENCE (flags and overflow set here).
fn classify_command(c: u32) -> u32 {
    if c >= params.command_capacity {
        return INVALID_REFERENCE;
    }
    let at = params.command_base + c * params.command_words;
    if commands[at + 1u] == 0u {
        return INVALID_REFERENCE;
    }
    let row = commands[at + params.first_instance_word];
    if row >= params.scene_capacity {
        atomicOr(&group_overflow[params.group_overflow_base], SCENE_INVALID_ROW);
        return INVALID_REFERENCE;
    }
    let key = row_key(row, false);
    if (key.x & ACTIVE_FLAG) == 0u {
        atomicOr(&group_overflow[params.group_overflow_base], SCENE_INVALID_ROW);
        return INVALID_REFERENCE;
    }
    return group_of(c, key);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn classify(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = classify_command(command_at(linear_row(wid, nwg, lid, WORKGROUP_SIZE)));
    count_groups(g, lid);
}
