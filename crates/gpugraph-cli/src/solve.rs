//! `gpugraph solve`: Jacobi-preconditioned conjugate gradients on the GPU as one program
//! (gpugraph-program's `pcg`): the matrix is a generated 2-D Poisson problem
//! (`poisson2d:N`, N² unknowns) or a Matrix Market file (coordinate, real or integer,
//! general or symmetric); the right-hand side is all ones. The whole solve is one command
//! graph, encoded once and submitted once; the loop exits on the GPU. Prints iterations,
//! the final relative residual (recursive, and the true one recomputed on the CPU in f64),
//! times and the lowering decisions; writes x as a float32 `.npy`.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use gpugraph_gpgpu::sparse::{read_matrix_market_within, CsrMatrix, SpmvRealization};
use gpugraph_program::lowering::BackendCapabilities;
use gpugraph_program::program::pcg::{PcgOptions, PcgSolver};

use crate::gpu::Gpu;
use crate::npy::{self, Dtype, NpyArray};
use crate::output::{ms, PendingFile};

/// The preconditioner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Precond {
    /// None (plain CG).
    None,
    /// Jacobi: the inverse diagonal.
    Jacobi,
}

/// The SpMV realization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SpmvChoice {
    /// Chosen from the mean row length and the adapter's subgroups.
    Auto,
    /// One invocation per row.
    ThreadRow,
    /// Lanes of one subgroup per row (needs subgroup support).
    SubgroupRow,
}

/// `gpugraph solve`.
#[derive(Args, Debug, Clone)]
pub struct SolveArgs {
    /// `poisson2d:N` (the 5-point Laplacian of an N×N grid) or a Matrix Market `.mtx` file.
    #[arg(long)]
    pub matrix: String,
    /// Relative tolerance: stop once |r| ≤ tol·|b|.
    #[arg(long, default_value_t = 1e-6)]
    pub tol: f32,
    /// Iteration bound (the GPU program holds this many gated iterations).
    #[arg(long = "max-iter", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub max_iter: u32,
    /// Preconditioner.
    #[arg(long, value_enum, default_value_t = Precond::None)]
    pub precond: Precond,
    /// SpMV realization.
    #[arg(long, value_enum, default_value_t = SpmvChoice::Auto)]
    pub spmv: SpmvChoice,
    /// Output: x as a 1-D float32 `.npy`.
    #[arg(long)]
    pub out: PathBuf,
    /// Also write the lowering report (decisions and tree) as JSON.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// wgpu's validation of indirect dispatches: `off` (default) skips its extra dispatch per
    /// gated dispatch (the gate kernel clamps its counts to the device limit), `on` keeps it.
    #[arg(long = "indirect-validation", value_enum, default_value_t = OnOff::Off)]
    pub indirect_validation: OnOff,
}

/// A switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

/// The matrix named by `spec` (see [`SolveArgs::matrix`]), at most `max_dimension` rows
/// and columns (the device's largest vector of 32-bit values).
pub fn load_matrix(spec: &str, max_dimension: u64) -> Result<CsrMatrix> {
    if let Some(n) = spec.strip_prefix("poisson2d:") {
        let n: u32 = n
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .with_context(|| format!("--matrix {spec}: N must be a positive integer"))?;
        let rows = u64::from(n) * u64::from(n);
        if rows > max_dimension {
            bail!("--matrix {spec}: {rows} rows; at most {max_dimension} fit the device's largest storage binding");
        }
        return CsrMatrix::poisson2d(n).with_context(|| format!("--matrix {spec}"));
    }
    let path = Path::new(spec);
    if path.extension().is_none_or(|e| e != "mtx") {
        bail!("--matrix {spec}: expected poisson2d:N or a Matrix Market .mtx file");
    }
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    read_matrix_market_within(
        BufReader::new(file),
        max_dimension,
        "the device's largest storage binding of 32-bit values",
    )
    .with_context(|| format!("{}", path.display()))
}

/// The forced SpMV realization for `choice` on this adapter, if any.
pub fn spmv_realization(
    choice: SpmvChoice,
    a: &CsrMatrix,
    caps: &BackendCapabilities,
) -> Result<Option<SpmvRealization>> {
    Ok(match choice {
        SpmvChoice::Auto => None,
        SpmvChoice::ThreadRow => Some(SpmvRealization::ThreadRow),
        SpmvChoice::SubgroupRow => {
            let (r, why) = SpmvRealization::choose(
                a.mean_row_length().max(2.0),
                caps.device.subgroups,
                caps.device.subgroup_min_size,
            );
            if r == SpmvRealization::ThreadRow {
                bail!(
                    "--spmv subgroup-row: not available on {}: {why}",
                    caps.device.adapter
                );
            }
            Some(r)
        }
    })
}

