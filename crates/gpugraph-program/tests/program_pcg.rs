//! Sparse primitives and PCG on the GPU: SpMV (both realizations) and dot products (both
//! realizations) against gpgpu's CPU oracles on random inputs with poisoned outputs; the
//! realization choices flipping with shape and capabilities; PCG on 2-D Poisson 64×64 and
//! 256×256 against a CPU PCG (iterations ± 1, tolerance reached), and the PCG tree against
//! the CPU interpreter.
//!
//! Tolerances: float32 on the GPU with fixed-order tree sums vs f64-accumulated oracles:
//! SpMV rows within 1e-5 relative to Σ|a·x|, dots within 1e-5 relative to Σ|a·b| (+1e-30).

mod program_common;

use gpugraph_command::{CommandGraph, VectorFormat};
use gpugraph_gpgpu::sparse::{cpu, CsrMatrix, CsrViews, ReduceRealization, SpmvRealization};
use gpugraph_program::lowering::BackendCapabilities;
use gpugraph_program::program::ops::sparse::{dot, spmv};
use gpugraph_program::program::pcg::{build_pcg, solve_pcg, PcgOptions, PcgSolver, LOOP_PATH};
use gpugraph_program::program::{interpret, Program, WgpuProgramCompiler};
use program_common::{ctx, run_both, run_both_with, Setup};
use rand::{Rng, SeedableRng};

const POISON_F: f32 = f32::NAN;

fn random_csr(seed: u64, rows: u32, columns: u32, max_len: u32) -> CsrMatrix {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let mut e = Vec::new();
    for row in 0..rows {
        for _ in 0..r.random_range(0..=max_len) {
            e.push((
                row,
                r.random_range(0..columns),
                r.random_range(-2.0f32..2.0),
            ));
        }
    }
    CsrMatrix::from_triplets(rows, columns, e).unwrap()
}

fn close(gpu: &[f32], want: &[f32], scale: &[f32], what: &str) {
    assert_eq!(gpu.len(), want.len(), "{what}");
    for (i, ((g, w), s)) in gpu.iter().zip(want).zip(scale).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * s + 1e-30,
            "{what} row {i}: GPU {g}, oracle {w} (scale {s})"
        );
    }
}

fn bits(v: &[u32]) -> Vec<f32> {
    v.iter().map(|&w| f32::from_bits(w)).collect()
}

#[test]
fn spmv_matches_the_oracle_in_both_realizations() {
    let ctx = ctx();
    let caps = BackendCapabilities::of(&ctx);
    let mut realizations = vec![SpmvRealization::ThreadRow];
    for lanes in [2u32, 4, 8] {
        if caps.device.subgroups && caps.device.subgroup_min_size >= lanes {
            realizations.push(SpmvRealization::SubgroupRow { lanes });
        }
    }
    for (seed, rows, columns, max_len) in [
        (1, 1, 1, 1),
        (2, 1023, 700, 9),
        (3, 1025, 1025, 20),
        (4, 3000, 50, 3),
        (5, 0, 4, 2),
    ] {
        let a = random_csr(seed, rows, columns, max_len);
        let x: Vec<f32> = {
            let mut r = rand::rngs::StdRng::seed_from_u64(seed + 100);
            (0..columns).map(|_| r.random_range(-1.0f32..1.0)).collect()
        };
        let want = cpu::spmv(&a, &x);
        let scale: Vec<f32> = (0..rows)
            .map(|row| {
                let (s, e) = a.span(row);
                (s..e)
                    .map(|k| (a.values()[k] * x[a.column_indices()[k] as usize]).abs())
                    .sum()
            })
            .collect();
        for &r in &realizations {
            let mut s = Setup::new(&ctx);
            let (csr, keep) = CsrViews::upload(&mut s.graph, "a", &a).unwrap();
            s.memory
                .insert(csr.row_offsets.buffer(), a.row_offsets().to_vec());
            s.memory
                .insert(csr.column_indices.buffer(), a.column_indices().to_vec());
            s.memory.insert(
                csr.values.buffer(),
                a.values().iter().map(|v| v.to_bits()).collect(),
            );
            let xv = s.f32s("x", &x);
            let yv = s.f32s("y", &vec![POISON_F; rows as usize]);
            let p = Program::semantic(spmv("spmv", &csr, a.mean_row_length(), xv, yv, Some(r)));
            let both = run_both(&ctx, s, &p, &[yv]);
            drop(keep);
            let what = format!("{rows}×{columns} {r:?}");
            close(&bits(&both.gpu[0]), &want, &scale, &what);
            close(&bits(&both.cpu[0]), &want, &scale, &what);
            assert_eq!(
                both.compiled.report.decision("spmv").unwrap().realization,
                r.name()
            );
        }
    }
}

