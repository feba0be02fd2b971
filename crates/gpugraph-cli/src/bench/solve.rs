//! `gpugraph bench solve`: Jacobi-PCG on a 2-D Poisson matrix as one gpugraph program (one
//! graph, one submission, the loop exits on the GPU), against `cupyx.scipy.sparse.linalg.cg`
//! (`bench/peers/peers_cg.py`, float32, same matrix, b = ones, same tolerance).
//!
//! A calibration solve with `--max-iter` finds the iterations `n` the tolerance needs (or
//! `--iterations n` skips it); then two rows are timed `--repeat` times each:
//! `pcg[bound=n]` (every unrolled iteration active: ms per iteration) and `pcg[bound=2n]`
//! (n active iterations, then n gated ones whose dispatches have zero workgroups): their
//! difference over n is the cost of one empty gated iteration; and `pcg-empty[bound=n]`
//! (b = 0: the predicate is false before the first iteration, so all n iterations are
//! gated off: solve time / n measures an empty iteration directly, prologue included).
//! `--indirect-validation on|off` (default off) says whether wgpu adds its validation
//! dispatch before every gated dispatch (one process uses one setting: run twice to
//! compare). Times are wall clock from
//! submit to completion of the one submission (encode excluded, reported separately).
//! Minimum traffic per iteration: reads 36 B/row + 8 B/nonzero (offsets, columns, values,
//! p; p, q, D⁻¹, x, r; z, p), writes 20 B/row (q; x, r, z; p); the floor is the streaming
//! kernel of that mix.

use anyhow::{bail, Result};
use clap::Args;
use gpugraph_gpgpu::sparse::{CsrMatrix, PcgVectors};
use gpugraph_program::lowering::BackendCapabilities;
use gpugraph_program::program::pcg::{PcgOptions, PcgSolver};
use serde::Serialize;

use super::floor::Floor;
use super::report::{check_writable, ms, progress, write_json, BenchJson, Summary, Table};
use super::BenchOptions;
use crate::gpu::Gpu;
use crate::solve::{spmv_realization, true_residual, OnOff, Precond, SpmvChoice};

/// Arguments of `bench solve`.
#[derive(Args, Clone, Debug)]
pub struct SolveBenchArgs {
    /// Grid side N of the N×N Poisson problem (N² unknowns).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    pub grid: u32,
    /// Relative tolerance.
    #[arg(long, default_value_t = 1e-6)]
    pub tol: f32,
    /// Bound of the calibration solve.
    #[arg(long = "max-iter", default_value_t = 4000)]
    pub max_iter: u32,
    /// Iterations the tolerance needs, if known (skips the calibration solve).
    #[arg(long)]
    pub iterations: Option<u32>,
    /// Preconditioner.
    #[arg(long, value_enum, default_value_t = Precond::Jacobi)]
    pub precond: Precond,
    /// SpMV realization.
    #[arg(long, value_enum, default_value_t = SpmvChoice::Auto)]
    pub spmv: SpmvChoice,
    /// Rows per workgroup of the PCG vector passes (a power of two ≥ the automatic choice,
    /// which keeps ≤ 1024 partials for the α/β folds): fewer, longer tiles make the folds
    /// cheaper and the passes coarser.
    #[arg(long = "rows-per-wg")]
    pub rows_per_wg: Option<u32>,
    /// wgpu's indirect-dispatch validation (see `gpugraph solve --indirect-validation`).
    #[arg(long = "indirect-validation", value_enum, default_value_t = OnOff::Off)]
    pub indirect_validation: OnOff,
    #[command(flatten)]
    pub options: BenchOptions,
}

