//! End to end: the culling scene renders through depth, MSAA resolve and a render bundle
//! recorded once; changing only GPU-side data (the selection the workflow reads, hence the
//! GPU-written instance count) changes the rendered pixels, with no re-recording and no CPU
//! draw branch. Picking reads the drawn ID back. Plus DrawCommandBuffer's contracts.

mod common;

use common::*;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::GpuContext;
use gpugraph_render::camera::{look_at, mul, perspective};
use gpugraph_render::scene::padded_bytes_per_row;
use gpugraph_render::{
    CullScene, CullSceneOptions, DrawCommandBuffer, DrawLayout, RenderError, NO_OBJECT,
};
use wgpu::util::{DrawIndexedIndirectArgs, DrawIndirectArgs};

const INSTANCES: usize = 8;
const EYE: [f32; 3] = [0.0, 0.0, 30.0];

fn spheres() -> Vec<[f32; 4]> {
    (0..INSTANCES)
        .map(|i| [-14.0 + 4.0 * i as f32, 0.0, 0.0, 1.2])
        .collect()
}

fn map(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Vec<u8> {
    gpugraph_testing::map_read(ctx, buffer)
}

/// Renders one frame; returns (covered pixels, instance count, picked word).
fn frame(ctx: &GpuContext, scene: &mut CullScene) -> (usize, u32, u32) {
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    scene.encode(&mut enc, false).unwrap();
    ctx.queue.submit([enc.finish()]);
    let o = scene.options();
    let image = map(ctx, scene.image_buffer().unwrap());
    let row = padded_bytes_per_row(o.width) as usize;
    let background = &image[0..4];
    let mut covered = 0;
    for y in 0..o.height as usize {
        for x in 0..o.width as usize {
            let p = &image[y * row + x * 4..y * row + x * 4 + 4];
            covered += usize::from(p != background);
        }
    }
    let count = read_buffer(ctx, scene.draw().buffer())[1];
    let picked = read_buffer(ctx, scene.pick_buffer().unwrap())[0];
    (covered, count, picked)
}

#[test]
fn gpu_written_counts_alone_change_the_rendered_image() {
    let ctx = ctx();
    for msaa in [4, 1] {
        let options = CullSceneOptions {
            width: 160,
            height: 64,
            msaa,
            picking: true,
            readback: true,
            cubes_per_instance: gpugraph_render::InstancedCubes::CUBES_PER_INSTANCE,
        };
        let mut scene = CullScene::new(&ctx.device, &ctx.queue, &spheres(), None, options).unwrap();
        scene.set_camera(&ctx.queue, EYE, [0.0, 0.0, 0.0]);
        // The pixel under instance 5's center.
        let vp = mul(
            &perspective(60f32.to_radians(), 160.0 / 64.0, 0.5, 400.0),
            &look_at(EYE, [0.0; 3], [0.0, 1.0, 0.0]),
        );
        let c = spheres()[5];
        let clip: [f32; 4] =
            std::array::from_fn(|r| (0..3).map(|k| vp[k][r] * c[k]).sum::<f32>() + vp[3][r]);
        let px = ((clip[0] / clip[3] + 1.0) / 2.0 * 160.0) as u32;
        let py = ((1.0 - clip[1] / clip[3]) / 2.0 * 64.0) as u32;
        scene.set_pick(px, py).unwrap();

        let mut run = |selected: &dyn Fn(usize) -> bool| {
            let selection: Vec<u32> = (0..INSTANCES).map(|i| u32::from(selected(i))).collect();
            scene.set_selection(&ctx.queue, &selection).unwrap();
            frame(&ctx, &mut scene)
        };
        let all = run(&|_| true);
        let first = run(&|i| i < 4);
        let second = run(&|i| i >= 4);
        let none = run(&|_| false);
        assert_eq!(
            (all.1, first.1, second.1, none.1),
            (8, 4, 4, 0),
            "msaa {msaa}"
        );
        assert_eq!(none.0, 0, "nothing selected draws nothing (msaa {msaa})");
        assert!(
            first.0 > 0 && second.0 > 0,
            "msaa {msaa}: {first:?} {second:?}"
        );
        // The cubes do not overlap on screen: pixels add up exactly.
        assert_eq!(all.0, first.0 + second.0, "msaa {msaa}");
        // Picking sees instance 5 (batch 0) only while it is drawn.
        let n = NO_OBJECT;
        assert_eq!(
            (all.2, first.2, second.2, none.2),
            (5, n, 5, n),
            "msaa {msaa}"
        );
    }
}

#[test]
fn picking_outside_the_image_is_a_named_error() {
    let ctx = ctx();
    let options = CullSceneOptions {
        width: 32,
        height: 16,
        msaa: 1,
        picking: true,
        readback: true,
        cubes_per_instance: gpugraph_render::InstancedCubes::CUBES_PER_INSTANCE,
    };
    let scene = CullScene::new(&ctx.device, &ctx.queue, &spheres(), None, options).unwrap();
    let e = scene.set_pick(32, 0).unwrap_err();
    assert!(
        matches!(
            e,
            RenderError::PickOutside {
                x: 32,
                width: 32,
                ..
            }
        ),
        "{e}"
    );
    let e = scene.set_selection(&ctx.queue, &[1, 2]).unwrap_err();
    assert!(matches!(e, RenderError::ChunkMismatch { .. }), "{e}");
}

#[test]
fn draw_command_buffers_validate_what_they_borrow() {
    let ctx = ctx();
    let make = |size, usage| {
        ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    let good = make(64, U::STORAGE | U::INDIRECT | U::COPY_SRC | U::COPY_DST);
    let d = DrawCommandBuffer::borrow(&good, "b", 24, DrawLayout::DrawIndexed, 2).unwrap();
    assert!(!d.is_owned());
    assert_eq!(d.record_byte_offset(1).unwrap(), 44);
    assert_eq!(d.instance_count_byte_offset(1).unwrap(), 48);
    let data = d.instance_count_data(1).unwrap();
    assert_eq!((data.byte_offset(), data.len()), (48, 1));
    assert!(matches!(
        d.record_byte_offset(2),
        Err(RenderError::NoSuchRecord {
            index: 2,
            records: 2,
            ..
        })
    ));
    // 24 + 2·20 = 64 fits exactly; one more byte of offset does not (and is unaligned).
    let e = DrawCommandBuffer::borrow(&good, "b", 28, DrawLayout::DrawIndexed, 2).unwrap_err();
    assert!(
        matches!(
            e,
            RenderError::DrawBufferRange {
                needed: 40,
                size: 64,
                ..
            }
        ),
        "{e}"
    );
    let e = DrawCommandBuffer::borrow(&good, "b", 2, DrawLayout::Draw, 1).unwrap_err();
    assert!(matches!(e, RenderError::DrawBufferRange { .. }), "{e}");
    let plain = make(64, U::STORAGE | U::COPY_DST);
    let e = DrawCommandBuffer::borrow(&plain, "p", 0, DrawLayout::Draw, 1).unwrap_err();
    assert!(
        matches!(e, RenderError::DrawBufferUsage { missing, .. } if missing == U::INDIRECT),
        "{e}"
    );
    let e = d
        .write_draw(
            &ctx.queue,
            0,
            DrawIndirectArgs {
                vertex_count: 3,
                instance_count: 1,
                first_vertex: 0,
                first_instance: 0,
            },
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            RenderError::WrongLayout {
                layout: "drawIndexed",
                requested: "draw",
                ..
            }
        ),
        "{e}"
    );
    // Records land at their offsets, in their layout.
    d.write_draw_indexed(
        &ctx.queue,
        1,
        DrawIndexedIndirectArgs {
            index_count: 36,
            instance_count: 7,
            first_index: 1,
            base_vertex: -2,
            first_instance: 0,
        },
    )
    .unwrap();
    let words = read_buffer(&ctx, &good);
    assert_eq!(&words[11..16], &[36, 7, 1, (-2i32) as u32, 0]);
    let owned = DrawCommandBuffer::create(&ctx.device, "o", DrawLayout::Draw, 3);
    assert!(owned.is_owned());
    assert_eq!(owned.buffer().size(), 48);
    // Destroying a borrowed wrapper leaves the caller's buffer usable.
    d.destroy();
    assert_eq!(read_buffer(&ctx, &good)[12], 7);
}

/// The draw is recorded once into a render bundle at compile time: an import override cannot
/// reach it and fails the encode by name instead of drawing from the compiled buffer.
#[test]
fn the_bundle_is_recorded_once_and_refuses_overrides() {
    use gpugraph_command::{
        ColorAttachment, ColorLoad, CommandGraph, EncodeOptions, GraphError, TextureDescriptor,
        VectorFormat,
    };
    use gpugraph_render::{CubeCamera, InstancedCubes};
    let ctx = ctx();
    let mut g = CommandGraph::new("bundle", &ctx.device);
    let spheres = upload(&ctx, &spheres(), U::empty());
    let visible = upload(&ctx, &[0u32, 1], U::empty());
    let camera = upload(
        &ctx,
        &[CubeCamera {
            view_projection: [[0.0; 4]; 4],
            capacity: 2,
            batch: 0,
            pad: [0; 2],
        }],
        U::UNIFORM,
    );
    let draw = DrawCommandBuffer::create(&ctx.device, "draw", DrawLayout::DrawIndexed, 1);
    let other = DrawCommandBuffer::create(&ctx.device, "other", DrawLayout::DrawIndexed, 1);
    let target = g
        .create_texture(TextureDescriptor::new(
            "target",
            (8, 8),
            wgpu::TextureFormat::Rgba8Unorm,
            wgpu::TextureUsages::RENDER_ATTACHMENT,
        ))
        .unwrap();
    let (sh, vh, ch) = (
        import(&mut g, "spheres", &spheres),
        import(&mut g, "visible", &visible),
        import(&mut g, "camera", &camera),
    );
    let draw_h = draw.import(&mut g, "draw").unwrap();
    InstancedCubes {
        id: "cubes".into(),
        color: ColorAttachment::new(target, ColorLoad::Clear(wgpu::Color::BLACK)),
        depth: None,
        camera: ch,
        spheres: common::view(&g, sh, VectorFormat::Float32x4, 0, 8),
        visible: common::view(&g, vh, VectorFormat::Uint32, 0, 2),
        draw: draw.clone(),
        draw_handle: draw_h,
        record: 0,
        cubes_per_instance: InstancedCubes::CUBES_PER_INSTANCE,
    }
    .add_to_graph(&mut g)
    .unwrap();
    let mut c = g.compile().unwrap();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    c.encode(&mut enc, &EncodeOptions::default()).unwrap();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    // The draw record is read by the batching dispatch (overridable); the bundle's own
    // buffers are not.
    let overrides = [(vh, other.buffer())];
    let e = c
        .encode(
            &mut enc,
            &EncodeOptions {
                overrides: &overrides,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::NodeEncode { node, .. } if node == "cubes")
            && e.to_string().contains("bundle"),
        "{e}"
    );
    // A draw buffer of the wrong layout is refused when the node is added.
    let mut g = CommandGraph::new("bundle-layout", &ctx.device);
    let target = g
        .create_texture(TextureDescriptor::new(
            "target",
            (8, 8),
            wgpu::TextureFormat::Rgba8Unorm,
            wgpu::TextureUsages::RENDER_ATTACHMENT,
        ))
        .unwrap();
    let plain = DrawCommandBuffer::create(&ctx.device, "plain", DrawLayout::Draw, 1);
    let (sh, vh, ch) = (
        import(&mut g, "spheres", &spheres),
        import(&mut g, "visible", &visible),
        import(&mut g, "camera", &camera),
    );
    let plain_h = plain.import(&mut g, "plain").unwrap();
    let e = InstancedCubes {
        id: "cubes".into(),
        color: ColorAttachment::new(target, ColorLoad::Clear(wgpu::Color::BLACK)),
        depth: None,
        camera: ch,
        spheres: common::view(&g, sh, VectorFormat::Float32x4, 0, 8),
        visible: common::view(&g, vh, VectorFormat::Uint32, 0, 2),
        draw: plain,
        draw_handle: plain_h,
        record: 0,
        cubes_per_instance: InstancedCubes::CUBES_PER_INSTANCE,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(matches!(e, RenderError::WrongLayout { .. }), "{e}");
}
