//! The GPUScene consumer frame (spec 6.2 with Phase 2 visibility) on the GPU: scene spheres
//! and flags (strided field views) through the visibility workflow into a mask, stable
//! compaction, draw generation over the mask (or over the compacted list with its GPU count,
//! as `GpuSceneFrame` runs it, with the published list classified) and resource groups, all
//! against their oracles; a camera move changes the picture's inputs with no recompilation.

mod scene_support;

use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{BufferDescriptor, CommandGraph, DataView};
use gpugraph_render::camera::{look_at, mul, perspective};
use gpugraph_render::gpu_scene::cpu;
use gpugraph_render::gpu_scene::{
    GpuSceneFrame, GpuSceneFrameOptions, GpuSceneLayer, GpuSceneMutation,
};
use gpugraph_render::{
    Bounds, DrawLayout, GpuSceneDrawGeneration, GpuSceneGroup, GpuSceneResourceGroups,
    GpuSceneVisibleRows, ViewParams, VisibilityWorkflow,
};
use scene_support::*;

/// The consumer's frame: scene spheres (strided) and flags (strided, as the selection)
/// through the visibility workflow into a mask, draw generation over the mask, groups. A
/// camera move is a uniform write: new mask, commands and counts, same compiled graph.
#[test]
fn camera_change_reselects_without_recompiling() {
    for listed in [false, true] {
        camera_change_reselects(listed);
    }
}

