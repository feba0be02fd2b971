//! `bench render`: GPU frustum culling and drawing per frame, the `gpugraph render cull` scene
//! without the image readback: the visibility workflow over N instance spheres (frustum, LOD,
//! selection), the compaction of visible IDs with the count written into a drawIndexed record,
//! and the bundled draw of the visible cubes into a 1280×720 target with depth and 4× MSAA
//! resolve. Minimum traffic per instance: 28 bytes read (sphere 16, LOD band 8, selection 4)
//! and 4 written (the mask), plus 4 per visible ID; the row counts 32 bytes per instance and
//! the draw's raster work comes on top, so `x floor` is an upper bound of the culling cost.
//! The check compares the GPU-written count with the f64 oracle (rows within rounding of a
//! plane may go either way).

use anyhow::{bail, Result};
use gpugraph_render::visibility::cpu::{self, RowBounds, RowInputs, Verdict};
use gpugraph_render::{CullScene, CullSceneOptions, ViewParams};

use super::primitives::Case;
use crate::gpu::Gpu;
use crate::render::random_scene;

/// The render case at `n` instances.
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
    };
    let scene = CullScene::new(gpu.device(), gpu.queue(), &spheres, Some(&lod), options)?;
    let eye = [extent * 0.8, extent * 0.3, extent * 0.8];
    scene.set_camera(gpu.queue(), eye, [0.0; 3]);
    let view = ViewParams::new(&scene.view_projection(eye, [0.0; 3]), eye);
    let draw = scene.draw().buffer().clone();
    let bounds: Vec<RowBounds> = spheres.iter().map(|&s| RowBounds::Sphere(s)).collect();
    let inputs = RowInputs {
        lod: Some(&lod),
        ..Default::default()
    };
    let verdicts = cpu::visibility(&view, &bounds, inputs, 1e-5);
    let sure = verdicts.iter().filter(|&&v| v == Verdict::Visible).count() as u32;
    let maybe = verdicts
        .iter()
        .filter(|&&v| v == Verdict::Borderline)
        .count() as u32;
    Ok(vec![Case {
        op: "cull-draw".into(),
        bytes_per_element: 32.0,
        written_bytes_per_element: 4.0,
        graph: scene.into_graph(),
        check: Box::new(move |gpu| {
            let count = gpu.read_back(&draw, 2)?[1];
            if count < sure || count > sure + maybe {
                bail!("cull-draw: {count} instances drawn, the oracle says {sure} (+{maybe} within rounding)");
            }
            Ok(())
        }),
    }])
}
