//! Generated kernels on the GPU (lavapipe in CI) against the CPU oracle: a representative
//! set of expressions over chunked, unaligned, poisoned views; integers exact (past 2^24),
//! floats within the bounds a conformant GPU may return; pipeline reuse across lengths;
//! 2-D dispatch grids; named errors for bad views.

mod expr_common;

use expr_common::{check_within_bounds, random_column, random_scalar, run_gpu, Scalars};
use gpugraph_command::{
    CommandGraph, DataViewDescriptor, GpuContext, VectorFormat as F, VectorView,
};
use gpugraph_gpgpu::AlgorithmError;
use gpugraph_program::expr::{
    compile_expression, Column, CompiledExpression, ExpressionKernel, ExpressionOptions,
    IntegerRounding, ScalarBinding, ScalarType, ScalarValue, ValueType, Values,
};
use gpugraph_testing::{ctx, ctx_with_max_dispatch, rng, uneven_chunks};

const INPUTS: [(&str, F); 9] = [
    ("p", F::Float32x3),
    ("q", F::Float32x3),
    ("c", F::Float32x4),
    ("w", F::Float32),
    ("uv", F::Float32x2),
    ("ids", F::Uint32),
    ("ids3", F::Uint32x3),
    ("si", F::Sint32x3),
    ("si1", F::Sint32),
];
const SCALARS: [(&str, ScalarType); 3] = [
    ("scale", ScalarType::Float32),
    ("sel", ScalarType::Uint32),
    ("k", ScalarType::Sint32),
];