/// `listed`: draw generation over the compacted visible list and its count, groups over the
/// published list (the frame's path); otherwise over the mask and every command.
fn camera_change_reselects(listed: bool) {
    let d = scene_device();
    let mut rng = rng(13);
    let n = 700u32;
    let slots = 512u32;
    let mut scene = scene_with_holes(&d, &mut rng, n, slots);
    scene
        .mutate(
            &d.queue,
            &GpuSceneMutation {
                insert: vec![random_record(&mut rng, 1, 20.0, slots)],
                ..Default::default()
            },
        )
        .unwrap();
    let view_buffer = d.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("view"),
        size: ViewParams::BYTES,
        usage: U::UNIFORM | U::COPY_DST,
        mapped_at_creation: false,
    });
    let camera = |eye: [f32; 3]| {
        let vp = mul(
            &perspective(50f32.to_radians(), 1.0, 0.5, 100.0),
            &look_at(eye, [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
        );
        ViewParams::new(&vp, eye)
    };
    let mut g = CommandGraph::new("frame", &d.device);
    let views = scene.import_to_graph(&mut g, "scene").unwrap();
    let view_h = g
        .import_buffer(
            BufferDescriptor::new("view", ViewParams::BYTES, U::UNIFORM),
            &view_buffer,
        )
        .unwrap();
    let (draw, init) = commands(&d, DrawLayout::DrawIndexed, slots);
    let handle = draw.import(&mut g, "commands").unwrap();
    let mask = Words::new(&d, &mut g, "mask", u64::from(n));
    let visible = Words::new(&d, &mut g, "visible", u64::from(n) + 2);
    let diag = Words::new(&d, &mut g, "diag", 3);
    let groups = [
        GpuSceneGroup {
            id: 0,
            first_command: 0,
            command_count: 200,
            geometry_id: None,
        },
        GpuSceneGroup {
            id: 1,
            first_command: 200,
            command_count: 200,
            geometry_id: None,
        },
        GpuSceneGroup {
            id: 2,
            first_command: 400,
            command_count: 112,
            geometry_id: None,
        },
        GpuSceneGroup {
            id: 3,
            first_command: 512,
            command_count: 0,
            geometry_id: None,
        },
    ];
    let group_diag = Words::new(&d, &mut g, "group-diag", 9);
    let vv = |g: &CommandGraph, v: DataView| g.create_vector_view(vec![v]).unwrap();
    VisibilityWorkflow {
        id: "visibility".into(),
        view: view_h,
        bounds: Bounds::Spheres(vv(&g, views.sphere)),
        time_range: None,
        lod: None,
        selection: Some(vv(&g, views.flags)),
        ids: None,
        mask: Some(vv(&g, mask.view(&g, 0, u64::from(n)))),
        output: vv(&g, visible.view(&g, 0, u64::from(n))),
        count: visible.view(&g, u64::from(n), 1),
        overflow: Some(visible.view(&g, u64::from(n) + 1, 1)),
    }
    .add_to_graph(&mut g)
    .unwrap();
    let generated = GpuSceneDrawGeneration {
        id: "gen".into(),
        scene: views,
        visibility: (!listed).then(|| mask.view(&g, 0, u64::from(n))),
        visible_rows: listed.then(|| GpuSceneVisibleRows {
            rows: visible.view(&g, 0, u64::from(n)),
            count: visible.view(&g, u64::from(n), 1),
        }),
        commands: draw.clone(),
        command_handle: handle,
        required_count: diag.view(&g, 0, 1),
        published_count: diag.view(&g, 1, 1),
        overflow: diag.view(&g, 2, 1),
        groups: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    GpuSceneResourceGroups {
        id: "groups".into(),
        scene: views,
        commands: draw.clone(),
        command_handle: handle,
        groups: groups.to_vec(),
        counts: group_diag.view(&g, 0, 4),
        group_flags: group_diag.view(&g, 4, 4),
        overflow: group_diag.view(&g, 8, 1),
        live_commands: listed.then_some(generated.published),
    }
    .add_to_graph(&mut g)
    .unwrap();
    let mut compiled = g.compile().unwrap();
    let compiles = compiled.cache().stats().pipelines_created;
    let records = slots_records(&scene);
    let mut seen = Vec::new();
    for eye in [[0.0, 0.0, 45.0], [30.0, 10.0, -20.0], [0.0, 60.0, 1.0]] {
        let view = camera(eye);
        d.queue
            .write_buffer(&view_buffer, 0, bytemuck::bytes_of(&view));
        for w in [&mask, &visible, &diag, &group_diag] {
            w.poison(&d);
        }
        encode_wait(&d, &mut compiled);
        let want_mask = cpu::sphere_visibility(&records, &view);
        assert_eq!(mask.read(&d), want_mask, "eye {eye:?}: mask");
        let ids: Vec<u32> = (0..n).filter(|&r| want_mask[r as usize] != 0).collect();
        let got = visible.read(&d);
        assert_eq!(
            got[n as usize],
            ids.len() as u32,
            "eye {eye:?}: visible count"
        );
        assert_eq!(
            &got[..ids.len()],
            &ids[..],
            "eye {eye:?}: stable compaction"
        );
        let gen = cpu::draw_generation(&records, Some(&want_mask), slots);
        check_commands(
            &read_words(&d, draw.buffer()),
            &init,
            DrawLayout::DrawIndexed,
            &gen.commands,
            "frame",
        );
        assert_eq!(
            diag.read(&d),
            vec![gen.required_count, gen.published_count, gen.overflow]
        );
        let want = cpu::resource_groups(&records, &gen.commands, &groups);
        let got = group_diag.read(&d);
        assert_eq!(
            got,
            [
                want.counts.clone(),
                want.group_flags.clone(),
                vec![want.overflow]
            ]
            .concat()
        );
        seen.push(gen.published_count);
    }
    assert_eq!(
        compiled.cache().stats().pipelines_created,
        compiles,
        "no recompilation"
    );
    assert!(
        seen.windows(2).any(|w| w[0] != w[1]),
        "the camera changed the counts: {seen:?}"
    );
    assert!(
        seen.iter().all(|&c| c > 0),
        "every view sees something: {seen:?}"
    );
}

/// `GpuSceneFrame` itself (the listed path wired by the frame) over a scene with holes and
/// colliding slots, frame after frame with cameras that see a few rows, none, every one and a
/// few again: each frame's diagnostics equal `cpu::frame_diagnostics` and every command equals
/// the oracle's (so what the frame before published is cleared), with nothing recompiled.
#[test]
fn frame_follows_the_visible_rows_frame_after_frame() {
    let d = scene_device();
    let mut rng = rng(17);
    let (n, slots) = (4000u32, 3000u32);
    let scene = scene_with_holes(&d, &mut rng, n, slots);
    let records = slots_records(&scene);
    let (draw, init) = commands(&d, DrawLayout::DrawIndexed, slots);
    let groups: Vec<GpuSceneGroup> = (0..3u32)
        .map(|g| GpuSceneGroup {
            id: g,
            first_command: g * 1000,
            command_count: 1000,
            geometry_id: (g == 1).then_some(1),
        })
        .collect();
    let mut frame = GpuSceneFrame::new(
        &d.device,
        &[GpuSceneLayer {
            scene: &scene,
            commands: &draw,
            groups: &groups,
            colors: &[],
            upload: None,
        }],
        &[],
        &[],
        GpuSceneFrameOptions {
            width: 64,
            height: 64,
            draw: false,
            picking: false,
            readback: false,
        },
    )
    .unwrap();
    let compiles = frame.pipelines_created();
    // (eye, target, far plane): a corner, away from everything, everything, another corner.
    let cameras = [
        ([0.0, 0.0, 45.0], [5.0, 5.0, 0.0], 100.0),
        ([0.0, 0.0, 45.0], [0.0, 0.0, 200.0], 100.0),
        ([0.0, 0.0, 400.0], [0.0, 0.0, 0.0], 1000.0),
        ([30.0, 10.0, -20.0], [0.0, 0.0, 0.0], 100.0),
        ([0.0, 0.0, 45.0], [0.0, 0.0, 200.0], 100.0),
    ];
    let mut visible = Vec::new();
    for (k, (eye, target, far)) in cameras.into_iter().enumerate() {
        let vp = mul(
            &perspective(50f32.to_radians(), 1.0, 0.5, far),
            &look_at(eye, target, [0.0, 1.0, 0.0]),
        );
        frame.set_camera(&d.queue, &vp, eye);
        let mut enc = d.device.create_command_encoder(&Default::default());
        frame.encode(&mut enc, false).unwrap();
        d.queue.submit([enc.finish()]);
        d.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        let words = read_words(&d, frame.diagnostics_buffer());
        let got = frame.decode_diagnostics(&words).unwrap();
        let view = ViewParams::new(&vp, eye);
        let want = cpu::frame_diagnostics(&records, &view, slots, &groups);
        assert_eq!(got[0], want, "camera {k}");
        let mask = cpu::sphere_visibility(&records, &view);
        let gen = cpu::draw_generation(&records, Some(&mask), slots);
        check_commands(
            &read_words(&d, draw.buffer()),
            &init,
            DrawLayout::DrawIndexed,
            &gen.commands,
            &format!("camera {k}"),
        );
        visible.push(want.visible);
    }
    assert_eq!(frame.pipelines_created(), compiles, "no recompilation");
    let active = records.iter().filter(|r| r.is_active()).count() as u32;
    assert_eq!(visible[1], 0, "{visible:?}");
    assert_eq!(visible[2], active, "{visible:?}");
    assert!(visible[0] > 0 && visible[0] < active, "{visible:?}");
}
