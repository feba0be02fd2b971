//! `bench scene`: the GPUScene frame's selection work per frame, against the culling consumer
//! in the same run.
//!
//! Per size n (default 2^20 and 16,000,000 records: 2^24 records are 2 GiB, one byte more
//! than the 2 GiB − 1 storage binding wgpu allows on Vulkan; a size whose records do not
//! fit one buffer or storage binding, or the host's memory, is skipped with the reason):
//! * `scene-frame`: a GpuScene of n random records (spheres as `render cull`'s scene, four
//!   resource groups of contiguous command windows, one command slot per record) and a
//!   `GpuSceneFrame` without drawing: bounds visibility fused with its compaction
//!   (`visibility/reset`, `visibility/cull`: one pass over the scene's packed bounds view),
//!   draw generation over the visible-row list (prepare; clear, claim, publish: rows read
//!   through the scene's 16-byte draw keys) classifying each command into the groups as it
//!   publishes it; with staged patches, the upload's `scatter`, `bounds` and `settle` nodes.
//!   Rows: GPU time per frame (sum of the nodes' timestamps; wall clock of submit-and-wait
//!   without timestamp queries), the selection alone (`selection ms`: visibility, draw
//!   generation and groups, the upload's nodes left out: what the ≤ 0.5 ms target at 16M
//!   counts) and per node (`nodes`, with timestamps), encode time (CPU, the compiled graph
//!   into a command encoder), and the frame's diagnostics checked once against the CPU oracle
//!   (`cpu::frame_diagnostics`);
//! * `patch-1000`: a transaction patching 1,000 live records' transform, box and sphere:
//!   bytes uploaded (exact, from the report: records, and the packed bounds rows the spheres
//!   move) and CPU time of `GpuScene::mutate` (one queue write per merged range and per
//!   bounds run);
//! * `patch-staged-1000`: the same transactions through `GpuScene::mutate_staged` (written
//!   straight into the frame's `GpuSceneUpload`'s mapped host buffer, copied and scattered by
//!   the frame's encode); the scatter's GPU time is part of the next frame's; the patched
//!   records are read back once and compared with the CPU copy;
//! * `patch-staged-queue-1000`: the same staging through one queue write (an upload without
//!   host buffers): the host buffer's saving is the difference;
//! * `write-floor-1000` and `write-floor-1000-one-copy`: the wgpu and driver share of a
//!   staged patch: one `write_buffer_with` of the staged bytes into a scratch buffer, filled by
//!   a copy per run (as the upload packs) or packed in host memory first and copied once; CPU
//!   µs in the `patch µs` column (what the staged patch costs beyond them is validation and
//!   the CPU copy);
//! * `cull` (peer): `render cull`'s `CullScene::cull_only` over the same spheres and camera:
//!   the visibility workflow and its compaction into an indirect count, GPU and encode time.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use gpugraph_command::wgpu;
use gpugraph_render::gpu_scene::cpu;
use gpugraph_render::gpu_scene::{
    GpuSceneFieldValue, GpuSceneFrame, GpuSceneFrameOptions, GpuSceneLayer, GpuSceneMutation,
    GpuScenePatch, GpuSceneUpload,
};
use gpugraph_render::{
    CullScene, CullSceneOptions, DrawCommandBuffer, DrawLayout, GpuScene, GpuSceneGroup,
    GpuSceneRecord, InstancedCubes, ViewParams,
};
use serde::Serialize;

use super::report::{self, BenchJson, Summary};
use super::throughput;
use super::BenchOptions;
use crate::gpu::Gpu;
use crate::output::Table;
use crate::render::random_scene;

/// `gpugraph bench scene`.
#[derive(Args, Debug)]
pub struct SceneBenchArgs {
    /// Scene records per case (counts or powers like 2^24), comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = throughput::parse_size, default_value = "2^20,16000000")]
    pub sizes: Vec<u64>,
    /// Records patched by the `patch` case.
    #[arg(long, default_value_t = 1000)]
    pub patch: u32,
    #[command(flatten)]
    pub options: BenchOptions,
}

