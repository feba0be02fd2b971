//! Jacobi-preconditioned conjugate gradients as a [`Program`]: a prologue (q = A·x0,
//! r = b − q, z = D⁻¹r, p = z, then r·z, r·r and the predicate) and a loop whose predicate
//! is `r·r > (tol·|b|)²` (and no breakdown), each iteration three fused passes — SpMV with
//! p·q partials; α folded from them plus the x/r/z update with r·z and r·r partials; β
//! folded from those plus the new direction and the predicate — lowered to one command
//! graph that runs in one submission: the loop exits on the GPU. (Before the folds an
//! iteration was five passes: α and β had one-workgroup passes of their own.)
//!
//! Float math is float32 on the GPU (sums in a fixed tree order); the CPU semantics
//! ([`ProgramPrimitive::interpret`]) accumulate dot products in f64, so a GPU solve and the
//! oracle differ by float32 rounding: iteration counts agree within ±1 on the 2-D Poisson
//! tests, and both reach the tolerance.

use std::time::{Duration, Instant};

use gpugraph_command::wgpu;
use gpugraph_command::{BufferHandle, CommandGraph, DataView, GpuContext, VectorFormat};
use gpugraph_gpgpu::sparse::{
    self, CsrError, CsrMatrix, CsrViews, PcgVectors, SpmvRealization, PCG_SCALARS, S_PRED, S_RR,
    S_TOL2,
};

use super::ops::pcg::pcg_op;
use super::ops::sparse::{spmv, spmv_dot};
use super::primitive::CpuMemory;
use super::{run_once, Program, ProgramReport, ProgramTreeError, RunLog, WgpuProgramCompiler};
use crate::lowering::BackendCapabilities;

/// Solver settings.
#[derive(Clone, Debug, PartialEq)]
pub struct PcgOptions {
    /// Relative tolerance: stop once `|r| ≤ tol·|b|` (recursively updated residual).
    pub tol: f32,
    /// Iteration bound (the compiler unrolls this many gated iterations).
    pub max_iterations: u32,
    /// Jacobi preconditioning (else the identity).
    pub jacobi: bool,
    /// An SpMV realization instead of the automatic choice.
    pub spmv: Option<SpmvRealization>,
    /// Rows per workgroup of the vector passes instead of
    /// [`PcgVectors::rows_per_workgroup`]'s choice (a power of two ≥ `sparse::WG`; tests
    /// use it to reach several tiles at small sizes).
    pub rows_per_wg: Option<u32>,
}

