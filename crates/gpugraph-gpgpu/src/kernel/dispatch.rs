//! The one path by which the families' kernels reach the command graph as declared
//! [`gpugraph_command::DispatchNode`]s. Grids past one dimension's limit split over x and y
//! ([`gpugraph_command::grid_for`]); kernels recover the linear id with `linear_workgroup`.

use gpugraph_command::{Binding, CommandGraph, DispatchNode, Grid, ShaderSource};

/// Adds the declared dispatch `entry` of `wgsl` (pipeline key `key`) as node `id`, its uses
/// derived from `bindings` and checked against the WGSL when the graph compiles.
pub(crate) fn add_dispatch(
    graph: &mut CommandGraph,
    id: String,
    key: &str,
    wgsl: String,
    entry: &str,
    bindings: Vec<Binding>,
    grid: Grid,
) -> Result<(), crate::error::AlgorithmError> {
    add_node(
        graph,
        DispatchNode::new(id, ShaderSource::new(key, wgsl), entry, bindings, grid),
    )
}

/// Adds `node` to `graph`, mapping the graph's error.
pub(crate) fn add_node(
    graph: &mut CommandGraph,
    node: DispatchNode,
) -> Result<(), crate::error::AlgorithmError> {
    graph.add_dispatch_node(node)?;
    Ok(())
}
