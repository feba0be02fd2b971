//! `GpuSceneVisibility` (the frame's cull fused with its compaction) and the packed bounds
//! view it reads, on the GPU against `cpu::sphere_visibility`: random scenes with holes at the
//! workgroup's boundary sizes, all and none visible, a list too short (overflow), after
//! direct and staged mutations (sphere and flags patches, raw sphere words with a negative,
//! signed-zero or non-finite radius, removals, insertions, compaction), and a borrowed scene
//! read through its records. The list's order is free: it is compared as a set, each slot
//! once, with the rows past the count untouched.

mod scene_support;

use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{BufferDescriptor, CommandGraph, CompiledGraph, DataViewDescriptor};
use gpugraph_command::{BufferHandle, VectorFormat};
use gpugraph_render::camera::{look_at, mul, perspective};
use gpugraph_render::gpu_scene::{
    cpu, GpuSceneFieldValue, GpuSceneMutation, GpuScenePatch, GpuSceneRecord, GpuSceneUpload,
    GpuSceneVisibility, GPU_SCENE_BUFFER_USAGE, GPU_SCENE_CULL_TILE_ROWS as TILE,
};
use gpugraph_render::{GpuScene, RenderError, ViewParams};
use rand::Rng;
use scene_support::*;

const WORKGROUP: u32 = 256;

fn camera(eye: [f32; 3]) -> ViewParams {
    let vp = mul(
        &perspective(50f32.to_radians(), 1.0, 0.5, 100.0),
        &look_at(eye, [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
    );
    ViewParams::new(&vp, eye)
}

/// Views whose every plane keeps every finite sphere, and whose planes reject every one.
fn everything() -> ViewParams {
    let mut v = camera([0.0, 0.0, 45.0]);
    v.planes = [[0.0, 0.0, 0.0, 1.0]; 6];
    v
}

fn nothing() -> ViewParams {
    let mut v = camera([0.0, 0.0, 45.0]);
    v.planes[2] = [0.0, 0.0, 0.0, -1e30];
    v
}

/// A compiled graph of one scene's visibility (after its upload's nodes, when staged) into
/// a list of `list` rows followed by the count and the overflow word.
struct Rig {
    compiled: CompiledGraph,
    view: wgpu::Buffer,
    out: Words,
    list: u64,
}

fn view_buffer(d: &SceneDevice, g: &mut CommandGraph) -> (wgpu::Buffer, BufferHandle) {
    let buffer = d.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("view"),
        size: ViewParams::BYTES,
        usage: U::UNIFORM | U::COPY_DST,
        mapped_at_creation: false,
    });
    let desc = BufferDescriptor::new("view", ViewParams::BYTES, U::UNIFORM);
    let handle = g.import_buffer(desc, &buffer).unwrap();
    (buffer, handle)
}

fn rig(d: &SceneDevice, scene: &GpuScene, upload: Option<&GpuSceneUpload>, list: u64) -> Rig {
    let mut g = CommandGraph::new("visibility", &d.device);
    let views = scene.import_to_graph(&mut g, "scene").unwrap();
    if let Some(u) = upload {
        u.add_to_graph(&mut g, &views, "upload").unwrap();
    }
    let (view, view_h) = view_buffer(d, &mut g);
    let out = Words::new(d, &mut g, "out", list + 2);
    GpuSceneVisibility {
        id: "visibility".into(),
        view: view_h,
        scene: views,
        output: out.view(&g, 0, list),
        count: out.view(&g, list, 1),
        overflow: out.view(&g, list + 1, 1),
    }
    .add_to_graph(&mut g)
    .unwrap();
    Rig {
        compiled: g.compile().unwrap(),
        view,
        out,
        list,
    }
}

