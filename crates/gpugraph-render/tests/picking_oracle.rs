//! IndexPickingTarget against the CPU rasterizer (`picking::cpu`): small scenes of cubes drawn
//! as (object, batch) IDs on the device, compared with the CPU's ID image pixel for pixel,
//! through single-pixel picks and through region passes (IDs, batch IDs, counts).
//!
//! Tolerance: rasterizers may legitimately differ at pixels whose center lies within a
//! fraction of a pixel of a triangle edge, so exact equality is required at every pixel whose
//! 3×3 neighbourhood in the CPU image holds one value (`cpu::interior`); a region's count
//! (per ID and in total) may differ from the CPU's by at most the region's other pixels. The
//! tests check that the compared pixels are most of the image and that an image with the
//! depth order reversed would fail the comparison. One scene nests a cube inside a larger one
//! (only the outer may show) and puts cubes partly off-screen.

mod common;

use std::collections::BTreeMap;

use common::*;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{CommandGraph, CompiledGraph, GpuContext, VectorFormat};
use gpugraph_render::camera::{look_at, mul, perspective, Mat4};
use gpugraph_render::picking::cpu::{self, DepthTest, IdImage, RasterScene};
use gpugraph_render::{
    CubeCamera, DrawCommandBuffer, DrawLayout, IndexPickingTarget, InstancedCubes, PickRegion,
    PixelPick, RegionPick, NO_OBJECT,
};
use rand::Rng;
use wgpu::util::DrawIndexedIndirectArgs;

const W: u32 = 96;
const H: u32 = 72;
const BATCH: u32 = 7;
const ROW: u32 = 768; // W * 8 bytes, 256-aligned
const CAPACITY: usize = (W * H) as usize;

fn view_projection() -> Mat4 {
    mul(
        &perspective(60f32.to_radians(), W as f32 / H as f32, 0.5, 100.0),
        &look_at([1.0, 2.0, 14.0], [0.0; 3], [0.0, 1.0, 0.0]),
    )
}

struct Setup {
    compiled: CompiledGraph,
    region: wgpu::Buffer,
    objects: wgpu::Buffer,
    batches: wgpu::Buffer,
    counters: wgpu::Buffer,
    texels: wgpu::Buffer,
    pixel: wgpu::Buffer,
    pick: PixelPick,
    target: IndexPickingTarget,
}

/// Draws the first `count` of `visible` (IDs into `spheres`; the draw record's count) into an
/// ID target with a region pass, a copy of the whole texture and a one-pixel copy.
fn setup(ctx: &GpuContext, spheres: &[[f32; 4]], visible: &[u32], count: u32, cubes: u32) -> Setup {
    let mut g = CommandGraph::new("picking-oracle", &ctx.device);
    let n = visible.len() as u64;
    let spheres_buf = upload(ctx, spheres, U::empty());
    let visible_buf = upload(ctx, visible, U::empty());
    let camera = upload(
        ctx,
        &[CubeCamera {
            view_projection: view_projection(),
            capacity: n as u32,
            batch: BATCH,
            pad: [0; 2],
        }],
        U::UNIFORM,
    );
    let draw = DrawCommandBuffer::create(&ctx.device, "draw", DrawLayout::DrawIndexed, 1);
    draw.write_draw_indexed(
        &ctx.queue,
        0,
        DrawIndexedIndirectArgs {
            index_count: InstancedCubes::INDEX_COUNT,
            instance_count: count,
            first_index: 0,
            base_vertex: 0,
            first_instance: 0,
        },
    )
    .unwrap();
    let spheres_h = import(&mut g, "spheres", &spheres_buf);
    let visible_h = import(&mut g, "visible", &visible_buf);
    let camera_h = import(&mut g, "camera", &camera);
    let draw_h = draw.import(&mut g, "draw").unwrap();
    let target = IndexPickingTarget::create(&mut g, "ids", (W, H)).unwrap();
    InstancedCubes {
        id: "draw-ids".into(),
        color: target.color_attachment(),
        depth: Some(target.depth_attachment()),
        camera: camera_h,
        spheres: common::view(
            &g,
            spheres_h,
            VectorFormat::Float32x4,
            0,
            spheres.len() as u64,
        ),
        visible: common::view(&g, visible_h, VectorFormat::Uint32, 0, n),
        draw: draw.clone(),
        draw_handle: draw_h,
        record: 0,
        cubes_per_instance: cubes,
    }
    .add_to_graph(&mut g)
    .unwrap();
    let region = upload(ctx, &[PickRegion::default()], U::UNIFORM);
    let region_h = import(&mut g, "region", &region);
    let objects = upload(ctx, &vec![POISON; CAPACITY], U::empty());
    let batches = upload(ctx, &vec![POISON; CAPACITY], U::empty());
    let counters = upload(ctx, &[POISON; 4], U::empty());
    let (oh, bh, ch) = (
        import(&mut g, "objects", &objects),
        import(&mut g, "batches", &batches),
        import(&mut g, "counters", &counters),
    );
    let u1 = VectorFormat::Uint32;
    let pass = RegionPick {
        id: "region",
        region: region_h,
        max_size: (W, H),
        objects: common::view(&g, oh, u1, 0, CAPACITY as u64),
        batches: common::view(&g, bh, u1, 0, CAPACITY as u64),
        count: common::view(&g, ch, u1, 0, 1),
        overflow: common::view(&g, ch, u1, 1, 1),
    };
    target.add_region_pass(&mut g, pass).unwrap();
    let texels = upload(ctx, &vec![0u32; (ROW / 4 * H) as usize], U::empty());
    let texels_h = import(&mut g, "texels", &texels);
    common::copy_texture_rows(&mut g, "read-ids", target.ids, texels_h, (W, H), ROW);
    let pixel = upload(ctx, &[POISON; 4], U::empty());
    let pixel_h = import(&mut g, "pixel", &pixel);
    let pick = target
        .add_pixel_copy(&mut g, "read-pixel", pixel_h)
        .unwrap();
    Setup {
        compiled: g.compile().unwrap(),
        region,
        objects,
        batches,
        counters,
        texels,
        pixel,
        pick,
        target,
    }
}

