//! [`GpuSceneResourceGroups`] (spec 6.2b): generated indirect commands classified into
//! renderer-owned resource groups.
//!
//! WebGPU cannot choose a pipeline or bind group inside an indirect draw, so the renderer
//! keeps the order: for each group (in descriptor order) it binds that group's resources and
//! issues the draws of the group's fixed command window. The GPU decides which of those
//! commands are live ([`crate::GpuSceneDrawGeneration`]) and, here, checks that each live
//! command is one its window's bindings can draw, with counts and diagnostics left on the GPU
//! for whoever wants them; they never drive CPU draw selection.
//!
//! Design. Two dispatch nodes (`resource_groups.wgsl`): `clear` (per group) and `classify`
//! (per command, or per command of a GPU-resident list of the live ones: the draw
//! generation's published list, [`crate::GpuSceneDrawOutput::published`], so the work follows
//! the published commands, not the command capacity; `clear` then also writes `classify`'s
//! indirect grid from the list's count). Descriptors are immutable and uploaded once into a
//! node-side storage buffer imported as `{id}/groups`, followed by `(id, index)` pairs sorted
//! by id, which `classify` binary-searches (O(log groups) per live command). A command's row
//! is read through the scene's draw keys view when it has one (`flags`, `group_id`,
//! `geometry_id` in one 16-byte row of a buffer of 16 bytes a slot,
//! [`crate::gpu_scene::bounds`]), else through its record's words 1..4 (12 bytes of one
//! 32-byte sector of the 128-byte record): the same sector count per command, over a buffer
//! an eighth the size, so the rows a sparse published list names share cache lines and
//! pages far more often. Re-encoding after
//! a scene mutation or a visibility change reclassifies with the same compiled nodes.

use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, DataView, DataViewDescriptor, DispatchNode, Grid,
    ShaderSource, VectorFormat,
};
use wgpu::util::DeviceExt;

use super::outputs::check_outputs_alone;
use super::{GpuSceneCommandList, GpuSceneViews, GPU_SCENE_INVALID_REFERENCE};
use crate::{DrawCommandBuffer, RenderError};

const WORKFLOW: &str = "scene resource groups";
/// The classification passes (they include the record layout and the shared classifier).
fn shader() -> ShaderSource {
    crate::shaders::shader(
        "render/gpu_scene/resource_groups",
        "gpu_scene/resource_groups.wgsl",
    )
}
const WORKGROUP_SIZE: u32 = 256;

/// Per-group flag: a live command of the group lies outside its window (every live command of
/// an empty group does).
pub const GROUP_MISPLACED: u32 = 1;
/// Per-group flag: a live command's record has a geometry other than the group's fixed one.
pub const GROUP_GEOMETRY_MISMATCH: u32 = 2;
/// Global flag: a live command's `firstInstance` is past the scene or names an inactive slot.
pub const SCENE_INVALID_ROW: u32 = 1;
/// Global flag: a live command's record names a group no descriptor has.
pub const SCENE_UNKNOWN_GROUP: u32 = 2;

/// One renderer-owned group: the scene `group_id` it draws, its command window and, for
/// groups whose vertex/index bindings are fixed, the one geometry it can draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuSceneGroup {
    /// Scene `group_id` (unique; not [`GPU_SCENE_INVALID_REFERENCE`]).
    pub id: u32,
    /// First command of the window.
    pub first_command: u32,
    /// Commands in the window (0: an explicit empty group).
    pub command_count: u32,
    /// Required `geometry_id`, or `None` for any.
    pub geometry_id: Option<u32>,
}

/// Constants of one classification (WGSL `Params`), element offsets in words.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
struct GroupParams {
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
    pad: [u32; 2],
}

