//! Visible instances on the GPU, the spec's canonical use of masks and compaction: instance
//! bounding spheres, LOD bands and a selection live in GPU buffers; the visibility workflow
//! tests each sphere against the camera's frustum, intersects LOD and selection, publishes the
//! mask, compacts the visible IDs in source order and writes their count into the
//! `instanceCount` word of a drawIndexed record; a render bundle recorded once draws them into
//! an offscreen target with depth. Nothing is read back to decide what to draw.
//!
//! Everything is recorded into one caller-owned encoder and submitted once; the results are
//! read back only to check them against the plain-Rust oracle (exits nonzero on a mismatch).
//!
//! ```sh
//! cargo run --release -p gpugraph-render --example visible_instances [-- INSTANCES]
//! ```

use gpugraph_command::wgpu::{self, BufferUsages, TextureFormat, TextureUsages};
use gpugraph_command::{
    BufferDescriptor, ColorAttachment, ColorLoad, CommandGraph, DepthStencilAttachment,
    EncodeOptions, GpuContext, TextureDescriptor, VectorFormat,
};
use gpugraph_render::camera::{look_at, mul, perspective};
use gpugraph_render::visibility::cpu::{self, RowBounds, RowInputs};
use gpugraph_render::{
    Bounds, CubeCamera, DrawCommandBuffer, DrawLayout, InstancedCubes, ViewParams,
    VisibilityWorkflow,
};
use gpugraph_tables::{import_gpu_data, GpuData};
use wgpu::util::DrawIndexedIndirectArgs;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let instances: u32 = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .map_err(|e| format!("INSTANCES must be a u32, got '{arg}': {e}"))?,
        None => 1_000_000,
    };
    let n = instances as usize;
    let ctx = GpuContext::new()?;
    let caps = ctx.capabilities();
    println!("adapter: {} ({})", caps.adapter, caps.backend);

    // A deterministic scene (xorshift, no dependency): spheres in a slab, LOD bands, a
    // selection that drops every seventh instance.
    let mut state = 0x9E37_79B9u32;
    let mut unit = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as f32 / u32::MAX as f32
    };
    let extent = 3.0 * (instances.max(1) as f32).cbrt();
    let spheres: Vec<[f32; 4]> = (0..n)
        .map(|_| {
            let mut c = || (unit() * 2.0 - 1.0) * extent;
            [c(), c() * 0.25, c(), 0.3 + unit()]
        })
        .collect();
    let lod: Vec<[f32; 2]> = spheres.iter().map(|s| [0.0, 150.0 * s[3]]).collect();
    let selection: Vec<u32> = (0..instances).map(|i| u32::from(i % 7 != 3)).collect();
    let eye = [extent * 0.8, extent * 0.3, extent * 0.8];
    let (width, height) = (640u32, 360u32);
    let view_projection = mul(
        &perspective(
            60f32.to_radians(),
            width as f32 / height as f32,
            0.5,
            4.0 * extent,
        ),
        &look_at(eye, [0.0; 3], [0.0, 1.0, 0.0]),
    );
    let view = ViewParams::new(&view_projection, eye);

    let f4 = VectorFormat::Float32x4;
    let u32s = VectorFormat::Uint32;
    let none = BufferUsages::empty();
    let spheres_data = GpuData::upload(&ctx, &spheres, f4, none)?;
    let lod_data = GpuData::upload(&ctx, &lod, VectorFormat::Float32x2, none)?;
    let selection_data = GpuData::upload(&ctx, &selection, u32s, none)?;
    // Outputs start poisoned so that anything the graph fails to write shows up in the check.
    let visible_data = GpuData::upload(&ctx, &vec![u32::MAX; n], u32s, none)?;
    let mask_data = GpuData::upload(&ctx, &vec![u32::MAX; n], u32s, none)?;
    let view_data = GpuData::upload(&ctx, &[view], f4, BufferUsages::UNIFORM)?;
    let camera = CubeCamera {
        view_projection,
        capacity: instances,
        batch: 0,
        pad: [0; 2],
    };
    let camera_data = GpuData::upload(&ctx, &[camera], f4, BufferUsages::UNIFORM)?;
    let draw = DrawCommandBuffer::create(&ctx.device, "draws", DrawLayout::DrawIndexed, 1);
    draw.write_draw_indexed(
        &ctx.queue,
        0,
        DrawIndexedIndirectArgs {
            index_count: InstancedCubes::INDEX_COUNT,
            instance_count: u32::MAX,
            first_index: 0,
            base_vertex: 0,
            first_instance: 0,
        },
    )?;

    let mut graph = CommandGraph::new("visible-instances", &ctx.device);
    let rw = BufferUsages::STORAGE;
    let spheres_v = import_gpu_data(&mut graph, "spheres", &spheres_data, rw)?;
    let lod_v = import_gpu_data(&mut graph, "lod", &lod_data, rw)?;
    let selection_v = import_gpu_data(&mut graph, "selection", &selection_data, rw)?;
    let visible_v = import_gpu_data(&mut graph, "visible-ids", &visible_data, rw)?;
    let mask_v = import_gpu_data(&mut graph, "mask", &mask_data, rw)?;
    let view_h = graph.import_buffer(
        BufferDescriptor::new("view", ViewParams::BYTES, BufferUsages::UNIFORM),
        view_data.buffer(),
    )?;
    let camera_h = graph.import_buffer(
        BufferDescriptor::new("camera", camera_data.byte_span(), BufferUsages::UNIFORM),
        camera_data.buffer(),
    )?;
    let draw_h = draw.import(&mut graph, "draws")?;
    let vector = |graph: &CommandGraph, v| graph.create_vector_view(vec![v]);
    VisibilityWorkflow {
        id: "visibility".into(),
        view: view_h,
        bounds: Bounds::Spheres(vector(&graph, spheres_v)?),
        time_range: None,
        lod: Some(vector(&graph, lod_v)?),
        selection: Some(vector(&graph, selection_v)?),
        ids: None,
        mask: Some(vector(&graph, mask_v)?),
        output: vector(&graph, visible_v)?,
        count: draw.instance_count_view(&graph, draw_h, 0)?,
        overflow: None,
    }
    .add_to_graph(&mut graph)?;
    let ra = TextureUsages::RENDER_ATTACHMENT;
    let color = graph.create_texture(TextureDescriptor::new(
        "color",
        (width, height),
        TextureFormat::Rgba8Unorm,
        ra,
    ))?;
    let depth = graph.create_texture(TextureDescriptor::new(
        "depth",
        (width, height),
        TextureFormat::Depth32Float,
        ra,
    ))?;
    InstancedCubes {
        id: "cubes".into(),
        color: ColorAttachment::new(color, ColorLoad::Clear(wgpu::Color::BLACK)),
        depth: Some(DepthStencilAttachment::cleared_depth(depth, 1.0)),
        camera: camera_h,
        spheres: spheres_v,
        visible: visible_v,
        draw: draw.clone(),
        draw_handle: draw_h,
        record: 0,
        cubes_per_instance: InstancedCubes::CUBES_PER_INSTANCE,
    }
    .add_to_graph(&mut graph)?;

    let mut compiled = graph.compile()?;
    println!("graph: nodes in order {:?}", compiled.node_order());
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    compiled.encode(&mut encoder, &EncodeOptions::default())?;
    ctx.queue.submit([encoder.finish()]);

    // Explicit readback, only to check against the CPU.
    let record = GpuData::borrowed_packed(draw.buffer(), 0, 5, u32s)?.read_back::<u32>(&ctx)?;
    let mask: Vec<u32> = mask_data.read_back(&ctx)?;
    let bounds: Vec<RowBounds> = spheres.iter().map(|&s| RowBounds::Sphere(s)).collect();
    let inputs = RowInputs {
        time_range: None,
        lod: Some(&lod),
        selection: Some(&selection),
    };
    // Exact on lavapipe; rows within rounding of a plane may flip on a device that fuses
    // multiply-adds (see `visibility::cpu`).
    let oracle = cpu::visibility(&view, &bounds, inputs);
    let sensitive = cpu::rounding_sensitive(&view, &bounds, inputs, 1e-6);
    if let Some(row) = cpu::first_disagreement(&oracle, &mask, &sensitive) {
        return Err(format!(
            "mask row {row} is {} but the oracle says {}",
            mask[row], oracle[row]
        )
        .into());
    }
    let ids: Vec<u32> = (0..instances).collect();
    let want = cpu::compact(&ids, &mask);
    let visible = record[1] as usize;
    let got: Vec<u32> = visible_data.read_back(&ctx)?;
    println!(
        "{visible} of {instances} instances visible ({:.1} %); draw record {record:?}",
        100.0 * visible as f64 / f64::from(instances.max(1)),
    );
    if visible != want.len()
        || got[..visible] != want[..]
        || got[visible..].iter().any(|&w| w != u32::MAX)
    {
        return Err(format!(
            "compaction disagrees with the CPU: {visible} visible, CPU says {}",
            want.len()
        )
        .into());
    }
    println!("checked against the CPU oracle: mask, visible IDs and the indirect count match");
    Ok(())
}
