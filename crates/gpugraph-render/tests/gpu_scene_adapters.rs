//! GPUScene adapters (spec 6.1c) on the GPU: a CPU hierarchy flattened in stable preorder
//! (shared subgraphs and cycles visited once, grouping nodes without records) into an ordinary
//! mutable scene, and table batches borrowed as ordered partitions (uneven and empty batches,
//! no copy, per-partition state ownership, layouts that would need a copy refused).

mod scene_support;

use gpugraph_command::wgpu::BufferUsages as U;
use gpugraph_command::VectorFormat;
use gpugraph_render::gpu_scene::adapters::{flatten_cpu_hierarchy, GpuScenePartitions};
use gpugraph_render::gpu_scene::{
    GpuSceneError, GpuSceneMutation, GpuSceneRecord, GpuSceneState, GPU_SCENE_RECORD_BYTES,
};
use gpugraph_render::GpuScene;
use gpugraph_tables::{GpuData, GpuRecordBatch, GpuTable, GpuVector, InterleavedAttribute};
use scene_support::*;

const R: u64 = GPU_SCENE_RECORD_BYTES;

fn gpu_state(d: &SceneDevice, scene: &GpuScene) -> GpuSceneState {
    *bytemuck::from_bytes(&read_bytes(d, scene.state_buffer())[..16])
}

