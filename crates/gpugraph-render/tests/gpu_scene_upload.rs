//! Staged GPUScene mutation (`GpuScene::mutate_staged`, `GpuSceneUpload`) against the direct
//! path (`GpuScene::mutate`, itself checked against an independent byte model in
//! `gpu_scene.rs`): two scenes built alike take the same random transaction streams, one
//! range by range, one staged and scattered by a graph's upload nodes, and must hold the same
//! record bytes and state after every submitted encode — with several transactions staged
//! before one encode, encodes with nothing staged, and transactions that overflow the upload.

mod scene_support;

use gpugraph_command::{CommandGraph, CompiledGraph};
use gpugraph_render::gpu_scene::upload::record_words;
use gpugraph_render::gpu_scene::{
    GpuSceneError, GpuSceneFieldValue, GpuSceneMutation, GpuScenePatch, GpuSceneRecord,
    GpuSceneUpload, GPU_SCENE_RECORD_BYTES,
};
use gpugraph_render::GpuScene;
use rand::Rng;
use scene_support::*;

/// A compiled graph holding only `upload`'s nodes over `scene`.
fn upload_graph(d: &SceneDevice, scene: &GpuScene, upload: &GpuSceneUpload) -> CompiledGraph {
    let mut g = CommandGraph::new("upload", &d.device);
    let views = scene.import_to_graph(&mut g, "scene").unwrap();
    upload.add_to_graph(&mut g, &views, "upload").unwrap();
    g.compile().unwrap()
}

fn records(d: &SceneDevice, scene: &GpuScene) -> Vec<u8> {
    let n = (u64::from(scene.capacity()) * GPU_SCENE_RECORD_BYTES) as usize;
    read_bytes(d, scene.record_buffer())[..n].to_vec()
}

fn state(d: &SceneDevice, scene: &GpuScene) -> Vec<u8> {
    read_bytes(d, scene.state_buffer())[..16].to_vec()
}

/// A random transaction over `scene`'s live IDs: removals, patches of every field kind,
/// insertions of new IDs (past the capacity sometimes), compaction sometimes.
fn transaction(
    rng: &mut rand::rngs::StdRng,
    scene: &GpuScene,
    next_id: &mut u32,
) -> GpuSceneMutation {
    let capacity = scene.capacity();
    let mut ids: Vec<u32> = scene
        .active_records()
        .iter()
        .map(|(_, r)| r.object_id)
        .collect();
    let remove = take_some(rng, &mut ids, 0.1);
    let patch = take_some(rng, &mut ids, 0.3)
        .into_iter()
        .map(|id| {
            let r = random_record(rng, id, 10.0, capacity);
            let values = match rng.random_range(0..5) {
                0 => vec![GpuSceneFieldValue::GroupId(r.group_id)],
                4 => vec![GpuSceneFieldValue::Flags(r.flags)],
                1 => vec![
                    GpuSceneFieldValue::Transform(r.transform),
                    GpuSceneFieldValue::CommandSlot(r.command_slot),
                ],
                2 => vec![GpuSceneFieldValue::Aabb {
                    min: r.aabb_min,
                    max: r.aabb_max,
                }],
                _ => vec![
                    GpuSceneFieldValue::Sphere(r.sphere),
                    GpuSceneFieldValue::GeometryId(r.geometry_id),
                ],
            };
            GpuScenePatch { id, values }
        })
        .collect();
    let insert = (0..rng.random_range(0..=capacity / 5 + 1))
        .map(|_| {
            *next_id += rng.random_range(1..4);
            random_record(rng, *next_id, 10.0, capacity)
        })
        .collect();
    GpuSceneMutation {
        remove,
        patch,
        insert,
        compact: rng.random_bool(0.2),
    }
}