#[test]
fn dots_match_the_oracle_in_both_realizations() {
    let ctx = ctx();
    for n in [0usize, 1, 255, 1024, 1025, 5000] {
        let mut r = rand::rngs::StdRng::seed_from_u64(n as u64);
        let a: Vec<f32> = (0..n).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let b: Vec<f32> = (0..n).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let mut s = Setup::new(&ctx);
        let av = s.f32s("a", &a);
        let bv = s.f32s("b", &b);
        let out = s.f32s("out", &[POISON_F]);
        let p = Program::semantic(dot("dot", av, bv, out));
        let both = run_both(&ctx, s, &p, &[out]);
        let want = cpu::dot(&a, &b);
        let scale: f32 = a.iter().zip(&b).map(|(x, y)| (x * y).abs()).sum();
        close(
            &bits(&both.gpu[0]),
            &[want],
            &[scale],
            &format!("dot n={n}"),
        );
        let d = both.compiled.report.decision("dot").unwrap();
        let (expected, nodes) = if n <= 1024 {
            ("single-workgroup", 1)
        } else {
            ("hierarchical", 2)
        };
        assert_eq!((d.realization.as_str(), n), (expected, n));
        assert_eq!(
            both.compiled.report.decision("dot").unwrap().node_count,
            nodes
        );
        assert_eq!(ReduceRealization::choose(n as u64).0.name(), expected);
    }
}

#[test]
fn the_spmv_choice_follows_row_length_and_subgroup_support() {
    let ctx = ctx();
    let poisson = CsrMatrix::poisson2d(16).unwrap();
    let diagonal =
        CsrMatrix::from_triplets(64, 64, (0..64).map(|i| (i, i, 2.0)).collect()).unwrap();
    let mut caps = BackendCapabilities::of(&ctx);
    caps.device.subgroups = true;
    caps.device.subgroup_min_size = 32;
    let decide = |a: &CsrMatrix, caps: &BackendCapabilities| {
        let mut s = Setup::new(&ctx);
        let (csr, _keep) = CsrViews::upload(&mut s.graph, "a", a).unwrap();
        let x = s.f32s("x", &vec![0.0; a.columns() as usize]);
        let y = s.f32s("y", &vec![0.0; a.rows() as usize]);
        let p = Program::semantic(spmv("spmv", &csr, a.mean_row_length(), x, y, None));
        let c = WgpuProgramCompiler::new(caps.clone())
            .compile(&p, &mut s.graph)
            .unwrap();
        let d = c.report.decision("spmv").unwrap().clone();
        (d.realization, d.reason)
    };
    let (r, why) = decide(&poisson, &caps);
    assert_eq!(r, "subgroup-row", "{why}");
    assert!(
        why.contains("short-row CSR") && why.contains("4 lanes"),
        "{why}"
    );
    assert_eq!(
        decide(&diagonal, &caps).0,
        "thread-row",
        "one entry per row"
    );
    caps.device.subgroups = false;
    let (r, why) = decide(&poisson, &caps);
    assert_eq!(r, "thread-row");
    assert!(why.contains("no subgroup"), "{why}");
}

fn ones(n: u32) -> Vec<f32> {
    vec![1.0; n as usize]
}

