//! Types and values: the spec's type, function and error tables and every example of the
//! expression page, checked through compilation and the CPU oracle.

use gpugraph_command::VectorFormat as F;
use gpugraph_program::expr::{
    compile_expression, parse, Column, CompiledExpression, Expr, ExprErrorKind, ExpressionOptions,
    IntegerRounding, ScalarType, ScalarValue, ValueType, Values,
};

const F32: ScalarType = ScalarType::Float32;
const U32: ScalarType = ScalarType::Uint32;
const I32: ScalarType = ScalarType::Sint32;

/// Declarations shared by the tables.
const INPUTS: [(&str, F); 16] = [
    ("positions", F::Float32x3),
    ("offsets", F::Float32x3),
    ("directions", F::Float32x3),
    ("colors", F::Float32x4),
    ("homogeneous", F::Float32x4),
    ("values", F::Float32),
    ("weights", F::Float32),
    ("uv", F::Float32x2),
    ("ids", F::Uint32),
    ("ids3", F::Uint32x3),
    ("targetIds", F::Uint32),
    ("indices", F::Sint32x3),
    ("integerPositions", F::Sint32x3),
    ("mask", F::Float32),
    ("imask", F::Sint32),
    ("umask3", F::Uint32x3),
];
const SCALARS: [(&str, ScalarType); 5] = [
    ("scale", F32),
    ("epsilon", F32),
    ("selectedId", U32),
    ("targetId", U32),
    ("count", I32),
];

fn compile(text: &str) -> Result<CompiledExpression, (ExprErrorKind, String)> {
    compile_expression(
        Some("op"),
        text,
        &INPUTS,
        &SCALARS,
        &ExpressionOptions::default(),
    )
    .map_err(|e| {
        let s = e.to_string();
        (e.kind, s.strip_prefix("op: ").unwrap_or(&s).to_string())
    })
}

fn ok(text: &str) -> F {
    compile(text)
        .unwrap_or_else(|e| panic!("{text}: {e:?}"))
        .output_format()
}