/// The CPU image of the scene with `depth_test`.
fn cpu_image(spheres: &[[f32; 4]], visible: &[u32], depth_test: DepthTest) -> IdImage {
    let vp = view_projection();
    cpu::rasterize(&RasterScene {
        view_projection: &vp,
        spheres,
        visible,
        batch: BATCH,
        size: (W, H),
        depth_test,
        depth_clear: if depth_test == DepthTest::Less {
            1.0
        } else {
            0.0
        },
    })
    .expect("every cube inside the depth range")
}

/// The GPU's ID image (row-major pairs).
fn gpu_image(ctx: &GpuContext, s: &Setup) -> IdImage {
    let t = read_buffer(ctx, &s.texels);
    (0..H)
        .flat_map(|y| (0..W).map(move |x| (x, y)))
        .map(|(x, y)| {
            let i = (y * ROW / 4 + x * 2) as usize;
            (t[i], t[i + 1])
        })
        .collect()
}

/// Pixels the comparison holds exactly.
fn interior_pixels(image: &[(u32, u32)]) -> Vec<(u32, u32)> {
    (0..H)
        .flat_map(|y| (0..W).map(move |x| (x, y)))
        .filter(|&(x, y)| cpu::interior(image, (W, H), x, y))
        .collect()
}

/// The first interior pixel where `a` and `b` differ.
fn first_difference(a: &[(u32, u32)], b: &[(u32, u32)], at: &[(u32, u32)]) -> Option<(u32, u32)> {
    at.iter()
        .copied()
        .find(|&(x, y)| a[(y * W + x) as usize] != b[(y * W + x) as usize])
}

/// Runs a region pass; returns (count, overflow, per-ID pixel counts written).
fn region_pick(
    ctx: &GpuContext,
    s: &mut Setup,
    region: PickRegion,
) -> (u32, u32, BTreeMap<(u32, u32), i64>) {
    ctx.queue
        .write_buffer(&s.region, 0, bytemuck::bytes_of(&region));
    let poison = vec![POISON; CAPACITY];
    ctx.queue
        .write_buffer(&s.objects, 0, bytemuck::cast_slice(&poison));
    ctx.queue
        .write_buffer(&s.batches, 0, bytemuck::cast_slice(&poison));
    encode_wait(ctx, &mut s.compiled);
    let counters = read_buffer(ctx, &s.counters);
    let objects = read_buffer(ctx, &s.objects);
    let batches = read_buffer(ctx, &s.batches);
    let mut pairs = BTreeMap::new();
    for i in 0..(counters[0] as usize).min(CAPACITY) {
        *pairs.entry((objects[i], batches[i])).or_insert(0) += 1;
    }
    (counters[0], counters[1], pairs)
}

