//! Every generated shader validates with naga (no device needed): the language's forms, every
//! cast/rounding pair, and hundreds of random expressions.

mod expr_common;

use gpugraph_command::VectorFormat as F;
use gpugraph_program::expr::wgsl::ENTRY_POINT;
use gpugraph_program::expr::{
    compile_expression, CompiledExpression, ExpressionOptions, IntegerRounding, ScalarType,
};

fn validate(e: &CompiledExpression) {
    let src = e.wgsl();
    let module = naga::front::wgsl::parse_str(src)
        .unwrap_or_else(|err| panic!("{}: {}\n{src}", e.ast(), err.emit_to_string(src)));
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    )
    .validate(&module)
    .unwrap_or_else(|err| panic!("{}: {err:?}\n{src}", e.ast()));
    assert!(
        module.entry_points.iter().any(|ep| ep.name == ENTRY_POINT),
        "{}",
        e.ast()
    );
}

const INPUTS: [(&str, F); 8] = [
    ("p", F::Float32x3),
    ("c", F::Float32x4),
    ("w", F::Float32),
    ("uv", F::Float32x2),
    ("ids", F::Uint32),
    ("u4", F::Uint32x4),
    ("si", F::Sint32x3),
    ("i1", F::Sint32),
];
const SCALARS: [(&str, ScalarType); 3] = [
    ("s", ScalarType::Float32),
    ("su", ScalarType::Uint32),
    ("si1", ScalarType::Sint32),
];

#[test]
fn every_form_generates_valid_wgsl() {
    let forms = [
        "p",
        "w",
        "ids",
        "s",
        "1",
        "-p",
        "p + c.xyz",
        "p - w",
        "w * p",
        "p / s",
        "abs(p)",
        "sqrt(w)",
        "sin(uv)",
        "cos(c)",
        "tan(p)",
        "exp(w)",
        "log(uv)",
        "pow(p, 2)",
        "pow(2, p)",
        "pow(w, uv)",
        "pow(c, c)",
        "p.zyx",
        "p.xxyz",
        "w.xx",
        "w.x",
        "s.xxx",
        "(p + p).yz.x",
        "vec2(w)",
        "vec4(s)",
        "vec4(p, 1)",
        "vec4(uv, uv)",
        "vec3(p)",
        "vec3(si.xy, i1)",
        "vec2(ids, su)",
        "dot(p, p)",
        "dot(w, s)",
        "dot(c, c)",
        "length(w)",
        "length(uv)",
        "equalAll(p, p)",
        "equalAll(w, s)",
        "equalAll(ids, su)",
        "equalAll(u4, u4.wzyx)",
        "equalAll(si, si)",
        "select(w, p, 0)",
        "select(p, p, 1)",
        "select(ids, si, i1)",
        "select(u4, c, c)",
        "select(si, u4.xyz, su)",
        "select(s, 1, 2)",
        "select(c, 0, c)",
        "1.5e-45 + s",
        "-0 + s",
        "16777217",
        "3.4028235e38",
        "0.1",
        "lessThan(p, w)",
        "lessThanEqual(si, i1)",
        "greaterThan(u4, su)",
        "greaterThanEqual(c, c)",
        "equal(uv, s)",
        "notEqual(ids, su)",
        "and(ids, u4)",
        "or(greaterThan(w, 0), equal(ids, su))",
        "not(u4)",
        "select(greaterThan(w, 2), w, 0)",
    ];
    let casts = ["float32", "sint32", "uint32"];
    let sources = ["p", "w", "si", "i1", "u4", "ids", "s", "su", "si1"];
    let mut all: Vec<String> = forms.iter().map(|s| s.to_string()).collect();
    for c in casts {
        for s in sources {
            all.push(format!("{c}({s})"));
        }
    }
    for rounding in [IntegerRounding::Truncate, IntegerRounding::Nearest] {
        for text in &all {
            let e = compile_expression(
                None,
                text.as_str(),
                &INPUTS,
                &SCALARS,
                &ExpressionOptions::default().with_rounding(rounding),
            )
            .unwrap_or_else(|err| panic!("{err}"));
            validate(&e);
        }
    }
}

#[test]
fn random_expressions_generate_valid_wgsl() {
    let d = expr_common::random_decls();
    let inputs: Vec<(&str, F)> = d.inputs.iter().map(|(n, t)| (*n, t.format())).collect();
    for (text, rounding) in expr_common::random_expressions(99, 400) {
        let e = compile_expression(
            None,
            text.as_str(),
            &inputs,
            &d.scalars,
            &ExpressionOptions::default().with_rounding(rounding),
        )
        .unwrap_or_else(|err| panic!("{text}: {err}"));
        validate(&e);
    }
}

#[test]
fn float_literals_reach_the_shader_bit_exactly() {
    for v in [
        0.1f32,
        1.0 / 3.0,
        1e-40,
        f32::MAX,
        16_777_217.0,
        -2.5,
        0.0,
        1.0,
    ] {
        // A leading minus is negation of the positive literal.
        let text = format!("{v:e}");
        let v = v.abs();
        let e = compile_expression(None, text.as_str(), &[], &[], &Default::default()).unwrap();
        // As a bit pattern XORed with a run-time zero: no decimal double rounding, and no
        // compiler can fold the value into `x * 0`, `x / 0` or `0 - x`.
        assert!(
            e.wgsl()
                .contains(&format!("bitcast<f32>(0x{:08x}u ^ ~fence)", v.to_bits())),
            "{text}\n{}",
            e.wgsl()
        );
        validate(&e);
    }
}

/// Every float operation reads its operands through the opaque identities, so no compiler can
/// contract `p * s + o` into a fused multiply-add in one shader and not in another (issue 10:
/// Graph and SimpleGraph differed by one ulp on NVIDIA) or fold `x - x`.
#[test]
fn float_operands_are_opaque_to_the_compiler() {
    let e = compile_expression(
        None,
        "p * s + c.xyz - p / s",
        &INPUTS,
        &SCALARS,
        &ExpressionOptions::default(),
    )
    .unwrap();
    let src = e.wgsl();
    for line in src.lines().filter(|l| l.trim_start().starts_with("let t")) {
        let rhs = line.split_once(" = ").map_or("", |(_, r)| r);
        for op in [" * ", " + ", " - "] {
            if let Some((l, r)) = rhs.split_once(op) {
                assert!(
                    l.rsplit('(')
                        .nth(1)
                        .is_some_and(|f| f.ends_with("keep_v3f") || f.ends_with("keep_f32")),
                    "left operand of{op}not opaque: {line}\n{src}"
                );
                assert!(
                    r.starts_with("hold_"),
                    "right operand of{op}not opaque: {line}\n{src}"
                );
            }
        }
    }
    assert!(src.contains("div_f32("), "{src}");
    validate(&e);
}

#[test]
fn shaders_bind_only_what_the_expression_reads() {
    let e = compile_expression(
        None,
        "c.x * s",
        &INPUTS,
        &SCALARS,
        &ExpressionOptions::default(),
    )
    .unwrap();
    assert_eq!(e.layout().inputs, vec![1]);
    assert_eq!(e.layout().scalars, vec![0]);
    assert_eq!(e.layout().binding_count(), 4);
    assert!(e
        .wgsl()
        .contains("@binding(2) var<storage, read> in0: array<f32>; // c (float32x4)"));
    assert!(e
        .wgsl()
        .contains("@binding(3) var<storage, read> sc0: array<f32>; // s (float32)"));
    validate(&e);
}
