//! [`Fft1d`] and [`Fft2d`]: validation, the scratch transient and one dispatch node per pass.

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, DataView, DispatchNode, Grid, VectorFormat, VectorView,
};

use super::plan::{self, FftLimits, FftPass, FftPlan, PassBuffer, PlanError};
use super::{FftDirection, FftPolicy};
use crate::error::AlgorithmError;
use crate::kernel::{check_writes_alone, require_packed, shader, Binder, ShaderSource, ViewCheck};

/// Batched 1-D transforms: `batch` contiguous rows of `length` complex values each,
/// `input` → `output` (see the module doc for conventions).
///
/// Views: `input` and `output` packed `Float32x2` (re, im) with at least `length · batch` rows
/// (the first `length · batch` are read and written; nothing else is touched), in different
/// buffers. `length` a power of two up to the largest power of two of complex64 values one
/// storage binding holds (2^27 at the 2^31 - 4 bytes of NVIDIA's Vulkan driver; one pass up
/// to the workgroup length, two up to its square, three up to its cube), `length · batch`
/// values within one binding, `batch ≥ 1`.
/// Errors: non-power-of-two or zero sizes ([`AlgorithmError::OutOfRange`], naming the value
/// and that Bluestein is not implemented), short views ([`AlgorithmError::LengthMismatch`]),
/// wrong formats ([`AlgorithmError::UnsupportedView`]), `input` and `output` sharing a buffer
/// ([`AlgorithmError::Aliased`]), sizes past the device's binding (naming the size and the
/// limit) or, under a policy that shortens passes, past three passes
/// ([`AlgorithmError::DeviceLimit`]). Nodes: `{id}/pass{i}`.
#[derive(Clone, Debug)]
pub struct Fft1d {
    /// Node id prefix.
    pub id: String,
    /// Complex input rows.
    pub input: DataView,
    /// Complex output rows.
    pub output: DataView,
    /// Values per transform.
    pub length: u64,
    /// Number of transforms.
    pub batch: u64,
    /// Forward or inverse (scaled by `1/length`).
    pub direction: FftDirection,
}

/// A 2-D transform of a row-major `height × width` complex field (rows, then columns):
/// `input` → `output`, inverse scaled by `1/(width · height)`. Views and errors as
/// [`Fft1d`], with `width · height` rows; rows as long as [`Fft1d`]'s, columns up to the
/// square of the one-pass column length (2^26 by default; a one-wide field's column is
/// planned as a row).
#[derive(Clone, Debug)]
pub struct Fft2d {
    /// Node id prefix.
    pub id: String,
    /// Complex input field.
    pub input: DataView,
    /// Complex output field.
    pub output: DataView,
    /// Values per row.
    pub width: u64,
    /// Rows.
    pub height: u64,
    /// Forward or inverse.
    pub direction: FftDirection,
}

const ALGORITHM_1D: &str = "fft1d";
const ALGORITHM_2D: &str = "fft2d";

/// `FftParams` in fft.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct FftParams {
    in_off: u32,
    out_off: u32,
    seqs: u32,
    inner: u32,
    in_inner: u32,
    in_outer: u32,
    in_elem: u32,
    tw_n: u32,
    out_inner: u32,
    out_outer: u32,
    out_elem: u32,
    tw_outer: u32,
    conj: f32,
    scale: f32,
    inner_shift: u32,
    outer_mask: u32,
    group_shift: u32,
    in_group: u32,
    out_group: u32,
    pad0: u32,
}

impl Fft1d {
    /// [`Fft1d::add_to_graph_with`] the device's measured policy ([`FftPolicy::for_device`]).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<FftPlan, AlgorithmError> {
        self.add_to_graph_with(graph, &FftPolicy::for_device(graph.device()))
    }

    /// Validates the views and adds one dispatch node per pass; returns the plan (passes,
    /// bytes per pass).
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: &FftPolicy,
    ) -> Result<FftPlan, AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM_1D, &self.id);
        policy.validate().map_err(|e| c.policy(e))?;
        if self.batch == 0 {
            return Err(c.out_of_range("batch", 0, "at least 1"));
        }
        let limits = FftLimits::of(&graph.device().limits());
        let plan = plan::plan_1d(self.length, self.batch, &limits, policy)
            .map_err(|e| plan_error(c, e))?;
        add_passes(
            graph,
            c,
            &self.id,
            self.input,
            self.output,
            &plan,
            self.direction,
            "length × batch",
        )?;
        Ok(plan)
    }
}

