//! [`GpuSceneDrawGeneration`] (spec 6.2a): active, optionally visible scene rows claim
//! fixed-capacity indirect-command slots; the lowest row wins a collision.
//!
//! Design. Two dispatch nodes over one layout (`draw_generation.wgsl`): `prepare` (one
//! invocation: what to clear, which rows to iterate, both indirect grids, the diagnostics to
//! 0) and `generate`, three indirect dispatches: `clear` (the commands to clear: their
//! `instanceCount` and `firstInstance` to 0, their owners reset), `claim` (per row: count the
//! request, flag an out-of-range slot, `atomicMin` the owner), `publish` (per row: the owner
//! writes `instanceCount = 1`, `firstInstance = row` and appends its slot to the published
//! list; a loser flags overflow). `atomicMin` makes the winner the lowest row whatever the
//! order rows run in, so the result is deterministic. Claim and publish take
//! [`GPU_SCENE_DRAW_ROW_TILE`] rows per workgroup (4 per invocation) so that their counts,
//! the published list's block and the lead group's tally cost one atomic on one word per
//! 1,024 rows: the GPU serializes atomics on one word (see [`crate::GpuSceneVisibility`]).
//!
//! Work per encode is proportional to the rows iterated and the commands published, not to
//! the scene or the command capacity: the rows are every slot (optionally filtered by a
//! mask) or a compacted list of visible rows with its GPU count ([`GpuSceneVisibleRows`],
//! the visibility workflow's output); the clear touches only the commands the previous encode
//! published (the first encode clears every command). Owners and the published list live in a
//! persistent state buffer the node creates ([`GpuSceneDrawOutput`]); the published list is
//! what [`crate::GpuSceneResourceGroups`] classifies. Rows inserted later by
//! [`crate::GpuScene::mutate`] take part without recompiling; visibility and records are read
//! each encode, so new visibility is a buffer write, never a recompile.
//! Memory traffic per encode: 8 bytes per command published by the previous encode (clear),
//! and per row iterated, in claim and again in publish, 4 (list) + the row's `flags` and
//! `command_slot`, plus 12 bytes per command published. Those two words are read from the
//! scene's draw keys view when it has one ([`crate::gpu_scene::bounds`]; every mutable scene
//! does): one 16-byte row, one 32-byte sector, of a buffer of 16 bytes a slot. Through the
//! 128-byte record (borrowed records) they lie in two sectors: 64 bytes touched per row per
//! pass, of a buffer eight times larger, scattered over it when the rows are a sparse
//! visible list (at 16M records and 3.6% visible: 128 bytes a row in claim + publish before,
//! 64 after).

use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, DataView, DataViewDescriptor, DispatchNode, Grid,
    ShaderSource, VectorFormat,
};

use super::outputs::check_outputs_alone;
use super::{GpuSceneGroupClassification, GpuSceneViews};
use crate::{DrawCommandBuffer, RenderError};

const WORKFLOW: &str = "scene draw generation";
/// Draw generation's nodes (they include the record layout and the shared classifier).
fn shader() -> ShaderSource {
    crate::shaders::shader(
        "render/gpu_scene/draw_generation",
        "gpu_scene/draw_generation.wgsl",
    )
}
/// Rows of the iterated list (or slots) one workgroup of claim and publish takes (256
/// invocations of 4 rows; the WGSL's `ROW_TILE`).
pub const GPU_SCENE_DRAW_ROW_TILE: u32 = 1024;
/// Words of the state buffer before the owners (see `draw_generation.wgsl`).
const STATE_HEADER_WORDS: u64 = 8;
/// Word of the published list's length in the state buffer.
const STATE_PUBLISHED_WORD: u64 = 1;

