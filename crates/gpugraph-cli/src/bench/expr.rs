//! `bench expr`: the expression kernel on `positions * scale + offset` over float32x3 rows
//! (positions and offset vectors, scale a host float32 scalar). Elements are rows; each row
//! reads 24 bytes and writes 12 (36 bytes per element). The graph is the kernel's single
//! compute node over imported buffers, so the timing covers the generated shader only.

use anyhow::{bail, Result};
use gpugraph_command::{CommandGraph, VectorFormat};
use gpugraph_program::expr::{Column, ScalarBinding, ScalarValue, Values};
use gpugraph_program::{compile_expression, ExpressionKernel, ExpressionOptions, ScalarType};
use rand::{Rng, SeedableRng};

use super::primitives::Case;
use crate::gpu::{import_as, Gpu};

/// Operation name in the table and JSON (`bench/peers/peers.py` uses the same name).
pub const OP: &str = "expr-madd-f32x3";
/// The benchmarked expression.
pub const EXPRESSION: &str = "positions * scale + offset";
/// Bytes per row at minimum: two float32x3 rows read, one written.
pub const BYTES_PER_ROW: f64 = 36.0;

/// `n` rows × 3 random components in [-1000, 1000) from a fixed seed.
fn random_rows(n: u64, seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n * 3)
        .map(|_| rng.random_range(-1000.0f32..1000.0))
        .collect()
}

/// The row format of every vector of the bench.
const ROWS: VectorFormat = VectorFormat::Float32x3;

/// One case at `n` rows: compiled kernel graph plus a check against the CPU oracle.
pub fn cases(gpu: &Gpu, n: u64) -> Result<Vec<Case>> {
    let expr = compile_expression(
        Some(OP),
        EXPRESSION,
        &[
            ("positions", VectorFormat::Float32x3),
            ("offset", VectorFormat::Float32x3),
        ],
        &[("scale", ScalarType::Float32)],
        &ExpressionOptions::output("moved"),
    )?;
    let scale = 1.618_034_f32;
    let (positions, offset) = (random_rows(n, 11), random_rows(n, 12));
    let Values::Float32(want) = expr.evaluate(
        &[Column::Float32(&positions), Column::Float32(&offset)],
        &[ScalarValue::Float32(scale)],
    )?
    else {
        bail!("{OP}: the CPU oracle did not produce float32 values");
    };
    let bp = gpu.upload("expr-positions", bytemuck::cast_slice(&positions));
    let bo = gpu.upload("expr-offset", bytemuck::cast_slice(&offset));
    let out = gpu.upload("expr-out", &vec![0xDEAD_BEEF; 3 * n as usize]);
    let mut g = CommandGraph::new("bench-expr", gpu.device());
    let inputs = [
        import_as(&mut g, "positions", &bp, ROWS, n)?.into(),
        import_as(&mut g, "offset", &bo, ROWS, n)?.into(),
    ];
    let output = import_as(&mut g, "moved", &out, ROWS, n)?.into();
    ExpressionKernel::new(expr).add_to_graph(
        &mut g,
        &inputs,
        &[ScalarBinding::Value(ScalarValue::Float32(scale))],
        &output,
    )?;
    Ok(vec![Case {
        op: OP.into(),
        bytes_per_element: BYTES_PER_ROW,
        graph: g.compile()?,
        check: Box::new(move |gpu| {
            let got: Vec<f32> = gpu
                .read_back(&out, 3 * n)?
                .into_iter()
                .map(f32::from_bits)
                .collect();
            // The GPU may fuse the multiply-add (one rounding instead of two).
            check_close(&got, &want, |i| {
                f32::EPSILON * ((positions[i] * scale).abs() + offset[i].abs() + want[i].abs())
            })
        }),
    }])
}

/// Fails unless every component is within `tol(i)` of the oracle, naming the first that is not.
fn check_close(got: &[f32], want: &[f32], tol: impl Fn(usize) -> f32) -> Result<()> {
    if got.len() != want.len() {
        bail!(
            "{OP}: result has {} components, expected {}",
            got.len(),
            want.len()
        );
    }
    // Written so that NaN fails.
    let within = |i: usize| (got[i] - want[i]).abs() <= tol(i);
    if let Some(i) = (0..got.len()).find(|&i| !within(i)) {
        bail!(
            "{OP}: row {} component {} is {} but the CPU oracle says {} (tolerance {})",
            i / 3,
            i % 3,
            got[i],
            want[i],
            tol(i)
        );
    }
    Ok(())
}