/// `|b − A·x| / |b|` in f64.
pub fn true_residual(a: &CsrMatrix, x: &[f32], b: &[f32]) -> f64 {
    let mut r2 = 0.0f64;
    for row in 0..a.rows() {
        let (s, e) = a.span(row);
        let ax: f64 = (s..e)
            .map(|k| f64::from(a.values()[k]) * f64::from(x[a.column_indices()[k] as usize]))
            .sum();
        r2 += (f64::from(b[row as usize]) - ax).powi(2);
    }
    let b2: f64 = b.iter().map(|&v| f64::from(v).powi(2)).sum();
    if b2 > 0.0 {
        (r2 / b2).sqrt()
    } else {
        r2.sqrt()
    }
}

/// Runs the command.
pub fn run(args: &SolveArgs) -> Result<()> {
    if !(args.tol > 0.0 && args.tol.is_finite()) {
        bail!("--tol {}: must be a positive finite number", args.tol);
    }
    let out = PendingFile::new(&args.out, "--out")?;
    let report_file = args
        .report
        .as_ref()
        .map(|p| PendingFile::new(p, "--report"))
        .transpose()?;
    // The device first: its largest binding bounds the matrix a file may declare, checked
    // on the size line before anything of that size is allocated.
    let gpu = Gpu::open_with(args.indirect_validation == OnOff::Off)?;
    let limits = gpu.ctx.device.limits();
    let max_vector = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size)
        / 4;
    let t0 = Instant::now();
    let a = load_matrix(&args.matrix, max_vector.saturating_sub(1))?;
    if a.rows() != a.columns() {
        bail!(
            "--matrix {}: the matrix is {}×{}; CG needs a square (SPD) matrix",
            args.matrix,
            a.rows(),
            a.columns()
        );
    }
    let load = t0.elapsed();
    let b = vec![1.0f32; a.rows() as usize];
    let caps = BackendCapabilities::of(&gpu.ctx);
    let options = PcgOptions {
        tol: args.tol,
        max_iterations: args.max_iter,
        jacobi: args.precond == Precond::Jacobi,
        spmv: spmv_realization(args.spmv, &a, &caps)?,
        rows_per_wg: None,
    };
    let mut solver =
        PcgSolver::new(&gpu.ctx, &a, &b, &options).context("building the PCG program")?;
    gpu.check("compiling the PCG graph")?;
    let s = solver.solve(&gpu.ctx).context("running the PCG program")?;
    gpu.check("running the PCG graph")?;
    let true_res = true_residual(&a, &s.x, &b);
    let data: Vec<u8> = s.x.iter().flat_map(|v| v.to_le_bytes()).collect();
    out.write_all(&npy::encode(&NpyArray {
        dtype: Dtype::F32,
        shape: vec![s.x.len()],
        data,
    }))?;
    if let Some(f) = report_file {
        f.write_all((s.report.to_json() + "\n").as_bytes())?;
        f.commit()?;
    }
    out.commit()?;
    println!(
        "matrix {}: {} unknowns, {} nonzeros; preconditioner {:?}, tol {:e}, max-iter {}",
        args.matrix,
        a.rows(),
        a.nnz(),
        args.precond,
        args.tol,
        args.max_iter
    );
    println!(
        "iterations {}{}; relative residual {:.3e} (recursive), {:.3e} (true, f64 on the CPU)",
        s.iterations,
        if s.converged {
            ""
        } else {
            " (did NOT reach the tolerance)"
        },
        s.relative_residual,
        true_res
    );
    let per = if s.iterations > 0 {
        ms(s.log.gpu) / f64::from(s.iterations)
    } else {
        0.0
    };
    println!(
        "time: solve {:.3} ms on the GPU (one submission, {:.4} ms/iteration incl. {} empty gated iterations; {} dispatches per iteration + 1 gate, indirect validation {}), encode {:.1} ms, compile {:.1} ms ({} nodes), load {:.1} ms",
        ms(s.log.gpu),
        per,
        args.max_iter.saturating_sub(s.iterations),
        solver.dispatches_per_iteration(),
        if gpu.ctx.capabilities().indirect_validation { "on" } else { "off" },
        ms(s.log.encode),
        ms(s.compile),
        s.nodes,
        ms(load)
    );
    println!("decisions:\n{}", s.report);
    Ok(())
}
