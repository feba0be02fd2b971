//! Reduction of a float32 or uint32 vector to one sum, minimum, maximum, extent or count,
//! written into a caller view (the result stays on the GPU).
//!
//! Contract (spec: GPUReduction):
//! * rows whose mask is zero are excluded; included non-finite float32 values are ignored and
//!   counted (optional `ignored` word);
//! * float32 results: sum (+0 when empty), min / max / extent `[min, max]` (NaN when empty;
//!   −0 orders below +0), count of accepted values (uint32). uint32 results: sum as 64 bits
//!   `[lo, hi]` (modulo 2⁶⁴), min (`u32::MAX` when empty), max (0 when empty), extent, count;
//! * the float sum is **deterministic**: bit-identical from run to run on a device, for the
//!   same chunk layout and dispatch limit. Its order (reproduced by [`cpu::fixed_order_sum`]):
//!   per chunk, workgroup `w` of `P` takes tiles `w, w + P, …` of 1,024 aligned vec4 slots;
//!   invocation `l` adds slot `j·256 + l` of each tile into four lane sums (one per vec4
//!   component), its total is `(x + y) + (z + w)`; workgroup 0's invocation 0 then adds the
//!   ≤ 3 unaligned head rows and ≤ 3 tail rows in row order; a fixed tree (strides 128, 64,
//!   …, 1) sums the 256 invocations into the workgroup's partial; the final pass folds the
//!   partials (all chunks, in order) by invocation `partial mod 256` and the same tree;
//! * a vector keeps its chunks (each is read in place, no packing).
//!
//! Design: the read-bandwidth floor is 4 bytes per value (+4 with a mask). The tile pass
//! (`{id}`) reads each value once with 16-byte loads (4 per invocation in flight per tile
//! round), at most 1,024 workgroups per chunk striding over the tiles, and writes one 24-byte
//! partial per workgroup into a graph-owned transient (`{id}/partials`); the final pass
//! (`{id}/final`, one workgroup) reads the partials and writes the result. Determinism costs
//! nothing extra here: the alternative, atomics on one result word, needs an init pass too
//! (three dispatches instead of two) and serializes up to 1,024 compare-exchange float adds
//! on one address, while the fixed-order final pass reads at most 24 KiB per chunk.
//!
//! ```no_run
//! # use gpugraph_command::{CommandGraph, DataView};
//! # use gpugraph_gpgpu::reduce::{ReduceOp, Reduction};
//! # fn example(graph: &mut CommandGraph, values: DataView, extent: DataView)
//! #            -> Result<(), gpugraph_gpgpu::AlgorithmError> {
//! // [min, max] of a float32 column into a 2-row float32 view (e.g. histogram bounds).
//! Reduction {
//!     id: "extent".into(),
//!     input: values.into(),
//!     mask: None,
//!     op: ReduceOp::Extent,
//!     output: extent,
//!     ignored: None,
//! }
//! .add_to_graph(graph)?;
//! # Ok(()) }
//! ```

pub mod cpu;
mod policy;

pub use policy::ReducePolicy;

use gpugraph_command::wgpu;
use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, DataView, DataViewDescriptor, DispatchNode, Grid,
    ScalarKind, VectorFormat, VectorView,
};

use crate::error::AlgorithmError;
use crate::kernel::{
    self, check_same_topology, grid_for, require_output, require_packed, require_packed_live,
    row_offset, shader, Access, ShaderSource, ViewCheck, WorkgroupSplit,
};

/// Bytes of one partial in the transient.
const PARTIAL_BYTES: u64 = 24;

/// What to reduce to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (float32: 1 float32 word; uint32: 2 uint32 words, 64-bit `[lo, hi]`).
    Sum,
    /// Minimum (1 word of the input type).
    Min,
    /// Maximum (1 word of the input type).
    Max,
    /// `[min, max]` (2 words of the input type).
    Extent,
    /// Accepted rows (1 uint32 word).
    Count,
}

impl std::str::FromStr for ReduceOp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "sum" => ReduceOp::Sum,
            "min" => ReduceOp::Min,
            "max" => ReduceOp::Max,
            "extent" => ReduceOp::Extent,
            "count" => ReduceOp::Count,
            other => {
                return Err(format!(
                    "unknown reduction '{other}' (expected sum, min, max, extent, count)"
                ))
            }
        })
    }
}

