//! Expression fusion in `Graph`: consecutive row-local expressions run as one shader whose
//! unselected intermediates never reach memory; results are bit-identical to SimpleGraph (one
//! pass per operation) and match plain-Rust arithmetic; anything that breaks the conditions
//! (chunk lengths that differ, a constant expression, another operation type) lowers one by
//! one.

mod expr_common;
mod graph_common;

use gpugraph_command::VectorFormat as F;
use gpugraph_program::expr::{IntegerRounding, ScalarType};
use gpugraph_program::graph::{Bindings, RunResults, ValueSpec};
use gpugraph_program::operation::{DotProduct, ExpressionOperation};
use gpugraph_testing::{ctx, rng, uneven_chunks};
use graph_common::{read_f32, read_u32, run_both, upload, Program};
use rand::Rng;

fn floats(r: &mut impl Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| r.random_range(-3.0f32..3.0)).collect()
}

/// Realizations of the run's decisions, by operation id.
fn realizations(results: &RunResults) -> Vec<(String, String)> {
    results
        .lowering()
        .decisions
        .iter()
        .map(|d| (d.operation.clone(), d.realization.clone()))
        .collect()
}

fn chain() -> Program {
    Program::default()
        .input("x", ValueSpec::vector(F::Float32x3))
        .input("y", ValueSpec::vector(F::Float32x3))
        .input("s", ValueSpec::scalar(ScalarType::Float32))
        .op(ExpressionOperation::new("a", "x * s + y"))
        .op(ExpressionOperation::new("b", "a * a - x"))
        .op(ExpressionOperation::new("c", "vec2(dot(b, y), length(a))"))
}

#[test]
fn a_chain_of_expressions_is_one_shader_and_matches_simple_graph_and_the_cpu() {
    let ctx = ctx();
    let mut r = rng(21);
    for outputs in [vec!["c"], vec!["a", "c"], vec!["a", "b", "c"]] {
        let compiled = chain().compile_both(&ctx, &outputs);
        for n in [1usize, 255, 256, 257, 5000] {
            let chunks = uneven_chunks(&mut r, n, 3);
            let (xs, ys) = (floats(&mut r, 3 * n), floats(&mut r, 3 * n));
            let (x, y) = (
                upload(&ctx, F::Float32x3, &xs, &chunks),
                upload(&ctx, F::Float32x3, &ys, &chunks),
            );
            let s = 1.25f32;
            let results = run_both(
                &ctx,
                &compiled,
                Bindings::new()
                    .vector("x", &x)
                    .vector("y", &y)
                    .float32("s", s),
            );
            let decisions = realizations(&results);
            assert_eq!(decisions.len(), 3, "{outputs:?}");
            for (op, realization) in &decisions {
                assert!(
                    realization.starts_with("fused expression kernel"),
                    "{outputs:?}: {op} was lowered as '{realization}'"
                );
            }
            let d = &results.lowering().decisions;
            assert_eq!(d.iter().map(|d| d.node_count).sum::<usize>(), 1, "one node");
            // Unselected intermediates are named as kept in registers.
            for name in ["a", "b"] {
                let in_registers = !outputs.contains(&name);
                let reason = &d[0].reason;
                let list = reason.rsplit('[').next().unwrap_or("");
                let kept = list.trim_end_matches(']').split(", ").any(|n| n == name);
                assert_eq!(kept, in_registers, "{outputs:?} {name}: {reason}");
            }
            assert_eq!(results.get("c").unwrap().chunk_lengths(), x.chunk_lengths());

            // Plain Rust, in the same float32 operation order, each operation rounded on its
            // own: every float operand in the shader is opaque to the compiler, so no device
            // may contract `x * s + y` or the dot product into fused multiply-adds (issue 10:
            // NVIDIA did in one path and not the other). Products and sums are bit-exact; only
            // sqrt is left to the device's accuracy by WGSL.
            let c = read_f32(&ctx, results.get("c").unwrap());
            let stored_a = outputs
                .contains(&"a")
                .then(|| read_f32(&ctx, results.get("a").unwrap()));
            for i in 0..n {
                let xr = &xs[3 * i..3 * i + 3];
                let yr = &ys[3 * i..3 * i + 3];
                let a: Vec<f32> = (0..3).map(|k| xr[k] * s + yr[k]).collect();
                let b: Vec<f32> = (0..3).map(|k| a[k] * a[k] - xr[k]).collect();
                let dot = b[0] * yr[0] + b[1] * yr[1] + b[2] * yr[2];
                let len = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
                if let Some(got) = &stored_a {
                    for k in 0..3 {
                        assert_eq!(got[3 * i + k].to_bits(), a[k].to_bits(), "row {i}: a");
                    }
                }
                assert_eq!(c[2 * i].to_bits(), dot.to_bits(), "row {i}: dot");
                let tol = 3.0 * f32::EPSILON * len;
                assert!((c[2 * i + 1] - len).abs() <= tol, "row {i}: length");
            }
        }
    }
}

