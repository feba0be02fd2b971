//! Fft1d / Fft2d on the GPU vs the f64 oracle (`fft::cpu`) and closed forms.
//!
//! Tolerance: every component within `8 ulps(f32) × max(1, log2 n) × max |X|` of the f64
//! result (`n` the transform length, or width·height in 2-D; `max |X|` the largest output
//! magnitude): a radix-8 FFT adds a few roundings per stage, log2(n)/3 stages per axis.
//! Covered: every power-of-two row length 1..=8192 (batched, forward and inverse), the
//! four-step passes (forced with a small workgroup policy), three-pass rows past the square
//! of the one-pass length (forced with `rows=16` or a 64-value workgroup; the longest row the
//! device binds on a GPU, 2^21 on a CPU adapter), every policy variant (`interleave`,
//! `split`, `colelements`) against the oracle, non-square 2-D fields (16×256,
//! 512×8, ...), forward∘inverse in one graph, impulses and single tones (exact bins), views at
//! row offsets with poisoned outputs and guard rows, closed-form held-out fields, and every
//! typed error.

mod common;

use common::*;
use gpugraph_command::wgpu;
use gpugraph_command::{CommandGraph, DataView, GpuContext, VectorFormat as F};
use gpugraph_gpgpu::fft::{cpu, FftDirection, FftLimits, FftPlan, FftPolicy};
use gpugraph_gpgpu::{AlgorithmError, Fft1d, Fft2d};
use rand::Rng;

const ULPS: f64 = 8.0;

/// Forces four-step passes past 64 values with lavapipe-sized inputs (and swizzled
/// workgroup memory, so both layouts are covered).
const SMALL: FftPolicy = FftPolicy {
    workgroup_elements: 64,
    threads: 16,
    swizzle: true,
    ..FftPolicy::DEFAULT
};

fn words(x: &[[f64; 2]]) -> Vec<u32> {
    x.iter()
        .flat_map(|v| [(v[0] as f32).to_bits(), (v[1] as f32).to_bits()])
        .collect()
}

fn random(r: &mut impl Rng, n: usize) -> Vec<[f64; 2]> {
    (0..n)
        .map(|_| {
            [
                r.random_range(-1.0f32..1.0) as f64,
                r.random_range(-1.0f32..1.0) as f64,
            ]
        })
        .collect()
}

/// Asserts `got` (interleaved f32 words) matches `want` within the stated tolerance.
fn check(got: &[u32], want: &[[f64; 2]], n: u64, label: &str) {
    let max = want
        .iter()
        .map(|v| v[0].hypot(v[1]))
        .fold(0.0f64, f64::max)
        .max(1e-30);
    let tol = ULPS * f64::from(f32::EPSILON) / 2.0 * (n.max(2) as f64).log2() * max;
    assert_eq!(got.len(), want.len() * 2, "{label}: length");
    for (i, w) in want.iter().enumerate() {
        let g = [
            f32::from_bits(got[2 * i]) as f64,
            f32::from_bits(got[2 * i + 1]) as f64,
        ];
        let err = (g[0] - w[0]).abs().max((g[1] - w[1]).abs());
        assert!(
            err <= tol,
            "{label}: value {i} is {g:?}, want {w:?} (error {err:e} > {tol:e})"
        );
    }
}

enum Shape {
    Rows { length: u64, batch: u64 },
    Field { height: u64, width: u64 },
}

impl Shape {
    fn elements(&self) -> u64 {
        match *self {
            Shape::Rows { length, batch } => length * batch,
            Shape::Field { height, width } => height * width,
        }
    }
    fn oracle(&self, x: &[[f64; 2]], inverse: bool) -> Vec<[f64; 2]> {
        match *self {
            Shape::Rows { length, .. } => cpu::fft_rows(x, length as usize, inverse),
            Shape::Field { height, width } => {
                cpu::fft2d(x, height as usize, width as usize, inverse)
            }
        }
    }
    fn tolerance_n(&self) -> u64 {
        match *self {
            Shape::Rows { length, .. } => length,
            Shape::Field { height, width } => height * width,
        }
    }
    fn add(
        &self,
        g: &mut CommandGraph,
        id: &str,
        input: DataView,
        output: DataView,
        direction: FftDirection,
        policy: &FftPolicy,
    ) -> Result<FftPlan, AlgorithmError> {
        match *self {
            Shape::Rows { length, batch } => Fft1d {
                id: id.into(),
                input,
                output,
                length,
                batch,
                direction,
            }
            .add_to_graph_with(g, policy),
            Shape::Field { height, width } => Fft2d {
                id: id.into(),
                input,
                output,
                width,
                height,
                direction,
            }
            .add_to_graph_with(g, policy),
        }
    }
}

