//! The table-scene consumer (spec 6.3b) on the GPU: GPU tables of points and boxes in uneven
//! batches (empty ones included, sizes around the 256-row workgroup) become canonical records
//! batch by batch (checked word for word against the CPU producer), borrowed as ordered
//! partitions, and drawn by the same frame as a scene graph: per layer, the visible rows, the
//! published draws and the per-group counts equal the oracles for several cameras, with no
//! recompilation; a pick answers the table's global row. Bad columns are typed errors.

mod scene_support;

use gpugraph_command::wgpu::BufferUsages as U;
use gpugraph_command::{CommandGraph, VectorFormat};
use gpugraph_render::camera::{look_at, mul, perspective};
use gpugraph_render::gpu_scene::cpu;
use gpugraph_render::gpu_scene::table::{
    table_records, GpuTableScene, TableGroupValues, TableRows, TableSceneColumns,
    TABLE_SCENE_RECORD_COLUMN,
};
use gpugraph_render::gpu_scene::{GpuSceneFrame, GpuSceneFrameOptions, GpuSceneRecord};
use gpugraph_render::{RenderError, ViewParams, NO_OBJECT};
use gpugraph_tables::{GpuData, GpuRecordBatch, GpuTable, GpuVector};
use rand::Rng;
use scene_support::*;

/// One batch's host columns.
struct HostBatch {
    x: Vec<f32>,
    y: Vec<f32>,
    z: Vec<f32>,
    x_max: Vec<f32>,
    y_max: Vec<f32>,
    group: Vec<i32>,
}

fn host_batches(sizes: &[usize], seed: u64) -> Vec<HostBatch> {
    let mut rng = rng(seed);
    sizes
        .iter()
        .map(|&n| {
            let mut c = || -> Vec<f32> { (0..n).map(|_| rng.random_range(-20.0..20.0)).collect() };
            let (x, y, z) = (c(), c(), c());
            let x_max = x.iter().map(|v| v + 1.5).collect();
            let y_max = y.iter().map(|v| v - 0.75).collect();
            let group = (0..n).map(|_| rng.random_range(-9..9)).collect();
            HostBatch {
                x,
                y,
                z,
                x_max,
                y_max,
                group,
            }
        })
        .collect()
}

fn upload<T: bytemuck::Pod>(d: &SceneDevice, v: &[T], f: VectorFormat) -> GpuVector {
    GpuVector::from_data(GpuData::upload_to_device(&d.device, &d.queue, v, f, U::empty()).unwrap())
}

fn gpu_table(d: &SceneDevice, batches: &[HostBatch]) -> GpuTable {
    let batches: Vec<GpuRecordBatch> = batches
        .iter()
        .map(|b| {
            GpuRecordBatch::from_columns([
                ("x", upload(d, &b.x, VectorFormat::Float32)),
                ("y", upload(d, &b.y, VectorFormat::Float32)),
                ("z", upload(d, &b.z, VectorFormat::Float32)),
                ("x2", upload(d, &b.x_max, VectorFormat::Float32)),
                ("y2", upload(d, &b.y_max, VectorFormat::Float32)),
                ("kind", upload(d, &b.group, VectorFormat::Sint32)),
            ])
            .unwrap()
        })
        .collect();
    GpuTable::new(batches[0].schema().clone(), batches).unwrap()
}

fn columns(boxes: bool, group: bool, z: bool) -> TableSceneColumns {
    TableSceneColumns {
        x: "x".into(),
        y: "y".into(),
        z: z.then(|| "z".into()),
        x_max: boxes.then(|| "x2".into()),
        y_max: boxes.then(|| "y2".into()),
        z_max: None,
        group: group.then(|| "kind".into()),
        groups: 5,
        radius: 0.4,
    }
}

/// Runs the producer graph once.
fn produce(d: &SceneDevice, scene: &GpuTableScene, table: &GpuTable) {
    let mut g = CommandGraph::new("table-scene-producer", &d.device);
    scene.add_producer(&mut g, table).unwrap();
    let mut compiled = g.compile().unwrap();
    encode_wait(d, &mut compiled);
}

/// The producer's records equal the oracle's (the sphere radius within rounding of `length`).
fn check_records(got: &[GpuSceneRecord], want: &[GpuSceneRecord], ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}");
    for (r, (g, w)) in got.iter().zip(want).enumerate() {
        let mut g2 = *g;
        assert!(
            (g.sphere[3] - w.sphere[3]).abs() <= 1e-5 * w.sphere[3].max(1.0),
            "{ctx}: row {r} radius {} vs {}",
            g.sphere[3],
            w.sphere[3]
        );
        g2.sphere[3] = w.sphere[3];
        assert_eq!(&g2, w, "{ctx}: row {r}");
    }
}