impl ReduceOp {
    /// Result words and their scalar kind for an input of scalar kind `input`.
    pub fn output_words(self, input: ScalarKind) -> (u64, ScalarKind) {
        match (self, input) {
            (ReduceOp::Count, _) => (1, ScalarKind::Uint),
            (ReduceOp::Sum, ScalarKind::Uint) => (2, ScalarKind::Uint),
            (ReduceOp::Extent, k) => (2, k),
            (_, k) => (1, k),
        }
    }

    fn code(self) -> u32 {
        match self {
            ReduceOp::Sum => 0,
            ReduceOp::Min => 1,
            ReduceOp::Max => 2,
            ReduceOp::Extent => 3,
            ReduceOp::Count => 4,
        }
    }
}

/// How one chunk is split: unaligned head rows, aligned vec4 slots, tail rows, tiles, and
/// workgroups (= partials). A pure function of the chunk, the policy and the dispatch limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkPlan {
    /// The policy's invocations per workgroup.
    pub workgroup_size: u32,
    /// The policy's vec4 slots per invocation per tile.
    pub vec4_per_thread: u32,
    /// Rows in the chunk.
    pub rows: u64,
    /// Rows before the first 16-byte-aligned slot (≤ 3).
    pub head: u64,
    /// Whole aligned vec4 slots after the head.
    pub body_vecs: u64,
    /// Tiles of `workgroup_size × vec4_per_thread` slots.
    pub tiles: u64,
    /// Workgroups launched (0 for an empty chunk, else at least 1).
    pub workgroups: u64,
}

/// The plan of a chunk of `rows` 4-byte values at `byte_offset` in its buffer, on a device
/// allowing `max_dim` workgroups per dispatch dimension.
pub fn chunk_plan(rows: u64, byte_offset: u64, max_dim: u32, policy: &ReducePolicy) -> ChunkPlan {
    let head = ((4 - (byte_offset / 4) % 4) % 4).min(rows);
    let body_vecs = (rows - head) / 4;
    let tiles = body_vecs.div_ceil((policy.workgroup_size * policy.vec4_per_thread) as u64);
    let cap = policy
        .max_partials_per_chunk
        .min(max_dim as u64 * max_dim as u64);
    let workgroups = if rows == 0 {
        0
    } else {
        tiles.clamp(1, cap.max(1))
    };
    ChunkPlan {
        workgroup_size: policy.workgroup_size,
        vec4_per_thread: policy.vec4_per_thread,
        rows,
        head,
        body_vecs,
        tiles,
        workgroups,
    }
}

/// Reduces `input` (float32 or uint32, optional mask) with `op` into `output`. Reads every
/// chunk once; writes `output` (and `ignored`) once per encoding.
#[derive(Clone, Debug)]
pub struct Reduction {
    /// Node id prefix (and label).
    pub id: String,
    /// Packed float32 or uint32 values (all chunks one format; at least one chunk).
    pub input: VectorView,
    /// Packed uint32 inclusion mask aligned with `input` (nonzero = included).
    pub mask: Option<VectorView>,
    /// The reduction.
    pub op: ReduceOp,
    /// Packed view of exactly [`ReduceOp::output_words`] 4-byte words of the result kind
    /// (e.g. `float32` × 2 or `float32x2` × 1 for a float extent).
    pub output: DataView,
    /// One uint32: included non-finite float32 values (0 for uint32 input).
    pub ignored: Option<DataView>,
}

fn check_output(
    check: ViewCheck<'_>,
    output: &DataView,
    words: u64,
    kind: ScalarKind,
) -> Result<(), AlgorithmError> {
    let f = output.format();
    let ok = f.scalar() == kind
        && f.component_bytes() == 4
        && output.len() * f.components() as u64 == words;
    let name = if kind == ScalarKind::Float {
        "float32"
    } else {
        "uint32"
    };
    if !ok {
        return Err(AlgorithmError::UnsupportedView {
            algorithm: check.algorithm,
            id: check.id.to_string(),
            what: "output".into(),
            expected: format!("{words} {name} word(s)"),
            actual: format!("{} rows of {f}", output.len()),
        });
    }
    require_packed(check, "output", &VectorView::from(*output), f)
}

