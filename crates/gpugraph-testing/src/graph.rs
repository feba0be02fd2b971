//! Running a command graph in a test: encode once, submit, wait.

use gpugraph_command::{
    wgpu, BufferHandle, CommandGraph, CompiledGraph, EncodeOptions, GpuContext,
};

/// Encodes `compiled` once with the import `overrides`, submits it and waits until the device
/// is idle. Panics on an encode or device error.
pub fn encode_wait(
    ctx: &GpuContext,
    compiled: &mut CompiledGraph,
    overrides: &[(BufferHandle, &wgpu::Buffer)],
) {
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    compiled
        .encode(
            &mut enc,
            &EncodeOptions {
                overrides,
                ..Default::default()
            },
        )
        .unwrap();
    ctx.queue.submit([enc.finish()]);
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
}

/// Compiles `g`, encodes and submits it once, then waits. Panics on a compile error.
pub fn run(ctx: &GpuContext, g: CommandGraph) {
    encode_wait(ctx, &mut g.compile().unwrap(), &[]);
}
