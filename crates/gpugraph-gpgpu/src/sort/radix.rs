//! The radix path for one domain of more than [`LOCAL_SORT_MAX`] rows: graph-owned scratch
//! and `1 + passes` compute nodes (`<id>.histogram`, `<id>.pass0` .. `<id>.pass{passes-1}`,
//! `passes` = `ceil(key_bits / 8)`).
//!
//! Passes ping-pong between the caller's outputs and one scratch copy, so the input is read
//! by the histogram and the first pass only, and the first pass writes scratch for an even
//! pass count, the output for an odd one, so the last pass always writes the output
//! (four passes: input → scratch → output → scratch → output).

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{
    Binding, BufferDescriptor, BufferHandle, CommandGraph, DataView, DataViewDescriptor,
    DispatchNode, Grid, VectorFormat,
};

use super::kernels::vec4_view;
use super::keys::KeyParams;
use super::plan::RadixPlan;
#[cfg(doc)]
use super::policy::LOCAL_SORT_MAX;
use super::policy::{SortPolicy, PASSES, RADIX_BITS};
use super::source::{self, ValueMode};
use super::Domain;
use crate::error::AlgorithmError;
use crate::kernel::{grid_for, Access, ViewCheck, WorkgroupSplit};

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
    tile_base: u32,
    tile_end: u32,
    split: u32,
    dst_keys_hi: u32,
    dst_values_hi: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
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

/// How a radix domain's rows are bound. Up to one storage binding, all tiles at once; larger
/// (2^29 uint32 keys are 2 GiB, and wgpu caps a binding below 2^31 bytes), in windows of
/// whole tiles: the histogram and every pass dispatch once per window, binding only its
/// rows of the inputs (tile tickets and the look-back run on across windows through the
/// shared status words), and each pass binds its output as two windows, storing every row
/// through the one that holds it (`SPLIT_DST`). So at most two windows: domains up to twice
/// the binding size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyWindows {
    /// Tiles of every window but the last.
    pub tiles_per_window: u32,
    /// Windows: 1 or 2.
    pub count: u32,
}

impl KeyWindows {
    /// The windows of `plan`'s domain whose views bind `bytes` at most (lead included) under
    /// a `max_binding`-byte limit with offsets aligned to `align`; `None` when two windows do
    /// not cover it.
    pub(crate) fn plan(plan: &RadixPlan, bytes: u64, max_binding: u64, align: u64) -> Option<Self> {
        if bytes <= max_binding {
            return Some(Self {
                tiles_per_window: plan.tiles,
                count: 1,
            });
        }
        let tile_bytes = u64::from(plan.tile_rows) * 4;
        let per =
            (max_binding.saturating_sub(align.max(4)) / tile_bytes).min(u64::from(plan.tiles));
        if per == 0 {
            return None;
        }
        let count = u64::from(plan.tiles).div_ceil(per);
        (count <= 2).then_some(Self {
            tiles_per_window: per as u32,
            count: count as u32,
        })
    }

    /// Tiles `[first, end)` of window `w`.
    fn tiles(&self, plan: &RadixPlan, w: u32) -> (u32, u32) {
        let first = w * self.tiles_per_window;
        (first, (first + self.tiles_per_window).min(plan.tiles))
    }

    /// The first output row of the second window (`u32::MAX` with one window).
    fn split(&self, plan: &RadixPlan) -> u32 {
        if self.count == 1 {
            u32::MAX
        } else {
            self.tiles_per_window * plan.tile_rows
        }
    }
}

/// Rows `[first, end)` of the packed uint32 `view` as a view of their own.
fn rows_of(
    graph: &mut CommandGraph,
    view: DataView,
    first: u32,
    end: u32,
) -> Result<DataView, AlgorithmError> {
    Ok(graph.create_data_view(
        view.buffer(),
        DataViewDescriptor::packed(VectorFormat::Uint32, u64::from(end - first))
            .at_offset(view.byte_offset() + u64::from(first) * 4),
    )?)
}

/// A view's element offset in its binding, relative to domain row `first` (wrapping: the
/// kernel adds the domain row).
fn offset_from(view: &DataView, align: u64, first: u32) -> u32 {
    (view.aligned_range(align).element_offset as u32).wrapping_sub(first)
}