#[test]
fn type_rules_infer_component_type_and_width() {
    let rows: &[(&str, F)] = &[
        // literals, names, arithmetic and broadcasting
        ("1", F::Float32),
        ("0.25 * 4", F::Float32),
        ("positions", F::Float32x3),
        ("scale", F::Float32),
        ("ids", F::Uint32),
        ("positions * scale", F::Float32x3),
        ("scale * positions", F::Float32x3),
        ("positions * weights", F::Float32x3), // one-component vector rows broadcast
        ("positions + positions.y", F::Float32x3),
        ("positions + vec3(scale)", F::Float32x3),
        ("-positions", F::Float32x3),
        ("positions / (values + epsilon)", F::Float32x3),
        ("colors - 1", F::Float32x4),
        // math functions: width preserved
        ("abs(positions)", F::Float32x3),
        ("sqrt(abs(values))", F::Float32),
        ("sin(uv)", F::Float32x2),
        ("cos(colors)", F::Float32x4),
        ("tan(values)", F::Float32),
        ("exp(positions)", F::Float32x3),
        ("log(uv)", F::Float32x2),
        ("pow(values, 2)", F::Float32),
        ("pow(positions, 2)", F::Float32x3),
        ("pow(2, positions)", F::Float32x3),
        ("pow(positions, offsets)", F::Float32x3),
        // casts preserve width
        ("float32(ids)", F::Float32),
        ("float32(positions)", F::Float32x3),
        ("sint32(positions)", F::Sint32x3),
        ("uint32(positions)", F::Uint32x3),
        ("uint32(indices)", F::Uint32x3),
        ("sint32(ids3)", F::Sint32x3),
        ("sint32(sint32(positions))", F::Sint32x3),
        ("uint32(1)", F::Uint32),
        // selectors
        ("positions.x", F::Float32),
        ("positions.zyx", F::Float32x3),
        ("positions.xx", F::Float32x2),
        ("positions.xxxx", F::Float32x4),
        ("homogeneous.zyx", F::Float32x3),
        ("homogeneous.w", F::Float32),
        ("positions.zyx.x", F::Float32),
        ("(positions + offsets).yz", F::Float32x2),
        ("values.x", F::Float32),
        ("values.xxx", F::Float32x3),
        ("ids3.zy", F::Uint32x2),
        ("scale.xx", F::Float32x2),
        // constructors
        ("vec4(positions, 1)", F::Float32x4),
        ("vec2(1, 2)", F::Float32x2),
        ("vec3(scale)", F::Float32x3),
        ("vec4(0)", F::Float32x4),
        ("vec4(uv, uv)", F::Float32x4),
        ("vec3(positions)", F::Float32x3),
        ("vec3(ids3.xy, uint32(1))", F::Uint32x3),
        ("vec3(targetId)", F::Uint32x3),
        ("vec2(positions.z, values)", F::Float32x2),
        ("sint32(vec2(1.5, -1.5))", F::Sint32x2),
        // row functions
        ("dot(positions, directions)", F::Float32),
        ("dot(values, weights)", F::Float32),
        ("dot(uv, uv)", F::Float32),
        ("dot(colors, homogeneous)", F::Float32),
        ("dot(positions, vec3(scale))", F::Float32),
        ("length(positions)", F::Float32),
        ("length(values)", F::Float32),
        ("length(uv)", F::Float32),
        ("length(colors)", F::Float32),
        ("length(float32(integerPositions))", F::Float32),
        ("positions * length(positions)", F::Float32x3),
        ("equalAll(ids, targetIds)", F::Uint32),
        ("equalAll(ids, selectedId)", F::Uint32),
        ("equalAll(ids3, vec3(targetId))", F::Uint32),
        ("equalAll(positions, offsets)", F::Uint32),
        ("equalAll(indices, integerPositions)", F::Uint32),
        ("select(mask, colors, vec4(0))", F::Float32x4),
        (
            "select(equalAll(ids, selectedId), vec4(1, 1, 0, 1), colors)",
            F::Float32x4,
        ),
        ("select(vec3(0, -2, 0.5), vec3(10), vec3(20))", F::Float32x3),
        ("select(mask, ids, uint32(0))", F::Uint32),
        ("select(imask, positions, 0)", F::Float32x3), // one-component branch broadcasts
        ("select(mask, 1, positions)", F::Float32x3),
        ("select(umask3, positions, offsets)", F::Float32x3), // per-component condition
        ("select(positions, indices, integerPositions)", F::Sint32x3),
        ("select(ids, 1, 2)", F::Float32),
    ];
    for (text, want) in rows {
        assert_eq!(ok(text), *want, "{text}");
    }
}

/// The spec's error table (exact texts) and the type/width rules' other rejections.
#[test]
fn type_and_width_errors_use_the_spec_texts() {
    use ExprErrorKind::*;
    let rows: &[(&str, ExprErrorKind, &str)] = &[
        // error table
        ("positions.w", Width, ".w needs 4 components; positions has 3"),
        ("dot(positions, uv)", Width, "dot requires matching row widths"),
        ("dot(positions, scale)", Width, "dot requires matching row widths"),
        ("equalAll(ids, ids3)", Width, "equalAll requires matching types and row widths"),
        ("equalAll(ids, values)", Type, "equalAll requires matching types and row widths"),
        ("equalAll(ids3, vec3(1))", Type, "equalAll requires matching types and row widths"),
        ("select(mask, ids, 0)", Type, "select branches require matching component types"),
        ("select(mask, colors, indices)", Type, "select branches require matching component types"),
        ("select(uv, positions, offsets)", Width, "select widths must match its branches or be one component"),
        ("select(positions, colors, 1)", Width, "select widths must match its branches or be one component"),
        // The resolved branch width of two one-component branches is one.
        ("select(positions, 1, 2)", Width, "select widths must match its branches or be one component"),
        ("ids + 1", Type, "Arithmetic requires float32 operands"),
        ("uint32(values) + 1", Type, "Arithmetic requires float32 operands"),
        ("-ids", Type, "Arithmetic requires float32 operands"),
        ("indices * scale", Type, "Arithmetic requires float32 operands"),
        ("selectedId / 2", Type, "Arithmetic requires float32 operands"),
        // selectors
        ("(positions + offsets).w", Width, ".w needs 4 components; positions + offsets has 3"),
        ("uv.xyz", Width, ".xyz needs 3 components; uv has 2"),
        ("values.y", Width, ".y needs 2 components; values has 1"),
        ("positions.zyx.xw", Width, ".xw needs 4 components; positions.zyx has 3"),
        // arithmetic widths
        ("positions + uv", Width, "arithmetic requires matching row widths or one component; positions has 3, uv has 2"),
        ("pow(positions, uv)", Width, "pow requires matching row widths or one component; positions has 3, uv has 2"),
        // float-only functions
        ("sqrt(ids)", Type, "sqrt requires float32 operands; ids is uint32"),
        ("abs(indices)", Type, "abs requires float32 operands; indices is sint32"),
        ("pow(values, ids)", Type, "pow requires float32 operands; ids is uint32"),
        ("dot(ids3, ids3)", Type, "dot requires float32 operands; ids3 is uint32"),
        ("length(integerPositions)", Type, "length requires float32 operands; integerPositions is sint32"),
        // constructors
        ("vec3(ids3.xy, 1)", Type, "vec3 requires matching component types; got uint32 and float32"),
        ("vec4(positions)", Width, "vec4 needs 4 components; arguments have 3"),
        ("vec2(positions)", Width, "vec2 needs 2 components; arguments have 3"),
        ("vec4(uv, 1)", Width, "vec4 needs 4 components; arguments have 3"),
        ("vec2(1, 2, 3)", Width, "vec2 needs 2 components; arguments have 3"),
        ("vec3()", Width, "vec3 needs 3 components; arguments have 0"),
        // select branch widths
        ("select(mask, positions, uv)", Width, "select branches require matching row widths or one component; positions has 3, uv has 2"),
    ];
    for (text, kind, want) in rows {
        assert_eq!(
            compile(text).map(|c| c.output_format()),
            Err((*kind, want.to_string())),
            "{text}"
        );
    }
}

