//! `gpugraph scene` and `gpugraph bench scene` end to end on the device (lavapipe in CI): a
//! generated city with mutations, a hand-written glTF file and a Parquet point table each
//! write a real picture (many pixels off the background, several colours) and a pick that
//! names the node or row; bad inputs fail with one `error:` line naming the file or flag and
//! leave no output behind; the bench runs at a small size with its peer.

mod common;

use std::sync::Arc;

use arrow_array::{Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use common::*;

/// RGBA pixels of a PNG the scene wrote.
fn read_rgba(path: &str) -> (u32, u32, Vec<u8>) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgba, "{path}");
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// The picture is real: at least `min_fraction` of the pixels differ from the corner
/// (background) pixel, in at least `colours` distinct colours.
fn assert_picture(path: &str, size: (u32, u32), min_fraction: f64, colours: usize) {
    let (w, h, rgba) = read_rgba(path);
    assert_eq!((w, h), size, "{path}");
    let background = &rgba[..4];
    let drawn = rgba.chunks(4).filter(|p| *p != background).count();
    let fraction = drawn as f64 / (w * h) as f64;
    assert!(
        fraction >= min_fraction,
        "{path}: {fraction:.3} of the pixels drawn"
    );
    let distinct: std::collections::HashSet<&[u8]> = rgba.chunks(4).collect();
    assert!(
        distinct.len() >= colours,
        "{path}: {} colours",
        distinct.len()
    );
}

#[test]
fn generated_city_with_mutations_and_a_pick() {
    let dir = TempDir::new("scene-generate");
    let out = dir.path("city.png");
    let args = [
        "scene",
        "--generate",
        "60",
        "--out",
        &out,
        "--frames",
        "3",
        "--mutate",
        "4",
        "--pick",
        "80,60",
        "--width",
        "160",
        "--height",
        "120",
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    let stdout = text(&run.stdout);
    assert!(stdout.contains("scene: 63 nodes, 60 records"), "{stdout}");
    assert!(
        stdout.contains("4p 1r 1i:") && stdout.contains(" B in "),
        "{stdout}"
    );
    assert!(
        stdout.contains("pipelines created after compile: 0"),
        "{stdout}"
    );
    let pick = stdout
        .lines()
        .find(|l| l.starts_with("pick (80, 60)"))
        .unwrap();
    assert!(
        pick.contains("/building-"),
        "the pick names a building: {pick}"
    );
    assert_picture(&out, (160, 120), 0.2, 10);
}

/// A glTF file written by hand: a ground quad and a tower cube under a named parent.
fn write_gltf(dir: &TempDir) -> String {
    let (cube_p, cube_i) = {
        let mut p = Vec::new();
        let mut i = Vec::new();
        for axis in 0..3 {
            for sign in [-1.0f32, 1.0] {
                let (u, w) = ((axis + 1) % 3, (axis + 2) % 3);
                let base = p.len() as u16;
                for (a, b) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
                    let mut v = [0.0f32; 3];
                    v[axis] = sign;
                    v[u] = a;
                    v[w] = b;
                    p.push(v);
                }
                i.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
            }
        }
        (p, i)
    };
    let quad_p: Vec<[f32; 3]> = vec![
        [-6.0, 0.0, -6.0],
        [6.0, 0.0, -6.0],
        [6.0, 0.0, 6.0],
        [-6.0, 0.0, 6.0],
    ];
    let quad_i: Vec<u16> = vec![0, 1, 2, 0, 2, 3];
    let mut bin: Vec<u8> = Vec::new();
    let mut views = Vec::new();
    for bytes in [
        bytemuck::cast_slice::<_, u8>(&cube_p).to_vec(),
        bytemuck::cast_slice::<_, u8>(&cube_i).to_vec(),
        bytemuck::cast_slice::<_, u8>(&quad_p).to_vec(),
        bytemuck::cast_slice::<_, u8>(&quad_i).to_vec(),
    ] {
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        views.push(format!(
            r#"{{"buffer":0,"byteOffset":{},"byteLength":{}}}"#,
            bin.len(),
            bytes.len()
        ));
        bin.extend(bytes);
    }
    std::fs::write(dir.path("scene.bin"), &bin).unwrap();
    let json = format!(
        r#"{{
  "asset": {{"version": "2.0"}},
  "scene": 0,
  "scenes": [{{"nodes": [0]}}],
  "nodes": [
    {{"name": "site", "children": [1, 2]}},
    {{"name": "ground", "mesh": 1}},
    {{"name": "tower", "mesh": 0, "translation": [0, 3, 0], "scale": [1.5, 3, 1.5]}}
  ],
  "meshes": [
    {{"primitives": [{{"attributes": {{"POSITION": 0}}, "indices": 1, "material": 0}}]}},
    {{"primitives": [{{"attributes": {{"POSITION": 2}}, "indices": 3, "material": 1}}]}}
  ],
  "materials": [
    {{"name": "brick", "pbrMetallicRoughness": {{"baseColorFactor": [0.8, 0.3, 0.2, 1]}}}},
    {{"name": "grass", "pbrMetallicRoughness": {{"baseColorFactor": [0.2, 0.7, 0.3, 1]}}}}
  ],
  "accessors": [
    {{"bufferView": 0, "componentType": 5126, "count": 24, "type": "VEC3", "min": [-1, -1, -1], "max": [1, 1, 1]}},
    {{"bufferView": 1, "componentType": 5123, "count": 36, "type": "SCALAR"}},
    {{"bufferView": 2, "componentType": 5126, "count": 4, "type": "VEC3", "min": [-6, 0, -6], "max": [6, 0, 6]}},
    {{"bufferView": 3, "componentType": 5123, "count": 6, "type": "SCALAR"}}
  ],
  "bufferViews": [{}],
  "buffers": [{{"uri": "scene.bin", "byteLength": {}}}]
}}"#,
        views.join(","),
        bin.len()
    );
    let path = dir.path("scene.gltf");
    std::fs::write(&path, json).unwrap();
    path
}

