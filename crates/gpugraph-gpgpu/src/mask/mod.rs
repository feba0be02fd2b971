//! Composable visibility masks: and, or, xor, difference, not over N source-aligned u32 masks,
//! always written as canonical 0/1. Vectors keep their chunks: chunk k of every input feeds
//! chunk k of the output.

pub mod cpu;

use gpugraph_command::{
    Binding, CommandGraph, DataView, DispatchNode, Grid, VectorFormat, VectorView,
};

use crate::error::AlgorithmError;
use crate::kernel::{
    self, check_same_topology, grid_for, power_of_two_in, require_packed, require_packed_live_all,
    shader, spec_u32, within, PolicyError, PolicySpec, PolicySpecError, ShaderSource, ViewCheck,
};

/// Tunables of the mask kernels (the shaders see them as `const`s of a generated header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MaskPolicy {
    /// Invocations per workgroup of both kernels: a power of two in `32..=1024` (and within
    /// the device's invocation limit).
    pub workgroup_size: u32,
    /// Rows per invocation of the scalar kernel (`mask.wgsl`), in `1..=16`.
    pub rows_per_thread: u32,
    /// vec4 slots per invocation of the vector kernel (`mask_vec4.wgsl`, all loaded before
    /// the first store), in `1..=16`.
    pub vecs_per_thread: u32,
}

impl MaskPolicy {
    /// 256 invocations, 4 rows or 4 vec4 slots each.
    pub const DEFAULT: Self = Self {
        workgroup_size: 256,
        rows_per_thread: 4,
        vecs_per_thread: 4,
    };

    /// Checks the ranges documented on each field.
    pub fn validate(&self) -> Result<(), PolicyError> {
        const P: &str = "mask";
        let two = "a power of two in 32..=1024";
        power_of_two_in(P, "workgroup_size", self.workgroup_size, 32..=1024, two)?;
        within(
            P,
            "rows_per_thread",
            self.rows_per_thread,
            1..=16,
            "in 1..=16",
        )?;
        within(
            P,
            "vecs_per_thread",
            self.vecs_per_thread,
            1..=16,
            "in 1..=16",
        )
    }

    fn rows_per_workgroup(&self) -> u64 {
        u64::from(self.workgroup_size * self.rows_per_thread)
    }

    fn vecs_per_workgroup(&self) -> u64 {
        u64::from(self.workgroup_size * self.vecs_per_thread)
    }
}

crate::kernel::policy_from_str!(MaskPolicy, PolicyError);

impl PolicySpec for MaskPolicy {
    const KEYS: &'static str = "wg, rows, vec4";

    fn set(&mut self, key: &str, value: u64) -> Result<bool, PolicySpecError> {
        match key {
            "wg" => self.workgroup_size = spec_u32(key, value)?,
            "rows" => self.rows_per_thread = spec_u32(key, value)?,
            "vec4" => self.vecs_per_thread = spec_u32(key, value)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Binding of the first input (0: parameters, 1: output, 2: live count).
const FIRST_INPUT: u32 = 3;
/// Binding of the live count.
const LIVE_BINDING: u32 = 2;

/// The fixed part of one dispatch's parameters (`Params` in `combine.wgsl`); the inputs'
/// element offsets follow it (`in_off`, a runtime-sized array).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MaskParams {
    /// Elements (rows, or vec4 slots for the vector kernel) of the dispatch.
    pub count: u32,
    /// Element offset of the output inside its binding.
    pub out_off: u32,
    /// LIVE: the chunk row of element 0's first row.
    pub first_row: u32,
    /// LIVE: offset of the count inside its binding.
    pub live_off: u32,
    /// LIVE: rows of the chunk (the count is clamped to it).
    pub rows: u32,
}

/// A boolean operator over masks (zero = false, nonzero = true).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaskOp {
    /// All inputs nonzero.
    And,
    /// Any input nonzero.
    Or,
    /// An odd number of inputs nonzero.
    Xor,
    /// First input nonzero and no other input nonzero.
    Difference,
    /// The single input is zero.
    Not,
}

impl std::str::FromStr for MaskOp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "and" => MaskOp::And,
            "or" => MaskOp::Or,
            "xor" => MaskOp::Xor,
            "difference" => MaskOp::Difference,
            "not" => MaskOp::Not,
            other => {
                return Err(format!(
                    "unknown mask operation '{other}' (expected and, or, xor, difference, not)"
                ))
            }
        })
    }
}

/// Combines `inputs` into `output` with `op`. Reads every input chunk once, writes every
/// output row exactly once with 0 or 1. Inputs and output must be packed uint32 with equal
/// chunk lengths; the output must not share a buffer with an input.
///
/// Live count: one-chunk inputs may carry a live count (all the same one,
/// [`gpugraph_command::CommandGraph::with_live_count`], e.g. a compaction's count). Output
/// rows at or past `min(count, capacity)` are written 0 (a row that does not exist is not
/// visible, whatever the operator), so the output is fully defined without a readback.
#[derive(Clone, Debug)]
pub struct Mask {
    /// Node id (and label).
    pub id: String,
    /// Source-aligned masks (`Not` takes exactly one; `Difference` at least two).
    pub inputs: Vec<VectorView>,
    /// Destination mask with the inputs' chunk topology.
    pub output: VectorView,
    /// The operator.
    pub op: MaskOp,
}