#[test]
fn declarations_outside_the_subset_and_mismatched_outputs_are_rejected() {
    let err = |inputs: &[(&str, F)], scalars: &[(&str, ScalarType)], opts: ExpressionOptions| {
        compile_expression(None, "a", inputs, scalars, &opts)
            .unwrap_err()
            .to_string()
    };
    let o = ExpressionOptions::output;
    assert_eq!(
        err(&[("a", F::Uint8x4)], &[], o("r")),
        "r-expression: input a has format uint8x4, outside the expression subset (float32, sint32 and uint32 with 1 to 4 components)"
    );
    for f in [F::Float16x2, F::Unorm8x4, F::Uint8] {
        assert!(err(&[("a", f)], &[], o("r")).contains("outside the expression subset"));
    }
    assert_eq!(
        err(&[("a", F::Float32)], &[("a", F32)], o("r")),
        "r-expression: duplicate declaration a"
    );
    assert_eq!(
        err(&[("a", F::Float32), ("sqrt", F::Float32)], &[], o("r")),
        "r-expression: declaration sqrt collides with the intrinsic function sqrt; rename it"
    );
    assert_eq!(
        err(
            &[("a", F::Float32x3)],
            &[],
            o("transformed").with_output_format(F::Float32x4)
        ),
        "transformed-expression: output transformed is declared float32x4 but the expression produces float32x3"
    );
    // A matching declaration is accepted.
    compile_expression(
        None,
        "sqrt(float32(indices))",
        &[("indices", F::Uint32)],
        &[],
        &ExpressionOptions::output("weights").with_output_format(F::Float32),
    )
    .unwrap();
}

#[test]
fn every_vector_format_of_the_subset_maps_to_its_type() {
    for f in F::all() {
        match ValueType::from_format(f) {
            Some(t) => {
                assert_eq!(t.format(), f);
                assert_eq!(ok_with(f), f);
            }
            None => assert!(f.component_bytes() != 4, "{f}"),
        }
    }
    fn ok_with(f: F) -> F {
        compile_expression(None, "v", &[("v", f)], &[], &ExpressionOptions::default())
            .unwrap()
            .output_format()
    }
}

// ---- values through the CPU oracle ----