/// Runs one transform of `x` with the input at row `in_at` and the output at row `out_at`
/// of poisoned buffers with guard rows; checks the guards and returns the output words and
/// the plan.
fn run_fft(
    ctx: &GpuContext,
    shape: &Shape,
    x: &[[f64; 2]],
    direction: FftDirection,
    policy: &FftPolicy,
    (in_at, out_at): (u64, u64),
) -> (Vec<u32>, FftPlan) {
    let n = shape.elements();
    let mut input = vec![POISON; 2 * in_at as usize];
    input.extend(words(x));
    input.extend([POISON; 6]);
    let in_buf = upload(ctx, &input);
    let out_rows = out_at + n + 3;
    let out_buf = upload(ctx, &vec![POISON; 2 * out_rows as usize]);
    let mut g = CommandGraph::new("fft", &ctx.device);
    let i = import_typed(&mut g, "in", &in_buf, F::Float32x2, in_at, n);
    let o = import_typed(&mut g, "out", &out_buf, F::Float32x2, out_at, n);
    let plan = shape.add(&mut g, "fft", i, o, direction, policy).unwrap();
    run(ctx, g);
    let out = read_buffer(ctx, &out_buf);
    let (lo, hi) = (2 * out_at as usize, 2 * (out_at + n) as usize);
    assert!(
        out[..lo].iter().all(|&w| w == POISON),
        "rows before the output written"
    );
    assert!(
        out[hi..].iter().all(|&w| w == POISON),
        "rows after the output written"
    );
    assert_eq!(read_buffer(ctx, &in_buf), input, "input changed");
    (out[lo..hi].to_vec(), plan)
}

fn compare(ctx: &GpuContext, shape: Shape, policy: &FftPolicy, seed: u64, label: &str) {
    let mut r = rng(seed);
    let x = random(&mut r, shape.elements() as usize);
    for direction in [FftDirection::Forward, FftDirection::Inverse] {
        let inverse = direction == FftDirection::Inverse;
        let at = (r.random_range(0..4), r.random_range(0..4));
        let (got, _) = run_fft(ctx, &shape, &x, direction, policy, at);
        let want = shape.oracle(&x, inverse);
        check(
            &got,
            &want,
            shape.tolerance_n(),
            &format!("{label} {direction:?}"),
        );
    }
}

#[test]
fn rows_of_every_power_of_two_length_match_the_oracle() {
    let ctx = ctx();
    let swizzled = FftPolicy {
        swizzle: true,
        ..FftPolicy::default()
    };
    for lg in 0..=13u32 {
        let length = 1u64 << lg;
        for batch in [1u64, 3] {
            let shape = Shape::Rows { length, batch };
            let label = format!("rows {length} × {batch}");
            compare(&ctx, shape, &FftPolicy::default(), lg as u64, &label);
        }
        let shape = Shape::Rows { length, batch: 2 };
        compare(
            &ctx,
            shape,
            &swizzled,
            99,
            &format!("swizzled rows {length}"),
        );
    }
}

