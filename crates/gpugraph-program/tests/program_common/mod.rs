//! Shared by the program-tree tests: a graph with host mirrors of its imported words, and a
//! runner that executes a tree on the GPU (one submission) and on the CPU interpreter.
#![allow(dead_code)]
// Each test binary uses a part of the re-exported scaffolding.
#![allow(unused_imports)]

use gpugraph_command::wgpu;
use gpugraph_command::{CommandGraph, DataView, GpuContext, VectorFormat};
use gpugraph_gpgpu::sparse::import_words;
use gpugraph_program::lowering::BackendCapabilities;
use gpugraph_program::program::{
    interpret, run_once, CompiledProgram, CpuMemory, Interpretation, Program, RunLog,
    WgpuProgramCompiler,
};

pub use gpugraph_testing::{ctx, POISON};

/// A graph under construction plus the host mirror of every buffer it imported.
pub struct Setup {
    pub graph: CommandGraph,
    pub memory: CpuMemory,
    pub buffers: Vec<(DataView, wgpu::Buffer)>,
}

impl Setup {
    pub fn new(ctx: &GpuContext) -> Self {
        Self {
            graph: CommandGraph::new("test", &ctx.device),
            memory: CpuMemory::new(),
            buffers: Vec::new(),
        }
    }

    /// A new buffer holding `init` (uint32 or float32 bits), mirrored on the host.
    pub fn words(&mut self, id: &str, init: &[u32], format: VectorFormat) -> DataView {
        let (view, buffer) = import_words(&mut self.graph, id, init, format).unwrap();
        let mut host = init.to_vec();
        host.resize(buffer.size() as usize / 4, 0);
        self.memory.insert(view.buffer(), host);
        self.buffers.push((view, buffer));
        view
    }

    pub fn u32s(&mut self, id: &str, init: &[u32]) -> DataView {
        self.words(id, init, VectorFormat::Uint32)
    }

    pub fn f32s(&mut self, id: &str, init: &[f32]) -> DataView {
        let w: Vec<u32> = init.iter().map(|v| v.to_bits()).collect();
        self.words(id, &w, VectorFormat::Float32)
    }
}

/// What a GPU run and the interpreter produced.
pub struct Both {
    pub compiled: CompiledProgram,
    pub log: RunLog,
    /// GPU words of each watched view.
    pub gpu: Vec<Vec<u32>>,
    /// Interpreter words of each watched view.
    pub cpu: Vec<Vec<u32>>,
    /// GPU iterations of each gated loop (by path).
    pub gpu_iterations: Vec<(String, u32)>,
    pub interpretation: Interpretation,
}

/// Compiles `program` into the setup's graph, runs it once, and interprets it on a copy of
/// the host mirror; returns the watched views from both.
pub fn run_both(ctx: &GpuContext, setup: Setup, program: &Program, watched: &[DataView]) -> Both {
    run_both_with(ctx, setup, program, watched, BackendCapabilities::of(ctx))
}

pub fn run_both_with(
    ctx: &GpuContext,
    setup: Setup,
    program: &Program,
    watched: &[DataView],
    caps: BackendCapabilities,
) -> Both {
    let Setup {
        mut graph,
        mut memory,
        buffers,
    } = setup;
    let compiled = WgpuProgramCompiler::new(caps)
        .compile(program, &mut graph)
        .unwrap();
    let mut g = graph.compile().unwrap();
    let find = |v: &DataView| {
        &buffers
            .iter()
            .find(|(b, _)| b.buffer() == v.buffer())
            .expect("watched views are Setup buffers")
            .1
    };
    let mut reads: Vec<(&wgpu::Buffer, u64)> =
        watched.iter().map(|v| (find(v), find(v).size())).collect();
    for r in &compiled.regions {
        reads.push((&r.state, 16));
    }
    let (bytes, log) = run_once(&ctx.device, &ctx.queue, &mut g, &reads).unwrap();
    let words = |b: &Vec<u8>| -> Vec<u32> { bytemuck::pod_collect_to_vec(b) };
    let gpu: Vec<Vec<u32>> = watched
        .iter()
        .zip(&bytes)
        .map(|(v, b)| {
            let w = words(b);
            let s = (v.byte_offset() / 4) as usize;
            w[s..s + v.len() as usize].to_vec()
        })
        .collect();
    let gpu_iterations = compiled
        .regions
        .iter()
        .zip(&bytes[watched.len()..])
        .map(|(r, b)| (r.path.clone(), words(b)[2]))
        .collect();
    let interpretation = interpret(program, &mut memory).unwrap();
    let cpu = watched
        .iter()
        .map(|v| memory.read("test", v).unwrap())
        .collect();
    Both {
        compiled,
        log,
        gpu,
        cpu,
        gpu_iterations,
        interpretation,
    }
}
