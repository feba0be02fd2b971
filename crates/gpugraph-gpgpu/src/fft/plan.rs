//! FFT planning as pure data, unit-tested without a GPU: which passes a transform takes
//! (one per axis up to the workgroup length, a four-step pair past it, three passes past its
//! square), how each pass addresses its sequences, and the kernel shape (sequences,
//! invocations and registers per workgroup, radices) each pass compiles to.

use super::axes::{column_axes, row_axes, Axis};
use super::FftPolicy;

/// Where a pass reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassBuffer {
    /// The caller's input view.
    Input,
    /// The transform's scratch transient.
    Scratch,
    /// The caller's output view.
    Output,
}

/// How sequence `s = (g · outer_count + o) · inner + i` ([`FftPass`]) finds its element `k`:
/// `g · group + o · outer + i · inner_stride + k · elem` (complex elements from the view's
/// first row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Stride between the `inner` sequences of one group.
    pub inner_stride: u32,
    /// Stride between groups.
    pub outer: u32,
    /// Stride between a sequence's elements.
    pub elem: u32,
    /// Stride between the groups of `outer_count` outer indices (0 when a pass has one
    /// level of groups).
    pub group: u32,
}

impl Layout {
    pub(super) const fn new(inner_stride: u32, outer: u32, elem: u32) -> Self {
        Self::grouped(inner_stride, outer, elem, 0)
    }
    pub(super) const fn grouped(inner_stride: u32, outer: u32, elem: u32, group: u32) -> Self {
        Self {
            inner_stride,
            outer,
            elem,
            group,
        }
    }
    /// Whether adjacent sequences are adjacent in memory and elements are not: the kernel
    /// then gives adjacent invocations adjacent sequences, so loads and stores coalesce.
    pub fn sequence_fast(&self) -> bool {
        self.elem != 1
    }
}

/// One pass: `seqs` independent transforms of length `length`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FftPass {
    /// Transform length (a power of two).
    pub length: u32,
    /// Number of sequences.
    pub seqs: u32,
    /// Sequences per group (`s = (g · outer_count + o) · inner + i`).
    pub inner: u32,
    /// Outer indices per group, a power of two; 0: one level (`o = s / inner`, `g = 0`).
    pub outer_count: u32,
    /// Where sequences are read.
    pub input: Layout,
    /// Where results are written.
    pub output: Layout,
    /// The four-step twiddle `e^{-2πi · idx · k / n}` applied to output element `k`, with
    /// `idx` the outer (`true`) or inner (`false`) sequence index.
    pub twiddle: Option<(u32, bool)>,
    /// Source buffer.
    pub src: PassBuffer,
    /// Destination buffer.
    pub dst: PassBuffer,
    /// Kernel shape.
    pub shape: KernelShape,
}

/// What one pass's kernel is compiled for (the WGSL header and defines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelShape {
    /// Transform length L.
    pub length: u32,
    /// Sequences per workgroup C.
    pub seqs_per_workgroup: u32,
    /// Invocations per workgroup T.
    pub threads: u32,
    /// Complex values each invocation holds, C·L/T.
    pub values: u32,
    /// Radix of stage 0 (1, 2, 4 or 8); every later stage has radix 8.
    pub first_radix: u32,
    /// Radix-8 stages after stage 0.
    pub stages8: u32,
    /// Workgroup memory holds vec2 (re, im) words; else re and im are exchanged in turn.
    pub packed: bool,
    /// Workgroup-memory words permuted against bank conflicts ([`FftPolicy::swizzle`]).
    pub swizzle: bool,
    /// Every stage maps adjacent invocations to adjacent sequences and workgroup memory is
    /// element-major ([`FftPolicy::interleave`]; strided passes of at least
    /// [`INTERLEAVE_MIN_SEQS`] sequences per workgroup only).
    pub interleaved: bool,
}

impl KernelShape {
    /// Bytes of workgroup memory the kernel declares.
    pub fn workgroup_bytes(&self) -> u32 {
        let words = self.seqs_per_workgroup * self.length;
        if self.packed {
            words * 8
        } else {
            words * 4
        }
    }
}

/// The device limits a plan respects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FftLimits {
    /// `max_compute_workgroup_storage_size`.
    pub workgroup_bytes: u32,
    /// `max_compute_invocations_per_workgroup`.
    pub invocations: u32,
    /// Complex64 values one storage binding (and one buffer) holds:
    /// `min(max_storage_buffer_binding_size, max_buffer_size) / 8`.
    pub binding_elements: u64,
}

