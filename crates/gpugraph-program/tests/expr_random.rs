//! Seeded random well-typed expressions: the GPU agrees with the CPU oracle within the bounds
//! a conformant GPU may return (integers exactly), over uneven chunks with empty ones.

mod expr_common;

use expr_common::{
    check_within_bounds, random_column, random_expressions, random_scalar, run_gpu, Scalars,
};
use gpugraph_program::expr::{
    compile_expression, Column, ExpressionKernel, ExpressionOptions, ScalarType,
};
use gpugraph_testing::{ctx, rng, uneven_chunks};
use rand::Rng;

#[test]
fn random_expressions_match_the_oracle_on_the_gpu() {
    let ctx = ctx();
    let d = expr_common::random_decls();
    let inputs: Vec<(&str, gpugraph_command::VectorFormat)> =
        d.inputs.iter().map(|(n, t)| (*n, t.format())).collect();
    let mut r = rng(2024);
    let mut checked = 0;
    for (n, (text, rounding)) in random_expressions(7, 60).into_iter().enumerate() {
        let e = compile_expression(
            None,
            text.as_str(),
            &inputs,
            &d.scalars,
            &ExpressionOptions::output("r").with_rounding(rounding),
        )
        .unwrap_or_else(|err| panic!("generated expression {text}: {err}"));
        let rows = r.random_range(1..700);
        let data: Vec<Vec<u32>> = d
            .inputs
            .iter()
            .map(|(_, t)| random_column(&mut r, *t, rows))
            .collect();
        let scalars: Vec<_> = d
            .scalars
            .iter()
            .map(|(_, t)| random_scalar(&mut r, *t))
            .collect();
        let chunks = if e.is_row_sized() {
            [vec![0], uneven_chunks(&mut r, rows, 3), vec![0]].concat()
        } else {
            vec![1]
        };
        let mode = if n % 2 == 0 {
            Scalars::Values
        } else {
            Scalars::Views
        };
        let kernel = ExpressionKernel::new(e.clone());
        let gpu = run_gpu(&ctx, &kernel, &data, &scalars, &chunks, mode);
        let cols: Vec<Column<'_>> = d
            .inputs
            .iter()
            .zip(&data)
            .map(|((_, t), v)| match t.scalar {
                ScalarType::Float32 => Column::Float32(bytemuck::cast_slice(v)),
                ScalarType::Sint32 => Column::Sint32(bytemuck::cast_slice(v)),
                ScalarType::Uint32 => Column::Uint32(v),
            })
            .collect();
        let oracle = e.evaluate(&cols, &scalars).unwrap().to_bits();
        check_within_bounds(&e, &data, &scalars, &gpu, &oracle)
            .unwrap_or_else(|m| panic!("expression #{n} ({rounding:?}): {m}"));
        checked += gpu.len();
    }
    assert!(checked > 10_000, "checked {checked} components");
}