/// The input views and tiles of one window's dispatch.
#[derive(Clone, Copy)]
struct WindowInputs {
    keys: DataView,
    values: Option<DataView>,
    tiles: (u32, u32),
    /// The window's first domain row.
    first_row: u32,
}

/// The windows' inputs over `keys` (and `values`).
fn window_inputs(
    graph: &mut CommandGraph,
    plan: &RadixPlan,
    windows: &KeyWindows,
    keys: DataView,
    values: Option<DataView>,
) -> Result<Vec<WindowInputs>, AlgorithmError> {
    (0..windows.count)
        .map(|w| {
            let tiles = windows.tiles(plan, w);
            let (first, end) = (
                tiles.0 * plan.tile_rows,
                (tiles.1 * plan.tile_rows).min(plan.rows),
            );
            if windows.count == 1 {
                return Ok(WindowInputs {
                    keys,
                    values,
                    tiles,
                    first_row: 0,
                });
            }
            Ok(WindowInputs {
                keys: rows_of(graph, keys, first, end)?,
                values: values.map(|v| rows_of(graph, v, first, end)).transpose()?,
                tiles,
                first_row: first,
            })
        })
        .collect()
}

/// `view` (packed uint32) in consecutive pieces that each fit one storage binding: itself
/// when it fits (the elementwise key transforms bind a domain larger than a binding this way).
pub(crate) fn binding_pieces(
    graph: &mut CommandGraph,
    view: DataView,
) -> Result<Vec<DataView>, AlgorithmError> {
    let limits = graph.device().limits();
    let align = u64::from(limits.min_storage_buffer_offset_alignment).max(4);
    let max = limits.max_storage_buffer_binding_size;
    if view.aligned_range(align).size <= max {
        return Ok(vec![view]);
    }
    let piece = ((max - align) / 4 / 64 * 64).max(64) as u32;
    let rows = view.len() as u32;
    (0..rows.div_ceil(piece))
        .map(|i| rows_of(graph, view, i * piece, ((i + 1) * piece).min(rows)))
        .collect()
}

/// An output bound as one view, or as two windows split at `KeyWindows::split`.
#[derive(Clone, Copy)]
struct SplitOutput {
    lo: DataView,
    hi: Option<DataView>,
}

fn split_output(
    graph: &mut CommandGraph,
    plan: &RadixPlan,
    windows: &KeyWindows,
    view: DataView,
) -> Result<SplitOutput, AlgorithmError> {
    if windows.count == 1 {
        return Ok(SplitOutput { lo: view, hi: None });
    }
    let split = windows.split(plan);
    Ok(SplitOutput {
        lo: rows_of(graph, view, 0, split)?,
        hi: Some(rows_of(graph, view, split, plan.rows)?),
    })
}

/// Where one pass reads and writes: one or two input windows, an output in one or two.
#[derive(Clone)]
struct PassViews {
    inputs: Vec<WindowInputs>,
    dst_keys: SplitOutput,
    dst_values: Option<SplitOutput>,
    mode: ValueMode,
}

/// Workgroup grids of a domain, checked against the device's dispatch limit.
pub(crate) fn grids(
    graph: &CommandGraph,
    id: &str,
    algorithm: &'static str,
    plan: &RadixPlan,
) -> Result<(WorkgroupSplit, WorkgroupSplit), AlgorithmError> {
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
    let windows = key_windows(graph, id, algorithm, &plan, domain)?;
    if windows.count > 1 && policy.reverse_tiles {
        return Err(ViewCheck::new(algorithm, id).unsupported(
            "sort policy",
            "reverse_tiles off for a domain larger than one storage binding (its key windows run in tile order)",
            "reverse_tiles on",
        ));
    }
    let inputs = window_inputs(graph, &plan, &windows, domain.keys, None)?;
    add_histogram_node(
        graph,
        format!("{id}.histogram"),
        inputs,
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
        let load = if mode == ValueMode::Load {
            src_values
        } else {
            None
        };
        let views = PassViews {
            inputs: window_inputs(graph, &plan, &windows, src_keys, load)?,
            dst_keys: split_output(graph, &plan, &windows, dst_keys)?,
            dst_values: dst_values
                .map(|v| split_output(graph, &plan, &windows, v))
                .transpose()?,
            mode,
        };
        add_pass_node(
            graph,
            format!("{id}.pass{pass}"),
            pass,
            views,
            scratch.status,
            (plan, windows.split(&plan)),
            policy,
            pass_grid,
            code.map(|c| (c, pass == 0, pass == passes - 1)),
        )?;
    }
    Ok(())
}