fn run_case(boxes: bool, group: bool, z: bool, seed: u64) {
    let ctx = format!("boxes {boxes}, group {group}, z {z}");
    let d = scene_device();
    let sizes = [5usize, 0, 300, 1, 256, 0, 257];
    let host = host_batches(&sizes, seed);
    let table = gpu_table(&d, &host);
    let cols = columns(boxes, group, z);
    let scene = GpuTableScene::new(&d.device, &d.queue, &table, cols.clone()).unwrap();
    produce(&d, &scene, &table);

    // Records, batch by batch, against the CPU producer; partitions keep empty batches.
    let parts = &scene.partitions().partitions;
    assert_eq!(parts.len(), sizes.len(), "{ctx}");
    let mut all: Vec<Vec<GpuSceneRecord>> = Vec::new();
    let mut first = 0u32;
    for (b, h) in host.iter().enumerate() {
        let rows = TableRows {
            x: &h.x,
            y: &h.y,
            z: z.then_some(&h.z[..]),
            x_max: boxes.then_some(&h.x_max[..]),
            y_max: boxes.then_some(&h.y_max[..]),
            z_max: None,
            group: group.then_some(TableGroupValues::I32(&h.group)),
        };
        let want = table_records(&rows, b as u32, first, cols.groups, cols.radius);
        assert_eq!(
            parts[b].first_record,
            u64::from(first),
            "{ctx}: batch {b} base"
        );
        match &parts[b].scene {
            None => assert_eq!(sizes[b], 0, "{ctx}: batch {b}"),
            Some(s) => {
                let bytes = read_bytes(&d, s.record_buffer());
                let at = s.record_buffer_offset() as usize;
                let got: &[GpuSceneRecord] = bytemuck::cast_slice(&bytes[at..at + 128 * sizes[b]]);
                check_records(got, &want, &format!("{ctx}: batch {b}"));
                assert_eq!(
                    s.record_buffer(),
                    scene.record_table().batches()[b]
                        .column(TABLE_SCENE_RECORD_COLUMN)
                        .unwrap()
                        .chunks()[0]
                        .buffer(),
                    "{ctx}: the partition borrows its batch's records"
                );
            }
        }
        first += sizes[b] as u32;
        all.push(want);
    }

    let layers = scene.layers();
    assert_eq!(scene.layer_batches(), vec![0, 2, 3, 4, 6], "{ctx}");
    let (vertices, indices) = scene.mesh();
    let (w, h) = (64, 48);
    let mut frame = GpuSceneFrame::new(
        &d.device,
        &layers,
        vertices,
        indices,
        GpuSceneFrameOptions {
            width: w,
            height: h,
            draw: true,
            picking: true,
            readback: false,
        },
    )
    .unwrap();
    let pipelines = frame.pipelines_created();
    let mut published = Vec::new();
    for eye in [[0.0, 5.0, 45.0], [30.0, 20.0, -10.0], [-5.0, 60.0, 2.0]] {
        let vp = mul(
            &perspective(50f32.to_radians(), w as f32 / h as f32, 0.5, 200.0),
            &look_at(eye, [0.0; 3], [0.0, 1.0, 0.0]),
        );
        frame.set_camera(&d.queue, &vp, eye);
        frame.set_pick(w / 2, h / 2).unwrap();
        let mut enc = d.device.create_command_encoder(&Default::default());
        frame.encode(&mut enc, false).unwrap();
        d.queue.submit([enc.finish()]);
        let got = frame
            .decode_diagnostics(&read_words(&d, frame.diagnostics_buffer()))
            .unwrap();
        let view = ViewParams::new(&vp, eye);
        let mut total = 0;
        for (l, layer) in layers.iter().enumerate() {
            let b = scene.layer_batches()[l];
            let want =
                cpu::frame_diagnostics(&all[b], &view, layer.commands.records(), layer.groups);
            assert_eq!(got[l], want, "{ctx}: eye {eye:?} layer {l} (batch {b})");
            assert_eq!(want.draw_overflow, 0, "{ctx}: one slot per row");
            assert_eq!(want.group_counts.iter().sum::<u32>(), want.published);
            total += want.published;
        }
        published.push(total);
        // The pick answers a global row whose box the center ray can meet.
        let pick = read_mapped(&d, frame.pick_buffer().unwrap());
        if pick[0] != NO_OBJECT {
            let layer = pick[1] as usize;
            let b = scene.layer_batches()[layer];
            let row = pick[0] as u64 - parts[b].first_record;
            assert!(
                row < sizes[b] as u64,
                "{ctx}: picked row {} in batch {b}",
                pick[0]
            );
        }
    }
    assert!(
        published.windows(2).any(|p| p[0] != p[1]),
        "{ctx}: {published:?}"
    );
    assert!(published.iter().all(|&p| p > 0), "{ctx}: {published:?}");
    assert_eq!(
        frame.pipelines_created(),
        pipelines,
        "{ctx}: no recompilation"
    );
}

