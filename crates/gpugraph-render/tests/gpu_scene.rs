//! GPUScene storage and mutation (spec 6.1a, 6.1b) on the GPU against a CPU model: the record
//! buffer's bytes and the state block after every transaction, the exact ranges each
//! transaction uploads, identity and references through insert/patch/remove/compact streams,
//! capacity overflow at the exact boundary. Adapters: `gpu_scene_adapters.rs`.

mod scene_support;

use std::collections::BTreeMap;
use std::ops::Range;

use gpugraph_command::CommandGraph;
use gpugraph_render::gpu_scene::{
    draw_key, packed_bounds, GpuSceneError, GpuSceneField, GpuSceneFieldValue, GpuSceneMutation,
    GpuSceneOperation, GpuScenePatch, GpuSceneRecord, GpuSceneState, GPU_SCENE_RECORD_BYTES,
};
use gpugraph_render::GpuScene;
use rand::Rng;
use scene_support::*;

const POISON: u8 = 0xAB;
const R: u64 = GPU_SCENE_RECORD_BYTES;

/// The test's own model of a scene: the bytes the GPU must hold, slot by slot, written from
/// the transaction semantics (lowest free slot, removal clears flags only, compaction keeps
/// order and zeroes the vacated suffix), independent of the library's bookkeeping.
struct Model {
    bytes: Vec<u8>,
    live: BTreeMap<u32, u32>,
    count: u32,
    overflow: bool,
    capacity: u32,
}

impl Model {
    fn new(capacity: u32, initial: &[GpuSceneRecord]) -> Self {
        let mut bytes = vec![POISON; (capacity as u64 * R) as usize];
        let mut live = BTreeMap::new();
        for (s, r) in initial.iter().enumerate() {
            bytes[s * R as usize..(s + 1) * R as usize].copy_from_slice(bytemuck::bytes_of(r));
            live.insert(r.object_id, s as u32);
        }
        Self {
            bytes,
            live,
            count: initial.len() as u32,
            overflow: false,
            capacity,
        }
    }

    fn record(&self, slot: u32) -> GpuSceneRecord {
        let s = slot as usize * R as usize;
        *bytemuck::from_bytes(&self.bytes[s..s + R as usize])
    }

    fn put(&mut self, slot: u32, r: &GpuSceneRecord) {
        let s = slot as usize * R as usize;
        self.bytes[s..s + R as usize].copy_from_slice(bytemuck::bytes_of(r));
    }

    fn apply(&mut self, m: &GpuSceneMutation) -> Vec<u32> {
        for id in &m.remove {
            let slot = self.live.remove(id).unwrap();
            let mut r = self.record(slot);
            r.flags = 0;
            self.put(slot, &r);
        }
        for p in &m.patch {
            let slot = self.live[&p.id];
            let mut r = self.record(slot);
            for v in &p.values {
                match v {
                    GpuSceneFieldValue::Flags(f) => r.flags = *f,
                    GpuSceneFieldValue::GroupId(g) => r.group_id = *g,
                    GpuSceneFieldValue::GeometryId(g) => r.geometry_id = *g,
                    GpuSceneFieldValue::CommandSlot(c) => r.command_slot = *c,
                    GpuSceneFieldValue::Sphere(s) => r.sphere = *s,
                    GpuSceneFieldValue::Aabb { min, max } => {
                        r.aabb_min = *min;
                        r.aabb_max = *max;
                    }
                    GpuSceneFieldValue::Transform(t) => r.transform = *t,
                    GpuSceneFieldValue::Words { byte_offset, words } => {
                        let w: &mut [u32; 32] = bytemuck::cast_mut(&mut r);
                        let at = (*byte_offset / 4) as usize;
                        w[at..at + words.len()].copy_from_slice(words);
                    }
                }
            }
            self.put(slot, &r);
        }
        let mut uninserted = Vec::new();
        for r in &m.insert {
            let used: std::collections::HashSet<u32> = self.live.values().copied().collect();
            let slot = (0..self.capacity).find(|s| !used.contains(s));
            match slot {
                Some(s) if uninserted.is_empty() => {
                    let mut r = *r;
                    r.flags |= 1;
                    self.put(s, &r);
                    self.live.insert(r.object_id, s);
                    self.count = self.count.max(s + 1);
                }
                _ => {
                    uninserted.push(r.object_id);
                    self.overflow = true;
                }
            }
        }
        if m.compact {
            let mut order: Vec<(u32, u32)> = self.live.iter().map(|(&id, &s)| (s, id)).collect();
            order.sort_unstable();
            let records: Vec<GpuSceneRecord> = order.iter().map(|&(s, _)| self.record(s)).collect();
            for (to, (r, &(_, id))) in records.iter().zip(&order).enumerate() {
                self.put(to as u32, r);
                self.live.insert(id, to as u32);
            }
            let n = records.len();
            for s in n..self.count as usize {
                self.bytes[s * R as usize..(s + 1) * R as usize].fill(0);
            }
            self.count = n as u32;
        }
        uninserted
    }

