//! The README's library example, kept compiling and running by `make test` (which also checks
//! that the README shows this file's code verbatim).

// README:begin
use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{CommandGraph, EncodeOptions, GpuContext, VectorFormat};
use gpugraph_gpgpu::Scan;
use gpugraph_tables::{import_gpu_data, GpuData};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = GpuContext::new()?; // WGPU_BACKEND and GPUGRAPH_ADAPTER pick the adapter
    let (u32s, usage) = (VectorFormat::Uint32, BufferUsages::empty());
    let counts = GpuData::upload(&ctx, &[3u32, 1, 4, 1, 5], u32s, usage)?;
    let starts = GpuData::upload(&ctx, &[u32::MAX; 5], u32s, usage)?;

    let mut graph = CommandGraph::new("readme", &ctx.device);
    let input = import_gpu_data(&mut graph, "counts", &counts, BufferUsages::STORAGE)?;
    let output = import_gpu_data(&mut graph, "starts", &starts, BufferUsages::STORAGE)?;
    Scan {
        id: "offsets".into(),
        input: input.into(),
        output: output.into(),
        inclusive: false,
        segment_starts: None,
    }
    .add_to_graph(&mut graph)?;

    // The graph records into the caller's encoder; the caller submits and reads back.
    let mut compiled = graph.compile()?;
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    compiled.encode(&mut encoder, &EncodeOptions::default())?;
    ctx.queue.submit([encoder.finish()]);
    let got: Vec<u32> = starts.read_back(&ctx)?;
    assert_eq!(got, [0, 3, 4, 8, 9]);
    println!("exclusive scan of [3, 1, 4, 1, 5]: {got:?}");
    Ok(())
}
// README:end