/// How a scene is drawn and checked.
#[derive(Clone, Copy)]
struct Draw {
    /// The draw record's count: the first `count` IDs are drawn.
    count: u32,
    /// Cubes per drawn instance.
    cubes: u32,
    /// Whether the scene must also tell depth orders apart (the reversed-depth image fails
    /// the comparison).
    overlapping: bool,
}

/// Checks one scene: the whole image at interior pixels, pixel picks and region picks.
fn check_scene(ctx: &GpuContext, spheres: &[[f32; 4]], visible: &[u32], draw: Draw, seed: u64) {
    let Draw {
        count,
        cubes,
        overlapping,
    } = draw;
    let drawn = &visible[..count as usize];
    let want = cpu_image(spheres, drawn, DepthTest::Less);
    let interior = interior_pixels(&want);
    assert!(
        interior.len() as f64 > 0.35 * f64::from(W * H),
        "most pixels are compared: {}",
        interior.len()
    );
    let mut s = setup(ctx, spheres, visible, count, cubes);
    encode_wait(ctx, &mut s.compiled);
    let got = gpu_image(ctx, &s);
    if let Some((x, y)) = first_difference(&got, &want, &interior) {
        let i = (y * W + x) as usize;
        panic!("pixel ({x}, {y}): GPU {:?}, CPU {:?}", got[i], want[i]);
    }
    // The comparison can fail: the farthest-surface image disagrees.
    if overlapping {
        let reversed = cpu_image(spheres, drawn, DepthTest::Greater);
        assert!(
            first_difference(&got, &reversed, &interior).is_some(),
            "the scene must tell depth orders apart"
        );
    }
    let mut rng = rng(seed);
    // Single-pixel picks at interior pixels (objects and background).
    for _ in 0..4 {
        let (x, y) = interior[rng.random_range(0..interior.len())];
        s.target.set_pixel(&s.pick, x, y).unwrap();
        encode_wait(ctx, &mut s.compiled);
        let (object, batch) = want[(y * W + x) as usize];
        assert_eq!(
            &read_buffer(ctx, &s.pixel)[..2],
            &[object, batch],
            "pick ({x}, {y})"
        );
    }
    // Regions: one interior pixel (exact), random rectangles and the full frame (counts per
    // ID within the region's non-interior pixels).
    let mut regions: Vec<PickRegion> = (0..3)
        .map(|_| {
            let (x, y) = interior[rng.random_range(0..interior.len())];
            PickRegion {
                x,
                y,
                width: 1,
                height: 1,
            }
        })
        .collect();
    for _ in 0..4 {
        let (x, y) = (rng.random_range(0..W), rng.random_range(0..H));
        regions.push(PickRegion {
            x,
            y,
            width: rng.random_range(0..W),
            height: rng.random_range(0..H),
        });
    }
    regions.push(PickRegion {
        x: 0,
        y: 0,
        width: W,
        height: H,
    });
    for region in regions {
        let (count, overflow, pairs) = region_pick(ctx, &mut s, region);
        let mut cpu_pairs: BTreeMap<(u32, u32), i64> = BTreeMap::new();
        let mut slack = 0i64;
        for y in region.y..(region.y + region.height).min(H) {
            for x in region.x..(region.x + region.width).min(W) {
                let p = want[(y * W + x) as usize];
                if p.0 != NO_OBJECT {
                    *cpu_pairs.entry(p).or_insert(0) += 1;
                }
                slack += i64::from(!cpu::interior(&want, (W, H), x, y));
            }
        }
        let cpu_count: i64 = cpu_pairs.values().sum();
        assert_eq!(overflow, 0, "{region:?}");
        assert!(
            (i64::from(count) - cpu_count).abs() <= slack,
            "{region:?}: GPU count {count}, CPU {cpu_count}, slack {slack}"
        );
        let ids: std::collections::BTreeSet<_> = pairs.keys().chain(cpu_pairs.keys()).collect();
        for id in ids {
            let (g, c) = (
                pairs.get(id).copied().unwrap_or(0),
                cpu_pairs.get(id).copied().unwrap_or(0),
            );
            assert!(
                (g - c).abs() <= slack,
                "{region:?}: {id:?} GPU {g} CPU {c} (slack {slack})"
            );
        }
        if slack == 0 {
            assert_eq!(pairs, cpu_pairs, "{region:?}");
        }
    }
}

