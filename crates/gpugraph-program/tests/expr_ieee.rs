//! IEEE-754 on the GPU as the CPU oracle computes it: every operator and function of the
//! syntax table (and the comparison/logic extension) over special values — ±0, subnormals,
//! ±inf, NaN, overflow, the largest and smallest normal numbers — on the GPU through the raw
//! kernel (poisoned, unaligned, chunked output), `Graph` and `SimpleGraph`, against
//! `CompiledExpression::evaluate`.
//!
//! Exact operations (`+ - * /` by ±0/±inf/NaN, negation, abs, casts, selectors, constructors,
//! dot, select, equality, comparisons, logic) must match bit for bit; a NaN result is compared
//! as "is NaN" (payloads are not portable). Where WGSL itself leaves the result to the device
//! (division and sqrt of finite values: 2.5 ulp; sin/cos/tan/exp/log/pow: their accuracy
//! bounds) a finite, nonzero oracle result is compared against the conformance bounds of
//! `expr_common::bounds`; every infinite, zero or NaN result is still exact, because the
//! generated code decides those cases on the bits.
//!
//! Before literals and operands were opaque, lavapipe returned 0 for `a / 0`, `a * 0`,
//! `a - a` and `sint32(a / 0)` on every row (the compiler folded them assuming finite
//! floats); this test failed on its first expression.

mod expr_common;
mod graph_common;

use expr_common::{bounds, run_gpu, Scalars};
use gpugraph_command::{GpuContext, VectorFormat as F};
use gpugraph_program::expr::{
    compile_expression, Column, CompiledExpression, ExpressionKernel, ExpressionOptions,
    IntegerRounding, ScalarType, ScalarValue,
};
use gpugraph_program::graph::{Bindings, ValueSpec};
use gpugraph_program::operation::ExpressionOperation;
use gpugraph_testing::ctx;
use graph_common::{read_u32, run_both, upload, Program};

/// The special float32 values every binary operator sees on both sides.
fn specials() -> Vec<f32> {
    vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.0,
        0.5,
        3.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        -f32::MAX,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),            // smallest subnormal
        -f32::from_bits(0x007f_ffff), // largest subnormal, negative
        3.4e38,
        1e-20,
        16_777_217.0,
        -2.5,
        3e9,
    ]
}

/// Integer specials for the casts and integer comparisons.
const INTS: [i32; 8] = [
    0,
    1,
    -1,
    i32::MIN,
    i32::MAX,
    16_777_217,
    -16_777_217,
    2_147_483_520,
];

/// Whether WGSL leaves finite results of the expression to the device (see the module docs).
fn device_accuracy(text: &str) -> bool {
    [
        "/ b",
        "/ a",
        "sqrt",
        "sin",
        "cos",
        "tan",
        "exp",
        "log",
        "pow",
        "length(vec",
    ]
    .iter()
    .any(|f| text.contains(f))
}

/// Whether `text` applies sin, cos or tan and one of the row's float inputs lies beyond
/// [-pi, pi], where WGSL gives those functions no accuracy bound.
fn trig_beyond_pi(text: &str, a: f32, b: f32) -> bool {
    let trig = ["sin(", "cos(", "tan("].iter().any(|f| text.contains(f));
    let beyond = |x: f32| x.is_finite() && x.abs() > std::f32::consts::PI;
    trig && (beyond(a) || beyond(b))
}

