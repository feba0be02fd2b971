//! `gpugraph scene`: the two GPUScene consumers (spec 6.3), headless.
//!
//! * Scene graph (6.3a): a glTF 2.0 file (`.gltf` with its `.bin` files, or `.glb`) or a
//!   generated city (`--generate N`) flattened into a GpuScene, one resource group per
//!   material; `--mutate M` patches M records and replaces one per frame after the first,
//!   printing each transaction's upload bytes, writes and CPU time.
//! * Table scene (6.3b): `--table FILE.parquet --x COL --y COL [--z COL]` points (or boxes
//!   with `--x2 COL --y2 COL [--z2 COL]`), read in batches of `--batch-rows`, uploaded as a
//!   GPU table and borrowed batch by batch as scene partitions; `--group COL` folds a column
//!   into `--groups K` resource groups.
//!
//! Both run the same compiled frame (`GpuSceneFrame`): GPU bounds visibility, draw
//! generation, group classification, one render bundle, optional picking. The camera orbits
//! the scene over `--frames` frames (uniform writes only); the last frame is the PNG. Per
//! frame it prints visible rows, published draws, per-group counts, encode time and (with
//! timestamp queries) GPU time; `--pick X,Y` names the node (or the table row) drawn there.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arrow_array::{Array, ArrayRef, Float32Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use clap::Args;
use gpugraph_command::wgpu;
use gpugraph_render::gpu_scene::source::{FlattenedSource, SceneSource};
use gpugraph_render::gpu_scene::table::{GpuTableScene, TableSceneColumns};
use gpugraph_render::gpu_scene::{
    orbit_camera, sphere_around, GpuSceneFieldValue, GpuSceneFrame, GpuSceneFrameOptions,
    GpuSceneLayer, GpuSceneMutation, GpuScenePatch,
};
use gpugraph_render::scene::padded_bytes_per_row;
use gpugraph_render::NO_OBJECT;

use crate::gpu::Gpu;
use crate::output::{PendingFile, Table};

/// Options of `gpugraph scene`.
#[derive(Args, Debug)]
pub struct SceneArgs {
    /// A glTF 2.0 file (.gltf or .glb) to flatten into the scene.
    #[arg(value_name = "FILE.gltf|FILE.glb")]
    pub file: Option<PathBuf>,
    /// Generate a city of N buildings instead of reading a file.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=(1 << 24)))]
    pub generate: Option<u32>,
    /// A Parquet table of points or boxes to draw as scene partitions (needs --x and --y).
    #[arg(long, value_name = "FILE.parquet")]
    pub table: Option<PathBuf>,
    /// Table column of x (a point, or a box's first corner).
    #[arg(long, value_name = "COL")]
    pub x: Option<String>,
    /// Table column of y.
    #[arg(long, value_name = "COL")]
    pub y: Option<String>,
    /// Table column of z (0 without it).
    #[arg(long, value_name = "COL")]
    pub z: Option<String>,
    /// Table column of a box's second corner x (boxes need --x2 and --y2).
    #[arg(long, value_name = "COL")]
    pub x2: Option<String>,
    /// Table column of a box's second corner y.
    #[arg(long, value_name = "COL")]
    pub y2: Option<String>,
    /// Table column of a box's second corner z.
    #[arg(long, value_name = "COL")]
    pub z2: Option<String>,
    /// Integer or float table column folded into --groups resource groups (default: one
    /// group per batch).
    #[arg(long, value_name = "COL")]
    pub group: Option<String>,
    /// Resource groups of --group.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub groups: u32,
    /// Half extent of a point's box, and least half extent of a box (default: 1/200 of the
    /// table's largest extent).
    #[arg(long, value_name = "R")]
    pub radius: Option<f32>,
    /// Rows per table batch (each batch is one scene partition).
    #[arg(long, default_value_t = 65_536, value_parser = clap::value_parser!(u32).range(1..=(1 << 24)))]
    pub batch_rows: u32,
    /// The PNG the last frame is written to.
    #[arg(long, value_name = "FILE.png")]
    pub out: PathBuf,
    /// Frames along the camera orbit.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub frames: u32,
    /// Report the node (or table row) drawn at pixel X,Y of the last frame.
    #[arg(long, value_name = "X,Y", value_parser = parse_pick)]
    pub pick: Option<(u32, u32)>,
    /// Scene graphs: records patched (lifted) per frame after the first, plus one replaced.
    #[arg(long, value_name = "M", default_value_t = 0)]
    pub mutate: u32,
    /// Image width in pixels.
    #[arg(long, default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 720, value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub height: u32,
}