#[test]
fn gltf_file_draws_and_the_pick_names_the_node() {
    let dir = TempDir::new("scene-gltf");
    let gltf = write_gltf(&dir);
    let out = dir.path("frame.png");
    let args = [
        "scene", &gltf, "--out", &out, "--pick", "64,40", "--width", "128", "--height", "96",
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    let stdout = text(&run.stdout);
    assert!(stdout.contains("scene: 3 nodes, 2 records"), "{stdout}");
    assert!(
        stdout.contains("pick (64, 40): object 1000002 = tower"),
        "{stdout}"
    );
    // No NORMAL attributes: each material shades flat, so background and two colours.
    assert_picture(&out, (128, 96), 0.2, 3);
}

/// A Parquet table: x float64, y float32, z int32 (cast), kind int64 (the group column).
fn write_table(path: &str, n: usize) {
    let x: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 - 50.0).collect();
    let y: Vec<f32> = (0..n).map(|i| ((i * 11) % 23) as f32 - 11.0).collect();
    let z: Vec<i32> = (0..n).map(|i| ((i * 53) % 97) as i32 - 48).collect();
    let kind: Vec<i64> = (0..n).map(|i| (i % 7) as i64 - 3).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, false),
        Field::new("y", DataType::Float32, false),
        Field::new("z", DataType::Int32, false),
        Field::new("kind", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Float64Array::from(x)),
            Arc::new(Float32Array::from(y)),
            Arc::new(Int32Array::from(z)),
            Arc::new(Int64Array::from(kind)),
        ],
    )
    .unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

