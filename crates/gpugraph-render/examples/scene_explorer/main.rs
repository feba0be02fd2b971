//! Scene graph explorer (spec 6.3a): an application-owned hierarchy (a glTF 2.0 file or a
//! generated city) flattened into a GPUScene, then per frame, in one compiled graph: GPU
//! bounds visibility and stable compaction, draw generation into per-material resource
//! windows, group classification, one render bundle, and picking that answers the node's
//! name. Camera moves and mutations are buffer writes; the graph compiles once.
//!
//! ```text
//! cargo run --release -p gpugraph-render --example scene_explorer -- \
//!     (FILE.gltf|FILE.glb|--generate N) --out frame.png [--frames K] [--pick X,Y] \
//!     [--mutate M] [--size WxH]
//! ```
//! Needs a device with `INDIRECT_FIRST_INSTANCE` (lavapipe and NVIDIA have it).

mod renderer;
mod source;

use std::collections::HashMap;
use std::path::PathBuf;

use gpugraph_command::wgpu::{self, BufferUsages as U, TextureFormat as F, TextureUsages as T};
use gpugraph_command::{
    copy_fn, BufferDescriptor, ColorAttachment, ColorLoad, CommandGraph, CopyNode,
    DataViewDescriptor, DepthStencilAttachment, EncodeOptions, GpuContext, ResourceUse,
    TextureAccess, TextureDescriptor, VectorFormat,
};
use gpugraph_render::camera::{look_at, mul, perspective, Mat4};
use gpugraph_render::gpu_scene::{
    sphere_around, GpuSceneFieldValue, GpuSceneMutation, GpuScenePatch,
};
use gpugraph_render::{
    Bounds, DrawCommandBuffer, DrawLayout, GpuScene, GpuSceneDrawGeneration, GpuSceneGroup,
    GpuSceneRecord, GpuSceneResourceGroups, IndexPickingTarget, ViewParams, VisibilityWorkflow,
};
use wgpu::util::DrawIndexedIndirectArgs;

use source::Source;

type Error = Box<dyn std::error::Error>;

struct Args {
    input: Option<PathBuf>,
    generate: usize,
    out: PathBuf,
    frames: u32,
    pick: Option<(u32, u32)>,
    mutate: usize,
    size: (u32, u32),
}

fn parse_args() -> Result<Args, Error> {
    let mut a = Args {
        input: None,
        generate: 0,
        out: PathBuf::from("frame.png"),
        frames: 1,
        pick: None,
        mutate: 0,
        size: (640, 480),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--generate" => a.generate = value()?.parse()?,
            "--out" => a.out = value()?.into(),
            "--frames" => a.frames = value()?.parse()?,
            "--mutate" => a.mutate = value()?.parse()?,
            "--pick" => {
                let v = value()?;
                let (x, y) = v.split_once(',').ok_or("--pick X,Y")?;
                a.pick = Some((x.parse()?, y.parse()?));
            }
            "--size" => {
                let v = value()?;
                let (w, h) = v.split_once('x').ok_or("--size WxH")?;
                a.size = (w.parse()?, h.parse()?);
            }
            _ if !arg.starts_with("--") => a.input = Some(arg.into()),
            _ => return Err(format!("unknown option {arg}").into()),
        }
    }
    if a.input.is_none() && a.generate == 0 {
        return Err("give FILE.gltf|FILE.glb or --generate N".into());
    }
    Ok(a)
}

/// The world box of a local box under `m` (its eight corners transformed).
fn world_box(m: &Mat4, min: [f32; 3], max: [f32; 3]) -> ([f32; 3], [f32; 3]) {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for k in 0..8 {
        let p = [
            if k & 1 == 0 { min[0] } else { max[0] },
            if k & 2 == 0 { min[1] } else { max[1] },
            if k & 4 == 0 { min[2] } else { max[2] },
        ];
        for i in 0..3 {
            let v = m[0][i] * p[0] + m[1][i] * p[1] + m[2][i] * p[2] + m[3][i];
            lo[i] = lo[i].min(v);
            hi[i] = hi[i].max(v);
        }
    }
    (lo, hi)
}

