//! The topology family's node plumbing: declared dispatch nodes over its registry shaders,
//! row grids and uint32 transients.

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, DataView, Grid, VectorFormat,
};

use crate::error::AlgorithmError;
use crate::kernel::{Binder, ViewCheck};

/// Invocations per workgroup of the row kernels.
pub(crate) const WG: u32 = 256;

pub(crate) use crate::kernel::add_dispatch as dispatch;

/// `Grid::Rows` of `rows` rows at [`WG`] per workgroup.
pub(crate) fn rows(rows: u64) -> Grid {
    Grid::Rows {
        rows,
        rows_per_workgroup: WG,
    }
}

/// A graph-owned buffer of `words` uint32 words (at least one) with `usage`.
pub(crate) fn transient(
    graph: &mut CommandGraph,
    id: String,
    words: u64,
    usage: BufferUsages,
) -> Result<BufferHandle, AlgorithmError> {
    Ok(graph.create_buffer(BufferDescriptor::new(id, words.max(1) * 4, usage))?)
}

/// A packed uint32 view of `rows` rows of the transient `h` starting at row `row0`.
pub(crate) fn words(
    graph: &CommandGraph,
    h: BufferHandle,
    row0: u64,
    rows: u64,
) -> Result<DataView, AlgorithmError> {
    Ok(graph.create_data_view(
        h,
        gpugraph_command::DataViewDescriptor::packed(VectorFormat::Uint32, rows)
            .at_offset(row0 * 4),
    )?)
}

/// The element offset of `view` in its aligned binding and its row count as u32, after
/// checking both fit the device.
pub(crate) fn bound(
    binder: &Binder,
    c: ViewCheck<'_>,
    what: &str,
    view: &DataView,
) -> Result<(u32, u32), AlgorithmError> {
    let off = binder.offset(c, what, view)?;
    let rows = u32::try_from(view.len())
        .map_err(|_| c.device_limit(format!("rows of {what}"), view.len(), u64::from(u32::MAX)))?;
    Ok((off, rows))
}
