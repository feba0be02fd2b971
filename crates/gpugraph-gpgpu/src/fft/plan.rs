//! FFT planning as pure data, unit-tested without a GPU: which passes a transform takes
//! (one per axis up to the workgroup length, a four-step pair past it), how each pass
//! addresses its sequences, and the kernel shape (sequences, invocations and registers per
//! workgroup, radices) each pass compiles to.

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

/// How sequence `s = o · inner + i` finds its element `k`: `o · outer + i · inner_stride +
/// k · elem` (complex elements from the view's first row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Stride between the `inner` sequences of one group.
    pub inner_stride: u32,
    /// Stride between groups.
    pub outer: u32,
    /// Stride between a sequence's elements.
    pub elem: u32,
}

impl Layout {
    const fn new(inner_stride: u32, outer: u32, elem: u32) -> Self {
        Self {
            inner_stride,
            outer,
            elem,
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
    /// Sequences per group (`s = o · inner + i`).
    pub inner: u32,
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
}

impl FftLimits {
    /// The limits of `limits`.
    pub fn of(limits: &gpugraph_command::wgpu::Limits) -> Self {
        Self {
            workgroup_bytes: limits.max_compute_workgroup_storage_size,
            invocations: limits
                .max_compute_invocations_per_workgroup
                .min(limits.max_compute_workgroup_size_x),
        }
    }

    /// The longest transform one workgroup holds: the policy's element count within the
    /// device's workgroup memory at 4 bytes per element (re and im exchanged in turn).
    pub fn max_workgroup_length(&self, policy: &FftPolicy) -> u32 {
        let by_memory = floor_pow2(self.workgroup_bytes / 4);
        policy.workgroup_elements.min(by_memory).max(1)
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
    /// An axis is longer than two workgroup passes cover (`max`² with `max` the workgroup
    /// length).
    TooLong {
        /// Which length.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The longest supported.
        max: u64,
    },
    /// Elements exceed the u32 indices of the kernel.
    TooManyElements {
        /// Total complex elements.
        elements: u64,
    },
}

/// One axis transform before buffers are assigned.
struct Axis {
    length: u32,
    seqs: u32,
    inner: u32,
    input: Layout,
    output: Layout,
    twiddle: Option<(u32, bool)>,
}

fn check_len(what: &'static str, n: u64, max: u32) -> Result<u32, PlanError> {
    if n == 0 || !n.is_power_of_two() {
        return Err(PlanError::NotPowerOfTwo { what, value: n });
    }
    let cap = u64::from(max) * u64::from(max);
    if n > cap {
        return Err(PlanError::TooLong {
            what,
            value: n,
            max: cap,
        });
    }
    Ok(n as u32)
}

fn split(n: u32) -> (u32, u32) {
    let lg = n.trailing_zeros();
    let n1 = 1u32 << lg.div_ceil(2);
    (n1, n / n1)
}

/// Transforms of contiguous rows: `batch` rows of length `n`.
fn row_axes(n: u32, batch: u32, max: u32, out: &mut Vec<Axis>) {
    if n <= max {
        out.push(Axis {
            length: n,
            seqs: batch,
            inner: 1,
            input: Layout::new(0, n, 1),
            output: Layout::new(0, n, 1),
            twiddle: None,
        });
        return;
    }
    // Four-step: each row as an n1 × n2 matrix; columns (stride n2), twiddle by column, then
    // rows written transposed so X[k1 + n1·k2] lands in natural order.
    let (n1, n2) = split(n);
    out.push(Axis {
        length: n1,
        seqs: batch * n2,
        inner: n2,
        input: Layout::new(1, n, n2),
        output: Layout::new(1, n, n2),
        twiddle: Some((n, false)),
    });
    out.push(Axis {
        length: n2,
        seqs: batch * n1,
        inner: n1,
        input: Layout::new(n2, n, 1),
        output: Layout::new(1, n, n1),
        twiddle: None,
    });
}

/// Transforms of the `w` columns (length `h`) of a row-major `h × w` matrix.
fn column_axes(h: u32, w: u32, max: u32, out: &mut Vec<Axis>) {
    if h <= max {
        out.push(Axis {
            length: h,
            seqs: w,
            inner: w,
            input: Layout::new(1, 0, w),
            output: Layout::new(1, 0, w),
            twiddle: None,
        });
        return;
    }
    let (h1, h2) = split(h);
    out.push(Axis {
        length: h1,
        seqs: w * h2,
        inner: w,
        input: Layout::new(1, w, h2 * w),
        output: Layout::new(1, w, h2 * w),
        twiddle: Some((h, true)),
    });
    out.push(Axis {
        length: h2,
        seqs: w * h1,
        inner: w,
        input: Layout::new(1, h2 * w, w),
        output: Layout::new(1, w, h1 * w),
        twiddle: None,
    });
}

/// The kernel shape of a length-`length` pass over `seqs` sequences.
pub fn shape(length: u32, seqs: u32, limits: &FftLimits, policy: &FftPolicy) -> KernelShape {
    let max = limits.max_workgroup_length(policy);
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
    }
}

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
            let pass = FftPass {
                length: a.length,
                seqs: a.seqs,
                inner: a.inner,
                input: a.input,
                output: a.output,
                twiddle: a.twiddle,
                src,
                dst,
                shape: shape(a.length, a.seqs, limits, policy),
            };
            src = dst;
            pass
        })
        .collect();
    FftPlan { passes, elements }
}