/// Encodes `rig` under `view` and checks its outputs against the oracle over `records`
/// (every slot of the scene); returns the visible count.
fn check(
    d: &SceneDevice,
    rig: &mut Rig,
    records: &[GpuSceneRecord],
    view: &ViewParams,
    ctx: &str,
) -> usize {
    rig.out.poison(d);
    d.queue.write_buffer(&rig.view, 0, bytemuck::bytes_of(view));
    encode_wait(d, &mut rig.compiled);
    let want: Vec<u32> = cpu::sphere_visibility(records, view)
        .iter()
        .enumerate()
        .filter(|(_, &v)| v != 0)
        .map(|(s, _)| s as u32)
        .collect();
    let got = rig.out.read(d);
    let list = rig.list as usize;
    assert_eq!(got[list] as usize, want.len(), "{ctx}: count");
    let overflow = want.len() > list;
    assert_eq!(got[list + 1], u32::from(overflow), "{ctx}: overflow");
    let listed = want.len().min(list);
    let mut rows = got[..listed].to_vec();
    rows.sort_unstable();
    if overflow {
        rows.dedup();
        assert_eq!(rows.len(), listed, "{ctx}: a slot listed twice");
        assert!(
            rows.iter().all(|r| want.binary_search(r).is_ok()),
            "{ctx}: an invisible slot listed"
        );
    } else {
        assert_eq!(rows, want, "{ctx}: the visible slots");
    }
    assert!(
        got[listed..list].iter().all(|&w| w == POISON),
        "{ctx}: rows past the count written"
    );
    want.len()
}

/// A random scene of `capacity` slots: most filled, every third of them removed again.
fn random_scene(d: &SceneDevice, rng: &mut rand::rngs::StdRng, capacity: u32) -> GpuScene {
    let n = capacity - capacity / 8;
    let records: Vec<GpuSceneRecord> = (0..n)
        .map(|i| random_record(rng, 1 + i * 3, 30.0, capacity))
        .collect();
    let mut scene = GpuScene::new(&d.device, &d.queue, "scene", capacity, &records).unwrap();
    let remove = (0..n).filter(|i| i % 3 == 2).map(|i| 1 + i * 3).collect();
    let m = GpuSceneMutation {
        remove,
        ..Default::default()
    };
    scene.mutate(&d.queue, &m).unwrap();
    scene
}

#[test]
fn visible_slots_match_the_oracle_at_boundary_sizes() {
    let d = scene_device();
    // A workgroup tests a tile of TILE slots, 16 per invocation: the boundaries of one
    // invocation's slots, of the tile, and several tiles with a partial last one.
    let sizes = [
        0,
        1,
        WORKGROUP - 1,
        WORKGROUP,
        WORKGROUP + 1,
        1000,
        TILE - 1,
        TILE,
        TILE + 1,
        2 * TILE + 300,
    ];
    for (k, &capacity) in sizes.iter().enumerate() {
        let mut rng = rng(40 + k as u64);
        let scene = random_scene(&d, &mut rng, capacity);
        let records = slots_records(&scene);
        let mut rig = rig(&d, &scene, None, u64::from(capacity));
        let mut seen = 0;
        for eye in [[0.0, 0.0, 45.0], [30.0, 10.0, -20.0], [0.0, 60.0, 1.0]] {
            let ctx = format!("capacity {capacity} eye {eye:?}");
            seen += check(&d, &mut rig, &records, &camera(eye), &ctx);
        }
        let live = records.iter().filter(|r| r.flags != 0).count();
        let all = check(&d, &mut rig, &records, &everything(), "all visible");
        assert_eq!(all, live, "capacity {capacity}: every live slot");
        assert_eq!(check(&d, &mut rig, &records, &nothing(), "none"), 0);
        if capacity > 100 {
            assert!(
                seen > 0 && seen < 3 * live,
                "capacity {capacity}: a partial view"
            );
        }
    }
}

/// Every slot live (the last slot of a tile and of the scene included): all listed under a
/// view that keeps everything, none under one that keeps nothing, at the tile's boundaries.
#[test]
fn full_scenes_list_every_slot_at_tile_boundaries() {
    let d = scene_device();
    let mut rng = rng(9);
    for capacity in [TILE - 1, TILE, TILE + 1, 3 * TILE - 1] {
        let records: Vec<GpuSceneRecord> = (0..capacity)
            .map(|i| random_record(&mut rng, i, 30.0, capacity))
            .collect();
        let scene = GpuScene::new(&d.device, &d.queue, "full", capacity, &records).unwrap();
        let records = slots_records(&scene);
        assert!(records.iter().all(|r| r.flags != 0));
        let mut rig = rig(&d, &scene, None, u64::from(capacity));
        let ctx = format!("full {capacity}");
        let all = check(&d, &mut rig, &records, &everything(), &ctx);
        assert_eq!(all, capacity as usize, "{ctx}");
        assert_eq!(check(&d, &mut rig, &records, &nothing(), &ctx), 0);
        check(&d, &mut rig, &records, &camera([10.0, 5.0, 40.0]), &ctx);
    }
}