fn main() -> Result<(), Error> {
    let args = parse_args()?;
    let src = match &args.input {
        Some(path) => Source::from_gltf(path)?,
        None => Source::generate(args.generate),
    };
    let ctx = GpuContext::new()?;
    let (device, queue) =
        pollster::block_on(ctx.adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("scene explorer"),
            required_features: ctx.device.features() | wgpu::Features::INDIRECT_FIRST_INSTANCE,
            required_limits: ctx.adapter.limits(),
            ..Default::default()
        }))?;

    // Per-material resource groups, each with a command window sized to its records plus
    // spare slots for insertions.
    let world = src.world_transforms();
    let materials = src.materials.len();
    let mut per_material = vec![0u32; materials];
    for n in &src.nodes {
        if let Some((_, m)) = n.draws {
            per_material[m] += 1;
        }
    }
    const SPARE: u32 = 4;
    let mut groups = Vec::new();
    let mut first = 0;
    for (m, &count) in per_material.iter().enumerate() {
        groups.push(GpuSceneGroup {
            id: 100 + m as u32,
            first_command: first,
            command_count: count + SPARE,
            geometry_id: None,
        });
        first += count + SPARE;
    }
    let command_capacity = first;
    let mut next_slot: Vec<u32> = groups.iter().map(|g| g.first_command).collect();
    let mut names: HashMap<u32, String> = HashMap::new();
    let record_of = |node: usize, geometry: usize, material: usize, slot: u32| {
        let g = &src.geometries[geometry];
        let (lo, hi) = world_box(&world[node], g.min, g.max);
        GpuSceneRecord::new(1_000_000 + node as u32)
            .with_aabb(lo, hi)
            .with_transform(world[node])
            .with_group(100 + material as u32)
            .with_geometry(geometry as u32)
            .with_command_slot(slot)
    };
    let capacity = src.nodes.len() as u32 + SPARE;
    let mut scene = GpuScene::from_cpu_hierarchy(
        &device,
        &queue,
        "explorer",
        capacity,
        &src.roots,
        |&n| src.nodes[n].children.clone(),
        |v| {
            let (geometry, material) = src.nodes[*v.node].draws?;
            let slot = next_slot[material];
            next_slot[material] += 1;
            names.insert(1_000_000 + *v.node as u32, src.nodes[*v.node].name.clone());
            Some(record_of(*v.node, geometry, material, slot))
        },
    )?;
    let state = scene.state();
    println!(
        "scene: {} nodes, {} records in {} slots, {} geometries, {} resource groups, {} command slots",
        src.nodes.len(),
        state.active_count,
        capacity,
        src.geometries.len(),
        groups.len(),
        command_capacity
    );

    // Renderer-authored geometry arguments, one per command slot of each record.
    let commands = DrawCommandBuffer::create(
        &device,
        "commands",
        DrawLayout::DrawIndexed,
        command_capacity,
    );
    for (_, r) in scene.active_records() {
        let g = &src.geometries[r.geometry_id as usize];
        commands.write_draw_indexed(
            &queue,
            r.command_slot,
            DrawIndexedIndirectArgs {
                index_count: g.index_count,
                instance_count: 0,
                first_index: g.first_index,
                base_vertex: g.base_vertex,
                first_instance: 0,
            },
        )?;
    }

    // The frame graph.
    let (w, h) = args.size;
    let mut g = CommandGraph::new("scene-explorer", &device);
    let views = scene.import_to_graph(&mut g, "scene")?;
    let uniform = |label: &str, size: u64| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: U::UNIFORM | U::COPY_DST,
            mapped_at_creation: false,
        })
    };
    let view_buffer = uniform("view", ViewParams::BYTES);
    let camera_buffer = uniform("camera", 64);
    let view_h = g.import_buffer(
        BufferDescriptor::new("view", ViewParams::BYTES, U::UNIFORM),
        &view_buffer,
    )?;
    let camera_h = g.import_buffer(
        BufferDescriptor::new("camera", 64, U::UNIFORM),
        &camera_buffer,
    )?;
    let command_h = commands.import(&mut g, "commands")?;
    let n = u64::from(capacity);
    let groups_n = groups.len() as u64;
    // Diagnostics, read back only to print: visible, visibility overflow, required,
    // published, draw overflow, counts[G], flags[G], group overflow.
    let diag_words = 6 + 2 * groups_n;
    let diag = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("diagnostics"),
        size: diag_words * 4,
        usage: U::STORAGE | U::COPY_SRC,
        mapped_at_creation: false,
    });
    let diag_h = g.import_buffer(
        BufferDescriptor::new("diagnostics", diag_words * 4, U::STORAGE),
        &diag,
    )?;
    let word = |g: &CommandGraph, at: u64, len: u64| {
        g.create_data_view(
            diag_h,
            DataViewDescriptor::packed(VectorFormat::Uint32, len).at_offset(4 * at),
        )
    };
    let mask_h = g.create_buffer(BufferDescriptor::new("mask", n * 4, U::STORAGE))?;
    let visible_h = g.create_buffer(BufferDescriptor::new("visible", n * 4, U::STORAGE))?;
    let mask = g.create_packed_view(mask_h, VectorFormat::Uint32, n)?;
    let vv = |g: &CommandGraph, v| g.create_vector_view(vec![v]);
    VisibilityWorkflow {
        id: "visibility".into(),
        view: view_h,
        bounds: Bounds::Spheres(vv(&g, views.sphere)?),
        time_range: None,
        lod: None,
        selection: Some(vv(&g, views.flags)?),
        ids: None,
        mask: Some(vv(&g, mask)?),
        output: vv(
            &g,
            g.create_packed_view(visible_h, VectorFormat::Uint32, n)?,
        )?,
        count: word(&g, 0, 1)?,
        overflow: Some(word(&g, 1, 1)?),
    }
    .add_to_graph(&mut g)?;
    GpuSceneDrawGeneration {
        id: "draw-generation".into(),
        scene: views,
        visibility: Some(mask),
        commands: commands.clone(),
        command_handle: command_h,
        required_count: word(&g, 2, 1)?,
        published_count: word(&g, 3, 1)?,
        overflow: word(&g, 4, 1)?,
    }
    .add_to_graph(&mut g)?;
    GpuSceneResourceGroups {
        id: "resource-groups".into(),
        scene: views,
        commands: commands.clone(),
        command_handle: command_h,
        groups: groups.clone(),
        counts: word(&g, 5, groups_n)?,
        group_flags: word(&g, 5 + groups_n, groups_n)?,
        overflow: word(&g, 5 + 2 * groups_n, 1)?,
    }
    .add_to_graph(&mut g)?;
    let image = g.create_texture(TextureDescriptor::new(
        "image",
        (w, h),
        F::Rgba8Unorm,
        T::RENDER_ATTACHMENT | T::COPY_SRC,
    ))?;
    let depth = g.create_texture(TextureDescriptor::new(
        "depth",
        (w, h),
        F::Depth32Float,
        T::RENDER_ATTACHMENT,
    ))?;
    let meshes = renderer::SceneMeshes {
        vertices: src.vertices.clone(),
        indices: src.indices.clone(),
        colors: (0..groups.len()).map(|m| src.materials[m]).collect(),
    };
    renderer::add_scene_pass(
        &mut g,
        "draw",
        ColorAttachment::new(
            image,
            ColorLoad::Clear(wgpu::Color {
                r: 0.03,
                g: 0.03,
                b: 0.06,
                a: 1.0,
            }),
        ),
        DepthStencilAttachment::cleared_depth(depth, 1.0),
        camera_h,
        views.records,
        &commands,
        command_h,
        &groups,
        &meshes,
        false,
    )?;
    let row = (w * 4).div_ceil(256) * 256;
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("image readback"),
        size: u64::from(row) * u64::from(h),
        usage: U::MAP_READ | U::COPY_DST,
        mapped_at_creation: false,
    });
    let readback_h = g.import_buffer(
        BufferDescriptor::new("image-readback", readback.size(), U::COPY_DST),
        &readback,
    )?;
    g.add_copy_node(CopyNode::new(
        "read-image",
        vec![
            ResourceUse::texture(image, TextureAccess::CopySrc),
            ResourceUse::copy_dst(readback_h),
        ],
        move |_| {
            Ok(copy_fn(move |enc, ec| {
                enc.copy_texture_to_buffer(
                    ec.texture(image).as_image_copy(),
                    wgpu::TexelCopyBufferInfo {
                        buffer: ec.buffer(readback_h),
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: 0,
                            bytes_per_row: Some(row),
                            rows_per_image: Some(h),
                        },
                    },
                    wgpu::Extent3d {
                        width: w,
                        height: h,
                        depth_or_array_layers: 1,
                    },
                );
            }))
        },
    ))?;
    let pick = match args.pick {
        Some((x, y)) => {
            let target = IndexPickingTarget::create(&mut g, "pick-ids", (w, h))?;
            renderer::add_scene_pass(
                &mut g,
                "pick",
                target.color_attachment(),
                target.depth_attachment(),
                camera_h,
                views.records,
                &commands,
                command_h,
                &groups,
                &meshes,
                true,
            )?;
            let out = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("pick"),
                size: 16,
                usage: U::COPY_SRC | U::COPY_DST,
                mapped_at_creation: false,
            });
            let out_h =
                g.import_buffer(BufferDescriptor::new("pick-out", 16, U::COPY_DST), &out)?;
            let at = target.add_pixel_copy(&mut g, "read-pick", out_h)?;
            target.set_pixel(&at, x, y)?;
            Some((out, target, at))
        }
        None => None,
    };
    let mut compiled = g.compile()?;
    let pipelines = compiled.cache().stats().pipelines_created;

    // Frames: the camera orbits (uniform writes), mutations move and replace records.
    let (lo, hi) = scene.active_records().iter().fold(
        ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
        |(lo, hi), (_, r)| {
            (
                std::array::from_fn(|i| lo[i].min(r.aabb_min[i])),
                std::array::from_fn(|i| hi[i].max(r.aabb_max[i])),
            )
        },
    );
    let center: [f32; 3] = std::array::from_fn(|i| {
        if lo[i].is_finite() {
            (lo[i] + hi[i]) * 0.5
        } else {
            0.0
        }
    });
    let radius =
        (0..3)
            .map(|i| hi[i] - lo[i])
            .fold(1.0f32, |a, b| if b.is_finite() { a.max(b) } else { a });
    let mut next_id = 2_000_000u32;
    let mut frame_png = Vec::new();
    for frame in 0..args.frames {
        let angle = 0.6 + frame as f32 * 0.35;
        let eye = [
            center[0] + radius * 0.9 * angle.cos(),
            center[1] + radius * 0.6,
            center[2] + radius * 0.9 * angle.sin(),
        ];
        let vp = mul(
            &perspective(
                55f32.to_radians(),
                w as f32 / h as f32,
                radius * 0.01,
                radius * 4.0,
            ),
            &look_at(eye, center, [0.0, 1.0, 0.0]),
        );
        queue.write_buffer(
            &view_buffer,
            0,
            bytemuck::bytes_of(&ViewParams::new(&vp, eye)),
        );
        queue.write_buffer(&camera_buffer, 0, bytemuck::bytes_of(&vp));
        if args.mutate > 0 && frame > 0 {
            let live = scene.active_records();
            let mut m = GpuSceneMutation::default();
            for k in 0..args.mutate.min(live.len().saturating_sub(1)) {
                let (_, r) = live[(frame as usize * 31 + k * 17) % live.len()];
                if m.patch.iter().any(|p| p.id == r.object_id) {
                    continue;
                }
                let mut t = r.transform;
                t[3][1] += 0.5;
                let lift = |v: [f32; 3]| [v[0], v[1] + 0.5, v[2]];
                let (lo, hi) = (lift(r.aabb_min), lift(r.aabb_max));
                m.patch.push(GpuScenePatch {
                    id: r.object_id,
                    values: vec![
                        GpuSceneFieldValue::Transform(t),
                        GpuSceneFieldValue::Aabb { min: lo, max: hi },
                        GpuSceneFieldValue::Sphere(sphere_around(lo, hi)),
                    ],
                });
            }
            // Replace one record: a new application ID in the same command slot.
            if let Some((_, old)) = live
                .iter()
                .find(|(_, r)| !m.patch.iter().any(|p| p.id == r.object_id))
            {
                m.remove.push(old.object_id);
                let mut new = *old;
                new.object_id = next_id;
                let name = format!(
                    "{} (replaced)",
                    names.get(&old.object_id).cloned().unwrap_or_default()
                );
                names.insert(next_id, name);
                next_id += 1;
                m.insert.push(new);
            }
            let rep = scene.mutate(&queue, &m)?;
            println!(
                "frame {frame}: mutation: {} patched, {} removed, {} inserted: {} bytes in {} writes",
                rep.patched.len(),
                rep.removed.len(),
                rep.inserted.len(),
                rep.uploaded_bytes(),
                rep.write_count()
            );
        }
        let mut enc = device.create_command_encoder(&Default::default());
        compiled.encode(&mut enc, &EncodeOptions::default())?;
        queue.submit([enc.finish()]);
        let d = read(&device, &queue, &diag)?;
        let gn = groups.len();
        println!(
            "frame {frame}: visible {} (overflow {}), draws required {} published {} (overflow {}), groups {:?} flags {:?} global {}",
            d[0], d[1], d[2], d[3], d[4], &d[5..5 + gn], &d[5 + gn..5 + 2 * gn], d[5 + 2 * gn]
        );
        if frame + 1 == args.frames {
            frame_png = read(&device, &queue, &readback)?;
            if let Some((out, _, _)) = &pick {
                let p = read(&device, &queue, out)?;
                let (x, y) = args.pick.unwrap_or_default();
                match names.get(&p[0]) {
                    Some(name) => println!(
                        "pick ({x}, {y}): object {} = {name} (slot {:?})",
                        p[0],
                        scene.slot_of(p[0])
                    ),
                    None => println!("pick ({x}, {y}): background"),
                }
            }
        }
    }
    println!(
        "pipelines created after compile: {} (parameter and mutation changes recompile nothing)",
        compiled.cache().stats().pipelines_created - pipelines
    );
    let bytes: Vec<u8> = bytemuck::cast_slice(&frame_png).to_vec();
    let mut rgba = Vec::with_capacity((w * h * 4) as usize);
    for y in 0..h as usize {
        rgba.extend_from_slice(&bytes[y * row as usize..y * row as usize + w as usize * 4]);
    }
    let file = std::io::BufWriter::new(std::fs::File::create(&args.out)?);
    let mut encoder = png::Encoder::new(file, w, h);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.write_header()?.write_image_data(&rgba)?;
    println!("wrote {}", args.out.display());
    Ok(())
}

/// Explicit readback of a whole buffer (the example prints diagnostics; nothing drives draws).
fn read(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
) -> Result<Vec<u32>, Error> {
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("staging"),
        size: buffer.size(),
        usage: U::MAP_READ | U::COPY_DST,
        mapped_at_creation: false,
    });
    let source = if buffer.usage().contains(U::MAP_READ) {
        buffer
    } else {
        let mut enc = device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
        queue.submit([enc.finish()]);
        &staging
    };
    let slice = source.slice(..);
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    device.poll(wgpu::PollType::wait_indefinitely())?;
    rx.recv()??;
    let words: Vec<u32> = bytemuck::cast_slice(&slice.get_mapped_range()?).to_vec();
    source.unmap();
    Ok(words)
}
