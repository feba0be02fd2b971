//! Test support shared by the gpgpu GPU tests: a device (no adapter is a failure, never a
//! skip), uploads, poisoned outputs and explicit readback.
#![allow(dead_code)]

pub mod sort;

use std::sync::mpsc;

use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, CompiledGraph, DataView, DataViewDescriptor,
    EncodeOptions, GpuContext, VectorFormat,
};
use rand::{Rng, SeedableRng};

/// Value written into outputs before a run so unwritten rows are caught.
pub const POISON: u32 = 0xDEAD_BEEF;

pub fn ctx() -> GpuContext {
    GpuContext::new().expect("a Vulkan adapter (lavapipe in CI) is required for GPU tests")
}

pub fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

pub fn random_u32s(rng: &mut impl Rng, n: usize, max_exclusive: u32) -> Vec<u32> {
    (0..n).map(|_| rng.random_range(0..max_exclusive)).collect()
}

/// A STORAGE | COPY_SRC | COPY_DST buffer holding `data` (at least 4 bytes).
pub fn upload(ctx: &GpuContext, data: &[u32]) -> wgpu::Buffer {
    let buf = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test-data"),
        size: (data.len() as u64 * 4).max(4),
        usage: U::STORAGE | U::COPY_SRC | U::COPY_DST,
        mapped_at_creation: false,
    });
    if !data.is_empty() {
        ctx.queue.write_buffer(&buf, 0, bytemuck::cast_slice(data));
    }
    buf
}

/// Reads a whole buffer back (explicit readback for checking).
pub fn read_buffer(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Vec<u32> {
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test-staging"),
        size: buffer.size(),
        usage: U::MAP_READ | U::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
    ctx.queue.submit([enc.finish()]);
    let slice = staging.slice(..);
    let (tx, rx) = mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| tx.send(r).unwrap());
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    rx.recv().unwrap().unwrap();
    let out = bytemuck::cast_slice(&slice.get_mapped_range().unwrap()).to_vec();
    out
}

/// Rows `offset..offset+len` of a u32 buffer.
pub fn read_rows(ctx: &GpuContext, buffer: &wgpu::Buffer, offset: usize, len: usize) -> Vec<u32> {
    read_buffer(ctx, buffer)[offset..offset + len].to_vec()
}

/// Imports `buffer` and returns a packed view of `len` rows of `format` at row `offset`.
pub fn import_typed(
    g: &mut CommandGraph,
    id: &str,
    buffer: &wgpu::Buffer,
    format: VectorFormat,
    offset: u64,
    len: u64,
) -> DataView {
    let h = g
        .import_buffer(
            BufferDescriptor::new(id, buffer.size(), buffer.usage()),
            buffer,
        )
        .unwrap();
    let row = format.byte_size() as u64;
    g.create_data_view(
        h,
        DataViewDescriptor::packed(format, len).at_offset(offset * row),
    )
    .unwrap()
}

/// Imports `buffer` and returns a packed uint32 view of `len` rows at element `offset`.
pub fn import_view(
    g: &mut CommandGraph,
    id: &str,
    buffer: &wgpu::Buffer,
    offset: u64,
    len: u64,
) -> DataView {
    import_typed(g, id, buffer, VectorFormat::Uint32, offset, len)
}

/// Encodes `compiled` once with import `overrides`, submits it and waits.
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

/// Compiles, encodes and submits the graph once, then waits.
pub fn run(ctx: &GpuContext, g: CommandGraph) {
    encode_wait(ctx, &mut g.compile().unwrap(), &[]);
}

/// Splits `total` into `parts` chunk lengths including empty and uneven ones.
pub fn uneven_chunks(rng: &mut impl Rng, total: usize, parts: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..parts.saturating_sub(1))
        .map(|_| rng.random_range(0..=total))
        .collect();
    cuts.push(0);
    cuts.push(total);
    cuts.sort();
    cuts.windows(2).map(|w| w[1] - w[0]).collect()
}

/// A device whose dispatch dimension limit is `max_dim`, so multi-row dispatch grids are
/// exercised with small inputs.
pub fn ctx_with_max_dispatch(max_dim: u32) -> GpuContext {
    ctx()
        .with_adjusted_limits(|l| l.max_compute_workgroups_per_dimension = max_dim)
        .expect("device with reduced dispatch limit")
}