/// One measured case.
#[derive(Clone, Debug, Serialize)]
pub struct SceneRow {
    /// `scene-frame`, `patch-1000` or `cull`.
    pub op: String,
    /// Scene records.
    pub records: u64,
    /// GPU milliseconds per frame (timestamps, or wall clock: see `timing`).
    pub gpu_ms: Option<Summary>,
    /// GPU milliseconds per frame of the nodes other than a staged upload's (timestamps
    /// only): the frame's selection work.
    pub selection_ms: Option<Summary>,
    /// CPU microseconds to encode one frame.
    pub encode_us: Option<Summary>,
    /// Bytes one patch uploads.
    pub upload_bytes: Option<u64>,
    /// CPU microseconds of one patch.
    pub patch_us: Option<Summary>,
    /// `gpu-timestamps` or `wall-clock`.
    pub timing: &'static str,
    /// Visible records at the bench camera.
    pub visible: Option<u32>,
    /// Why a size was skipped.
    pub skipped: Option<String>,
    /// GPU milliseconds per frame of each node, in graph order (with timestamps only).
    pub nodes: Vec<NodeRow>,
}

/// One node's GPU time per frame.
#[derive(Clone, Debug, Serialize)]
pub struct NodeRow {
    /// Node id.
    pub node: String,
    /// GPU milliseconds per frame.
    pub gpu_ms: Summary,
}

impl SceneRow {
    fn new(op: &str, records: u64, timing: &'static str) -> Self {
        Self {
            op: op.into(),
            records,
            gpu_ms: None,
            selection_ms: None,
            encode_us: None,
            upload_bytes: None,
            patch_us: None,
            timing,
            visible: None,
            skipped: None,
            nodes: Vec::new(),
        }
    }

    /// The same row with the frame timings.
    fn timed(mut self, t: FrameTimes) -> Self {
        self.gpu_ms = Some(t.gpu_ms);
        self.selection_ms = t.selection_ms;
        self.encode_us = Some(t.encode_us);
        self.nodes = t.nodes;
        self
    }
}

/// Runs `bench scene`.
pub fn run(args: &SceneBenchArgs) -> Result<()> {
    if let Some(path) = &args.options.json {
        report::check_writable(path)?;
    }
    let gpu = Gpu::open()?;
    let profile = gpu
        .device()
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY);
    let timing = if profile {
        "gpu-timestamps"
    } else {
        "wall-clock"
    };
    let mut rows = Vec::new();
    for &n in &args.sizes {
        if let Some(reason) = too_large(&gpu, n) {
            report::progress(format_args!("bench scene: n = {n}: skipped: {reason}"));
            let mut row = SceneRow::new("scene-frame", n, timing);
            row.skipped = Some(reason);
            rows.push(row);
            continue;
        }
        report::progress(format_args!("bench scene: n = {n}: building"));
        rows.extend(cases(&gpu, n as u32, args, profile, timing)?);
    }
    let mut table = Table::new([
        "op",
        "records",
        "GPU ms/frame",
        "selection ms",
        "encode µs",
        "upload B",
        "patch µs",
        "visible",
    ]);
    let show = |s: &Option<Summary>, d: usize| s.as_ref().map_or("-".into(), |s| s.show(d));
    for r in &rows {
        table.row([
            r.op.clone(),
            r.records.to_string(),
            r.skipped
                .as_ref()
                .map_or_else(|| show(&r.gpu_ms, 3), |s| format!("skipped: {s}")),
            show(&r.selection_ms, 3),
            show(&r.encode_us, 1),
            r.upload_bytes.map_or("-".into(), |b| b.to_string()),
            show(&r.patch_us, 1),
            r.visible.map_or("-".into(), |v| v.to_string()),
        ]);
    }
    print!("{table}");
    println!("timing: {timing}");
    for r in rows.iter().filter(|r| !r.nodes.is_empty()) {
        let nodes: Vec<String> = r
            .nodes
            .iter()
            .map(|n| format!("{} {:.3}", n.node, n.gpu_ms.median))
            .collect();
        // Not the row's op name: the table names each op once per size.
        let what = if r.op.starts_with("cull") {
            "the culling peer"
        } else {
            "the frame"
        };
        println!(
            "GPU ms per node (median), {what} at {} records: {}",
            r.records,
            nodes.join(", ")
        );
    }
    if let Some(path) = &args.options.json {
        let caps = gpu.ctx.capabilities().clone();
        report::write_json(
            path,
            &BenchJson::new("scene", &caps, args.options.repeat, &rows),
        )?;
    }
    Ok(())
}