#[test]
fn four_step_rows_and_fields_match_the_oracle() {
    let ctx = ctx();
    for (length, batch, passes) in [(128u64, 3u64, 2usize), (512, 1, 2), (4096, 2, 2)] {
        let shape = Shape::Rows { length, batch };
        let mut r = rng(length);
        let x = random(&mut r, (length * batch) as usize);
        let (got, plan) = run_fft(&ctx, &shape, &x, FftDirection::Forward, &SMALL, (1, 2));
        assert_eq!(plan.passes.len(), passes, "rows {length}");
        check(
            &got,
            &shape.oracle(&x, false),
            length,
            &format!("four-step rows {length}"),
        );
    }
    // Short columns only: rows in one pass, columns as a four-step pair.
    let columns = FftPolicy {
        column_length: 32,
        ..FftPolicy::default()
    };
    for (height, width, passes, policy) in [
        (128u64, 256u64, 4usize, SMALL),
        (8, 512, 3, SMALL),
        (512, 8, 3, SMALL),
        (512, 64, 3, columns),
    ] {
        let shape = Shape::Field { height, width };
        let mut r = rng(height + width);
        let x = random(&mut r, (height * width) as usize);
        for direction in [FftDirection::Forward, FftDirection::Inverse] {
            let (got, plan) = run_fft(&ctx, &shape, &x, direction, &policy, (0, 1));
            assert_eq!(plan.passes.len(), passes, "{height}×{width}");
            let want = shape.oracle(&x, direction == FftDirection::Inverse);
            check(
                &got,
                &want,
                height * width,
                &format!("four-step {height}×{width}"),
            );
        }
    }
}

#[test]
fn three_pass_rows_match_the_oracle() {
    let ctx = ctx();
    let rows16 = FftPolicy {
        row_length: 16,
        ..FftPolicy::default()
    };
    let interleaved = FftPolicy {
        interleave: true,
        ..rows16
    };
    for (length, batch, policy) in [
        (1u64 << 12, 3u64, rows16),
        (1 << 9, 2, rows16),
        (1 << 13, 2, SMALL),
        (1 << 12, 2, interleaved),
        (1 << 18, 1, SMALL),
    ] {
        let shape = Shape::Rows { length, batch };
        let mut r = rng(length + batch);
        let x = random(&mut r, (length * batch) as usize);
        for direction in [FftDirection::Forward, FftDirection::Inverse] {
            let (got, plan) = run_fft(&ctx, &shape, &x, direction, &policy, (3, 1));
            assert_eq!(plan.passes.len(), 3, "rows {length}");
            let interleaved: Vec<_> = plan.passes.iter().map(|p| p.shape.interleaved).collect();
            assert_eq!(interleaved, [policy.interleave, policy.interleave, false]);
            let want = shape.oracle(&x, direction == FftDirection::Inverse);
            check(
                &got,
                &want,
                length,
                &format!("three-pass rows {length} × {batch} {direction:?}"),
            );
        }
    }
    // A one-wide field's column is a contiguous row: three passes too.
    let shape = Shape::Field {
        height: 1 << 12,
        width: 1,
    };
    let x = random(&mut rng(41), 1 << 12);
    let (got, plan) = run_fft(&ctx, &shape, &x, FftDirection::Forward, &rows16, (0, 0));
    assert_eq!(plan.passes.len(), 3);
    check(&got, &shape.oracle(&x, false), 1 << 12, "4096 × 1 field");
}

/// The longest row the device binds (2^27 complex64 values on an H200), two tones against
/// their closed form (the O(n log n) oracle is too slow there); on a CPU adapter 2^21 values
/// forced through three passes with `rows=128`.
#[test]
fn the_longest_bound_row_matches_two_tones() {
    let ctx = ctx();
    let cpu_adapter = ctx.adapter.get_info().device_type == wgpu::DeviceType::Cpu;
    let (length, policy) = if cpu_adapter {
        let rows = FftPolicy {
            row_length: 128,
            ..FftPolicy::default()
        };
        (1u64 << 21, rows)
    } else {
        let binding = FftLimits::of(&ctx.device.limits()).max_binding_length();
        (binding, FftPolicy::for_device(&ctx.device))
    };
    let n = length as usize;
    // e^{+2πi f1 j/n} + 0.5 e^{-2πi f2 j/n}: bins f1 = n and n - f2 = n/2; f1 has a nonzero
    // digit in every factor of the decomposition.
    let (f1, f2) = ((0x5a5_a5a5 % n) | 1, (0x123_4567 % n) | 2);
    let tau = std::f64::consts::TAU;
    let x: Vec<[f64; 2]> = (0..n)
        .map(|j| {
            let a = tau * ((f1 * j) % n) as f64 / n as f64;
            let b = -tau * ((f2 * j) % n) as f64 / n as f64;
            [
                (a.cos() + 0.5 * b.cos()) as f32 as f64,
                (a.sin() + 0.5 * b.sin()) as f32 as f64,
            ]
        })
        .collect();
    let shape = Shape::Rows { length, batch: 1 };
    let (got, plan) = run_fft(&ctx, &shape, &x, FftDirection::Forward, &policy, (0, 1));
    let one_pass = u64::from(FftLimits::of(&ctx.device.limits()).max_row_length(&policy));
    assert!(
        length > one_pass * one_pass,
        "{length} must take three passes"
    );
    assert_eq!(plan.passes.len(), 3, "{length}");
    drop(x);
    let eps = f64::from(f32::EPSILON);
    let nf = n as f64;
    // The stated tolerance, plus the f32 rounding of the inputs spread over every bin.
    let tol = ULPS * eps / 2.0 * nf.log2() * nf + 4.0 * eps * nf.sqrt();
    for (i, g) in got.chunks_exact(2).enumerate() {
        let g = [f32::from_bits(g[0]) as f64, f32::from_bits(g[1]) as f64];
        let w = if i == f1 {
            nf
        } else if i == n - f2 {
            nf / 2.0
        } else {
            0.0
        };
        let err = (g[0] - w).abs().max(g[1].abs());
        assert!(
            err <= tol,
            "{length}: bin {i} is {g:?}, want {w} (error {err:e})"
        );
    }
}

