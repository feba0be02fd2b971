//! [`GpuSceneDrawGeneration`] (spec 6.2a): active, optionally visible scene rows claim
//! fixed-capacity indirect-command slots; the lowest row wins a collision.
//!
//! Design. Three dispatch nodes over one layout (`draw_generation.wgsl`): `clear` (per command:
//! zero `instanceCount` and `firstInstance`, reset its owner; the three diagnostics to 0),
//! `claim` (per scene row: count the request, flag an out-of-range slot, `atomicMin` the
//! owner), `publish` (per scene row: the owner writes `instanceCount = 1`,
//! `firstInstance = row`; a loser flags overflow). `atomicMin` makes the winner the lowest
//! row whatever the order rows run in, so the result is deterministic. The owners are a
//! graph transient (one word per command). Dispatches cover the full scene capacity, so rows
//! inserted later by [`crate::GpuScene::mutate`] take part without recompiling; visibility
//! and records are read each encode, so new visibility is a buffer write, never a recompile.
//! Memory traffic per encode: 8 bytes per command (clear) + 4 per command (owners), and per
//! scene row 8–12 bytes read twice (flags, slot, visibility) plus 8 written per published
//! command.

use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, DataView, DataViewDescriptor, DispatchNode, Grid,
    ShaderSource, VectorFormat,
};

use super::GpuSceneViews;
use crate::{DrawCommandBuffer, RenderError};

const WORKFLOW: &str = "scene draw generation";
const WGSL: &str = concat!(
    include_str!("record.wgsl"),
    include_str!("draw_generation.wgsl")
);
const WORKGROUP_SIZE: u32 = 256;

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
    /// Owner 0.
    pub owner_base: u32,
    /// The required count's word.
    pub required_base: u32,
    /// The published count's word.
    pub published_base: u32,
    /// The overflow word.
    pub overflow_base: u32,
    /// 1 when a visibility view is bound.
    pub use_visibility: u32,
}

/// Draw generation over one imported scene (see the module doc).
///
/// Contract, per encode: every command record's `instanceCount` and `firstInstance` are first
/// set to 0 (its other words are the renderer's and never written). Row `r` is eligible when
/// its flags have the active bit, `visibility[r] != 0` (when a visibility view is given) and
/// its `command_slot` is not the invalid reference. `required_count` = eligible rows;
/// a slot `≥` the command capacity or claimed by more than one eligible row sets `overflow`
/// to 1; each in-range claimed slot is published by its lowest eligible row as
/// `instanceCount = 1, firstInstance = r`, and `published_count` counts them. The device must
/// have `INDIRECT_FIRST_INSTANCE` (checked when added) for draws to honor `firstInstance`.
#[derive(Clone, Debug)]
pub struct GpuSceneDrawGeneration {
    /// Node id prefix.
    pub id: String,
    /// The scene's views in this graph.
    pub scene: GpuSceneViews,
    /// Optional packed uint32 per-slot visibility, one row per scene slot (nonzero =
    /// visible).
    pub visibility: Option<DataView>,
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
}

fn one_word(v: &DataView) -> bool {
    v.format() == VectorFormat::Uint32 && v.len() == 1 && v.live_count().is_none()
}

fn bytes_of_view(v: &DataView) -> std::ops::Range<u64> {
    v.byte_offset()..v.byte_offset() + v.byte_span()
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

    /// Adds `{id}/clear`, `{id}/claim`, `{id}/publish` and the transient `{id}/owners` after
    /// checking the feature, every view's format and size, and that written views share no
    /// buffer with what is read and do not overlap each other. Compiles and submits nothing.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), RenderError> {
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
        let command_words = (self.commands.layout().record_bytes() / 4) as u32;
        let commands = graph.create_data_view(
            self.command_handle,
            DataViewDescriptor::packed(
                VectorFormat::Uint32,
                u64::from(command_capacity * command_words).max(1),
            )
            .at_offset(self.commands.byte_offset()),
        )?;
        let mut reads = vec![self.scene.records];
        reads.extend(self.visibility.map(|v| v.buffer()));
        let mut written: Vec<(&'static str, DataView)> = vec![("commands", commands)];
        written.extend(outputs);
        for (i, (what, v)) in written.iter().enumerate() {
            if reads.contains(&v.buffer()) {
                return Err(RenderError::WritesAlone {
                    workflow: WORKFLOW,
                    id: self.id.clone(),
                    what,
                    buffer: graph.buffer_id(v.buffer())?.to_string(),
                });
            }
            for (other, w) in &written[..i] {
                let (a, b) = (bytes_of_view(v), bytes_of_view(w));
                if v.buffer() == w.buffer() && a.start < b.end && b.start < a.end {
                    return Err(self.unsupported(
                        what,
                        "a range overlapping no other output",
                        format!("bytes {a:?} overlap {other} bytes {b:?}"),
                    ));
                }
            }
        }
        let owners_handle = graph.create_buffer(BufferDescriptor::new(
            format!("{}/owners", self.id),
            u64::from(command_capacity).max(1) * 4,
            wgpu::BufferUsages::STORAGE,
        ))?;
        let owners = graph.create_packed_view(
            owners_handle,
            VectorFormat::Uint32,
            u64::from(command_capacity).max(1),
        )?;
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let base = |v: &DataView| v.aligned_range(align).element_offset as u32;
        let visibility = self.visibility.unwrap_or(self.scene.record_words);
        let params = DrawGenerationParams {
            scene_capacity,
            command_capacity,
            record_base: base(&self.scene.record_words),
            visibility_base: base(&visibility),
            command_base: base(&commands),
            command_words,
            first_instance_word: command_words - 1,
            owner_base: base(&owners),
            required_base: base(&self.required_count),
            published_base: base(&self.published_count),
            overflow_base: base(&self.overflow),
            use_visibility: u32::from(self.visibility.is_some()),
        };
        let bindings = vec![
            Binding::params(0, &params),
            Binding::read(1, self.scene.record_words),
            Binding::read(2, visibility),
            Binding::read_write(3, commands),
            Binding::read_write(4, owners),
            Binding::read_write(5, self.required_count),
            Binding::read_write(6, self.published_count),
            Binding::read_write(7, self.overflow),
        ];
        let shader = ShaderSource::new("render/gpu_scene/draw_generation", WGSL);
        let passes = [
            ("clear", u64::from(command_capacity).max(1)),
            ("claim", u64::from(scene_capacity)),
            ("publish", u64::from(scene_capacity)),
        ];
        for (entry, rows) in passes {
            graph.add_dispatch_node(DispatchNode::new(
                format!("{}/{entry}", self.id),
                shader.clone(),
                entry,
                bindings.clone(),
                Grid::Rows {
                    rows,
                    rows_per_workgroup: WORKGROUP_SIZE,
                },
            ))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader() {
        let module = naga::front::wgsl::parse_str(WGSL).expect("draw_generation.wgsl parses");
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).expect("layout");
        let (h, t) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("Params"))
            .expect("Params");
        let naga::TypeInner::Struct { members, .. } = &t.inner else {
            panic!("Params is a struct")
        };
        assert_eq!(
            layouter[h].size as usize,
            std::mem::size_of::<DrawGenerationParams>()
        );
        let offsets: Vec<u32> = members.iter().map(|m| m.offset).collect();
        assert_eq!(offsets, (0..12).map(|i| i * 4).collect::<Vec<u32>>());
    }
}