/// Classification of generated commands into groups (see the module doc).
///
/// Contract, per encode: `counts`, `group_flags` and `overflow` are first zeroed. For each
/// command `c` with `instanceCount != 0`: row `r = firstInstance`; if `r ≥` the scene capacity
/// or slot `r` is not active, `overflow |= SCENE_INVALID_ROW`; else if no descriptor has the
/// record's `group_id`, `overflow |= SCENE_UNKNOWN_GROUP`; else, with `g` that descriptor, if
/// `c` is outside `first_command .. first_command + command_count`,
/// `group_flags[g] |= GROUP_MISPLACED`; else if `g` fixes a geometry and the record's differs,
/// `group_flags[g] |= GROUP_GEOMETRY_MISMATCH`; else `counts[g] += 1`. With
/// [`Self::live_commands`], the commands looked at are the list's (each at most once), which
/// must hold every command with `instanceCount != 0` — as the draw generation's published
/// list does for its command buffer.
#[derive(Clone, Debug)]
pub struct GpuSceneResourceGroups {
    /// Node id prefix.
    pub id: String,
    /// The scene's views in this graph.
    pub scene: GpuSceneViews,
    /// The command records (as given to the draw generation).
    pub commands: DrawCommandBuffer,
    /// `commands`' buffer in the graph.
    pub command_handle: gpugraph_command::BufferHandle,
    /// Descriptors in renderer order (at least one; unique IDs; nonempty windows inside the
    /// command capacity and disjoint).
    pub groups: Vec<GpuSceneGroup>,
    /// Packed uint32, one per group: compatible live commands.
    pub counts: DataView,
    /// Packed uint32, one per group: [`GROUP_MISPLACED`] | [`GROUP_GEOMETRY_MISMATCH`].
    pub group_flags: DataView,
    /// One packed uint32: [`SCENE_INVALID_ROW`] | [`SCENE_UNKNOWN_GROUP`].
    pub overflow: DataView,
    /// Optional list of the live commands to classify instead of every command
    /// ([`crate::GpuSceneDrawOutput::published`]).
    pub live_commands: Option<GpuSceneCommandList>,
}

/// A classification's descriptors and outputs: what [`GpuSceneResourceGroups`] classifies
/// into, and what [`crate::GpuSceneDrawGeneration::groups`] classifies into as it publishes.
#[derive(Clone, Debug)]
pub struct GpuSceneGroupClassification {
    /// Descriptors in renderer order (at least one; unique IDs; nonempty windows inside the
    /// command capacity and disjoint).
    pub groups: Vec<GpuSceneGroup>,
    /// Packed uint32, one per group: compatible live commands.
    pub counts: DataView,
    /// Packed uint32, one per group: [`GROUP_MISPLACED`] | [`GROUP_GEOMETRY_MISMATCH`].
    pub group_flags: DataView,
    /// One packed uint32: [`SCENE_INVALID_ROW`] | [`SCENE_UNKNOWN_GROUP`].
    pub overflow: DataView,
}

/// What a classification's kernel binds: the descriptor table and the output bases.
pub(super) struct GroupBindings {
    pub(super) table: DataView,
    pub(super) group_count: u32,
    pub(super) counts_base: u32,
    pub(super) flags_base: u32,
    pub(super) overflow_base: u32,
}

impl GpuSceneGroupClassification {
    /// Checks the descriptors against `command_capacity` and the outputs' formats and sizes
    /// (errors name `workflow` and node `id`).
    pub(super) fn check(
        &self,
        workflow: &'static str,
        id: &str,
        command_capacity: u32,
    ) -> Result<(), RenderError> {
        check_groups(id, &self.groups, command_capacity)?;
        let n = self.groups.len() as u64;
        for (what, v, rows) in [
            ("counts", &self.counts, n),
            ("group flags", &self.group_flags, n),
            ("group overflow", &self.overflow, 1),
        ] {
            if v.format() != VectorFormat::Uint32
                || !v.is_packed()
                || v.live_count().is_some()
                || v.len() != rows
            {
                return Err(RenderError::UnsupportedView {
                    workflow,
                    id: id.into(),
                    what,
                    expected:
                        "packed uint32 rows without a live count: one per group (one for overflow)",
                    actual: format!(
                        "{} rows of {} (packed {})",
                        v.len(),
                        v.format(),
                        v.is_packed()
                    ),
                });
            }
        }
        Ok(())
    }