#[test]
fn parquet_table_draws_as_partitions() {
    let dir = TempDir::new("scene-table");
    let table = dir.path("points.parquet");
    write_table(&table, 1000);
    let out = dir.path("table.png");
    let args = [
        "scene",
        "--table",
        &table,
        "--x",
        "x",
        "--y",
        "y",
        "--z",
        "z",
        "--group",
        "kind",
        "--groups",
        "3",
        "--batch-rows",
        "300",
        "--radius",
        "1.2",
        "--out",
        &out,
        "--frames",
        "2",
        "--pick",
        "80,60",
        "--width",
        "160",
        "--height",
        "120",
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    let stdout = text(&run.stdout);
    assert!(
        stdout
            .contains("table: 1000 rows in 4 batches (4 nonempty partitions), 12 resource groups"),
        "{stdout}"
    );
    let pick = stdout
        .lines()
        .find(|l| l.starts_with("pick (80, 60)"))
        .unwrap();
    assert!(pick.contains(": row "), "the pick names a row: {pick}");
    assert_picture(&out, (160, 120), 0.05, 6);
    // Boxes from two corners, one group per batch.
    let args = [
        "scene",
        "--table",
        &table,
        "--x",
        "x",
        "--y",
        "y",
        "--x2",
        "z",
        "--y2",
        "kind",
        "--batch-rows",
        "512",
        "--out",
        &out,
        "--width",
        "96",
        "--height",
        "64",
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    assert!(
        text(&run.stdout).contains("2 resource groups"),
        "{}",
        text(&run.stdout)
    );
}

#[test]
fn bad_inputs_fail_with_one_line_and_no_output() {
    let dir = TempDir::new("scene-bad");
    let table = dir.path("points.parquet");
    write_table(&table, 50);
    let junk = dir.path("junk.gltf");
    std::fs::write(&junk, "{ not gltf").unwrap();
    let out = dir.path("frame.png");
    let (missing, csv) = (dir.path("missing.glb"), dir.path("points.csv"));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--table", &table, "--x", "nope", "--y", "y"],
            "--x nope",
        ),
        (
            vec!["--table", &table, "--x", "x", "--y", "y", "--group", "gone"],
            "--group gone",
        ),
        (vec!["--table", &table, "--x", "x"], "--y"),
        (
            vec!["--table", &table, "--x", "x", "--y", "y", "--mutate", "2"],
            "--mutate",
        ),
        (vec![&junk], "junk.gltf"),
        (vec![&missing], "missing.glb"),
        (vec![], "exactly one of"),
        (vec!["--generate", "5", "--table", &table], "exactly one of"),
        (vec!["--table", &csv, "--x", "x", "--y", "y"], "points.csv"),
    ];
    for (extra, expect) in cases {
        let mut args = vec!["scene"];
        args.extend(extra);
        args.extend(["--out", &out]);
        let err = fails_without_output(&args, &out);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(
            lines[0].starts_with("error: ") && lines[0].contains(expect),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn bench_scene_runs_with_its_peer() {
    let dir = TempDir::new("bench-scene");
    let json = dir.path("scene.json");
    let args = [
        "bench",
        "scene",
        "--sizes",
        "2^10,3000",
        "--repeat",
        "2",
        "--json",
        &json,
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    let stdout = text(&run.stdout);
    for op in [
        "scene-frame",
        "patch-1000",
        "patch-staged-1000",
        "write-floor-1000-one-copy",
        "cull (peer)",
    ] {
        assert_eq!(stdout.matches(op).count(), 2, "{op} per size: {stdout}");
    }
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    let patch = rows.iter().find(|r| r["op"] == "patch-1000").unwrap();
    // 1,000 records' sphere and box (bytes 16..60, one range) and transform (64..128): the
    // reserved word and the IDs between them are not written; the moved spheres rewrite
    // their 16-byte packed bounds rows.
    assert_eq!(patch["upload_bytes"].as_u64(), Some(1000 * (44 + 64 + 16)));
    // Staged, the bounds rows are derived on the GPU: records, 8 bytes a run, 28 of header.
    let staged = rows
        .iter()
        .find(|r| r["op"] == "patch-staged-1000")
        .unwrap();
    assert_eq!(
        staged["upload_bytes"].as_u64(),
        Some(1000 * (44 + 64 + 2 * 8) + 28)
    );
}