fn eval(
    text: &str,
    inputs: &[(&str, F)],
    cols: &[Column<'_>],
    scalars: &[(&str, ScalarType)],
    values: &[ScalarValue],
    rounding: IntegerRounding,
) -> Values {
    let c = compile_expression(
        None,
        text,
        inputs,
        scalars,
        &ExpressionOptions::default().with_rounding(rounding),
    )
    .unwrap_or_else(|e| panic!("{text}: {e}"));
    c.evaluate(cols, values)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn constant(text: &str) -> Values {
    eval(text, &[], &[], &[], &[], IntegerRounding::Truncate)
}

#[test]
fn page_examples_evaluate_as_documented() {
    use Values::*;
    // graph.add(... 'positions * scale + offset') with float32 vectors and a float32 scalar.
    let positions = [1.0f32, 2.0, 3.0];
    let offset = [0.5f32, 0.25, -1.0];
    let r = eval(
        "positions * scale + offset",
        &[("positions", F::Float32), ("offset", F::Float32)],
        &[Column::Float32(&positions), Column::Float32(&offset)],
        &[("scale", F32)],
        &[ScalarValue::Float32(2.0)],
        IntegerRounding::Truncate,
    );
    assert_eq!(r, Float32(vec![2.5, 4.25, 5.0]));

    // Typed rows: float32x3 * scale + float32x3, then sint32(transformed) with nearest.
    let p3 = [1.0f32, -2.0, 0.25, 0.75, 1.5, -1.25];
    let o3 = [0.0f32, 0.0, 0.0, 0.0, 0.0, 0.5];
    let transformed = eval(
        "positions * scale + offsets",
        &[("positions", F::Float32x3), ("offsets", F::Float32x3)],
        &[Column::Float32(&p3), Column::Float32(&o3)],
        &[("scale", F32)],
        &[ScalarValue::Float32(2.0)],
        IntegerRounding::Truncate,
    );
    assert_eq!(transformed, Float32(vec![2.0, -4.0, 0.5, 1.5, 3.0, -2.0]));
    let indices = eval(
        "sint32(transformed)",
        &[("transformed", F::Float32x3)],
        &[transformed.as_column()],
        &[],
        &[],
        IntegerRounding::Nearest,
    );
    assert_eq!(indices, Sint32(vec![2, -4, 1, 2, 3, -2]));

    // vec4(positions, 1) then homogeneous.zyx
    let h = eval(
        "vec4(positions, 1)",
        &[("positions", F::Float32x3)],
        &[Column::Float32(&p3)],
        &[],
        &[],
        IntegerRounding::Truncate,
    );
    assert_eq!(
        h,
        Float32(vec![1.0, -2.0, 0.25, 1.0, 0.75, 1.5, -1.25, 1.0])
    );
    let r = eval(
        "homogeneous.zyx",
        &[("homogeneous", F::Float32x4)],
        &[h.as_column()],
        &[],
        &[],
        IntegerRounding::Truncate,
    );
    assert_eq!(r, Float32(vec![0.25, -2.0, 1.0, -1.25, 1.5, 0.75]));

    // vec3(ids.xy, uint32(1)) preserves exact uint32 values (beyond 2^24).
    let ids = [4_294_967_295u32, 16_777_217, 7, 8];
    let r = eval(
        "vec3(ids.xy, uint32(1))",
        &[("ids", F::Uint32x2)],
        &[Column::Uint32(&ids)],
        &[],
        &[],
        IntegerRounding::Truncate,
    );
    assert_eq!(r, Uint32(vec![4_294_967_295, 16_777_217, 1, 7, 8, 1]));

    // positions + positions.y adds each row's second component to every component.
    let r = eval(
        "positions + positions.y",
        &[("positions", F::Float32x3)],
        &[Column::Float32(&p3)],
        &[],
        &[],
        IntegerRounding::Truncate,
    );
    assert_eq!(r, Float32(vec![-1.0, -4.0, -1.75, 2.25, 3.0, 0.25]));

    // sqrt(float32(indices))
    let idx = [0u32, 4, 9, 16_777_217];
    let r = eval(
        "sqrt(float32(indices))",
        &[("indices", F::Uint32)],
        &[Column::Uint32(&idx)],
        &[],
        &[],
        IntegerRounding::Truncate,
    );
    assert_eq!(r, Float32(vec![0.0, 2.0, 3.0, 4096.0]));

    // uint32(position) with nearest: -1.5 saturates to 0, 1.5 → 2, 2.5 → 3.
    let pos = [-1.5f32, 1.5, 2.5, 0.49999997, 5e9];
    let r = eval(
        "uint32(position)",
        &[("position", F::Float32)],
        &[Column::Float32(&pos)],
        &[],
        &[],
        IntegerRounding::Nearest,
    );
    assert_eq!(r, Uint32(vec![0, 2, 3, 0, u32::MAX]));
    // nearest maps -1.5 to -2 and 1.5 to 2 before saturation; truncate gives -1 and 1.
    let half = [-1.5f32, 1.5, -0.5, 0.5, -2.5];
    for (rounding, want) in [
        (IntegerRounding::Nearest, vec![-2, 2, -1, 1, -3]),
        (IntegerRounding::Truncate, vec![-1, 1, 0, 0, -2]),
    ] {
        let r = eval(
            "sint32(x)",
            &[("x", F::Float32)],
            &[Column::Float32(&half)],
            &[],
            &[],
            rounding,
        );
        assert_eq!(r, Sint32(want), "{rounding:?}");
    }

    // dot(vec3(1, 2, 3), vec3(4, 5, 6)) is 32; length(vec2(3, 4)) is 5.
    assert_eq!(
        constant("dot(vec3(1, 2, 3), vec3(4, 5, 6))"),
        Float32(vec![32.0])
    );
    assert_eq!(constant("length(vec2(3, 4))"), Float32(vec![5.0]));
    // One-component rows: dot is multiplication, length is magnitude.
    assert_eq!(constant("dot(-3, 4)"), Float32(vec![-12.0]));
    assert_eq!(constant("length(-3)"), Float32(vec![3.0]));

    // length(positions) per row; positions / (distance + epsilon).
    let p = [3.0f32, 4.0, 0.0, 0.0, 0.0, 0.0];
    let distance = eval(
        "length(positions)",
        &[("positions", F::Float32x3)],
        &[Column::Float32(&p)],
        &[],
        &[],
        IntegerRounding::Truncate,
    );
    assert_eq!(distance, Float32(vec![5.0, 0.0]));
    let dir = eval(
        "positions / (distance + epsilon)",
        &[("positions", F::Float32x3), ("distance", F::Float32)],
        &[Column::Float32(&p), distance.as_column()],
        &[("epsilon", F32)],
        &[ScalarValue::Float32(1e-6)],
        IntegerRounding::Truncate,
    );
    let Float32(d) = dir else { panic!() };
    assert!((d[0] - 0.6).abs() < 1e-6 && (d[1] - 0.8).abs() < 1e-6);
    assert_eq!(&d[3..], &[0.0, 0.0, 0.0], "zero positions remain zero");

    // equalAll(ids, vec3(targetId)) and the highlight example.
    let ids3 = [5u32, 5, 5, 5, 6, 5];
    let r = eval(
        "equalAll(ids, vec3(targetId))",
        &[("ids", F::Uint32x3)],
        &[Column::Uint32(&ids3)],
        &[("targetId", U32)],
        &[ScalarValue::Uint32(5)],
        IntegerRounding::Truncate,
    );
    assert_eq!(r, Uint32(vec![1, 0]));
    let ids1 = [3u32, 9];
    let colors = [0.1f32, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8];
    let r = eval(
        "select(equalAll(ids, selectedId), vec4(1, 1, 0, 1), colors)",
        &[("ids", F::Uint32), ("colors", F::Float32x4)],
        &[Column::Uint32(&ids1), Column::Float32(&colors)],
        &[("selectedId", U32)],
        &[ScalarValue::Uint32(9)],
        IntegerRounding::Truncate,
    );
    assert_eq!(r, Float32(vec![0.1, 0.2, 0.3, 0.4, 1.0, 1.0, 0.0, 1.0]));

    // select(vec3(0, -2, 0.5), vec3(10), vec3(20)) produces vec3(20, 10, 10).
    assert_eq!(
        constant("select(vec3(0, -2, 0.5), vec3(10), vec3(20))"),
        Float32(vec![20.0, 10.0, 10.0])
    );
    // Integer branches keep their type and precision; fractional conditions are true.
    let big = [4_294_967_295u32, 16_777_217];
    let cond = [0.25f32, 0.0];
    let r = eval(
        "select(mask, ids, uint32(0))",
        &[("mask", F::Float32), ("ids", F::Uint32)],
        &[Column::Float32(&cond), Column::Uint32(&big)],
        &[],
        &[],
        IntegerRounding::Truncate,
    );
    assert_eq!(r, Uint32(vec![4_294_967_295, 0]));

    // 'input * scale' (the full-graph composition example).
    let input = [1.0f32, -2.0];
    let r = eval(
        "input * scale",
        &[("input", F::Float32)],
        &[Column::Float32(&input)],
        &[("scale", F32)],
        &[ScalarValue::Float32(2.0)],
        IntegerRounding::Truncate,
    );
    assert_eq!(r, Float32(vec![2.0, -4.0]));
}

#[test]
fn casts_saturate_and_integers_stay_exact() {
    use Values::*;
    let r = |text: &str, rounding| eval(text, &[], &[], &[], &[], rounding);
    let t = IntegerRounding::Truncate;
    let n = IntegerRounding::Nearest;
    assert_eq!(
        r("sint32(vec4(1e10, -1e10, 2.9, -2.9))", t),
        Sint32(vec![i32::MAX, i32::MIN, 2, -2])
    );
    assert_eq!(
        r("sint32(vec4(1e10, -1e10, 2.9, -2.9))", n),
        Sint32(vec![i32::MAX, i32::MIN, 3, -3])
    );
    assert_eq!(
        r("uint32(vec4(1e10, -1e10, 2.9, -0.9))", t),
        Uint32(vec![u32::MAX, 0, 2, 0])
    );
    // The option applies to nested casts too; integer→integer casts ignore it and saturate.
    assert_eq!(r("uint32(sint32(vec2(-2.5, 2.5)))", n), Uint32(vec![0, 3]));
    assert_eq!(r("sint32(uint32(3e9))", t), Sint32(vec![i32::MAX]));
    assert_eq!(r("uint32(sint32(-7))", t), Uint32(vec![0]));
    // NaN and infinities from arithmetic: NaN → 0, ±inf saturate.
    assert_eq!(
        r("sint32(vec3(0 / 0, 1 / 0, -1 / 0))", t),
        Sint32(vec![0, i32::MAX, i32::MIN])
    );
    assert_eq!(
        r("uint32(vec3(0 / 0, 1 / 0, -1 / 0))", n),
        Uint32(vec![0, u32::MAX, 0])
    );
    // float32 of integers rounds to nearest even past 2^24.
    let ints = [16_777_217u32, 16_777_219, 4_294_967_295, 2_147_483_647];
    let v = eval(
        "float32(ids)",
        &[("ids", F::Uint32)],
        &[Column::Uint32(&ints)],
        &[],
        &[],
        t,
    );
    assert_eq!(
        v,
        Float32(vec![
            16_777_216.0,
            16_777_220.0,
            4_294_967_296.0,
            2_147_483_648.0
        ])
    );
    let s = [-16_777_217i32, i32::MIN, i32::MAX, -3];
    let v = eval(
        "float32(ids)",
        &[("ids", F::Sint32)],
        &[Column::Sint32(&s)],
        &[],
        &[],
        t,
    );
    assert_eq!(
        v,
        Float32(vec![-16_777_216.0, -2_147_483_648.0, 2_147_483_648.0, -3.0])
    );
    // Exact uint32 equality past 2^24 (float32 would merge these).
    let a = [16_777_217u32, 16_777_217];
    let b = [16_777_216u32, 16_777_217];
    let v = eval(
        "equalAll(a, b)",
        &[("a", F::Uint32), ("b", F::Uint32)],
        &[Column::Uint32(&a), Column::Uint32(&b)],
        &[],
        &[],
        t,
    );
    assert_eq!(v, Uint32(vec![0, 1]));
    // Float equality is exact IEEE equality: -0 == 0, NaN != NaN.
    assert_eq!(
        r("equalAll(vec2(0, 0 / 0), vec2(-0, 0 / 0))", t),
        Uint32(vec![0])
    );
    assert_eq!(r("equalAll(0, -0)", t), Uint32(vec![1]));
    assert_eq!(r("equalAll(0.1, 0.1000001)", t), Uint32(vec![0]));
    // Conditions: -0 is false, NaN and negative values are true, per component.
    assert_eq!(
        r("select(vec3(-0, 0 / 0, -1), vec3(1), 2)", t),
        Float32(vec![2.0, 1.0, 1.0])
    );
}

#[test]
fn an_ast_is_usable_in_place_of_the_string() {
    let text = "select(equalAll(ids, selectedId), vec4(1, 1, 0, 1), colors)";
    let from_text = compile(text).unwrap();
    let tree: Expr = parse(text).unwrap();
    let from_ast = compile_expression(
        Some("op"),
        tree,
        &INPUTS,
        &SCALARS,
        &ExpressionOptions::default(),
    )
    .unwrap();
    assert_eq!(from_ast.output_format(), from_text.output_format());
    assert_eq!(from_ast.wgsl(), from_text.wgsl());
    // A hand-built AST gets the same diagnostics as text.
    let bad = Expr::member(Expr::ident("positions"), "w");
    let err = compile_expression(
        Some("op"),
        bad,
        &INPUTS,
        &SCALARS,
        &ExpressionOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "op: .w needs 4 components; positions has 3"
    );
    let nan = Expr::number(f64::NAN);
    let err =
        compile_expression(Some("op"), nan, &[], &[], &ExpressionOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op: numeric literal NaN is not a finite float32 number"
    );
}

#[test]
fn cpu_bindings_are_checked() {
    let c = compile_expression(
        Some("op"),
        "a + b * s",
        &[
            ("a", F::Float32x2),
            ("b", F::Float32x2),
            ("unused", F::Uint32),
        ],
        &[("s", F32)],
        &ExpressionOptions::default(),
    )
    .unwrap();
    let a = [1.0f32, 2.0, 3.0, 4.0];
    let short = [1.0f32, 2.0];
    let odd = [1.0f32, 2.0, 3.0];
    let u = [0u32; 7];
    let s = [ScalarValue::Float32(1.0)];
    let e = |cols: &[Column<'_>], sc: &[ScalarValue]| c.evaluate(cols, sc).unwrap_err().to_string();
    assert_eq!(
        e(&[Column::Float32(&a)], &s),
        "op: expected 3 input columns (a, b, unused), got 1"
    );
    assert_eq!(
        e(
            &[Column::Float32(&a), Column::Uint32(&u), Column::Uint32(&u)],
            &s
        ),
        "op: input b is declared float32x2 but the column holds uint32 components"
    );
    assert_eq!(
        e(
            &[
                Column::Float32(&a),
                Column::Float32(&odd),
                Column::Uint32(&u)
            ],
            &s
        ),
        "op: input b (float32x2) has 3 components, not a multiple of its width 2"
    );
    assert_eq!(
        e(
            &[
                Column::Float32(&a),
                Column::Float32(&short),
                Column::Uint32(&u)
            ],
            &s
        ),
        "op: input b has 1 rows but a has 2; vector operands need equal lengths"
    );
    assert_eq!(
        e(
            &[Column::Float32(&a), Column::Float32(&a), Column::Uint32(&u)],
            &[ScalarValue::Uint32(1)]
        ),
        "op: scalar s is declared float32 but the value is uint32"
    );
    // Unreferenced inputs do not constrain the row count.
    let r = c
        .evaluate(
            &[Column::Float32(&a), Column::Float32(&a), Column::Uint32(&u)],
            &s,
        )
        .unwrap();
    assert_eq!(r, Values::Float32(vec![2.0, 4.0, 6.0, 8.0]));
    // Constant expressions produce one row even with vector inputs declared.
    let k = compile_expression(
        None,
        "s * 2",
        &[("a", F::Float32)],
        &[("s", F32)],
        &Default::default(),
    )
    .unwrap();
    assert!(!k.is_row_sized());
    assert_eq!(
        k.evaluate(&[Column::Float32(&a)], &s).unwrap(),
        Values::Float32(vec![2.0])
    );
}

/// The spec's example diagnostic: the operation id prefixes the message once; `reorder:` in
/// the spec's table is that example's id, not part of the text (issue 10 §3).
#[test]
fn the_operation_id_prefixes_the_width_diagnostic_once() {
    let positions = [("positions", F::Float32x3)];
    for (id, want) in [
        (
            Some("reorder"),
            "reorder: .w needs 4 components; positions has 3",
        ),
        (
            None,
            "output-expression: .w needs 4 components; positions has 3",
        ),
    ] {
        let err = compile_expression(
            id,
            "positions.w",
            &positions,
            &[],
            &ExpressionOptions::output("output"),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), want);
        assert_eq!(err.message, ".w needs 4 components; positions has 3");
    }
}

/// The comparison and logic extension: types, widths, rejections, values (NaN compares false
/// except notEqual; -0 == 0; integers exact past 2^24).
#[test]
fn comparison_and_logic_functions_type_check_and_evaluate() {
    for (text, want) in [
        ("lessThan(values, 0.5)", F::Uint32),
        ("greaterThan(positions, 1)", F::Uint32x3),
        ("greaterThanEqual(1, positions)", F::Uint32x3),
        ("equal(ids3, selectedId)", F::Uint32x3),
        ("notEqual(indices, integerPositions)", F::Uint32x3),
        ("lessThanEqual(ids, targetIds)", F::Uint32),
        (
            "and(lessThan(values, 1), greaterThan(weights, 0))",
            F::Uint32,
        ),
        ("or(umask3, equal(ids, selectedId))", F::Uint32x3),
        ("not(umask3)", F::Uint32x3),
        ("select(greaterThan(values, 2), values, 0)", F::Float32),
        (
            "select(lessThan(positions, 0), -positions, positions)",
            F::Float32x3,
        ),
    ] {
        assert_eq!(ok(text), want, "{text}");
    }
    use ExprErrorKind::*;
    for (text, kind, want) in [
        ("lessThan(ids, 1)", Type, "lessThan requires matching component types; ids is uint32, 1 is float32 (cast one side, e.g. float32(...))"),
        ("equal(positions, uv)", Width, "equal requires matching row widths or one component; positions has 3, uv has 2"),
        ("and(values, ids)", Type, "and requires uint32 masks; values is float32 (make a mask with a comparison, e.g. notEqual(values, 0))"),
        ("not(imask)", Type, "not requires uint32 masks; imask is sint32"),
        ("or(umask3, lessThan(uv, 0))", Width, "or requires matching row widths or one component; umask3 has 3, lessThan(uv, 0) has 2"),
        ("not(ids, ids)", Unsupported, "not expects 1 argument; got 2"),
        ("lessThan(values)", Unsupported, "lessThan expects 2 arguments; got 1"),
    ] {
        let (k, msg) = compile(text).unwrap_err();
        assert_eq!(k, kind, "{text}: {msg}");
        assert!(msg.starts_with(want), "{text}: {msg}");
    }
    // The spec's rejection texts for the JavaScript operators stay.
    let (_, msg) = compile("values < 1").unwrap_err();
    assert!(
        msg.starts_with("comparison operator < is not supported"),
        "{msg}"
    );

    let e = compile("vec4(float32(lessThan(values, weights)), float32(notEqual(values, weights)), float32(equal(values, weights)), float32(and(greaterThanEqual(values, weights), lessThanEqual(values, weights))))").unwrap();
    let nan = f32::NAN;
    let values = [nan, 1.0, -0.0, 2.0, nan];
    let weights = [1.0, nan, 0.0, 3.0, nan];
    let cols: Vec<Column<'_>> = INPUTS
        .iter()
        .map(|(n, f)| match *n {
            "values" => Column::Float32(&values),
            "weights" => Column::Float32(&weights),
            _ => match ValueType::from_format(*f).unwrap().scalar {
                F32 => Column::Float32(&[]),
                I32 => Column::Sint32(&[]),
                U32 => Column::Uint32(&[]),
            },
        })
        .collect();
    let scalars = [
        ScalarValue::Float32(1.0),
        ScalarValue::Float32(1.0),
        ScalarValue::Uint32(0),
        ScalarValue::Uint32(0),
        ScalarValue::Sint32(0),
    ];
    let Values::Float32(got) = e.evaluate(&cols, &scalars).unwrap() else {
        panic!("float32x4")
    };
    let want = [
        [0.0, 1.0, 0.0, 0.0], // NaN vs 1: only notEqual
        [0.0, 1.0, 0.0, 0.0], // 1 vs NaN
        [0.0, 0.0, 1.0, 1.0], // -0 vs 0: equal
        [1.0, 1.0, 0.0, 0.0], // 2 < 3
        [0.0, 1.0, 0.0, 0.0], // NaN vs NaN
    ];
    assert_eq!(got, want.concat());
}