/// The key windows of `domain` (see [`KeyWindows`]), or the device-limit error naming the
/// largest binding and the limit.
fn key_windows(
    graph: &CommandGraph,
    id: &str,
    algorithm: &'static str,
    plan: &RadixPlan,
    domain: &Domain,
) -> Result<KeyWindows, AlgorithmError> {
    let limits = graph.device().limits();
    let align = u64::from(limits.min_storage_buffer_offset_alignment);
    let views = [domain.keys, domain.sorted_keys]
        .into_iter()
        .chain(domain.values)
        .chain(domain.sorted_values);
    let bytes = views
        .map(|v| v.aligned_range(align).size)
        .max()
        .unwrap_or(0);
    let max = limits.max_storage_buffer_binding_size;
    KeyWindows::plan(plan, bytes, max, align).ok_or_else(|| {
        ViewCheck::new(algorithm, id).device_limit(
            "storage binding bytes of one sort domain (at most two key windows of whole tiles)",
            bytes,
            2 * (max - align.max(4)) / (u64::from(plan.tile_rows) * 4)
                * (u64::from(plan.tile_rows) * 4),
        )
    })
}

/// The grid of one window's dispatch: `tiles` tiles at `per_group` tiles per workgroup (the
/// checked whole-domain `grid` when there is one window; a window has fewer workgroups than
/// the whole domain, so its grid fits too).
fn window_grid(
    whole: WorkgroupSplit,
    windows: usize,
    tiles: u32,
    per_group: u32,
    max_dim: u32,
) -> WorkgroupSplit {
    if windows == 1 {
        return whole;
    }
    grid_for(u64::from(tiles.div_ceil(per_group)), max_dim).unwrap_or(whole)
}

/// `node_id`: clears the histograms, counts every window's digits and scans the counts
/// (one node per key window, `{node_id}/window{k}` when there are several; the clear runs
/// with the first window, the scan with the last).
#[allow(clippy::too_many_arguments)]
fn add_histogram_node(
    graph: &mut CommandGraph,
    node_id: String,
    inputs: Vec<WindowInputs>,
    status: BufferHandle,
    plan: RadixPlan,
    policy: SortPolicy,
    grid: WorkgroupSplit,
    code: Option<KeyParams>,
) -> Result<(), AlgorithmError> {
    let limits = graph.device().limits();
    let align = u64::from(limits.min_storage_buffer_offset_alignment);
    let max_dim = limits.max_compute_workgroups_per_dimension;
    let shader = source::radix_histogram(&policy, code.is_some())
        .keyed(format!("sort.histogram.{policy:?}.code{}", code.is_some()));
    let per_group = policy.histogram_tiles_per_workgroup;
    let windows = inputs.len();
    for (i, w) in inputs.iter().enumerate() {
        let params = RadixParams {
            rows: plan.rows,
            tiles: plan.tiles,
            histogram_word: RadixPlan::histogram_word(0),
            status_word: plan.status_word(0) as u32,
            src_keys: offset_from(&w.keys, align, w.first_row),
            tiles_per_group: per_group,
            tile_base: w.tiles.0,
            tile_end: w.tiles.1,
            ..Default::default()
        }
        .with_code(code, true, false);
        let count = Grid::Workgroups(
            window_grid(grid, windows, w.tiles.1 - w.tiles.0, per_group, max_dim).dims(),
        );
        let bindings = vec![
            Binding::params(0, &params),
            Binding::read(1, w.keys),
            Binding::read(2, vec4_view(graph, &w.keys, align)?),
            Binding::handle(3, status, Access::ReadWrite),
        ];
        let id = if windows == 1 {
            node_id.clone()
        } else {
            format!("{node_id}/window{i}")
        };
        let one = Grid::Workgroups([1, 1, 1]);
        let mut node = if i == 0 {
            DispatchNode::new(id, shader.clone(), "clear_histograms", bindings, one)
                .then("count_digits", count)
        } else {
            DispatchNode::new(id, shader.clone(), "count_digits", bindings, count)
        };
        if i + 1 == windows {
            node = node.then("scan_histograms", one);
        }
        crate::kernel::add_node(graph, node)?;
    }
    Ok(())
}