impl Reduction {
    /// Validates the views and adds `{id}` (tile pass) and `{id}/final`, with the device's
    /// measured policy ([`ReducePolicy::for_device`]).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let policy = ReducePolicy::for_device(graph.device());
        self.add_to_graph_with(graph, policy)
    }

    /// [`Reduction::add_to_graph`] with explicit tunables (they change the float sum's
    /// fixed order, not its determinism).
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: ReducePolicy,
    ) -> Result<(), AlgorithmError> {
        let id = self.id.clone();
        let check = ViewCheck::new("reduction", &id);
        policy.validate().map_err(|e| check.policy(e))?;
        let format = self.input.format().ok_or_else(|| {
            check.missing(
                "at least one chunk (its format is the value type)",
                "the input",
            )
        })?;
        let format = match format {
            VectorFormat::Float32 | VectorFormat::Uint32 => format,
            other => {
                return Err(AlgorithmError::UnsupportedView {
                    algorithm: "reduction",
                    id: id.clone(),
                    what: "input".into(),
                    expected: "float32 or uint32".into(),
                    actual: other.to_string(),
                })
            }
        };
        let live = require_packed_live(check, "input", &self.input, format)?;
        if let Some(m) = &self.mask {
            require_packed(check, "mask", m, VectorFormat::Uint32)?;
            check_same_topology(check, "input", &self.input, "mask", m)?;
        }
        let (words, kind) = self.op.output_words(format.scalar());
        check_output(check, &self.output, words, kind)?;
        if let Some(v) = &self.ignored {
            require_output(check, "ignored output", v, VectorFormat::Uint32, 1)?;
            let (out, ign) = (VectorView::from(self.output), VectorView::from(*v));
            kernel::check_writes_alone(
                graph,
                check,
                &[("output", &out), ("ignored output", &ign)],
                &[],
                "",
            )?;
        }
        let max_dim = graph.device().limits().max_compute_workgroups_per_dimension;
        let row_limit = u32::MAX as u64 / 2;
        let mut plans = Vec::new();
        for c in self.input.chunks() {
            if c.len() > row_limit {
                return Err(check.device_limit("rows in one chunk", c.len(), row_limit));
            }
            plans.push(chunk_plan(c.len(), c.byte_offset(), max_dim, &policy));
        }
        let grids: Vec<WorkgroupSplit> = plans
            .iter()
            .map(|p| grid_for(p.workgroups, max_dim).unwrap_or(WorkgroupSplit { x: 0, y: 0 }))
            .collect();
        let partial_count: u64 = plans.iter().map(|p| p.workgroups).sum();
        let partials = graph.create_buffer(BufferDescriptor::new(
            format!("{id}/partials"),
            (partial_count * PARTIAL_BYTES).max(PARTIAL_BYTES),
            wgpu::BufferUsages::STORAGE,
        ))?;
        let source = wgsl(
            &policy,
            format,
            self.mask.is_some(),
            self.op,
            self.ignored.is_some(),
            live.is_some(),
        );
        add_tiles(graph, &self, live, &source, plans, grids, partials)?;
        add_final(graph, &self, &source, partial_count as u32, partials)
    }
}

/// The WGSL of both passes for `policy`, input `format` and the optional parts.
pub(crate) fn wgsl(
    policy: &ReducePolicy,
    format: VectorFormat,
    has_mask: bool,
    op: ReduceOp,
    has_ignored: bool,
    live: bool,
) -> ShaderSource {
    // No instance id in the text: equal sources share one pipeline in the device cache.
    shader("reduce/reduce.wgsl")
        .comment("Generated by gpugraph-gpgpu reduce/mod.rs.")
        .u32("WG", policy.workgroup_size)
        .u32("VEC4_PER_THREAD", policy.vec4_per_thread)
        .bool("IS_FLOAT", format == VectorFormat::Float32)
        .bool("HAS_MASK", has_mask)
        .bool("DO_SUM", op == ReduceOp::Sum)
        .bool("DO_MIN", matches!(op, ReduceOp::Min | ReduceOp::Extent))
        .bool("DO_MAX", matches!(op, ReduceOp::Max | ReduceOp::Extent))
        .u32("OP", op.code())
        .bool("HAS_IGNORED", has_ignored)
        .bool("HAS_LIVE", live)
}