    /// The packed bounds rows the GPU must hold: each slot below the high-water mark packed
    /// from its record, zero above it (never written, or cleared by compaction).
    fn bounds(&self) -> Vec<u8> {
        (0..self.capacity)
            .flat_map(|s| {
                let row = if s < self.count {
                    packed_bounds(&self.record(s))
                } else {
                    [0; 4]
                };
                bytemuck::cast::<[u32; 4], [u8; 16]>(row)
            })
            .collect()
    }

    /// The draw key rows the GPU must hold, as [`Self::bounds`].
    fn keys(&self) -> Vec<u8> {
        (0..self.capacity)
            .flat_map(|s| {
                let row = if s < self.count {
                    draw_key(&self.record(s))
                } else {
                    [0; 4]
                };
                bytemuck::cast::<[u32; 4], [u8; 16]>(row)
            })
            .collect()
    }

    fn state(&self) -> GpuSceneState {
        GpuSceneState {
            count: self.count,
            active_count: self.live.len() as u32,
            overflow: u32::from(self.overflow),
            reserved: 0,
        }
    }
}

/// A scene whose unused slots hold poison on the GPU (so an unwritten byte is caught).
fn poisoned_scene(d: &SceneDevice, capacity: u32, initial: &[GpuSceneRecord]) -> GpuScene {
    let scene = GpuScene::new(&d.device, &d.queue, "s", capacity, initial).unwrap();
    let tail = (capacity as usize - initial.len()) * R as usize;
    if tail > 0 {
        d.queue.write_buffer(
            scene.record_buffer(),
            initial.len() as u64 * R,
            &vec![POISON; tail],
        );
    }
    scene
}

fn gpu_state(d: &SceneDevice, scene: &GpuScene) -> GpuSceneState {
    *bytemuck::from_bytes(&read_bytes(d, scene.state_buffer())[..16])
}

fn gpu_bounds(d: &SceneDevice, scene: &GpuScene) -> Vec<u8> {
    let n = scene.capacity() as usize * 16;
    read_bytes(d, scene.bounds_buffer().unwrap())[..n].to_vec()
}

fn gpu_keys(d: &SceneDevice, scene: &GpuScene) -> Vec<u8> {
    let n = scene.capacity() as usize * 16;
    read_bytes(d, scene.key_buffer().unwrap())[..n].to_vec()
}

fn gpu_records(d: &SceneDevice, scene: &GpuScene, capacity: u32) -> Vec<u8> {
    read_bytes(d, scene.record_buffer())[..(capacity as u64 * R) as usize].to_vec()
}

/// Every byte that differs between `before` and `after` lies in one of `ranges`.
fn changes_within(before: &[u8], after: &[u8], ranges: &[Range<u64>]) {
    for (i, (a, b)) in before.iter().zip(after).enumerate() {
        if a != b {
            let i = i as u64;
            assert!(
                ranges.iter().any(|r| r.contains(&i)),
                "byte {i} (slot {}, record byte {}) changed outside the reported ranges {ranges:?}",
                i / R,
                i % R
            );
        }
    }
}

