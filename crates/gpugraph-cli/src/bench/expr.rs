//! `bench expr`: the expression kernel on `positions * scale + offset` over float32x3 rows
//! (positions and offset vectors, scale a host float32 scalar). Elements are rows; each row
//! reads 24 bytes and writes 12 (36 bytes per element). The graph is the kernel's single
//! compute node over imported buffers, so the timing covers the generated shader only.
//!
//! Also a two-stage chain, `moved = positions * scale + offset` then
//! `dist = length(moved - offset * 0.5)` with only `dist` kept: fused into one shader (moved
//! stays in registers: 24 B read + 4 B written per row) and, for comparison, as two kernels
//! with `moved` in memory (64 B per row). Both are reported at the fused minimum of 28 B.

use anyhow::{bail, Result};
use gpugraph_command::{CommandGraph, VectorFormat, VectorView};
use gpugraph_program::expr::{
    fuse_expressions, Column, CompiledExpression, FusedStage, ScalarBinding, ScalarValue, Values,
};
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

/// The chain's operation name (peers.py uses the same).
pub const CHAIN_OP: &str = "expr-chain-f32x3";
/// The chain's second stage (it reads the first stage's `moved`).
pub const CHAIN_EXPRESSION: &str = "length(moved - offset * 0.5)";
/// Bytes per row of the fused chain: two float32x3 rows read, one float32 written.
pub const CHAIN_BYTES_PER_ROW: f64 = 28.0;

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
    ExpressionKernel::new(expr.clone()).add_to_graph(
        &mut g,
        &inputs,
        &[ScalarBinding::Value(ScalarValue::Float32(scale))],
        &output,
    )?;
    let mut cases = chain_cases(gpu, n, &expr, (&bp, &bo), scale, (&positions, &offset))?;
    cases.insert(
        0,
        Case {
            op: OP.into(),
            bytes_per_element: BYTES_PER_ROW,
            written_bytes_per_element: 12.0,
            graph: g.compile()?,
            check: Box::new(move |gpu| {
                let got: Vec<f32> = gpu
                    .read_back(&out, 3 * n)?
                    .into_iter()
                    .map(f32::from_bits)
                    .collect();
                // The GPU may fuse the multiply-add (one rounding instead of two).
                check_close(OP, &got, &want, |i| {
                    f32::EPSILON * ((positions[i] * scale).abs() + offset[i].abs() + want[i].abs())
                })
            }),
        },
    );
    Ok(cases)
}

