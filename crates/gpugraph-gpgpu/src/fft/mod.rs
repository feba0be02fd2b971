//! Complex fast Fourier transforms over caller-owned GPU buffers: [`Fft1d`] (batched rows)
//! and [`Fft2d`] (a row-major field), forward and inverse, out of place, power-of-two
//! lengths. Values are complex64: one packed `Float32x2` row per value, real then imaginary.
//!
//! Design (spec: luma.gl's GPUFFT1D / GPUFFT2D contract, our own kernels): a transform is a few
//! passes, not `log2 n` passes per axis. Each pass ([`plan::FftPass`]) is one declared dispatch
//! node of `fft/fft.wgsl` in which every workgroup transforms whole sequences in registers and
//! workgroup memory (Stockham auto-sort, radix-8 butterflies in registers, one radix-2/4 stage
//! where `log2 n` is not a multiple of 3, twiddles from `cos`/`sin` of exactly reduced angles),
//! reading and writing each element once. An axis up to the workgroup length
//! ([`plan::FftLimits::max_workgroup_length`], 8192 with 32 KiB of workgroup memory) is one
//! pass; a longer one is a four-step pair (strided sub-transforms with their twiddle, then
//! contiguous ones written transposed), and a row longer than the square of the workgroup
//! length three passes (the second half of the pair is itself a four-step pair, its last
//! pass addressing sequences by a three-level index), up to the largest power of two one
//! storage binding holds (2^27 complex64 values in NVIDIA's 2^31 - 4 byte binding; past it a
//! named `DeviceLimit` error). So a 2-D transform of n ≤ 8192 is 2 passes, and 4 up to the
//! square of the workgroup length. Strided column passes give adjacent invocations adjacent
//! columns so their loads and stores coalesce.
//!
//! Tunables ([`FftPolicy`], `key=value` as the bench's `--fft-policy`): `elements` (values per
//! workgroup, default 8192), `threads` (default 512), `swizzle` (workgroup memory permuted
//! against bank conflicts) and `columns` (the longest one-pass column axis: longer columns
//! take a four-step pair with more adjacent columns per workgroup), `rows` (the longest
//! one-pass row: lets tests force the multi-pass row paths at small sizes), `split` (the
//! first factor of a four-step column pair), `interleave` (strided passes with element-major
//! workgroup memory, free of bank conflicts) and `colelements` (values per workgroup of the
//! column passes: 4096 fit both halves of each value in 48 KiB). Each pass reads and writes
//! `16 B` per element ([`FftPlan::bytes_per_pass`]).
//!
//! Conventions: forward `X[k] = Σ x[j] e^{-2πi jk/n}`, unscaled; inverse `e^{+2πi jk/n}` and
//! scaled by `1/n` (`1/(width·height)` in 2-D), so forward then inverse is the identity. The
//! transform owns one scratch transient (`{id}/scratch`, as large as the data, created only
//! when a plan has more than one pass; the graph may share it with transients of disjoint
//! lifetimes) and records nothing but its dispatch nodes: no submission, no readback.
//! Non-power-of-two lengths are refused (Bluestein is not implemented).

mod axes;
pub mod cpu;
mod node;
pub mod plan;
mod policy;

pub use node::{Fft1d, Fft2d};
pub use plan::{FftLimits, FftPass, FftPlan, KernelShape, PassBuffer};
pub use policy::FftPolicy;

/// Transform direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftDirection {
    /// `e^{-2πi jk/n}`, unscaled.
    Forward,
    /// `e^{+2πi jk/n}`, scaled by `1/n`.
    Inverse,
}