#[test]
fn exact_upload_ranges_per_transaction() {
    let d = scene_device();
    let initial: Vec<GpuSceneRecord> = (0..6)
        .map(|i| {
            GpuSceneRecord::new(100 + i)
                .with_command_slot(i)
                .with_group(1)
        })
        .collect();
    let mut scene = poisoned_scene(&d, 8, &initial);
    let mut model = Model::new(8, &initial);

    // One 4-byte field of slot 3.
    let m = GpuSceneMutation {
        patch: vec![GpuScenePatch {
            id: 103,
            values: vec![GpuSceneFieldValue::GroupId(9)],
        }],
        ..Default::default()
    };
    let rep = scene.mutate(&d.queue, &m).unwrap();
    model.apply(&m);
    assert_eq!(rep.record_writes, vec![3 * R + 8..3 * R + 12]);
    assert_eq!(
        (rep.record_bytes, rep.state_bytes, rep.write_count()),
        (4, 0, 2)
    );
    assert_eq!((rep.bounds_writes.len(), rep.bounds_bytes), (0, 0));
    // The group feeds slot 3's draw key row.
    assert_eq!(rep.key_writes, vec![48..64]);
    assert_eq!(rep.key_bytes, 16);
    assert_eq!(rep.uploaded_bytes(), 4 + 16);
    assert_eq!(gpu_records(&d, &scene, 8), model.bytes);
    assert_eq!(gpu_bounds(&d, &scene), model.bounds());
    assert_eq!(gpu_keys(&d, &scene), model.keys());

    // A box rewrites the command slot word between its corners, unchanged: no key row, and
    // no bounds row (the sphere is left as it is).
    let m = GpuSceneMutation {
        patch: vec![GpuScenePatch {
            id: 105,
            values: vec![GpuSceneFieldValue::Aabb {
                min: [-1.0; 3],
                max: [2.0; 3],
            }],
        }],
        ..Default::default()
    };
    let rep = scene.mutate(&d.queue, &m).unwrap();
    model.apply(&m);
    assert_eq!(rep.record_writes, vec![5 * R + 32..5 * R + 60]);
    assert_eq!((rep.key_writes.len(), rep.bounds_writes.len()), (0, 0));
    assert_eq!((rep.uploaded_bytes(), rep.write_count()), (28, 1));
    assert_eq!(gpu_records(&d, &scene, 8), model.bytes);
    assert_eq!(gpu_keys(&d, &scene), model.keys());

    // Adjacent fields join into one write; two records stay two writes.
    let m = GpuSceneMutation {
        patch: vec![
            GpuScenePatch {
                id: 101,
                values: vec![
                    GpuSceneFieldValue::GeometryId(4),
                    GpuSceneFieldValue::Sphere([1.0, 2.0, 3.0, 0.5]),
                ],
            },
            GpuScenePatch {
                id: 104,
                values: vec![GpuSceneFieldValue::Transform(
                    gpugraph_render::gpu_scene::IDENTITY,
                )],
            },
        ],
        ..Default::default()
    };
    let rep = scene.mutate(&d.queue, &m).unwrap();
    model.apply(&m);
    assert_eq!(rep.record_writes, vec![R + 12..R + 32, 4 * R + 64..5 * R]);
    assert_eq!(rep.record_bytes, 20 + 64);
    // The sphere moves slot 1's packed bounds row; the transform none.
    assert_eq!(rep.bounds_writes, vec![16..32]);
    // The geometry moves slot 1's draw key row.
    assert_eq!(rep.key_writes, vec![16..32]);
    assert_eq!((rep.bounds_bytes, rep.write_count()), (16, 4));
    assert_eq!(rep.uploaded_bytes(), 20 + 64 + 16 + 16);
    assert_eq!(gpu_bounds(&d, &scene), model.bounds());
    assert_eq!(gpu_keys(&d, &scene), model.keys());

    // Removal writes the flags word and the state block.
    let m = GpuSceneMutation {
        remove: vec![102, 100],
        ..Default::default()
    };
    let rep = scene.mutate(&d.queue, &m).unwrap();
    model.apply(&m);
    assert_eq!(rep.record_writes, vec![4..8, 2 * R + 4..2 * R + 8]);
    assert_eq!((rep.record_bytes, rep.state_bytes), (8, 16));
    assert_eq!(rep.removed, vec![(102, 2), (100, 0)]);
    assert_eq!(gpu_state(&d, &scene), model.state());
    // Removed slots' rows turn dead: two 16-byte writes.
    assert_eq!(rep.bounds_writes, vec![0..16, 32..48]);
    assert_eq!(rep.key_writes, vec![0..16, 32..48]);
    assert_eq!(rep.write_count(), 2 + 2 + 2 + 1);
    assert_eq!(gpu_bounds(&d, &scene), model.bounds());
    assert_eq!(gpu_keys(&d, &scene), model.keys());

    // Inserts reuse the lowest holes, then the high-water mark; the last overflows exactly.
    let new: Vec<GpuSceneRecord> = (0..5).map(|i| GpuSceneRecord::new(200 + i)).collect();
    let m = GpuSceneMutation {
        insert: new,
        ..Default::default()
    };
    let rep = scene.mutate(&d.queue, &m).unwrap();
    let uninserted = model.apply(&m);
    assert_eq!(rep.inserted, vec![(200, 0), (201, 2), (202, 6), (203, 7)]);
    assert_eq!(rep.uninserted, vec![204]);
    assert_eq!(uninserted, vec![204]);
    assert_eq!(rep.record_writes, vec![0..R, 2 * R..3 * R, 6 * R..8 * R]);
    assert_eq!(rep.record_bytes, 4 * R);
    assert_eq!(rep.bounds_writes, vec![0..16, 32..48, 96..128]);
    assert_eq!(rep.bounds_bytes, 4 * 16);
    assert_eq!(rep.key_writes, vec![0..16, 32..48, 96..128]);
    assert_eq!(rep.key_bytes, 4 * 16);
    assert_eq!(gpu_bounds(&d, &scene), model.bounds());
    assert_eq!(gpu_keys(&d, &scene), model.keys());
    assert_eq!(gpu_records(&d, &scene, 8), model.bytes);
    assert_eq!(gpu_state(&d, &scene), model.state());
    assert_eq!(gpu_state(&d, &scene).overflow, 1);
    let err = rep.into_complete(&scene).unwrap_err();
    assert!(
        matches!(
            err,
            GpuSceneError::CapacityExceeded {
                capacity: 8,
                required: 9,
                ..
            }
        ),
        "{err}"
    );

    // A dense scene compacts to nothing.
    let rep = scene.compact(&d.queue).unwrap();
    assert_eq!((rep.uploaded_bytes(), rep.moves.len()), (0, 0));

    // Remove two, compact: moved records at their new slots plus the zeroed suffix.
    let m = GpuSceneMutation {
        remove: vec![201, 105],
        compact: true,
        ..Default::default()
    };
    let rep = scene.mutate(&d.queue, &m).unwrap();
    model.apply(&m);
    assert_eq!(
        rep.moves
            .iter()
            .map(|m| (m.id, m.from, m.to))
            .collect::<Vec<_>>(),
        vec![(103, 3, 2), (104, 4, 3), (202, 6, 4), (203, 7, 5)]
    );
    assert_eq!(rep.record_writes, vec![2 * R..8 * R]);
    assert_eq!(rep.bounds_writes, vec![32..128]);
    assert_eq!(rep.key_writes, vec![32..128]);
    assert_eq!(gpu_records(&d, &scene, 8), model.bytes);
    assert_eq!(gpu_bounds(&d, &scene), model.bounds());
    assert_eq!(gpu_keys(&d, &scene), model.keys());
    assert_eq!(gpu_state(&d, &scene), model.state());
    assert_eq!(scene.slot_of(203), Some(5));
}

