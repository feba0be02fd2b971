//! GPUScene draw generation and resource groups (spec 6.2) on the GPU against their oracles:
//! slot claiming with collisions and out-of-range slots over boundary sizes, preserved
//! renderer arguments, poisoned diagnostics, group classification (empty, misplaced,
//! mismatched, unknown, stale rows), reclassification after mutation and after a visibility
//! change with no recompilation; the listed path (a compacted visible-row list with a GPU
//! count, the published list classified) across re-encodes whose lists change. The
//! camera-driven frame: `gpu_scene_frame.rs`.

mod scene_support;

use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    BufferDescriptor, CommandGraph, CompiledGraph, DataViewDescriptor, VectorFormat,
};
use gpugraph_render::gpu_scene::cpu;
use gpugraph_render::gpu_scene::{
    GpuSceneFieldValue, GpuSceneMutation, GpuScenePatch, GpuSceneRecord,
    GPU_SCENE_DRAW_ROW_TILE as TILE, GROUP_GEOMETRY_MISMATCH, GROUP_MISPLACED, SCENE_INVALID_ROW,
    SCENE_UNKNOWN_GROUP,
};
use gpugraph_render::{
    DrawCommandBuffer, DrawLayout, GpuScene, GpuSceneDrawGeneration, GpuSceneDrawOutput,
    GpuSceneGroup, GpuSceneGroupClassification, GpuSceneResourceGroups, GpuSceneViews,
    GpuSceneVisibleRows, RenderError,
};
use rand::Rng;
use scene_support::*;

struct Generation {
    compiled: CompiledGraph,
    diag: Words,
    visibility: Option<wgpu::Buffer>,
}