#[test]
fn a_short_list_overflows_with_the_full_count() {
    let d = scene_device();
    let mut rng = rng(7);
    // One tile, and three whose blocks of the list land in any order.
    for capacity in [700, 2 * TILE + 900] {
        let scene = random_scene(&d, &mut rng, capacity);
        let records = slots_records(&scene);
        let live = records.iter().filter(|r| r.flags != 0).count() as u64;
        for list in [0, 1, live / 2, live - 1, live, live + 1] {
            let mut rig = rig(&d, &scene, None, list);
            let ctx = format!("capacity {capacity}, list of {list}");
            assert_eq!(
                check(&d, &mut rig, &records, &everything(), &ctx) as u64,
                live
            );
        }
    }
}

/// A random transaction touching what visibility reads: spheres (typed and raw, with edge
/// radii), flags, removals, insertions, compaction sometimes.
fn transaction(rng: &mut rand::rngs::StdRng, scene: &GpuScene, next: &mut u32) -> GpuSceneMutation {
    let mut ids: Vec<u32> = scene
        .active_records()
        .iter()
        .map(|(_, r)| r.object_id)
        .collect();
    let remove = take_some(rng, &mut ids, 0.1);
    let edge = [-0.0f32, 0.0, -1.0, f32::NAN, f32::INFINITY, 2.5];
    let patch = take_some(rng, &mut ids, 0.3)
        .into_iter()
        .map(|id| {
            let r = random_record(rng, id, 30.0, scene.capacity());
            let values = match rng.random_range(0..4) {
                0 => vec![GpuSceneFieldValue::Sphere(r.sphere)],
                1 => vec![GpuSceneFieldValue::Flags(r.flags)],
                2 => {
                    let radius = edge[rng.random_range(0..edge.len())];
                    let mut words: Vec<u32> = bytemuck::cast_slice(&r.sphere[..3]).to_vec();
                    words.push(radius.to_bits());
                    vec![GpuSceneFieldValue::Words {
                        byte_offset: 16,
                        words,
                    }]
                }
                _ => vec![GpuSceneFieldValue::Transform(r.transform)],
            };
            GpuScenePatch { id, values }
        })
        .collect();
    let insert = (0..rng.random_range(0..=scene.capacity() / 6 + 1))
        .map(|_| {
            *next += rng.random_range(1..4);
            random_record(rng, *next, 30.0, scene.capacity())
        })
        .collect();
    GpuSceneMutation {
        remove,
        patch,
        insert,
        compact: rng.random_bool(0.25),
    }
}

#[test]
fn mutations_keep_the_packed_bounds_in_sync() {
    let d = scene_device();
    for (capacity, words, runs, seed) in [(257u32, 8192u32, 1024u32, 3u64), (600, 400, 40, 4)] {
        let mut rng = rng(seed);
        let initial: Vec<GpuSceneRecord> = (0..capacity * 3 / 4)
            .map(|i| random_record(&mut rng, 1 + i * 2, 30.0, capacity))
            .collect();
        let mut direct = GpuScene::new(&d.device, &d.queue, "direct", capacity, &initial).unwrap();
        let mut staged = GpuScene::new(&d.device, &d.queue, "staged", capacity, &initial).unwrap();
        let mut upload = GpuSceneUpload::new(&d.device, &staged, words, runs).unwrap();
        let mut direct_rig = rig(&d, &direct, None, u64::from(capacity));
        let mut staged_rig = rig(&d, &staged, Some(&upload), u64::from(capacity));
        let mut next = 1_000_000;
        for step in 0..10 {
            let m = transaction(&mut rng, &direct, &mut next);
            let rep = direct.mutate(&d.queue, &m).unwrap();
            let sum: u64 = rep.bounds_writes.iter().map(|r| r.end - r.start).sum();
            assert_eq!(rep.bounds_bytes, sum, "step {step}");
            let got = staged.mutate_staged(&d.queue, &mut upload, &m).unwrap();
            if got.staging_bytes > 0 {
                assert_eq!(
                    got.bounds_bytes, 0,
                    "step {step}: staged bounds are derived"
                );
            }
            // The staged rig takes the transaction (the host bytes' copy, the scatter).
            encode_upload(&d, &mut staged_rig.compiled, Some(&upload), true);
            let view = camera([0.0, 10.0 + step as f32, 45.0]);
            for (name, scene, rig) in [
                ("direct", &direct, &mut direct_rig),
                ("staged", &staged, &mut staged_rig),
            ] {
                let ctx = format!("capacity {capacity} step {step} {name}");
                let records = slots_records(scene);
                check(&d, rig, &records, &view, &ctx);
                check(&d, rig, &records, &everything(), &ctx);
            }
            let bounds = |s: &GpuScene| read_bytes(&d, s.bounds_buffer().unwrap());
            assert_eq!(bounds(&staged), bounds(&direct), "step {step}: bounds");
        }
    }
}