#[test]
fn points_one_group_per_batch() {
    run_case(false, false, true, 1);
}

#[test]
fn boxes_in_group_column_windows() {
    run_case(true, true, true, 2);
}

#[test]
fn flat_points_in_groups() {
    run_case(false, true, false, 3);
}

/// Picking a row: a single big box straight ahead answers its global row.
#[test]
fn pick_answers_the_global_row() {
    let d = scene_device();
    let mut host = host_batches(&[3, 2], 4);
    // Batch 1 row 1 (global row 4) sits in front of the camera; the rest far to the side.
    for b in &mut host {
        b.x.iter_mut().for_each(|v| *v = 50.0);
    }
    host[1].x[1] = 0.0;
    host[1].y[1] = 0.0;
    host[1].z[1] = 0.0;
    let table = gpu_table(&d, &host);
    let mut cols = columns(false, false, true);
    cols.radius = 2.0;
    let scene = GpuTableScene::new(&d.device, &d.queue, &table, cols).unwrap();
    produce(&d, &scene, &table);
    let (vertices, indices) = scene.mesh();
    let mut frame = GpuSceneFrame::new(
        &d.device,
        &scene.layers(),
        vertices,
        indices,
        GpuSceneFrameOptions {
            width: 32,
            height: 32,
            draw: true,
            picking: true,
            readback: false,
        },
    )
    .unwrap();
    let eye = [0.0, 0.0, 10.0];
    let vp = mul(
        &perspective(50f32.to_radians(), 1.0, 0.5, 100.0),
        &look_at(eye, [0.0; 3], [0.0, 1.0, 0.0]),
    );
    frame.set_camera(&d.queue, &vp, eye);
    frame.set_pick(16, 16).unwrap();
    let mut enc = d.device.create_command_encoder(&Default::default());
    frame.encode(&mut enc, false).unwrap();
    d.queue.submit([enc.finish()]);
    let pick = read_mapped(&d, frame.pick_buffer().unwrap());
    assert_eq!((pick[0], pick[1]), (4, 1), "global row 4 in layer 1");
}

#[test]
fn bad_columns_are_typed_errors() {
    let d = scene_device();
    let host = host_batches(&[4, 2], 5);
    let table = gpu_table(&d, &host);
    let err =
        |c: TableSceneColumns| GpuTableScene::new(&d.device, &d.queue, &table, c).unwrap_err();
    let mut c = columns(false, false, true);
    c.x = "nope".into();
    let e = err(c);
    assert!(
        matches!(e, RenderError::Table(_)) && e.to_string().contains("nope"),
        "{e}"
    );
    let mut c = columns(false, false, true);
    c.y = "kind".into();
    let e = err(c);
    assert!(
        matches!(&e, RenderError::TableScene { column, .. } if column == "kind")
            && e.to_string().contains("float32"),
        "{e}"
    );
    let mut c = columns(false, true, true);
    c.group = Some("x".into());
    c.groups = 0;
    assert!(matches!(err(c), RenderError::TableScene { column, .. } if column == "groups"));
    let mut c = columns(true, false, true);
    c.y_max = None;
    assert!(matches!(err(c), RenderError::TableScene { column, .. } if column == "x_max"));
    let mut c = columns(false, false, true);
    c.radius = f32::NAN;
    assert!(matches!(err(c), RenderError::TableScene { column, .. } if column == "radius"));
    // The producer refuses a table other than the one the scene was built from.
    let scene =
        GpuTableScene::new(&d.device, &d.queue, &table, columns(false, false, true)).unwrap();
    let other = gpu_table(&d, &host_batches(&[4], 6));
    let mut g = CommandGraph::new("g", &d.device);
    let e = scene.add_producer(&mut g, &other).unwrap_err();
    assert!(e.to_string().contains("no batch 1"), "{e}");
}