    /// The written outputs, for the outputs-alone check.
    pub(super) fn outputs(&self) -> [(&'static str, DataView); 3] {
        [
            ("counts", self.counts),
            ("group flags", self.group_flags),
            ("group overflow", self.overflow),
        ]
    }

    /// Uploads the descriptor table (once, immutable) and imports it as `{id}/groups`.
    pub(super) fn bind(
        &self,
        graph: &mut CommandGraph,
        id: &str,
    ) -> Result<GroupBindings, RenderError> {
        let table = group_table(&self.groups);
        let buffer = graph
            .device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(&format!("{id}/groups")),
                contents: bytemuck::cast_slice(&table),
                usage: wgpu::BufferUsages::STORAGE,
            });
        let handle = graph.import_buffer(
            BufferDescriptor::new(
                format!("{id}/groups"),
                buffer.size(),
                wgpu::BufferUsages::STORAGE,
            ),
            &buffer,
        )?;
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let base = |v: &DataView| v.aligned_range(align).element_offset as u32;
        Ok(GroupBindings {
            table: graph.create_packed_view(handle, VectorFormat::Uint32x4, table.len() as u64)?,
            group_count: self.groups.len() as u32,
            counts_base: base(&self.counts),
            flags_base: base(&self.group_flags),
            overflow_base: base(&self.overflow),
        })
    }
}

/// Checks descriptors against the command capacity.
fn check_groups(id: &str, groups: &[GpuSceneGroup], capacity: u32) -> Result<(), RenderError> {
    let invalid = |group: Option<u32>, reason: String| RenderError::InvalidGroup {
        id: id.into(),
        group,
        reason,
    };
    if groups.is_empty() {
        return Err(invalid(None, "at least one group is required".into()));
    }
    let capacity = u64::from(capacity);
    let mut ids = std::collections::HashSet::new();
    let mut windows: Vec<(u64, u64, u32)> = Vec::new();
    for g in groups {
        if g.id == GPU_SCENE_INVALID_REFERENCE {
            return Err(invalid(
                Some(g.id),
                "0xffffffff is the invalid reference".into(),
            ));
        }
        if !ids.insert(g.id) {
            return Err(invalid(Some(g.id), "group id appears twice".into()));
        }
        let end = u64::from(g.first_command) + u64::from(g.command_count);
        if g.command_count > 0 && end > capacity {
            return Err(invalid(
                Some(g.id),
                format!(
                    "window {}..{end} exceeds the {capacity} command records",
                    g.first_command
                ),
            ));
        }
        if g.command_count > 0 {
            windows.push((u64::from(g.first_command), end, g.id));
        }
    }
    windows.sort_unstable();
    if let Some(w) = windows.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(invalid(
            Some(w[1].2),
            format!(
                "window {}..{} overlaps group {}'s {}..{}",
                w[1].0, w[1].1, w[0].2, w[0].0, w[0].1
            ),
        ));
    }
    Ok(())
}

/// The descriptor table the kernels binary-search: descriptors, then sorted pairs.
fn group_table(groups: &[GpuSceneGroup]) -> Vec<[u32; 4]> {
    let mut table: Vec<[u32; 4]> = groups
        .iter()
        .map(|g| {
            [
                g.id,
                g.first_command,
                g.command_count,
                g.geometry_id.unwrap_or(GPU_SCENE_INVALID_REFERENCE),
            ]
        })
        .collect();
    let mut pairs: Vec<[u32; 2]> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| [g.id, i as u32])
        .collect();
    pairs.sort_unstable();
    for two in pairs.chunks(2) {
        let second = two.get(1).copied().unwrap_or([u32::MAX, u32::MAX]);
        table.push([two[0][0], two[0][1], second[0], second[1]]);
    }
    table
}

