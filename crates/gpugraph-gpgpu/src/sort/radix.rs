//! The radix path for one domain of more than [`LOCAL_SORT_MAX`] rows: graph-owned scratch
//! and `1 + passes` compute nodes (`<id>.histogram`, `<id>.pass0` .. `<id>.pass{passes-1}`,
//! `passes` = `ceil(key_bits / 8)`).
//!
//! Passes ping-pong between the caller's outputs and one scratch copy, so the input is read
//! by the histogram and the first pass only, and the first pass writes scratch for an even
//! pass count, the output for an odd one, so the last pass always writes the output
//! (four passes: input → scratch → output → scratch → output).

use gpugraph_command::wgpu::{self, BufferUsages};
use gpugraph_command::{
    compute_fn, view_binding, BindGroupCache, BufferDescriptor, BufferHandle, CommandGraph,
    ComputeNode, DataView, DataViewDescriptor, ResourceUse, VectorFormat,
};

use super::kernels::{self, resolve, vec4_binding};
use super::keys::KeyParams;
use super::plan::RadixPlan;
#[cfg(doc)]
use super::policy::LOCAL_SORT_MAX;
use super::policy::{SortPolicy, PASSES, RADIX_BITS};
use super::source::{self, ValueMode};
use super::Domain;
use crate::error::AlgorithmError;
use crate::kernel::{grid_for, parameter_buffer, Binding, Grid, ViewCheck};

const HISTOGRAM_BINDINGS: [Binding; 4] = [
    Binding::Uniform,
    Binding::StorageRead,
    Binding::StorageRead,
    Binding::StorageReadWrite,
];

/// `RadixParams` of `radix_common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct RadixParams {
    rows: u32,
    tiles: u32,
    shift: u32,
    ticket_word: u32,
    histogram_word: u32,
    status_word: u32,
    src_keys: u32,
    dst_keys: u32,
    src_values: u32,
    dst_values: u32,
    tiles_per_group: u32,
    encode: u32,
    decode: u32,
    code_float: u32,
    code_bias: u32,
    code_flip: u32,
}

impl RadixParams {
    /// These params with the fused key transform `code` (if any): `encode` on load, `decode`
    /// on store.
    fn with_code(self, code: Option<KeyParams>, encode: bool, decode: bool) -> Self {
        match code {
            None => self,
            Some(c) => Self {
                encode: encode as u32,
                decode: decode as u32,
                code_float: c.is_float,
                code_bias: c.bias,
                code_flip: c.flip,
                ..self
            },
        }
    }
}

/// Graph-owned scratch of radix domains up to `rows` keys: one ping-pong copy of keys (and
/// values) and the tickets/histograms/status words. Chunks sorted one after another may share
/// it (the graph orders them through its hazards).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RadixScratch {
    keys: BufferHandle,
    values: Option<BufferHandle>,
    status: BufferHandle,
}

impl RadixScratch {
    /// Declares the transients `<id>.scratch-keys`, `<id>.scratch-values` (with values) and
    /// `<id>.status`.
    pub(crate) fn create(
        graph: &mut CommandGraph,
        id: &str,
        rows: u32,
        values: bool,
        policy: &SortPolicy,
    ) -> Result<Self, AlgorithmError> {
        let plan = RadixPlan::new(rows, policy);
        let bytes = rows as u64 * 4;
        let keys = graph.create_buffer(BufferDescriptor::new(
            format!("{id}.scratch-keys"),
            bytes,
            BufferUsages::STORAGE,
        ))?;
        let values = if values {
            Some(graph.create_buffer(BufferDescriptor::new(
                format!("{id}.scratch-values"),
                bytes,
                BufferUsages::STORAGE,
            ))?)
        } else {
            None
        };
        let status = graph.create_buffer(BufferDescriptor::new(
            format!("{id}.status"),
            plan.scratch_words() * 4,
            BufferUsages::STORAGE,
        ))?;
        Ok(Self {
            keys,
            values,
            status,
        })
    }

    /// Bytes of the status buffer for `rows` keys (checked against the binding size before
    /// declaring it).
    pub(crate) fn status_bytes(rows: u32, policy: &SortPolicy) -> u64 {
        RadixPlan::new(rows, policy).scratch_words() * 4
    }
}

/// Where one pass reads and writes.
#[derive(Clone, Copy)]
struct PassViews {
    src_keys: DataView,
    dst_keys: DataView,
    src_values: Option<DataView>,
    dst_values: Option<DataView>,
    mode: ValueMode,
}

