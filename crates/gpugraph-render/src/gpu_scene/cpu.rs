//! The GPUScene oracles: each GPU step as the plain loop it parallelizes. Tests compare the
//! GPU's words with these, exactly.

use super::resource_groups::{
    GROUP_GEOMETRY_MISMATCH, GROUP_MISPLACED, SCENE_INVALID_ROW, SCENE_UNKNOWN_GROUP,
};
use super::{GpuSceneGroup, GpuSceneRecord, GPU_SCENE_INVALID_REFERENCE};
use crate::visibility::cpu::{bounds_visible, RowBounds};
use crate::ViewParams;

/// What draw generation leaves on the GPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrawGenerationResult {
    /// Per command record: `(instanceCount, firstInstance)`.
    pub commands: Vec<(u32, u32)>,
    /// Eligible rows.
    pub required_count: u32,
    /// Published commands.
    pub published_count: u32,
    /// 1 on an out-of-range slot or a collision.
    pub overflow: u32,
}

/// Draw generation over `records` (one per scene slot) with optional per-slot `visibility`
/// into `command_capacity` records (see [`crate::GpuSceneDrawGeneration`]).
pub fn draw_generation(
    records: &[GpuSceneRecord],
    visibility: Option<&[u32]>,
    command_capacity: u32,
) -> DrawGenerationResult {
    let mut out = DrawGenerationResult {
        commands: vec![(0, 0); command_capacity as usize],
        ..Default::default()
    };
    for (row, r) in records.iter().enumerate() {
        let visible = visibility.is_none_or(|v| v[row] != 0);
        if !r.is_active() || !visible || r.command_slot == GPU_SCENE_INVALID_REFERENCE {
            continue;
        }
        out.required_count += 1;
        let Some(cmd) = out.commands.get_mut(r.command_slot as usize) else {
            out.overflow = 1;
            continue;
        };
        if cmd.0 == 0 {
            // Rows run in increasing order: the first claimant is the lowest row.
            *cmd = (1, row as u32);
            out.published_count += 1;
        } else {
            out.overflow = 1;
        }
    }
    out
}

/// What resource-group classification leaves on the GPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceGroupResult {
    /// Compatible live commands per group.
    pub counts: Vec<u32>,
    /// Per-group flags ([`GROUP_MISPLACED`], [`GROUP_GEOMETRY_MISMATCH`]).
    pub group_flags: Vec<u32>,
    /// Global flags ([`SCENE_INVALID_ROW`], [`SCENE_UNKNOWN_GROUP`]).
    pub overflow: u32,
}

/// Classification of `commands` (`(instanceCount, firstInstance)` per record) against
/// `records` and `groups` (see [`crate::GpuSceneResourceGroups`]).
pub fn resource_groups(
    records: &[GpuSceneRecord],
    commands: &[(u32, u32)],
    groups: &[GpuSceneGroup],
) -> ResourceGroupResult {
    let mut out = ResourceGroupResult {
        counts: vec![0; groups.len()],
        group_flags: vec![0; groups.len()],
        overflow: 0,
    };
    for (c, &(instances, row)) in commands.iter().enumerate() {
        if instances == 0 {
            continue;
        }
        let Some(r) = records.get(row as usize).filter(|r| r.is_active()) else {
            out.overflow |= SCENE_INVALID_ROW;
            continue;
        };
        let Some(g) = groups.iter().position(|g| g.id == r.group_id) else {
            out.overflow |= SCENE_UNKNOWN_GROUP;
            continue;
        };
        let d = groups[g];
        let c = c as u64;
        if c < u64::from(d.first_command)
            || c >= u64::from(d.first_command) + u64::from(d.command_count)
        {
            out.group_flags[g] |= GROUP_MISPLACED;
        } else if d.geometry_id.is_some_and(|geo| geo != r.geometry_id) {
            out.group_flags[g] |= GROUP_GEOMETRY_MISMATCH;
        } else {
            out.counts[g] += 1;
        }
    }
    out
}

/// Scene visibility as the frame graph of a scene consumer computes it
/// ([`super::GpuSceneVisibility`], whose list holds the nonzero slots): the bounding sphere
/// against the view's frustum, and the record live (`flags != 0`), per slot.
pub fn sphere_visibility(records: &[GpuSceneRecord], view: &ViewParams) -> Vec<u32> {
    records
        .iter()
        .map(|r| {
            u32::from(r.flags != 0 && bounds_visible(&view.planes, RowBounds::Sphere(r.sphere)))
        })
        .collect()
}

/// What one layer of a [`crate::gpu_scene::GpuSceneFrame`] leaves in its diagnostics after an
/// encode with `view`: sphere visibility with the flags as the selection, draw generation
/// over that mask into `command_capacity` commands, classification into `groups`. `records`
/// holds every slot of the layer's scene.
pub fn frame_diagnostics(
    records: &[GpuSceneRecord],
    view: &ViewParams,
    command_capacity: u32,
    groups: &[GpuSceneGroup],
) -> crate::gpu_scene::GpuSceneLayerDiagnostics {
    let mask = sphere_visibility(records, view);
    let generated = draw_generation(records, Some(&mask), command_capacity);
    let classified = resource_groups(records, &generated.commands, groups);
    crate::gpu_scene::GpuSceneLayerDiagnostics {
        visible: mask.iter().sum(),
        visibility_overflow: 0,
        required: generated.required_count,
        published: generated.published_count,
        draw_overflow: generated.overflow,
        group_counts: classified.counts,
        group_flags: classified.group_flags,
        group_overflow: classified.overflow,
    }
}