#[test]
fn pcg_on_poisson_matches_a_cpu_pcg() {
    let ctx = ctx();
    for (grid, tol) in [(64u32, 1e-5f32), (256, 1e-4)] {
        let a = CsrMatrix::poisson2d(grid).unwrap();
        let b = ones(a.rows());
        let oracle = cpu::pcg(&a, &b, tol, 10_000);
        assert!(oracle.converged, "the CPU PCG converges on {grid}²");
        let options = PcgOptions {
            tol,
            max_iterations: oracle.iterations + 20,
            jacobi: true,
            spmv: None,
            rows_per_wg: None,
        };
        let s = solve_pcg(&ctx, &a, &b, &options).unwrap();
        assert!(
            s.iterations.abs_diff(oracle.iterations) <= 1,
            "{grid}²: GPU {} iterations, CPU {}",
            s.iterations,
            oracle.iterations
        );
        assert!(
            s.converged && s.relative_residual <= f64::from(tol),
            "{grid}²: {}",
            s.relative_residual
        );
        // The true residual |b − A·x| / |b| of the GPU iterate. The recursive residual keeps
        // shrinking, but in float32 the true one floors near eps·|A|·|x| / |b| (~1e-4 here):
        // the GPU iterate must be as good as the float32 CPU oracle's.
        let true_residual = |x: &[f32]| {
            let ax = cpu::spmv(&a, x);
            let r: f64 = ax
                .iter()
                .zip(&b)
                .map(|(p, q)| f64::from(p - q).powi(2))
                .sum();
            r.sqrt() / f64::from(grid)
        };
        let (gpu_true, cpu_true) = (true_residual(&s.x), true_residual(&oracle.x));
        assert!(
            gpu_true <= 2.0 * cpu_true + f64::from(tol),
            "{grid}²: true residual GPU {gpu_true}, CPU {cpu_true}"
        );
        assert_eq!(s.log.submits(), 1);
        assert_eq!(s.log.maps_in_flight(), 0);
        let d = s.report.decision(LOOP_PATH).unwrap();
        assert_eq!(d.realization, "gpu-gated bounded sequence");
        assert!(d.reason.contains("WebGPU has no native graph loop"));
        let d = s.report.decision("pcg/iterate/step/update").unwrap();
        assert_eq!(d.realization, "α-folded update");
        assert!(d.reason.contains("every workgroup"), "{}", d.reason);
    }
}

#[test]
fn pcg_exits_immediately_for_a_zero_right_hand_side_and_stops_at_the_bound() {
    let ctx = ctx();
    let a = CsrMatrix::poisson2d(8).unwrap();
    let opts = |max| PcgOptions {
        tol: 1e-6,
        max_iterations: max,
        jacobi: false,
        spmv: Some(SpmvRealization::ThreadRow),
        rows_per_wg: None,
    };
    let s = solve_pcg(&ctx, &a, &vec![0.0; 64], &opts(5)).unwrap();
    assert_eq!(s.iterations, 0);
    assert!(s.x.iter().all(|&v| v == 0.0));
    let s = solve_pcg(&ctx, &a, &ones(64), &opts(3)).unwrap();
    assert_eq!(s.iterations, 3);
    assert!(!s.converged);
    assert_eq!(cpu::pcg(&a, &ones(64), 1e-6, 3).iterations, 3);
    // A compiled solver reruns from x = 0 with the same result, bit for bit.
    let mut solver = PcgSolver::new(&ctx, &a, &ones(64), &opts(100)).unwrap();
    let first = solver.solve(&ctx).unwrap();
    let second = solver.solve(&ctx).unwrap();
    assert!(first.converged && first.iterations > 3);
    assert_eq!(first.iterations, second.iterations);
    assert_eq!(
        first.x.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        second.x.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn the_pcg_tree_matches_its_interpreter() {
    let ctx = ctx();
    let a = CsrMatrix::poisson2d(20).unwrap();
    let b: Vec<f32> = (0..a.rows()).map(|i| (i % 7) as f32 - 3.0).collect();
    let mut s = Setup::new(&ctx);
    let setup = build_pcg(
        &mut s.graph,
        &a,
        &b,
        &PcgOptions {
            tol: 1e-5,
            max_iterations: 200,
            jacobi: true,
            spmv: None,
            rows_per_wg: None,
        },
    )
    .unwrap();
    let mut memory = setup.memory.clone();
    let run = interpret(&setup.program, &mut memory).unwrap();
    let cpu_iterations = run.iterations[LOOP_PATH];
    let oracle = cpu::pcg(&a, &b, 1e-5, 200);
    assert!(cpu_iterations.abs_diff(oracle.iterations) <= 1);
    let caps = BackendCapabilities::of(&ctx);
    let compiled = WgpuProgramCompiler::new(caps)
        .compile(&setup.program, &mut s.graph)
        .unwrap();
    let text = compiled.report.to_string();
    assert!(text.contains("iterate (loop, ≤ 200 iterations)"), "{text}");
    assert!(
        text.contains("lowering: gpu-gated bounded sequence"),
        "{text}"
    );
    let _ = run_both_with;
    let _ = VectorFormat::Uint32;
    let _ = CommandGraph::node_count;
}