fn parse_pick(s: &str) -> Result<(u32, u32), String> {
    let (x, y) = s
        .split_once(',')
        .ok_or_else(|| format!("'{s}' is not X,Y (two pixel coordinates)"))?;
    let coord = |v: &str, what: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|e| format!("{what} '{v}' of '{s}' is not a pixel coordinate: {e}"))
    };
    Ok((coord(x, "X")?, coord(y, "Y")?))
}

/// Runs `gpugraph scene`.
pub fn run(args: &SceneArgs) -> Result<()> {
    let sources = [
        args.file.is_some(),
        args.generate.is_some(),
        args.table.is_some(),
    ];
    if sources.iter().filter(|&&s| s).count() != 1 {
        bail!("give exactly one of FILE.gltf|FILE.glb, --generate N or --table FILE.parquet");
    }
    if args.out.extension().and_then(|e| e.to_str()) != Some("png") {
        bail!("--out {} must name a .png file", args.out.display());
    }
    if let Some((x, y)) = args.pick {
        if x >= args.width || y >= args.height {
            bail!(
                "--pick {x},{y} is outside the {}x{} image",
                args.width,
                args.height
            );
        }
    }
    if args.table.is_none() {
        for (flag, set) in [
            ("--x", args.x.is_some()),
            ("--y", args.y.is_some()),
            ("--group", args.group.is_some()),
        ] {
            if set {
                bail!("{flag} needs --table FILE.parquet");
            }
        }
    } else if args.mutate > 0 {
        bail!("--mutate needs a scene graph (FILE.gltf or --generate): table partitions are borrowed, read-only");
    }
    // The output's temporary exists before any GPU work: an unwritable path fails first.
    let out = PendingFile::new(&args.out, "PNG image")?;
    let gpu = Gpu::open()?;
    let options = GpuSceneFrameOptions {
        width: args.width,
        height: args.height,
        draw: true,
        picking: args.pick.is_some(),
        readback: true,
    };
    let image = if let Some(path) = &args.table {
        table_scene(&gpu, args, path, options)?
    } else {
        let source = match (&args.file, args.generate) {
            (Some(path), _) => SceneSource::from_gltf(path)?,
            (None, Some(n)) => SceneSource::generate(n as usize),
            (None, None) => unreachable!("checked above"),
        };
        graph_scene(&gpu, args, &source, options)?
    };
    write_png(&out, args.width, args.height, &image)?;
    out.commit()?;
    println!("wrote {}", args.out.display());
    Ok(())
}

/// Per-frame numbers of one run.
struct FrameRow {
    visible: u32,
    published: u32,
    groups: Vec<u32>,
    flags: u32,
    encode_us: f64,
    gpu_ms: Option<f64>,
    mutation: String,
}

/// Encodes, submits and reads the diagnostics of one frame.
fn run_frame(gpu: &Gpu, frame: &mut GpuSceneFrame, mutation: String) -> Result<FrameRow> {
    let profile = gpu
        .device()
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY);
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    let t0 = Instant::now();
    frame.encode(&mut enc, profile)?;
    let encode_us = t0.elapsed().as_secs_f64() * 1e6;
    gpu.submit_and_wait(enc.finish())?;
    let gpu_ms = if profile {
        let t = frame.compiled_mut().read_timings(gpu.queue())?;
        // The scene's own steps (visibility, draw generation, groups): the draw is raster.
        let scene: f64 = t
            .iter()
            .filter(|t| t.node.starts_with("layer-"))
            .filter_map(|t| t.gpu_ns)
            .sum();
        Some(scene / 1e6)
    } else {
        None
    };
    let words = frame.diagnostics_buffer().size() / 4;
    let d = frame
        .decode_diagnostics(&gpu.read_back(frame.diagnostics_buffer(), words)?)
        .context("decoding the frame diagnostics")?;
    let mut groups = Vec::new();
    for l in &d {
        groups.extend(&l.group_counts);
    }
    Ok(FrameRow {
        visible: d.iter().map(|l| l.visible).sum(),
        published: d.iter().map(|l| l.published).sum(),
        groups,
        flags: d
            .iter()
            .map(|l| {
                l.draw_overflow | l.group_overflow | l.group_flags.iter().fold(0, |a, f| a | f)
            })
            .fold(0, |a, f| a | f),
        encode_us,
        gpu_ms,
        mutation,
    })
}