#[test]
fn staged_transactions_land_like_direct_ones() {
    let d = scene_device();
    // Upload sizes: roomy, and small enough that some transactions overflow it; staging
    // through host buffers, and through queue writes alone.
    for (capacity, words, runs, seed, hosts) in [
        (64u32, 4096u32, 512u32, 1u64, true),
        (200, 300, 24, 2, true),
        (64, 4096, 512, 3, false),
    ] {
        let mut rng = rng(seed);
        let initial: Vec<GpuSceneRecord> = (0..capacity / 2)
            .map(|i| random_record(&mut rng, i * 2 + 1, 10.0, capacity))
            .collect();
        let mut direct = GpuScene::new(&d.device, &d.queue, "direct", capacity, &initial).unwrap();
        let mut staged = GpuScene::new(&d.device, &d.queue, "staged", capacity, &initial).unwrap();
        let mut upload = GpuSceneUpload::new(&d.device, &staged, words, runs).unwrap();
        if !hosts {
            upload = upload.without_host_buffers();
        }
        let mut graph = upload_graph(&d, &staged, &upload);
        let mut next_id = capacity * 2;
        let mut overflowed = 0;
        let mut restaged = 0;
        let mut hosted = 0;
        let mut staged_runs = 0;
        // The byte ranges staged since the last encode (the test's own account).
        let mut pending: Vec<std::ops::Range<u64>> = Vec::new();
        for step in 0..24 {
            // 0, 1 or 2 transactions staged before one encode.
            for _ in 0..step % 3 {
                let m = transaction(&mut rng, &direct, &mut next_id);
                let want = direct.mutate(&d.queue, &m).unwrap();
                let before = upload.staged_words();
                let got = staged.mutate_staged(&d.queue, &mut upload, &m).unwrap();
                assert_eq!(got.record_writes, want.record_writes, "step {step}");
                assert_eq!(got.record_bytes, want.record_bytes, "step {step}");
                assert_eq!(got.uninserted, want.uninserted, "step {step}");
                if got.staging_bytes > 0 {
                    assert_eq!(
                        (got.bounds_bytes, got.key_bytes),
                        (0, 0),
                        "step {step}: derived on the GPU"
                    );
                }
                let runs = got.record_writes.len() as u64;
                let after = u64::from(upload.staged_words());
                let overlap = got
                    .record_writes
                    .iter()
                    .any(|r| pending.iter().any(|p| p.start < r.end && r.start < p.end));
                if got.staging_bytes == 0 && got.record_bytes > 0 {
                    overflowed += 1;
                    pending.clear();
                    assert_eq!(after, 0, "an overflow drops what was staged");
                    continue;
                }
                let state_write = usize::from(got.state_bytes > 0);
                // Written into a mapped host buffer (no queue write), or by queue writes.
                // With a poll after every encode a host buffer is always mapped: every staged
                // transaction goes that way, or (without host buffers) none.
                let host = got.host_writes;
                assert_eq!(host, usize::from(hosts && runs > 0), "step {step}");
                hosted += host;
                staged_runs += usize::from(runs > 0);
                pending.extend(got.record_writes.iter().cloned());
                if overlap {
                    // Restaged together with what it overlapped (merged: never more), as a
                    // first transaction: one write.
                    restaged += 1;
                    assert!(
                        after <= u64::from(before) + got.record_bytes / 4,
                        "step {step}"
                    );
                    assert_eq!(got.write_count(), 1 - host + state_write, "step {step}");
                } else {
                    // The first transaction since an encode is one write (runs, header and
                    // payload are contiguous); one joining staged ones three.
                    let writes = match (runs, before, host) {
                        (0, _, _) | (_, _, 1) => 0,
                        (_, 0, _) => 1,
                        _ => 3,
                    };
                    assert_eq!(got.write_count(), writes + state_write, "step {step}");
                    // Appended: exactly this transaction's bytes, its runs and the counts.
                    assert_eq!(
                        after,
                        u64::from(before) + got.record_bytes / 4,
                        "step {step}"
                    );
                    if runs > 0 {
                        assert_eq!(got.staging_bytes, 8 * runs + 28, "step {step}");
                    }
                }
            }
            encode_upload(&d, &mut graph, Some(&upload), true);
            pending.clear();
            assert_eq!(upload.staged_words(), 0);
            let ctx = format!("capacity {capacity} step {step}");
            assert_eq!(records(&d, &staged), records(&d, &direct), "{ctx}: records");
            assert_eq!(state(&d, &staged), state(&d, &direct), "{ctx}: state");
            // The direct path's packed bounds are checked against a model in `gpu_scene.rs`;
            // the staged path derives them on the GPU from the scattered records.
            let bounds = |s: &GpuScene| read_bytes(&d, s.bounds_buffer().unwrap());
            assert_eq!(bounds(&staged), bounds(&direct), "{ctx}: packed bounds");
            // And the draw keys (every field kind is patched: group, geometry, slot, flags).
            let keys = |s: &GpuScene| read_bytes(&d, s.key_buffer().unwrap());
            assert_eq!(keys(&staged), keys(&direct), "{ctx}: draw keys");
        }
        assert_eq!(
            hosted,
            if hosts { staged_runs } else { 0 },
            "transactions through host buffers"
        );
        if words < 1000 {
            assert!(overflowed > 0, "the small upload never overflowed");
        } else {
            assert!(restaged > 0, "no two staged transactions overlapped");
            assert!(staged_runs > 0, "nothing was staged");
        }
        // An encode with nothing staged dispatches nothing and changes nothing.
        let before = records(&d, &staged);
        encode_wait(&d, &mut graph);
        assert_eq!(records(&d, &staged), before);
    }
}

