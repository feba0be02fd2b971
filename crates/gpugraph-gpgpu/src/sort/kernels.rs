//! Helpers shared by the sort kernels' dispatch nodes.

use gpugraph_command::{CommandGraph, DataView, DataViewDescriptor, VectorFormat};

use crate::error::AlgorithmError;

/// A `vec4<u32>` view over the bytes `words` binds at `align` (its aligned range), rounded down
/// to whole 16-byte slots: the kernels load whole tiles through it and the tail through
/// `words`. Only used for views of more than 256 rows, so at least one slot remains.
pub(crate) fn vec4_view(
    graph: &CommandGraph,
    words: &DataView,
    align: u64,
) -> Result<DataView, AlgorithmError> {
    let range = words.aligned_range(align);
    Ok(graph.create_data_view(
        words.buffer(),
        DataViewDescriptor {
            format: VectorFormat::Uint32x4,
            length: (range.size / 16).max(1),
            byte_offset: range.offset,
            byte_stride: None,
        },
    )?)
}
