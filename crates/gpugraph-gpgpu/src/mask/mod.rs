//! Composable visibility masks: and, or, xor, difference, not over N source-aligned u32 masks,
//! always written as canonical 0/1. Vectors keep their chunks: chunk k of every input feeds
//! chunk k of the output.

pub mod cpu;

use gpugraph_command::{
    BindGroupCache, CommandGraph, ComputeNode, DataView, ResourceUse, VectorFormat, VectorView,
};

use crate::error::AlgorithmError;
use crate::kernel::{
    self, check_same_topology, grid_for, require_packed, require_packed_live_all, Binding, Kernel,
    ViewCheck,
};

const WGSL: &str = include_str!("mask.wgsl");
const VEC4_WGSL: &str = include_str!("mask_vec4.wgsl");
/// Rows of one workgroup of the scalar kernel (`mask.wgsl`).
const ROWS_PER_WORKGROUP: u64 = 256 * 4;
/// vec4 slots per invocation of the vector kernel (`mask_vec4.wgsl`'s `VECS_PER_THREAD`).
const VECS_PER_THREAD: u32 = 4;
/// vec4 slots of one workgroup of the vector kernel.
const VECS_PER_WORKGROUP: u64 = 256 * VECS_PER_THREAD as u64;

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

/// `op` over the operands' truth values; `vector`: over `vec4<bool>` (`&`, `|`), else `bool`.
fn combine_expr(op: MaskOp, operands: &[String], vector: bool) -> String {
    let (and, or) = if vector {
        (" & ", " | ")
    } else {
        (" && ", " || ")
    };
    match op {
        MaskOp::And => operands.join(and),
        MaskOp::Or => operands.join(or),
        MaskOp::Xor => operands.join(" != "),
        MaskOp::Difference => format!("{}{and}!({})", operands[0], operands[1..].join(or)),
        MaskOp::Not => format!("!{}", operands[0]),
    }
}

/// The read-only bindings `in_0..in_{n-1}` (slots 2..) as arrays of `element`; with `live`,
/// the live count at slot `n + 2` and `LIVE_PARAM`, the index of its parameter words.
fn input_bindings(n: usize, element: &str, live: bool) -> String {
    let mut out: String = (0..n)
        .map(|k| {
            format!(
                "@group(0) @binding({}) var<storage, read> in_{k}: array<{element}>;\n",
                k + 2
            )
        })
        .collect();
    if live {
        out.push_str(&format!(
            "@group(0) @binding({}) var<storage, read> live: array<u32>;\n\
             const LIVE_PARAM: u32 = {}u;\n",
            n + 2,
            n + 2
        ));
    }
    out
}

fn defines(live: bool) -> &'static [&'static str] {
    if live {
        &["LIVE"]
    } else {
        &[]
    }
}

/// The WGSL of the scalar kernel for `op` over `n` inputs (any alignment, one row at a time);
/// `live`: the variant bounded by a live count.
pub fn shader_source(op: MaskOp, n: usize, live: bool) -> String {
    let bindings = input_bindings(n, "u32", live);
    let operands: Vec<String> = (0..n)
        .map(|k| format!("(in_{k}[params[{}] + i] != 0u)", k + 2))
        .collect();
    let body = kernel::preprocess(WGSL, defines(live))
        .replace("//INPUT_BINDINGS", &bindings)
        .replace("COMBINE", &combine_expr(op, &operands, false));
    kernel::with_shared(&[kernel::SHARED_DISPATCH_WGSL], &body)
}

/// The WGSL of the vector kernel for `op` over `n` inputs (16-byte aligned views, four rows
/// per `vec4<u32>`, every load before the first store); `live` as in [`shader_source`].
pub fn vec4_shader_source(op: MaskOp, n: usize, live: bool) -> String {
    let bindings = input_bindings(n, "vec4<u32>", live);
    let loads: String = (0..n)
        .map(|k| {
            format!(
                "    let off_{k} = params[{p}];\n    var v_{k}: array<vec4<u32>, VECS_PER_THREAD>;\n\
                 #unroll\n    \
                 for (var r = 0u; r < VECS_PER_THREAD; r += 1u) {{\n        \
                 let i = base + r * WORKGROUP_SIZE;\n        \
                 if (i < count) {{ v_{k}[r] = in_{k}[off_{k} + i]; }}\n    }}\n",
                p = k + 2
            )
        })
        .collect();
    let operands: Vec<String> = (0..n)
        .map(|k| format!("(v_{k}[r] != vec4<u32>(0u))"))
        .collect();
    let body = kernel::preprocess(VEC4_WGSL, defines(live))
        .replace("//INPUT_BINDINGS", &bindings)
        .replace("//INPUT_LOADS", &loads)
        .replace("COMBINE", &combine_expr(op, &operands, true));
    let body = kernel::unroll(&body, &[("VECS_PER_THREAD", VECS_PER_THREAD)], true);
    kernel::with_shared(&[kernel::SHARED_DISPATCH_WGSL], &body)
}

/// One dispatch of a chunk: which kernel, its parameter words and grid.
struct Dispatch {
    vector: bool,
    params: Vec<u32>,
    grid: kernel::Grid,
}

