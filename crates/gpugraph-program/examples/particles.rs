//! One particle step as a declaration graph: packed float32x3 positions are advanced by an
//! expression, per-particle squared speeds come from another expression (the two fuse into one
//! shader that reads the velocities once), a dot product with the masses reduces them on the
//! GPU, and a scalar expression turns that into the kinetic energy without the scalar ever
//! visiting the host.
//!
//! The same program runs as a [`Graph`] (all operations in one submission) and as a
//! [`SimpleGraph`] (one evaluator pass per operation, the portable cross-check); both are
//! compared with plain-Rust arithmetic.
//!
//! ```sh
//! cargo run --release -p gpugraph-program --example particles [-- PARTICLES]
//! ```

use gpugraph_command::{GpuContext, VectorFormat};
use gpugraph_program::expr::ScalarType;
use gpugraph_program::graph::{
    Bindings, CompileOptions, Graph, ProgramError, RunOptions, SimpleGraph, ValueSpec,
};
use gpugraph_program::operation::{DotProduct, ExpressionOperation};
use gpugraph_tables::GpuVector;

/// Declares the step on either graph kind (they share the builder methods).
macro_rules! declare_step {
    ($graph:expr) => {{
        let g = &mut $graph;
        g.add_input("positions", ValueSpec::vector(VectorFormat::Float32x3))?;
        g.add_input("velocities", ValueSpec::vector(VectorFormat::Float32x3))?;
        g.add_input("masses", ValueSpec::vector(VectorFormat::Float32))?;
        g.add_input("dt", ValueSpec::scalar(ScalarType::Float32))?;
        g.add(ExpressionOperation::new(
            "moved",
            "positions + velocities * dt",
        ))?;
        g.add(ExpressionOperation::new(
            "speed2",
            "dot(velocities, velocities)",
        ))?;
        g.add(DotProduct::new(
            "weigh",
            "masses",
            "speed2",
            "twice_kinetic",
        ))?;
        g.add(ExpressionOperation::new("kinetic", "twice_kinetic * 0.5"))?;
        Ok::<(), ProgramError>(())
    }};
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .map_err(|e| format!("PARTICLES must be a count, got '{arg}': {e}"))?,
        None => 100_000,
    };
    let ctx = GpuContext::new()?;

    let positions: Vec<f32> = (0..3 * n).map(|i| (i % 97) as f32 * 0.25).collect();
    let velocities: Vec<f32> = (0..3 * n).map(|i| ((i % 13) as f32 - 6.0) * 0.5).collect();
    let masses: Vec<f32> = (0..n).map(|i| 1.0 + (i % 5) as f32).collect();
    let dt = 0.01f32;
    let pos = GpuVector::upload_chunks(&ctx, &[&positions[..]], VectorFormat::Float32x3)?;
    let vel = GpuVector::upload_chunks(&ctx, &[&velocities[..]], VectorFormat::Float32x3)?;
    let mass = GpuVector::upload_chunks(&ctx, &[&masses[..]], VectorFormat::Float32)?;

    let mut graph = Graph::new("particle-step");
    declare_step!(graph)?;
    let mut simple = SimpleGraph::new("particle-step-simple");
    declare_step!(simple)?;
    let outputs = ["moved", "kinetic"];
    let compiled = graph.compile(&ctx, CompileOptions::outputs(&outputs))?;
    let compiled_simple = simple.compile(&ctx, CompileOptions::outputs(&outputs))?;
    let bindings = || {
        Bindings::new()
            .vector("positions", &pos)
            .vector("velocities", &vel)
            .vector("masses", &mass)
            .float32("dt", dt)
    };
    let fused = compiled.run(bindings(), RunOptions::default())?;
    let portable = compiled_simple.run(bindings(), RunOptions::default())?;
    println!(
        "Graph: {} submission(s); SimpleGraph: {} submission(s)",
        fused.submissions(),
        portable.submissions()
    );
    for d in &fused.lowering().decisions {
        println!(
            "  {} ({}): {} ({})",
            d.operation, d.operation_type, d.realization, d.reason
        );
    }

    let read = |results: &gpugraph_program::graph::RunResults, name: &str| {
        results
            .get(name)
            .ok_or_else(|| format!("result '{name}' missing"))
            .and_then(|v| v.read_back::<f32>(&ctx).map_err(|e| e.to_string()))
    };
    let (moved, kinetic) = (read(&fused, "moved")?, read(&fused, "kinetic")?);
    if moved != read(&portable, "moved")? || kinetic != read(&portable, "kinetic")? {
        return Err("Graph and SimpleGraph disagree".into());
    }

    // Plain-Rust check (f64 for the reduction; the GPU sums in another order).
    let mut worst = 0f32;
    for i in 0..3 * n {
        let want = positions[i] + velocities[i] * dt;
        worst = worst.max((moved[i] - want).abs() / want.abs().max(1.0));
    }
    let want_kinetic: f64 = (0..n)
        .map(|i| {
            let v = &velocities[3 * i..3 * i + 3];
            0.5 * f64::from(masses[i]) * v.iter().map(|&c| f64::from(c * c)).sum::<f64>()
        })
        .sum();
    let rel = (f64::from(kinetic[0]) - want_kinetic).abs() / want_kinetic.abs().max(1.0);
    println!(
        "{n} particles moved (worst relative error {worst:.2e}); kinetic energy {} (CPU {want_kinetic:.1}, relative error {rel:.2e})",
        kinetic[0]
    );
    if worst > 1e-6 || rel > 1e-4 {
        return Err("results outside float32 tolerance of the CPU".into());
    }
    println!("checked: Graph == SimpleGraph, both within float32 tolerance of the CPU");
    Ok(())
}
