// Resource-group classification of one live command (`resource_groups.rs` states the
// contract), shared by `resource_groups.wgsl` (its classify pass) and `draw_generation.wgsl`
// (its publish pass, when it classifies what it publishes). Includes `record.wgsl`; the
// including shader declares `params` with `record_base`, `keys_base`, `group_count`,
// `counts_base`, `flags_base` and `group_overflow_base`, and the bindings `records`, `keys`,
// `groups` (descriptors (id, first, count, geometry) in renderer order, then (id, index) pairs
// sorted by id, two per vec4), `counts`, `group_flags` and `group_overflow`.
//
// Counts go through the workgroup: the lowest group among its commands (groups are
// contiguous command windows, so nearly always the only one) is tallied in workgroup memory
// and added once; any other group adds directly. One global word per group taking an atomic
// per command would serialize them.

#include "gpu_scene/record.wgsl"

// With KEYED, rows are read from the scene's draw keys view (`bounds.rs`), else from records.
override KEYED: bool = false;
const GROUP_MISPLACED: u32 = 1u;
const GROUP_GEOMETRY_MISMATCH: u32 = 2u;
const SCENE_INVALID_ROW: u32 = 1u;
const SCENE_UNKNOWN_GROUP: u32 = 2u;

var<workgroup> group_lead: atomic<u32>;
var<workgroup> group_tally: atomic<u32>;

// Row `row`'s flags, group, geometry and (`with_slot`) command slot as x, y, z, w: its draw
// key row with KEYED (one 16-byte row, one 32-byte sector), else its record's words 1..4 (one
// sector of the 128-byte record) and word 11 (a second sector; w is 0 without `with_slot`).
fn row_key(row: u32, with_slot: bool) -> vec4<u32> {
    if KEYED {
        return keys[params.keys_base + row];
    }
    let at = record_word(params.record_base, row, FLAGS_WORD);
    var slot = 0u;
    if with_slot {
        slot = records[record_word(params.record_base, row, COMMAND_SLOT_WORD)];
    }
    return vec4<u32>(records[at], records[at + 1u], records[at + 2u], slot);
}

// Index of the descriptor with `id`, or INVALID_REFERENCE.
fn find_group(id: u32) -> u32 {
    var lo = 0u;
    var hi = params.group_count;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        let v = groups[params.group_count + mid / 2u];
        let key = select(v.x, v.z, (mid & 1u) == 1u);
        if key == id {
            return select(v.y, v.w, (mid & 1u) == 1u);
        }
        if key < id {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return INVALID_REFERENCE;
}

// The group live command `c` counts towards, its row live with group `key.y` and geometry
// `key.z`, or INVALID_REFERENCE (per-group flags and the global flags set here).
fn group_of(c: u32, key: vec4<u32>) -> u32 {
    let g = find_group(key.y);
    if g == INVALID_REFERENCE {
        atomicOr(&group_overflow[params.group_overflow_base], SCENE_UNKNOWN_GROUP);
        return INVALID_REFERENCE;
    }
    let d = groups[g];
    if c < d.y || c - d.y >= d.z {
        atomicOr(&group_flags[params.flags_base + g], GROUP_MISPLACED);
        return INVALID_REFERENCE;
    }
    if d.w != INVALID_REFERENCE && d.w != key.z {
        atomicOr(&group_flags[params.flags_base + g], GROUP_GEOMETRY_MISMATCH);
        return INVALID_REFERENCE;
    }
    return g;
}

// The lowest group any invocation of the workgroup passes (`lowest`: its own lowest, or
// INVALID_REFERENCE), the one whose commands are tallied in workgroup memory. Every
// invocation must reach it (workgroup barriers inside); follow it with `add_group_tally`.
fn group_lead_of(lowest: u32, lid: u32) -> u32 {
    if lid == 0u {
        atomicStore(&group_lead, INVALID_REFERENCE);
        atomicStore(&group_tally, 0u);
    }
    workgroupBarrier();
    if lowest != INVALID_REFERENCE {
        atomicMin(&group_lead, lowest);
    }
    workgroupBarrier();
    return atomicLoad(&group_lead);
}

// Adds each invocation's `n` commands of group `lead` (from `group_lead_of`) to its count
// with one atomic per workgroup. Every invocation must reach it (a workgroup barrier inside).
fn add_group_tally(n: u32, lead: u32, lid: u32) {
    if n != 0u {
        atomicAdd(&group_tally, n);
    }
    workgroupBarrier();
    let total = atomicLoad(&group_tally);
    if lid == 0u && total != 0u {
        atomicAdd(&counts[params.counts_base + lead], total);
    }
}

// Counts one command of group `g` (unless INVALID_REFERENCE): towards the workgroup's tally
// when `g` is its lead, else straight to `g`'s count.
fn count_group(g: u32, lead: u32) -> u32 {
    if g == INVALID_REFERENCE {
        return 0u;
    }
    if g == lead {
        return 1u;
    }
    atomicAdd(&counts[params.counts_base + g], 1u);
    return 0u;
}

// Adds one to group `g`'s count for every invocation whose `g` is not INVALID_REFERENCE.
// Every invocation of the workgroup must reach it (workgroup barriers inside).
fn count_groups(g: u32, lid: u32) {
    let lead = group_lead_of(g, lid);
    add_group_tally(count_group(g, lead), lead, lid);
}
