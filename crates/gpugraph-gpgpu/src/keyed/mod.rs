//! Keyed accumulation: the engine behind group aggregation, grid binning/aggregation and
//! histograms (thin front-ends in `group/`, `grid/`, `histogram/`). Each primitive supplies a
//! WGSL key file defining `row_key`, mapping one input row to a key
//! in `0..key_count` (or none), and this module validates the views, plans the dispatches, and
//! adds the graph nodes:
//!
//! * `{id}/init`: writes identities into the graph-owned accumulator transient
//!   (`{id}/accumulators`: 4 status words + `key_count × stride` words);
//! * `{id}/scale` (deterministic sums only): the same kernel finding each key's largest
//!   |value|, which fixes the unit of its fixed-point sum;
//! * `{id}`: one dispatch per non-empty chunk, workgroup-privatized when the accumulators fit
//!   workgroup memory (then merged with global atomics), global atomics otherwise;
//! * `{id}/finalize`: decodes the accumulators into the caller's result views.
//!
//! Traffic: the input rows are read once (4–12 bytes/row: key input, optional f32 value,
//! optional u32 mask); the accumulators are written once by init, merged into once per
//! workgroup (privatized) or once per row (global), and read once by finalize.

use gpugraph_command::wgpu;
use gpugraph_command::{
    Binding, BufferDescriptor, BufferHandle, CommandGraph, DataView, DispatchNode, Grid,
    VectorFormat, VectorView,
};

use crate::error::AlgorithmError;
use crate::kernel::{
    self, check_same_topology, grid_for, require_output, require_packed, require_packed_live_all,
    row_offset, shader, Access, ShaderSource, ViewCheck, WorkgroupSplit,
};

mod layout;
mod outputs;
mod policy;

pub(crate) use outputs::KeyedOutputs;
pub use outputs::{AggregateOutputs, Summation};
pub use policy::KeyedPolicy;

use layout::{shape, AccumulateParams, FillParams, Layout, Shape, NONE};

/// Most workgroups of the init and finalize passes (they stride over the accumulators).
const MAX_FILL_WORKGROUPS: u64 = 65535;
/// Status words before the per-key accumulators: ignored rows, gate.
pub(crate) const STATUS_WORDS: u32 = 4;

/// Sorted bin edges the key snippet searches through `edge_at(j)`.
#[derive(Clone, Debug)]
pub(crate) enum Edges {
    /// Host-known edges, uploaded into a compile-time buffer.
    Literal(Vec<f32>),
    /// Float32 edges resident on the GPU, read at every encoding.
    Gpu(DataView),
}

impl Edges {
    fn len(&self) -> u64 {
        match self {
            Edges::Literal(e) => e.len() as u64,
            Edges::Gpu(v) => v.len(),
        }
    }
}

/// What a primitive asks of the engine.
pub(crate) struct KeyedSpec {
    pub algorithm: &'static str,
    pub id: String,
    /// Rows that produce keys, and their name in errors ("codes", "positions", ...).
    pub keys: VectorView,
    pub keys_name: &'static str,
    /// Their required format (`uint32`, `float32` or `float32x2`).
    pub key_format: VectorFormat,
    /// Registry file defining `fn row_key(x: KeyIn) -> u32` (NO_KEY or any value ≥ KEYS: no
    /// key), and a name it tests with `#ifdef` (which key function).
    pub key_file: &'static str,
    pub key_define: Option<&'static str>,
    /// `params.key_f0`, `params.key_f1` and `params.key_u` for the snippet.
    pub key_f: [f32; 8],
    pub key_u: [u32; 4],
    pub key_count: u32,
    /// Aligned float32 values, and their name in errors ("values", "weights").
    pub values: Option<VectorView>,
    pub values_name: &'static str,
    pub mask: Option<VectorView>,
    pub edges: Option<Edges>,
    /// Rows are skipped when status word 1 is nonzero (set by a node between init and
    /// accumulate, e.g. GPU edge validation).
    pub gated: bool,
    pub outputs: KeyedOutputs,
}