#[test]
fn a_result_read_by_another_operation_type_is_stored() {
    // `b` feeds a dot product (not an expression), so it is written even though only the
    // dot product's result is selected.
    let ctx = ctx();
    let mut r = rng(22);
    let program = Program::default()
        .input("x", ValueSpec::vector(F::Float32))
        .input("y", ValueSpec::vector(F::Float32))
        .op(ExpressionOperation::new("a", "x + y"))
        .op(ExpressionOperation::new("b", "a * 0.5"))
        .op(DotProduct::new("dot", "b", "x", "d"));
    let compiled = program.compile_both(&ctx, &["d"]);
    let n = 3001;
    let (xs, ys) = (floats(&mut r, n), floats(&mut r, n));
    let (x, y) = (
        upload(&ctx, F::Float32, &xs, &[n]),
        upload(&ctx, F::Float32, &ys, &[n]),
    );
    let results = run_both(
        &ctx,
        &compiled,
        Bindings::new().vector("x", &x).vector("y", &y),
    );
    let d = &results.lowering().decisions;
    assert!(d[0].reason.contains("stored: [b]"), "{}", d[0].reason);
    assert!(
        d[0].realization.starts_with("fused"),
        "{}",
        d[0].realization
    );
    assert!(
        !d[2].realization.starts_with("fused"),
        "{}",
        d[2].realization
    );
    let want: f64 = (0..n)
        .map(|i| f64::from((xs[i] + ys[i]) * 0.5) * f64::from(xs[i]))
        .sum();
    let got = read_f32(&ctx, results.get("d").unwrap())[0];
    assert!((f64::from(got) - want).abs() < 1e-3 * want.abs().max(1.0));
}

#[test]
fn each_stage_keeps_its_own_cast_rounding() {
    let ctx = ctx();
    let program = Program::default()
        .input("x", ValueSpec::vector(F::Float32))
        .op(ExpressionOperation::new("i", "uint32(x * 2.5)")
            .with_rounding(IntegerRounding::Nearest))
        .op(ExpressionOperation::new("j", "sint32(float32(i) * -0.5)"));
    let compiled = program.compile_both(&ctx, &["i", "j"]);
    let xs: Vec<f32> = vec![0.2, 0.6, 1.0, 1.4, -1.0, 3.0, 1e10, f32::NAN];
    let x = upload(&ctx, F::Float32, &xs, &[xs.len()]);
    let results = run_both(&ctx, &compiled, Bindings::new().vector("x", &x));
    assert!(realizations(&results)
        .iter()
        .all(|(_, r)| r.starts_with("fused")));
    // 0.5 → 1 (nearest: ties away from zero), 1.5 → 2, 2.5 → 3, 3.5 → 4, -2.5 → 0 (saturated),
    // 7.5 → 8, huge → u32::MAX, NaN → 0.
    let i = read_u32(&ctx, results.get("i").unwrap());
    assert_eq!(i, vec![1, 2, 3, 4, 0, 8, u32::MAX, 0]);
    // Truncation toward zero of -i/2, saturated to sint32.
    let j: Vec<i32> = read_u32(&ctx, results.get("j").unwrap())
        .into_iter()
        .map(|w| w as i32)
        .collect();
    let want: Vec<i32> = i
        .iter()
        .map(|&v| ((v as f32) * -0.5).trunc().max(i32::MIN as f32) as i32)
        .collect();
    assert_eq!(j, want);
}

#[test]
fn different_chunk_lengths_and_constant_expressions_lower_one_by_one() {
    let ctx = ctx();
    let mut r = rng(23);
    // Independent expressions over vectors of different chunking: not fusible this run.
    let program = Program::default()
        .input("x", ValueSpec::vector(F::Float32))
        .input("z", ValueSpec::vector(F::Float32))
        .input("k", ValueSpec::scalar(ScalarType::Float32))
        .op(ExpressionOperation::new("p", "x * 2"))
        .op(ExpressionOperation::new("q", "z + 1"))
        .op(ExpressionOperation::new("konst", "k * 3"))
        .op(ExpressionOperation::new("w", "q - 1"));
    let compiled = program.compile_both(&ctx, &["p", "q", "konst", "w"]);
    let (xs, zs) = (floats(&mut r, 40), floats(&mut r, 40));
    let x = upload(&ctx, F::Float32, &xs, &[10, 30]);
    for (z_chunks, fused_pq) in [(vec![40usize], false), (vec![10, 30], true)] {
        let z = upload(&ctx, F::Float32, &zs, &z_chunks);
        let results = run_both(
            &ctx,
            &compiled,
            Bindings::new()
                .vector("x", &x)
                .vector("z", &z)
                .float32("k", 2.0),
        );
        let d = realizations(&results);
        // p and q fuse only when their chunk lengths agree; the constant expression `konst`
        // ends any group, and `w` alone after it is not a group.
        assert_eq!(d[0].1.starts_with("fused"), fused_pq, "{d:?}");
        assert_eq!(d[1].1.starts_with("fused"), fused_pq, "{d:?}");
        assert!(!d[2].1.starts_with("fused"), "{d:?}");
        assert!(!d[3].1.starts_with("fused"), "{d:?}");
        let w = read_f32(&ctx, results.get("w").unwrap());
        for i in 0..40 {
            assert_eq!(w[i], (zs[i] + 1.0) - 1.0);
        }
        assert_eq!(read_f32(&ctx, results.get("konst").unwrap()), vec![6.0]);
    }
}