/// The dispatches of one chunk of `len` rows whose output and input views start at element
/// offsets `offsets` (output first) within their bindings: the vector kernel over the whole
/// vec4 slots when every offset is a multiple of 4, the scalar kernel over the rest. After the
/// offsets come the LIVE words: the chunk row of the dispatch's first row, the live count's
/// offset (set at compile time) and the chunk's rows.
fn plan_chunk(
    check: ViewCheck<'_>,
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
        let mut params = vec![vecs as u32];
        params.extend(offsets.iter().map(|o| o / 4));
        params.extend([0, 0, len as u32]);
        out.push(Dispatch {
            vector: true,
            params,
            grid: grid(vecs, VECS_PER_WORKGROUP)?,
        });
    }
    let rest = len - 4 * vecs;
    if rest > 0 {
        let mut params = vec![rest as u32];
        params.extend(offsets.iter().map(|o| o + 4 * vecs as u32));
        params.extend([4 * vecs as u32, 0, len as u32]);
        out.push(Dispatch {
            vector: false,
            params,
            grid: grid(rest, ROWS_PER_WORKGROUP)?,
        });
    }
    Ok(out)
}

impl Mask {
    /// Validates the views and adds one compute node (one dispatch per non-empty chunk).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let check = ViewCheck::new("mask", &self.id);
        let n = self.inputs.len();
        let arity_ok = match self.op {
            MaskOp::Not => n == 1,
            MaskOp::Difference => n >= 2,
            _ => n >= 1,
        };
        if !arity_ok {
            return Err(check.invalid(format!(
                "operation {:?} cannot take {n} input masks",
                self.op
            )));
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
                return Err(check.mismatch(format!(
                    "input {k} and the output share buffer {}; write the result to another buffer",
                    graph.buffer_id(b)?
                )));
            }
        }
        let max_dim = graph.device().limits().max_compute_workgroups_per_dimension;
        let align = graph.device().limits().min_storage_buffer_offset_alignment as u64;
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
            plans.push(plan_chunk(check, c.len(), &offsets, max_dim)?);
        }

        let mut uses: Vec<ResourceUse> = Vec::new();
        for input in &self.inputs {
            uses.extend(input.buffers().into_iter().map(ResourceUse::storage_read));
        }
        if let Some(l) = &live {
            uses.push(ResourceUse::storage_read(l.buffer()));
        }
        uses.extend(
            self.output
                .buffers()
                .into_iter()
                .map(ResourceUse::storage_write),
        );
        let Mask {
            id,
            inputs,
            output,
            op,
        } = self;
        let live = live.map(DataView::without_live_count);
        graph.add_compute_node(ComputeNode::new(id, uses, move |cc| {
            let device = cc.device().clone();
            let align = cc.limits().min_storage_buffer_offset_alignment as u64;
            let mut bindings = vec![Binding::StorageRead, Binding::StorageReadWrite];
            bindings.extend(std::iter::repeat_n(Binding::StorageRead, inputs.len()));
            if live.is_some() {
                bindings.push(Binding::StorageRead);
            }
            let kernel_for = |source: String| {
                Kernel::new(
                    &device,
                    cc.node_id(),
                    &source,
                    "combine_masks",
                    &bindings,
                    &[],
                )
            };
            let scalar = kernel_for(shader_source(op, inputs.len(), live.is_some()));
            let vector = kernel_for(vec4_shader_source(op, inputs.len(), live.is_some()));
            let live_off = live.map_or(0, |l| l.aligned_range(align).element_offset as u32);
            struct Chunk {
                chunk: usize,
                vector: bool,
                params: gpugraph_command::wgpu::Buffer,
                cache: BindGroupCache,
                grid: kernel::Grid,
            }
            let mut chunks: Vec<Chunk> = Vec::new();
            for (ci, plan) in plans.iter().enumerate() {
                for d in plan {
                    let mut params = d.params.clone();
                    let at = params.len() - 2;
                    params[at] = live_off;
                    chunks.push(Chunk {
                        chunk: ci,
                        vector: d.vector,
                        params: kernel::parameter_buffer(
                            &device,
                            cc.node_id(),
                            bytemuck::cast_slice(&params),
                        ),
                        cache: BindGroupCache::default(),
                        grid: d.grid,
                    });
                }
            }
            Ok(gpugraph_command::compute_fn(move |pass, ec| {
                for chunk in chunks.iter_mut() {
                    if chunk.grid.is_empty() {
                        continue;
                    }
                    let ci = chunk.chunk;
                    let kernel = if chunk.vector { &vector } else { &scalar };
                    let out = &output.chunks()[ci];
                    let mut buffers = vec![ec.buffer(out.buffer())];
                    buffers.extend(inputs.iter().map(|v| ec.buffer(v.chunks()[ci].buffer())));
                    buffers.extend(live.map(|l| ec.buffer(l.buffer())));
                    let params = &chunk.params;
                    let group = chunk.cache.get_or_create(&buffers, || {
                        let mut res = vec![params.as_entire_buffer_binding()];
                        res.push(gpugraph_command::view_binding(buffers[0], out, align).0);
                        for (k, v) in inputs.iter().enumerate() {
                            res.push(
                                gpugraph_command::view_binding(
                                    buffers[k + 1],
                                    &v.chunks()[ci],
                                    align,
                                )
                                .0,
                            );
                        }
                        if let Some(l) = &live {
                            let b = buffers[inputs.len() + 1];
                            res.push(gpugraph_command::view_binding(b, l, align).0);
                        }
                        kernel.bind_group(&device, &res)
                    });
                    kernel.dispatch(pass, group, chunk.grid);
                }
            }))
        }))?;
        Ok(())
    }
}