#[test]
fn cpu_hierarchy_is_flattened_in_stable_preorder() {
    // 0 ─┬─ 1 (group) ─┬─ 3
    //    │             └─ 4 ── 0 (cycle back to the root)
    //    └─ 2 ───────────── 4 (shared)
    // 5 (second root, leaf)
    let children: Vec<Vec<u32>> = vec![vec![1, 2], vec![3, 4], vec![4], vec![], vec![0], vec![]];
    let is_group = |n: u32| n == 1;
    let mut visits = Vec::new();
    let records = flatten_cpu_hierarchy(
        &[0u32, 5],
        |n| children[*n as usize].clone(),
        |v| {
            visits.push((
                *v.node,
                v.parent.copied(),
                v.depth,
                v.visit_index,
                v.next_record,
            ));
            (!is_group(*v.node)).then(|| GpuSceneRecord::new(7000 + v.node).with_group(v.depth))
        },
    );
    assert_eq!(
        visits,
        vec![
            (0, None, 0, 0, 0),
            (1, Some(0), 1, 1, 1),
            (3, Some(1), 2, 2, 1),
            (4, Some(1), 2, 3, 2),
            (2, Some(0), 1, 4, 3),
            (5, None, 0, 5, 4),
        ]
    );
    let ids: Vec<u32> = records.iter().map(|r| r.object_id).collect();
    assert_eq!(ids, vec![7000, 7003, 7004, 7002, 7005]);

    let d = scene_device();
    let mut scene = GpuScene::from_cpu_hierarchy(
        &d.device,
        &d.queue,
        "tree",
        8,
        &[0u32, 5],
        |n| children[*n as usize].clone(),
        |v| (!is_group(*v.node)).then(|| GpuSceneRecord::new(7000 + v.node)),
    )
    .unwrap();
    assert_eq!(scene.slot_of(7004), Some(2));
    let words = read_words(&d, scene.record_buffer());
    let got: Vec<u32> = (0..5).map(|s| words[s * 32]).collect();
    assert_eq!(got, ids);
    // The flattened scene is an ordinary mutable scene.
    let rep = scene
        .mutate(
            &d.queue,
            &GpuSceneMutation {
                remove: vec![7003],
                compact: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(rep.moves.len(), 3);
    assert_eq!(scene.slot_of(7005), Some(3));
}

/// A table of canonical interleaved scene records in uneven batches (3, 0, 5, 0, 1) becomes
/// five ordered partitions, empty ones included, each borrowing its batch's buffer.
#[test]
fn table_batches_become_ordered_partitions() {
    let d = scene_device();
    let sizes = [3usize, 0, 5, 0, 1];
    let attributes = vec![
        InterleavedAttribute::new("object_id", VectorFormat::Uint32, 0),
        InterleavedAttribute::new("flags", VectorFormat::Uint32, 4),
        InterleavedAttribute::new("command_slot", VectorFormat::Uint32, 44),
        InterleavedAttribute::new("sphere", VectorFormat::Float32x4, 16),
    ];
    let mut rng = rng(9);
    let mut all: Vec<Vec<GpuSceneRecord>> = Vec::new();
    let mut batches = Vec::new();
    for (b, &n) in sizes.iter().enumerate() {
        let records: Vec<GpuSceneRecord> = (0..n)
            .map(|i| random_record(&mut rng, (b * 100 + i) as u32, 5.0, 8))
            .collect();
        // One leading record of padding: the partition starts at byte 128 of its buffer.
        let mut words = vec![0xFFFF_FFFFu32; 32];
        words.extend(records.iter().flat_map(|r| *r.words()));
        // And one trailing: an empty chunk's attributes still need room past its start.
        words.extend([0xFFFF_FFFFu32; 32]);
        let data = GpuData::upload_to_device(
            &d.device,
            &d.queue,
            &words,
            VectorFormat::Uint32,
            U::empty(),
        )
        .unwrap();
        let chunk = data.sibling(R, n as u64, VectorFormat::Uint32, R).unwrap();
        let vector = GpuVector::interleaved(vec![chunk], attributes.clone()).unwrap();
        batches.push(GpuRecordBatch::from_columns([("scene", vector)]).unwrap());
        all.push(records);
    }
    let schema = batches[0].schema().clone();
    let table = GpuTable::new(schema, batches).unwrap();
    let active = [3u32, 0, 4, 0, 1];
    let mut adapted =
        GpuScenePartitions::from_table(&d.device, &d.queue, &table, "scene", &active).unwrap();
    let bases: Vec<u64> = adapted.partitions.iter().map(|p| p.first_record).collect();
    assert_eq!(bases, vec![0, 3, 3, 8, 8]);
    for (b, p) in adapted.partitions.iter().enumerate() {
        assert_eq!((p.batch_index, p.record_count as usize), (b, sizes[b]));
        let Some(scene) = &p.scene else {
            assert_eq!(sizes[b], 0, "batch {b}");
            continue;
        };
        let buffer = table.batches()[b].column("scene").unwrap().chunks()[0]
            .buffer()
            .clone();
        assert_eq!(
            scene.record_buffer(),
            &buffer,
            "no copy: the batch's own buffer"
        );
        assert_eq!(scene.record_buffer_offset(), R);
        assert!(!scene.owns_records() && scene.owns_state() && !scene.is_mutable());
        assert_eq!(
            gpu_state(&d, scene),
            GpuSceneState {
                count: sizes[b] as u32,
                active_count: active[b],
                overflow: 0,
                reserved: 0
            }
        );
    }
    let mut scene2 = adapted.partitions[2].scene.take().unwrap();
    let e = scene2.compact(&d.queue).unwrap_err();
    assert!(matches!(e, GpuSceneError::Immutable { .. }), "{e}");
    scene2.destroy();
    scene2.destroy();
    adapted.destroy();
    // The table's storage outlives the adapters' state.
    let words = read_words(
        &d,
        table.batches()[2].column("scene").unwrap().chunks()[0].buffer(),
    );
    let expected: Vec<u32> = all[2].iter().flat_map(|r| *r.words()).collect();
    assert_eq!(&words[32..32 + expected.len()], &expected[..]);

    // Layouts that would need a copy are refused.
    let e =
        GpuScenePartitions::from_table(&d.device, &d.queue, &table, "scene", &[1, 2]).unwrap_err();
    assert!(matches!(e, GpuSceneError::ActiveCounts { .. }), "{e}");
    let e = GpuScenePartitions::from_table(&d.device, &d.queue, &table, "scene", &[4, 0, 5, 0, 1])
        .unwrap_err();
    assert!(matches!(e, GpuSceneError::ActiveCounts { .. }), "{e}");
    let packed = GpuData::upload_to_device(
        &d.device,
        &d.queue,
        &[1u32, 2, 3],
        VectorFormat::Uint32,
        U::empty(),
    )
    .unwrap();
    let bad = GpuTable::from_batch(
        GpuRecordBatch::from_columns([(
            "scene",
            GpuVector::interleaved(
                vec![packed],
                vec![InterleavedAttribute::new(
                    "object_id",
                    VectorFormat::Uint32,
                    0,
                )],
            )
            .unwrap(),
        )])
        .unwrap(),
    );
    let e = GpuScenePartitions::from_table(&d.device, &d.queue, &bad, "scene", &[3]).unwrap_err();
    assert!(
        matches!(e, GpuSceneError::TableLayout { batch: 0, .. }),
        "{e}"
    );
    let shifted = GpuData::upload_to_device(
        &d.device,
        &d.queue,
        &vec![0u32; 64],
        VectorFormat::Uint32,
        U::empty(),
    )
    .unwrap()
    .sibling(8, 2, VectorFormat::Uint32, R)
    .unwrap();
    let bad = GpuTable::from_batch(
        GpuRecordBatch::from_columns([(
            "scene",
            GpuVector::interleaved(
                vec![shifted],
                vec![InterleavedAttribute::new(
                    "object_id",
                    VectorFormat::Uint32,
                    8,
                )],
            )
            .unwrap(),
        )])
        .unwrap(),
    );
    let e = GpuScenePartitions::from_table(&d.device, &d.queue, &bad, "scene", &[2]).unwrap_err();
    assert!(
        matches!(e, GpuSceneError::TableLayout { batch: 0, .. }),
        "{e}"
    );
}
