//! IndexPickingTarget on a real device: cubes drawn as (object, batch) IDs, checked at their
//! projected centers; region passes compared with the CPU reference over the read-back ID
//! texture (empty region, background only, overlaps and duplicates, clipping, exact capacity,
//! overflow) and a single-pixel copy.

mod common;

use std::collections::BTreeMap;

use common::*;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{CommandGraph, CompiledGraph, GpuContext, VectorFormat};
use gpugraph_render::camera::{look_at, mul, perspective, Mat4};
use gpugraph_render::{
    CubeCamera, DrawCommandBuffer, DrawLayout, IndexPickingTarget, InstancedCubes, PickRegion,
    RegionPick, NO_OBJECT,
};
use wgpu::util::DrawIndexedIndirectArgs;

const W: u32 = 64;
const H: u32 = 48;
const BATCH: u32 = 3;
const ROW: u32 = 512; // W * 8 bytes, 256-aligned

/// Spheres: 0 and 1 overlap on screen (1 nearer), 2 alone, 3 outside the view.
const SPHERES: [[f32; 4]; 4] = [
    [-3.0, 0.0, 0.0, 2.0],
    [-1.5, 0.5, 4.0, 1.5],
    [4.0, 0.0, 0.0, 1.5],
    [0.0, 50.0, 0.0, 1.0],
];