#[test]
fn borrowed_records_are_read_in_place() {
    let d = scene_device();
    let mut rng = rng(11);
    for n in [1u32, WORKGROUP + 1, 900] {
        let mut records: Vec<GpuSceneRecord> = (0..n)
            .map(|i| random_record(&mut rng, i, 30.0, n))
            .collect();
        for r in records.iter_mut().step_by(4) {
            r.flags = 0;
        }
        let buffer = d.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("records"),
            size: u64::from(n) * 128 + 256,
            usage: GPU_SCENE_BUFFER_USAGE,
            mapped_at_creation: false,
        });
        d.queue
            .write_buffer(&buffer, 256, bytemuck::cast_slice(&records));
        let active = records.iter().filter(|r| r.flags != 0).count() as u32;
        let scene =
            GpuScene::borrow_records(&d.device, &d.queue, "borrowed", &buffer, 256, n, active)
                .unwrap();
        assert!(scene.bounds_buffer().is_none());
        let mut rig = rig(&d, &scene, None, u64::from(n));
        for view in [camera([5.0, 5.0, 40.0]), everything(), nothing()] {
            check(&d, &mut rig, &records, &view, &format!("borrowed {n}"));
        }
    }
}

#[test]
fn bad_outputs_are_named_errors() {
    let d = scene_device();
    let scene = GpuScene::new(&d.device, &d.queue, "s", 8, &[GpuSceneRecord::new(1)]).unwrap();
    let mut g = CommandGraph::new("bad", &d.device);
    let views = scene.import_to_graph(&mut g, "scene").unwrap();
    let (_, view_h) = view_buffer(&d, &mut g);
    let out = Words::new(&d, &mut g, "out", 12);
    let floats = g
        .create_data_view(
            out.handle,
            DataViewDescriptor::packed(VectorFormat::Float32, 8).at_offset(4),
        )
        .unwrap();
    let base = GpuSceneVisibility {
        id: "v".into(),
        view: view_h,
        scene: views,
        output: out.view(&g, 0, 8),
        count: out.view(&g, 8, 1),
        overflow: out.view(&g, 9, 1),
    };
    let cases = [
        GpuSceneVisibility {
            output: floats,
            ..base.clone()
        },
        GpuSceneVisibility {
            count: out.view(&g, 8, 2),
            ..base.clone()
        },
        GpuSceneVisibility {
            overflow: out.view(&g, 7, 1),
            ..base.clone()
        },
        GpuSceneVisibility {
            output: views.record_words,
            ..base.clone()
        },
    ];
    for (case, what) in cases
        .into_iter()
        .zip(["output", "count", "overflow", "output"])
    {
        let e = case.add_to_graph(&mut g).unwrap_err();
        match &e {
            RenderError::UnsupportedView { what: w, .. }
            | RenderError::WritesAlone { what: w, .. } => {
                assert_eq!(*w, what, "{e}")
            }
            other => panic!("unexpected error {other}"),
        }
    }
    base.add_to_graph(&mut g).unwrap();
}