/// The image of the last frame, RGBA8 without row padding.
fn image_of(gpu: &Gpu, frame: &GpuSceneFrame, width: u32, height: u32) -> Result<Vec<u8>> {
    let buffer = frame
        .image_buffer()
        .context("the frame was built with readback")?;
    let words = gpu.read_u32(buffer)?;
    let bytes: &[u8] = bytemuck::cast_slice(&words);
    let row = padded_bytes_per_row(width) as usize;
    Ok((0..height as usize)
        .flat_map(|y| bytes[y * row..y * row + 4 * width as usize].iter().copied())
        .collect())
}

/// The picked `(object ID, layer)`, `None` for the background.
fn picked(gpu: &Gpu, frame: &GpuSceneFrame) -> Result<Option<(u32, u32)>> {
    let Some(buffer) = frame.pick_buffer() else {
        return Ok(None);
    };
    let w = gpu.read_u32(buffer)?;
    Ok((w[0] != NO_OBJECT).then_some((w[0], w[1])))
}

fn print_frames(rows: &[FrameRow], pipelines: u64) {
    let mut table = Table::new([
        "frame",
        "visible",
        "draws",
        "per group",
        "flags",
        "encode µs",
        "scene GPU ms",
        "mutation",
    ]);
    for (i, r) in rows.iter().enumerate() {
        let groups: Vec<String> = r.groups.iter().take(8).map(u32::to_string).collect();
        let more = if r.groups.len() > 8 { ",…" } else { "" };
        table.row([
            i.to_string(),
            r.visible.to_string(),
            r.published.to_string(),
            format!("{}{more}", groups.join(",")),
            r.flags.to_string(),
            format!("{:.1}", r.encode_us),
            r.gpu_ms.map_or("n/a".into(), |g| format!("{g:.3}")),
            r.mutation.clone(),
        ]);
    }
    print!("{table}");
    println!("pipelines created after compile: {pipelines} (camera and mutation changes recompile nothing)");
}

fn graph_scene(
    gpu: &Gpu,
    args: &SceneArgs,
    source: &SceneSource,
    options: GpuSceneFrameOptions,
) -> Result<Vec<u8>> {
    let spare = args.mutate.max(1) + 1;
    let mut flat = source.flatten(gpu.device(), gpu.queue(), "scene", spare)?;
    let state = flat.scene.state();
    println!(
        "scene: {} nodes, {} records in {} slots, {} geometries, {} resource groups, {} command slots",
        source.nodes.len(),
        state.active_count,
        flat.scene.capacity(),
        source.geometries.len(),
        flat.groups.len(),
        flat.commands.records()
    );
    let mut frame = GpuSceneFrame::new(
        gpu.device(),
        &[GpuSceneLayer {
            scene: &flat.scene,
            commands: &flat.commands,
            groups: &flat.groups,
            colors: &flat.colors,
            upload: None,
        }],
        &source.vertices,
        &source.indices,
        options,
    )?;
    if let Some((x, y)) = args.pick {
        frame.set_pick(x, y)?;
    }
    gpu.check("building the scene")?;
    let compiled = frame.pipelines_created();
    let (lo, hi) = bounds(&flat);
    let aspect = args.width as f32 / args.height as f32;
    let mut rows = Vec::new();
    let mut next_id = 2_000_000u32;
    for f in 0..args.frames {
        let (vp, eye) = orbit_camera(lo, hi, 0.6 + f as f32 * 0.35, aspect);
        frame.set_camera(gpu.queue(), &vp, eye);
        let mutation = if args.mutate > 0 && f > 0 {
            mutate(gpu, &mut flat, args.mutate, f, &mut next_id)?
        } else {
            String::new()
        };
        rows.push(run_frame(gpu, &mut frame, mutation)?);
    }
    print_frames(&rows, frame.pipelines_created() - compiled);
    if let Some((x, y)) = args.pick {
        match picked(gpu, &frame)? {
            Some((id, _)) => println!(
                "pick ({x}, {y}): object {id} = {} (slot {})",
                flat.names.get(&id).map_or("?", String::as_str),
                flat.scene.slot_of(id).map_or("-".into(), |s| s.to_string())
            ),
            None => println!("pick ({x}, {y}): background"),
        }
    }
    image_of(gpu, &frame, args.width, args.height)
}