fn view_projection() -> Mat4 {
    mul(
        &perspective(60f32.to_radians(), W as f32 / H as f32, 0.5, 100.0),
        &look_at([0.0, 0.0, 15.0], [0.0; 3], [0.0, 1.0, 0.0]),
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
    pick: gpugraph_render::PixelPick,
    target: IndexPickingTarget,
}

fn setup(ctx: &GpuContext, capacity: u64) -> Setup {
    let mut g = CommandGraph::new("picking", &ctx.device);
    let spheres = upload(ctx, &SPHERES, U::empty());
    let visible = upload(ctx, &[0u32, 1, 2, 3], U::empty());
    let camera = upload(
        ctx,
        &[CubeCamera {
            view_projection: view_projection(),
            capacity: 4,
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
            instance_count: 4,
            first_index: 0,
            base_vertex: 0,
            first_instance: 0,
        },
    )
    .unwrap();
    let spheres_h = import(&mut g, "spheres", &spheres);
    let visible_h = import(&mut g, "visible", &visible);
    let camera_h = import(&mut g, "camera", &camera);
    let draw_h = draw.import(&mut g, "draw").unwrap();
    let target = IndexPickingTarget::create(&mut g, "ids", (W, H)).unwrap();
    InstancedCubes {
        id: "draw-ids".into(),
        color: target.color_attachment(),
        depth: Some(target.depth_attachment()),
        camera: camera_h,
        spheres: common::view(&g, spheres_h, VectorFormat::Float32x4, 0, 4),
        visible: common::view(&g, visible_h, VectorFormat::Uint32, 0, 4),
        draw: draw.clone(),
        draw_handle: draw_h,
        record: 0,
        cubes_per_instance: InstancedCubes::CUBES_PER_INSTANCE,
    }
    .add_to_graph(&mut g)
    .unwrap();
    let region = upload(ctx, &[PickRegion::default()], U::UNIFORM);
    let region_h = import(&mut g, "region", &region);
    // Outputs after a guard row, poisoned.
    let objects = upload(ctx, &vec![POISON; capacity as usize + 2], U::empty());
    let batches = upload(ctx, &vec![POISON; capacity as usize + 2], U::empty());
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
        objects: common::view(&g, oh, u1, 1, capacity),
        batches: common::view(&g, bh, u1, 1, capacity),
        count: common::view(&g, ch, u1, 1, 1),
        overflow: common::view(&g, ch, u1, 2, 1),
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

/// Texel (object, batch) at column x, row y of the read-back texture.
fn texel(t: &[u32], x: u32, y: u32) -> (u32, u32) {
    let i = (y * ROW / 4 + x * 2) as usize;
    (t[i], t[i + 1])
}

/// (object, batch) pairs, sorted.
type Pairs = Vec<(u32, u32)>;

/// Runs with `region`; returns (count, overflow, written pairs, CPU reference multiset).
fn run(
    ctx: &GpuContext,
    s: &mut Setup,
    region: PickRegion,
    capacity: usize,
) -> (u32, u32, Pairs, Pairs) {
    ctx.queue
        .write_buffer(&s.region, 0, bytemuck::bytes_of(&region));
    let poison = vec![POISON; capacity + 2];
    ctx.queue
        .write_buffer(&s.objects, 0, bytemuck::cast_slice(&poison));
    ctx.queue
        .write_buffer(&s.batches, 0, bytemuck::cast_slice(&poison));
    encode_wait(ctx, &mut s.compiled);
    let t = read_buffer(ctx, &s.texels);
    let mut reference = Vec::new();
    for y in region.y..(region.y.saturating_add(region.height)).min(H) {
        for x in region.x..(region.x.saturating_add(region.width)).min(W) {
            let p = texel(&t, x, y);
            if p.0 != NO_OBJECT {
                reference.push(p);
            }
        }
    }
    reference.sort();
    let counters = read_buffer(ctx, &s.counters);
    let objects = read_buffer(ctx, &s.objects);
    let batches = read_buffer(ctx, &s.batches);
    assert_eq!(
        (objects[0], batches[0], counters[0], counters[3]),
        (POISON, POISON, POISON, POISON),
        "guards"
    );
    let written = (counters[1] as usize).min(capacity);
    assert!(
        objects[1 + written..capacity + 2]
            .iter()
            .all(|&w| w == POISON),
        "past the count"
    );
    let mut pairs: Vec<(u32, u32)> = (0..written)
        .map(|i| (objects[1 + i], batches[1 + i]))
        .collect();
    pairs.sort();
    (counters[1], counters[2], pairs, reference)
}

/// Whether `sub` is a sub-multiset of `all` (both sorted).
fn sub_multiset(sub: &[(u32, u32)], all: &[(u32, u32)]) -> bool {
    let mut counts: BTreeMap<(u32, u32), i64> = BTreeMap::new();
    for p in all {
        *counts.entry(*p).or_default() += 1;
    }
    sub.iter().all(|p| {
        let c = counts.entry(*p).or_default();
        *c -= 1;
        *c >= 0
    })
}

#[test]
fn ids_land_where_the_cubes_project() {
    let ctx = ctx();
    let mut s = setup(&ctx, 4096);
    run(&ctx, &mut s, PickRegion::default(), 4096);
    let t = read_buffer(&ctx, &s.texels);
    let vp = view_projection();
    let pixel_of = |c: [f32; 4]| {
        let clip: [f32; 4] =
            std::array::from_fn(|r| (0..3).map(|k| vp[k][r] * c[k]).sum::<f32>() + vp[3][r]);
        (
            ((clip[0] / clip[3] + 1.0) / 2.0 * W as f32) as u32,
            ((1.0 - clip[1] / clip[3]) / 2.0 * H as f32) as u32,
        )
    };
    // Sphere 1 is nearer than 0 and covers its own center; 2 alone; 3 is above the view.
    for id in [1u32, 2] {
        let (x, y) = pixel_of(SPHERES[id as usize]);
        assert_eq!(texel(&t, x, y), (id, BATCH), "center of {id}");
    }
    assert_eq!(
        texel(&t, 0, 0),
        (NO_OBJECT, NO_OBJECT),
        "corner is background"
    );
    let ids: std::collections::BTreeSet<u32> = (0..H)
        .flat_map(|y| (0..W).map(move |x| (x, y)))
        .map(|(x, y)| texel(&t, x, y).0)
        .collect();
    assert_eq!(
        ids.into_iter().collect::<Vec<_>>(),
        vec![0, 1, 2, NO_OBJECT]
    );
    // The single-pixel copy reads the same texel.
    let (x, y) = pixel_of(SPHERES[2]);
    s.target.set_pixel(&s.pick, x, y).unwrap();
    encode_wait(&ctx, &mut s.compiled);
    assert_eq!(&read_buffer(&ctx, &s.pixel)[..2], &[2, BATCH]);
    assert!(s.target.set_pixel(&s.pick, W, 0).is_err());
}

#[test]
fn region_passes_match_the_cpu_reference() {
    let ctx = ctx();
    let cap = 4096usize;
    let mut s = setup(&ctx, cap as u64);
    let full = PickRegion {
        x: 0,
        y: 0,
        width: W,
        height: H,
    };
    // Empty region, background only, everything (overlaps: duplicates of 0 and 1), clipped.
    let cases = [
        PickRegion {
            x: 10,
            y: 10,
            width: 0,
            height: 5,
        },
        PickRegion {
            x: 0,
            y: 0,
            width: 3,
            height: 3,
        },
        full,
        PickRegion {
            x: W - 20,
            y: H - 10,
            width: 1000,
            height: u32::MAX,
        },
    ];
    for region in cases {
        let (count, overflow, pairs, reference) = run(&ctx, &mut s, region, cap);
        assert_eq!(count as usize, reference.len(), "{region:?}");
        assert_eq!((overflow, &pairs), (0, &reference), "{region:?}");
    }
    let (count, ..) = run(&ctx, &mut s, full, cap);
    assert!(count > 100, "the full frame covers many pixels: {count}");
    let (_, _, pairs, _) = run(&ctx, &mut s, full, cap);
    let zeros = pairs.iter().filter(|p| p.0 == 0).count();
    let ones = pairs.iter().filter(|p| p.0 == 1).count();
    assert!(
        zeros > 1 && ones > 1,
        "one pair per covered pixel: duplicates kept"
    );
}

#[test]
fn exact_capacity_fits_and_one_less_overflows() {
    let ctx = ctx();
    let full = PickRegion {
        x: 0,
        y: 0,
        width: W,
        height: H,
    };
    let mut probe = setup(&ctx, 4096);
    let (count, ..) = run(&ctx, &mut probe, full, 4096);
    let n = count as usize;
    let mut exact = setup(&ctx, n as u64);
    let (count, overflow, pairs, reference) = run(&ctx, &mut exact, full, n);
    assert_eq!((count as usize, overflow), (n, 0));
    assert_eq!(pairs, reference);
    let mut short = setup(&ctx, n as u64 - 1);
    let (count, overflow, pairs, reference) = run(&ctx, &mut short, full, n - 1);
    assert_eq!((count as usize, overflow, pairs.len()), (n, 1, n - 1));
    assert!(
        sub_multiset(&pairs, &reference),
        "written pairs come from the region"
    );
}
