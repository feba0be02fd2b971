//! Visible-instance compaction, the spec's canonical use of masks and compaction: two
//! per-instance visibility masks are combined with AND, the visible instance ids are compacted
//! in source order, and their count lands in the `instanceCount` word of an indirect draw
//! record, ready for `draw_indirect` with no readback. An exclusive scan of per-instance
//! vertex counts gives each instance its first vertex in a packed vertex buffer.
//!
//! Everything is recorded into one caller-owned encoder and submitted once; the results are
//! read back only to check them against plain-Rust loops.
//!
//! ```sh
//! cargo run --release -p gpugraph-gpgpu --example visible_instances [-- INSTANCES]
//! ```

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{
    BufferDescriptor, CommandGraph, DataViewDescriptor, EncodeOptions, GpuContext, VectorFormat,
};
use gpugraph_gpgpu::{Compaction, Mask, MaskOp, Scan};
use gpugraph_tables::{import_gpu_data, GpuData};

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

    // Deterministic stand-ins for a culling pass's outputs (xorshift, no dependency).
    let mut state = 0x9E37_79B9u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let in_frustum: Vec<u32> = (0..n).map(|_| (next() % 4 != 0) as u32).collect();
    let unoccluded: Vec<u32> = (0..n).map(|_| (next() % 3 != 0) as u32).collect();
    let ids: Vec<u32> = (0..instances).collect();
    let vertex_counts: Vec<u32> = (0..n).map(|_| 3 * (1 + next() % 64)).collect();

    let u32s = VectorFormat::Uint32;
    let frustum_data = GpuData::upload(&ctx, &in_frustum, u32s, BufferUsages::empty())?;
    let occlusion_data = GpuData::upload(&ctx, &unoccluded, u32s, BufferUsages::empty())?;
    let id_data = GpuData::upload(&ctx, &ids, u32s, BufferUsages::empty())?;
    let counts_data = GpuData::upload(&ctx, &vertex_counts, u32s, BufferUsages::empty())?;
    // Outputs start poisoned so that anything the graph fails to write shows up in the check.
    let visible_data = GpuData::upload(&ctx, &vec![u32::MAX; n], u32s, BufferUsages::empty())?;
    let first_vertex_data = GpuData::upload(&ctx, &vec![u32::MAX; n], u32s, BufferUsages::empty())?;
    // draw_indirect record: vertex_count, instance_count, first_vertex, first_instance.
    let record_data =
        GpuData::upload(&ctx, &[36u32, u32::MAX, 0, 0], u32s, BufferUsages::INDIRECT)?;

    let mut graph = CommandGraph::new("visible-instances", &ctx.device);
    let rw = BufferUsages::STORAGE;
    let frustum = import_gpu_data(&mut graph, "in-frustum", &frustum_data, rw)?;
    let occlusion = import_gpu_data(&mut graph, "unoccluded", &occlusion_data, rw)?;
    let ids_view = import_gpu_data(&mut graph, "instance-ids", &id_data, rw)?;
    let counts = import_gpu_data(&mut graph, "vertex-counts", &counts_data, rw)?;
    let visible_ids = import_gpu_data(&mut graph, "visible-ids", &visible_data, rw)?;
    let first_vertex = import_gpu_data(&mut graph, "first-vertex", &first_vertex_data, rw)?;
    let record = import_gpu_data(&mut graph, "draw-record", &record_data, rw)?;
    // The instance_count word: a one-row view at byte 4 of the 16-byte record.
    let instance_count = graph.create_data_view(
        record.buffer(),
        DataViewDescriptor::packed(u32s, 1).at_offset(4),
    )?;
    // The combined mask only lives inside the graph: a transient the planner may alias.
    let mask_buffer = graph.create_buffer(BufferDescriptor::new(
        "visible-mask",
        u64::from(instances).max(1) * 4,
        BufferUsages::STORAGE,
    ))?;
    let mask = graph.create_packed_view(mask_buffer, u32s, u64::from(instances))?;

    Mask {
        id: "visibility".into(),
        inputs: vec![frustum.into(), occlusion.into()],
        output: mask.into(),
        op: MaskOp::And,
    }
    .add_to_graph(&mut graph)?;
    Compaction {
        id: "compact-visible".into(),
        values: ids_view.into(),
        flags: mask.into(),
        output: visible_ids.into(),
        count: instance_count,
        overflow: None,
    }
    .add_to_graph(&mut graph)?;
    Scan {
        id: "first-vertex".into(),
        input: counts.into(),
        output: first_vertex.into(),
        inclusive: false,
        segment_starts: None,
    }
    .add_to_graph(&mut graph)?;

    let mut compiled = graph.compile()?;
    let stats = compiled.stats();
    println!(
        "graph: {} nodes in order {:?}; {} transient bytes",
        stats.node_order.len(),
        stats.node_order,
        stats.physical_transient_bytes
    );
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    compiled.encode(&mut encoder, &EncodeOptions::default())?;
    ctx.queue.submit([encoder.finish()]);

    // Explicit readback, only to check against the CPU.
    let record_out: Vec<u32> = record_data.read_back(&ctx)?;
    let want_ids: Vec<u32> = (0..instances)
        .filter(|&i| in_frustum[i as usize] != 0 && unoccluded[i as usize] != 0)
        .collect();
    let visible = record_out[1] as usize;
    let got_ids: Vec<u32> = visible_data.read_back(&ctx)?;
    let mut want_first = Vec::with_capacity(n);
    let mut running = 0u32;
    for &c in &vertex_counts {
        want_first.push(running);
        running = running.wrapping_add(c);
    }
    let got_first: Vec<u32> = first_vertex_data.read_back(&ctx)?;

    println!(
        "{visible} of {instances} instances visible ({:.1} %); draw record {:?}",
        100.0 * visible as f64 / f64::from(instances.max(1)),
        record_out
    );
    if visible != want_ids.len() || got_ids[..visible] != want_ids[..] {
        return Err(format!(
            "compaction disagrees with the CPU: {visible} visible, CPU says {}",
            want_ids.len()
        )
        .into());
    }
    if got_first != want_first {
        let row = got_first.iter().zip(&want_first).position(|(a, b)| a != b);
        return Err(format!("first-vertex scan disagrees with the CPU at row {row:?}").into());
    }
    println!("checked against the CPU: visible ids and first vertices match");
    Ok(())
}
