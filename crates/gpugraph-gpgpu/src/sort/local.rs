//! The one-workgroup path: domains of at most [`LOCAL_SORT_MAX`] rows sorted by a bitonic
//! network over (key, row) pairs in workgroup memory, one dispatch of one workgroup each.
//! Reads each key once, writes each output row once (values are gathered by source row).

use gpugraph_command::{Binding, CommandGraph, DataView, DispatchNode, Grid};

#[cfg(doc)]
use super::policy::LOCAL_SORT_MAX;
use super::source;
use super::Domain;
use crate::error::AlgorithmError;
use crate::kernel;

/// `DomainParams` of `local.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct DomainParams {
    rows: u32,
    width: u32,
    src_keys: u32,
    dst_keys: u32,
    src_values: u32,
    dst_values: u32,
    pad: [u32; 2],
}

/// Adds one dispatch node per non-empty domain of `domains` (all with the same value mode,
/// each at most `LOCAL_SORT_MAX` rows, validated by the caller), one workgroup each: `node_id`
/// for a single domain, else `{node_id}/{k}`.
pub(crate) fn add_local_node(
    graph: &mut CommandGraph,
    node_id: String,
    domains: Vec<Domain>,
) -> Result<(), AlgorithmError> {
    let Some(mode) = domains.first().map(|d| d.mode) else {
        return Ok(());
    };
    // Bindings are the views' aligned ranges at the device's storage alignment.
    let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
    let offset =
        |v: Option<DataView>| v.map_or(0, |x| x.aligned_range(align).element_offset as u32);
    let shader = source::local_domain(mode).keyed(format!("sort.sort_domain.{mode:?}"));
    let domains: Vec<Domain> = domains.into_iter().filter(|d| !d.keys.is_empty()).collect();
    let single = domains.len() == 1;
    for (k, d) in domains.into_iter().enumerate() {
        let rows = d.keys.len() as u32;
        let params = DomainParams {
            rows,
            width: rows.next_power_of_two().max(2),
            src_keys: offset(Some(d.keys)),
            dst_keys: offset(Some(d.sorted_keys)),
            src_values: offset(d.values),
            dst_values: offset(d.sorted_values),
            ..Default::default()
        };
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::read(1, d.keys),
            Binding::read_write(2, d.sorted_keys),
        ];
        bindings.extend(d.sorted_values.map(|v| Binding::read_write(3, v)));
        bindings.extend(d.values.map(|v| Binding::read(4, v)));
        let id = if single {
            node_id.clone()
        } else {
            format!("{node_id}/{k}")
        };
        kernel::add_node(
            graph,
            DispatchNode::new(
                id,
                shader.clone(),
                "sort_domain",
                bindings,
                Grid::Workgroups([1, 1, 1]),
            ),
        )?;
    }
    Ok(())
}
