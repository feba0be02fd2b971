//! Validity masks that cross the bus as bitmaps ([`MaskTransfer::Bitmap`]).
//!
//! A `uint32` mask costs 4 bytes per row over PCIe for 1 bit of information; in the analyze
//! job's 50M-row table the two nullable columns' masks were 400 of the 1,000 MB uploaded. Here
//! each chunk's bitmap is staged (1/32 of the bytes) into one temporary device buffer and
//! `validity_expand.wgsl` writes the mask words on the GPU, where 400 MB take well under a
//! millisecond: one dispatch node per chunk of one command graph, submitted once after the
//! bitmaps' staging (an upload has no caller encoder to record into). The masks are the same words the host path writes (tests compare both).
//!
//! [`MaskTransfer::Bitmap`]: crate::MaskTransfer::Bitmap

use arrow_buffer::NullBuffer;
use gpugraph_command::{
    Binding, CommandGraph, CompiledGraph, DataViewDescriptor, DispatchNode, EncodeOptions,
    GpuContext, GraphError, Grid, ShaderSource, VectorFormat,
};
use gpugraph_tables::upload::{
    create_table_buffers, write_targets, FillFn, Outcome, Source, Target,
};
use gpugraph_tables::GpuVector;

use crate::chunks::{layout, stopped, storage_alignment, wrap, PreparedChunk};
use crate::error::ArrowAdapterError;
use crate::options::{MaskTransfer, UploadOptions};

const WORKGROUP: u64 = 256;

/// Words `first_word ..` of the validity bitmap of a chunk of `rows` rows (LSB first, 1 =
/// valid; all ones without nulls). Bits past the last row are unspecified.
pub(crate) fn write_bits(
    nulls: Option<&NullBuffer>,
    rows: usize,
    first_word: usize,
    out: &mut [u32],
) {
    let Some(nulls) = nulls else {
        out.fill(u32::MAX);
        return;
    };
    let start = (first_word * 32).min(rows);
    let len = (out.len() * 32).min(rows - start);
    let bits = nulls.inner().slice(start, len);
    let chunks = bits.bit_chunks();
    let mut k = 0;
    for word in chunks.iter() {
        out[k] = word as u32;
        out[k + 1] = (word >> 32) as u32;
        k += 2;
    }
    if chunks.remainder_len() > 0 {
        let rest = chunks.remainder_bits();
        out[k] = rest as u32;
        if chunks.remainder_len() > 32 {
            out[k + 1] = (rest >> 32) as u32;
        }
    }
}

/// How the masks of a column with chunks of `chunk_rows` rows cross the bus on `device` when
/// `requested`: [`MaskTransfer::Bitmap`] only when every chunk's mask binds as one storage
/// buffer and fits one dispatch.
pub fn mask_transfer(
    device: &wgpu::Device,
    chunk_rows: &[u64],
    requested: MaskTransfer,
) -> MaskTransfer {
    let limits = device.limits();
    let max_dim = u64::from(limits.max_compute_workgroups_per_dimension);
    let fits = chunk_rows.iter().all(|&r| {
        r * 4 <= limits.max_storage_buffer_binding_size
            && r.div_ceil(WORKGROUP) <= max_dim * max_dim
    });
    match requested {
        MaskTransfer::Bitmap if fits => MaskTransfer::Bitmap,
        _ => MaskTransfer::Words,
    }
}

/// Bytes a mask of `rows` rows moves over the bus under `transfer`.
pub fn mask_transfer_bytes(rows: u64, transfer: MaskTransfer) -> u64 {
    match transfer {
        MaskTransfer::Bitmap => rows.div_ceil(32) * 4,
        MaskTransfer::Words => rows * 4,
    }
}