/// `node_id`: one radix pass, one dispatch node per key window (`{node_id}/window{k}` when
/// there are several).
#[allow(clippy::too_many_arguments)]
fn add_pass_node(
    graph: &mut CommandGraph,
    node_id: String,
    pass_index: u32,
    v: PassViews,
    status: BufferHandle,
    (plan, split): (RadixPlan, u32),
    policy: SortPolicy,
    grid: WorkgroupSplit,
    code: Option<(KeyParams, bool, bool)>,
) -> Result<(), AlgorithmError> {
    let limits = graph.device().limits();
    let align = u64::from(limits.min_storage_buffer_offset_alignment);
    let max_dim = limits.max_compute_workgroups_per_dimension;
    let subgroups = graph
        .device()
        .features()
        .contains(gpugraph_command::wgpu::Features::SUBGROUP);
    let split_dst = v.dst_keys.hi.is_some();
    let write_values = matches!(v.mode, ValueMode::Load | ValueMode::SourceRows);
    let shader = source::radix_pass_with(&policy, v.mode, subgroups, code.is_some(), split_dst)
        .keyed(format!(
            "sort.radix_pass.{:?}.{policy:?}.{subgroups}.code{}.split{split_dst}",
            v.mode,
            code.is_some()
        ));
    let lo_offset =
        |view: Option<DataView>| view.map_or(0, |x| x.aligned_range(align).element_offset as u32);
    let hi_offset = |out: Option<SplitOutput>| {
        out.and_then(|o| o.hi)
            .map_or(0, |h| offset_from(&h, align, split))
    };
    let windows = v.inputs.len();
    for (i, w) in v.inputs.iter().enumerate() {
        let params = RadixParams {
            rows: plan.rows,
            tiles: plan.tiles,
            shift: pass_index * RADIX_BITS,
            ticket_word: RadixPlan::ticket_word(pass_index),
            histogram_word: RadixPlan::histogram_word(pass_index),
            status_word: plan.status_word(pass_index) as u32,
            src_keys: offset_from(&w.keys, align, w.first_row),
            dst_keys: lo_offset(Some(v.dst_keys.lo)),
            src_values: w.values.map_or(0, |x| offset_from(&x, align, w.first_row)),
            dst_values: lo_offset(v.dst_values.map(|d| d.lo)),
            tile_base: w.tiles.0,
            tile_end: w.tiles.1,
            split,
            dst_keys_hi: hi_offset(Some(v.dst_keys)),
            dst_values_hi: hi_offset(v.dst_values),
            ..Default::default()
        };
        let params = match code {
            Some((c, encode, decode)) => params.with_code(Some(c), encode, decode),
            None => params,
        };
        // Binding numbers: params 0, src keys 1 (words) and 2 (vec4), status 3, dst keys 4,
        // dst values 5, src values 6 and 7, the second output window's keys 8 and values 9.
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::read(1, w.keys),
            Binding::read(2, vec4_view(graph, &w.keys, align)?),
            Binding::handle(3, status, Access::ReadWrite),
            Binding::read_write(4, v.dst_keys.lo),
        ];
        if let (true, Some(dst)) = (write_values, v.dst_values) {
            bindings.push(Binding::read_write(5, dst.lo));
            bindings.extend(dst.hi.map(|hi| Binding::read_write(9, hi)));
        }
        if let (ValueMode::Load, Some(src)) = (v.mode, w.values) {
            bindings.push(Binding::read(6, src));
            bindings.push(Binding::read(7, vec4_view(graph, &src, align)?));
        }
        bindings.extend(v.dst_keys.hi.map(|hi| Binding::read_write(8, hi)));
        let count = window_grid(grid, windows, w.tiles.1 - w.tiles.0, 1, max_dim);
        let id = if windows == 1 {
            node_id.clone()
        } else {
            format!("{node_id}/window{i}")
        };
        crate::kernel::add_node(
            graph,
            DispatchNode::new(
                id,
                shader.clone(),
                "radix_pass",
                bindings,
                Grid::Workgroups(count.dims()),
            ),
        )?;
    }
    Ok(())
}