/// A declared keyed accumulation: validated views, the accumulator transient, per-chunk
/// dispatch plans. Add its nodes in order: init, (anything writing the gate), accumulate,
/// finalize.
pub(crate) struct Keyed {
    spec: KeyedSpec,
    /// The live count bounding the rows of the one-chunk inputs, if any.
    live: Option<DataView>,
    policy: KeyedPolicy,
    layout: Layout,
    shape: Shape,
    acc: BufferHandle,
    words: u64,
    grids: Vec<WorkgroupSplit>,
    workgroups: Vec<u64>,
    init_grid: WorkgroupSplit,
    finalize_grid: WorkgroupSplit,
}

impl Keyed {
    /// Validates `spec` and declares the accumulator transient.
    pub fn declare(
        graph: &mut CommandGraph,
        spec: KeyedSpec,
        policy: KeyedPolicy,
    ) -> Result<Self, AlgorithmError> {
        let (alg, id) = (spec.algorithm, spec.id.as_str());
        let check = ViewCheck::new(alg, id);
        policy.validate().map_err(|e| check.policy(e))?;
        let k = spec.key_count as u64;
        if k == 0 {
            return Err(check.out_of_range("the key count", 0, "at least 1"));
        }
        let (keys_name, values_name) = (spec.keys_name, spec.values_name);
        let mut read = vec![(keys_name, &spec.keys, spec.key_format)];
        if let Some(v) = &spec.values {
            read.push((values_name, v, VectorFormat::Float32));
            check_same_topology(check, keys_name, &spec.keys, values_name, v)?;
        }
        if let Some(m) = &spec.mask {
            read.push(("mask", m, VectorFormat::Uint32));
            check_same_topology(check, keys_name, &spec.keys, "mask", m)?;
        }
        // A live count on any of them bounds the rows of all (the kernel reads
        // min(count, capacity) rows; the grid covers the capacity).
        let live = require_packed_live_all(check, &read)?;
        let o = spec.outputs;
        if o.count.is_none()
            && o.sum.is_none()
            && o.min.is_none()
            && o.max.is_none()
            && o.mean.is_none()
        {
            return Err(check.missing(
                "a per-key output (count, sum, min, max or mean)",
                "a keyed aggregation",
            ));
        }
        if spec.values.is_none() {
            for (name, v) in [
                ("sum", o.sum),
                ("min", o.min),
                ("max", o.max),
                ("mean", o.mean),
            ] {
                if v.is_some() {
                    return Err(check.missing(
                        format!("a {values_name} vector"),
                        format!("the {name} output"),
                    ));
                }
            }
        }
        if let Some(v) = &o.count {
            require_output(check, "count output", v, VectorFormat::Uint32, k)?;
        }
        for (name, v) in [
            ("sum output", o.sum),
            ("min output", o.min),
            ("max output", o.max),
            ("mean output", o.mean),
        ] {
            if let Some(v) = &v {
                require_output(check, name, v, VectorFormat::Float32, k)?;
            }
        }
        if let Some(v) = &o.ignored {
            require_output(check, "ignored output", v, VectorFormat::Uint32, 1)?;
        }
        if let Some(v) = &o.flag {
            require_output(check, "flag output", v, VectorFormat::Uint32, 1)?;
        }
        if let Some(Edges::Gpu(v)) = &spec.edges {
            require_packed(check, "edges", &VectorView::from(*v), VectorFormat::Float32)?;
        }
        // Inputs are read before finalize writes, so outputs may share their buffers; outputs
        // must not overlap each other.
        let written: Vec<(&str, VectorView)> = [
            ("count output", o.count),
            ("sum output", o.sum),
            ("min output", o.min),
            ("max output", o.max),
            ("mean output", o.mean),
            ("ignored output", o.ignored),
            ("flag output", o.flag),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| (n, VectorView::from(v))))
        .collect();
        let args: Vec<kernel::Arg<'_>> = written.iter().map(|(n, v)| (*n, v)).collect();
        kernel::check_writes_alone(graph, check, &args, &[], "")?;