#[test]
fn bad_transactions_change_nothing() {
    let d = scene_device();
    let initial: Vec<GpuSceneRecord> = (0..4).map(|i| GpuSceneRecord::new(10 + i)).collect();
    let mut scene = poisoned_scene(&d, 4, &initial);
    let before = gpu_records(&d, &scene, 4);
    let state = gpu_state(&d, &scene);
    let patch = |id, v| GpuScenePatch {
        id,
        values: vec![v],
    };
    let cases: Vec<(GpuSceneMutation, &str)> = vec![
        (
            GpuSceneMutation {
                remove: vec![10, 99],
                ..Default::default()
            },
            "unknown",
        ),
        (
            GpuSceneMutation {
                remove: vec![11],
                patch: vec![patch(11, GpuSceneFieldValue::GroupId(1))],
                ..Default::default()
            },
            "duplicate",
        ),
        (
            GpuSceneMutation {
                insert: vec![GpuSceneRecord::new(12)],
                ..Default::default()
            },
            "live insert",
        ),
        (
            GpuSceneMutation {
                insert: vec![GpuSceneRecord::new(u32::MAX)],
                ..Default::default()
            },
            "invalid id",
        ),
        (
            GpuSceneMutation {
                patch: vec![patch(
                    13,
                    GpuSceneFieldValue::Sphere([0.0, f32::NAN, 0.0, 1.0]),
                )],
                ..Default::default()
            },
            "nan",
        ),
        (
            GpuSceneMutation {
                patch: vec![patch(
                    13,
                    GpuSceneFieldValue::Aabb {
                        min: [0.0; 3],
                        max: [1.0, -1.0, 1.0],
                    },
                )],
                ..Default::default()
            },
            "box",
        ),
        (
            GpuSceneMutation {
                patch: vec![patch(13, GpuSceneFieldValue::Flags(2))],
                ..Default::default()
            },
            "flags",
        ),
        (
            GpuSceneMutation {
                patch: vec![patch(
                    13,
                    GpuSceneFieldValue::Words {
                        byte_offset: 124,
                        words: vec![1, 2],
                    },
                )],
                ..Default::default()
            },
            "range",
        ),
    ];
    for (m, what) in cases {
        let e = scene.mutate(&d.queue, &m).unwrap_err();
        let ok = match what {
            "unknown" => matches!(
                e,
                GpuSceneError::UnknownId {
                    id: 99,
                    operation: GpuSceneOperation::Remove,
                    ..
                }
            ),
            "duplicate" => matches!(
                e,
                GpuSceneError::DuplicateId {
                    id: 11,
                    first: GpuSceneOperation::Remove,
                    second: GpuSceneOperation::Patch,
                    ..
                }
            ),
            "live insert" => matches!(
                e,
                GpuSceneError::DuplicateId {
                    id: 12,
                    second: GpuSceneOperation::Insert,
                    ..
                }
            ),
            "invalid id" => matches!(
                e,
                GpuSceneError::InvalidField {
                    field: GpuSceneField::ObjectId,
                    ..
                }
            ),
            "nan" => matches!(
                e,
                GpuSceneError::InvalidField {
                    id: 13,
                    field: GpuSceneField::Sphere,
                    ..
                }
            ),
            "box" => matches!(
                e,
                GpuSceneError::InvalidField {
                    id: 13,
                    field: GpuSceneField::AabbMin,
                    ..
                }
            ),
            "flags" => matches!(
                e,
                GpuSceneError::InvalidField {
                    id: 13,
                    field: GpuSceneField::Flags,
                    ..
                }
            ),
            "range" => matches!(
                e,
                GpuSceneError::BadFieldRange {
                    id: 13,
                    byte_offset: 124,
                    bytes: 8,
                    ..
                }
            ),
            _ => false,
        };
        assert!(ok, "{what}: {e}");
    }
    assert_eq!(gpu_records(&d, &scene, 4), before);
    assert_eq!(gpu_state(&d, &scene), state);
    assert!(matches!(
        GpuScene::new(&d.device, &d.queue, "x", 1, &initial[..2]).unwrap_err(),
        GpuSceneError::CapacityExceeded {
            capacity: 1,
            required: 2,
            ..
        }
    ));
}

