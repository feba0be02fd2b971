//! A fixed-point iteration as a program tree, the second consumer of the gated loop: Jacobi
//! sweeps `x ← x + D⁻¹(b − A·x)` on a 2-D Poisson problem until `|b − A·x|² ≤ τ²`, in one
//! command graph and one submission. The loop body is the library's semantic `spmv` and
//! `dot` operations (the lowering set picks their realizations) plus two primitives defined
//! right here (the sweep and the float predicate), which shows how an application adds its
//! own [`ProgramPrimitive`]: describe the dispatch nodes and the CPU semantics; the compiler
//! decides whether they are gated.
//!
//! The GPU result is compared with the CPU interpreter of the same tree (iterations equal or
//! within one, since float32 sums round differently; iterate within 1e-3 relative).
//!
//! ```sh
//! cargo run --release -p gpugraph-program --example jacobi_fixed_point [-- GRID MAX_ITER]
//! ```

use gpugraph_command::wgpu;
use gpugraph_command::{
    Binding, CommandGraph, DataView, DispatchNode, GpuContext, Grid, ShaderSource, VectorFormat,
};
use gpugraph_gpgpu::sparse::{import_words, CsrMatrix, CsrViews};
use gpugraph_program::lowering::BackendCapabilities;
use gpugraph_program::program::ops::sparse::{dot, spmv};
use gpugraph_program::program::{
    interpret, run_once, Choice, CpuMemory, PrimitiveNode, Program, ProgramPrimitive,
    ProgramTreeError, WgpuProgramCompiler,
};

const WGSL: &str = "
struct P { n: u32, threshold: f32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<uniform> params: P;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> q: array<f32>;
@group(0) @binding(3) var<storage, read> dinv: array<f32>;
@group(0) @binding(4) var<storage, read_write> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> r: array<f32>;
@group(0) @binding(6) var<storage, read> rr: array<f32>;
@group(0) @binding(7) var<storage, read_write> flag: array<u32>;

@compute @workgroup_size(256)
fn sweep(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = g.x + g.y * nwg.x * 256u;
    if (i < params.n) {
        let ri = b[i] - q[i];
        r[i] = ri;
        x[i] = x[i] + dinv[i] * ri;
    }
}

@compute @workgroup_size(1)
fn above() {
    flag[0] = select(0u, 1u, rr[0] > params.threshold);
}
";

/// `P` in the shader.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct P {
    n: u32,
    threshold: f32,
    pad0: u32,
    pad1: u32,
}

/// `r = b − q; x += D⁻¹r` (q = A·x from the preceding SpMV). Views at offset 0.
#[derive(Debug)]
struct Sweep {
    b: DataView,
    q: DataView,
    dinv: DataView,
    x: DataView,
    r: DataView,
}

impl ProgramPrimitive for Sweep {
    fn id(&self) -> &str {
        "sweep"
    }
    fn operation_type(&self) -> &str {
        "jacobi-sweep"
    }
    fn choices(&self, _: &BackendCapabilities) -> Vec<Choice> {
        Vec::new()
    }
    fn command_nodes(
        &self,
        _: &CommandGraph,
        _: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
        let p = P {
            n: self.x.len() as u32,
            threshold: 0.0,
            pad0: 0,
            pad1: 0,
        };
        Ok(vec![PrimitiveNode::Dispatch(DispatchNode::new(
            "sweep",
            ShaderSource::new("example/jacobi", WGSL),
            "sweep",
            vec![
                Binding::params(0, &p),
                Binding::read(1, self.b),
                Binding::read(2, self.q),
                Binding::read(3, self.dinv),
                Binding::read_write(4, self.x),
                Binding::read_write(5, self.r),
            ],
            Grid::Rows {
                rows: self.x.len(),
                rows_per_workgroup: 256,
            },
        ))])
    }
    fn interpret(&self, m: &mut CpuMemory) -> Result<(), ProgramTreeError> {
        let (b, q, d) = (
            m.read_f32("sweep", &self.b)?,
            m.read_f32("sweep", &self.q)?,
            m.read_f32("sweep", &self.dinv)?,
        );
        let mut x = m.read_f32("sweep", &self.x)?;
        let r: Vec<f32> = b.iter().zip(&q).map(|(b, q)| b - q).collect();
        for i in 0..x.len() {
            x[i] += d[i] * r[i];
        }
        m.write_f32("sweep", &self.r, &r)?;
        m.write_f32("sweep", &self.x, &x)
    }
}

/// `flag = rr > threshold` (float32 word in, uint32 word out).
#[derive(Debug)]
struct Above {
    rr: DataView,
    flag: DataView,
    threshold: f32,
}