        let limits = graph.device().limits();
        let max_dim = limits.max_compute_workgroups_per_dimension;
        let layout = Layout::of(&o);
        let key_words = k * layout.stride as u64;
        let words = STATUS_WORDS as u64 + key_words;
        let binding_limit = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        if words * 4 > binding_limit {
            return Err(check.device_limit("accumulator bytes", words * 4, binding_limit));
        }
        let edge_count = spec.edges.as_ref().map_or(0, Edges::len);
        let shape = shape(
            &policy,
            key_words,
            edge_count,
            limits.max_compute_workgroup_storage_size,
        );
        let tile = (policy.workgroup_size * policy.rows_per_thread) as u64;
        let grid_cap = max_dim as u64 * max_dim as u64;
        let mut grids = Vec::new();
        let mut workgroups = Vec::new();
        for c in spec.keys.chunks() {
            if c.len() > (u32::MAX as u64 - tile) {
                return Err(check.device_limit(
                    "rows in one chunk",
                    c.len(),
                    u32::MAX as u64 - tile,
                ));
            }
            // Float sums merge by compare-exchange, and every workgroup merges every key at
            // about the same moment, so retries grow with the workgroups in flight.
            let merge_cap = if layout.sum_at != NONE && !layout.fixed_sum() {
                policy.float_merge_workgroups
            } else {
                u64::MAX
            };
            let wgs = c
                .len()
                .div_ceil(tile)
                .min(policy.max_workgroups)
                .min(merge_cap)
                .min(grid_cap);
            let g = grid_for(wgs, max_dim)
                .ok_or_else(|| check.device_limit("workgroups for one chunk", wgs, grid_cap))?;
            grids.push(g);
            workgroups.push(wgs);
        }
        // Init and finalize stride over their words with a bounded grid.
        let per_thread = |n: u64| {
            let wgs = n
                .div_ceil(policy.workgroup_size as u64)
                .min(grid_cap)
                .min(MAX_FILL_WORKGROUPS);
            grid_for(wgs, max_dim).unwrap_or(WorkgroupSplit { x: 1, y: 1 })
        };
        let init_grid = per_thread(words);
        let finalize_grid = per_thread(k);
        let acc = graph.create_buffer(BufferDescriptor::new(
            format!("{id}/accumulators"),
            words * 4,
            wgpu::BufferUsages::STORAGE,
        ))?;
        Ok(Self {
            spec,
            live,
            policy,
            layout,
            shape,
            acc,
            words,
            grids,
            workgroups,
            init_grid,
            finalize_grid,
        })
    }

    /// The accumulator transient (status words, then key-major words).
    pub fn accumulators(&self) -> BufferHandle {
        self.acc
    }

    /// Word index of key 0's count in the accumulators, and the per-key stride.
    pub fn count_words(&self) -> Option<(u32, u32)> {
        (self.layout.count_at != NONE)
            .then_some((STATUS_WORDS + self.layout.count_at, self.layout.stride))
    }

    /// `file` with the generated constants; `scale_phase` selects the `{id}/scale` variant of
    /// the accumulate kernel (deterministic sums only).
    fn recipe(&self, file: &'static str, scale_phase: bool) -> ShaderSource {
        let l = self.layout;
        let s = self.shape;
        let key_words = self.spec.key_count * l.stride;
        let o = &self.spec.outputs;
        let key_type = match self.spec.key_format {
            VectorFormat::Float32 => "f32",
            VectorFormat::Float32x2 => "vec2<f32>",
            _ => "u32",
        };
        let edge_words = match (&self.spec.edges, s.edges_shared) {
            (Some(e), true) => e.len() as u32,
            _ => 1,
        };
        // The algorithm name but no instance id: equal shapes share one pipeline per device.
        shader(file)
            .comment(format!(
                "Generated by gpugraph-gpgpu keyed/mod.rs for {}.",
                self.spec.algorithm
            ))
            .alias("KeyIn", key_type)
            .u32("WG", self.policy.workgroup_size)
            .u32("ROWS_PER_THREAD", self.policy.rows_per_thread)
            .u32("KEYS", self.spec.key_count)
            .u32("STRIDE", l.stride)
            .u32("STATUS_WORDS", STATUS_WORDS)
            .u32("COUNT_AT", l.count_at)
            .u32("SUM_AT", l.sum_at)
            .u32("MIN_AT", l.min_at)
            .u32("MAX_AT", l.max_at)
            .u32("SCALE_AT", l.scale_at)
            .bool("FIXED_SUM", l.fixed_sum())
            .bool("SCALE_PHASE", scale_phase)
            .bool("PRIVATE", s.private)
            .u32("COPIES", s.copies)
            .u32(
                "PRIV_WORDS",
                if s.private { key_words * s.copies } else { 1 },
            )
            .bool("EDGES_SHARED", s.edges_shared)
            .u32("SHARED_EDGES", edge_words)
            .bool("HAS_VALUES", self.spec.values.is_some())
            .bool("HAS_MASK", self.spec.mask.is_some())
            .bool("HAS_GATE", self.spec.gated)
            .bool("HAS_COUNT", o.count.is_some())
            .bool("HAS_SUM", o.sum.is_some())
            .bool("HAS_MIN", o.min.is_some())
            .bool("HAS_MAX", o.max.is_some())
            .bool("HAS_MEAN", o.mean.is_some())
            .bool("HAS_IGNORED", o.ignored.is_some())
            .bool("HAS_FLAG", o.flag.is_some())
    }

    /// The WGSL of the accumulate kernel (or of its `{id}/scale` variant).
    #[cfg(test)]
    pub fn accumulate_source(&self, scale_phase: bool) -> String {
        self.accumulate_recipe(scale_phase).build()
    }

    fn accumulate_recipe(&self, scale_phase: bool) -> ShaderSource {
        let mut recipe = self
            .recipe("keyed/keyed.wgsl", scale_phase)
            .file(self.spec.key_file)
            .define_if(self.live.is_some(), "LIVE");
        if let Some(name) = self.spec.key_define {
            recipe = recipe.define(name);
        }
        recipe
    }

    /// The WGSL of the init and finalize kernels.
    #[cfg(test)]
    pub fn finalize_source(&self) -> String {
        self.recipe("keyed/keyed_finalize.wgsl", false).build()
    }

    /// The device's storage alignment: every binding is a view's aligned range at it, and the
    /// row offsets the kernels add are counted from it.
    fn alignment(graph: &CommandGraph) -> u64 {
        u64::from(graph.device().limits().min_storage_buffer_offset_alignment)
    }

    /// Adds `{id}/init`: accumulators to identities (must precede every other node).
    pub fn add_init(&self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let params = FillParams {
            words: self.words as u32,
            ..Default::default()
        };
        kernel::add_node(
            graph,
            DispatchNode::new(
                format!("{}/init", self.spec.id),
                self.recipe("keyed/keyed_finalize.wgsl", false),
                "init",
                vec![
                    Binding::params(0, &params),
                    Binding::handle(1, self.acc, Access::ReadWrite),
                ],
                Grid::Workgroups(self.init_grid.dims()),
            ),
        )
    }

    /// Adds `{id}`: one accumulate dispatch node per non-empty chunk (`{id}/chunk{k}` when
    /// several chunks dispatch), preceded by `{id}/scale` (likewise) when sums are
    /// deterministic.
    pub fn add_accumulate(&self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        if self.layout.fixed_sum() {
            self.add_accumulate_pass(graph, format!("{}/scale", self.spec.id), true)?;
        }
        self.add_accumulate_pass(graph, self.spec.id.clone(), false)
    }

    fn add_accumulate_pass(
        &self,
        graph: &mut CommandGraph,
        node_id: String,
        scale_phase: bool,
    ) -> Result<(), AlgorithmError> {
        let spec = &self.spec;
        let align = Self::alignment(graph);
        let source = self.accumulate_recipe(scale_phase);
        let (edges_off, edge_count) = match &spec.edges {
            Some(Edges::Literal(e)) => (0, e.len() as u32),
            Some(Edges::Gpu(v)) => (row_offset(v, align), v.len() as u32),
            None => (0, 0),
        };
        // Literal edges live in a node-owned buffer; absent edges are never read.
        let edges = match &spec.edges {
            Some(Edges::Gpu(v)) => Binding::read(4, *v),
            Some(Edges::Literal(e)) => {
                Binding::storage_params(4, bytemuck::cast_slice::<f32, u32>(e))
            }
            None => Binding::placeholder(4, Access::Read),
        };
        let off = |v: &Option<VectorView>, ci: usize| {
            v.as_ref().map_or(0, |v| row_offset(&v.chunks()[ci], align))
        };
        let optional = |slot: u32, v: &Option<VectorView>, ci: usize| {
            v.as_ref()
                .map_or(Binding::placeholder(slot, Access::Read), |v| {
                    Binding::read(slot, v.chunks()[ci])
                })
        };
        let tile = u64::from(self.policy.workgroup_size * self.policy.rows_per_thread);
        let (key_f, key_u) = (spec.key_f, spec.key_u);
        let dispatched = self.grids.iter().filter(|g| !g.is_empty()).count();
        for (ci, c) in spec.keys.chunks().iter().enumerate() {
            let grid = self.grids[ci];
            if grid.is_empty() {
                continue;
            }
            let params = AccumulateParams {
                rows: c.len() as u32,
                key_off: row_offset(c, align),
                value_off: off(&spec.values, ci),
                mask_off: off(&spec.mask, ci),
                tiles: c.len().div_ceil(tile) as u32,
                workgroups: self.workgroups[ci] as u32,
                edges_off,
                edge_count,
                key_f0: [key_f[0], key_f[1], key_f[2], key_f[3]],
                key_f1: [key_f[4], key_f[5], key_f[6], key_f[7]],
                key_u,
                live_off: self.live.map_or(0, |l| row_offset(&l, align)),
                _pad: [0; 3],
            };
            let mut bindings = vec![
                Binding::params(0, &params),
                Binding::read(1, *c),
                optional(2, &spec.values, ci),
                optional(3, &spec.mask, ci),
                edges.clone(),
                Binding::handle(5, self.acc, Access::ReadWrite),
            ];
            // Binding 6: the live count (only the LIVE variant declares it).
            bindings.extend(self.live.map(|l| Binding::read(6, l)));
            let id = if dispatched == 1 {
                node_id.clone()
            } else {
                format!("{node_id}/chunk{ci}")
            };
            kernel::add_node(
                graph,
                DispatchNode::new(
                    id,
                    source.clone(),
                    "accumulate",
                    bindings,
                    Grid::Workgroups(grid.dims()),
                ),
            )?;
        }
        Ok(())
    }

    /// Adds `{id}/finalize`: accumulators → the caller's result views.
    pub fn add_finalize(&self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let align = Self::alignment(graph);
        let o = self.spec.outputs;
        let outs = [o.count, o.sum, o.min, o.max, o.mean, o.ignored, o.flag];
        let off = |v: Option<DataView>| v.map_or(0, |v| row_offset(&v, align));
        let params = FillParams {
            keys: self.spec.key_count,
            words: 0,
            count_off: off(o.count),
            sum_off: off(o.sum),
            min_off: off(o.min),
            max_off: off(o.max),
            mean_off: off(o.mean),
            ignored_off: off(o.ignored),
            flag_off: off(o.flag),
            nan_bits: 0x7fc0_0000,
        };
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::handle(1, self.acc, Access::ReadWrite),
        ];
        // Outputs the caller did not ask for are never written.
        for (slot, v) in (2u32..).zip(outs) {
            bindings.push(
                v.map_or(Binding::placeholder(slot, Access::ReadWrite), |v| {
                    Binding::read_write(slot, v)
                }),
            );
        }
        kernel::add_node(
            graph,
            DispatchNode::new(
                format!("{}/finalize", self.spec.id),
                self.recipe("keyed/keyed_finalize.wgsl", false),
                "finalize",
                bindings,
                Grid::Workgroups(self.finalize_grid.dims()),
            ),
        )
    }

    /// Adds init, accumulate and finalize (for primitives with nothing in between).
    pub fn add_all(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_init(graph)?;
        self.add_accumulate(graph)?;
        self.add_finalize(graph)
    }
}

#[cfg(test)]
mod tests;
