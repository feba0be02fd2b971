//! File-in/file-out primitives: `gpugraph mask|scan|compact` read 1-D uint32 `.npy` files,
//! run the primitive's graph once on the GPU, read the result back and write `.npy`.
//!
//! Every output path is validated (its temporary created) before the inputs are read, and
//! the outputs appear only when the whole command succeeded ([`crate::output`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use gpugraph_command::CommandGraph;
use gpugraph_gpgpu::{Mask, MaskOp};

use crate::gpu::{import, Gpu};
use crate::npy;
use crate::output::PendingFile;

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
    let out_file = PendingFile::new(&args.out, "--out")?;
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
        let b = gpu.upload("mask-input", m);
        inputs.push(import(&mut g, &format!("mask-{k}"), &b, n as u64)?.into());
    }
    let out = gpu.upload("mask-output", &vec![0; n]);
    let output = import(&mut g, "mask-output", &out, n as u64)?.into();
    Mask {
        id: format!("mask-{:?}", args.op).to_lowercase(),
        inputs,
        output,
        op: args.op,
    }
    .add_to_graph(&mut g)?;
    run_once(&gpu, g)?;
    let result = gpu.read_back(&out, n as u64)?;
    write_u32(&out_file, &result)?;
    out_file.commit()?;
    println!(
        "mask {}: {n} rows, {} set -> {}",
        format!("{:?}", args.op).to_lowercase(),
        result.iter().filter(|&&v| v != 0).count(),
        args.out.display()
    );
    Ok(())
}

/// Writes `values` as a uint32 `.npy` into `out`'s temporary (renamed by the caller's commit).
fn write_u32(out: &PendingFile, values: &[u32]) -> Result<()> {
    out.write_all(&npy::encode(&npy::NpyArray::from_u32(values)))
}

/// Fails when two outputs name the same file (the second would silently replace the first).
pub(crate) fn distinct_outputs(outputs: &[(&str, &Path)]) -> Result<()> {
    for (i, (a, pa)) in outputs.iter().enumerate() {
        for (b, pb) in &outputs[..i] {
            if pa == pb {
                bail!(
                    "{b} and {a} both name {}; give two different files",
                    pa.display()
                );
            }
        }
    }
    Ok(())
}

/// Compiles, encodes and submits a graph once, waiting for the GPU.
fn run_once(gpu: &Gpu, g: CommandGraph) -> Result<()> {
    gpu.run_graph(&mut g.compile()?, "the graph")
}

/// Reads the optional 1-D uint32 `.npy` at `path` (`label` names it in read errors); fails
/// unless it has `rows` rows, saying "{what} have N rows but {other} {rows}".
fn read_aligned(
    path: Option<&Path>,
    label: &str,
    what: &str,
    other: &str,
    rows: usize,
) -> Result<Option<Vec<u32>>> {
    let Some(p) = path else {
        return Ok(None);
    };
    let v = npy::read_u32_vector(p, label)?;
    if v.len() != rows {
        bail!(
            "{}: {what} have {} rows but {other} {rows}",
            p.display(),
            v.len()
        );
    }
    Ok(Some(v))
}

/// `gpugraph scan`.
#[derive(Args, Debug)]
pub struct ScanArgs {
    /// Input values (1-D uint32 .npy).
    #[arg(long = "in")]
    pub input: PathBuf,
    /// Output prefix sums (.npy, uint32, wrapping modulo 2^32).
    #[arg(long)]
    pub out: PathBuf,
    /// Inclusive sums (default: exclusive).
    #[arg(long)]
    pub inclusive: bool,
    /// Segment-start flags aligned with the input (1-D uint32 .npy; nonzero starts a segment).
    #[arg(long)]
    pub segments: Option<PathBuf>,
}

/// Scans the input on the GPU and writes the sums.
pub fn scan(args: &ScanArgs) -> Result<()> {
    let out_file = PendingFile::new(&args.out, "--out")?;
    let values = npy::read_u32_vector(&args.input, "scan input")?;
    let segments = read_aligned(
        args.segments.as_deref(),
        "segment flags",
        "segment flags",
        "the input has",
        values.len(),
    )?;
    let n = values.len() as u64;
    let gpu = Gpu::open()?;
    let mut g = CommandGraph::new("cli-scan", gpu.device());
    let input = gpu.upload("scan-input", &values);
    let out = gpu.upload("scan-output", &vec![0; values.len()]);
    let segment_starts = match &segments {
        Some(s) => {
            let b = gpu.upload("scan-segments", s);
            Some(import(&mut g, "scan-segments", &b, n)?.into())
        }
        None => None,
    };
    gpugraph_gpgpu::scan::Scan {
        id: "scan".into(),
        input: import(&mut g, "scan-input", &input, n)?.into(),
        output: import(&mut g, "scan-output", &out, n)?.into(),
        inclusive: args.inclusive,
        segment_starts,
    }
    .add_to_graph(&mut g)?;
    run_once(&gpu, g)?;
    let sums = gpu.read_back(&out, n)?;
    write_u32(&out_file, &sums)?;
    out_file.commit()?;
    println!(
        "scan ({}{}): {n} rows -> {}",
        if args.inclusive {
            "inclusive"
        } else {
            "exclusive"
        },
        if segments.is_some() {
            ", segmented"
        } else {
            ""
        },
        args.out.display()
    );
    Ok(())
}

/// `gpugraph compact`.
#[derive(Args, Debug)]
pub struct CompactArgs {
    /// Values (1-D uint32 .npy).
    #[arg(long = "in")]
    pub input: PathBuf,
    /// Selection flags aligned with the values (1-D uint32 .npy; nonzero selects).
    #[arg(long)]
    pub flags: PathBuf,
    /// Survivors in source order (.npy with exactly `count` rows).
    #[arg(long)]
    pub out: PathBuf,
}

/// Stably compacts the selected values on the GPU; prints the count.
pub fn compact(args: &CompactArgs) -> Result<()> {
    let out_file = PendingFile::new(&args.out, "--out")?;
    let values = npy::read_u32_vector(&args.input, "compaction values")?;
    let flags = npy::read_u32_vector(&args.flags, "compaction flags")?;
    if flags.len() != values.len() {
        bail!(
            "{}: flags have {} rows but {} has {}",
            args.flags.display(),
            flags.len(),
            args.input.display(),
            values.len()
        );
    }
    let n = values.len() as u64;
    let gpu = Gpu::open()?;
    let (bv, bf) = (gpu.upload("values", &values), gpu.upload("flags", &flags));
    let out = gpu.upload("survivors", &vec![0; values.len()]);
    let count = gpu.upload("count", &[0]);
    let g = gpugraph_gpgpu::compact::compaction_graph(
        gpu.device(),
        "cli-compact",
        &bv,
        &bf,
        &out,
        &count,
        0,
        n,
        n,
    )?;
    run_once(&gpu, g)?;
    let selected = gpu.read_back(&count, 1)?[0] as u64;
    let survivors = gpu.read_back(&out, selected)?;
    write_u32(&out_file, &survivors)?;
    out_file.commit()?;
    println!(
        "compact: {selected} of {n} rows selected -> {}",
        args.out.display()
    );
    Ok(())
}
