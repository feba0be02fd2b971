//! `bench render`: GPU frustum culling and drawing per frame, the `gpugraph render cull` scene
//! without the image readback, timed whole and split:
//! * `cull`: the visibility workflow alone (sphere vs frustum, LOD band, selection → mask and
//!   generated IDs, then the fused compaction writing the visible IDs and the count into a
//!   drawIndexed record). Minimum traffic per instance: 28 bytes read (sphere 16, LOD band 8,
//!   selection 4) and 4 written (the mask), plus 4 per visible ID; the per-node table splits
//!   `visibility/cull` (36 B: the reads, the mask and the generated IDs) from
//!   `visibility/compact` (8 B: mask and IDs read);
//! * `draw`: the bundled draw alone of the oracle's visible IDs (uploaded once) into a
//!   1280×720 target with depth and 4× MSAA resolve; its bytes are the IDs and spheres the
//!   vertex stage reads (20 B per visible instance, counted per instance of the scene), the
//!   raster work comes on top;
//! * `draw[msaa=1]`, `draw[cubes/instance=32]` and `draw[half]`: the same draw without
//!   multisampling, with 32 cubes per drawn instance instead of 1 (the batched draw),
//!   and of the first half of the visible IDs only — whether the draw is bound by samples, by
//!   vertex-wave occupancy or by instances;
//! * `cull-draw`: both in one graph, as a frame of `render cull`; `cull-draw[lod=1px]` with
//!   LOD bands that drop the cubes narrower than a pixel (`far = 720 r`), which bounds the
//!   drawn instances by the screen rather than by n.
//!
//! The checks compare the GPU-written count with the exact f32 oracle (`visibility::cpu`),
//! allowing the rows within rounding of a plane or an LOD edge that a device fusing
//! multiply-adds may decide the other way.

use anyhow::{bail, Result};
use gpugraph_command::wgpu;
use gpugraph_render::visibility::cpu::{self, RowBounds, RowInputs};
use gpugraph_render::{CullScene, CullSceneOptions, InstancedCubes, ViewParams};

use super::primitives::Case;
use crate::gpu::Gpu;
use crate::render::random_scene;

/// Bytes per instance of the per-node rows (the culling nodes; the draw is the `draw` row).
pub fn node_bytes(_op: &str, node: &str) -> Option<f64> {
    match node {
        "visibility/cull" => Some(36.0),
        n if n.starts_with("visibility/compact") => Some(8.0),
        _ => None,
    }
}

/// A check that the draw record's count is within the oracle's allowance.
fn count_check(
    op: &'static str,
    draw: wgpu::Buffer,
    sure: u32,
    maybe: u32,
) -> super::primitives::CaseCheck {
    Box::new(move |gpu: &Gpu| {
        let count = gpu.read_back(&draw, 2)?[1];
        if count < sure || count > sure + maybe {
            bail!("{op}: {count} instances counted, the oracle says {sure} (+{maybe} within rounding)");
        }
        Ok(())
    })
}

/// What a case's draw record must count.
#[derive(Clone, Copy)]
enum Expect {
    /// The IDs uploaded to a draw-only scene.
    Drawn(u32),
    /// The oracle's visible rows: (sure, within rounding).
    Oracle(u32, u32),
}

/// The oracle's mask with LOD bands `lod`, its count of rows visible beyond rounding, and
/// the rows a device fusing multiply-adds may decide either way.
fn oracle(view: &ViewParams, bounds: &[RowBounds], lod: &[[f32; 2]]) -> (Vec<u32>, u32, u32) {
    let inputs = RowInputs {
        lod: Some(lod),
        ..Default::default()
    };
    let mask = cpu::visibility(view, bounds, inputs);
    let sensitive = cpu::rounding_sensitive(view, bounds, inputs, 1e-6);
    let sure = (0..mask.len())
        .filter(|&i| mask[i] == 1 && !sensitive[i])
        .count() as u32;
    let maybe = sensitive.iter().filter(|&&s| s).count() as u32;
    (mask, sure, maybe)
}