impl Fft2d {
    /// [`Fft2d::add_to_graph_with`] the default policy.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<FftPlan, AlgorithmError> {
        self.add_to_graph_with(graph, &FftPolicy::for_device(graph.device()))
    }

    /// Validates the views and adds one dispatch node per pass; returns the plan.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: &FftPolicy,
    ) -> Result<FftPlan, AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM_2D, &self.id);
        policy.validate().map_err(|e| c.policy(e))?;
        let limits = FftLimits::of(&graph.device().limits());
        let plan = plan::plan_2d(self.height, self.width, &limits, policy)
            .map_err(|e| plan_error(c, e))?;
        add_passes(
            graph,
            c,
            &self.id,
            self.input,
            self.output,
            &plan,
            self.direction,
            "width × height",
        )?;
        Ok(plan)
    }
}

fn plan_error(c: ViewCheck<'_>, e: PlanError) -> AlgorithmError {
    match e {
        PlanError::NotPowerOfTwo { what, value: 0 } => {
            c.out_of_range(what, 0, "at least 1 (a power of two)")
        }
        PlanError::NotPowerOfTwo { what, value } => c.out_of_range(
            what,
            value,
            "a power of two (non-power-of-two sizes need Bluestein, which is not implemented)",
        ),
        PlanError::TooLong { what, value, max } => c.device_limit(
            format!(
                "{what} (three passes of the one-pass length for rows, two for columns, \
                 under this policy)"
            ),
            value,
            max,
        ),
        PlanError::PastBinding { what, value, max } => c.device_limit(
            format!(
                "{what} (the longest power of two of complex64 values in one storage \
                 binding of {} bytes)",
                max * 8
            ),
            value,
            max,
        ),
        PlanError::TooManyElements { elements, max } => c.device_limit(
            "complex64 values in one storage binding (and u32 kernel indices)",
            elements,
            max,
        ),
    }
}

#[allow(clippy::too_many_arguments)]
fn add_passes(
    graph: &mut CommandGraph,
    c: ViewCheck<'_>,
    id: &str,
    input: DataView,
    output: DataView,
    plan: &FftPlan,
    direction: FftDirection,
    rule: &'static str,
) -> Result<(), AlgorithmError> {
    let f = VectorFormat::Float32x2;
    let (in_v, out_v) = (VectorView::from(input), VectorView::from(output));
    require_packed(c, "input", &in_v, f)?;
    require_packed(c, "output", &out_v, f)?;
    for (what, v) in [("input", &input), ("output", &output)] {
        if v.len() < plan.elements {
            return Err(c.length(what, "rows", v.len(), plan.elements, rule));
        }
    }
    check_writes_alone(graph, c, &[("output", &out_v)], &[("input", &in_v)], "")?;
    let binder = Binder::new(&graph.device().limits());
    let in_off = binder.offset(c, "input", &input)? / 2;
    let out_off = binder.offset(c, "output", &output)? / 2;
    let scratch = if plan.needs_scratch() {
        let h = graph.create_buffer(BufferDescriptor::new(
            format!("{id}/scratch"),
            plan.elements * 8,
            BufferUsages::STORAGE,
        ))?;
        let v = graph.create_packed_view(h, f, plan.elements)?;
        binder.offset(c, "scratch", &v)?;
        Some(v)
    } else {
        None
    };
    let view = |b: PassBuffer| match b {
        PassBuffer::Input => (input, in_off),
        PassBuffer::Output => (output, out_off),
        PassBuffer::Scratch => (scratch.expect("planned scratch"), 0),
    };
    for (i, pass) in plan.passes.iter().enumerate() {
        let (src, src_off) = view(pass.src);
        let (dst, dst_off) = view(pass.dst);
        let inverse = direction == FftDirection::Inverse;
        let params = FftParams {
            in_off: src_off,
            out_off: dst_off,
            seqs: pass.seqs,
            inner: pass.inner,
            in_inner: pass.input.inner_stride,
            in_outer: pass.input.outer,
            in_elem: pass.input.elem,
            tw_n: pass.twiddle.map_or(1, |t| t.0),
            out_inner: pass.output.inner_stride,
            out_outer: pass.output.outer,
            out_elem: pass.output.elem,
            tw_outer: u32::from(pass.twiddle.is_some_and(|t| t.1)),
            conj: if inverse { -1.0 } else { 1.0 },
            scale: if inverse {
                1.0 / pass.length as f32
            } else {
                1.0
            },
            inner_shift: pass.inner.trailing_zeros(),
            // One level of groups: every outer index, and g = s >> 31 = 0 (seqs < 2^31).
            outer_mask: pass.outer_count.wrapping_sub(1),
            group_shift: match pass.outer_count {
                0 => 31,
                c => pass.inner.trailing_zeros() + c.trailing_zeros(),
            },
            in_group: pass.input.group,
            out_group: pass.output.group,
            pad0: 0,
        };
        let shader = source(pass).keyed("fft/fft");
        let node = DispatchNode::new(
            format!("{id}/pass{i}"),
            shader,
            "fft_pass",
            vec![
                Binding::params(0, &params),
                Binding::read(1, src),
                Binding::read_write(2, dst),
            ],
            Grid::Rows {
                rows: u64::from(pass.seqs),
                rows_per_workgroup: pass.shape.seqs_per_workgroup,
            },
        );
        graph.add_dispatch_node(node)?;
    }
    Ok(())
}

