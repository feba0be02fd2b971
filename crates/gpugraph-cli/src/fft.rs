//! `gpugraph fft2d`: the 2-D complex FFT of one `.npy` field on the GPU (gpgpu [`Fft2d`]),
//! read back and written in the input's form (complex64 `(h, w)` or float32 `(h, w, 2)`).
//!
//! The output's temporary is created and the input checked (dtype, shape, power-of-two
//! sides) before the GPU is opened; the output appears only when the command succeeded.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use gpugraph_command::{CommandGraph, VectorFormat};
use gpugraph_gpgpu::{Fft2d, FftDirection};

use crate::gpu::{import_as, Gpu};
use crate::npy::{self, NpyArray};
use crate::output::PendingFile;

/// `gpugraph fft2d`.
#[derive(Args, Debug)]
pub struct Fft2dArgs {
    /// Input field: complex64 .npy of shape (h, w), or float32 of shape (h, w, 2)
    /// (re, im); h and w powers of two. complex128/float64 are accepted when exact.
    #[arg(long = "in")]
    pub input: PathBuf,
    /// Output .npy, in the input's form.
    #[arg(long)]
    pub out: PathBuf,
    /// Inverse transform, scaled by 1/(h·w) (default: forward, unscaled).
    #[arg(long)]
    pub inverse: bool,
}

/// Runs the transform and writes the result.
pub fn run(args: &Fft2dArgs) -> Result<()> {
    let out_file = PendingFile::new(&args.out, "--out")?;
    let (field, complex_file) = npy::read_complex(&args.input, "--in")?;
    let (height, width) = (field.shape[0], field.shape[1]);
    for (what, n) in [("height", height), ("width", width)] {
        if n == 0 || !n.is_power_of_two() {
            bail!(
                "{}: --in has {what} {n}; fft2d needs power-of-two sides (non-power-of-two sizes need Bluestein, which is not implemented)",
                args.input.display()
            );
        }
    }
    let n = (height * width) as u64;
    let gpu = Gpu::open()?;
    let mut g = CommandGraph::new("cli-fft2d", gpu.device());
    let in_buf = gpu.upload("fft2d-input", &field.words());
    let out_buf = gpu.upload("fft2d-output", &vec![0; 2 * n as usize]);
    let input = import_as(&mut g, "fft2d-input", &in_buf, VectorFormat::Float32x2, n)?;
    let output = import_as(&mut g, "fft2d-output", &out_buf, VectorFormat::Float32x2, n)?;
    let direction = if args.inverse {
        FftDirection::Inverse
    } else {
        FftDirection::Forward
    };
    let plan = Fft2d {
        id: "fft2d".into(),
        input,
        output,
        width: width as u64,
        height: height as u64,
        direction,
    }
    .add_to_graph(&mut g)?;
    let started = Instant::now();
    gpu.run_graph(&mut g.compile()?, "the fft2d graph")?;
    let elapsed = started.elapsed();
    let words = gpu.read_back(&out_buf, 2 * n)?;
    let result = NpyArray {
        dtype: npy::Dtype::F32,
        shape: vec![height, width, 2],
        data: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
    };
    let bytes = if complex_file {
        npy::encode_complex64(&result)
    } else {
        npy::encode(&result)
    };
    out_file.write_all(&bytes)?;
    out_file.commit()?;
    println!(
        "fft2d {}: {height}×{width}, {} passes, {:.3} ms (compile, run and wait) -> {}",
        if args.inverse { "inverse" } else { "forward" },
        plan.passes.len(),
        crate::output::ms(elapsed),
        args.out.display()
    );
    Ok(())
}