#[test]
fn policy_variants_match_the_oracle() {
    let ctx = ctx();
    let columns = |column_length, column_split, column_elements| FftPolicy {
        interleave: true,
        column_length,
        column_split,
        column_elements,
        ..FftPolicy::default()
    };
    // (height, width, policy, which passes interleave)
    let cases: [(u64, u64, FftPolicy, &[bool]); 7] = [
        (512, 64, columns(32, 0, 0), &[false, true, true]),
        (512, 64, columns(32, 4, 0), &[false, true, true]),
        (512, 64, columns(32, 64, 0), &[false, true, true]),
        (1024, 32, columns(64, 0, 512), &[false, true, true]),
        (256, 16, columns(0, 0, 1024), &[false, false]),
        (256, 64, columns(0, 0, 4096), &[false, true]),
        // Four sequences per workgroup: sequence-major even when asked.
        (8, 512, columns(0, 0, 32), &[false, false]),
    ];
    for (height, width, policy, interleaved) in cases {
        let shape = Shape::Field { height, width };
        let x = random(&mut rng(height * 3 + width), (height * width) as usize);
        for direction in [FftDirection::Forward, FftDirection::Inverse] {
            let (got, plan) = run_fft(&ctx, &shape, &x, direction, &policy, (1, 2));
            let label = format!("{height}×{width} {policy:?} {direction:?}");
            let flags: Vec<_> = plan.passes.iter().map(|p| p.shape.interleaved).collect();
            assert_eq!(flags, interleaved, "{label}");
            let want = shape.oracle(&x, direction == FftDirection::Inverse);
            check(&got, &want, height * width, &label);
        }
    }
}

#[test]
fn non_square_fields_match_the_oracle() {
    let ctx = ctx();
    for (height, width) in [
        (16u64, 256u64),
        (512, 8),
        (64, 64),
        (1, 8),
        (8, 1),
        (2, 2048),
    ] {
        let shape = Shape::Field { height, width };
        compare(
            &ctx,
            shape,
            &FftPolicy::default(),
            height * 7 + width,
            &format!("{height}×{width}"),
        );
    }
}

/// Workgroup grids split over x and y past the per-dimension limit; the kernel's linear
/// workgroup id must still cover every sequence once.
#[test]
fn split_dispatch_grids_cover_every_sequence() {
    let ctx = ctx_with_max_dispatch(8);
    for shape in [
        Shape::Rows {
            length: 16,
            batch: 60,
        },
        Shape::Field {
            height: 128,
            width: 32,
        },
    ] {
        let x = random(&mut rng(5), shape.elements() as usize);
        let (got, _) = run_fft(&ctx, &shape, &x, FftDirection::Forward, &SMALL, (2, 1));
        check(
            &got,
            &shape.oracle(&x, false),
            shape.tolerance_n(),
            "split grid",
        );
    }
}