/// The chain fused (one node, `moved` in registers) and unfused (two nodes, `moved` in a
/// buffer), both checked against the CPU oracle of the two stages.
fn chain_cases(
    gpu: &Gpu,
    n: u64,
    madd: &CompiledExpression,
    (bp, bo): (
        &gpugraph_command::wgpu::Buffer,
        &gpugraph_command::wgpu::Buffer,
    ),
    scale: f32,
    (positions, offset): (&[f32], &[f32]),
) -> Result<Vec<Case>> {
    let dist = compile_expression(
        Some(CHAIN_OP),
        CHAIN_EXPRESSION,
        &[("moved", ROWS), ("offset", ROWS)],
        &[],
        &ExpressionOptions::output("dist"),
    )?;
    let scalar = [ScalarBinding::Value(ScalarValue::Float32(scale))];
    let Values::Float32(moved) = madd.evaluate(
        &[Column::Float32(positions), Column::Float32(offset)],
        &[ScalarValue::Float32(scale)],
    )?
    else {
        bail!("{CHAIN_OP}: the CPU oracle did not produce float32 values");
    };
    let Values::Float32(want) =
        dist.evaluate(&[Column::Float32(&moved), Column::Float32(offset)], &[])?
    else {
        bail!("{CHAIN_OP}: the CPU oracle did not produce float32 values");
    };
    // Per-row tolerance. `moved - offset * 0.5` cancels: components near 2,600 give lengths
    // near 40, so one ulp of `moved` (which an FMA-contracting compiler, e.g. NVIDIA's, rounds
    // once where the oracle rounds twice) is many ulps of the result. Bound the error by a few
    // ulps of the operands' magnitude, plus a few of the result (Vulkan's sqrt is not correctly
    // rounded).
    let tol: Vec<f32> = (0..want.len())
        .map(|i| {
            let norm = |v: &[f32], k: f32| {
                (0..3)
                    .map(|c| (v[3 * i + c] * k).powi(2))
                    .sum::<f32>()
                    .sqrt()
            };
            let operands = norm(&moved, 1.0) + norm(offset, 0.5);
            4.0 * f32::EPSILON * (operands + want[i].abs().max(1.0))
        })
        .collect();
    let want = std::rc::Rc::new(want);
    let tol = std::rc::Rc::new(tol);
    let mut cases = Vec::new();
    for fused in [true, false] {
        let op = if fused {
            CHAIN_OP.to_string()
        } else {
            format!("{CHAIN_OP}[unfused]")
        };
        let out = gpu.upload("chain-out", &vec![0xDEAD_BEEF; n as usize]);
        let mut g = CommandGraph::new("bench-expr-chain", gpu.device());
        let positions_v: VectorView = import_as(&mut g, "positions", bp, ROWS, n)?.into();
        let offset_v: VectorView = import_as(&mut g, "offset", bo, ROWS, n)?.into();
        let dist_v: VectorView = import_as(&mut g, "dist", &out, VectorFormat::Float32, n)?.into();
        if fused {
            let kernel = ExpressionKernel::fused(fuse_expressions(
                &op,
                vec![
                    FusedStage {
                        expression: madd.clone(),
                        stored: false,
                    },
                    FusedStage {
                        expression: dist.clone(),
                        stored: true,
                    },
                ],
            )?);
            // The shader's inputs in its declaration order (positions, offset).
            let views: Vec<VectorView> = kernel
                .declarations()
                .inputs
                .iter()
                .map(|(name, _)| {
                    if name == "positions" {
                        positions_v.clone()
                    } else {
                        offset_v.clone()
                    }
                })
                .collect();
            kernel.add_fused_to_graph(&mut g, &op, &views, &scalar, &[dist_v])?;
        } else {
            let moved_buf = g.create_buffer(gpugraph_command::BufferDescriptor::new(
                "moved",
                n.max(1) * 12,
                gpugraph_command::wgpu::BufferUsages::STORAGE,
            ))?;
            let moved_v: VectorView = g.create_packed_view(moved_buf, ROWS, n)?.into();
            ExpressionKernel::new(madd.clone()).add_to_graph_as(
                &mut g,
                "moved",
                &[positions_v, offset_v.clone()],
                &scalar,
                &moved_v,
            )?;
            ExpressionKernel::new(dist.clone()).add_to_graph_as(
                &mut g,
                "dist",
                &[moved_v, offset_v],
                &[],
                &dist_v,
            )?;
        }
        let (want, tol, what) = (want.clone(), tol.clone(), op.clone());
        cases.push(Case {
            op,
            bytes_per_element: CHAIN_BYTES_PER_ROW,
            written_bytes_per_element: 4.0,
            graph: g.compile()?,
            check: Box::new(move |gpu| {
                let got: Vec<f32> = gpu
                    .read_back(&out, n)?
                    .into_iter()
                    .map(f32::from_bits)
                    .collect();
                check_close(&what, &got, &want, |i| tol[i])
            }),
        });
    }
    Ok(cases)
}

/// Fails unless every component is within `tol(i)` of the oracle, naming the first that is not.
fn check_close(op: &str, got: &[f32], want: &[f32], tol: impl Fn(usize) -> f32) -> Result<()> {
    if got.len() != want.len() {
        bail!(
            "{op}: result has {} components, expected {}",
            got.len(),
            want.len()
        );
    }
    // Written so that NaN fails.
    let within = |i: usize| (got[i] - want[i]).abs() <= tol(i);
    if let Some(i) = (0..got.len()).find(|&i| !within(i)) {
        bail!(
            "{op}: component {i} is {} but the CPU oracle says {} (tolerance {})",
            got[i],
            want[i],
            tol(i)
        );
    }
    Ok(())
}
