//! File-in/file-out primitives: `gpugraph mask|scan|compact` read 1-D uint32 `.npy` files,
//! run the primitive's graph once on the GPU, read the result back and write `.npy`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use gpugraph_command::CommandGraph;
use gpugraph_gpgpu::{Mask, MaskOp};

use crate::bench::primitives::{import, read_back, upload};
use crate::gpu::Gpu;
use crate::npy;

/// `gpugraph mask`.
#[derive(Args, Debug)]
pub struct MaskArgs {
    /// and | or | xor | difference | not
    #[arg(long)]
    pub op: MaskOp,
    /// Source-aligned masks (1-D uint32 .npy; zero = false).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Output mask (.npy, canonical 0/1).
    #[arg(long)]
    pub out: PathBuf,
}

/// Combines the masks and writes the canonical 0/1 result.
pub fn mask(args: &MaskArgs) -> Result<()> {
    let masks = args
        .inputs
        .iter()
        .enumerate()
        .map(|(k, p)| npy::read_u32_vector(p, &format!("mask {k}")))
        .collect::<Result<Vec<_>, _>>()?;
    let n = masks[0].len();
    for (k, m) in masks.iter().enumerate() {
        if m.len() != n {
            bail!(
                "{}: mask {k} has {} rows but {} has {n}; masks must be source-aligned",
                args.inputs[k].display(),
                m.len(),
                args.inputs[0].display()
            );
        }
    }
    let gpu = Gpu::open()?;
    let mut g = CommandGraph::new("cli-mask", gpu.device());
    let mut inputs = Vec::new();
    for (k, m) in masks.iter().enumerate() {
        let b = upload(&gpu, "mask-input", m);
        inputs.push(import(&mut g, &format!("mask-{k}"), &b, n as u64)?.into());
    }
    let out = upload(&gpu, "mask-output", &vec![0; n]);
    let output = import(&mut g, "mask-output", &out, n as u64)?.into();
    Mask {
        id: format!("mask-{:?}", args.op).to_lowercase(),
        inputs,
        output,
        op: args.op,
    }
    .add_to_graph(&mut g)?;
    run_once(&gpu, g)?;
    let result = read_back(&gpu, &out, n as u64)?;
    npy::write(&args.out, &npy::NpyArray::from_u32(&result))?;
    println!(
        "mask {}: {n} rows, {} set -> {}",
        format!("{:?}", args.op).to_lowercase(),
        result.iter().filter(|&&v| v != 0).count(),
        args.out.display()
    );
    Ok(())
}

/// Compiles, encodes and submits a graph once, waiting for the GPU.
pub fn run_once(gpu: &Gpu, g: CommandGraph) -> Result<()> {
    let mut compiled = g.compile()?;
    let mut enc = gpu.device().create_command_encoder(&Default::default());
    compiled.encode(&mut enc, &Default::default())?;
    gpu.submit_and_wait(enc.finish())
}