impl GpuSceneResourceGroups {
    /// Adds `{id}/clear` and `{id}/classify` (and imports the descriptor table as
    /// `{id}/groups`, and with a live-command list the indirect grid `{id}/args`) after
    /// checking descriptors and views. Compiles and submits nothing.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), RenderError> {
        let classification = GpuSceneGroupClassification {
            groups: self.groups.clone(),
            counts: self.counts,
            group_flags: self.group_flags,
            overflow: self.overflow,
        };
        classification.check(WORKFLOW, &self.id, self.commands.records())?;
        if let Some(live) = &self.live_commands {
            let v = &live.slots;
            let c = &live.count;
            if v.format() != VectorFormat::Uint32
                || !v.is_packed()
                || v.live_count().is_some()
                || c.format() != VectorFormat::Uint32
                || c.len() != 1
                || c.live_count().is_some()
            {
                return Err(RenderError::UnsupportedView {
                    workflow: WORKFLOW,
                    id: self.id.clone(),
                    what: "live commands",
                    expected: "packed uint32 slots and a one-row uint32 count, without live counts",
                    actual: format!(
                        "{} rows of {} (packed {})",
                        v.len(),
                        v.format(),
                        v.is_packed()
                    ),
                });
            }
        }
        let mut reads = vec![self.scene.records, self.command_handle];
        reads.extend(self.scene.keys.map(|k| k.buffer()));
        reads.extend(
            self.live_commands
                .iter()
                .flat_map(|l| [l.slots.buffer(), l.count.buffer()]),
        );
        check_outputs_alone(graph, WORKFLOW, &self.id, &reads, &classification.outputs())?;
        let bound = classification.bind(graph, &self.id)?;
        let n = u64::from(bound.group_count);
        let command_capacity = self.commands.records();
        let command_words = (self.commands.layout().record_bytes() / 4) as u32;
        let commands = graph.create_data_view(
            self.command_handle,
            DataViewDescriptor::packed(
                VectorFormat::Uint32,
                u64::from(command_capacity * command_words).max(1),
            )
            .at_offset(self.commands.byte_offset()),
        )?;
        let args = match &self.live_commands {
            Some(_) => {
                let buffer = graph.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("{}/args", self.id)),
                    size: 16,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
                    mapped_at_creation: false,
                });
                let h = graph.import_buffer(
                    BufferDescriptor::new(
                        format!("{}/args", self.id),
                        16,
                        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
                    ),
                    &buffer,
                )?;
                Some((
                    graph.create_packed_view(h, VectorFormat::Uint32, 4)?,
                    graph.create_packed_view(h, VectorFormat::Uint32, 3)?,
                ))
            }
            None => None,
        };
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let base = |v: &DataView| v.aligned_range(align).element_offset as u32;
        let params = GroupParams {
            scene_capacity: self.scene.capacity,
            command_capacity,
            group_count: n as u32,
            record_base: base(&self.scene.record_words),
            command_base: base(&commands),
            command_words,
            first_instance_word: command_words - 1,
            counts_base: bound.counts_base,
            flags_base: bound.flags_base,
            group_overflow_base: bound.overflow_base,
            listed: u32::from(self.live_commands.is_some()),
            live_base: self.live_commands.map_or(0, |l| base(&l.slots)),
            live_capacity: self
                .live_commands
                .map_or(0, |l| l.slots.len().min(u64::from(u32::MAX)) as u32),
            live_count_base: self.live_commands.map_or(0, |l| base(&l.count)),
            args_base: args.map_or(0, |(a, _)| base(&a)),
            max_workgroups: graph.device().limits().max_compute_workgroups_per_dimension,
            keys_base: self.scene.keys.map_or(0, |k| base(&k) / 4),
            pad: [0; 2],
        };
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::read(1, self.scene.record_words),
            Binding::read(2, commands),
            Binding::read(3, bound.table),
            Binding::read_write(4, self.counts),
            Binding::read_write(5, self.group_flags),
            Binding::read_write(6, self.overflow),
            self.scene.keys_binding(10),
        ];
        match &self.live_commands {
            Some(l) => bindings.extend([Binding::read(7, l.slots), Binding::read(8, l.count)]),
            None => bindings.extend([
                Binding::placeholder(7, gpugraph_command::Access::Read),
                Binding::placeholder(8, gpugraph_command::Access::Read),
            ]),
        }
        let shader = shader();
        let rows = |rows: u64| Grid::Rows {
            rows,
            rows_per_workgroup: WORKGROUP_SIZE,
        };
        let mut clear = bindings.clone();
        clear.push(match args {
            Some((a, _)) => Binding::read_write(9, a),
            None => Binding::placeholder(9, gpugraph_command::Access::ReadWrite),
        });
        graph.add_dispatch_node(DispatchNode::new(
            format!("{}/clear", self.id),
            shader.clone(),
            "clear",
            clear,
            // At least one invocation: the one that writes classify's grid.
            rows(n.max(1)),
        ))?;
        let mut classify = DispatchNode::new(
            format!("{}/classify", self.id),
            shader,
            "classify",
            bindings,
            match args {
                Some((_, grid)) => Grid::Indirect(grid),
                None => rows(u64::from(command_capacity)),
            },
        );
        classify.constants = vec![(
            "KEYED".to_string(),
            f64::from(u8::from(self.scene.keys.is_some())),
        )];
        graph.add_dispatch_node(classify)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader() {
        let (size, _) = crate::gpu_scene::shader_layout::struct_layout(&shader().build(), "Params");
        assert_eq!(size, std::mem::size_of::<GroupParams>());
    }
}