/// Workgroup grids of a domain, checked against the device's dispatch limit.
pub(crate) fn grids(
    graph: &CommandGraph,
    id: &str,
    algorithm: &'static str,
    plan: &RadixPlan,
) -> Result<(Grid, Grid), AlgorithmError> {
    let max_dim = graph.device().limits().max_compute_workgroups_per_dimension;
    let grid = |n: u32| {
        grid_for(n as u64, max_dim).ok_or_else(|| {
            ViewCheck::new(algorithm, id).device_limit(
                "workgroups of one radix dispatch",
                n as u64,
                max_dim as u64 * max_dim as u64,
            )
        })
    };
    Ok((grid(plan.histogram_workgroups)?, grid(plan.tiles)?))
}

/// Adds the nodes sorting `domain` (more than `LOCAL_SORT_MAX` rows) through `scratch`: the
/// histogram and `passes` (1..=`PASSES`) digit passes, lowest digit first. Passes alternate
/// between the output and scratch so that the last one writes the output. With `code`, the
/// domain's keys are the caller's key bits: the histogram and the first pass encode them as
/// they load them, the last pass decodes its output (one pass: both).
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_radix_nodes(
    graph: &mut CommandGraph,
    id: &str,
    algorithm: &'static str,
    domain: &Domain,
    scratch: &RadixScratch,
    policy: SortPolicy,
    passes: u32,
    code: Option<KeyParams>,
) -> Result<(), AlgorithmError> {
    debug_assert!((1..=PASSES).contains(&passes));
    let rows = domain.keys.len() as u32;
    let plan = RadixPlan::new(rows, &policy);
    let (histogram_grid, pass_grid) = grids(graph, id, algorithm, &plan)?;
    let view = |h: BufferHandle| {
        graph.create_data_view(
            h,
            DataViewDescriptor::packed(VectorFormat::Uint32, rows as u64),
        )
    };
    let tmp_keys = view(scratch.keys)?;
    let tmp_values = scratch.values.map(view).transpose()?;

    add_histogram_node(
        graph,
        format!("{id}.histogram"),
        domain.keys,
        scratch.status,
        plan,
        policy,
        histogram_grid,
        code,
    )?;
    for pass in 0..passes {
        let to_scratch = (passes - 1 - pass) % 2 == 1;
        let (src_keys, dst_keys) = match (pass, to_scratch) {
            (0, true) => (domain.keys, tmp_keys),
            (0, false) => (domain.keys, domain.sorted_keys),
            (_, true) => (domain.sorted_keys, tmp_keys),
            (_, false) => (tmp_keys, domain.sorted_keys),
        };
        let (src_values, dst_values, mode) = match domain.mode {
            ValueMode::None => (None, None, ValueMode::None),
            ValueMode::Load | ValueMode::SourceRows => {
                let out = domain.sorted_values;
                let src = match (pass, to_scratch) {
                    (0, _) => domain.values,
                    (_, true) => out,
                    (_, false) => tmp_values,
                };
                let dst = if to_scratch { tmp_values } else { out };
                let mode = if pass == 0 {
                    domain.mode
                } else {
                    ValueMode::Load
                };
                (src, dst, mode)
            }
        };
        add_pass_node(
            graph,
            format!("{id}.pass{pass}"),
            pass,
            PassViews {
                src_keys,
                dst_keys,
                src_values,
                dst_values,
                mode,
            },
            scratch.status,
            plan,
            policy,
            pass_grid,
            code.map(|c| (c, pass == 0, pass == passes - 1)),
        )?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn add_histogram_node(
    graph: &mut CommandGraph,
    node_id: String,
    keys: DataView,
    status: BufferHandle,
    plan: RadixPlan,
    policy: SortPolicy,
    grid: Grid,
    code: Option<KeyParams>,
) -> Result<(), AlgorithmError> {
    let uses = vec![
        ResourceUse::storage_read(keys),
        ResourceUse::storage_read_write(status),
    ];
    graph.add_compute_node(ComputeNode::new(node_id, uses, move |cc| {
        let device = cc.device().clone();
        let align = cc.limits().min_storage_buffer_offset_alignment as u64;
        let kernel = |entry: &str| {
            kernels::get(
                &device,
                &format!("sort.{entry}.{policy:?}.code{}", code.is_some()),
                &source::radix_histogram(&policy, code.is_some()),
                entry,
                &HISTOGRAM_BINDINGS,
            )
        };
        let clear = kernel("clear_histograms");
        let count = kernel("count_digits");
        let scan = kernel("scan_histograms");
        let params = RadixParams {
            rows: plan.rows,
            tiles: plan.tiles,
            histogram_word: RadixPlan::histogram_word(0),
            status_word: plan.status_word(0) as u32,
            src_keys: keys.aligned_range(align).element_offset as u32,
            tiles_per_group: policy.histogram_tiles_per_workgroup,
            ..Default::default()
        }
        .with_code(code, true, false);
        let params = parameter_buffer(&device, cc.node_id(), bytemuck::bytes_of(&params));
        let mut groups = BindGroupCache::default();
        Ok(compute_fn(move |pass, ec| {
            let bufs = resolve(ec, &[keys.buffer(), status]);
            let group = groups.get_or_create(&bufs, || {
                let (k, _) = view_binding(bufs[0], &keys, align);
                let k4 = vec4_binding(&k);
                clear.bind_group(
                    &device,
                    &[params.as_entire_buffer_binding(), k, k4, ec.binding(status)],
                )
            });
            let one = Grid { x: 1, y: 1 };
            clear.dispatch(pass, group, one);
            count.dispatch(pass, group, grid);
            scan.dispatch(pass, group, one);
        }))
    }))?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn add_pass_node(
    graph: &mut CommandGraph,
    node_id: String,
    pass_index: u32,
    v: PassViews,
    status: BufferHandle,
    plan: RadixPlan,
    policy: SortPolicy,
    grid: Grid,
    code: Option<(KeyParams, bool, bool)>,
) -> Result<(), AlgorithmError> {
    let mut uses = vec![
        ResourceUse::storage_read(v.src_keys),
        ResourceUse::storage_write(v.dst_keys),
        ResourceUse::storage_read_write(status),
    ];
    uses.extend(v.dst_values.map(ResourceUse::storage_write));
    uses.extend(v.src_values.map(ResourceUse::storage_read));
    // Buffers in binding order after params: src keys (twice), status, dst keys, then values.
    let mut handles = vec![v.src_keys.buffer(), status, v.dst_keys.buffer()];
    let mut bindings = vec![
        Binding::Uniform,
        Binding::StorageRead,
        Binding::StorageRead,
        Binding::StorageReadWrite,
        Binding::StorageReadWrite,
    ];
    if let (ValueMode::Load | ValueMode::SourceRows, Some(dst)) = (v.mode, v.dst_values) {
        handles.push(dst.buffer());
        bindings.push(Binding::StorageReadWrite);
    }
    if let (ValueMode::Load, Some(src)) = (v.mode, v.src_values) {
        handles.push(src.buffer());
        bindings.extend([Binding::StorageRead, Binding::StorageRead]);
    }
    graph.add_compute_node(ComputeNode::new(node_id, uses, move |cc| {
        let device = cc.device().clone();
        let align = cc.limits().min_storage_buffer_offset_alignment as u64;
        let subgroups = device
            .features()
            .contains(gpugraph_command::wgpu::Features::SUBGROUP);
        let kernel = kernels::get(
            &device,
            &format!(
                "sort.radix_pass.{:?}.{policy:?}.{subgroups}.code{}",
                v.mode,
                code.is_some()
            ),
            &source::radix_pass(&policy, v.mode, subgroups, code.is_some()),
            "radix_pass",
            &bindings,
        );
        let offset = |view: Option<DataView>| {
            view.map_or(0, |x| x.aligned_range(align).element_offset as u32)
        };
        let params = RadixParams {
            rows: plan.rows,
            tiles: plan.tiles,
            shift: pass_index * RADIX_BITS,
            ticket_word: RadixPlan::ticket_word(pass_index),
            histogram_word: RadixPlan::histogram_word(pass_index),
            status_word: plan.status_word(pass_index) as u32,
            src_keys: offset(Some(v.src_keys)),
            dst_keys: offset(Some(v.dst_keys)),
            src_values: offset(v.src_values),
            dst_values: offset(v.dst_values),
            ..Default::default()
        };
        let params = match code {
            Some((c, encode, decode)) => params.with_code(Some(c), encode, decode),
            None => params,
        };
        let params = parameter_buffer(&device, cc.node_id(), bytemuck::bytes_of(&params));
        let mut groups = BindGroupCache::default();
        Ok(compute_fn(move |pass, ec| {
            let bufs = resolve(ec, &handles);
            let group = groups.get_or_create(&bufs, || {
                let bind = |i: usize, view: &DataView| view_binding(bufs[i], view, align).0;
                let src = bind(0, &v.src_keys);
                let mut res: Vec<wgpu::BufferBinding<'_>> = vec![
                    params.as_entire_buffer_binding(),
                    src.clone(),
                    vec4_binding(&src),
                    ec.binding(handles[1]),
                    bind(2, &v.dst_keys),
                ];
                let mut next = 3;
                if let (ValueMode::Load | ValueMode::SourceRows, Some(dst)) = (v.mode, v.dst_values)
                {
                    res.push(bind(next, &dst));
                    next += 1;
                }
                if let (ValueMode::Load, Some(src)) = (v.mode, v.src_values) {
                    let b = bind(next, &src);
                    res.push(b.clone());
                    res.push(vec4_binding(&b));
                }
                kernel.bind_group(&device, &res)
            });
            kernel.dispatch(pass, group, grid);
        }))
    }))?;
    Ok(())
}
