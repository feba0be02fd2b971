//! [`GpuSceneVisibility`]: a scene's bounds visibility fused with its compaction — one pass
//! over the slots that tests each live slot's sphere against the frustum and appends the
//! visible slots to a list, with the count on the GPU (`visibility.wgsl`; oracle
//! [`super::cpu::sphere_visibility`], whose nonzero rows are the list's set).
//!
//! Why fused: the general [`crate::VisibilityWorkflow`] writes a source-aligned mask (and the
//! rows' IDs), then a scan and scatter read the mask again: at 16M records the mask alone is
//! 128 MB of traffic a frame, and the compaction a second pass. The scene's consumer needs the
//! set of visible slots, not a mask or their order (the draw generation's claim is an
//! `atomicMin`: the lowest row wins whatever the order rows come in), so each workgroup
//! gathers its visible slots with a workgroup atomic and reserves its block of the list with
//! one global atomic. Tiles, not one workgroup per 256 slots: atomics on the one count word
//! are serialized by the GPU, and the H100 took 0.651 ms for the 62,500 workgroups of 256
//! slots at 16M records, where reading their 256 MB of bounds needs 0.08–0.2 ms — ~10 ns per
//! atomic (inferred, not measured alone). A workgroup now covers a tile of
//! [`GPU_SCENE_CULL_TILE_ROWS`] slots, 16 per invocation (3,907 atomics at 16M), and each
//! invocation has 16 independent loads in flight. With the scene's packed bounds
//! ([`super::bounds`]) a slot costs 16 bytes read; without (borrowed records) its `flags` and
//! `sphere` words, one 32-byte sector.

use gpugraph_command::{
    Access, Binding, BufferHandle, CommandGraph, DataView, DispatchNode, Grid, ShaderSource,
    VectorFormat,
};

use super::outputs::check_outputs_alone;
use super::GpuSceneViews;
use crate::{RenderError, ViewParams};

const WORKFLOW: &str = "scene visibility";
/// The fused cull and compaction, after the record layout it includes.
fn shader() -> ShaderSource {
    crate::shaders::shader("render/gpu_scene/visibility", "gpu_scene/visibility.wgsl")
}
/// Slots one workgroup of the cull tests: 256 invocations of 16 slots each (the WGSL's
/// `TILE_ROWS`).
pub const GPU_SCENE_CULL_TILE_ROWS: u32 = 4096;

/// Constants of both nodes (WGSL `Params`): element offsets inside each binding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    bounds_base: u32,
    record_base: u32,
    output_base: u32,
    output_capacity: u32,
    count_base: u32,
    overflow_base: u32,
    pad: u32,
}

/// Which slots of a scene are visible from a view, as a list and a GPU count (see the module
/// doc).
///
/// Contract: slot `s < capacity` is visible when its `flags` are nonzero and its sphere is
/// finite with a radius ≥ 0 and outside none of the view's six planes (tangent kept), each
/// evaluated in f32 as [`crate::visibility::cpu`] states. Every encode, `count` receives the
/// number of visible slots (above the output's length when it is too short, then `overflow`
/// = 1, else 0) and `output[0..min(count, len)]` receives the visible slots, each once, in no
/// particular order; rows past the count are untouched. With the scene's packed bounds the
/// slot is read there (kept in sync by every mutation), else from its record.
#[derive(Clone, Debug)]
pub struct GpuSceneVisibility {
    /// Node id prefix.
    pub id: String,
    /// Imported buffer holding [`ViewParams`] (usage `UNIFORM`, at least
    /// [`ViewParams::BYTES`]).
    pub view: BufferHandle,
    /// The scene's views in this graph.
    pub scene: GpuSceneViews,
    /// Packed uint32 rows receiving the visible slots; its length is the list's capacity.
    pub output: DataView,
    /// One packed uint32: the visible slots.
    pub count: DataView,
    /// One packed uint32: 1 when the visible slots exceeded the output, else 0.
    pub overflow: DataView,
}

impl GpuSceneVisibility {
    fn unsupported(&self, what: &'static str, expected: &'static str, v: &DataView) -> RenderError {
        RenderError::UnsupportedView {
            workflow: WORKFLOW,
            id: self.id.clone(),
            what,
            expected,
            actual: format!(
                "{} rows of {} (packed {}, live count {})",
                v.len(),
                v.format(),
                v.is_packed(),
                v.live_count().is_some()
            ),
        }
    }