fn bounds(flat: &FlattenedSource) -> ([f32; 3], [f32; 3]) {
    flat.scene.active_records().iter().fold(
        ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
        |(lo, hi), (_, r)| {
            (
                std::array::from_fn(|i| lo[i].min(r.aabb_min[i])),
                std::array::from_fn(|i| hi[i].max(r.aabb_max[i])),
            )
        },
    )
}

/// One frame's transaction: `m` records lifted by 0.5 (transform, box, sphere) and one record
/// replaced by a new ID in its command slot. Returns the cost line.
fn mutate(
    gpu: &Gpu,
    flat: &mut FlattenedSource,
    m: u32,
    frame: u32,
    next_id: &mut u32,
) -> Result<String> {
    let live = flat.scene.active_records();
    if live.is_empty() {
        return Ok("nothing to mutate".into());
    }
    let mut tx = GpuSceneMutation::default();
    let mut chosen = std::collections::HashSet::new();
    for k in 0..(m as usize).min(live.len().saturating_sub(1)) {
        let (_, r) = live[(frame as usize * 31 + k * 17) % live.len()];
        if !chosen.insert(r.object_id) {
            continue;
        }
        let mut t = r.transform;
        t[3][1] += 0.5;
        let lift = |v: [f32; 3]| [v[0], v[1] + 0.5, v[2]];
        let (lo, hi) = (lift(r.aabb_min), lift(r.aabb_max));
        tx.patch.push(GpuScenePatch {
            id: r.object_id,
            values: vec![
                GpuSceneFieldValue::Transform(t),
                GpuSceneFieldValue::Aabb { min: lo, max: hi },
                GpuSceneFieldValue::Sphere(sphere_around(lo, hi)),
            ],
        });
    }
    if let Some((_, old)) = live.iter().find(|(_, r)| !chosen.contains(&r.object_id)) {
        tx.remove.push(old.object_id);
        let mut new = *old;
        new.object_id = *next_id;
        let name = format!(
            "{} (replaced)",
            flat.names.get(&old.object_id).cloned().unwrap_or_default()
        );
        flat.names.insert(*next_id, name);
        *next_id += 1;
        tx.insert.push(new);
    }
    let t0 = Instant::now();
    let report = flat.scene.mutate(gpu.queue(), &tx)?;
    let us = t0.elapsed().as_secs_f64() * 1e6;
    Ok(format!(
        "{}p {}r {}i: {} B in {} writes, {us:.1} µs",
        report.patched.len(),
        report.removed.len(),
        report.inserted.len(),
        report.uploaded_bytes(),
        report.write_count()
    ))
}

/// The table's columns on the CPU (float32, cast from any numeric type), for the camera, the
/// radius and the pick's answer; the same batches are uploaded.
struct HostTable {
    schema: Arc<Schema>,
    batches: Vec<RecordBatch>,
}