/// Constants of one draw generation (WGSL `Params`); element offsets in 4-byte words inside
/// each binding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DrawGenerationParams {
    /// Scene slots.
    pub scene_capacity: u32,
    /// Command records.
    pub command_capacity: u32,
    /// Record 0's first word.
    pub record_base: u32,
    /// Visibility row 0.
    pub visibility_base: u32,
    /// Command record 0's first word.
    pub command_base: u32,
    /// Words per command record (4 `draw`, 5 `drawIndexed`).
    pub command_words: u32,
    /// Word of `firstInstance` in a record (3 or 4).
    pub first_instance_word: u32,
    /// Owner 0 (in the state buffer).
    pub owner_base: u32,
    /// The required count's word.
    pub required_base: u32,
    /// The published count's word.
    pub published_base: u32,
    /// The overflow word.
    pub overflow_base: u32,
    /// 1 when a visibility view is bound.
    pub use_visibility: u32,
    /// The state buffer's word 0.
    pub state_base: u32,
    /// Published slot 0 (in the state buffer).
    pub published_slots_base: u32,
    /// Published slots the state holds.
    pub published_capacity: u32,
    /// 1 when rows come from a visible-row list.
    pub listed: u32,
    /// Listed row 0.
    pub rows_base: u32,
    /// Rows the list holds.
    pub rows_capacity: u32,
    /// The list's count word.
    pub count_base: u32,
    /// Indirect arguments' word 0.
    pub args_base: u32,
    /// The device's workgroups per grid dimension.
    pub max_workgroups: u32,
    /// Draw key row 0 (in uint32x4 rows), when the scene has the keys view.
    pub keys_base: u32,
    /// Group descriptors classified into as commands are published (0 without).
    pub group_count: u32,
    /// The group counts' word 0.
    pub counts_base: u32,
    /// The group flags' word 0.
    pub flags_base: u32,
    /// The classification's global flags word.
    pub group_overflow_base: u32,
    /// Padding to 16-byte multiples.
    pub pad: [u32; 2],
}

/// A compacted list of visible scene rows and its GPU-resident count, e.g. a
/// [`super::GpuSceneVisibility`]'s output (visible slots in no particular order) or the
/// [`crate::VisibilityWorkflow`]'s (in increasing order). The order does not change the
/// result: the lowest row wins a slot whatever order the rows come in.
#[derive(Clone, Copy, Debug)]
pub struct GpuSceneVisibleRows {
    /// Packed uint32 scene slots, each at most once; its length is the list's capacity.
    pub rows: DataView,
    /// One packed uint32: the valid rows (the first `min(count, capacity)` are read).
    pub count: DataView,
}

/// A GPU-resident list of command slots and its count.
#[derive(Clone, Copy, Debug)]
pub struct GpuSceneCommandList {
    /// Packed uint32 command slots.
    pub slots: DataView,
    /// One packed uint32: the valid slots (the first `min(count, slots.len())`).
    pub count: DataView,
}

/// What [`GpuSceneDrawGeneration::add_to_graph`] leaves to later nodes and to the caller.
#[derive(Clone, Debug)]
pub struct GpuSceneDrawOutput {
    /// The commands the encode published, each once, in no particular order (in the state
    /// buffer): what [`crate::GpuSceneResourceGroups::live_commands`] classifies.
    pub published: GpuSceneCommandList,
    /// The persistent state (owners, the published list), created by the node and imported as
    /// `{id}/state`.
    pub state: wgpu::Buffer,
}

impl GpuSceneDrawOutput {
    /// Makes the next encode clear every command again (a queue write of 4 bytes): call it
    /// after anything other than this draw generation wrote the commands' `instanceCount` or
    /// `firstInstance` words.
    pub fn clear_every_command(&self, queue: &wgpu::Queue) {
        queue.write_buffer(&self.state, 0, &0u32.to_ne_bytes());
    }
}