impl ProgramPrimitive for Above {
    fn id(&self) -> &str {
        "above"
    }
    fn operation_type(&self) -> &str {
        "above"
    }
    fn choices(&self, _: &BackendCapabilities) -> Vec<Choice> {
        Vec::new()
    }
    fn command_nodes(
        &self,
        _: &CommandGraph,
        _: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
        let p = P {
            n: 1,
            threshold: self.threshold,
            pad0: 0,
            pad1: 0,
        };
        Ok(vec![PrimitiveNode::Dispatch(DispatchNode::new(
            "above",
            ShaderSource::new("example/jacobi", WGSL),
            "above",
            vec![
                Binding::params(0, &p),
                Binding::read(6, self.rr),
                Binding::read_write(7, self.flag),
            ],
            Grid::Workgroups([1, 1, 1]),
        ))])
    }
    fn interpret(&self, m: &mut CpuMemory) -> Result<(), ProgramTreeError> {
        let rr = m.read_f32("above", &self.rr)?[0];
        m.write("above", &self.flag, &[u32::from(rr > self.threshold)])
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u32>());
    let grid = args.next().transpose()?.unwrap_or(32);
    let max_iter = args.next().transpose()?.unwrap_or(3000);
    let ctx = GpuContext::new()?;
    let a = CsrMatrix::poisson2d(grid)?;
    let n = a.rows() as usize;
    let mut graph = CommandGraph::new("jacobi", &ctx.device);
    let mut memory = CpuMemory::new();
    let mut keep: Vec<wgpu::Buffer> = Vec::new();
    let mut words = |graph: &mut CommandGraph,
                     id: &str,
                     w: Vec<u32>,
                     f: VectorFormat|
     -> Result<DataView, Box<dyn std::error::Error>> {
        let (v, buf) = import_words(graph, id, &w, f)?;
        memory.insert(v.buffer(), w);
        keep.push(buf);
        Ok(v)
    };
    let f32s = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let (csr, csr_buffers) = CsrViews::upload(&mut graph, "a", &a)?;
    let b = words(&mut graph, "b", f32s(&vec![1.0; n]), VectorFormat::Float32)?;
    let dinv = words(
        &mut graph,
        "dinv",
        f32s(&a.jacobi_inverse()?),
        VectorFormat::Float32,
    )?;
    let x = words(&mut graph, "x", vec![0; n], VectorFormat::Float32)?;
    let q = words(&mut graph, "q", vec![0; n], VectorFormat::Float32)?;
    let r = words(&mut graph, "r", vec![0; n], VectorFormat::Float32)?;
    let rr = words(&mut graph, "rr", vec![0], VectorFormat::Float32)?;
    let flag = words(&mut graph, "flag", vec![1], VectorFormat::Uint32)?;
    memory.insert(csr.row_offsets.buffer(), a.row_offsets().to_vec());
    memory.insert(csr.column_indices.buffer(), a.column_indices().to_vec());
    memory.insert(csr.values.buffer(), f32s(a.values()));
    let tau2 = (1e-3f32 * (n as f32).sqrt()).powi(2);
    let body = Program::composite(
        "sweep",
        vec![
            Program::semantic(spmv("ax", &csr, a.mean_row_length(), x, q, None)),
            Program::operation(Sweep { b, q, dinv, x, r }),
            Program::semantic(dot("rr", r, r, rr)),
            Program::operation(Above {
                rr,
                flag,
                threshold: tau2,
            }),
        ],
    );
    let program = Program::composite(
        "jacobi",
        vec![Program::repeat("iterate", body, max_iter, Some(flag))],
    );
    let compiled =
        WgpuProgramCompiler::new(BackendCapabilities::of(&ctx)).compile(&program, &mut graph)?;
    let state = compiled
        .region("jacobi/iterate")
        .expect("a gated loop")
        .state
        .clone();
    let x_buffer = keep[2].clone();
    let mut g = graph.compile()?;
    let (bytes, log) = run_once(
        &ctx.device,
        &ctx.queue,
        &mut g,
        &[(&x_buffer, n as u64 * 4), (&state, 16)],
    )?;
    drop(csr_buffers);
    let gpu_x: Vec<f32> = bytemuck::pod_collect_to_vec(&bytes[0]);
    let gpu_iterations = bytemuck::pod_collect_to_vec::<u8, u32>(&bytes[1])[2];
    let cpu = interpret(&program, &mut memory)?;
    let cpu_iterations = cpu.iterations["jacobi/iterate"];
    let cpu_x = memory.read_f32("x", &x)?;
    let worst = gpu_x
        .iter()
        .zip(&cpu_x)
        .map(|(g, c)| ((g - c) / c.abs().max(1e-3)).abs())
        .fold(0.0f32, f32::max);
    println!("{}", compiled.report);
    println!(
        "Jacobi on {grid}×{grid}: GPU {gpu_iterations} iterations (one submission, {:.1} ms; {} submit, {} maps in flight), CPU interpreter {cpu_iterations}; worst relative difference of x {worst:.2e}",
        log.gpu.as_secs_f64() * 1e3,
        log.submits(),
        log.maps_in_flight()
    );
    if gpu_iterations.abs_diff(cpu_iterations) > 1 || worst > 1e-3 || gpu_iterations == max_iter {
        return Err("GPU and CPU disagree (or the bound stopped the loop)".into());
    }
    Ok(())
}