impl FftLimits {
    /// The limits of `limits`.
    pub fn of(limits: &gpugraph_command::wgpu::Limits) -> Self {
        Self {
            workgroup_bytes: limits.max_compute_workgroup_storage_size,
            invocations: limits
                .max_compute_invocations_per_workgroup
                .min(limits.max_compute_workgroup_size_x),
            binding_elements: limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size)
                / 8,
        }
    }

    /// The longest transform one workgroup holds: the policy's element count within the
    /// device's workgroup memory at 4 bytes per element (re and im exchanged in turn).
    pub fn max_workgroup_length(&self, policy: &FftPolicy) -> u32 {
        self.length_for(policy.workgroup_elements)
    }

    fn length_for(&self, elements: u32) -> u32 {
        let by_memory = floor_pow2(self.workgroup_bytes / 4);
        elements.min(by_memory).max(1)
    }

    /// The longest one-pass row axis: the workgroup length, or [`FftPolicy::row_length`].
    pub fn max_row_length(&self, policy: &FftPolicy) -> u32 {
        at_most(policy.row_length, self.max_workgroup_length(policy))
    }

    /// The longest one-pass column axis of a 2-D transform: the workgroup length of
    /// [`FftPolicy::column_elements`], or [`FftPolicy::column_length`].
    pub fn max_column_length(&self, policy: &FftPolicy) -> u32 {
        at_most(
            policy.column_length,
            self.length_for(column_elements(policy)),
        )
    }

    /// The longest power-of-two transform one storage binding holds.
    pub fn max_binding_length(&self) -> u64 {
        if self.binding_elements == 0 {
            0
        } else {
            1 << (63 - self.binding_elements.leading_zeros())
        }
    }
}

fn at_most(knob: u32, max: u32) -> u32 {
    match knob {
        0 => max,
        k => k.min(max),
    }
}

fn column_elements(policy: &FftPolicy) -> u32 {
    match policy.column_elements {
        0 => policy.workgroup_elements,
        e => e,
    }
}

fn floor_pow2(x: u32) -> u32 {
    if x == 0 {
        0
    } else {
        1 << (31 - x.leading_zeros())
    }
}

/// The passes of a transform, in order, and the scratch it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FftPlan {
    /// The passes.
    pub passes: Vec<FftPass>,
    /// Complex elements each pass reads and writes.
    pub elements: u64,
}

impl FftPlan {
    /// Whether any pass touches the scratch buffer.
    pub fn needs_scratch(&self) -> bool {
        self.passes
            .iter()
            .any(|p| p.src == PassBuffer::Scratch || p.dst == PassBuffer::Scratch)
    }
    /// Bytes moved at minimum traffic: every pass reads and writes every complex64 element.
    pub fn bytes_per_pass(&self) -> u64 {
        self.elements * 16
    }
}

/// Why no plan exists (the node turns it into an `AlgorithmError`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// A length is zero or not a power of two.
    NotPowerOfTwo {
        /// Which length.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// An axis is longer than its passes cover: `max` is the cube (rows) or square (columns)
    /// of the one-pass length.
    TooLong {
        /// Which length.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The longest supported.
        max: u64,
    },
    /// An axis is longer than the largest power of two one storage binding holds.
    PastBinding {
        /// Which length.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The longest power of two one binding holds.
        max: u64,
    },
    /// Elements exceed one storage binding or the u32 indices of the kernel.
    TooManyElements {
        /// Total complex elements.
        elements: u64,
        /// The most one binding (and the kernel's indices) hold.
        max: u64,
    },
}

fn check_pow2(what: &'static str, n: u64) -> Result<(), PlanError> {
    if n == 0 || !n.is_power_of_two() {
        return Err(PlanError::NotPowerOfTwo { what, value: n });
    }
    Ok(())
}

/// `n` (a power of two) within one binding and `passes` passes of `max`.
fn check_len(
    what: &'static str,
    n: u64,
    max: u32,
    passes: u32,
    limits: &FftLimits,
) -> Result<u32, PlanError> {
    check_pow2(what, n)?;
    let binding = limits.max_binding_length();
    if n > binding {
        return Err(PlanError::PastBinding {
            what,
            value: n,
            max: binding,
        });
    }
    let cap = u64::from(max).saturating_pow(passes);
    if n > cap {
        return Err(PlanError::TooLong {
            what,
            value: n,
            max: cap,
        });
    }
    u32::try_from(n).map_err(|_| PlanError::TooManyElements {
        elements: n,
        max: max_elements(limits),
    })
}