fn compile(text: &str, rounding: IntegerRounding) -> CompiledExpression {
    compile_expression(
        None,
        text,
        &INPUTS,
        &SCALARS,
        &ExpressionOptions::output("r").with_rounding(rounding),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn columns(data: &[Vec<u32>]) -> Vec<Column<'_>> {
    INPUTS
        .iter()
        .zip(data)
        .map(
            |((_, f), d)| match ValueType::from_format(*f).unwrap().scalar {
                ScalarType::Float32 => Column::Float32(bytemuck::cast_slice(d)),
                ScalarType::Sint32 => Column::Sint32(bytemuck::cast_slice(d)),
                ScalarType::Uint32 => Column::Uint32(d),
            },
        )
        .collect()
}

struct Data {
    inputs: Vec<Vec<u32>>,
    scalars: Vec<ScalarValue>,
}

fn data(seed: u64, rows: usize) -> Data {
    let mut r = rng(seed);
    let inputs = INPUTS
        .iter()
        .map(|(_, f)| random_column(&mut r, ValueType::from_format(*f).unwrap(), rows))
        .collect();
    let mut scalars: Vec<ScalarValue> = SCALARS
        .iter()
        .map(|(_, t)| random_scalar(&mut r, *t))
        .collect();
    scalars[0] = ScalarValue::Float32(1.5);
    Data { inputs, scalars }
}

/// Runs on the GPU and the CPU and compares: bitwise when `exact`, within bounds always.
fn check(
    ctx: &GpuContext,
    e: &CompiledExpression,
    d: &Data,
    chunks: &[usize],
    mode: Scalars,
    exact: bool,
) {
    let kernel = ExpressionKernel::new(e.clone());
    let gpu = run_gpu(ctx, &kernel, &d.inputs, &d.scalars, chunks, mode);
    let oracle = e.evaluate(&columns(&d.inputs), &d.scalars).unwrap();
    assert_eq!(gpu.len(), oracle.len(), "{}", e.ast());
    if exact {
        assert_eq!(gpu, oracle.to_bits(), "{}", e.ast());
    }
    check_within_bounds(e, &d.inputs, &d.scalars, &gpu, &oracle.to_bits())
        .unwrap_or_else(|m| panic!("{m}"));
}

const REPRESENTATIVE: &[&str] = &[
    "p * scale + q",
    "(p + q) * scale",
    "-p",
    "p / (length(p) + scale)",
    "p - w",
    "vec4(p, 1)",
    "c.zyx",
    "p.xxyz",
    "p + p.y",
    "p + vec3(scale)",
    "sqrt(abs(p))",
    "sin(p)",
    "cos(uv)",
    "tan(w * 0.3)",
    "exp(sin(c))",
    "log(abs(p) + 1)",
    "pow(abs(p) + 0.5, 2)",
    "pow(abs(w) + 0.5, uv)",
    "dot(p, q)",
    "dot(w, w)",
    "dot(c, c.wzyx)",
    "length(p)",
    "length(w)",
    "length(uv)",
    "equalAll(p, q)",
    "equalAll(p.xy, p.xy)",
    "select(p, vec3(10), vec3(20))",
    "select(w, c, 0)",
    "select(uint32(w), 1, uv)",
    "select(equalAll(ids, sel), vec4(1, 1, 0, 1), c)",
    "sint32(p * 1000)",
    "uint32(p * 3e9)",
    "sint32(c * 2.5)",
    "float32(ids)",
    "float32(si)",
    "float32(si1) + float32(ids)",
    "scale * 2",
    "dot(vec3(1, 2, 3), vec3(4, 5, 6))",
    "length(vec2(3, 4)) + float32(k)",
];

/// Integer-only expressions: the GPU must match the oracle bit for bit.
const EXACT: &[&str] = &[
    "ids3.zyx",
    "vec3(ids3.xy, uint32(1))",
    "equalAll(ids, sel)",
    "equalAll(ids3, vec3(sel))",
    "equalAll(si, si)",
    "equalAll(si.xy, si.yx)",
    "uint32(si)",
    "sint32(ids3)",
    "select(ids, ids3, uint32(7))",
    "select(si, ids3, ids3.zxy)",
    "select(si1, si, vec3(k))",
    "vec4(si.zy, si1, k)",
    "uint32(sint32(ids))",
    "equalAll(uint32(si1), ids)",
];

#[test]
fn representative_expressions_match_the_oracle() {
    let ctx = ctx();
    let rows = 3001;
    let d = data(1, rows);
    let chunks = [0, 1023, 1, 0, 1024, 953];
    for (n, text) in REPRESENTATIVE.iter().chain(EXACT).enumerate() {
        let e = compile(text, IntegerRounding::Truncate);
        let chunks: Vec<usize> = if e.is_row_sized() {
            chunks.to_vec()
        } else {
            vec![1]
        };
        let mode = if n % 3 == 0 {
            Scalars::Views
        } else {
            Scalars::Values
        };
        check(&ctx, &e, &d, &chunks, mode, EXACT.contains(text));
    }
}

#[test]
fn casts_and_integer_conversions_are_exact_on_the_gpu() {
    let ctx = ctx();
    // Floats at rounding ties, saturation edges, non-finite values and 2^24 neighbors.
    let special: Vec<f32> = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        -1.5,
        2.5,
        -2.5,
        0.49999997,
        -0.49999997,
        8388607.5,
        -8388607.5,
        16777217.0,
        2147483520.0,
        2147483648.0,
        -2147483648.0,
        -2147483904.0,
        4294967040.0,
        4294967296.0,
        1e20,
        -1e20,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        3.9999998,
        -3.9999998,
        123456.78,
    ];
    let ints: Vec<i32> = vec![
        0,
        1,
        -1,
        16_777_216,
        16_777_217,
        16_777_219,
        -16_777_217,
        i32::MAX,
        i32::MIN,
        i32::MAX - 64,
        2_147_483_583,
        1_073_741_825,
        -1_073_741_825,
        33_554_435,
        7,
        -7,
        123_456_789,
        -987_654_321,
        67_108_863,
        268_435_457,
        16_777_218,
        3,
        -3,
        100,
        5,
        6,
        -16_777_216,
        25,
    ];
    let n = special.len();
    assert_eq!(ints.len(), n);
    let uints: Vec<u32> = ints.iter().map(|&v| v as u32).collect();
    let floats: Vec<u32> = special.iter().map(|v| v.to_bits()).collect();
    let inputs = [("f", F::Float32), ("i", F::Sint32), ("u", F::Uint32)];
    let cols = [
        floats.clone(),
        ints.iter().map(|&v| v as u32).collect(),
        uints.clone(),
    ];
    let exprs = [
        "sint32(f)",
        "uint32(f)",
        "float32(i)",
        "float32(u)",
        "uint32(i)",
        "sint32(u)",
        "sint32(vec3(f, -f, f * 0.5))",
        "equalAll(f, f)",
        "equalAll(vec2(f, 0), vec2(-f, -0))",
        "select(f, u, uint32(9))",
        "select(vec2(f, float32(i)), vec2(u), uint32(0))",
    ];
    for rounding in [IntegerRounding::Truncate, IntegerRounding::Nearest] {
        for text in exprs {
            let e = compile_expression(
                None,
                text,
                &inputs,
                &[],
                &ExpressionOptions::output("r").with_rounding(rounding),
            )
            .unwrap();
            let kernel = ExpressionKernel::new(e.clone());
            let gpu = run_gpu(&ctx, &kernel, &cols, &[], &[n], Scalars::Values);
            let fl: Vec<f32> = special.clone();
            let oracle = e
                .evaluate(
                    &[
                        Column::Float32(&fl),
                        Column::Sint32(&ints),
                        Column::Uint32(&uints),
                    ],
                    &[],
                )
                .unwrap();
            assert_eq!(gpu, oracle.to_bits(), "{text} {rounding:?}");
        }
    }
    // Spot checks of the oracle values themselves.
    let e = compile_expression(
        None,
        "float32(u)",
        &[("u", F::Uint32)],
        &[],
        &ExpressionOptions::default(),
    )
    .unwrap();
    assert_eq!(
        e.evaluate(&[Column::Uint32(&[16_777_217, 16_777_219, u32::MAX])], &[])
            .unwrap(),
        Values::Float32(vec![16_777_216.0, 16_777_220.0, 4_294_967_296.0])
    );
}