const EXPRESSIONS: &[&str] = &[
    // issue 12: literal zeros
    "a / 0",
    "a / (1 - 1)",
    "sint32(a / 0)",
    "uint32(a / 0)",
    "a * 0",
    "a - a",
    "select(a - a, 1, 2)",
    "a + 0",
    "a * 1",
    "0 - a",
    "a / a",
    "a * s",
    "a / s",
    // folding, reassociation and contraction the compiler must not do
    "a + b - b",
    "a * b + a",
    "(a + b) * (a - b)",
    "a * b / b",
    // the operators
    "a + b",
    "a - b",
    "a * b",
    "a / b",
    "-a",
    "-(a - b)",
    // the functions
    "abs(a)",
    "sqrt(a)",
    "sin(a)",
    "cos(a)",
    "tan(a)",
    "exp(a)",
    "log(a)",
    "pow(a, b)",
    "pow(a, 2)",
    "pow(2, a)",
    "float32(sint32(a))",
    "sint32(a)",
    "uint32(a)",
    "float32(i)",
    "float32(u)",
    "uint32(i)",
    "sint32(u)",
    "float32(uint32(i))",
    "vec2(a, b).yx",
    "vec3(a) * vec3(b, a, 1)",
    "dot(vec2(a, b), vec2(b, a))",
    "dot(vec3(a, b, 1), vec3(a))",
    "dot(a, b)",
    "length(vec2(a, b))",
    "length(a)",
    "equalAll(a, b)",
    "equalAll(vec2(a, b), vec2(b, a))",
    "equalAll(i, sint32(b))",
    "select(a, a, b)",
    "select(vec2(a, b), vec2(1, 2), 3)",
    "select(i, u, uint32(b))",
    // extension: comparisons and mask logic
    "lessThan(a, b)",
    "lessThanEqual(a, b)",
    "greaterThan(a, b)",
    "greaterThanEqual(a, b)",
    "equal(a, b)",
    "notEqual(a, b)",
    "lessThan(vec2(a, b), b)",
    "greaterThan(i, sint32(b))",
    "lessThan(u, uint32(i))",
    "select(greaterThan(a, 2), a, 0)",
    "and(notEqual(a, 0), lessThan(b, a))",
    "or(equal(a, a), greaterThan(vec2(b), 1))",
    "not(equal(a, a))",
];

/// Rows: every (a, b) pair of specials, with integer columns cycling through [`INTS`].
struct Data {
    a: Vec<f32>,
    b: Vec<f32>,
    i: Vec<i32>,
    u: Vec<u32>,
}

fn data() -> Data {
    let v = specials();
    let mut d = Data {
        a: vec![],
        b: vec![],
        i: vec![],
        u: vec![],
    };
    for (x, &a) in v.iter().enumerate() {
        for (y, &b) in v.iter().enumerate() {
            d.a.push(a);
            d.b.push(b);
            d.i.push(INTS[(x + y) % INTS.len()]);
            d.u.push(INTS[(x * 3 + y) % INTS.len()] as u32);
        }
    }
    d
}

const INPUTS: [(&str, F); 4] = [
    ("a", F::Float32),
    ("b", F::Float32),
    ("i", F::Sint32),
    ("u", F::Uint32),
];
const S: f32 = 0.0;