    /// Adds `{id}/reset` and `{id}/cull` (none when the scene has no slot: then only the
    /// reset) after checking the view buffer's size, the outputs' formats, that they share no
    /// buffer with what is read and that count and overflow do not overlap the list. Nothing
    /// is added when a check fails. Compiles and submits nothing.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), RenderError> {
        let packed_u32 = |v: &DataView| {
            v.format() == VectorFormat::Uint32 && v.is_packed() && v.live_count().is_none()
        };
        if !packed_u32(&self.output) {
            let expected = "packed uint32 rows without a live count";
            return Err(self.unsupported("output", expected, &self.output));
        }
        for (what, v) in [("count", &self.count), ("overflow", &self.overflow)] {
            if !packed_u32(v) || v.len() != 1 {
                let expected = "one packed uint32 row without a live count";
                return Err(self.unsupported(what, expected, v));
            }
        }
        let view_bytes = graph.buffer_descriptor(self.view)?.byte_length;
        if view_bytes < ViewParams::BYTES {
            return Err(RenderError::UnsupportedView {
                workflow: WORKFLOW,
                id: self.id.clone(),
                what: "view",
                expected: "a uniform buffer of at least 128 bytes (ViewParams)",
                actual: format!("{view_bytes} bytes"),
            });
        }
        let mut reads = vec![self.scene.records];
        reads.extend(self.scene.bounds.map(|b| b.buffer()));
        let written = [
            ("output", self.output),
            ("count", self.count),
            ("overflow", self.overflow),
        ];
        check_outputs_alone(graph, WORKFLOW, &self.id, &reads, &written)?;
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let base = |v: &DataView| v.aligned_range(align).element_offset as u32;
        // The packed bounds is a buffer of its own, bound from row 0: its element offset is
        // a whole number of rows.
        let bounds = self.scene.bounds.unwrap_or(self.scene.record_words);
        let params = Params {
            rows: self.scene.capacity,
            bounds_base: self.scene.bounds.map_or(0, |b| base(&b) / 4),
            record_base: base(&self.scene.record_words),
            output_base: base(&self.output),
            output_capacity: self.output.len().min(u64::from(u32::MAX)) as u32,
            count_base: base(&self.count),
            overflow_base: base(&self.overflow),
            pad: 0,
        };
        let shader = shader();
        let outputs = [
            Binding::read_write(5, self.count),
            Binding::read_write(6, self.overflow),
        ];
        graph.add_dispatch_node(DispatchNode::new(
            format!("{}/reset", self.id),
            shader.clone(),
            "reset",
            [vec![Binding::params(1, &params)], outputs.to_vec()].concat(),
            Grid::Workgroups([1, 1, 1]),
        ))?;
        if self.scene.capacity == 0 {
            return Ok(());
        }
        let mut bindings = vec![
            Binding::handle(0, self.view, Access::Uniform),
            Binding::params(1, &params),
            Binding::read(2, bounds),
            Binding::read(3, self.scene.record_words),
            Binding::read_write(4, self.output),
        ];
        bindings.extend(outputs);
        let mut node = DispatchNode::new(
            format!("{}/cull", self.id),
            shader,
            "cull",
            bindings,
            Grid::Rows {
                rows: u64::from(self.scene.capacity),
                rows_per_workgroup: GPU_SCENE_CULL_TILE_ROWS,
            },
        );
        node.constants = vec![(
            "PACKED".to_string(),
            f64::from(u8::from(self.scene.bounds.is_some())),
        )];
        graph.add_dispatch_node(node)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// The Rust params match the WGSL struct member for member.
    #[test]
    fn params_match_the_shader() {
        let (size, offsets) =
            crate::gpu_scene::shader_layout::struct_layout(&super::shader().build(), "Params");
        assert_eq!(size, std::mem::size_of::<super::Params>());
        assert_eq!(offsets, crate::gpu_scene::shader_layout::packed_words(8));
    }

    /// The tile the dispatch sizes is the one the shader covers.
    #[test]
    fn tile_matches_the_shader() {
        assert!(super::shader()
            .build()
            .contains("const WORKGROUP_SIZE: u32 = 256u;"));
        assert!(super::shader()
            .build()
            .contains("const ROWS_PER_INVOCATION: u32 = 16u;"));
        assert_eq!(super::GPU_SCENE_CULL_TILE_ROWS, 256 * 16);
    }
}