/// Why `n` records cannot be benched here (`None`: they can): the record buffer against the
/// device's buffer and binding limits, the host copies against available memory.
fn too_large(gpu: &Gpu, n: u64) -> Option<String> {
    let limits = gpu.device().limits();
    let bytes = n.saturating_mul(128);
    if n >= u64::from(u32::MAX) {
        return Some(format!("{n} records exceed the uint32 object IDs"));
    }
    if bytes > limits.max_buffer_size || bytes > limits.max_storage_buffer_binding_size {
        return Some(format!(
            "{bytes} bytes of records exceed max_buffer_size {} or max_storage_buffer_binding_size {}",
            limits.max_buffer_size, limits.max_storage_buffer_binding_size
        ));
    }
    // Records three times (input, the scene's CPU copy, the oracle's slots), spheres and LOD.
    let host = n.saturating_mul(3 * 128 + 64);
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        let line = t.lines().find(|l| l.starts_with("MemAvailable:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    });
    match available {
        Some(kib) if host > kib * 1024 => Some(format!(
            "about {} MiB of host memory needed, {} MiB available",
            host >> 20,
            kib >> 10
        )),
        _ => None,
    }
}

/// What [`time_frames`] measured.
struct FrameTimes {
    gpu_ms: Summary,
    /// Without a staged upload's nodes (timestamps only).
    selection_ms: Option<Summary>,
    encode_us: Summary,
    nodes: Vec<NodeRow>,
}

/// Times `encode` + submit `repeat` times. `timings` reads the profiled encode's
/// `(node, GPU ms)`.
fn time_frames(
    gpu: &Gpu,
    repeat: u32,
    profile: bool,
    mut encode: impl FnMut(&mut wgpu::CommandEncoder, bool) -> Result<()>,
    mut timings: impl FnMut() -> Result<Vec<(String, f64)>>,
) -> Result<FrameTimes> {
    let (mut gpu_ms, mut encode_us, mut selection_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut nodes: Vec<(String, Vec<f64>)> = Vec::new();
    for _ in 0..repeat {
        // Encode time without profiling (the frame as an application records it).
        let mut enc = gpu.device().create_command_encoder(&Default::default());
        let t0 = Instant::now();
        encode(&mut enc, false)?;
        encode_us.push(t0.elapsed().as_secs_f64() * 1e6);
        let t0 = Instant::now();
        gpu.submit_and_wait(enc.finish())?;
        let wall = t0.elapsed().as_secs_f64() * 1e3;
        if profile {
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            encode(&mut enc, true)?;
            gpu.submit_and_wait(enc.finish())?;
            let t = timings()?;
            gpu_ms.push(t.iter().map(|(_, ms)| ms).sum());
            selection_ms.push(
                t.iter()
                    .filter(|(node, _)| !node.contains("/upload/"))
                    .map(|(_, ms)| ms)
                    .sum(),
            );
            for (node, ms) in t {
                match nodes.iter_mut().find(|(n, _)| *n == node) {
                    Some((_, samples)) => samples.push(ms),
                    None => nodes.push((node, vec![ms])),
                }
            }
        } else {
            gpu_ms.push(wall);
        }
    }
    let nodes = nodes
        .into_iter()
        .map(|(node, samples)| NodeRow {
            node,
            gpu_ms: Summary::of(&samples),
        })
        .collect();
    Ok(FrameTimes {
        gpu_ms: Summary::of(&gpu_ms),
        selection_ms: (!selection_ms.is_empty()).then(|| Summary::of(&selection_ms)),
        encode_us: Summary::of(&encode_us),
        nodes,
    })
}

/// CPU microseconds of one `write_buffer_with` of `bytes` into a scratch buffer, filled by
/// `pieces` copies (`one_copy`: packed into a reused host vector, then one copy), `repeat`
/// times, each write submitted before the next.
fn write_floor(
    gpu: &Gpu,
    bytes: u64,
    pieces: usize,
    one_copy: bool,
    repeat: u32,
) -> Result<Summary> {
    let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench-write-floor"),
        size: bytes.max(4).div_ceil(4) * 4,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let size = wgpu::BufferSize::new(buffer.size()).context("a nonempty write")?;
    let source = vec![0x5au8; size.get() as usize];
    let piece = source.len().div_ceil(pieces.max(1));
    let mut packed = Vec::with_capacity(source.len());
    let mut us = Vec::with_capacity(repeat as usize);
    for _ in 0..repeat {
        let t0 = Instant::now();
        let mut view = gpu
            .queue()
            .write_buffer_with(&buffer, 0, size)
            .context("the floor's write lies inside its buffer")?;
        if one_copy {
            packed.clear();
            for chunk in source.chunks(piece) {
                packed.extend_from_slice(chunk);
            }
            view.copy_from_slice(&packed);
        } else {
            for (k, chunk) in source.chunks(piece).enumerate() {
                view.slice(k * piece..k * piece + chunk.len())
                    .copy_from_slice(chunk);
            }
        }
        drop(view);
        us.push(t0.elapsed().as_secs_f64() * 1e6);
        let enc = gpu.device().create_command_encoder(&Default::default());
        gpu.submit_and_wait(enc.finish())?;
    }
    buffer.destroy();
    Ok(Summary::of(&us))
}

/// A profiled encode's `(node, GPU ms)` of the nodes that ran in passes.
fn node_ms(t: Vec<gpugraph_command::NodeTiming>) -> Vec<(String, f64)> {
    t.into_iter()
        .filter_map(|t| Some((t.node, t.gpu_ns? / 1e6)))
        .collect()
}

fn cases(
    gpu: &Gpu,
    n: u32,
    args: &SceneBenchArgs,
    profile: bool,
    timing: &'static str,
) -> Result<Vec<SceneRow>> {
    let (spheres, lod, extent) = random_scene(n, 7);
    let groups: Vec<GpuSceneGroup> = (0..4u32)
        .map(|g| {
            let first = (u64::from(n) * u64::from(g) / 4) as u32;
            let end = (u64::from(n) * u64::from(g + 1) / 4) as u32;
            GpuSceneGroup {
                id: g,
                first_command: first,
                command_count: end - first,
                geometry_id: None,
            }
        })
        .collect();
    let records: Vec<GpuSceneRecord> = spheres
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let g = (u64::from(i as u32) * 4 / u64::from(n)) as u32;
            let mut r = GpuSceneRecord::new(i as u32)
                .with_sphere(*s)
                .with_group(g)
                .with_geometry(0)
                .with_command_slot(i as u32);
            r.aabb_min = [s[0] - s[3], s[1] - s[3], s[2] - s[3]];
            r.aabb_max = [s[0] + s[3], s[1] + s[3], s[2] + s[3]];
            r
        })
        .collect();
    let mut scene = GpuScene::new(gpu.device(), gpu.queue(), "bench-scene", n, &records)?;
    drop(records);
    let commands =
        DrawCommandBuffer::create(gpu.device(), "bench-commands", DrawLayout::DrawIndexed, n);
    // Room for every patched record whole (a patch writes its transform, box and sphere).
    let patched = args.patch.min(n).max(1);
    let mut upload = GpuSceneUpload::new(
        gpu.device(),
        &scene,
        gpugraph_render::gpu_scene::upload::record_words(patched),
        4 * patched,
    )?;
    let mut frame = GpuSceneFrame::new(
        gpu.device(),
        &[GpuSceneLayer {
            scene: &scene,
            commands: &commands,
            groups: &groups,
            colors: &[],
            upload: Some(&upload),
        }],
        &[],
        &[],
        GpuSceneFrameOptions {
            width: 1280,
            height: 720,
            draw: false,
            picking: false,
            readback: false,
        },
    )?;
    let options = CullSceneOptions {
        width: 1280,
        height: 720,
        msaa: 4,
        picking: false,
        readback: false,
        cubes_per_instance: InstancedCubes::CUBES_PER_INSTANCE,
    };
    let mut cull = CullScene::cull_only(gpu.device(), gpu.queue(), &spheres, Some(&lod), options)?;
    let eye = [extent * 0.8, extent * 0.3, extent * 0.8];
    let vp = cull.view_projection(eye, [0.0; 3]);
    cull.set_camera(gpu.queue(), eye, [0.0; 3]);
    frame.set_camera(gpu.queue(), &vp, eye);
    gpu.check("building the scene bench")?;

    // Check once against the oracle.
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    frame.encode(&mut enc, false)?;
    gpu.submit_and_wait(enc.finish())?;
    let words = frame.diagnostics_buffer().size() / 4;
    let got = frame
        .decode_diagnostics(&gpu.read_back(frame.diagnostics_buffer(), words)?)
        .context("decoding the diagnostics")?;
    let slots: Vec<GpuSceneRecord> = (0..n)
        .map(|s| {
            scene
                .record(s)
                .copied()
                .unwrap_or(bytemuck::Zeroable::zeroed())
        })
        .collect();
    let want = cpu::frame_diagnostics(&slots, &ViewParams::new(&vp, eye), n, &groups);
    drop(slots);
    // A device fusing multiply-adds may decide rows on a plane either way: allow those.
    let sure_tolerance = (f64::from(want.visible) * 1e-4).ceil() as i64 + 2;
    let visible = got[0].visible;
    if (i64::from(visible) - i64::from(want.visible)).abs() > sure_tolerance
        || got[0].published != got[0].visible
        || got[0].group_counts.iter().sum::<u32>() != got[0].published
        || got[0].draw_overflow != 0
        || got[0].group_overflow != 0
    {
        bail!(
            "bench scene at n = {n}: GPU {:?}, the CPU oracle says {want:?}",
            got[0]
        );
    }

    let repeat = args.options.repeat;
    report::progress(format_args!("bench scene: n = {n}: timing the frame"));
    let frame_times = {
        let frame = std::cell::RefCell::new(&mut frame);
        time_frames(
            gpu,
            repeat,
            profile,
            |enc, p| Ok(frame.borrow_mut().encode(enc, p).map(|_| ())?),
            || {
                let t = frame
                    .borrow_mut()
                    .compiled_mut()
                    .read_timings(gpu.queue())?;
                Ok(node_ms(t))
            },
        )?
    };
    let mut row = SceneRow::new("scene-frame", u64::from(n), timing).timed(frame_times);
    row.visible = Some(visible);
    let mut out = vec![row];

    // Patch: the first `patch` live records lifted (transform, box, sphere), in turn written
    // range by range (`mutate`), staged for the frame's scatter through the upload's mapped
    // host buffer (`mutate_staged`, then a frame submitted and waited for so the next staging
    // starts over with a host buffer mapped again), and staged through queue writes alone (an
    // upload without host buffers, scattered by a graph of its own over the same scene).
    let mut queue_upload = GpuSceneUpload::new(
        gpu.device(),
        &scene,
        gpugraph_render::gpu_scene::upload::record_words(patched),
        4 * patched,
    )?
    .without_host_buffers();
    let mut queue_graph = {
        let mut g = gpugraph_command::CommandGraph::new("bench-queue-upload", gpu.device());
        let views = scene.import_to_graph(&mut g, "scene")?;
        queue_upload.add_to_graph(&mut g, &views, "upload")?;
        g.compile()?
    };
    let mut patch_us = Vec::new();
    let mut staged_us = Vec::new();
    let mut queue_us = Vec::new();
    let mut bytes = 0;
    let mut staged_bytes = 0;
    let mut staged_runs = 0;
    for k in 0..3 * repeat {
        let lift = 0.25 * (k + 1) as f32;
        // The first live records by slot (not `active_records`, which copies every record:
        // 2 GB a transaction at 16M, evicting every cache before the timed call).
        let patch: Vec<GpuScenePatch> = (0..scene.capacity())
            .filter_map(|s| scene.record(s).filter(|r| r.is_active()))
            .take(args.patch as usize)
            .map(|r| {
                let mut t = r.transform;
                t[3][1] += lift;
                let mut s = r.sphere;
                s[1] += lift;
                GpuScenePatch {
                    id: r.object_id,
                    values: vec![
                        GpuSceneFieldValue::Transform(t),
                        GpuSceneFieldValue::Aabb {
                            min: r.aabb_min,
                            max: [r.aabb_max[0], r.aabb_max[1] + lift, r.aabb_max[2]],
                        },
                        GpuSceneFieldValue::Sphere(s),
                    ],
                }
            })
            .collect();
        let tx = GpuSceneMutation {
            patch,
            ..Default::default()
        };
        if k % 3 == 0 {
            let t0 = Instant::now();
            let report = scene.mutate(gpu.queue(), &tx)?;
            patch_us.push(t0.elapsed().as_secs_f64() * 1e6);
            bytes = report.uploaded_bytes();
        } else if k % 3 == 1 {
            let t0 = Instant::now();
            let report = scene.mutate_staged(gpu.queue(), &mut upload, &tx)?;
            staged_us.push(t0.elapsed().as_secs_f64() * 1e6);
            if report.host_writes != 1 {
                bail!("bench scene at n = {n}: a staged patch found no mapped host buffer");
            }
            staged_bytes = report.uploaded_bytes();
            staged_runs = report.record_writes.len();
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            frame.encode(&mut enc, false)?;
            gpu.submit_and_wait(enc.finish())?;
        } else {
            let t0 = Instant::now();
            scene.mutate_staged(gpu.queue(), &mut queue_upload, &tx)?;
            queue_us.push(t0.elapsed().as_secs_f64() * 1e6);
            let mut enc = gpu.device().create_command_encoder(&Default::default());
            queue_upload.encode(&mut enc);
            queue_graph.encode(&mut enc, &Default::default())?;
            gpu.submit_and_wait(enc.finish())?;
        }
    }
    gpu.check("patching")?;
    // The staged patches landed: the patched records on the GPU equal the CPU copy.
    let words = u64::from(gpugraph_render::gpu_scene::upload::record_words(patched));
    let on_gpu = gpu.read_back(scene.record_buffer(), words)?;
    let on_cpu: Vec<u32> = (0..patched)
        .flat_map(|s| {
            bytemuck::cast::<GpuSceneRecord, [u32; 32]>(*scene.record(s).expect("a slot"))
        })
        .collect();
    if on_gpu != on_cpu {
        bail!(
            "bench scene at n = {n}: the staged patch left records that differ from the CPU copy"
        );
    }
    // And their packed bounds rows, derived on the GPU by the upload's `bounds` node.
    let bounds = scene
        .bounds_buffer()
        .context("a mutable scene has packed bounds")?;
    let on_gpu = gpu.read_back(bounds, 4 * u64::from(patched))?;
    let on_cpu: Vec<u32> = (0..patched)
        .flat_map(|s| gpugraph_render::gpu_scene::packed_bounds(scene.record(s).expect("a slot")))
        .collect();
    if on_gpu != on_cpu {
        bail!("bench scene at n = {n}: the staged patch left packed bounds that differ from the CPU copy");
    }
    let mut row = SceneRow::new(&format!("patch-{}", args.patch), u64::from(n), timing);
    row.upload_bytes = Some(bytes);
    row.patch_us = Some(Summary::of(&patch_us));
    out.push(row);
    let mut row = SceneRow::new(
        &format!("patch-staged-{}", args.patch),
        u64::from(n),
        timing,
    );
    row.upload_bytes = Some(staged_bytes);
    row.patch_us = Some(Summary::of(&staged_us));
    out.push(row);
    let op = format!("patch-staged-queue-{}", args.patch);
    let mut row = SceneRow::new(&op, u64::from(n), timing);
    row.upload_bytes = Some(staged_bytes);
    row.patch_us = Some(Summary::of(&queue_us));
    out.push(row);
    // The wgpu and driver share of a staged patch: its one queue write alone, packed as the
    // upload packs it (a copy per run, the run table and the header), and packed in host
    // memory first then copied once (write-combined mappings favour one long stream).
    for (suffix, one_copy) in [("", false), ("-one-copy", true)] {
        let us = write_floor(gpu, staged_bytes, 2 + staged_runs, one_copy, 2 * repeat)?;
        let op = format!("write-floor-{}{suffix}", args.patch);
        let mut row = SceneRow::new(&op, u64::from(n), timing);
        row.upload_bytes = Some(staged_bytes);
        row.patch_us = Some(us);
        out.push(row);
    }

    report::progress(format_args!(
        "bench scene: n = {n}: timing the culling peer"
    ));
    let cull_times = {
        let cull = std::cell::RefCell::new(&mut cull);
        time_frames(
            gpu,
            repeat,
            profile,
            |enc, p| Ok(cull.borrow_mut().encode(enc, p).map(|_| ())?),
            || {
                let t = cull.borrow_mut().compiled_mut().read_timings(gpu.queue())?;
                Ok(node_ms(t))
            },
        )?
    };
    out.push(SceneRow::new("cull (peer)", u64::from(n), timing).timed(cull_times));
    scene.destroy();
    commands.destroy();
    Ok(out)
}