/// Parameters of both passes (`Params` in reduce.wgsl, a uniform): the tile pass fills the
/// chunk fields, the final pass the result fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ReduceParams {
    /// Rows of the chunk (its capacity under a live count).
    pub rows: u32,
    /// Row offsets of the data and mask inside their bindings.
    pub data_off: u32,
    /// Row offset of the mask inside its binding.
    pub mask_off: u32,
    /// The chunk plan ([`ChunkPlan`]): head rows, first aligned slot, body slots, tiles and
    /// workgroups.
    pub head: u32,
    /// Index of the first aligned vec4 slot in the vec4 binding.
    pub first_vec: u32,
    /// Whole aligned slots.
    pub body_vecs: u32,
    /// Tiles of the chunk.
    pub tiles: u32,
    /// Workgroups striding over them.
    pub workgroups: u32,
    /// Index of the chunk's first partial.
    pub partial_base: u32,
    /// Final pass: partials to fold.
    pub partial_count: u32,
    /// Final pass: element offsets of the result and the ignored word.
    pub out_off: u32,
    /// Final pass: element offset of the ignored word.
    pub ignored_off: u32,
    /// `0x7fc0_0000` (a NaN const-expression is a shader-creation error).
    pub nan_bits: u32,
    /// Live count: its element offset inside its binding.
    pub live_off: u32,
}

/// Binding of the live count in the tile pass (`reduce.wgsl`).
const LIVE_BINDING: u32 = 7;

/// `{id}` (or `{id}/chunk{k}` when several chunks dispatch): one tile-pass dispatch node per
/// non-empty chunk, each writing its chunk's partials.
fn add_tiles(
    graph: &mut CommandGraph,
    r: &Reduction,
    live: Option<DataView>,
    source: &ShaderSource,
    plans: Vec<ChunkPlan>,
    grids: Vec<WorkgroupSplit>,
    partials: gpugraph_command::BufferHandle,
) -> Result<(), AlgorithmError> {
    // Bindings are the views' aligned ranges at the device's storage alignment (≥ 32 bytes in
    // WebGPU, so vec4 slots counted from it are whole).
    let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
    let live_off = live.map_or(0, |l| row_offset(&l, align));
    let dispatched = grids.iter().filter(|g| !g.is_empty()).count();
    let mut base = 0u32;
    for (ci, c) in r.input.chunks().iter().enumerate() {
        let plan = plans[ci];
        let partial_base = base;
        base += plan.workgroups as u32;
        if grids[ci].is_empty() {
            continue;
        }
        let mview = r.mask.as_ref().map(|m| m.chunks()[ci]);
        let data_off = row_offset(c, align);
        let first_vec = (u64::from(data_off) + plan.head) / 4;
        let params = ReduceParams {
            rows: plan.rows as u32,
            data_off,
            mask_off: mview.map_or(0, |m| row_offset(&m, align)),
            head: plan.head as u32,
            first_vec: first_vec as u32,
            body_vecs: plan.body_vecs as u32,
            tiles: plan.tiles as u32,
            workgroups: plan.workgroups as u32,
            partial_base,
            live_off,
            ..Default::default()
        };
        // The whole aligned 16-byte slots, from the same aligned offset as the scalar binding;
        // a chunk with none reads no slot and binds a placeholder.
        let data4 = if plan.body_vecs == 0 {
            Binding::placeholder(1, Access::Read)
        } else {
            let view = graph.create_data_view(
                c.buffer(),
                DataViewDescriptor {
                    format: VectorFormat::Uint32x4,
                    length: first_vec + plan.body_vecs,
                    byte_offset: c.aligned_range(align).offset,
                    byte_stride: None,
                },
            )?;
            Binding::read(1, view)
        };
        let bindings = vec![
            Binding::params(0, &params),
            data4,
            Binding::read(2, *c),
            mview.map_or(Binding::placeholder(3, Access::Read), |m| {
                Binding::read(3, m)
            }),
            Binding::handle(4, partials, Access::ReadWrite),
            live.map_or(Binding::placeholder(LIVE_BINDING, Access::Read), |l| {
                Binding::read(LIVE_BINDING, l)
            }),
        ];
        let id = if dispatched == 1 {
            r.id.clone()
        } else {
            format!("{}/chunk{ci}", r.id)
        };
        kernel::add_node(
            graph,
            DispatchNode::new(
                id,
                source.clone(),
                "reduce_tiles",
                bindings,
                Grid::Workgroups(grids[ci].dims()),
            ),
        )?;
    }
    Ok(())
}