#[test]
fn sizes_around_workgroup_and_tile_boundaries() {
    let ctx = ctx();
    let e = compile(
        "select(equalAll(ids, sel), vec4(p, 1), c * scale)",
        IntegerRounding::Truncate,
    );
    let kernel = ExpressionKernel::new(e.clone());
    for (seed, rows) in [0usize, 1, 255, 256, 257, 1023, 1024, 1025, 4097]
        .into_iter()
        .enumerate()
    {
        let mut d = data(seed as u64 + 10, rows);
        if rows > 0 {
            d.scalars[1] = ScalarValue::Uint32(d.inputs[5][rows / 2]);
        }
        let gpu = run_gpu(
            &ctx,
            &kernel,
            &d.inputs,
            &d.scalars,
            &[rows],
            Scalars::Values,
        );
        let oracle = e.evaluate(&columns(&d.inputs), &d.scalars).unwrap();
        // Only selection, construction and one multiply: bit-exact on conformant GPUs.
        assert_eq!(gpu, oracle.to_bits(), "rows={rows}");
    }
    assert_eq!(pipelines_created(&ctx), 1);
}

#[test]
fn a_second_run_with_another_length_reuses_the_pipeline() {
    let ctx = ctx();
    let e = compile("p * scale + q", IntegerRounding::Truncate);
    let kernel = ExpressionKernel::new(e.clone());
    let first_pipeline = kernel.pipeline(&ctx.device);
    assert_eq!(pipelines_created(&ctx), 1);
    let mut r = rng(3);
    for rows in [1000usize, 77, 4099] {
        let d = data(rows as u64, rows);
        let chunks = uneven_chunks(&mut r, rows, 4);
        let gpu = run_gpu(
            &ctx,
            &kernel,
            &d.inputs,
            &d.scalars,
            &chunks,
            Scalars::Values,
        );
        let oracle = e.evaluate(&columns(&d.inputs), &d.scalars).unwrap();
        check_within_bounds(&e, &d.inputs, &d.scalars, &gpu, &oracle.to_bits()).unwrap();
    }
    assert_eq!(pipelines_created(&ctx), 1, "one pipeline for every length");
    assert_eq!(
        kernel.pipeline(&ctx.device).pipeline,
        first_pipeline.pipeline
    );
    // Clones share the cache.
    let clone = kernel.clone();
    let _ = clone.pipeline(&ctx.device);
    assert_eq!(pipelines_created(&ctx), 1);
}

