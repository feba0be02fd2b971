//! `bench fft`: 2-D complex64 forward FFTs of square `2^k × 2^k` fields (`--sizes` counts
//! elements, so 2^24 is 4096², 2^26 is 8192²), checked once, then timed like every
//! throughput case.
//!
//! Traffic: each pass reads and writes every element once (16 B per element per pass), so the
//! `fft2d-forward` row counts `16 × passes` bytes per element against the copy floor of that
//! traffic, and its `[1r1w]` twin counts 16 B: its `x floor` is the time of one read and one
//! write of the field over ours, the ratio to an ideal one-pass FFT. Per-pass node times
//! against their own 16 B floors follow in the node table. Peer: `torch.fft.fft2` (cuFFT),
//! `bench/peers/peers_fft.py`, op `fft2d-forward`. `--fft-policy elements=4096,threads=256`
//! adds kernel variants (`fft2d-forward[elements=4096,threads=256]`; `swizzle=1` permutes
//! workgroup memory against bank conflicts; `columns=1024` does 4096-long columns as a
//! four-step pair of 64-long ones, 128 adjacent columns per workgroup: 3 passes, all coalesced;
//! `interleave=1` stores the strided passes' workgroup memory element-major, free of bank
//! conflicts; `split=64` picks the first factor of the column pair; `colelements=4096` sizes
//! the column passes' workgroups apart from the rows'; `rows=N` shortens one-pass rows).
//! The progress line lists every pass (length, sequences per workgroup, invocations, values
//! per invocation, memory layout) and the bytes it moves; the node table gives each pass's
//! time against the copy floor of those bytes.

use anyhow::{bail, Context, Result};
use clap::Args;
use gpugraph_command::{CommandGraph, VectorFormat};
use gpugraph_gpgpu::fft::cpu;
use gpugraph_gpgpu::{Fft2d, FftDirection, FftPolicy};
use rand::{Rng, SeedableRng};

use super::primitives::{Case, PrimitiveArgs};
use crate::gpu::{import_as, Gpu};

/// Arguments of `bench fft`.
#[derive(Args, Clone, Debug)]
pub struct FftBenchArgs {
    /// FFT kernel variants to compare in one run: comma-separated `key=value` over the
    /// default policy, keys `elements` (complex values per workgroup), `threads` and
    /// `swizzle` (0/1: workgroup memory permuted against bank conflicts), `columns` (longest
    /// one-pass column axis; longer ones take a coalesced four-step pair), `split` (first
    /// factor of that pair), `interleave` (0/1: element-major workgroup memory in strided
    /// passes), `colelements` (values per workgroup of column passes), `rows` (longest
    /// one-pass row), or `default` (the device's policy); repeatable.
    #[arg(long = "fft-policy", value_name = "SPEC")]
    pub fft_policies: Vec<String>,
    #[command(flatten)]
    pub base: PrimitiveArgs,
}

/// The op name the peer rows share.
pub const OP: &str = "fft2d-forward";

/// Largest field checked against the f64 oracle; larger ones are checked against a closed
/// form (a sum of two tones, O(n)).
const ORACLE_MAX: u64 = 1 << 22;

/// `(policy, label)` of each `--fft-policy` (the default alone when none is given).
pub fn variants(specs: &[String]) -> Result<Vec<(FftPolicy, String)>> {
    if specs.is_empty() {
        return Ok(vec![(FftPolicy::default(), String::new())]);
    }
    specs
        .iter()
        .map(|spec| {
            if spec.trim() == "default" {
                return Ok((FftPolicy::default(), String::new()));
            }
            let p: FftPolicy = spec
                .parse()
                .map_err(|e| anyhow::anyhow!("--fft-policy '{spec}': {e}"))?;
            Ok((p, format!("[{spec}]")))
        })
        .collect()
}

/// Bytes per element a pass node moves (read and write complex64), for the node table.
pub fn node_bytes(_op: &str, node: &str) -> Option<f64> {
    node.rsplit_once("/pass").map(|_| 16.0)
}

/// Checks a transformed field (interleaved f32) against what it must be.
type FieldCheck = Box<dyn Fn(&[f32]) -> Result<()>>;