/// Why a solve failed.
#[derive(Debug, thiserror::Error)]
pub enum PcgError {
    /// The matrix or right-hand side was refused.
    #[error(transparent)]
    Matrix(#[from] CsrError),
    /// Compiling or running the program failed.
    #[error(transparent)]
    Program(#[from] ProgramTreeError),
    /// A tolerance that is not a positive finite number.
    #[error("tolerance {tol} must be positive and finite")]
    Tolerance {
        /// The value given.
        tol: f32,
    },
    /// Rows per workgroup below the automatic choice (the partial buffers are sized for
    /// it) or not a power of two.
    #[error("{rows} rows per workgroup: must be a power of two ≥ {minimum} for this system")]
    RowsPerWorkgroup {
        /// The value given.
        rows: u32,
        /// The automatic choice.
        minimum: u32,
    },
}

impl From<gpugraph_command::GraphError> for PcgError {
    fn from(e: gpugraph_command::GraphError) -> Self {
        Self::Program(e.into())
    }
}

impl From<gpugraph_gpgpu::AlgorithmError> for PcgError {
    fn from(e: gpugraph_gpgpu::AlgorithmError) -> Self {
        Self::Program(e.into())
    }
}

/// A PCG program bound into a graph: the tree, the caller-visible buffers and the handles
/// the CPU interpreter needs.
#[derive(Debug)]
pub struct PcgSetup {
    /// The tree (root `pcg`, loop `pcg/iterate`).
    pub program: Program,
    /// The iterate (float32, `n` rows; STORAGE | COPY_SRC).
    pub x: wgpu::Buffer,
    /// The scalars (8 uint32 words).
    pub scalars: wgpu::Buffer,
    /// Unknowns.
    pub n: u32,
    /// `|b|`.
    pub b_norm: f64,
    /// Host words of every imported buffer, for [`super::interpret`].
    pub memory: CpuMemory,
    /// Keeps the matrix, b and D⁻¹ alive while the graph runs.
    _buffers: Vec<wgpu::Buffer>,
}

/// The tree path of the loop.
pub const LOOP_PATH: &str = "pcg/iterate";

fn import(
    graph: &mut CommandGraph,
    memory: &mut CpuMemory,
    id: &str,
    words: &[u32],
    format: VectorFormat,
) -> Result<(DataView, BufferHandle, wgpu::Buffer), PcgError> {
    let (view, buffer) = sparse::import_words(graph, id, words, format)?;
    let mut host = words.to_vec();
    host.resize(buffer.size() as usize / 4, 0);
    memory.insert(view.buffer(), host);
    Ok((view, view.buffer(), buffer))
}

/// Binds `a`, `b` into `graph` and builds the PCG tree (nothing is scheduled until a
/// compiler lowers it).
pub fn build_pcg(
    graph: &mut CommandGraph,
    a: &CsrMatrix,
    b: &[f32],
    options: &PcgOptions,
) -> Result<PcgSetup, PcgError> {
    if !(options.tol > 0.0 && options.tol.is_finite()) {
        return Err(PcgError::Tolerance { tol: options.tol });
    }
    if a.rows() != a.columns() {
        return Err(CsrError::NotSquare {
            rows: a.rows(),
            columns: a.columns(),
        }
        .into());
    }
    if b.len() != a.rows() as usize {
        return Err(CsrError::VectorLength {
            what: "b",
            actual: b.len() as u64,
            expected: u64::from(a.rows()),
        }
        .into());
    }
    if let Some(i) = b.iter().position(|v| !v.is_finite()) {
        return Err(CsrError::NonFinite {
            row: i as u32,
            column: 0,
            value: b[i],
        }
        .into());
    }
    let n = a.rows();
    let dinv = if options.jacobi {
        a.jacobi_inverse()?
    } else {
        vec![1.0; n as usize]
    };
    let b_norm = b
        .iter()
        .map(|&v| f64::from(v) * f64::from(v))
        .sum::<f64>()
        .sqrt();
    let tol2 = (f64::from(options.tol) * b_norm).powi(2) as f32;
    let mut memory = CpuMemory::new();
    let (csr, mut keep) = CsrViews::upload(graph, "pcg/a", a)?;
    memory.insert(csr.row_offsets.buffer(), a.row_offsets().to_vec());
    memory.insert(csr.column_indices.buffer(), a.column_indices().to_vec());
    memory.insert(
        csr.values.buffer(),
        a.values().iter().map(|v| v.to_bits()).collect(),
    );
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let (bv, bh, bb) = import(graph, &mut memory, "pcg/b", &bits(b), VectorFormat::Float32)?;
    let (dv, dh, db) = import(
        graph,
        &mut memory,
        "pcg/dinv",
        &bits(&dinv),
        VectorFormat::Float32,
    )?;
    let (xv, xh, xb) = import(
        graph,
        &mut memory,
        "pcg/x",
        &vec![0; n as usize],
        VectorFormat::Float32,
    )?;
    let mut s = vec![0u32; PCG_SCALARS as usize];
    s[S_TOL2 as usize] = tol2.to_bits();
    s[S_PRED as usize] = 1;
    let (sv, sh, sb) = import(graph, &mut memory, "pcg/scalars", &s, VectorFormat::Uint32)?;
    keep.extend([bb, db]);
    let mut v = PcgVectors::new(graph, "pcg", n, bh, dh, xh, sh)?;
    if let Some(rows) = options.rows_per_wg {
        // More rows per workgroup than chosen means fewer partials: the buffers fit.
        if rows < v.rows_per_wg || !rows.is_power_of_two() {
            return Err(PcgError::RowsPerWorkgroup {
                rows,
                minimum: v.rows_per_wg,
            });
        }
        v.rows_per_wg = rows;
    }
    let shape = v.shape();
    let t = v.tiles().max(1);
    let f32v = |h, len| graph.create_packed_view(h, VectorFormat::Float32, len);
    let (r, z, p, q) = (
        f32v(v.r, u64::from(n))?,
        f32v(v.z, u64::from(n))?,
        f32v(v.p, u64::from(n))?,
        f32v(v.q, u64::from(n))?,
    );
    let partials = f32v(v.partials, 2 * t)?;
    let pq_partials = f32v(v.pq_partials, t)?;
    let predicate = graph.create_data_view(
        sh,
        gpugraph_command::DataViewDescriptor::packed(VectorFormat::Uint32, 1).at_offset(S_PRED * 4),
    )?;
    let mean = a.mean_row_length();
    let op = |id: &str, name: &str| pcg_op(id, name, shape);
    let body = Program::composite(
        "step",
        vec![
            Program::semantic(spmv_dot(
                "spmv-dot",
                &csr,
                mean,
                p,
                q,
                pq_partials,
                shape.rows_per_wg,
                options.spmv,
            )),
            Program::semantic(
                op("update", "pcg-update")
                    .input("p", p)
                    .input("q", q)
                    .input("dinv", dv)
                    .input("pq partials", pq_partials)
                    .output("x", xv)
                    .output("r", r)
                    .output("z", z)
                    .output("partials", partials)
                    .output("scalars", sv),
            ),
            Program::semantic(
                op("direction", "pcg-direction")
                    .input("z", z)
                    .input("partials", partials)
                    .output("p", p)
                    .output("scalars", sv),
            ),
        ],
    );
    let program = Program::composite(
        "pcg",
        vec![
            Program::semantic(spmv("initial-spmv", &csr, mean, xv, q, options.spmv)),
            Program::semantic(
                op("start", "pcg-start")
                    .input("b", bv)
                    .input("q", q)
                    .input("dinv", dv)
                    .output("r", r)
                    .output("z", z)
                    .output("p", p)
                    .output("partials", partials),
            ),
            Program::semantic(
                op("rho", "pcg-rho")
                    .input("partials", partials)
                    .output("scalars", sv),
            ),
            Program::repeat("iterate", body, options.max_iterations, Some(predicate)),
        ],
    );
    Ok(PcgSetup {
        program,
        x: xb,
        scalars: sb,
        n,
        b_norm,
        memory,
        _buffers: keep,
    })
}

/// The outcome of [`solve_pcg`].
#[derive(Clone, Debug)]
pub struct PcgSolution {
    /// The iterate.
    pub x: Vec<f32>,
    /// Iterations the GPU ran (counted by the loop's gate).
    pub iterations: u32,
    /// `|r| / |b|` of the recursively updated residual at exit (0 for b = 0).
    pub relative_residual: f64,
    /// Whether `|r| ≤ tol·|b|` was reached.
    pub converged: bool,
    /// The decisions and the tree.
    pub report: ProgramReport,
    /// Submit/complete log and timings of the one submission.
    pub log: RunLog,
    /// Lowering plus graph compilation (pipelines, bind groups).
    pub compile: Duration,
    /// Command nodes in the graph.
    pub nodes: usize,
}

/// A compiled PCG solve that can run repeatedly (each run resets `x` to 0 and the scalars,
/// then encodes once and submits once).
pub struct PcgSolver {
    setup: PcgSetup,
    graph: gpugraph_command::CompiledGraph,
    report: ProgramReport,
    state: Option<wgpu::Buffer>,
    dispatches_per_iteration: usize,
    initial_scalars: Vec<u32>,
    compile: Duration,
    nodes: usize,
}

impl PcgSolver {
    /// Builds the tree, lowers it with the capabilities of `ctx`'s adapter and compiles the
    /// graph (pipelines, bind groups).
    pub fn new(
        ctx: &GpuContext,
        a: &CsrMatrix,
        b: &[f32],
        options: &PcgOptions,
    ) -> Result<Self, PcgError> {
        let t0 = Instant::now();
        let caps = BackendCapabilities::of(ctx);
        let mut graph = CommandGraph::new("pcg", &ctx.device);
        let setup = build_pcg(&mut graph, a, b, options)?;
        let initial_scalars = setup
            .memory
            .buffer(
                graph
                    .imported_handle(&setup.scalars)
                    .expect("imported by build_pcg"),
            )
            .map(<[u32]>::to_vec)
            .unwrap_or_default();
        let compiled = WgpuProgramCompiler::new(caps).compile(&setup.program, &mut graph)?;
        let nodes = graph.node_count();
        let graph = graph.compile()?;
        Ok(Self {
            state: compiled.region(LOOP_PATH).map(|r| r.state.clone()),
            dispatches_per_iteration: compiled.region(LOOP_PATH).map_or(0, |r| r.dispatches),
            report: compiled.report,
            setup,
            graph,
            initial_scalars,
            compile: t0.elapsed(),
            nodes,
        })
    }

    /// The decisions and the tree.
    pub fn report(&self) -> &ProgramReport {
        &self.report
    }

    /// Command nodes in the graph.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Gated dispatches one loop iteration holds, besides its gate (and, on a device that
    /// validates indirect dispatches, wgpu's one validation dispatch per gated dispatch).
    pub fn dispatches_per_iteration(&self) -> usize {
        self.dispatches_per_iteration
    }

    /// Runs the solve from `x = 0` (one encode, one submission) and reads back `x`, the
    /// scalars and the iteration count after completion.
    pub fn solve(&mut self, ctx: &GpuContext) -> Result<PcgSolution, PcgError> {
        let n = u64::from(self.setup.n);
        let zeros = vec![0u8; (n * 4).max(4) as usize];
        ctx.queue.write_buffer(&self.setup.x, 0, &zeros);
        ctx.queue.write_buffer(
            &self.setup.scalars,
            0,
            bytemuck::cast_slice(&self.initial_scalars),
        );
        let mut reads: Vec<(&wgpu::Buffer, u64)> = vec![
            (&self.setup.x, n * 4),
            (&self.setup.scalars, PCG_SCALARS * 4),
        ];
        if let Some(s) = &self.state {
            reads.push((s, 16));
        }
        let (bytes, log) = run_once(&ctx.device, &ctx.queue, &mut self.graph, &reads)?;
        let x: Vec<f32> = bytemuck::pod_collect_to_vec(&bytes[0]);
        let s: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes[1]);
        let iterations = bytes
            .get(2)
            .map_or(0, |st| bytemuck::pod_collect_to_vec::<u8, u32>(st)[2]);
        let rr = f64::from(f32::from_bits(s[S_RR as usize]));
        let tol2 = f64::from(f32::from_bits(s[S_TOL2 as usize]));
        let b_norm = self.setup.b_norm;
        Ok(PcgSolution {
            x,
            iterations,
            relative_residual: if b_norm > 0.0 {
                rr.max(0.0).sqrt() / b_norm
            } else {
                0.0
            },
            converged: rr <= tol2,
            report: self.report.clone(),
            log,
            compile: self.compile,
            nodes: self.nodes,
        })
    }
}

/// Builds, compiles (one graph), runs (one submission) and reads back a PCG solve.
pub fn solve_pcg(
    ctx: &GpuContext,
    a: &CsrMatrix,
    b: &[f32],
    options: &PcgOptions,
) -> Result<PcgSolution, PcgError> {
    PcgSolver::new(ctx, a, b, options)?.solve(ctx)
}