fn compile(text: &str, rounding: IntegerRounding) -> CompiledExpression {
    compile_expression(
        None,
        text,
        &INPUTS,
        &[("s", ScalarType::Float32)],
        &ExpressionOptions::output("r").with_rounding(rounding),
    )
    .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn bits_of(d: &Data) -> Vec<Vec<u32>> {
    vec![
        d.a.iter().map(|x| x.to_bits()).collect(),
        d.b.iter().map(|x| x.to_bits()).collect(),
        d.i.iter().map(|&x| x as u32).collect(),
        d.u.clone(),
    ]
}

/// Compares `gpu` with the oracle; returns the first mismatch.
fn compare(e: &CompiledExpression, d: &Data, gpu: &[u32], path: &str) -> Result<(), String> {
    let oracle = e
        .evaluate(
            &[
                Column::Float32(&d.a),
                Column::Float32(&d.b),
                Column::Sint32(&d.i),
                Column::Uint32(&d.u),
            ],
            &[ScalarValue::Float32(S)],
        )
        .unwrap()
        .to_bits();
    assert_eq!(gpu.len(), oracle.len(), "{}: {path}: length", e.ast());
    let ty = e.output_type();
    let w = ty.width as usize;
    let float = ty.scalar == ScalarType::Float32;
    let text = e.ast().to_string();
    let inputs = bits_of(d);
    let scalars = [ScalarValue::Float32(S)];
    for (k, (&g, &o)) in gpu.iter().zip(&oracle).enumerate() {
        let row = k / w;
        let (gf, of) = (f32::from_bits(g), f32::from_bits(o));
        let ok = if float && of.is_nan() {
            gf.is_nan()
        } else if g == o {
            true
        } else if float && trig_beyond_pi(&text, d.a[row], d.b[row]) {
            // WGSL bounds sin and cos only inside [-pi, pi] (tan inherits them): beyond it any
            // value is conformant, and NVIDIA's tan(16777216) is -inf where the oracle has
            // -1.24. Only a NaN for a finite argument is wrong.
            !gf.is_nan() || of.is_nan()
        } else if float && device_accuracy(&text) && of.is_finite() && of != 0.0 {
            let iv = bounds(e.typed(), e, &inputs, &scalars, row)[k % w];
            !gf.is_nan() && iv.contains(gf as f64)
        } else {
            false
        };
        if !ok {
            return Err(format!(
                "{text} ({path}): row {row} (a = {:e}, b = {:e}, i = {}, u = {}) component {}: GPU {:#010x} ({gf:e}), CPU {:#010x} ({of:e})",
                d.a[row],
                d.b[row],
                d.i[row],
                d.u[row],
                k % w,
                g,
                o
            ));
        }
    }
    Ok(())
}

fn graph_paths(ctx: &GpuContext, text: &str, rounding: IntegerRounding, d: &Data) -> Vec<u32> {
    let program = Program::default()
        .input("a", ValueSpec::vector(F::Float32))
        .input("b", ValueSpec::vector(F::Float32))
        .input("i", ValueSpec::vector(F::Sint32))
        .input("u", ValueSpec::vector(F::Uint32))
        .input("s", ValueSpec::scalar(ScalarType::Float32))
        .op(ExpressionOperation::new("r", text).with_rounding(rounding));
    let compiled = program.compile_both(ctx, &["r"]);
    let n = d.a.len();
    let chunks = [n / 3, 0, n - n / 3];
    let (a, b) = (
        upload(ctx, F::Float32, &d.a, &chunks),
        upload(ctx, F::Float32, &d.b, &chunks),
    );
    let (i, u) = (
        upload(ctx, F::Sint32, &d.i, &chunks),
        upload(ctx, F::Uint32, &d.u, &chunks),
    );
    // run_both checks Graph and SimpleGraph give the same bits.
    let results = run_both(
        ctx,
        &compiled,
        Bindings::new()
            .vector("a", &a)
            .vector("b", &b)
            .vector("i", &i)
            .vector("u", &u)
            .float32("s", S),
    );
    read_u32(ctx, results.get("r").unwrap())
}

#[test]
fn special_values_match_the_cpu_oracle_bit_for_bit_on_every_path() {
    let ctx = ctx();
    let d = data();
    let n = d.a.len();
    let mut failures = Vec::new();
    for rounding in [IntegerRounding::Truncate, IntegerRounding::Nearest] {
        for &text in EXPRESSIONS {
            if rounding == IntegerRounding::Nearest && !text.contains("int32(") {
                continue;
            }
            let e = compile(text, rounding);
            let kernel = ExpressionKernel::new(e.clone());
            let chunks = [7, n - 7 - 100, 0, 100];
            for (mode, path) in [
                (Scalars::Values, "kernel"),
                (Scalars::Views, "kernel, GPU scalar"),
            ] {
                let gpu = run_gpu(
                    &ctx,
                    &kernel,
                    &bits_of(&d),
                    &[ScalarValue::Float32(S)],
                    &chunks,
                    mode,
                );
                if let Err(m) = compare(&e, &d, &gpu, path) {
                    failures.push(m);
                }
            }
            let gpu = graph_paths(&ctx, text, rounding, &d);
            if let Err(m) = compare(&e, &d, &gpu, "Graph = SimpleGraph") {
                failures.push(m);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The issue's reproduction, values exact: `a / 0` on [0, -0, 1, -1, NaN, inf, -inf, 3.4e38].
#[test]
fn division_by_a_literal_zero_is_ieee() {
    let ctx = ctx();
    let a = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3.4e38,
    ];
    let e = compile_expression(
        None,
        "a / 0",
        &[("a", F::Float32)],
        &[],
        &Default::default(),
    )
    .unwrap();
    let gpu = run_gpu(
        &ctx,
        &ExpressionKernel::new(e),
        &[a.iter().map(|x| x.to_bits()).collect()],
        &[],
        &[a.len()],
        Scalars::Values,
    );
    let got: Vec<f32> = gpu.into_iter().map(f32::from_bits).collect();
    let inf = f32::INFINITY;
    let want = [f32::NAN, f32::NAN, inf, -inf, f32::NAN, inf, -inf, inf];
    for (g, w) in got.iter().zip(want) {
        assert!(
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
            "{got:?}"
        );
    }
}