fn op_define(op: MaskOp) -> &'static str {
    match op {
        MaskOp::And => "OP_AND",
        MaskOp::Or => "OP_OR",
        MaskOp::Xor => "OP_XOR",
        MaskOp::Difference => "OP_DIFFERENCE",
        MaskOp::Not => "OP_NOT",
    }
}

fn recipe(
    file: &'static str,
    policy: &MaskPolicy,
    op: MaskOp,
    n: usize,
    live: bool,
) -> ShaderSource {
    shader(file)
        .comment("Generated by gpugraph-gpgpu mask/mod.rs.")
        .u32("WORKGROUP_SIZE", policy.workgroup_size)
        .u32("ROWS_PER_THREAD", policy.rows_per_thread)
        .u32("VECS_PER_THREAD", policy.vecs_per_thread)
        .u32("INPUTS_END", FIRST_INPUT + n as u32)
        .define(op_define(op))
        .define_if(live, "LIVE")
}

/// The WGSL of the scalar kernel for `op` over `n` inputs (any alignment, one row at a time);
/// `live`: the variant bounded by a live count.
pub fn shader_source(policy: &MaskPolicy, op: MaskOp, n: usize, live: bool) -> String {
    recipe("mask/mask.wgsl", policy, op, n, live).build()
}

/// The WGSL of the vector kernel for `op` over `n` inputs (16-byte aligned views, four rows
/// per `vec4<u32>`, every load before the first store); `live` as in [`shader_source`].
pub fn vec4_shader_source(policy: &MaskPolicy, op: MaskOp, n: usize, live: bool) -> String {
    recipe("mask/mask_vec4.wgsl", policy, op, n, live).build()
}

/// One dispatch of a chunk: which kernel, its parameters and grid.
struct Dispatch {
    vector: bool,
    params: MaskParams,
    in_off: Vec<u32>,
    grid: kernel::WorkgroupSplit,
}

impl Dispatch {
    /// The parameter words: [`MaskParams`] then the input offsets.
    fn words(&self) -> Vec<u32> {
        let mut out: Vec<u32> = bytemuck::cast_slice(bytemuck::bytes_of(&self.params)).to_vec();
        out.extend_from_slice(&self.in_off);
        out
    }
}

/// The dispatches of one chunk of `len` rows whose output and input views start at element
/// offsets `offsets` (output first) within their bindings: the vector kernel over the whole
/// vec4 slots when every offset is a multiple of 4, the scalar kernel over the rest.
fn plan_chunk(
    check: ViewCheck<'_>,
    policy: &MaskPolicy,
    len: u64,
    offsets: &[u32],
    max_dim: u32,
) -> Result<Vec<Dispatch>, AlgorithmError> {
    let grid = |units: u64, per_workgroup: u64| {
        grid_for(units.div_ceil(per_workgroup), max_dim).ok_or_else(|| {
            check.device_limit(
                "workgroups for one chunk",
                units.div_ceil(per_workgroup),
                max_dim as u64 * max_dim as u64,
            )
        })
    };
    let aligned = offsets.iter().all(|o| o % 4 == 0);
    let vecs = if aligned { len / 4 } else { 0 };
    let mut out = Vec::new();
    if vecs > 0 {
        out.push(Dispatch {
            vector: true,
            params: MaskParams {
                count: vecs as u32,
                out_off: offsets[0] / 4,
                first_row: 0,
                live_off: 0,
                rows: len as u32,
            },
            in_off: offsets[1..].iter().map(|o| o / 4).collect(),
            grid: grid(vecs, policy.vecs_per_workgroup())?,
        });
    }
    let rest = len - 4 * vecs;
    if rest > 0 {
        let skip = 4 * vecs as u32;
        out.push(Dispatch {
            vector: false,
            params: MaskParams {
                count: rest as u32,
                out_off: offsets[0] + skip,
                first_row: skip,
                live_off: 0,
                rows: len as u32,
            },
            in_off: offsets[1..].iter().map(|o| o + skip).collect(),
            grid: grid(rest, policy.rows_per_workgroup())?,
        });
    }
    Ok(out)
}

