//! The one-workgroup path: domains of at most [`LOCAL_SORT_MAX`] rows sorted by a bitonic
//! network over (key, row) pairs in workgroup memory, one dispatch of one workgroup each.
//! Reads each key once, writes each output row once (values are gathered by source row).

use gpugraph_command::{
    compute_fn, view_binding, BindGroupCache, CommandGraph, ComputeNode, ResourceUse,
};

use super::kernels::{self, resolve};
#[cfg(doc)]
use super::policy::LOCAL_SORT_MAX;
use super::source::{self, ValueMode};
use super::Domain;
use crate::error::AlgorithmError;
use crate::kernel::{parameter_buffer, Binding, Grid};

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

/// Adds one node sorting each of `domains` (all with the same value mode, each at most
/// `LOCAL_SORT_MAX` rows, validated by the caller) with its own one-workgroup dispatch.
pub(crate) fn add_local_node(
    graph: &mut CommandGraph,
    node_id: String,
    domains: Vec<Domain>,
) -> Result<(), AlgorithmError> {
    let Some(mode) = domains.first().map(|d| d.mode) else {
        return Ok(());
    };
    let mut uses = Vec::new();
    for d in &domains {
        uses.push(ResourceUse::storage_read(d.keys));
        uses.push(ResourceUse::storage_write(d.sorted_keys));
        uses.extend(d.sorted_values.map(ResourceUse::storage_write));
        uses.extend(d.values.map(ResourceUse::storage_read));
    }
    let mut bindings = vec![
        Binding::Uniform,
        Binding::StorageRead,
        Binding::StorageReadWrite,
    ];
    match mode {
        ValueMode::None => {}
        ValueMode::SourceRows => bindings.push(Binding::StorageReadWrite),
        ValueMode::Load => bindings.extend([Binding::StorageReadWrite, Binding::StorageRead]),
    }
    graph.add_compute_node(ComputeNode::new(node_id, uses, move |cc| {
        let device = cc.device().clone();
        let align = cc.limits().min_storage_buffer_offset_alignment as u64;
        let kernel = kernels::get(
            &device,
            &format!("sort.sort_domain.{mode:?}"),
            &source::local_domain(mode),
            "sort_domain",
            &bindings,
        );
        struct Dispatch {
            domain: Domain,
            params: gpugraph_command::wgpu::Buffer,
            groups: BindGroupCache,
        }
        let offset = |v: Option<gpugraph_command::DataView>| {
            v.map_or(0, |x| x.aligned_range(align).element_offset as u32)
        };
        let mut dispatches: Vec<Dispatch> = domains
            .into_iter()
            .filter(|d| !d.keys.is_empty())
            .map(|d| {
                let rows = d.keys.len() as u32;
                let p = DomainParams {
                    rows,
                    width: rows.next_power_of_two().max(2),
                    src_keys: offset(Some(d.keys)),
                    dst_keys: offset(Some(d.sorted_keys)),
                    src_values: offset(d.values),
                    dst_values: offset(d.sorted_values),
                    ..Default::default()
                };
                Dispatch {
                    domain: d,
                    params: parameter_buffer(&device, cc.node_id(), bytemuck::bytes_of(&p)),
                    groups: BindGroupCache::default(),
                }
            })
            .collect();
        Ok(compute_fn(move |pass, ec| {
            for Dispatch {
                domain: d,
                params,
                groups,
            } in &mut dispatches
            {
                let mut handles = vec![d.keys.buffer(), d.sorted_keys.buffer()];
                handles.extend(d.sorted_values.map(|v| v.buffer()));
                handles.extend(d.values.map(|v| v.buffer()));
                let bufs = resolve(ec, &handles);
                let group = groups.get_or_create(&bufs, || {
                    let mut res = vec![
                        params.as_entire_buffer_binding(),
                        view_binding(bufs[0], &d.keys, align).0,
                        view_binding(bufs[1], &d.sorted_keys, align).0,
                    ];
                    if let Some(v) = &d.sorted_values {
                        res.push(view_binding(bufs[2], v, align).0);
                    }
                    if let Some(v) = &d.values {
                        res.push(view_binding(bufs[3], v, align).0);
                    }
                    kernel.bind_group(&device, &res)
                });
                kernel.dispatch(pass, group, Grid { x: 1, y: 1 });
            }
        }))
    }))?;
    Ok(())
}