/// Random transaction streams against the model across capacities 0, 1, 64, 255, 257: bytes,
/// state, identity and references after every transaction; changes only inside reported
/// ranges; reported bytes equal the ranges' sum.
#[test]
fn random_transaction_streams_match_the_model() {
    let d = scene_device();
    for (seed, capacity) in [(1u64, 0u32), (2, 1), (3, 64), (4, 255), (5, 257)] {
        let mut rng = rng(seed);
        let n0 = rng.random_range(0..=capacity);
        let mut next_id = 1000u32;
        let initial: Vec<GpuSceneRecord> = (0..n0)
            .map(|_| {
                next_id += rng.random_range(1..5);
                random_record(&mut rng, next_id, 10.0, capacity)
            })
            .collect();
        let mut scene = poisoned_scene(&d, capacity, &initial);
        let mut model = Model::new(capacity, &initial);
        for step in 0..12 {
            let mut ids: Vec<u32> = model.live.keys().copied().collect();
            let remove = take_some(&mut rng, &mut ids, 0.15);
            let patched = take_some(&mut rng, &mut ids, 0.2);
            let patch = patched
                .into_iter()
                .map(|id| {
                    let r = random_record(&mut rng, id, 10.0, capacity);
                    let values = match rng.random_range(0..7) {
                        0 => vec![GpuSceneFieldValue::GroupId(r.group_id)],
                        1 => vec![
                            GpuSceneFieldValue::CommandSlot(r.command_slot),
                            GpuSceneFieldValue::GeometryId(r.geometry_id),
                        ],
                        2 => vec![GpuSceneFieldValue::Aabb {
                            min: r.aabb_min,
                            max: r.aabb_max,
                        }],
                        3 => vec![GpuSceneFieldValue::Transform(r.transform)],
                        4 => vec![GpuSceneFieldValue::Sphere(r.sphere)],
                        5 => vec![GpuSceneFieldValue::Flags(r.flags)],
                        _ => vec![GpuSceneFieldValue::Words {
                            byte_offset: 28,
                            words: vec![r.flags, 0, 0, 0, r.flags],
                        }],
                    };
                    GpuScenePatch { id, values }
                })
                .collect();
            let inserts = rng.random_range(0..=(capacity / 4 + 2));
            let insert = (0..inserts)
                .map(|_| {
                    next_id += rng.random_range(1..5);
                    random_record(&mut rng, next_id, 10.0, capacity)
                })
                .collect();
            let m = GpuSceneMutation {
                remove,
                patch,
                insert,
                compact: rng.random_bool(0.25),
            };
            let before = gpu_records(&d, &scene, capacity);
            let bounds_before = gpu_bounds(&d, &scene);
            let keys_before = gpu_keys(&d, &scene);
            let rep = scene.mutate(&d.queue, &m).unwrap();
            let uninserted = model.apply(&m);
            let after = gpu_records(&d, &scene, capacity);
            let ctx = format!("capacity {capacity} step {step}");
            assert_eq!(after, model.bytes, "{ctx}: record bytes");
            assert_eq!(gpu_state(&d, &scene), model.state(), "{ctx}: state");
            assert_eq!(rep.uninserted, uninserted, "{ctx}");
            changes_within(&before, &after, &rep.record_writes);
            let bounds_after = gpu_bounds(&d, &scene);
            assert_eq!(bounds_after, model.bounds(), "{ctx}: packed bounds");
            changes_within(&bounds_before, &bounds_after, &rep.bounds_writes);
            // No row is written whose slot's flags and sphere bytes were not.
            for row in rep
                .bounds_writes
                .iter()
                .flat_map(|b| (b.start / 16)..(b.end / 16))
            {
                let base = row * R;
                let fed = [base + 4..base + 8, base + 16..base + 32];
                assert!(
                    rep.record_writes
                        .iter()
                        .any(|r| fed.iter().any(|f| r.start < f.end && f.start < r.end)),
                    "{ctx}: bounds row {row} written without its inputs"
                );
            }
            let bsum: u64 = rep.bounds_writes.iter().map(|r| r.end - r.start).sum();
            assert_eq!(rep.bounds_bytes, bsum, "{ctx}");
            let keys_after = gpu_keys(&d, &scene);
            assert_eq!(keys_after, model.keys(), "{ctx}: draw keys");
            changes_within(&keys_before, &keys_after, &rep.key_writes);
            // No key row is written whose slot's flags..geometry and command slot were not.
            for row in rep
                .key_writes
                .iter()
                .flat_map(|b| (b.start / 16)..(b.end / 16))
            {
                let base = row * R;
                let fed = [base + 4..base + 16, base + 44..base + 48];
                assert!(
                    rep.record_writes
                        .iter()
                        .any(|r| fed.iter().any(|f| r.start < f.end && f.start < r.end)),
                    "{ctx}: key row {row} written without its inputs"
                );
            }
            let ksum: u64 = rep.key_writes.iter().map(|r| r.end - r.start).sum();
            assert_eq!(rep.key_bytes, ksum, "{ctx}");
            let sum: u64 = rep.record_writes.iter().map(|r| r.end - r.start).sum();
            assert_eq!(rep.record_bytes, sum, "{ctx}");
            assert!(
                rep.record_writes.windows(2).all(|w| w[0].end < w[1].start),
                "{ctx}: ranges sorted, disjoint, not touching: {:?}",
                rep.record_writes
            );
            for (&id, &slot) in &model.live {
                assert_eq!(scene.slot_of(id), Some(slot), "{ctx}: id {id}");
                assert_eq!(model.record(slot).object_id, id, "{ctx}");
            }
        }
    }
}