impl Mask {
    /// Validates the views and adds one dispatch node per dispatch: a vec4 and/or a row
    /// dispatch per non-empty chunk (`{id}` when there is only one, else
    /// `{id}/chunk{k}/vec4` and `{id}/chunk{k}/rows`).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, MaskPolicy::DEFAULT)
    }

    /// [`Mask::add_to_graph`] with explicit tunables.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: MaskPolicy,
    ) -> Result<(), AlgorithmError> {
        let check = ViewCheck::new("mask", &self.id);
        policy.validate().map_err(|e| check.policy(e))?;
        let invocations = graph
            .device()
            .limits()
            .max_compute_invocations_per_workgroup;
        if policy.workgroup_size > invocations {
            return Err(check.device_limit(
                "invocations per workgroup",
                policy.workgroup_size.into(),
                invocations.into(),
            ));
        }
        let n = self.inputs.len();
        let arity_ok = match self.op {
            MaskOp::Not => n == 1,
            MaskOp::Difference => n >= 2,
            _ => n >= 1,
        };
        if !arity_ok {
            let allowed = match self.op {
                MaskOp::Not => "exactly 1",
                MaskOp::Difference => "at least 2",
                _ => "at least 1",
            };
            return Err(check.out_of_range(
                format!("the number of input masks of {:?}", self.op),
                n,
                allowed,
            ));
        }
        let limit = graph.device().limits().max_storage_buffers_per_shader_stage as usize;
        if n + 2 > limit {
            return Err(check.device_limit(
                "storage bindings for inputs, output and parameters",
                (n + 2) as u64,
                limit as u64,
            ));
        }
        require_packed(check, "output", &self.output, VectorFormat::Uint32)?;
        let names: Vec<String> = (0..n).map(|k| format!("input {k}")).collect();
        let read: Vec<(&str, &VectorView, VectorFormat)> = names
            .iter()
            .zip(&self.inputs)
            .map(|(name, v)| (name.as_str(), v, VectorFormat::Uint32))
            .collect();
        let live: Option<DataView> = require_packed_live_all(check, &read)?;
        if live.is_some() && n + 3 > limit {
            return Err(check.device_limit(
                "storage bindings for inputs, output, parameters and the live count",
                (n + 3) as u64,
                limit as u64,
            ));
        }
        for (k, input) in self.inputs.iter().enumerate() {
            let name = &names[k];
            check_same_topology(check, "output", &self.output, name, input)?;
            let shared = input
                .buffers()
                .into_iter()
                .find(|b| self.output.buffers().contains(b));
            if let Some(b) = shared {
                return Err(check.aliased(
                    "output",
                    format!("input {k}"),
                    graph.buffer_id(b)?,
                    "write the result to another buffer",
                ));
            }
        }
        let max_dim = graph.device().limits().max_compute_workgroups_per_dimension;
        let align = graph.device().limits().min_storage_buffer_offset_alignment as u64;
        // Element offsets of each chunk's output and inputs inside their bindings.
        let mut plans = Vec::new();
        for (ci, c) in self.output.chunks().iter().enumerate() {
            if c.len() > u32::MAX as u64 {
                return Err(check.device_limit("rows in one chunk", c.len(), u32::MAX as u64));
            }
            let mut offsets = vec![c.aligned_range(align).element_offset as u32];
            offsets.extend(
                self.inputs
                    .iter()
                    .map(|v| v.chunks()[ci].aligned_range(align).element_offset as u32),
            );
            plans.push(plan_chunk(check, &policy, c.len(), &offsets, max_dim)?);
        }

        let Mask {
            id,
            inputs,
            output,
            op,
        } = self;
        let live = live.map(DataView::without_live_count);
        // Bindings are the views' aligned ranges at `align`, as the offsets above assume.
        let live_off = live.map_or(0, |l| l.aligned_range(align).element_offset as u32);
        let scalar = recipe("mask/mask.wgsl", &policy, op, n, live.is_some());
        let vector = recipe("mask/mask_vec4.wgsl", &policy, op, n, live.is_some());
        // One node per dispatch; a single dispatch keeps the mask's own id.
        let single = plans.iter().map(Vec::len).sum::<usize>() == 1;
        for (ci, plan) in plans.iter().enumerate() {
            for d in plan {
                let d = Dispatch {
                    params: MaskParams {
                        live_off,
                        ..d.params
                    },
                    in_off: d.in_off.clone(),
                    ..*d
                };
                let mut bindings = vec![
                    Binding::storage_params(0, &d.words()),
                    Binding::read_write(1, output.chunks()[ci]),
                ];
                if let Some(l) = live {
                    bindings.push(Binding::read(LIVE_BINDING, l));
                }
                for (k, v) in inputs.iter().enumerate() {
                    bindings.push(Binding::read(FIRST_INPUT + k as u32, v.chunks()[ci]));
                }
                let (node_id, source) = match (single, d.vector) {
                    (true, true) => (id.clone(), vector.clone()),
                    (true, false) => (id.clone(), scalar.clone()),
                    (false, true) => (format!("{id}/chunk{ci}/vec4"), vector.clone()),
                    (false, false) => (format!("{id}/chunk{ci}/rows"), scalar.clone()),
                };
                kernel::add_node(
                    graph,
                    DispatchNode::new(
                        node_id,
                        source,
                        "combine_masks",
                        bindings,
                        Grid::Workgroups(d.grid.dims()),
                    ),
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader_struct() {
        for live in [false, true] {
            let source = shader_source(&MaskPolicy::DEFAULT, MaskOp::Difference, 3, live);
            let mut members = kernel::field_offsets!(MaskParams; count, out_off, first_row,
                live_off, rows);
            // The input offsets follow the fixed part.
            members.push(("in_off", std::mem::size_of::<MaskParams>()));
            kernel::assert_struct_layout(&source, "Params", None, &members);
        }
    }
}