fn check_elements(elements: u64) -> Result<(), PlanError> {
    if elements > u64::from(u32::MAX / 2) {
        return Err(PlanError::TooManyElements { elements });
    }
    Ok(())
}

/// `batch` transforms of length `length` over contiguous rows.
pub fn plan_1d(
    length: u64,
    batch: u64,
    limits: &FftLimits,
    policy: &FftPolicy,
) -> Result<FftPlan, PlanError> {
    let max = limits.max_workgroup_length(policy);
    let n = check_len("length", length, max)?;
    if batch == 0 {
        return Err(PlanError::NotPowerOfTwo {
            what: "batch",
            value: 0,
        });
    }
    let elements = length.saturating_mul(batch);
    check_elements(elements)?;
    let mut axes = Vec::new();
    row_axes(n, batch as u32, max, &mut axes);
    Ok(assign(axes, elements, limits, policy))
}

/// A row-major `height × width` 2-D transform: rows, then columns.
pub fn plan_2d(
    height: u64,
    width: u64,
    limits: &FftLimits,
    policy: &FftPolicy,
) -> Result<FftPlan, PlanError> {
    let max = limits.max_workgroup_length(policy);
    let w = check_len("width", width, max)?;
    let column_max = match policy.column_length {
        0 => max,
        c => c.min(max),
    };
    let h = check_len("height", height, column_max)?;
    let elements = width * height;
    check_elements(elements)?;
    let mut axes = Vec::new();
    // A length-1 axis is the identity: no pass (unless nothing else would write the output).
    if w > 1 || h == 1 {
        row_axes(w, h, max, &mut axes);
    }
    if h > 1 {
        let columns = match policy.column_length {
            0 => max,
            c => c.min(max),
        };
        column_axes(h, w, columns, &mut axes);
    }
    Ok(assign(axes, elements, limits, policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: FftLimits = FftLimits {
        workgroup_bytes: 32768,
        invocations: 1024,
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

    #[test]
    fn shapes_fill_a_workgroup_and_respect_the_limits() {
        let p = FftPolicy::default();
        for lg in 0..=13u32 {
            for seqs in [1u32, 3, 1000] {
                let s = shape(1 << lg, seqs, &LIMITS, &p);
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
        assert!(matches!(
            plan_1d(1 << 27, 1, &LIMITS, &p),
            Err(PlanError::TooLong { max, .. }) if max == 1 << 26
        ));
        assert!(matches!(
            plan_1d(1 << 20, 1 << 12, &LIMITS, &p),
            Err(PlanError::TooManyElements { .. })
        ));
    }
}