#[test]
fn dispatches_over_the_dimension_limit_use_a_second_grid_row() {
    // 16 workgroups per dimension × 1024 rows: 100,003 rows need 98 workgroups → 7 grid rows.
    let ctx = ctx_with_max_dispatch(16);
    let e = compile("vec3(ids3.zx, uint32(w * 100))", IntegerRounding::Nearest);
    let d = data(5, 100_003);
    let kernel = ExpressionKernel::new(e.clone());
    let gpu = run_gpu(
        &ctx,
        &kernel,
        &d.inputs,
        &d.scalars,
        &[100_003],
        Scalars::Values,
    );
    let oracle = e.evaluate(&columns(&d.inputs), &d.scalars).unwrap();
    assert_eq!(gpu, oracle.to_bits());
}

#[test]
fn bad_views_are_named_errors() {
    let ctx = ctx();
    let e = compile_expression(
        Some("blend"),
        "a * s + b",
        &[("a", F::Float32x3), ("b", F::Float32x3)],
        &[("s", ScalarType::Float32)],
        &ExpressionOptions::output("out"),
    )
    .unwrap();
    let kernel = ExpressionKernel::new(e);
    let mut g = CommandGraph::new("bad", &ctx.device);
    let a = expr_common::packed_view(&mut g, &ctx, "a", F::Float32x3, 8);
    let b = expr_common::packed_view(&mut g, &ctx, "b", F::Float32x3, 8);
    let out = expr_common::packed_view(&mut g, &ctx, "o", F::Float32x3, 8);
    let s = [ScalarBinding::Value(ScalarValue::Float32(2.0))];
    let v = |x: gpugraph_command::DataView| -> VectorView { x.into() };
    let msg = |r: Result<(), AlgorithmError>| r.unwrap_err().to_string();

    let e = kernel
        .add_to_graph(&mut g, &[v(a)], &s, &v(out))
        .unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { what, actual: 1, expected: 2, rule, .. }
            if &**what == "inputs" && rule.contains("(a, b)")),
        "{e}"
    );
    let e = kernel
        .add_to_graph(&mut g, &[v(a), v(b)], &[], &v(out))
        .unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { what, actual: 0, expected: 1, rule, .. }
            if &**what == "scalars" && rule.contains("(s)")),
        "{e}"
    );
    let wrong = g.create_packed_view(b.buffer(), F::Float32x4, 6).unwrap();
    assert_eq!(
        msg(kernel.add_to_graph(&mut g, &[v(a), v(wrong)], &s, &v(out))),
        "expression blend: input b must be float32x3, got float32x4"
    );
    let strided = g
        .create_data_view(
            b.buffer(),
            DataViewDescriptor {
                format: F::Float32x3,
                length: 4,
                byte_offset: 0,
                byte_stride: Some(16),
            },
        )
        .unwrap();
    assert_eq!(
        msg(kernel.add_to_graph(&mut g, &[v(a), v(strided)], &s, &v(out))),
        "expression blend: input b must be packed float32x3 at a 4-byte aligned offset, got 4 rows at byte offset 0 with stride 16"
    );
    let short = g.create_packed_view(b.buffer(), F::Float32x3, 7).unwrap();
    assert_eq!(
        msg(kernel.add_to_graph(&mut g, &[v(a), v(short)], &s, &v(out))),
        "expression blend: input b chunk lengths [7] differ from output out chunk lengths [8]"
    );
    // Same total, different boundaries (an extra empty chunk).
    let empty = g.create_packed_view(b.buffer(), F::Float32x3, 0).unwrap();
    let split = VectorView::from_chunks(vec![b, empty]);
    assert_eq!(
        msg(kernel.add_to_graph(&mut g, &[v(a), split], &s, &v(out))),
        "expression blend: input b chunk lengths [8, 0] differ from output out chunk lengths [8]"
    );
    let e = kernel
        .add_to_graph(&mut g, &[v(a), v(b)], &s, &v(a))
        .unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::Aliased { written, other, buffer, .. }
            if written == "output out" && other == "a value the expression reads" && &**buffer == "a"),
        "{e}"
    );
    assert_eq!(
        msg(kernel.add_to_graph(
            &mut g,
            &[v(a), v(b)],
            &[ScalarBinding::Value(ScalarValue::Uint32(2))],
            &v(out)
        )),
        "expression blend: scalar s must be a float32 value, got a uint32 value"
    );
    let sview = g.create_packed_view(b.buffer(), F::Uint32, 1).unwrap();
    assert_eq!(
        msg(kernel.add_to_graph(&mut g, &[v(a), v(b)], &[ScalarBinding::View(sview)], &v(out))),
        "expression blend: scalar s must be a view of at least one float32 row, got 1 rows of uint32"
    );
    let out4 = g.create_packed_view(out.buffer(), F::Float32x4, 6).unwrap();
    assert_eq!(
        msg(kernel.add_to_graph(&mut g, &[v(a), v(b)], &s, &v(out4))),
        "expression blend: output out must be float32x3, got float32x4"
    );
    let overlapping = VectorView::from_chunks(vec![
        g.create_packed_view(out.buffer(), F::Float32x3, 4).unwrap(),
        g.create_data_view(
            out.buffer(),
            DataViewDescriptor::packed(F::Float32x3, 4).at_offset(36),
        )
        .unwrap(),
    ]);
    let halves = VectorView::from_chunks(vec![
        g.create_packed_view(a.buffer(), F::Float32x3, 4).unwrap(),
        g.create_data_view(
            a.buffer(),
            DataViewDescriptor::packed(F::Float32x3, 4).at_offset(48),
        )
        .unwrap(),
    ]);
    let e = kernel
        .add_to_graph(&mut g, &[halves.clone(), halves], &s, &overlapping)
        .unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::Aliased { written, other, buffer, reason, .. }
            if written == "output out chunk 0" && other == "output out chunk 1"
                && &**buffer == "o" && reason.contains("disjoint")),
        "{e}"
    );
    // A constant expression writes exactly one row.
    let k = ExpressionKernel::new(
        compile_expression(
            Some("k"),
            "s * 2",
            &[],
            &[("s", ScalarType::Float32)],
            &Default::default(),
        )
        .unwrap(),
    );
    let o1 = g.create_packed_view(out.buffer(), F::Float32, 3).unwrap();
    let e = k.add_to_graph(&mut g, &[], &s, &v(o1)).unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { what, actual: 3, expected: 1, .. }
            if &**what == "output output"),
        "{e}"
    );
    // The valid declaration is accepted afterwards.
    kernel
        .add_to_graph(&mut g, &[v(a), v(b)], &s, &v(out))
        .unwrap();
}

/// Pipelines the device's one cache has created: a test's context is its own device, so
/// this counts the pipelines the test compiled.
fn pipelines_created(ctx: &GpuContext) -> u64 {
    gpugraph_command::DeviceCache::for_device(&ctx.device)
        .stats()
        .pipelines_created
}