/// Draw generation over one imported scene (see the module doc).
///
/// Contract, per encode: every command record's `instanceCount` and `firstInstance` read as 0
/// before rows claim (its other words are the renderer's and never written): the first encode
/// after compiling zeroes them in every command; later encodes zero them in the commands the
/// previous encode published, the only ones it left nonzero — so between encodes nothing else
/// may write those words (or call [`GpuSceneDrawOutput::clear_every_command`]), and one
/// command buffer is generated by one draw generation. Row `r` takes part when it is iterated
/// (every slot, or one of the first `min(count, capacity)` of [`Self::visible_rows`]), its
/// flags have the active bit, `visibility[r] != 0` (when a visibility view is given) and its
/// `command_slot` is not the invalid reference; `required_count` counts them. A slot `≥` the
/// command capacity or claimed by more than one such row sets `overflow` to 1; each in-range
/// claimed slot is published by its lowest row as `instanceCount = 1, firstInstance = r`,
/// `published_count` counts them, and the published list
/// ([`GpuSceneDrawOutput::published`]) holds them. The device must have
/// `INDIRECT_FIRST_INSTANCE` (checked when added) for draws to honor `firstInstance`.
///
/// With [`Self::groups`], each encode also leaves what [`crate::GpuSceneResourceGroups`]
/// would leave classifying this command buffer right after it (so with the oracle
/// [`crate::gpu_scene::cpu::resource_groups`] of the generated commands): the counts, group
/// flags and global flags are zeroed by `prepare`, and each published command `c` with row
/// `r` is classified by `r`'s `group_id` and `geometry_id` — unknown group, misplaced, geometry
/// mismatch, or counted. [`crate::gpu_scene::SCENE_INVALID_ROW`] never arises: a published row is active.
/// Commands other than the published ones are not looked at; under this contract they are
/// exactly the ones with `instanceCount == 0`.
#[derive(Clone, Debug)]
pub struct GpuSceneDrawGeneration {
    /// Node id prefix.
    pub id: String,
    /// The scene's views in this graph.
    pub scene: GpuSceneViews,
    /// Optional packed uint32 per-slot visibility, one row per scene slot (nonzero =
    /// visible).
    pub visibility: Option<DataView>,
    /// Optional list of the rows to iterate instead of every slot (not with `visibility`):
    /// the work then follows the visible rows, not the scene's capacity.
    pub visible_rows: Option<GpuSceneVisibleRows>,
    /// The command records (their buffer imported into the same graph as `command_handle`).
    pub commands: DrawCommandBuffer,
    /// `commands`' buffer in the graph ([`DrawCommandBuffer::import`]).
    pub command_handle: gpugraph_command::BufferHandle,
    /// One packed uint32: eligible rows.
    pub required_count: DataView,
    /// One packed uint32: published commands.
    pub published_count: DataView,
    /// One packed uint32: 1 on an out-of-range slot or a collision.
    pub overflow: DataView,
    /// Optional resource-group classification of the published commands, done by the
    /// publish pass from the row it already read (see the type's contract), instead of a
    /// [`crate::GpuSceneResourceGroups`] pass over the published list afterwards.
    pub groups: Option<GpuSceneGroupClassification>,
}

fn one_word(v: &DataView) -> bool {
    v.format() == VectorFormat::Uint32 && v.len() == 1 && v.live_count().is_none()
}

impl GpuSceneDrawGeneration {
    fn unsupported(
        &self,
        what: &'static str,
        expected: &'static str,
        actual: String,
    ) -> RenderError {
        RenderError::UnsupportedView {
            workflow: WORKFLOW,
            id: self.id.clone(),
            what,
            expected,
            actual,
        }
    }

