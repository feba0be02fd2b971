//! Test support of the render GPU tests: a device (no adapter is a failure, never a skip),
//! uploads, explicit readback and a deterministic random scene.
#![allow(dead_code)]
// Each test binary uses a part of the re-exported scaffolding.
#![allow(unused_imports)]

use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, CompiledGraph, DataView, DataViewDescriptor,
    EncodeOptions, GpuContext, VectorFormat,
};
pub use gpugraph_testing::{ctx, read_buffer, rng, POISON};
use rand::Rng;

/// A STORAGE | COPY_SRC | COPY_DST (| `extra`) buffer holding `data` (at least 16 bytes).
pub fn upload<T: bytemuck::Pod>(ctx: &GpuContext, data: &[T], extra: U) -> wgpu::Buffer {
    gpugraph_testing::upload_padded(ctx, data, U::STORAGE | U::COPY_SRC | extra, 16)
}

/// Imports `buffer` whole and returns the handle.
pub fn import(g: &mut CommandGraph, id: &str, buffer: &wgpu::Buffer) -> BufferHandle {
    g.import_buffer(
        BufferDescriptor::new(id, buffer.size(), buffer.usage() - U::MAP_READ),
        buffer,
    )
    .unwrap()
}

/// A packed view of `len` rows of `format` at row `offset` of `h`.
pub fn view(
    g: &CommandGraph,
    h: BufferHandle,
    format: VectorFormat,
    offset: u64,
    len: u64,
) -> DataView {
    let row = format.byte_size() as u64;
    g.create_data_view(
        h,
        DataViewDescriptor::packed(format, len).at_offset(offset * row),
    )
    .unwrap()
}

/// Encodes `compiled` once, submits it and waits.
pub fn encode_wait(ctx: &GpuContext, compiled: &mut CompiledGraph) {
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    compiled
        .encode(&mut enc, &EncodeOptions::default())
        .unwrap();
    ctx.queue.submit([enc.finish()]);
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
}

/// `n` spheres with centers in `[-extent, extent]³` and radii in `[0.05, max_radius]`.
pub fn random_spheres(rng: &mut impl Rng, n: usize, extent: f32, max_radius: f32) -> Vec<[f32; 4]> {
    (0..n)
        .map(|_| {
            [
                rng.random_range(-extent..extent),
                rng.random_range(-extent..extent),
                rng.random_range(-extent..extent),
                rng.random_range(0.05..max_radius),
            ]
        })
        .collect()
}

/// Adds copy node `id`: the whole `size` texture `texture` into `buffer` (rows `row_bytes`
/// apart), so a test reads the texels back.
pub fn copy_texture_rows(
    g: &mut CommandGraph,
    id: &str,
    texture: gpugraph_command::TextureHandle,
    buffer: BufferHandle,
    size: (u32, u32),
    row_bytes: u32,
) {
    use gpugraph_command::{CopyNode, ResourceUse, TextureAccess};
    g.add_copy_node(CopyNode::new(
        id,
        vec![
            ResourceUse::texture(texture, TextureAccess::CopySrc),
            ResourceUse::copy_dst(buffer),
        ],
        move |_| {
            Ok(gpugraph_command::copy_fn(move |enc, ec| {
                enc.copy_texture_to_buffer(
                    ec.texture(texture).as_image_copy(),
                    wgpu::TexelCopyBufferInfo {
                        buffer: ec.buffer(buffer),
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: 0,
                            bytes_per_row: Some(row_bytes),
                            rows_per_image: Some(size.1),
                        },
                    },
                    wgpu::Extent3d {
                        width: size.0,
                        height: size.1,
                        depth_or_array_layers: 1,
                    },
                );
            }))
        },
    ))
    .unwrap();
}