/// 1,000 one-field patches upload 4 bytes each (≤ 128 KB: the budget).
#[test]
fn patch_of_a_thousand_records_uploads_little() {
    let d = scene_device();
    let initial: Vec<GpuSceneRecord> = (0..4096).map(|i| GpuSceneRecord::new(i * 3)).collect();
    let mut scene = GpuScene::new(&d.device, &d.queue, "big", 4096, &initial).unwrap();
    let m = GpuSceneMutation {
        patch: (0..1000)
            .map(|i| GpuScenePatch {
                id: i * 4 * 3,
                values: vec![GpuSceneFieldValue::CommandSlot(i)],
            })
            .collect(),
        ..Default::default()
    };
    let rep = scene.mutate(&d.queue, &m).unwrap();
    assert_eq!(rep.record_bytes, 4000);
    assert_eq!(rep.record_writes.len(), 1000);
    let words = read_words(&d, scene.record_buffer());
    assert_eq!(words[(4 * 7 * 32 + 11) as usize], 7);
}

/// Field views are strided columns of the one record buffer: the view of every field starts
/// at its record offset with stride 128 and covers the capacity.
#[test]
fn typed_field_views() {
    let d = scene_device();
    let scene = GpuScene::new(&d.device, &d.queue, "v", 5, &[GpuSceneRecord::new(1)]).unwrap();
    let mut g = CommandGraph::new("g", &d.device);
    let v = scene.import_to_graph(&mut g, "scene").unwrap();
    for f in GpuSceneField::ALL {
        let view = v.field(f);
        assert_eq!(view.byte_offset(), f.byte_offset(), "{}", f.name());
        assert_eq!(view.byte_stride(), R, "{}", f.name());
        assert_eq!((view.len(), view.format()), (5, f.format()), "{}", f.name());
        assert_eq!(view.buffer(), v.records);
    }
    assert_eq!(v.transform[3].byte_offset(), 112);
    assert_eq!(v.record_words.len(), 5 * 32);
    assert_eq!(
        (
            v.count.byte_offset(),
            v.active_count.byte_offset(),
            v.overflow.byte_offset()
        ),
        (0, 4, 8)
    );
    // Importing again (a second scene view in the same graph) reuses the handles.
    let again = scene.import_to_graph(&mut g, "scene-2").unwrap();
    assert_eq!(again.records, v.records);
}

#[test]
fn capacity_past_the_binding_limit_is_a_named_error() {
    let d = scene_device();
    let limits = d.device.limits();
    let binding = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    // The largest capacity the limit holds, then one more slot.
    let fits = binding / R;
    let over = u32::try_from(fits + 1).unwrap_or(u32::MAX);
    let err = GpuScene::new(&d.device, &d.queue, "huge", over, &[]).unwrap_err();
    match err {
        GpuSceneError::DeviceLimit {
            ref scene,
            capacity,
            bytes,
            limit,
            ..
        } => {
            assert_eq!((scene.as_str(), capacity), ("huge", over));
            assert_eq!(bytes, u64::from(over) * R);
            assert_eq!(limit, binding);
        }
        other => panic!("expected DeviceLimit, got {other}"),
    }
    assert!(
        err.to_string().contains(&format!("at most {fits} slots")),
        "{err}"
    );
}