/// The render cases at `n` instances.
pub fn cases(gpu: &Gpu, n: u64) -> Result<Vec<Case>> {
    let Ok(instances) = u32::try_from(n) else {
        bail!("bench render: {n} instances exceed the uint32 IDs");
    };
    let (spheres, lod, extent) = random_scene(instances, 7);
    let options = CullSceneOptions {
        width: 1280,
        height: 720,
        msaa: 4,
        picking: false,
        readback: false,
        cubes_per_instance: InstancedCubes::CUBES_PER_INSTANCE,
    };
    let eye = [extent * 0.8, extent * 0.3, extent * 0.8];
    let both = CullScene::new(gpu.device(), gpu.queue(), &spheres, Some(&lod), options)?;
    let view = ViewParams::new(&both.view_projection(eye, [0.0; 3]), eye);
    let bounds: Vec<RowBounds> = spheres.iter().map(|&s| RowBounds::Sphere(s)).collect();
    let (mask, sure, maybe) = oracle(&view, &bounds, &lod);
    let visible: Vec<u32> = cpu::compact(&(0..instances).collect::<Vec<_>>(), &mask);
    // An LOD that drops the cubes under one pixel (720 r / d pixels wide at 1280×720, 60°).
    let lod_px: Vec<[f32; 2]> = spheres.iter().map(|s| [0.0, 720.0 * s[3]]).collect();
    let (_, sure_px, maybe_px) = oracle(&view, &bounds, &lod_px);
    let pixel = CullScene::new(gpu.device(), gpu.queue(), &spheres, Some(&lod_px), options)?;
    let cull = CullScene::cull_only(gpu.device(), gpu.queue(), &spheres, Some(&lod), options)?;
    let draw = CullScene::draw_only(gpu.device(), gpu.queue(), &spheres, &visible, options)?;
    // Diagnostics of what the draw is bound by: without MSAA, and half the instances.
    let single = CullSceneOptions { msaa: 1, ..options };
    let draw_msaa1 = CullScene::draw_only(gpu.device(), gpu.queue(), &spheres, &visible, single)?;
    let batched = CullSceneOptions {
        cubes_per_instance: 32,
        ..options
    };
    let draw_32 = CullScene::draw_only(gpu.device(), gpu.queue(), &spheres, &visible, batched)?;
    let half = &visible[..visible.len() / 2];
    let draw_half = CullScene::draw_only(gpu.device(), gpu.queue(), &spheres, half, options)?;
    let mut out = Vec::new();
    let culled = Expect::Oracle(sure, maybe);
    let drawn = Expect::Drawn(visible.len() as u32);
    let scenes = [
        ("cull", cull, culled),
        ("draw", draw, drawn),
        ("draw[msaa=1]", draw_msaa1, drawn),
        ("draw[cubes/instance=32]", draw_32, drawn),
        ("draw[half]", draw_half, Expect::Drawn(half.len() as u32)),
        ("cull-draw", both, culled),
        (
            "cull-draw[lod=1px]",
            pixel,
            Expect::Oracle(sure_px, maybe_px),
        ),
    ];
    for (op, scene, expect) in scenes {
        scene.set_camera(gpu.queue(), eye, [0.0; 3]);
        let record = scene.draw().buffer().clone();
        let (bytes, written, check) = match expect {
            Expect::Drawn(drawn) => (
                20.0 * f64::from(drawn) / (n.max(1) as f64),
                0.0,
                count_check(op, record, drawn, 0),
            ),
            Expect::Oracle(sure, maybe) => (32.0, 4.0, count_check(op, record, sure, maybe)),
        };
        out.push(Case {
            op: op.into(),
            bytes_per_element: bytes,
            written_bytes_per_element: written,
            graph: scene.into_graph(),
            check,
        });
    }
    Ok(out)
}
