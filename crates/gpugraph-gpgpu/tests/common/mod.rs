//! Test support shared by the gpgpu GPU tests: a device (no adapter is a failure, never a
//! skip), uploads, poisoned outputs and explicit readback.
#![allow(dead_code)]
// Each test binary uses a part of the re-exported scaffolding.
#![allow(unused_imports)]

pub mod sort;

use gpugraph_command::wgpu;
use gpugraph_command::{
    BufferDescriptor, CommandGraph, DataView, DataViewDescriptor, GpuContext, VectorFormat,
};
pub use gpugraph_testing::{
    boundary_sizes, ctx, ctx_with_max_dispatch, encode_wait, random_u32s, read_buffer, rng, run,
    uneven_chunks, POISON,
};

/// A STORAGE | COPY_SRC | COPY_DST buffer holding `data` (at least 4 bytes).
pub fn upload(ctx: &GpuContext, data: &[u32]) -> wgpu::Buffer {
    gpugraph_testing::upload(ctx, data)
}

/// Rows `offset..offset+len` of a u32 buffer.
pub fn read_rows(ctx: &GpuContext, buffer: &wgpu::Buffer, offset: usize, len: usize) -> Vec<u32> {
    gpugraph_testing::read(ctx, buffer, offset, len)
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