#[test]
fn nested_overlapping_and_offscreen_cubes_match_the_cpu_rasterizer() {
    let ctx = ctx();
    let spheres = [
        // A cube inside a larger one: only the outer shows.
        [0.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, -0.3, 3.0],
        // Overlapping on screen, apart in depth.
        [-5.0, 1.0, -2.0, 2.5],
        [-4.0, 0.0, 3.0, 1.5],
        // Partly off-screen.
        [11.0, -4.0, 0.0, 2.0],
        // Never drawn.
        [0.0, 0.0, 0.0, 0.5],
    ];
    let visible = [3, 0, 1, 2, 4];
    let draw = Draw {
        count: visible.len() as u32,
        cubes: InstancedCubes::CUBES_PER_INSTANCE,
        overlapping: true,
    };
    check_scene(&ctx, &spheres, &visible, draw, 1);
    // The nested cube never shows anywhere.
    let want = cpu_image(&spheres, &visible, DepthTest::Less);
    assert!(want.iter().all(|p| p.0 != 0), "the inner cube is hidden");
    assert!(want.iter().any(|p| p.0 == 1), "the outer cube shows");
}

#[test]
fn random_scenes_match_the_cpu_rasterizer() {
    let ctx = ctx();
    for seed in 2..5 {
        let mut rng = rng(seed);
        let spheres: Vec<[f32; 4]> = (0..14)
            .map(|_| {
                [
                    rng.random_range(-7.0..7.0f32),
                    rng.random_range(-4.0..4.0f32),
                    rng.random_range(-5.0..5.0f32),
                    rng.random_range(0.4..2.0f32),
                ]
            })
            .collect();
        // Draw a shuffled subset, so that draw order and IDs differ.
        let mut visible: Vec<u32> = (0..14).filter(|_| rng.random_bool(0.8)).collect();
        for i in (1..visible.len()).rev() {
            visible.swap(i, rng.random_range(0..=i));
        }
        let draw = Draw {
            count: visible.len() as u32,
            cubes: InstancedCubes::CUBES_PER_INSTANCE,
            overlapping: true,
        };
        check_scene(&ctx, &spheres, &visible, draw, seed);
    }
}

/// The draw runs 32 cubes per instance: a count that ends inside a batch draws exactly the
/// counted cubes (not the rest of the batch, though the IDs and the capacity go on), over
/// several batches; 0 draws nothing.
#[test]
fn batched_draws_stop_at_the_counted_cube() {
    let ctx = ctx();
    let mut rng = rng(5);
    // A 9 × 8 grid of cubes, apart on screen.
    let spheres: Vec<[f32; 4]> = (0..72)
        .map(|k| {
            let (x, y) = ((k % 9) as f32, (k / 9) as f32);
            [-8.8 + x * 2.2, -7.7 + y * 2.2, 0.0, 1.1]
        })
        .collect();
    let mut visible: Vec<u32> = (0..spheres.len() as u32).collect();
    for i in (1..visible.len()).rev() {
        visible.swap(i, rng.random_range(0..=i));
    }
    for (count, cubes) in [
        (40, 32),
        (70, 32),
        (72, 32),
        (1, 32),
        (0, 32),
        (70, 1),
        (70, 7),
    ] {
        let draw = Draw {
            count,
            cubes,
            overlapping: false,
        };
        check_scene(&ctx, &spheres, &visible, draw, 6 + u64::from(count));
    }
    // Zero cubes per instance is refused when the node is added.
    let mut g = CommandGraph::new("zero-cubes", &ctx.device);
    let spheres_buf = upload(&ctx, &spheres, U::empty());
    let spheres_h = import(&mut g, "spheres", &spheres_buf);
    let camera = upload(&ctx, &[0u32; 20], U::UNIFORM);
    let camera_h = import(&mut g, "camera", &camera);
    let draw = DrawCommandBuffer::create(&ctx.device, "draw", DrawLayout::DrawIndexed, 1);
    let draw_h = draw.import(&mut g, "draw").unwrap();
    let target = IndexPickingTarget::create(&mut g, "ids", (W, H)).unwrap();
    let e = InstancedCubes {
        id: "zero".into(),
        color: target.color_attachment(),
        depth: Some(target.depth_attachment()),
        camera: camera_h,
        spheres: common::view(&g, spheres_h, VectorFormat::Float32x4, 0, 72),
        visible: common::view(&g, spheres_h, VectorFormat::Uint32, 0, 72),
        draw,
        draw_handle: draw_h,
        record: 0,
        cubes_per_instance: 0,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(
            e,
            gpugraph_render::RenderError::UnsupportedView {
                what: "cubes per instance",
                ..
            }
        ),
        "{e}"
    );
}