/// The kernel shape of a length-`length` pass over `seqs` sequences with at most `elements`
/// complex values per workgroup.
pub fn shape(
    length: u32,
    seqs: u32,
    elements: u32,
    limits: &FftLimits,
    policy: &FftPolicy,
) -> KernelShape {
    let max = limits.length_for(elements).max(length);
    let c = (max / length).max(1).min(seqs.max(1).next_power_of_two());
    let e = c * length;
    let t_max = floor_pow2(policy.threads.min(limits.invocations)).max(1);
    let threads = (e / 8).clamp(1, t_max);
    let lg = length.trailing_zeros();
    let first_radix = match lg % 3 {
        _ if length == 1 => 1,
        0 => 8,
        1 => 2,
        _ => 4,
    };
    KernelShape {
        length,
        seqs_per_workgroup: c,
        threads,
        values: e / threads,
        first_radix,
        stages8: (lg - first_radix.trailing_zeros()) / 3,
        packed: e * 8 <= limits.workgroup_bytes,
        swizzle: policy.swizzle,
        interleaved: false,
    }
}

/// The fewest sequences per workgroup an interleaved pass takes: a warp of 32 invocations
/// then spans at most two element positions, so its workgroup-memory accesses conflict at
/// most two-way (fewer sequences do better sequence-major and swizzled).
pub const INTERLEAVE_MIN_SEQS: u32 = 16;

fn assign(axes: Vec<Axis>, elements: u64, limits: &FftLimits, policy: &FftPolicy) -> FftPlan {
    let count = axes.len();
    let mut src = PassBuffer::Input;
    let passes = axes
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            // Ping-pong so that the last pass lands in the output.
            let dst = if (count - 1 - i).is_multiple_of(2) {
                PassBuffer::Output
            } else {
                PassBuffer::Scratch
            };
            let mut shape = shape(a.length, a.seqs, a.elements, limits, policy);
            shape.interleaved = policy.interleave
                && a.input.sequence_fast()
                && a.output.sequence_fast()
                && shape.seqs_per_workgroup >= INTERLEAVE_MIN_SEQS;
            let pass = FftPass {
                length: a.length,
                seqs: a.seqs,
                inner: a.inner,
                outer_count: a.outer_count,
                input: a.input,
                output: a.output,
                twiddle: a.twiddle,
                src,
                dst,
                shape,
            };
            src = dst;
            pass
        })
        .collect();
    FftPlan { passes, elements }
}

/// The most elements a transform may have: one binding, and u32 kernel indices.
fn max_elements(limits: &FftLimits) -> u64 {
    limits.binding_elements.min(u64::from(u32::MAX / 2))
}

fn check_elements(elements: u64, limits: &FftLimits) -> Result<(), PlanError> {
    let max = max_elements(limits);
    if elements > max {
        return Err(PlanError::TooManyElements { elements, max });
    }
    Ok(())
}

/// `batch` transforms of length `length` over contiguous rows: one pass up to the one-pass
/// row length, two up to its square, three up to its cube, within one storage binding.
pub fn plan_1d(
    length: u64,
    batch: u64,
    limits: &FftLimits,
    policy: &FftPolicy,
) -> Result<FftPlan, PlanError> {
    let max = limits.max_row_length(policy);
    let n = check_len("length", length, max, 3, limits)?;
    if batch == 0 {
        return Err(PlanError::NotPowerOfTwo {
            what: "batch",
            value: 0,
        });
    }
    let elements = length.saturating_mul(batch);
    check_elements(elements, limits)?;
    let mut axes = Vec::new();
    row_axes(n, batch as u32, max, policy.workgroup_elements, &mut axes);
    Ok(assign(axes, elements, limits, policy))
}