#[test]
fn forward_then_inverse_in_one_graph_is_the_identity() {
    let ctx = ctx();
    for (height, width, policy) in [(32u64, 64u64, FftPolicy::default()), (256, 128, SMALL)] {
        let n = height * width;
        let x = random(&mut rng(n), n as usize);
        let in_buf = upload(&ctx, &words(&x));
        let mid = upload(&ctx, &vec![POISON; 2 * n as usize]);
        let out = upload(&ctx, &vec![POISON; 2 * n as usize]);
        let mut g = CommandGraph::new("fft", &ctx.device);
        let i = import_typed(&mut g, "in", &in_buf, F::Float32x2, 0, n);
        let m = import_typed(&mut g, "mid", &mid, F::Float32x2, 0, n);
        let o = import_typed(&mut g, "out", &out, F::Float32x2, 0, n);
        let field = |id: &str, input, output, direction| Fft2d {
            id: id.into(),
            input,
            output,
            width,
            height,
            direction,
        };
        field("forward", i, m, FftDirection::Forward)
            .add_to_graph_with(&mut g, &policy)
            .unwrap();
        field("inverse", m, o, FftDirection::Inverse)
            .add_to_graph_with(&mut g, &policy)
            .unwrap();
        run(&ctx, g);
        check(
            &read_buffer(&ctx, &out),
            &x,
            n,
            &format!("round trip {height}×{width}"),
        );
    }
}

#[test]
fn impulses_and_single_tones_land_in_exact_bins() {
    let ctx = ctx();
    let (height, width) = (64u64, 32u64);
    let n = (height * width) as usize;
    let shape = Shape::Field { height, width };
    // An impulse at (0, 0): every bin is 1.
    let mut x = vec![[0.0; 2]; n];
    x[0] = [1.0, 0.0];
    let (got, _) = run_fft(
        &ctx,
        &shape,
        &x,
        FftDirection::Forward,
        &FftPolicy::default(),
        (0, 0),
    );
    check(&got, &vec![[1.0, 0.0]; n], n as u64, "impulse");
    // e^{+2πi (3r/64 + 5c/32)}: one bin (3, 5) of height n, zero elsewhere.
    let tau = std::f64::consts::TAU;
    let tone: Vec<[f64; 2]> = (0..n)
        .map(|i| {
            let (r, c) = ((i / width as usize) as f64, (i % width as usize) as f64);
            let a = tau * (3.0 * r / height as f64 + 5.0 * c / width as f64);
            [a.cos(), a.sin()]
        })
        .collect();
    let mut want = vec![[0.0; 2]; n];
    want[3 * width as usize + 5] = [n as f64, 0.0];
    for policy in [FftPolicy::default(), SMALL] {
        let (got, _) = run_fft(&ctx, &shape, &tone, FftDirection::Forward, &policy, (1, 0));
        check(&got, &want, n as u64, "tone");
    }
}

/// Held-out data without the oracle: `x[r][c] = a^r b^c` has the closed-form transform
/// `G_a(k_r) G_b(k_c)`, `G_a(k) = (1 - a^n) / (1 - a e^{-2πik/n})` (no numpy here to make a
/// fixture, so the fixture is this formula).
#[test]
fn a_geometric_field_matches_its_closed_form() {
    let ctx = ctx();
    let (height, width) = (16u64, 256u64);
    let (a, b) = ([0.9f64, 0.1f64], [-0.95f64, 0.2f64]);
    let cm = |p: [f64; 2], q: [f64; 2]| [p[0] * q[0] - p[1] * q[1], p[0] * q[1] + p[1] * q[0]];
    let cdiv = |p: [f64; 2], q: [f64; 2]| {
        let d = q[0] * q[0] + q[1] * q[1];
        [
            (p[0] * q[0] + p[1] * q[1]) / d,
            (p[1] * q[0] - p[0] * q[1]) / d,
        ]
    };
    let pow = |z: [f64; 2], k: u64| (0..k).fold([1.0, 0.0], |acc, _| cm(acc, z));
    let geometric = |z: [f64; 2], n: u64, k: u64| {
        let t = std::f64::consts::TAU * k as f64 / n as f64;
        let w = cm(z, [t.cos(), -t.sin()]);
        let an = pow(z, n);
        cdiv([1.0 - an[0], -an[1]], [1.0 - w[0], -w[1]])
    };
    let x: Vec<[f64; 2]> = (0..height)
        .flat_map(|r| (0..width).map(move |c| (r, c)))
        .map(|(r, c)| {
            let v = cm(pow(a, r), pow(b, c));
            [v[0] as f32 as f64, v[1] as f32 as f64]
        })
        .collect();
    // The inputs are rounded to f32; the closed form is of the unrounded field, so the
    // comparison allows the rounding too (it is below the stated tolerance here).
    let want: Vec<[f64; 2]> = (0..height)
        .flat_map(|kr| (0..width).map(move |kc| (kr, kc)))
        .map(|(kr, kc)| cm(geometric(a, height, kr), geometric(b, width, kc)))
        .collect();
    let shape = Shape::Field { height, width };
    let (got, _) = run_fft(
        &ctx,
        &shape,
        &x,
        FftDirection::Forward,
        &FftPolicy::default(),
        (0, 0),
    );
    check(&got, &want, height * width, "geometric field");
}

