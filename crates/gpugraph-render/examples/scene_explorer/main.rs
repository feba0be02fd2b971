//! Scene graph explorer (spec 6.3a), the library's consumer in a few lines: an
//! application-owned hierarchy (a glTF 2.0 file or a generated city, [`SceneSource`])
//! flattened into a GPUScene and drawn by a [`GpuSceneFrame`] (GPU visibility, draw
//! generation into per-material windows, group classification, one render bundle, picking).
//! Camera moves and mutations are buffer writes; the graph compiles once. `gpugraph scene` is
//! the full command (table scenes, timings, errors); this is the minimal program.
//!
//! ```text
//! cargo run --release -p gpugraph-render --example scene_explorer -- \
//!     (FILE.gltf|FILE.glb|--generate N) [--out frame.png] [--frames K] [--pick X,Y]
//! ```

use std::path::PathBuf;

use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::GpuContext;
use gpugraph_render::gpu_scene::source::SceneSource;
use gpugraph_render::gpu_scene::{
    orbit_camera, GpuSceneFieldValue, GpuSceneFrame, GpuSceneFrameOptions, GpuSceneLayer,
    GpuSceneMutation, GpuScenePatch,
};
use gpugraph_render::scene::padded_bytes_per_row;

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let (mut source, mut out, mut frames, mut pick) = (None, PathBuf::from("frame.png"), 1, None);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--generate" => source = Some(SceneSource::generate(value()?.parse()?)),
            "--out" => out = value()?.into(),
            "--frames" => frames = value()?.parse()?,
            "--pick" => {
                let v = value()?;
                let (x, y) = v.split_once(',').ok_or("--pick X,Y")?;
                pick = Some((x.parse::<u32>()?, y.parse::<u32>()?));
            }
            path => source = Some(SceneSource::from_gltf(path.as_ref())?),
        }
    }
    let source = source.ok_or("give FILE.gltf|FILE.glb or --generate N")?;
    let ctx = GpuContext::new()?;
    let (device, queue) = (&ctx.device, &ctx.queue);
    let mut flat = source.flatten(device, queue, "explorer", 4)?;
    let (w, h) = (640, 480);
    let mut frame = GpuSceneFrame::new(
        device,
        &[GpuSceneLayer {
            scene: &flat.scene,
            commands: &flat.commands,
            groups: &flat.groups,
            colors: &flat.colors,
            upload: None,
        }],
        &source.vertices,
        &source.indices,
        GpuSceneFrameOptions {
            width: w,
            height: h,
            draw: true,
            picking: pick.is_some(),
            readback: true,
        },
    )?;
    if let Some((x, y)) = pick {
        frame.set_pick(x, y)?;
    }
    let (lo, hi) = flat.scene.active_records().iter().fold(
        ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
        |(lo, hi), (_, r)| {
            (
                std::array::from_fn(|i| lo[i].min(r.aabb_min[i])),
                std::array::from_fn(|i| hi[i].max(r.aabb_max[i])),
            )
        },
    );
    for f in 0..frames {
        let (vp, eye) = orbit_camera(lo, hi, 0.6 + f as f32 * 0.35, w as f32 / h as f32);
        frame.set_camera(queue, &vp, eye);
        if f > 0 {
            // Lift one record: a patch of its transform (a 64-byte write).
            if let Some((_, r)) = flat.scene.active_records().first().copied() {
                let mut t = r.transform;
                t[3][1] += 0.5;
                let m = GpuSceneMutation {
                    patch: vec![GpuScenePatch {
                        id: r.object_id,
                        values: vec![GpuSceneFieldValue::Transform(t)],
                    }],
                    ..Default::default()
                };
                let report = flat.scene.mutate(queue, &m)?;
                println!("frame {f}: uploaded {} bytes", report.uploaded_bytes());
            }
        }
        let mut enc = device.create_command_encoder(&Default::default());
        frame.encode(&mut enc, false)?;
        queue.submit([enc.finish()]);
        let d = frame.decode_diagnostics(&read(&ctx, frame.diagnostics_buffer())?);
        println!("frame {f}: {:?}", d.unwrap_or_default());
    }
    if let (Some((x, y)), Some(buffer)) = (pick, frame.pick_buffer()) {
        let id = read(&ctx, buffer)?[0];
        let name = flat.names.get(&id).map_or("background", String::as_str);
        println!("pick ({x}, {y}): {name}");
    }
    let words = read(&ctx, frame.image_buffer().ok_or("no image")?)?;
    let bytes: &[u8] = bytemuck::cast_slice(&words);
    let row = padded_bytes_per_row(w) as usize;
    let rgba: Vec<u8> = (0..h as usize)
        .flat_map(|y| bytes[y * row..y * row + 4 * w as usize].iter().copied())
        .collect();
    let mut png = png::Encoder::new(std::io::BufWriter::new(std::fs::File::create(&out)?), w, h);
    png.set_color(png::ColorType::Rgba);
    png.write_header()?.write_image_data(&rgba)?;
    println!("wrote {}", out.display());
    Ok(())
}

/// Reads a buffer back (mapping it directly when it is mappable).
fn read(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<Vec<u32>, Error> {
    let staging;
    let source = if buffer.usage().contains(U::MAP_READ) {
        buffer
    } else {
        staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("staging"),
            size: buffer.size(),
            usage: U::MAP_READ | U::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
        ctx.queue.submit([enc.finish()]);
        &staging
    };
    let slice = source.slice(..);
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    ctx.device.poll(wgpu::PollType::wait_indefinitely())?;
    rx.recv()??;
    let words = bytemuck::cast_slice(&slice.get_mapped_range()?).to_vec();
    source.unmap();
    Ok(words)
}