fn table_scene(
    gpu: &Gpu,
    args: &SceneArgs,
    path: &Path,
    options: GpuSceneFrameOptions,
) -> Result<Vec<u8>> {
    let (Some(x), Some(y)) = (&args.x, &args.y) else {
        bail!("--table {} needs --x COL and --y COL", path.display());
    };
    if args.x2.is_some() != args.y2.is_some() || (args.z2.is_some() && args.x2.is_none()) {
        bail!("boxes need both --x2 and --y2 (--z2 only with them)");
    }
    let mut float_cols: Vec<(&str, &String)> = vec![("--x", x), ("--y", y)];
    for (flag, c) in [
        ("--z", &args.z),
        ("--x2", &args.x2),
        ("--y2", &args.y2),
        ("--z2", &args.z2),
    ] {
        if let Some(c) = c {
            float_cols.push((flag, c));
        }
    }
    let host = read_table(path, &float_cols, args.group.as_deref(), args.batch_rows)?;
    let rows: usize = host.batches.iter().map(|b| b.num_rows()).sum();
    if rows == 0 {
        bail!("--table {}: the table has no rows", path.display());
    }
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    let axes: [Vec<&String>; 3] = [
        [Some(x), args.x2.as_ref()].into_iter().flatten().collect(),
        [Some(y), args.y2.as_ref()].into_iter().flatten().collect(),
        [args.z.as_ref(), args.z2.as_ref()]
            .into_iter()
            .flatten()
            .collect(),
    ];
    for b in &host.batches {
        for (axis, cols) in axes.iter().enumerate() {
            for c in cols {
                for v in f32_column(b, c).values() {
                    lo[axis] = lo[axis].min(*v);
                    hi[axis] = hi[axis].max(*v);
                }
            }
        }
    }
    for a in 0..3 {
        if !lo[a].is_finite() {
            (lo[a], hi[a]) = (0.0, 0.0);
        }
    }
    let extent = (0..3).map(|a| hi[a] - lo[a]).fold(0.0f32, f32::max);
    let radius = match args.radius {
        Some(r) if r.is_finite() && r > 0.0 => r,
        Some(r) => bail!("--radius {r} must be finite and > 0"),
        None => (extent / 200.0).max(1e-3),
    };
    let uploaded = gpugraph_arrow::upload_record_batches(
        &gpu.ctx,
        host.schema.clone(),
        &host.batches,
        &gpugraph_arrow::UploadOptions::default(),
    )
    .with_context(|| format!("uploading {}", path.display()))?;
    let table = uploaded.values();
    let columns = TableSceneColumns {
        x: x.clone(),
        y: y.clone(),
        z: args.z.clone(),
        x_max: args.x2.clone(),
        y_max: args.y2.clone(),
        z_max: args.z2.clone(),
        group: args.group.clone(),
        groups: args.groups,
        radius,
    };
    let scene = GpuTableScene::new(gpu.device(), gpu.queue(), table, columns)?;
    let mut producer = gpugraph_command::CommandGraph::new("table-scene-producer", gpu.device());
    scene.add_producer(&mut producer, table)?;
    gpu.run_graph(
        &mut producer.compile()?,
        "the table scene's record producer",
    )?;
    let layers = scene.layers();
    println!(
        "table: {rows} rows in {} batches ({} nonempty partitions), {} resource groups, radius {radius}",
        table.num_batches(),
        layers.len(),
        layers.iter().map(|l| l.groups.len()).sum::<usize>(),
    );
    let (vertices, indices) = scene.mesh();
    let mut frame = GpuSceneFrame::new(gpu.device(), &layers, vertices, indices, options)?;
    if let Some((px, py)) = args.pick {
        frame.set_pick(px, py)?;
    }
    gpu.check("building the table scene")?;
    let compiled = frame.pipelines_created();
    let lo = lo.map(|v| v - radius);
    let hi = hi.map(|v| v + radius);
    let aspect = args.width as f32 / args.height as f32;
    let mut frames = Vec::new();
    for f in 0..args.frames {
        let (vp, eye) = orbit_camera(lo, hi, 0.6 + f as f32 * 0.35, aspect);
        frame.set_camera(gpu.queue(), &vp, eye);
        frames.push(run_frame(gpu, &mut frame, String::new())?);
    }
    print_frames(&frames, frame.pipelines_created() - compiled);
    if let Some((px, py)) = args.pick {
        match picked(gpu, &frame)? {
            Some((row, _)) => {
                let (b, r) = locate(&host.batches, row as usize)
                    .with_context(|| format!("the pick names row {row}, past the table"))?;
                let value = |c: &str| f32_column(&host.batches[b], c).value(r);
                let z = args.z.as_deref().map_or(0.0, value);
                println!(
                    "pick ({px}, {py}): row {row} (batch {b}) at ({}, {}, {z})",
                    value(x),
                    value(y)
                );
            }
            None => println!("pick ({px}, {py}): background"),
        }
    }
    image_of(gpu, &frame, args.width, args.height)
}