/// The recipe of one pass: `fft/fft.wgsl` with its shape as the header.
fn source(pass: &FftPass) -> ShaderSource {
    let s = pass.shape;
    let last_radix = if s.stages8 == 0 { s.first_radix } else { 8 };
    let fast_in = pass.input.sequence_fast();
    let fast_out = pass.output.sequence_fast();
    let fast_last = if s.stages8 == 0 { fast_in } else { fast_out };
    shader("fft/fft.wgsl")
        .comment(format!(
            "gpugraph-gpgpu fft: length {}, {} sequences × {} invocations",
            s.length, s.seqs_per_workgroup, s.threads
        ))
        .u32("L", s.length)
        .u32("C", s.seqs_per_workgroup)
        .u32("T", s.threads)
        .u32("V", s.values)
        .u32("V8", s.values / 8)
        .u32("V4", s.values / 4)
        .u32("V2", s.values / 2)
        .u32("E", s.length * s.seqs_per_workgroup)
        .u32("R0", s.first_radix)
        .u32("STAGES8", s.stages8)
        .u32("STAGES8_REST", s.stages8.saturating_sub(1))
        .u32("R_LAST", last_radix)
        .define_if(fast_in, "SEQ_FAST_IN")
        .define_if(fast_out, "SEQ_FAST_OUT")
        .define_if(fast_last, "SEQ_FAST_LAST")
        .define_if(s.packed, "PACKED")
        .define_if(s.swizzle, "SWIZZLE")
        .define_if(s.interleaved, "INTERLEAVE")
        .define_if(pass.twiddle.is_some(), "TWIDDLE")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn every_pass_kernel_validates_and_its_params_match() {
        let limits = FftLimits {
            workgroup_bytes: 32768,
            invocations: 1024,
            binding_elements: 1 << 28,
        };
        let small = FftPolicy {
            workgroup_elements: 64,
            threads: 16,
            swizzle: true,
            ..FftPolicy::DEFAULT
        };
        let variants = FftPolicy {
            interleave: true,
            column_length: 1024,
            column_elements: 4096,
            ..FftPolicy::DEFAULT
        };
        let mut plans = Vec::new();
        plans.push(plan::plan_1d(1 << 18, 2, &limits, &small).unwrap());
        for policy in [FftPolicy::default(), small, variants] {
            for (h, w) in [(1, 1), (2, 4), (16, 256), (512, 8), (4096, 8192), (1024, 2)] {
                if let Ok(p) = plan::plan_2d(h, w, &limits, &policy) {
                    plans.push(p);
                }
            }
            plans.push(plan::plan_1d(1 << 12, 3, &limits, &policy).unwrap());
        }
        for plan in plans {
            for pass in &plan.passes {
                let s = source(pass).build();
                kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{pass:?}: {e}"));
                let members = kernel::field_offsets!(FftParams; in_off, out_off, seqs, inner,
                    in_inner, in_outer, in_elem, tw_n, out_inner, out_outer, out_elem, tw_outer,
                    conj, scale, inner_shift, outer_mask, group_shift, in_group, out_group,
                    pad0);
                let size = Some(std::mem::size_of::<FftParams>());
                kernel::assert_struct_layout(&s, "FftParams", size, &members);
            }
        }
    }
}