#[test]
fn fused_results_land_in_output_targets() {
    use gpugraph_program::graph::RunOptions;
    let ctx = ctx();
    let mut r = rng(24);
    let n = 777;
    let chunks = [300usize, 0, 477];
    let (xs, ys) = (floats(&mut r, 3 * n), floats(&mut r, 3 * n));
    let (x, y) = (
        upload(&ctx, F::Float32x3, &xs, &chunks),
        upload(&ctx, F::Float32x3, &ys, &chunks),
    );
    let bind = || {
        Bindings::new()
            .vector("x", &x)
            .vector("y", &y)
            .float32("s", 0.5)
    };
    let program = chain();
    let (full, simple) = program.compile_both(&ctx, &["c"]);
    let target = graph_common::poisoned(&ctx, F::Float32x2, &chunks);
    let fused = full
        .run(bind(), RunOptions::new().target("c", &target))
        .unwrap();
    assert!(fused.lowering().decisions[0]
        .realization
        .starts_with("fused"));
    let got = fused.get("c").unwrap();
    assert!(
        got.chunks()[0].shares_buffer(&target.chunks()[0]),
        "the target is the result"
    );
    let want = simple.run(bind(), RunOptions::new()).unwrap();
    assert_eq!(
        read_u32(&ctx, &target),
        read_u32(&ctx, want.get("c").unwrap()),
        "target rows equal SimpleGraph's result"
    );
}

#[test]
fn random_fused_chains_equal_simple_graph_bit_for_bit() {
    use gpugraph_program::expr::{compile_expression, ExpressionOptions, ValueType};
    const STAGES: [&str; 4] = ["r0", "r1", "r2", "r3"];
    let ctx = ctx();
    let mut r = rng(25);
    let base = expr_common::random_decls();
    for trial in 0..40 {
        let mut decls = expr_common::random_decls();
        let mut program = Program::default();
        for (n, t) in &base.inputs {
            program = program.input(n, ValueSpec::vector(t.format()));
        }
        for (n, t) in &base.scalars {
            program = program.input(n, ValueSpec::scalar(*t));
        }
        let stages = r.random_range(2..=4);
        let mut texts = Vec::new();
        for name in STAGES.iter().take(stages) {
            let scalar =
                [ScalarType::Float32, ScalarType::Sint32, ScalarType::Uint32][r.random_range(0..3)];
            let ty = ValueType::new(scalar, r.random_range(1..=4));
            let rounding = if r.random_bool(0.5) {
                IntegerRounding::Nearest
            } else {
                IntegerRounding::Truncate
            };
            let inputs: Vec<(&str, F)> =
                decls.inputs.iter().map(|(n, t)| (*n, t.format())).collect();
            // Row-sized stages only: a constant expression would end the group.
            let text = loop {
                let depth = r.random_range(1..=3);
                let text = decls.expr(&mut r, ty, depth);
                let e = compile_expression(
                    None,
                    text.as_str(),
                    &inputs,
                    &decls.scalars,
                    &ExpressionOptions::output(name).with_rounding(rounding),
                )
                .unwrap_or_else(|e| panic!("generated {text}: {e}"));
                if e.is_row_sized() {
                    break text;
                }
            };
            program =
                program.op(ExpressionOperation::new(*name, text.as_str()).with_rounding(rounding));
            texts.push(text);
            decls.inputs.push((name, ty));
        }
        // The last stage and a random subset of the others are selected.
        let selected: Vec<&str> = STAGES
            .iter()
            .take(stages)
            .enumerate()
            .filter(|(i, _)| *i == stages - 1 || r.random_bool(0.4))
            .map(|(_, n)| *n)
            .collect();
        let compiled = program.compile_both(&ctx, &selected);
        let rows = r.random_range(1..600);
        let chunks = [vec![0], uneven_chunks(&mut r, rows, 3)].concat();
        let columns: Vec<_> = base
            .inputs
            .iter()
            .map(|(_, t)| {
                upload(
                    &ctx,
                    t.format(),
                    &expr_common::random_column(&mut r, *t, rows),
                    &chunks,
                )
            })
            .collect();
        let mut bindings = Bindings::new();
        for ((n, _), c) in base.inputs.iter().zip(&columns) {
            bindings = bindings.vector(*n, c);
        }
        for (n, t) in &base.scalars {
            bindings = bindings.scalar(*n, expr_common::random_scalar(&mut r, *t));
        }
        eprintln!("trial {trial}: selected {selected:?} stages {texts:?}");
        // run_both asserts Graph and SimpleGraph agree bit for bit on every selected result.
        let results = run_both(&ctx, &compiled, bindings);
        for (op, realization) in realizations(&results) {
            assert!(
                realization.starts_with("fused"),
                "trial {trial}: {op} not fused ({realization}); stages {texts:?}"
            );
        }
    }
}