/// One timed configuration.
#[derive(Clone, Debug, Serialize)]
pub struct SolveRow {
    /// `pcg[bound=K]`.
    pub op: String,
    /// Unknowns.
    pub elements: u64,
    /// Stored entries.
    pub nonzeros: u64,
    /// Iterations the GPU ran (active).
    pub iterations: u32,
    /// Unrolled (gated) iterations in the graph.
    pub bound: u32,
    /// Submit to completion, milliseconds.
    pub solve_ms: Summary,
    /// `solve_ms.median / iterations`.
    pub ms_per_iteration: f64,
    /// Minimum bytes per iteration / ms per iteration.
    pub gb_per_s: f64,
    /// The floor kernel's ms for one iteration's bytes.
    pub floor_ms: f64,
    /// `floor_ms / ms_per_iteration` (1.0 = as fast as streaming the bytes).
    pub x_floor: f64,
    /// One encode, milliseconds.
    pub encode_ms: f64,
    /// Lowering + graph compile, milliseconds.
    pub compile_ms: f64,
    /// Command nodes.
    pub nodes: usize,
    /// Recursive relative residual at exit.
    pub relative_residual: f64,
    /// True relative residual (f64 on the CPU).
    pub true_residual: f64,
    /// Microseconds per empty gated iteration (the 2× row only).
    pub empty_iteration_us: Option<f64>,
    /// The SpMV realization used.
    pub spmv: String,
    /// Gated dispatches per iteration (plus one gate, plus one wgpu validation dispatch per
    /// gated dispatch when `indirect_validation`).
    pub dispatches_per_iteration: usize,
    /// Whether wgpu validated the indirect dispatches.
    pub indirect_validation: bool,
    /// Rows per workgroup of the vector passes.
    pub rows_per_wg: u32,
}

fn timed(
    gpu: &Gpu,
    a: &CsrMatrix,
    b: &[f32],
    options: &PcgOptions,
    repeat: u32,
) -> Result<(SolveRow, Vec<f32>)> {
    progress(format!(
        "bench solve: compiling bound {}",
        options.max_iterations
    ));
    let mut solver = PcgSolver::new(&gpu.ctx, a, b, options)?;
    gpu.check("compiling the PCG graph")?;
    let dispatches_per_iteration = solver.dispatches_per_iteration();
    let warm = solver.solve(&gpu.ctx)?;
    let mut samples = Vec::new();
    let mut last = warm;
    for _ in 0..repeat {
        last = solver.solve(&gpu.ctx)?;
        gpu.check("running the PCG graph")?;
        if last.iterations != solver_iterations(&samples, last.iterations) {
            bail!("iteration count changed between runs: {}", last.iterations);
        }
        samples.push((ms(last.log.gpu), last.iterations));
    }
    // A fast wrong answer is never reported: bounds n and 2n both reach the tolerance.
    if !last.converged {
        bail!(
            "bound {}: the solve stopped after {} iterations at relative residual {:.3e}, above the tolerance",
            options.max_iterations,
            last.iterations,
            last.relative_residual
        );
    }
    let times: Vec<f64> = samples.iter().map(|s| s.0).collect();
    let solve_ms = Summary::of(&times);
    let it = last.iterations.max(1);
    let spmv = last
        .report
        .decision("pcg/iterate/step/spmv-dot")
        .map_or("-".to_string(), |d| d.realization.clone());
    let row = SolveRow {
        op: format!("pcg[bound={}]", options.max_iterations),
        elements: u64::from(a.rows()),
        nonzeros: u64::from(a.nnz()),
        iterations: last.iterations,
        bound: options.max_iterations,
        ms_per_iteration: solve_ms.median / f64::from(it),
        solve_ms,
        gb_per_s: 0.0,
        floor_ms: 0.0,
        x_floor: 0.0,
        encode_ms: ms(last.log.encode),
        compile_ms: ms(last.compile),
        nodes: last.nodes,
        relative_residual: last.relative_residual,
        true_residual: true_residual(a, &last.x, b),
        empty_iteration_us: None,
        spmv,
        dispatches_per_iteration,
        indirect_validation: gpu.ctx.capabilities().indirect_validation,
        rows_per_wg: options
            .rows_per_wg
            .unwrap_or(PcgVectors::rows_per_workgroup(u64::from(a.rows())).0),
    };
    Ok((row, last.x))
}

fn solver_iterations(samples: &[(f64, u32)], current: u32) -> u32 {
    samples.first().map_or(current, |s| s.1)
}