/// Input field and the check of the output of an `side × side` forward transform.
fn field(n: u64, side: usize) -> (Vec<f32>, FieldCheck) {
    let tolerance = move |max: f64| 8.0 * f64::from(f32::EPSILON) / 2.0 * (n as f64).log2() * max;
    if n <= ORACLE_MAX {
        let mut rng = rand::rngs::StdRng::seed_from_u64(16);
        let x: Vec<f32> = (0..2 * n).map(|_| rng.random_range(-1.0..1.0)).collect();
        let want = cpu::fft2d(&cpu::from_interleaved(&x), side, side, false);
        let max = want.iter().map(|v| v[0].hypot(v[1])).fold(0.0, f64::max);
        let check = move |got: &[f32]| compare(got, |i| want[i], tolerance(max));
        return (x, Box::new(check));
    }
    // e^{2πi(3r + 5c)/side} + 0.5 e^{-2πi(7r)/side}: bins (3, 5) = n and (side-7, 0) = n/2.
    let tau = std::f64::consts::TAU;
    let s = side as f64;
    let mut x = Vec::with_capacity(2 * n as usize);
    for r in 0..side {
        for c in 0..side {
            let a = tau * ((3 * r + 5 * c) % side) as f64 / s;
            let b = -tau * ((7 * r) % side) as f64 / s;
            x.push((a.cos() + 0.5 * b.cos()) as f32);
            x.push((a.sin() + 0.5 * b.sin()) as f32);
        }
    }
    let want = move |i: usize| {
        let nf = n as f64;
        if i == 3 * side + 5 {
            [nf, 0.0]
        } else if i == (side - 7) * side {
            [nf / 2.0, 0.0]
        } else {
            [0.0, 0.0]
        }
    };
    // The f32 rounding of the inputs spreads into every bin: allow it on top.
    let tol = tolerance(n as f64) + 4.0 * f64::from(f32::EPSILON) * n as f64;
    (x, Box::new(move |got: &[f32]| compare(got, want, tol)))
}

fn compare(got: &[f32], want: impl Fn(usize) -> [f64; 2], tol: f64) -> Result<()> {
    for (i, g) in got.chunks_exact(2).enumerate() {
        let w = want(i);
        let err = (f64::from(g[0]) - w[0])
            .abs()
            .max((f64::from(g[1]) - w[1]).abs());
        if err.is_nan() || err > tol {
            bail!("value {i} is {g:?}, want {w:?} (error {err:e} > {tol:e})");
        }
    }
    Ok(())
}

/// `bench fft` cases at `n` elements: per variant the forward transform with its pass
/// traffic and the same transform counted at one read and one write (`[1r1w]`).
pub fn cases(gpu: &Gpu, n: u64, variants: &[(FftPolicy, String)]) -> Result<Vec<Case>> {
    let lg = n.trailing_zeros();
    if !n.is_power_of_two() || !lg.is_multiple_of(2) {
        bail!("bench fft: --sizes {n} must be a square 2^(2k) (2^24 = 4096², 2^26 = 8192²)");
    }
    let side = 1usize << (lg / 2);
    let (x, check) = field(n, side);
    let check = std::rc::Rc::new(check);
    let words: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
    let in_buf = gpu.upload("fft-input", &words);
    drop(words);
    let mut cases = Vec::new();
    for (policy, label) in variants {
        // The unlabelled variant is what a plain `add_to_graph` gets on this device.
        let device_policy = FftPolicy::for_device(gpu.device());
        let policy = if label.is_empty() {
            &device_policy
        } else {
            policy
        };
        let out = gpu.upload("fft-output", &vec![0xDEAD_BEEF; 2 * n as usize]);
        let out = std::rc::Rc::new(out);
        for ideal in [false, true] {
            let mut g = CommandGraph::new("bench-fft", gpu.device());
            let input = import_as(&mut g, "in", &in_buf, VectorFormat::Float32x2, n)?;
            let output = import_as(&mut g, "out", &out, VectorFormat::Float32x2, n)?;
            let plan = Fft2d {
                id: "fft2d".into(),
                input,
                output,
                width: side as u64,
                height: side as u64,
                direction: FftDirection::Forward,
            }
            .add_to_graph_with(&mut g, policy)?;
            let passes = plan.passes.len() as f64;
            let op = if ideal {
                format!("{OP}{label}[1r1w]")
            } else {
                format!("{OP}{label}")
            };
            if !ideal {
                let shapes: Vec<String> = plan
                    .passes
                    .iter()
                    .map(|p| {
                        let s = p.shape;
                        format!(
                            "L={} C={} T={} V={}{}{}",
                            s.length,
                            s.seqs_per_workgroup,
                            s.threads,
                            s.values,
                            if s.packed { "" } else { " split" },
                            if s.interleaved { " interleaved" } else { "" }
                        )
                    })
                    .collect();
                crate::output::progress(format_args!(
                    "bench fft: {side}×{side}{label}: {passes} passes of {} MB each ({})",
                    plan.bytes_per_pass() / 1_000_000,
                    shapes.join("; ")
                ));
            }
            let (check, out) = (check.clone(), out.clone());
            cases.push(Case {
                op: op.clone(),
                bytes_per_element: if ideal { 16.0 } else { 16.0 * passes },
                written_bytes_per_element: if ideal { 8.0 } else { 8.0 * passes },
                graph: g.compile()?,
                check: Box::new(move |gpu| {
                    let words = gpu.read_back(&out, 2 * n)?;
                    let got: Vec<f32> = words.iter().map(|w| f32::from_bits(*w)).collect();
                    check(&got).with_context(|| op.clone())
                }),
            });
        }
    }
    Ok(cases)
}
