//! Device checks, planning and dispatch nodes of the chained-scan kernels (scan and the fused
//! compaction share the tile planner of [`crate::scan::plan`]), with their errors mapped into
//! [`AlgorithmError`].

use gpugraph_command::{
    wgpu, Access, Binding, CommandGraph, DataView, DataViewDescriptor, DispatchNode, Grid,
    ShaderSource, VectorFormat,
};

use super::ViewCheck;
use crate::error::AlgorithmError;
use crate::scan::{
    check_device_for, ChunkLayout, PlanLimits, ScanKernelOptions, ScanMode, ScanPlan,
};

/// Maps the kernel's device check into the algorithm's error (`segmented`: whether the
/// kernel may run segmented, which doubles its workgroup storage).
pub fn check_kernel(
    c: ViewCheck<'_>,
    device: &wgpu::Device,
    options: &ScanKernelOptions,
    segmented: bool,
) -> Result<(), AlgorithmError> {
    check_device_for(device, options, segmented).map_err(|source| AlgorithmError::Kernel {
        algorithm: c.algorithm,
        id: c.id.to_string(),
        source: Box::new(source),
    })
}

/// Plans `layouts` for `options` on `device`, mapping planner errors.
pub fn plan_scan(
    c: ViewCheck<'_>,
    device: &wgpu::Device,
    options: &ScanKernelOptions,
    layouts: &[ChunkLayout],
    mode: ScanMode,
) -> Result<ScanPlan, AlgorithmError> {
    ScanPlan::new(
        layouts,
        mode,
        PlanLimits::new(&options.policy, &device.limits()),
    )
    .map_err(|source| AlgorithmError::Kernel {
        algorithm: c.algorithm,
        id: c.id.to_string(),
        source: Box::new(source),
    })
}

/// One planned chunk of a chained-scan kernel as a dispatch: its uniform (the chunk's
/// `ScanParams`, and for the compaction its `CompactParams` after it), the storage bindings
/// (slots 1 and up) and the planned workgroups.
pub(crate) struct ChainedChunk {
    /// Index of the chunk in the plan (names the node when there are several).
    pub index: usize,
    /// The uniform at binding 0.
    pub params: Vec<u8>,
    /// Every other binding.
    pub bindings: Vec<Binding>,
    /// `ChunkPlan::workgroups`.
    pub workgroups: [u32; 3],
}

/// Adds the dispatch nodes of a planned chained scan over `shader`: one per non-empty chunk,
/// in order, the first clearing the tile status (`clear_status` over `clear_workgroups`)
/// before its `scan_tiles`. One chunk keeps the node id `id`; several are `{id}/chunk{k}`.
/// Every chunk's node binds the tile status read-write, so the graph keeps them in order and
/// the ticket counter and carries cross chunk boundaries as in one pass.
pub(crate) fn add_chained_nodes(
    graph: &mut CommandGraph,
    id: &str,
    shader: &ShaderSource,
    clear_workgroups: u32,
    chunks: Vec<ChainedChunk>,
) -> Result<(), AlgorithmError> {
    let single = chunks.len() == 1;
    for (k, chunk) in chunks.into_iter().enumerate() {
        let node_id = if single {
            id.to_string()
        } else {
            format!("{id}/chunk{}", chunk.index)
        };
        let mut bindings = vec![Binding::params_bytes(0, chunk.params)];
        bindings.extend(chunk.bindings);
        let tiles = Grid::Workgroups(chunk.workgroups);
        let node = if k == 0 {
            let clear = Grid::Workgroups([clear_workgroups, 1, 1]);
            DispatchNode::new(node_id, shader.clone(), "clear_status", bindings, clear)
                .then("scan_tiles", tiles)
        } else {
            DispatchNode::new(node_id, shader.clone(), "scan_tiles", bindings, tiles)
        };
        super::add_node(graph, node)?;
    }
    Ok(())
}

/// The `array<vec4<u32>>` binding at `slot` over the same bytes as the words binding of
/// `words` (its aligned range rounded down to 16 bytes) when the chunk has a full tile at a
/// 4-element aligned offset (`vector`: the kernels' condition for vector access); otherwise a
/// placeholder the dispatch never touches.
pub(crate) fn vec4_binding(
    graph: &CommandGraph,
    slot: u32,
    words: &DataView,
    access: Access,
    vector: bool,
) -> Result<Binding, AlgorithmError> {
    let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
    let range = words.aligned_range(align);
    let vector = vector && range.element_offset.is_multiple_of(4) && range.size >= 16;
    if !vector {
        return Ok(Binding::placeholder(slot, access));
    }
    let view = graph.create_data_view(
        words.buffer(),
        DataViewDescriptor {
            format: VectorFormat::Uint32x4,
            length: range.size / 16,
            byte_offset: range.offset,
            byte_stride: None,
        },
    )?;
    Ok(match access {
        Access::ReadWrite => Binding::read_write(slot, view),
        _ => Binding::read(slot, view),
    })
}