/// `{id}/final`: one workgroup folds the partials into the output (and the ignored count).
fn add_final(
    graph: &mut CommandGraph,
    r: &Reduction,
    source: &ShaderSource,
    partial_count: u32,
    partials: gpugraph_command::BufferHandle,
) -> Result<(), AlgorithmError> {
    let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
    let params = ReduceParams {
        partial_count,
        out_off: r.output.aligned_range(align).element_offset as u32,
        ignored_off: r.ignored.map_or(0, |v| row_offset(&v, align)),
        nan_bits: 0x7fc0_0000,
        ..Default::default()
    };
    let bindings = vec![
        Binding::params(0, &params),
        Binding::handle(4, partials, Access::ReadWrite),
        Binding::read_write(5, r.output),
        r.ignored
            .map_or(Binding::placeholder(6, Access::ReadWrite), |v| {
                Binding::read_write(6, v)
            }),
    ];
    kernel::add_node(
        graph,
        DispatchNode::new(
            format!("{}/final", r.id),
            source.clone(),
            "reduce_partials",
            bindings,
            Grid::Workgroups([1, 1, 1]),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{PolicyError, PolicyParseError};

    #[test]
    fn plans_split_head_slots_and_tail() {
        let d = ReducePolicy::DEFAULT;
        let p = chunk_plan(10, 4, 65535, &d);
        assert_eq!((p.head, p.body_vecs, p.workgroups), (3, 1, 1));
        let p = chunk_plan(2, 4, 65535, &d);
        assert_eq!((p.head, p.body_vecs, p.tiles, p.workgroups), (2, 0, 0, 1));
        let p = chunk_plan(0, 0, 65535, &d);
        assert_eq!(p.workgroups, 0);
        let p = chunk_plan(100_000_000, 0, 65535, &d);
        assert_eq!((p.head, p.tiles, p.workgroups), (0, 24_415, 1024));
        assert_eq!(chunk_plan(100_000_000, 0, 16, &d).workgroups, 256);
        assert!(ReducePolicy {
            vec4_per_thread: 0,
            ..d
        }
        .validate()
        .is_err());
        assert_eq!(
            "wg=64,partials=8".parse::<ReducePolicy>(),
            Ok(ReducePolicy {
                workgroup_size: 64,
                max_partials_per_chunk: 8,
                ..d
            })
        );
        assert_eq!(
            "partials=0".parse::<ReducePolicy>(),
            Err(PolicyParseError::Invalid(PolicyError::new(
                "reduce",
                "max_partials_per_chunk",
                0,
                "at least 1"
            )))
        );
    }

    #[test]
    fn every_variant_validates_and_params_match_the_shader() {
        for policy in [
            ReducePolicy::DEFAULT,
            ReducePolicy {
                workgroup_size: 32,
                vec4_per_thread: 1,
                max_partials_per_chunk: 1,
            },
        ] {
            for format in [VectorFormat::Float32, VectorFormat::Uint32] {
                for op in [
                    ReduceOp::Sum,
                    ReduceOp::Min,
                    ReduceOp::Extent,
                    ReduceOp::Count,
                ] {
                    for (mask, ignored, live) in [(false, false, false), (true, true, true)] {
                        let source = wgsl(&policy, format, mask, op, ignored, live).build();
                        kernel::validate_wgsl(&source).unwrap_or_else(|e| panic!("{e}"));
                        assert!(!source.contains('#'), "{source}");
                    }
                }
            }
        }
        let source = wgsl(
            &ReducePolicy::DEFAULT,
            VectorFormat::Float32,
            false,
            ReduceOp::Sum,
            false,
            false,
        )
        .build();
        let members = kernel::field_offsets!(ReduceParams; rows, data_off, mask_off, head,
            first_vec, body_vecs, tiles, workgroups, partial_base, partial_count, out_off,
            ignored_off, nan_bits, live_off);
        kernel::assert_struct_layout(
            &source,
            "Params",
            Some(std::mem::size_of::<ReduceParams>()),
            &members,
        );
    }
}
