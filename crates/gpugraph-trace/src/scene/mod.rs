//! [`TraceSceneProjection`] (spec T.1, generic scene projection): spans become GPUScene
//! records, so the scene consumers of `gpugraph-render` (draw generation, resource groups,
//! picking) work on traces unchanged. The canonical 32-byte span stays the source of truth:
//! the scene record's box holds float32 time, which is coarse far from the origin (a float32
//! has 24 significant bits), so exact times are always read from the span.

use gpugraph_command::{
    Access, Binding, BufferHandle, CommandGraph, DataView, DispatchNode, Grid, VectorFormat,
};
use gpugraph_render::gpu_scene::GPU_SCENE_RECORD_WORDS;

use crate::error::TraceGpuError;

const WORKFLOW: &str = "trace scene projection";
const WG: u32 = 256;

/// `Params` in scene.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct SceneParams {
    units_per_tick: f32,
    pad: [u32; 3],
}

/// Writes one GPUScene record per span slot from the spans and the frame's rows.
///
/// Contract: `rows` (packed uint32, one per slot: the frame's layout row or
/// [`crate::NO_SPAN`]) sets the slot count `c`; `spans` holds `8 · c` packed uint32 words,
/// `records` `32 · c` (a [`gpugraph_render::GpuSceneViews::record_words`] view of a scene of
/// capacity `c`), both at aligned offset 0; `frame_params` is the frame's uniform, whose first
/// word is the loaded span count `n`. Slot `i < n` gets `object_id = i`, `flags = 1 | span
/// flags << 16`, `group_id` = draw group, `geometry_id` = name ID, box `x = [start, end] ·
/// units_per_tick` (float32), `y = [row, row + 1]` (`[-1, 0]` when hidden), `z = 0`, the sphere
/// around the box, no command slot, identity transform; slots `≥ n` become holes (zero).
/// Equal to [`crate::cpu::scene_record`]. Node: `{id}`; rewrites every record each encoding.
#[derive(Clone, Debug)]
pub struct TraceSceneProjection {
    /// Node id.
    pub id: String,
    /// The frame's `FrameParams` uniform buffer.
    pub frame_params: BufferHandle,
    /// The spans.
    pub spans: DataView,
    /// The rows.
    pub rows: DataView,
    /// The scene's record words.
    pub records: DataView,
    /// Scene x units per tick (e.g. `1e-3`: microseconds).
    pub units_per_tick: f32,
}

impl TraceSceneProjection {
    /// Checks the views and adds the node.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), TraceGpuError> {
        let c = self.rows.len();
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        for (what, v, rows) in [
            ("rows", self.rows, c),
            ("spans", self.spans, 8 * c),
            ("records", self.records, GPU_SCENE_RECORD_WORDS * c),
        ] {
            let ok = v.format() == VectorFormat::Uint32
                && v.is_packed()
                && v.len() == rows
                && v.aligned_range(align).element_offset == 0;
            if !ok {
                return Err(TraceGpuError::View {
                    workflow: WORKFLOW,
                    id: self.id.clone(),
                    what,
                    expected: "packed uint32 at an aligned offset: 1, 8 and 32 words per slot",
                    actual: format!(
                        "{} rows of {} at byte {}",
                        v.len(),
                        v.format(),
                        v.byte_offset()
                    ),
                });
            }
        }
        let p = SceneParams {
            units_per_tick: self.units_per_tick,
            pad: [0; 3],
        };
        graph.add_dispatch_node(DispatchNode::new(
            self.id,
            crate::shaders::shader("trace/scene", "scene/scene.wgsl"),
            "project",
            vec![
                Binding::params(0, &p),
                Binding::handle(1, self.frame_params, Access::Uniform),
                Binding::read(2, self.spans),
                Binding::read(3, self.rows),
                Binding::read_write(4, self.records),
            ],
            Grid::Rows {
                rows: c,
                rows_per_workgroup: WG,
            },
        ))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader() {
        let wgsl = crate::shaders::shader("trace/scene", "scene/scene.wgsl").build();
        crate::assert_params_layout::<SceneParams>(&wgsl, "Params", 4);
    }
}