/// Uploads the masks of `chunks` as bitmaps and expands them on the GPU into buffers placed
/// per `options`. `None` when some chunk is larger than one storage binding or one dispatch
/// covers (the caller then writes words on the host).
pub(crate) fn stage_bitmaps(
    ctx: &GpuContext,
    chunks: &[PreparedChunk<'_>],
    options: &UploadOptions,
) -> Result<Option<GpuVector>, ArrowAdapterError> {
    let (device, queue) = (&ctx.device, &ctx.queue);
    let rows: Vec<u64> = chunks.iter().map(|c| c.rows() as u64).collect();
    if mask_transfer(device, &rows, MaskTransfer::Bitmap) != MaskTransfer::Bitmap {
        return Ok(None);
    }
    // Each chunk's bits start at a bindable offset of one temporary buffer.
    let alignment = storage_alignment(device);
    let mut bit_offsets = Vec::with_capacity(rows.len());
    let mut end = 0u64;
    for r in &rows {
        bit_offsets.push(end);
        end += (r.div_ceil(32) * 4).div_ceil(alignment) * alignment;
    }
    let masks = layout(device, &rows, 4, options.placement);
    let fills: Vec<Box<FillFn<'_>>> = chunks
        .iter()
        .map(|c| {
            let (nulls, rows) = (c.nulls(), c.rows());
            let fill = move |at: u64, out: &mut [u8]| {
                write_bits(
                    nulls,
                    rows,
                    (at / 4) as usize,
                    bytemuck::cast_slice_mut(out),
                );
                Ok(())
            };
            Box::new(fill) as Box<FillFn<'_>>
        })
        .collect();
    let (buffers, outcome) =
        create_table_buffers(device, &masks.sizes, options.extra_usage, |b| {
            let bits = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("gpugraph-arrow validity bits"),
                size: end.max(4),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let targets: Vec<Target<'_>> = rows
                .iter()
                .zip(&bit_offsets)
                .zip(&fills)
                .filter(|((r, _), _)| **r > 0)
                .map(|((r, &offset), fill)| Target {
                    buffer: &bits,
                    offset,
                    source: Source::Fill {
                        len: r.div_ceil(32) * 4,
                        row: 4,
                        fill: fill.as_ref(),
                    },
                })
                .collect();
            let outcome = write_targets(device, queue, &targets)?;
            if outcome == Outcome::Stopped {
                return Ok(outcome);
            }
            let chunks: Vec<(u64, u64, usize, u64)> = rows
                .iter()
                .zip(&bit_offsets)
                .zip(&masks.places)
                .map(|((&r, &bit_offset), &(i, offset))| (r, bit_offset, i, offset))
                .collect();
            let mut graph = expand_graph(device, &bits, b, &chunks)?;
            if !graph.node_order().is_empty() {
                let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("gpugraph-arrow validity expand"),
                });
                graph.encode(&mut encoder, &EncodeOptions::default())?;
                queue.submit([encoder.finish()]);
            }
            // Freed once the expansion ran (the graph's bind groups are its own).
            drop(graph);
            bits.destroy();
            Ok(outcome)
        })?;
    if outcome == Outcome::Stopped {
        return Err(stopped());
    }
    wrap(
        buffers,
        &masks,
        &rows,
        VectorFormat::Uint32,
        options.placement,
    )
    .map(Some)
}

/// The graph that expands each nonempty chunk `(rows, bit offset in bits, mask buffer index
/// in masks, byte offset in it)`: one dispatch node per chunk, `bits` read, the chunk's mask
/// words written.
fn expand_graph(
    device: &wgpu::Device,
    bits: &wgpu::Buffer,
    masks: &[wgpu::Buffer],
    chunks: &[(u64, u64, usize, u64)],
) -> Result<CompiledGraph, GraphError> {
    let mut graph = CommandGraph::new("gpugraph-arrow validity expand", device);
    let import = |graph: &mut CommandGraph, id: String, buffer: &wgpu::Buffer| {
        graph.import_buffer_once(id, buffer, wgpu::BufferUsages::STORAGE)
    };
    let bits_handle = import(&mut graph, "bits".into(), bits)?;
    for (k, &(rows, bit_offset, i, offset)) in chunks.iter().enumerate() {
        if rows == 0 {
            continue;
        }
        let mask = import(&mut graph, format!("mask {i}"), &masks[i])?;
        let words = DataViewDescriptor::packed(VectorFormat::Uint32, rows.div_ceil(32));
        let bits_view = graph.create_data_view(bits_handle, words.at_offset(bit_offset))?;
        let mask_view = graph.create_data_view(
            mask,
            DataViewDescriptor::packed(VectorFormat::Uint32, rows).at_offset(offset),
        )?;
        graph.add_dispatch_node(
            DispatchNode::new(
                format!("expand {k}"),
                ShaderSource::new(
                    "arrow/validity_expand",
                    include_str!("validity_expand.wgsl"),
                ),
                "expand",
                vec![
                    Binding::read(0, bits_view),
                    Binding::read_write(1, mask_view),
                ],
                Grid::Rows {
                    rows,
                    rows_per_workgroup: WORKGROUP as u32,
                },
            )
            .private_bind_group(),
        )?;
    }
    graph.compile()
}
