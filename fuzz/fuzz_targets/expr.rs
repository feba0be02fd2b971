//! The expression language's front end on arbitrary text: parse, type-check and generate WGSL
//! for any UTF-8 input over a fixed set of declared inputs and scalars (the first byte picks
//! the integer rounding). Never a panic; an accepted expression's WGSL must be valid (naga
//! parses and validates it, as wgpu would before compiling it).
#![no_main]

use gpugraph_command::VectorFormat;
use gpugraph_program::expr::{compile_expression, ExpressionOptions, IntegerRounding, ScalarType};
use libfuzzer_sys::fuzz_target;

const INPUTS: [(&str, VectorFormat); 5] = [
    ("positions", VectorFormat::Float32x3),
    ("speed", VectorFormat::Float32),
    ("ids", VectorFormat::Uint32),
    ("offsets", VectorFormat::Sint32x2),
    ("colors", VectorFormat::Float32x4),
];
const SCALARS: [(&str, ScalarType); 3] = [
    ("scale", ScalarType::Float32),
    ("count", ScalarType::Uint32),
    ("shift", ScalarType::Sint32),
];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let rounding = if mode % 2 == 0 {
        IntegerRounding::Truncate
    } else {
        IntegerRounding::Nearest
    };
    let options = ExpressionOptions::default().with_rounding(rounding);
    let Ok(compiled) = compile_expression(None, text, &INPUTS, &SCALARS, &options) else {
        return;
    };
    let module = naga::front::wgsl::parse_str(compiled.wgsl())
        .unwrap_or_else(|e| panic!("generated WGSL does not parse for {text:?}: {e}"));
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("generated WGSL is invalid for {text:?}: {e:?}"));
});