    /// Adds `{id}/prepare` and `{id}/generate` (its `clear`, `claim` and `publish` dispatches),
    /// the imported `{id}/state` and `{id}/args` (and with [`Self::groups`] the descriptor
    /// table `{id}/groups`), after checking the feature, every view's format and size, the
    /// group descriptors, and that written views share no buffer with what is read and do not
    /// overlap each other. Compiles and submits nothing.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<GpuSceneDrawOutput, RenderError> {
        if !graph
            .device()
            .features()
            .contains(wgpu::Features::INDIRECT_FIRST_INSTANCE)
        {
            return Err(RenderError::MissingFeature {
                workflow: WORKFLOW,
                id: self.id.clone(),
                feature: "INDIRECT_FIRST_INSTANCE",
            });
        }
        let scene_capacity = self.scene.capacity;
        if let Some(v) = &self.visibility {
            if v.format() != VectorFormat::Uint32
                || !v.is_packed()
                || v.live_count().is_some()
                || v.len() != u64::from(scene_capacity)
            {
                return Err(self.unsupported(
                    "visibility",
                    "packed uint32 rows without a live count, one per scene slot",
                    format!(
                        "{} rows of {} (packed {})",
                        v.len(),
                        v.format(),
                        v.is_packed()
                    ),
                ));
            }
        }
        if let Some(list) = &self.visible_rows {
            if self.visibility.is_some() {
                return Err(self.unsupported(
                    "visible rows",
                    "either a visibility mask or a visible-row list",
                    "both".into(),
                ));
            }
            let v = &list.rows;
            if v.format() != VectorFormat::Uint32
                || !v.is_packed()
                || v.live_count().is_some()
                || v.len() > u64::from(u32::MAX)
            {
                return Err(self.unsupported(
                    "visible rows",
                    "packed uint32 rows without a live count",
                    format!(
                        "{} rows of {} (packed {})",
                        v.len(),
                        v.format(),
                        v.is_packed()
                    ),
                ));
            }
            if !one_word(&list.count) {
                return Err(self.unsupported(
                    "visible row count",
                    "one packed uint32 row without a live count",
                    format!("{} rows of {}", list.count.len(), list.count.format()),
                ));
            }
        }
        let outputs = [
            ("required count", self.required_count),
            ("published count", self.published_count),
            ("overflow", self.overflow),
        ];
        for (what, v) in outputs {
            if !one_word(&v) {
                return Err(self.unsupported(
                    what,
                    "one packed uint32 row without a live count",
                    format!("{} rows of {}", v.len(), v.format()),
                ));
            }
        }
        let command_capacity = self.commands.records();
        if let Some(c) = &self.groups {
            c.check(WORKFLOW, &self.id, command_capacity)?;
        }
        let command_words = (self.commands.layout().record_bytes() / 4) as u32;
        let commands = graph.create_data_view(
            self.command_handle,
            DataViewDescriptor::packed(
                VectorFormat::Uint32,
                u64::from(command_capacity * command_words).max(1),
            )
            .at_offset(self.commands.byte_offset()),
        )?;
        // Read by the generate node; the count is bound read-write by prepare alone (it may
        // share a buffer with the outputs, as a frame's diagnostics do).
        let mut reads = vec![self.scene.records];
        reads.extend(self.scene.keys.map(|k| k.buffer()));
        reads.extend(self.visibility.map(|v| v.buffer()));
        reads.extend(self.visible_rows.map(|l| l.rows.buffer()));
        let mut written: Vec<(&'static str, DataView)> = vec![("commands", commands)];
        written.extend(outputs);
        written.extend(self.groups.iter().flat_map(|c| c.outputs()));
        check_outputs_alone(graph, WORKFLOW, &self.id, &reads, &written)?;
        // Rows one encode can iterate, so commands it can publish.
        let max_rows = match &self.visible_rows {
            Some(l) => l.rows.len(),
            None => u64::from(scene_capacity),
        };
        let published_capacity = max_rows.min(u64::from(command_capacity));
        let owners_at = STATE_HEADER_WORDS;
        let published_at = owners_at + u64::from(command_capacity);
        let state_words = published_at + published_capacity.max(1);
        let device = graph.device().clone();
        let persistent = |name: &str, words: u64, usage: wgpu::BufferUsages| {
            // Zeroed at creation: "not initialized", so the first encode clears everything.
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(&format!("{}/{name}", self.id)),
                size: words * 4,
                usage,
                mapped_at_creation: false,
            })
        };
        let state = persistent(
            "state",
            state_words,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        );
        let args = persistent(
            "args",
            8,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
        );
        let state_h = graph.import_buffer(
            BufferDescriptor::new(
                format!("{}/state", self.id),
                state.size(),
                wgpu::BufferUsages::STORAGE,
            ),
            &state,
        )?;
        let args_h = graph.import_buffer(
            BufferDescriptor::new(
                format!("{}/args", self.id),
                args.size(),
                wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
            ),
            &args,
        )?;
        let state_view = graph.create_packed_view(state_h, VectorFormat::Uint32, state_words)?;
        let args_view = graph.create_packed_view(args_h, VectorFormat::Uint32, 8)?;
        let grid_at = |word: u64| {
            graph.create_data_view(
                args_h,
                DataViewDescriptor::packed(VectorFormat::Uint32, 3).at_offset(4 * word),
            )
        };
        let (clear_grid, rows_grid) = (grid_at(0)?, grid_at(3)?);
        let published = GpuSceneCommandList {
            slots: graph.create_data_view(
                state_h,
                DataViewDescriptor::packed(VectorFormat::Uint32, published_capacity.max(1))
                    .at_offset(4 * published_at),
            )?,
            count: graph.create_data_view(
                state_h,
                DataViewDescriptor::packed(VectorFormat::Uint32, 1)
                    .at_offset(4 * STATE_PUBLISHED_WORD),
            )?,
        };
        let bound = match &self.groups {
            Some(c) => Some(c.bind(graph, &self.id)?),
            None => None,
        };
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let base = |v: &DataView| v.aligned_range(align).element_offset as u32;
        let visibility = self.visibility.unwrap_or(self.scene.record_words);
        let rows = self
            .visible_rows
            .map_or(self.scene.record_words, |l| l.rows);
        let params = DrawGenerationParams {
            scene_capacity,
            command_capacity,
            record_base: base(&self.scene.record_words),
            visibility_base: base(&visibility),
            command_base: base(&commands),
            command_words,
            first_instance_word: command_words - 1,
            owner_base: base(&state_view) + owners_at as u32,
            required_base: base(&self.required_count),
            published_base: base(&self.published_count),
            overflow_base: base(&self.overflow),
            use_visibility: u32::from(self.visibility.is_some()),
            state_base: base(&state_view),
            published_slots_base: base(&state_view) + published_at as u32,
            published_capacity: published_capacity as u32,
            listed: u32::from(self.visible_rows.is_some()),
            rows_base: base(&rows),
            rows_capacity: max_rows as u32,
            count_base: self.visible_rows.map_or(0, |l| base(&l.count)),
            args_base: base(&args_view),
            max_workgroups: graph.device().limits().max_compute_workgroups_per_dimension,
            keys_base: self.scene.keys.map_or(0, |k| base(&k) / 4),
            group_count: bound.as_ref().map_or(0, |b| b.group_count),
            counts_base: bound.as_ref().map_or(0, |b| b.counts_base),
            flags_base: bound.as_ref().map_or(0, |b| b.flags_base),
            group_overflow_base: bound.as_ref().map_or(0, |b| b.overflow_base),
            pad: [0; 2],
        };
        let constants = vec![
            (
                "KEYED".to_string(),
                f64::from(u8::from(self.scene.keys.is_some())),
            ),
            ("CLASSIFY".to_string(), f64::from(u8::from(bound.is_some()))),
        ];
        // The classification's outputs (prepare zeroes them, publish writes them), or
        // placeholders its CLASSIFY keeps unread.
        let rw = gpugraph_command::Access::ReadWrite;
        let group_outputs = match &self.groups {
            Some(c) => [
                Binding::read_write(13, c.counts),
                Binding::read_write(14, c.group_flags),
                Binding::read_write(15, c.overflow),
            ],
            None => [
                Binding::placeholder(13, rw),
                Binding::placeholder(14, rw),
                Binding::placeholder(15, rw),
            ],
        };
        let shader = shader();
        let common = [
            Binding::params(0, &params),
            Binding::read_write(4, state_view),
            Binding::read_write(5, self.required_count),
            Binding::read_write(6, self.published_count),
            Binding::read_write(7, self.overflow),
        ];
        let mut prepare = common.to_vec();
        prepare.push(Binding::read_write(9, args_view));
        prepare.push(match &self.visible_rows {
            Some(l) => Binding::read_write(10, l.count),
            None => Binding::placeholder(10, gpugraph_command::Access::ReadWrite),
        });
        prepare.extend(group_outputs.clone());
        let mut node = DispatchNode::new(
            format!("{}/prepare", self.id),
            shader.clone(),
            "prepare",
            prepare,
            Grid::Workgroups([1, 1, 1]),
        );
        node.constants = constants.clone();
        graph.add_dispatch_node(node)?;
        let mut generate = common.to_vec();
        generate.extend([
            Binding::read(1, self.scene.record_words),
            Binding::read(2, visibility),
            Binding::read_write(3, commands),
            Binding::read(8, rows),
            self.scene.keys_binding(11),
            match &bound {
                Some(b) => Binding::read(12, b.table),
                None => Binding::placeholder(12, gpugraph_command::Access::Read),
            },
        ]);
        generate.extend(group_outputs);
        let mut node = DispatchNode::new(
            format!("{}/generate", self.id),
            shader,
            "clear",
            generate,
            Grid::Indirect(clear_grid),
        )
        .then("claim", Grid::Indirect(rows_grid))
        .then("publish", Grid::Indirect(rows_grid));
        node.constants = constants;
        graph.add_dispatch_node(node)?;
        Ok(GpuSceneDrawOutput { published, state })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader() {
        let (size, offsets) =
            crate::gpu_scene::shader_layout::struct_layout(&shader().build(), "Params");
        assert_eq!(size, std::mem::size_of::<DrawGenerationParams>());
        assert_eq!(offsets, crate::gpu_scene::shader_layout::packed_words(28));
    }

    /// The row tile the tests' boundary sizes use is the one the shader covers.
    #[test]
    fn row_tile_matches_the_shader() {
        let wgsl = shader().build();
        assert!(wgsl.contains("const WORKGROUP_SIZE: u32 = 256u;"));
        assert!(wgsl.contains("const ROWS_PER_INVOCATION: u32 = 4u;"));
        assert!(wgsl.contains("const ROW_TILE: u32 = WORKGROUP_SIZE * ROWS_PER_INVOCATION;"));
        assert_eq!(GPU_SCENE_DRAW_ROW_TILE, 256 * 4);
    }
}
