//! Any text through the expression front end must return a value or a typed error, never
//! panic: `parse`, then `compile_expression` (names, types, WGSL generation) under both
//! roundings against declarations of every type and width. For expressions that compile:
//! the CPU oracle evaluates two rows without a binding error, the canonical text
//! (`Display` of the AST) compiles to the same shader, and naga validates that shader.

#![no_main]

use gpugraph_command::VectorFormat as F;
use gpugraph_program::expr::{Column, ScalarValue, ValueType};
use gpugraph_program::{
    compile_expression, parse, CompiledExpression, ExpressionOptions, IntegerRounding, ScalarType,
};
use libfuzzer_sys::fuzz_target;

const INPUTS: [(&str, F); 9] = [
    ("positions", F::Float32x3),
    ("offset", F::Float32x3),
    ("w", F::Float32),
    ("uv", F::Float32x2),
    ("c", F::Float32x4),
    ("ids", F::Uint32),
    ("u4", F::Uint32x4),
    ("si", F::Sint32x3),
    ("i1", F::Sint32),
];
const SCALARS: [(&str, ScalarType); 3] = [
    ("scale", ScalarType::Float32),
    ("n", ScalarType::Sint32),
    ("m", ScalarType::Uint32),
];
const ROWS: usize = 2;

/// Two rows of one input, with awkward values (zero, signs, extremes, halves).
enum Rows {
    Float32(Vec<f32>),
    Sint32(Vec<i32>),
    Uint32(Vec<u32>),
}

fn rows(format: F) -> Rows {
    const F32: [f32; 8] = [0.0, -1.5, 2.5, 1e30, -0.0, 3.25, -7.0, 0.5];
    const I32: [i32; 8] = [0, -1, i32::MAX, i32::MIN, 7, -3, 2, 1];
    const U32: [u32; 8] = [0, 1, u32::MAX, 1 << 31, 5, 9, 2, 3];
    let n = format.components() as usize * ROWS;
    let ty = ValueType::from_format(format).expect("declared formats are in the subset");
    match ty.scalar {
        ScalarType::Float32 => Rows::Float32(F32.iter().copied().cycle().take(n).collect()),
        ScalarType::Sint32 => Rows::Sint32(I32.iter().copied().cycle().take(n).collect()),
        ScalarType::Uint32 => Rows::Uint32(U32.iter().copied().cycle().take(n).collect()),
    }
}

fn compile(text: &str, rounding: IntegerRounding) -> Result<CompiledExpression, String> {
    compile_expression(
        Some("fuzz"),
        text,
        &INPUTS,
        &SCALARS,
        &ExpressionOptions::output("r").with_rounding(rounding),
    )
    .map_err(|e| e.to_string())
}

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
}

fn evaluate(e: &CompiledExpression) {
    let data: Vec<Rows> = INPUTS.iter().map(|(_, f)| rows(*f)).collect();
    let cols: Vec<Column<'_>> = data
        .iter()
        .map(|r| match r {
            Rows::Float32(v) => Column::Float32(v),
            Rows::Sint32(v) => Column::Sint32(v),
            Rows::Uint32(v) => Column::Uint32(v),
        })
        .collect();
    let scalars = [
        ScalarValue::Float32(-2.5),
        ScalarValue::Sint32(-3),
        ScalarValue::Uint32(4_000_000_000),
    ];
    let out = e
        .evaluate(&cols, &scalars)
        .unwrap_or_else(|err| panic!("{}: matching bindings rejected: {err}", e.ast()));
    let rows = if e.is_row_sized() { ROWS } else { 1 };
    assert_eq!(
        out.len(),
        rows * e.output_type().width as usize,
        "{}: output size",
        e.ast()
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse(text);
    for rounding in [IntegerRounding::Truncate, IntegerRounding::Nearest] {
        let compiled = compile(text, rounding);
        // Text and its parsed tree get the same verdict.
        if let Ok(ast) = &parsed {
            let from_ast = compile_expression(
                Some("fuzz"),
                ast,
                &INPUTS,
                &SCALARS,
                &ExpressionOptions::output("r").with_rounding(rounding),
            )
            .map(|e| e.wgsl().to_string())
            .map_err(|e| e.to_string());
            assert_eq!(
                compiled
                    .as_ref()
                    .map(|e| e.wgsl().to_string())
                    .map_err(Clone::clone),
                from_ast,
                "text and AST disagree for {text:?}"
            );
        } else {
            assert!(compiled.is_err(), "{text:?} compiles but does not parse");
        }
        let Ok(e) = compiled else {
            continue;
        };
        // The canonical text is a fixed point: it compiles to the very same shader.
        let canonical = e.ast().to_string();
        let again = compile(&canonical, rounding)
            .unwrap_or_else(|err| panic!("canonical {canonical:?} of {text:?} fails: {err}"));
        assert_eq!(
            again.wgsl(),
            e.wgsl(),
            "canonical {canonical:?} of {text:?} differs"
        );
        evaluate(&e);
        validate(&e);
    }
});