#[test]
fn a_thousand_patches_are_one_host_write() {
    let d = scene_device();
    let initial: Vec<GpuSceneRecord> = (0..4096).map(|i| GpuSceneRecord::new(i * 3)).collect();
    let mut scene = GpuScene::new(&d.device, &d.queue, "big", 4096, &initial).unwrap();
    let mut upload = GpuSceneUpload::new(&d.device, &scene, record_words(1000), 4000).unwrap();
    let mut graph = upload_graph(&d, &scene, &upload);
    let m = GpuSceneMutation {
        patch: (0..1000)
            .map(|i| GpuScenePatch {
                id: i * 4 * 3,
                values: vec![GpuSceneFieldValue::CommandSlot(i)],
            })
            .collect(),
        ..Default::default()
    };
    let rep = scene.mutate_staged(&d.queue, &mut upload, &m).unwrap();
    assert_eq!(rep.record_bytes, 4000);
    assert_eq!(rep.record_writes.len(), 1000);
    assert_eq!(rep.staging_bytes, 8 * 1000 + 28);
    // Written straight into a mapped host buffer: no queue write.
    assert_eq!((rep.host_writes, rep.write_count()), (1, 0));
    assert!(rep.uploaded_bytes() <= 128 << 10);
    encode_upload(&d, &mut graph, Some(&upload), true);
    let words = read_words(&d, scene.record_buffer());
    for i in [0u32, 7, 999] {
        assert_eq!(words[(4 * i * 32 + 11) as usize], i);
    }
}

#[test]
fn uploads_are_checked_by_name() {
    let d = scene_device();
    let a = GpuScene::new(&d.device, &d.queue, "a", 4, &[GpuSceneRecord::new(1)]).unwrap();
    let mut b = GpuScene::new(&d.device, &d.queue, "b", 4, &[GpuSceneRecord::new(1)]).unwrap();
    let mut upload = GpuSceneUpload::new(&d.device, &a, 64, 8).unwrap();
    let e = b
        .mutate_staged(&d.queue, &mut upload, &GpuSceneMutation::default())
        .unwrap_err();
    assert!(matches!(e, GpuSceneError::ForeignUpload { .. }), "{e}");
    assert!(e.to_string().contains("a/upload"), "{e}");
    for (words, runs) in [(0, 8), (64, 0), (u32::MAX, 8)] {
        let e = GpuSceneUpload::new(&d.device, &a, words, runs).unwrap_err();
        assert!(matches!(e, GpuSceneError::UploadCapacity { .. }), "{e}");
        assert!(e.to_string().contains(&words.to_string()), "{e}");
    }
}