#[test]
fn bad_arguments_are_named_errors() {
    let ctx = ctx();
    let buf = upload(&ctx, &[0; 64]);
    let other = upload(&ctx, &[0; 64]);
    let mut g = CommandGraph::new("fft", &ctx.device);
    let i = import_typed(&mut g, "in", &buf, F::Float32x2, 0, 16);
    let o = import_typed(&mut g, "out", &other, F::Float32x2, 0, 16);
    let rows = |length, batch, input, output| Fft1d {
        id: "f".into(),
        input,
        output,
        length,
        batch,
        direction: FftDirection::Forward,
    };
    let err = |r: Result<FftPlan, AlgorithmError>| r.unwrap_err().to_string();
    let e = err(rows(12, 1, i, o).add_to_graph(&mut g));
    assert!(e.contains("length is 12") && e.contains("Bluestein"), "{e}");
    let e = err(rows(0, 1, i, o).add_to_graph(&mut g));
    assert!(e.contains("length is 0"), "{e}");
    let e = err(rows(4, 0, i, o).add_to_graph(&mut g));
    assert!(e.contains("batch is 0"), "{e}");
    let e = err(rows(8, 4, i, o).add_to_graph(&mut g));
    assert!(
        e.contains("input has 16 rows but length × batch needs 32"),
        "{e}"
    );
    let third = upload(&ctx, &[0; 64]);
    let fourth = upload(&ctx, &[0; 64]);
    let short = import_typed(&mut g, "short", &third, F::Float32x2, 0, 8);
    let e = err(rows(16, 1, i, short).add_to_graph(&mut g));
    assert!(e.contains("output has 8 rows"), "{e}");
    let aliased = rows(16, 1, i, i).add_to_graph(&mut g);
    assert!(
        matches!(aliased, Err(AlgorithmError::Aliased { .. })),
        "{aliased:?}"
    );
    let words = import_typed(&mut g, "words", &fourth, F::Float32, 0, 32);
    let e = err(rows(16, 1, i, words).add_to_graph(&mut g));
    assert!(e.contains("output must be float32x2"), "{e}");
    let e = err(Fft2d {
        id: "f2".into(),
        input: i,
        output: o,
        width: 6,
        height: 2,
        direction: FftDirection::Inverse,
    }
    .add_to_graph(&mut g));
    assert!(e.contains("fft2d f2: width is 6"), "{e}");
    let binding = FftLimits::of(&ctx.device.limits()).max_binding_length();
    let e = err(rows(binding * 2, 1, i, o).add_to_graph(&mut g));
    assert!(
        e.contains(&format!(
            "needs {} but the device allows {binding}",
            binding * 2
        )) && e.contains("one storage binding"),
        "{e}"
    );
    // Past three passes of a 64-value workgroup: 64³.
    let e = err(rows(1 << 19, 1, i, o).add_to_graph_with(&mut g, &SMALL));
    assert!(
        e.contains("needs 524288 but the device allows 262144") && e.contains("three passes"),
        "{e}"
    );
    let e = err(rows(binding, 2, i, o).add_to_graph(&mut g));
    assert!(e.contains("complex64 values in one storage binding"), "{e}");
    // Nothing was added: the graph still compiles with no nodes.
    assert!(g.compile().unwrap().node_order().is_empty());
}