/// Runs the bench.
pub fn run(args: &SolveBenchArgs) -> Result<()> {
    if let Some(p) = &args.options.json {
        check_writable(p)?;
    }
    let gpu = Gpu::open_with(args.indirect_validation == OnOff::Off)?;
    let caps = BackendCapabilities::of(&gpu.ctx);
    let a = CsrMatrix::poisson2d(args.grid)?;
    let b = vec![1.0f32; a.rows() as usize];
    let spmv = spmv_realization(args.spmv, &a, &caps)?;
    let options = |bound| PcgOptions {
        tol: args.tol,
        max_iterations: bound,
        jacobi: args.precond == Precond::Jacobi,
        spmv,
        rows_per_wg: args.rows_per_wg,
    };
    let needed = match args.iterations {
        Some(n) => n,
        None => {
            progress(format!("bench solve: calibrating with bound {}", args.max_iter));
            let s = PcgSolver::new(&gpu.ctx, &a, &b, &options(args.max_iter))?.solve(&gpu.ctx)?;
            if !s.converged {
                bail!(
                    "the calibration solve did not reach {:e} in {} iterations (residual {:.3e}); raise --max-iter",
                    args.tol,
                    args.max_iter,
                    s.relative_residual
                );
            }
            s.iterations
        }
    }
    .max(1);
    let n = u64::from(a.rows());
    let read = 36 * n + 8 * u64::from(a.nnz());
    let written = 20 * n;
    let mut floor = Floor::new(&gpu);
    let floor_ms = floor
        .time_traffic(&gpu, read, written, args.options.repeat)?
        .median;
    let mut rows = Vec::new();
    for bound in [needed, 2 * needed] {
        let (mut row, _) = timed(&gpu, &a, &b, &options(bound), args.options.repeat)?;
        row.gb_per_s = (read + written) as f64 / (row.ms_per_iteration * 1e6);
        row.floor_ms = floor_ms;
        row.x_floor = floor_ms / row.ms_per_iteration;
        rows.push(row);
    }
    let empty = (rows[1].solve_ms.median - rows[0].solve_ms.median) / f64::from(needed) * 1e3;
    rows[1].empty_iteration_us = Some(empty);
    // Every iteration gated off: b = 0 makes r·r = 0 ≤ (tol·|b|)² = 0 before iteration 1.
    let zero = vec![0.0f32; a.rows() as usize];
    let (mut row, _) = timed(&gpu, &a, &zero, &options(needed), args.options.repeat)?;
    if row.iterations != 0 {
        bail!(
            "b = 0 ran {} iterations; the empty-iteration row needs 0",
            row.iterations
        );
    }
    row.op = format!("pcg-empty[bound={needed}]");
    row.empty_iteration_us = Some(row.solve_ms.median / f64::from(needed) * 1e3);
    row.ms_per_iteration = 0.0;
    row.floor_ms = floor_ms;
    rows.push(row);
    let mut table = Table::new([
        "op",
        "unknowns",
        "iterations",
        "solve ms",
        "ms/iter",
        "GB/s",
        "x floor",
        "empty us/iter",
        "dispatches/iter",
        "rows/wg",
        "nodes",
        "compile ms",
        "residual",
        "spmv",
    ]);
    for r in &rows {
        table.row([
            r.op.clone(),
            r.elements.to_string(),
            r.iterations.to_string(),
            r.solve_ms.show(3),
            format!("{:.4}", r.ms_per_iteration),
            format!("{:.0}", r.gb_per_s),
            format!("{:.2}", r.x_floor),
            r.empty_iteration_us
                .map_or("-".into(), |e| format!("{e:.2}")),
            format!(
                "{} + gate{}",
                r.dispatches_per_iteration,
                if r.indirect_validation {
                    format!(" + {} validation", r.dispatches_per_iteration)
                } else {
                    String::new()
                }
            ),
            r.rows_per_wg.to_string(),
            r.nodes.to_string(),
            format!("{:.0}", r.compile_ms),
            format!("{:.2e}", r.true_residual),
            r.spmv.clone(),
        ]);
    }
    print!("{table}");
    if let Some(p) = &args.options.json {
        write_json(
            p,
            &BenchJson::new("solve", gpu.ctx.capabilities(), args.options.repeat, &rows),
        )?;
    }
    Ok(())
}