/// Batch and row of global row `row`.
fn locate(batches: &[RecordBatch], mut row: usize) -> Option<(usize, usize)> {
    for (b, batch) in batches.iter().enumerate() {
        if row < batch.num_rows() {
            return Some((b, row));
        }
        row -= batch.num_rows();
    }
    None
}

fn f32_column<'a>(batch: &'a RecordBatch, name: &str) -> &'a Float32Array {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
        .expect("read_table cast every coordinate column to float32")
}

/// Reads the named columns of a Parquet file in batches of `batch_rows`, casting coordinate
/// columns to float32 and the group column to int32 (integers) or float32; refuses missing
/// columns, other types, nulls and non-finite coordinates, naming the flag and the column.
fn read_table(
    path: &Path,
    float_cols: &[(&str, &String)],
    group: Option<&str>,
    batch_rows: u32,
) -> Result<HostTable> {
    let shown = path.display();
    if path.extension().and_then(|e| e.to_str()) != Some("parquet") {
        bail!("--table {shown} must name a .parquet file");
    }
    let file = std::fs::File::open(path).with_context(|| format!("--table {shown}"))?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .with_context(|| format!("--table {shown}: reading the Parquet footer"))?;
    let file_schema = builder.schema().clone();
    let mut wanted: Vec<(&str, &str)> = float_cols.iter().map(|(f, c)| (*f, c.as_str())).collect();
    if let Some(g) = group {
        wanted.push(("--group", g));
    }
    let mut indices = Vec::new();
    let mut fields = Vec::new();
    for (flag, name) in &wanted {
        let Ok(i) = file_schema.index_of(name) else {
            let names: Vec<&str> = file_schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            bail!(
                "{flag} {name}: no such column in {shown} (columns: {})",
                names.join(", ")
            );
        };
        let t = file_schema.field(i).data_type();
        let target = if *flag == "--group" && t.is_integer() {
            DataType::Int32
        } else if t.is_numeric() {
            DataType::Float32
        } else {
            bail!("{flag} {name}: column type {t} is not numeric");
        };
        if !indices.contains(&i) {
            indices.push(i);
        }
        if !fields.iter().any(|f: &Field| f.name() == name) {
            fields.push(Field::new(*name, target, false));
        }
    }
    let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), indices);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(batch_rows as usize)
        .build()
        .with_context(|| format!("--table {shown}"))?;
    let schema = Arc::new(Schema::new(fields));
    let mut batches = Vec::new();
    let mut first_row = 0usize;
    for batch in reader {
        let batch = batch.with_context(|| format!("--table {shown}: decoding"))?;
        let mut columns: Vec<ArrayRef> = Vec::new();
        for field in schema.fields() {
            let flag = wanted
                .iter()
                .find(|(_, n)| *n == field.name().as_str())
                .map_or("--x", |(f, _)| *f);
            let source = batch
                .column_by_name(field.name())
                .context("projected column")?;
            if source.null_count() > 0 {
                bail!(
                    "{flag} {}: {} null values; the scene needs a value in every row",
                    field.name(),
                    source.null_count()
                );
            }
            let cast = arrow_cast::cast(source, field.data_type()).with_context(|| {
                format!("{flag} {}: casting to {}", field.name(), field.data_type())
            })?;
            if cast.null_count() > 0 {
                bail!(
                    "{flag} {}: values outside {}",
                    field.name(),
                    field.data_type()
                );
            }
            if let Some(f) = cast.as_any().downcast_ref::<Float32Array>() {
                if flag != "--group" {
                    if let Some(r) = f.values().iter().position(|v| !v.is_finite()) {
                        bail!(
                            "{flag} {}: row {} is {} (coordinates must be finite)",
                            field.name(),
                            first_row + r,
                            f.value(r)
                        );
                    }
                }
            }
            columns.push(cast);
        }
        first_row += batch.num_rows();
        batches.push(RecordBatch::try_new(schema.clone(), columns)?);
    }
    Ok(HostTable { schema, batches })
}

fn write_png(out: &PendingFile, width: u32, height: u32, rgba: &[u8]) -> Result<()> {
    let mut enc = png::Encoder::new(std::io::BufWriter::new(out.file()), width, height);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().context("writing the PNG header")?;
    writer
        .write_image_data(rgba)
        .context("writing the PNG image")?;
    writer.finish().context("finishing the PNG")
}