/// A row-major `height × width` 2-D transform: rows (up to three passes), then columns (up
/// to two; a one-wide field's column is contiguous and planned as a row).
pub fn plan_2d(
    height: u64,
    width: u64,
    limits: &FftLimits,
    policy: &FftPolicy,
) -> Result<FftPlan, PlanError> {
    let max = limits.max_row_length(policy);
    let w = check_len("width", width, max, 3, limits)?;
    let column_max = limits.max_column_length(policy);
    let h = if w == 1 {
        check_len("height", height, max, 3, limits)?
    } else {
        check_len("height", height, column_max, 2, limits)?
    };
    let elements = width * height;
    check_elements(elements, limits)?;
    let mut axes = Vec::new();
    // A length-1 axis is the identity: no pass (unless nothing else would write the output).
    if w > 1 || h == 1 {
        row_axes(w, h, max, policy.workgroup_elements, &mut axes);
    }
    if h > 1 && w == 1 {
        row_axes(h, 1, max, policy.workgroup_elements, &mut axes);
    } else if h > 1 {
        let e = column_elements(policy);
        column_axes(h, w, column_max, policy.column_split, e, &mut axes);
    }
    Ok(assign(axes, elements, limits, policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The H200's binding: 2^31 - 4 bytes, 2^28 - 1 complex64 values.
    const LIMITS: FftLimits = FftLimits {
        workgroup_bytes: 32768,
        invocations: 1024,
        binding_elements: ((1 << 31) - 4) / 8,
    };

    #[test]
    fn two_passes_up_to_the_workgroup_length_four_past_it() {
        let p = FftPolicy::default();
        assert_eq!(LIMITS.max_workgroup_length(&p), 8192);
        let plan = plan_2d(4096, 4096, &LIMITS, &p).unwrap();
        assert_eq!(plan.passes.len(), 2);
        assert_eq!(plan.passes[0].src, PassBuffer::Input);
        assert_eq!(plan.passes[0].dst, PassBuffer::Scratch);
        assert_eq!(plan.passes[1].dst, PassBuffer::Output);
        assert_eq!(plan_2d(8192, 8192, &LIMITS, &p).unwrap().passes.len(), 2);
        let small = FftPolicy {
            workgroup_elements: 4096,
            ..p
        };
        let plan = plan_2d(8192, 8192, &LIMITS, &small).unwrap();
        assert_eq!(plan.passes.len(), 4);
        assert!(plan.needs_scratch());
        assert_eq!(plan.passes[3].dst, PassBuffer::Output);
        assert_eq!(plan.passes[0].dst, PassBuffer::Scratch);
        // Three passes: input → output → scratch → output.
        let plan = plan_2d(16, 8192, &LIMITS, &small).unwrap();
        let dsts: Vec<_> = plan.passes.iter().map(|p| p.dst).collect();
        assert_eq!(
            dsts,
            [PassBuffer::Output, PassBuffer::Scratch, PassBuffer::Output]
        );
        // The kernel divides by shifts: every group size and twiddle period is a power of two.
        for plan in [
            plan_2d(8192, 8192, &LIMITS, &small).unwrap(),
            plan_1d(1 << 20, 3, &LIMITS, &small).unwrap(),
        ] {
            for pass in &plan.passes {
                assert!(pass.inner.is_power_of_two(), "{pass:?}");
                assert!(pass.twiddle.is_none_or(|t| t.0.is_power_of_two()));
            }
        }
        assert_eq!(plan_2d(1, 64, &LIMITS, &p).unwrap().passes.len(), 1);
        let columns = FftPolicy {
            column_length: 1024,
            ..p
        };
        let plan = plan_2d(4096, 4096, &LIMITS, &columns).unwrap();
        assert_eq!(plan.passes.len(), 3);
        assert_eq!(plan.passes[1].length, 64);
        assert_eq!(plan.passes[1].shape.seqs_per_workgroup, 128);
        assert_eq!(plan_2d(64, 1, &LIMITS, &p).unwrap().passes[0].length, 64);
        assert_eq!(plan_2d(1, 1, &LIMITS, &p).unwrap().passes.len(), 1);
        let one = plan_1d(1024, 3, &LIMITS, &p).unwrap();
        assert_eq!(one.passes.len(), 1);
        assert!(!one.needs_scratch());
    }

    /// Simulates a plan's passes on index labels: every pass permutes and transforms, so
    /// check where each pass reads and writes by tracking, per output position, which input
    /// positions of the previous pass it depends on. A real transform is checked on the GPU;
    /// here the addressing alone: each pass reads every element once and writes every
    /// element once.
    fn assert_bijective(plan: &FftPlan) {
        let n = plan.elements as usize;
        for pass in &plan.passes {
            let mut read = vec![false; n];
            let mut written = vec![false; n];
            let address = |l: &Layout, s: u32, k: u32| {
                let i = s & (pass.inner - 1);
                let rest = s / pass.inner;
                let (g, o) = match pass.outer_count {
                    0 => (0, rest),
                    c => (rest / c, rest % c),
                };
                (g * l.group + o * l.outer + i * l.inner_stride + k * l.elem) as usize
            };
            for s in 0..pass.seqs {
                for k in 0..pass.length {
                    let r = address(&pass.input, s, k);
                    let w = address(&pass.output, s, k);
                    assert!(!read[r] && !written[w], "{pass:?}: {s}, {k}");
                    read[r] = true;
                    written[w] = true;
                }
            }
        }
    }

    #[test]
    fn three_passes_past_the_square_up_to_the_binding() {
        let p = FftPolicy::default();
        let plan = plan_1d(1 << 27, 1, &LIMITS, &p).unwrap();
        let lengths: Vec<_> = plan.passes.iter().map(|p| p.length).collect();
        assert_eq!(lengths, [512, 512, 512]);
        assert_eq!(plan.passes[2].outer_count, 512);
        assert_eq!(plan.passes[2].dst, PassBuffer::Output);
        assert_eq!(plan_1d(1 << 26, 2, &LIMITS, &p).unwrap().passes.len(), 2);
        // Forced with a short row length, and one-wide fields planned as rows.
        let rows = FftPolicy {
            row_length: 16,
            ..p
        };
        for (length, batch, passes) in [(1u64 << 12, 3u64, 3usize), (1 << 9, 2, 3), (256, 3, 2)] {
            let plan = plan_1d(length, batch, &LIMITS, &rows).unwrap();
            assert_eq!(plan.passes.len(), passes, "{length}");
            assert_bijective(&plan);
        }
        assert_eq!(plan_2d(1 << 12, 1, &LIMITS, &rows).unwrap().passes.len(), 3);
        let interleaved = FftPolicy {
            interleave: true,
            column_length: 32,
            column_split: 4,
            ..p
        };
        let plan = plan_2d(512, 64, &LIMITS, &interleaved).unwrap();
        let lengths: Vec<_> = plan.passes.iter().map(|p| p.length).collect();
        assert_eq!(lengths, [64, 16, 32]);
        let flags: Vec<_> = plan.passes.iter().map(|p| p.shape.interleaved).collect();
        assert_eq!(flags, [false, true, true]);
        assert_bijective(&plan);
        let colelements = FftPolicy {
            column_elements: 2048,
            column_length: 1024,
            ..p
        };
        let plan = plan_2d(8192, 8192, &LIMITS, &colelements).unwrap();
        assert_eq!(plan.passes[0].shape.seqs_per_workgroup, 1);
        assert!(!plan.passes[0].shape.packed);
        assert_eq!(plan.passes[1].length, 128);
        assert_eq!(plan.passes[1].shape.seqs_per_workgroup, 16);
        assert!(plan.passes[1].shape.packed);
    }

    #[test]
    fn shapes_fill_a_workgroup_and_respect_the_limits() {
        let p = FftPolicy::default();
        for lg in 0..=13u32 {
            for seqs in [1u32, 3, 1000] {
                let s = shape(1 << lg, seqs, p.workgroup_elements, &LIMITS, &p);
                assert_eq!(s.threads * s.values, s.seqs_per_workgroup * s.length);
                assert!(s.threads <= 512 && s.workgroup_bytes() <= LIMITS.workgroup_bytes);
                assert_eq!(s.first_radix * 8u32.pow(s.stages8), s.length, "{s:?}");
                assert!(s.values >= s.first_radix && s.values.is_multiple_of(s.first_radix));
                if s.stages8 > 0 {
                    assert!(s.values.is_multiple_of(8));
                }
            }
        }
    }

    #[test]
    fn bad_sizes_are_refused() {
        let p = FftPolicy::default();
        assert_eq!(
            plan_1d(12, 1, &LIMITS, &p),
            Err(PlanError::NotPowerOfTwo {
                what: "length",
                value: 12
            })
        );
        assert!(matches!(
            plan_2d(4, 0, &LIMITS, &p),
            Err(PlanError::NotPowerOfTwo { what: "width", .. })
        ));
        // 2^28 complex64 values are 2^31 bytes: one more than the binding holds.
        assert_eq!(LIMITS.max_binding_length(), 1 << 27);
        assert!(matches!(
            plan_1d(1 << 28, 1, &LIMITS, &p),
            Err(PlanError::PastBinding { max, .. }) if max == 1 << 27
        ));
        assert!(matches!(
            plan_1d(1 << 20, 1 << 8, &LIMITS, &p),
            Err(PlanError::TooManyElements { max, .. }) if max == (1 << 28) - 1
        ));
        let rows = FftPolicy {
            row_length: 16,
            ..p
        };
        assert!(matches!(
            plan_1d(1 << 13, 1, &LIMITS, &rows),
            Err(PlanError::TooLong { max, .. }) if max == 1 << 12
        ));
        // Columns: two passes at most.
        let columns = FftPolicy {
            column_length: 16,
            ..p
        };
        assert!(matches!(
            plan_2d(1 << 9, 2, &LIMITS, &columns),
            Err(PlanError::TooLong { what: "height", max, .. }) if max == 1 << 8
        ));
    }
}
