//! The spatial family's node plumbing: its shader recipes (registry files plus the `DIMS` and
//! `WG` header), declared dispatch nodes, word-clearing nodes and uint32 transients.

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{Binding, BufferDescriptor, CommandGraph, DataView, Grid, VectorFormat};

use crate::error::AlgorithmError;
use crate::kernel::{shader, Binder, ViewCheck};

/// Invocations per workgroup of every spatial kernel.
pub(crate) const WG: u32 = 256;

/// The WGSL of `file` after `spatial/common.wgsl` for `dims` dimensions, with `defines`.
pub(crate) fn source(file: &'static str, dims: u32, defines: &[&'static str]) -> String {
    let mut s = shader("spatial/common.wgsl")
        .file(file)
        .comment(format!("gpugraph-gpgpu spatial: {file}, {dims}-D"))
        .u32("DIMS", dims)
        .u32("WG", WG);
    for d in defines {
        s = s.define(*d);
    }
    s.build()
}

pub(crate) use crate::kernel::add_dispatch as dispatch;

/// `Grid::Rows` of `rows` rows at [`WG`] per workgroup.
pub(crate) fn rows(rows: u64) -> Grid {
    Grid::Rows {
        rows,
        rows_per_workgroup: WG,
    }
}

/// `ClearParams` in clear.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ClearParams {
    pub off: u32,
    pub rows: u32,
    pub pad0: u32,
    pub pad1: u32,
}

/// Node `id`: zeroes every row of the packed uint32 `view`.
pub(crate) fn clear(
    graph: &mut CommandGraph,
    c: ViewCheck<'_>,
    id: String,
    view: DataView,
) -> Result<(), AlgorithmError> {
    let binder = Binder::new(&graph.device().limits());
    let p = ClearParams {
        off: binder.offset(c, "cleared output", &view)?,
        rows: view.len() as u32,
        pad0: 0,
        pad1: 0,
    };
    let wgsl = shader("spatial/clear.wgsl").u32("WG", WG).build();
    dispatch(
        graph,
        id,
        "spatial/clear",
        wgsl,
        "clear",
        vec![Binding::params(0, &p), Binding::read_write(1, view)],
        rows(view.len()),
    )
}

/// A transient packed uint32 view of `rows` rows (at least one word allocated).
pub(crate) fn transient_u32(
    graph: &mut CommandGraph,
    id: String,
    rows: u64,
) -> Result<DataView, AlgorithmError> {
    let h = graph.create_buffer(BufferDescriptor::new(
        id,
        rows.max(1) * 4,
        BufferUsages::STORAGE,
    ))?;
    Ok(graph.create_packed_view(h, VectorFormat::Uint32, rows)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn the_clear_kernel_validates_and_its_params_match() {
        let s = shader("spatial/clear.wgsl").u32("WG", WG).build();
        kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
        let members = kernel::field_offsets!(ClearParams; off, rows, pad0, pad1);
        kernel::assert_struct_layout(
            &s,
            "ClearParams",
            Some(std::mem::size_of::<ClearParams>()),
            &members,
        );
    }
}