fn build_generation(
    d: &SceneDevice,
    scene: &GpuScene,
    draw: &DrawCommandBuffer,
    visibility: Option<&[u32]>,
) -> Generation {
    let mut g = CommandGraph::new("gen", &d.device);
    let views = scene.import_to_graph(&mut g, "scene").unwrap();
    let handle = draw.import(&mut g, "commands").unwrap();
    let diag = Words::new(d, &mut g, "diag", 3);
    let vis_buffer = visibility.map(|v| upload_words(d, v, U::empty()));
    let vis_view = vis_buffer.as_ref().map(|b| {
        let h = g
            .import_buffer(BufferDescriptor::new("vis", b.size(), U::STORAGE), b)
            .unwrap();
        g.create_packed_view(h, VectorFormat::Uint32, u64::from(scene.capacity()))
            .unwrap()
    });
    GpuSceneDrawGeneration {
        id: "gen".into(),
        scene: views,
        visibility: vis_view,
        visible_rows: None,
        commands: draw.clone(),
        command_handle: handle,
        required_count: diag.view(&g, 0, 1),
        published_count: diag.view(&g, 1, 1),
        overflow: diag.view(&g, 2, 1),
        groups: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    Generation {
        compiled: g.compile().unwrap(),
        diag,
        visibility: vis_buffer,
    }
}

#[test]
fn draw_generation_matches_the_oracle_across_sizes() {
    let d = scene_device();
    let mut rng = rng(11);
    let cases = [
        (0u32, 4u32),
        (1, 1),
        (1, 0),
        (255, 64),
        (256, 7),
        (257, 300),
        (1000, 256),
        // A workgroup of claim and publish takes GPU_SCENE_DRAW_ROW_TILE rows: its boundary,
        // several tiles and a partial last one.
        (TILE - 1, TILE + 5),
        (TILE, 700),
        (TILE + 1, TILE + 1),
        (2 * TILE + 300, 2000),
    ];
    for (k, (n, slots)) in cases.into_iter().enumerate() {
        // Owned scenes read the draw keys view; borrowed ones (the odd cases) the records.
        for layout in [DrawLayout::Draw, DrawLayout::DrawIndexed] {
            let owned = scene_with_holes(&d, &mut rng, n, slots);
            let records = slots_records(&owned);
            let twin = (k % 2 == 1).then(|| borrowed_twin(&d, &owned));
            let scene = twin.as_ref().unwrap_or(&owned);
            let visibility: Option<Vec<u32>> =
                (k % 2 == 0).then(|| (0..n).map(|_| u32::from(rng.random_bool(0.7))).collect());
            let (draw, init) = commands(&d, layout, slots);
            let mut gen = build_generation(&d, scene, &draw, visibility.as_deref());
            encode_wait(&d, &mut gen.compiled);
            let want = cpu::draw_generation(&records, visibility.as_deref(), slots);
            let ctx = format!(
                "{n} rows, {slots} {layout:?} slots, keyed {}",
                twin.is_none()
            );
            check_commands(
                &read_words(&d, draw.buffer()),
                &init,
                layout,
                &want.commands,
                &ctx,
            );
            assert_eq!(
                gen.diag.read(&d),
                vec![want.required_count, want.published_count, want.overflow],
                "{ctx}: required, published, overflow"
            );
            // Visibility is a buffer write away: re-encode the same graph, nothing compiles.
            if let (Some(vis), Some(_)) = (&gen.visibility, &visibility) {
                let flipped: Vec<u32> = (0..n).map(|_| u32::from(rng.random_bool(0.5))).collect();
                if n > 0 {
                    d.queue.write_buffer(vis, 0, bytemuck::cast_slice(&flipped));
                }
                gen.diag.poison(&d);
                let before = gen.compiled.cache().stats().pipelines_created;
                encode_wait(&d, &mut gen.compiled);
                assert_eq!(gen.compiled.cache().stats().pipelines_created, before);
                let want = cpu::draw_generation(&records, Some(&flipped), slots);
                check_commands(
                    &read_words(&d, draw.buffer()),
                    &init,
                    layout,
                    &want.commands,
                    &ctx,
                );
                assert_eq!(
                    gen.diag.read(&d),
                    vec![want.required_count, want.published_count, want.overflow],
                    "{ctx}: after the visibility change"
                );
            }
        }
    }
}

/// Collisions at the exact capacity boundary: slot `capacity - 1` claimed by three rows
/// (lowest wins), slot `capacity` by one (out of range), with nothing else eligible.
#[test]
fn collisions_and_the_capacity_boundary() {
    let d = scene_device();
    let slots = 5u32;
    let mut records: Vec<GpuSceneRecord> = (0..8)
        .map(|i| GpuSceneRecord::new(i + 1).with_command_slot(i % 4))
        .collect();
    records[5].command_slot = slots - 1;
    records[6].command_slot = slots - 1;
    records[7].command_slot = slots - 1;
    records[4].command_slot = slots;
    let scene = GpuScene::new(&d.device, &d.queue, "s", 8, &records).unwrap();
    let (draw, init) = commands(&d, DrawLayout::DrawIndexed, slots);
    let mut gen = build_generation(&d, &scene, &draw, None);
    encode_wait(&d, &mut gen.compiled);
    let got = read_words(&d, draw.buffer());
    let want = vec![(1, 0), (1, 1), (1, 2), (1, 3), (1, 5)];
    check_commands(&got, &init, DrawLayout::DrawIndexed, &want, "boundary");
    assert_eq!(cpu::draw_generation(&records, None, slots).commands, want);
    assert_eq!(gen.diag.read(&d), vec![8, 5, 1]);
    // Exactly at capacity, no collision: complete.
    let records: Vec<GpuSceneRecord> = (0..5)
        .map(|i| GpuSceneRecord::new(i + 1).with_command_slot(4 - i))
        .collect();
    let scene = GpuScene::new(&d.device, &d.queue, "s", 5, &records).unwrap();
    let mut gen = build_generation(&d, &scene, &draw, None);
    encode_wait(&d, &mut gen.compiled);
    assert_eq!(gen.diag.read(&d), vec![5, 5, 0]);
}

/// A read-only scene borrowing `scene`'s record buffer: no packed views, so its draw
/// generation and classification read the records.
fn borrowed_twin(d: &SceneDevice, scene: &GpuScene) -> GpuScene {
    let twin = GpuScene::borrow_records(
        &d.device,
        &d.queue,
        "twin",
        scene.record_buffer(),
        0,
        scene.capacity(),
        scene.state().active_count,
    )
    .unwrap();
    assert!(twin.key_buffer().is_none() && scene.key_buffer().is_some());
    twin
}

/// The keyed path reads each row's flags, group, geometry and command slot from the draw keys
/// view alone: with those record words overwritten behind the keys' back (poison, every row
/// inactive by its record), generation and classification still match the oracle over the
/// scene's records, while the records path over the same buffer sees nothing live.
#[test]
fn keyed_generation_reads_the_keys_alone() {
    let d = scene_device();
    let mut rng = rng(21);
    let slots = 64;
    let groups = listed_groups(slots);
    let scene = scene_with_holes(&d, &mut rng, 300, slots);
    let records = slots_records(&scene);
    // Words 1..4 (flags, group, geometry) to 0 and word 11 (command slot) to poison.
    for s in 0..scene.capacity() {
        let at = scene.record_byte_offset(s).unwrap();
        d.queue
            .write_buffer(scene.record_buffer(), at + 4, &[0u8; 12]);
        d.queue
            .write_buffer(scene.record_buffer(), at + 44, &POISON.to_ne_bytes());
    }
    let twin = borrowed_twin(&d, &scene);
    let gen = cpu::draw_generation(&records, None, slots);
    let want = cpu::resource_groups(&records, &gen.commands, &groups);
    assert!(gen.published_count > 10, "a scene with draws");
    for (which, s) in [("keys", &scene), ("records", &twin)] {
        let (draw, init) = commands(&d, DrawLayout::DrawIndexed, slots);
        let mut c = build_groups(&d, s, &draw, &groups, true);
        c.gen_diag.poison(&d);
        c.group_diag.poison(&d);
        encode_wait(&d, &mut c.compiled);
        let got = c.gen_diag.read(&d);
        if which == "keys" {
            check_commands(
                &read_words(&d, draw.buffer()),
                &init,
                DrawLayout::DrawIndexed,
                &gen.commands,
                which,
            );
            assert_eq!(
                got,
                vec![gen.required_count, gen.published_count, gen.overflow]
            );
            check_groups(&d, &c, &want, which);
        } else {
            assert_eq!(got, vec![0, 0, 0], "no record is live by its words");
        }
    }
}

struct Classified {
    compiled: CompiledGraph,
    gen_diag: Words,
    group_diag: Words,
}

fn build_groups(
    d: &SceneDevice,
    scene: &GpuScene,
    draw: &DrawCommandBuffer,
    groups: &[GpuSceneGroup],
    generate: bool,
) -> Classified {
    let mut g = CommandGraph::new("groups", &d.device);
    let views: GpuSceneViews = scene.import_to_graph(&mut g, "scene").unwrap();
    let handle = draw.import(&mut g, "commands").unwrap();
    let gen_diag = Words::new(d, &mut g, "gen-diag", 3);
    let n = groups.len() as u64;
    let group_diag = Words::new(d, &mut g, "group-diag", 2 * n + 1);
    if generate {
        GpuSceneDrawGeneration {
            id: "gen".into(),
            scene: views,
            visibility: None,
            visible_rows: None,
            commands: draw.clone(),
            command_handle: handle,
            required_count: gen_diag.view(&g, 0, 1),
            published_count: gen_diag.view(&g, 1, 1),
            overflow: gen_diag.view(&g, 2, 1),
            groups: None,
        }
        .add_to_graph(&mut g)
        .unwrap();
    }
    GpuSceneResourceGroups {
        id: "groups".into(),
        scene: views,
        commands: draw.clone(),
        command_handle: handle,
        groups: groups.to_vec(),
        counts: group_diag.view(&g, 0, n),
        group_flags: group_diag.view(&g, n, n),
        overflow: group_diag.view(&g, 2 * n, 1),
        live_commands: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    Classified {
        compiled: g.compile().unwrap(),
        gen_diag,
        group_diag,
    }
}

fn check_groups(d: &SceneDevice, c: &Classified, want: &cpu::ResourceGroupResult, ctx: &str) {
    let n = want.counts.len();
    let got = c.group_diag.read(d);
    assert_eq!(&got[..n], &want.counts[..], "{ctx}: counts");
    assert_eq!(&got[n..2 * n], &want.group_flags[..], "{ctx}: group flags");
    assert_eq!(got[2 * n], want.overflow, "{ctx}: overflow");
}

/// Generation then classification in one graph; a scene mutation and re-encode reclassify
/// with the same compiled graph.
#[test]
fn resource_groups_match_the_oracle_and_reclassify_after_mutation() {
    let d = scene_device();
    let mut rng = rng(12);
    // Records use groups 0..4; group 3 has no descriptor; group 2 is empty.
    let groups = [
        GpuSceneGroup {
            id: 1,
            first_command: 0,
            command_count: 20,
            geometry_id: None,
        },
        GpuSceneGroup {
            id: 0,
            first_command: 20,
            command_count: 30,
            geometry_id: Some(1),
        },
        GpuSceneGroup {
            id: 2,
            first_command: 50,
            command_count: 0,
            geometry_id: None,
        },
    ];
    for (k, n) in [0u32, 1, 257, 600, 0, 1, 257, 600].into_iter().enumerate() {
        let slots = 64;
        let mut scene = scene_with_holes(&d, &mut rng, n, slots);
        // The second half: a borrowed twin over the same records (the records path), which
        // sees every mutation of the owned scene's records.
        let twin = (k >= 4).then(|| borrowed_twin(&d, &scene));
        let (draw, _) = commands(&d, DrawLayout::DrawIndexed, slots);
        let mut c = build_groups(&d, twin.as_ref().unwrap_or(&scene), &draw, &groups, true);
        let compiles = c.compiled.cache().stats().pipelines_created;
        for round in 0..3 {
            encode_wait(&d, &mut c.compiled);
            let records = slots_records(&scene);
            let gen = cpu::draw_generation(&records, None, slots);
            let ctx = format!("{n} rows, round {round}, keyed {}", twin.is_none());
            assert_eq!(
                c.gen_diag.read(&d),
                vec![gen.required_count, gen.published_count, gen.overflow],
                "{ctx}"
            );
            check_groups(
                &d,
                &c,
                &cpu::resource_groups(&records, &gen.commands, &groups),
                &ctx,
            );
            // Regroup some live records and drop others: the next encode must follow.
            let live: Vec<u32> = scene
                .active_records()
                .iter()
                .map(|(_, r)| r.object_id)
                .collect();
            let mut m = GpuSceneMutation::default();
            for (i, id) in live.into_iter().enumerate() {
                match (i + round) % 5 {
                    0 => m.patch.push(GpuScenePatch {
                        id,
                        values: vec![
                            GpuSceneFieldValue::GroupId(rng.random_range(0..4)),
                            GpuSceneFieldValue::CommandSlot(rng.random_range(0..slots + 1)),
                        ],
                    }),
                    1 => m.remove.push(id),
                    _ => {}
                }
            }
            scene.mutate(&d.queue, &m).unwrap();
            c.group_diag.poison(&d);
            c.gen_diag.poison(&d);
        }
        assert_eq!(
            c.compiled.cache().stats().pipelines_created,
            compiles,
            "no recompilation"
        );
    }
}

/// Commands a renderer left live for rows that are gone or past the scene: the global
/// invalid-row flag; every per-group case on hand-placed commands.
#[test]
fn resource_groups_flag_stale_and_misplaced_commands() {
    let d = scene_device();
    let records = vec![
        GpuSceneRecord::new(1).with_group(10).with_geometry(3),
        GpuSceneRecord::new(2).with_group(10).with_geometry(4),
        GpuSceneRecord::new(3).with_group(20),
        GpuSceneRecord::new(4).with_group(30),
        GpuSceneRecord::new(5).with_group(99),
    ];
    let mut scene = GpuScene::new(&d.device, &d.queue, "s", 6, &records).unwrap();
    scene
        .mutate(
            &d.queue,
            &GpuSceneMutation {
                remove: vec![4],
                ..Default::default()
            },
        )
        .unwrap();
    let groups = [
        GpuSceneGroup {
            id: 10,
            first_command: 0,
            command_count: 3,
            geometry_id: Some(3),
        },
        GpuSceneGroup {
            id: 20,
            first_command: 3,
            command_count: 0,
            geometry_id: None,
        },
        GpuSceneGroup {
            id: 30,
            first_command: 3,
            command_count: 2,
            geometry_id: None,
        },
    ];
    // (instanceCount, firstInstance) per command, hand-placed.
    let placed = [
        (1, 0),
        (1, 1),
        (0, 2),
        (1, 2),
        (1, 4),
        (1, 3),
        (1, 9),
        (1, 5),
    ];
    let draw = DrawCommandBuffer::create(&d.device, "c", DrawLayout::Draw, placed.len() as u32);
    let words: Vec<u32> = placed
        .iter()
        .flat_map(|&(ic, fi)| [36, ic, 0, fi])
        .collect();
    d.queue
        .write_buffer(draw.buffer(), 0, bytemuck::cast_slice(&words));
    let mut c = build_groups(&d, &scene, &draw, &groups, false);
    encode_wait(&d, &mut c.compiled);
    let want = cpu::resource_groups(&slots_records(&scene), &placed, &groups);
    assert_eq!(want.counts, vec![1, 0, 0]);
    assert_eq!(
        want.group_flags,
        vec![GROUP_GEOMETRY_MISMATCH, GROUP_MISPLACED, 0]
    );
    assert_eq!(want.overflow, SCENE_INVALID_ROW | SCENE_UNKNOWN_GROUP);
    check_groups(&d, &c, &want, "hand-placed");
}

#[test]
fn bad_declarations_are_named_errors() {
    let d = scene_device();
    let scene = GpuScene::new(&d.device, &d.queue, "s", 4, &[GpuSceneRecord::new(1)]).unwrap();
    let draw = DrawCommandBuffer::create(&d.device, "c", DrawLayout::Draw, 8);
    let group = |id, first, count| GpuSceneGroup {
        id,
        first_command: first,
        command_count: count,
        geometry_id: None,
    };
    let cases: Vec<(Vec<GpuSceneGroup>, &str)> = vec![
        (vec![], "empty"),
        (vec![group(1, 0, 4), group(1, 4, 4)], "duplicate"),
        (vec![group(1, 0, 4), group(2, 3, 2)], "overlap"),
        (vec![group(1, 6, 3)], "capacity"),
        (vec![group(u32::MAX, 0, 1)], "invalid"),
    ];
    for (groups, what) in cases {
        let mut g = CommandGraph::new("g", &d.device);
        let views = scene.import_to_graph(&mut g, "scene").unwrap();
        let handle = draw.import(&mut g, "commands").unwrap();
        let diag = Words::new(&d, &mut g, "diag", 2 * groups.len() as u64 + 1);
        let n = groups.len() as u64;
        let e_groups = groups;
        let e = GpuSceneResourceGroups {
            id: "groups".into(),
            scene: views,
            commands: draw.clone(),
            command_handle: handle,
            groups: e_groups.clone(),
            counts: diag.view(&g, 0, n),
            group_flags: diag.view(&g, n, n),
            overflow: diag.view(&g, 2 * n, 1),
            live_commands: None,
        }
        .add_to_graph(&mut g)
        .unwrap_err();
        assert!(matches!(e, RenderError::InvalidGroup { .. }), "{what}: {e}");
        // The same descriptors classified by the draw generation as it publishes.
        let gen_diag = Words::new(&d, &mut g, "gen-diag", 3);
        let e = GpuSceneDrawGeneration {
            id: "gen".into(),
            scene: views,
            visibility: None,
            visible_rows: None,
            commands: draw.clone(),
            command_handle: handle,
            required_count: gen_diag.view(&g, 0, 1),
            published_count: gen_diag.view(&g, 1, 1),
            overflow: gen_diag.view(&g, 2, 1),
            groups: Some(GpuSceneGroupClassification {
                groups: e_groups.clone(),
                counts: diag.view(&g, 0, n),
                group_flags: diag.view(&g, n, n),
                overflow: diag.view(&g, 2 * n, 1),
            }),
        }
        .add_to_graph(&mut g)
        .unwrap_err();
        assert!(
            matches!(e, RenderError::InvalidGroup { .. }),
            "fused, {what}: {e}"
        );
    }
    // Outputs inside the scene's record buffer would be read and written at once.
    let mut g = CommandGraph::new("g", &d.device);
    let views = scene.import_to_graph(&mut g, "scene").unwrap();
    let handle = draw.import(&mut g, "commands").unwrap();
    let inside = g
        .create_data_view(
            views.records,
            DataViewDescriptor::packed(VectorFormat::Uint32, 1),
        )
        .unwrap();
    let diag = Words::new(&d, &mut g, "diag", 3);
    let e = GpuSceneDrawGeneration {
        id: "gen".into(),
        scene: views,
        visibility: None,
        visible_rows: None,
        commands: draw.clone(),
        command_handle: handle,
        required_count: inside,
        published_count: diag.view(&g, 1, 1),
        overflow: diag.view(&g, 2, 1),
        groups: None,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(
            e,
            RenderError::WritesAlone {
                what: "required count",
                ..
            }
        ),
        "{e}"
    );
    let e = GpuSceneDrawGeneration {
        id: "gen2".into(),
        scene: views,
        visibility: None,
        visible_rows: None,
        commands: draw.clone(),
        command_handle: handle,
        required_count: diag.view(&g, 1, 1),
        published_count: diag.view(&g, 1, 1),
        overflow: diag.view(&g, 2, 1),
        groups: None,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(
            e,
            RenderError::UnsupportedView {
                what: "published count",
                ..
            }
        ),
        "{e}"
    );
    // Fused classification outputs overlapping the draw generation's own.
    let e = GpuSceneDrawGeneration {
        id: "gen3".into(),
        scene: views,
        visibility: None,
        visible_rows: None,
        commands: draw.clone(),
        command_handle: handle,
        required_count: diag.view(&g, 0, 1),
        published_count: diag.view(&g, 1, 1),
        overflow: diag.view(&g, 2, 1),
        groups: Some(GpuSceneGroupClassification {
            groups: vec![group(1, 0, 4)],
            counts: diag.view(&g, 0, 1),
            group_flags: diag.view(&g, 1, 1),
            overflow: diag.view(&g, 2, 1),
        }),
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(
            e,
            RenderError::UnsupportedView { .. } | RenderError::WritesAlone { .. }
        ),
        "{e}"
    );
    // A device without INDIRECT_FIRST_INSTANCE cannot honor firstInstance: the one device
    // these tests create themselves, asking for the context's features minus that one.
    {
        let ctx = gpugraph_testing::ctx();
        let (device, queue) =
            pollster::block_on(ctx.adapter.request_device(&wgpu::DeviceDescriptor {
                label: Some("without-first-instance"),
                required_features: ctx.device.features() - wgpu::Features::INDIRECT_FIRST_INSTANCE,
                required_limits: ctx.adapter.limits(),
                ..Default::default()
            }))
            .unwrap();
        struct Plain {
            device: wgpu::Device,
            queue: wgpu::Queue,
        }
        let plain = Plain { device, queue };
        let scene = GpuScene::new(
            &plain.device,
            &plain.queue,
            "p",
            1,
            &[GpuSceneRecord::new(1)],
        )
        .unwrap();
        let draw = DrawCommandBuffer::create(&plain.device, "c", DrawLayout::Draw, 1);
        let mut g = CommandGraph::new("g", &plain.device);
        let views = scene.import_to_graph(&mut g, "scene").unwrap();
        let handle = draw.import(&mut g, "commands").unwrap();
        let word = g
            .create_buffer(BufferDescriptor::new("w", 16, U::STORAGE))
            .unwrap();
        let v = |at| {
            g.create_data_view(
                word,
                DataViewDescriptor::packed(VectorFormat::Uint32, 1).at_offset(at),
            )
            .unwrap()
        };
        let e = GpuSceneDrawGeneration {
            id: "gen".into(),
            scene: views,
            visibility: None,
            visible_rows: None,
            commands: draw,
            command_handle: handle,
            required_count: v(0),
            published_count: v(4),
            overflow: v(8),
            groups: None,
        }
        .add_to_graph(&mut g)
        .unwrap_err();
        assert!(matches!(e, RenderError::MissingFeature { .. }), "{e}");
        drop(g);
        // Retire the device's pipeline cache entry before it goes (as GpuContext's drop does).
        gpugraph_command::DeviceCache::release(&plain.device);
        plain.device.destroy();
    }
}

/// Draw generation over a visible-row list (capacity `list_capacity`, count in its own word)
/// and classification of its published list, in one graph.
struct Listed {
    compiled: CompiledGraph,
    rows: wgpu::Buffer,
    count: Words,
    gen_diag: Words,
    group_diag: Words,
    output: GpuSceneDrawOutput,
}

fn build_listed(
    d: &SceneDevice,
    scene: &GpuScene,
    draw: &DrawCommandBuffer,
    groups: &[GpuSceneGroup],
    list_capacity: u32,
    fused: bool,
) -> Listed {
    let mut g = CommandGraph::new("listed", &d.device);
    let views = scene.import_to_graph(&mut g, "scene").unwrap();
    let handle = draw.import(&mut g, "commands").unwrap();
    let rows = upload_words(d, &vec![POISON; list_capacity as usize], U::empty());
    let rows_h = g
        .import_buffer(
            BufferDescriptor::new("rows", rows.size(), U::STORAGE),
            &rows,
        )
        .unwrap();
    let rows_view = g
        .create_packed_view(rows_h, VectorFormat::Uint32, u64::from(list_capacity))
        .unwrap();
    let count = Words::new(d, &mut g, "count", 1);
    let gen_diag = Words::new(d, &mut g, "gen-diag", 3);
    let n = groups.len() as u64;
    let group_diag = Words::new(d, &mut g, "group-diag", 2 * n + 1);
    let output = GpuSceneDrawGeneration {
        id: "gen".into(),
        scene: views,
        visibility: None,
        visible_rows: Some(GpuSceneVisibleRows {
            rows: rows_view,
            count: count.view(&g, 0, 1),
        }),
        commands: draw.clone(),
        command_handle: handle,
        required_count: gen_diag.view(&g, 0, 1),
        published_count: gen_diag.view(&g, 1, 1),
        overflow: gen_diag.view(&g, 2, 1),
        // Classified as published, or by a resource-groups pass over the published list.
        groups: fused.then(|| GpuSceneGroupClassification {
            groups: groups.to_vec(),
            counts: group_diag.view(&g, 0, n),
            group_flags: group_diag.view(&g, n, n),
            overflow: group_diag.view(&g, 2 * n, 1),
        }),
    }
    .add_to_graph(&mut g)
    .unwrap();
    if !fused {
        GpuSceneResourceGroups {
            id: "groups".into(),
            scene: views,
            commands: draw.clone(),
            command_handle: handle,
            groups: groups.to_vec(),
            counts: group_diag.view(&g, 0, n),
            group_flags: group_diag.view(&g, n, n),
            overflow: group_diag.view(&g, 2 * n, 1),
            live_commands: Some(output.published),
        }
        .add_to_graph(&mut g)
        .unwrap();
    }
    Listed {
        compiled: g.compile().unwrap(),
        rows,
        count,
        gen_diag,
        group_diag,
        output,
    }
}

/// Groups over `slots` commands: three windows (ids 0, 1, 2), an empty group (id 5); the
/// records' group 3 has no descriptor.
fn listed_groups(slots: u32) -> Vec<GpuSceneGroup> {
    let a = slots / 3;
    let b = 2 * slots / 3;
    vec![
        GpuSceneGroup {
            id: 0,
            first_command: 0,
            command_count: a,
            geometry_id: None,
        },
        GpuSceneGroup {
            id: 1,
            first_command: a,
            command_count: b - a,
            geometry_id: Some(1),
        },
        GpuSceneGroup {
            id: 5,
            first_command: 0,
            command_count: 0,
            geometry_id: None,
        },
        GpuSceneGroup {
            id: 2,
            first_command: b,
            command_count: slots - b,
            geometry_id: None,
        },
    ]
}

/// Writes `visible` (ascending rows, truncated to the list's capacity) and `count`, encodes,
/// and checks every command, the draw diagnostics and the groups against the oracles run on
/// the rows the list presents: the first `min(count, capacity)`.
#[allow(clippy::too_many_arguments)]
fn check_listed_round(
    d: &SceneDevice,
    l: &mut Listed,
    records: &[GpuSceneRecord],
    groups: &[GpuSceneGroup],
    init: &[u32],
    draw: &DrawCommandBuffer,
    visible: &[u32],
    count: u32,
    list_capacity: u32,
    ctx: &str,
) -> cpu::DrawGenerationResult {
    let stored = &visible[..visible.len().min(list_capacity as usize)];
    if !stored.is_empty() {
        d.queue
            .write_buffer(&l.rows, 0, bytemuck::cast_slice(stored));
    }
    d.queue
        .write_buffer(&l.count.buffer, 4, &count.to_ne_bytes());
    l.gen_diag.poison(d);
    l.group_diag.poison(d);
    encode_wait(d, &mut l.compiled);
    let presented = &visible[..(count.min(list_capacity) as usize).min(visible.len())];
    let mut mask = vec![0u32; records.len()];
    for &r in presented {
        mask[r as usize] = 1;
    }
    let slots = draw.records();
    let want = cpu::draw_generation(records, Some(&mask), slots);
    check_commands(
        &read_words(d, draw.buffer()),
        init,
        DrawLayout::DrawIndexed,
        &want.commands,
        ctx,
    );
    assert_eq!(
        l.gen_diag.read(d),
        vec![want.required_count, want.published_count, want.overflow],
        "{ctx}: required, published, overflow"
    );
    let classified = cpu::resource_groups(records, &want.commands, groups);
    let n = groups.len();
    let got = l.group_diag.read(d);
    assert_eq!(&got[..n], &classified.counts[..], "{ctx}: group counts");
    assert_eq!(
        &got[n..2 * n],
        &classified.group_flags[..],
        "{ctx}: group flags"
    );
    assert_eq!(got[2 * n], classified.overflow, "{ctx}: group overflow");
    want
}

/// The listed path over random scenes with holes, collisions and out-of-range slots: rounds
/// of one compiled graph with few visible rows, none, all, half, and a count past the list's
/// capacity, so every encode must clear exactly what the one before published.
#[test]
fn listed_rows_match_the_oracle_across_re_encodes() {
    let d = scene_device();
    let mut rng = rng(21);
    // (rows, command slots, list capacity: the scene's, or less for the boundary).
    let cases = [
        (0u32, 4u32, 0u32),
        (1, 1, 1),
        (257, 64, 257),
        (1000, 256, 1000),
        (1000, 1500, 1000),
        (3000, 700, 3000),
        (600, 200, 100),
        // Around a workgroup's tile of rows, and a list shorter than the scene over tiles.
        (TILE + 1, TILE + 40, TILE + 1),
        (2 * TILE + 1, 500, TILE + 3),
    ];
    // Each case classified by a separate pass over the published list and as published.
    for (n, slots, capacity, fused) in cases
        .into_iter()
        .flat_map(|(n, s, c)| [(n, s, c, false), (n, s, c, true)])
    {
        let scene = scene_with_holes(&d, &mut rng, n, slots);
        let records = slots_records(&scene);
        let groups = listed_groups(slots);
        let (draw, init) = commands(&d, DrawLayout::DrawIndexed, slots);
        let mut l = build_listed(&d, &scene, &draw, &groups, capacity, fused);
        let compiles = l.compiled.cache().stats().pipelines_created;
        let mut published = Vec::new();
        for (round, p) in [0.05, 0.0, 1.0, 0.5, 0.02, 1.0, 0.3]
            .into_iter()
            .enumerate()
        {
            let visible: Vec<u32> = (0..n).filter(|_| rng.random_bool(p)).collect();
            // Round 3 announces more rows than the list holds when it is short (where the
            // list is not full, rows past the count would be stale rows of earlier rounds).
            let count = if round == 3 && visible.len() >= capacity as usize {
                visible.len() as u32 + 7
            } else {
                visible.len() as u32
            };
            let ctx = format!(
                "{n} rows, {slots} slots, list {capacity}, round {round} (p {p}), fused {fused}"
            );
            let want = check_listed_round(
                &d, &mut l, &records, &groups, &init, &draw, &visible, count, capacity, &ctx,
            );
            published.push(want.published_count);
        }
        assert_eq!(
            l.compiled.cache().stats().pipelines_created,
            compiles,
            "no recompilation"
        );
        if n >= 257 {
            assert!(published.iter().any(|&c| c > 0), "{published:?}");
            assert!(published.contains(&0), "{published:?}");
        }
    }
}

/// All rows visible, every slot claimed by exactly one row (published = capacity), then a
/// collision among visible rows at the last slot and a slot just past it, then nothing
/// visible: the list's boundaries and the collision rule (lowest row wins).
#[test]
fn listed_rows_at_the_capacity_boundary() {
    let d = scene_device();
    let slots = 300u32;
    let records: Vec<GpuSceneRecord> = (0..slots)
        .map(|i| {
            GpuSceneRecord::new(i)
                .with_group(i * 3 / slots)
                .with_geometry(1)
                .with_command_slot(slots - 1 - i)
        })
        .collect();
    let mut scene = GpuScene::new(&d.device, &d.queue, "s", slots, &records).unwrap();
    let groups = listed_groups(slots);
    let (draw, init) = commands(&d, DrawLayout::DrawIndexed, slots);
    let mut l = build_listed(&d, &scene, &draw, &groups, slots, true);
    let all: Vec<u32> = (0..slots).collect();
    let want = check_listed_round(
        &d,
        &mut l,
        &slots_records(&scene),
        &groups,
        &init,
        &draw,
        &all,
        slots,
        slots,
        "all",
    );
    assert_eq!((want.published_count, want.overflow), (slots, 0));
    // Rows 10, 20 and 30 collide at slot 5 (row 10 wins; slot 5's own row, 294, is not
    // listed); row 40 asks just past the last slot, which row 0 keeps.
    let m = GpuSceneMutation {
        patch: [(10, 5), (20, 5), (30, 5), (40, slots)]
            .into_iter()
            .map(|(id, slot)| GpuScenePatch {
                id,
                values: vec![GpuSceneFieldValue::CommandSlot(slot)],
            })
            .collect(),
        ..Default::default()
    };
    scene.mutate(&d.queue, &m).unwrap();
    let records = slots_records(&scene);
    let visible = [0u32, 10, 20, 30, 40, slots - 1];
    let want = check_listed_round(
        &d,
        &mut l,
        &records,
        &groups,
        &init,
        &draw,
        &visible,
        6,
        slots,
        "collisions",
    );
    assert_eq!(want.commands[5], (1, 10));
    assert_eq!(want.commands[(slots - 1) as usize], (1, 0));
    assert_eq!(
        (want.required_count, want.published_count, want.overflow),
        (6, 3, 1)
    );
    let want = check_listed_round(
        &d,
        &mut l,
        &records,
        &groups,
        &init,
        &draw,
        &[],
        0,
        slots,
        "none",
    );
    assert_eq!((want.required_count, want.published_count), (0, 0));
}

/// A write of the commands' generated words from elsewhere is repaired by
/// `clear_every_command`: the next encode clears every command again.
#[test]
fn listed_rows_clear_every_command_on_request() {
    let d = scene_device();
    let mut rng = rng(23);
    let (n, slots) = (500u32, 200u32);
    let scene = scene_with_holes(&d, &mut rng, n, slots);
    let records = slots_records(&scene);
    let groups = listed_groups(slots);
    let (draw, init) = commands(&d, DrawLayout::DrawIndexed, slots);
    let mut l = build_listed(&d, &scene, &draw, &groups, n, false);
    let some: Vec<u32> = (0..n).filter(|r| r % 4 == 0).collect();
    check_listed_round(
        &d,
        &mut l,
        &records,
        &groups,
        &init,
        &draw,
        &some,
        some.len() as u32,
        n,
        "first",
    );
    // Another writer poisons every command's generated words.
    d.queue
        .write_buffer(draw.buffer(), 0, bytemuck::cast_slice(&init));
    l.output.clear_every_command(&d.queue);
    let other: Vec<u32> = (0..n).filter(|r| r % 5 == 1).collect();
    check_listed_round(
        &d,
        &mut l,
        &records,
        &groups,
        &init,
        &draw,
        &other,
        other.len() as u32,
        n,
        "repaired",
    );
}
