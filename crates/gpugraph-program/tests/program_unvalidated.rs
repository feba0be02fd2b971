//! Programs on a device created WITHOUT wgpu's indirect-dispatch validation
//! (`ContextOptions::unvalidated_indirect`): the gate kernel clamps its counts, so gated
//! loops and PCG give the same answers as the CPU oracles; the capability and the decision
//! say validation is off; and the process refuses a context with the other setting.
//! Every context of this binary is unvalidated (one setting per process).

mod program_common;

use gpugraph_command::{ContextError, ContextOptions, GpuContext};
use gpugraph_gpgpu::sparse::{cpu, CsrMatrix};
use gpugraph_program::lowering::BackendCapabilities;
use gpugraph_program::program::ops::words::{CounterStep, Mix};
use gpugraph_program::program::pcg::{solve_pcg, PcgOptions, LOOP_PATH};
use gpugraph_program::program::Program;
use program_common::{run_both, Setup};

fn unvalidated() -> GpuContext {
    GpuContext::with_options(&ContextOptions {
        unvalidated_indirect: true,
        ..ContextOptions::from_env()
    })
    .expect("a Vulkan adapter (lavapipe in CI) is required for GPU tests")
}

#[test]
fn pcg_without_indirect_validation_matches_a_cpu_pcg() {
    let ctx = unvalidated();
    assert!(!ctx.capabilities().indirect_validation);
    let a = CsrMatrix::poisson2d(64).unwrap();
    let b = vec![1.0f32; a.rows() as usize];
    let oracle = cpu::pcg(&a, &b, 1e-5, 10_000);
    let options = PcgOptions {
        tol: 1e-5,
        max_iterations: oracle.iterations + 20,
        jacobi: true,
        spmv: None,
        rows_per_wg: None,
    };
    let s = solve_pcg(&ctx, &a, &b, &options).unwrap();
    assert!(
        s.converged && s.iterations.abs_diff(oracle.iterations) <= 1,
        "GPU {} iterations, CPU {}",
        s.iterations,
        oracle.iterations
    );
    assert_eq!(s.log.submits(), 1);
    let d = s.report.decision(LOOP_PATH).unwrap();
    assert!(d.reason.contains("indirect validation off"), "{}", d.reason);
    assert!(!s.report.capabilities.device.indirect_validation);
    assert!(s.report.to_string().contains("indirect validation off"));
}

#[test]
fn a_gated_loop_without_indirect_validation_follows_the_interpreter() {
    let ctx = unvalidated();
    for limit in [0u32, 1, 3, 9] {
        let mut s = Setup::new(&ctx);
        let counter = s.u32s("counter", &[0]);
        let pred = s.u32s("pred", &[u32::from(limit > 0)]);
        let target = s.u32s("target", &(0..300).collect::<Vec<u32>>());
        let body = Program::composite(
            "body",
            vec![
                Program::operation(Mix {
                    id: "mix".into(),
                    target,
                    word: counter,
                    constant: 7,
                }),
                Program::operation(CounterStep {
                    id: "step".into(),
                    counter,
                    predicate: pred,
                    limit,
                }),
            ],
        );
        let p = Program::repeat("loop", body, 6, Some(pred));
        let both = run_both(&ctx, s, &p, &[target, counter]);
        assert_eq!(both.gpu, both.cpu, "limit {limit}");
        assert_eq!(
            both.gpu_iterations[0].1, both.interpretation.iterations["loop"],
            "limit {limit}"
        );
        let _ = BackendCapabilities::of(&ctx);
    }
}

#[test]
fn one_process_uses_one_indirect_validation_setting() {
    let _held = unvalidated();
    match GpuContext::with_options(&ContextOptions::from_env()) {
        Err(e @ ContextError::IndirectValidationConflict { requested: true }) => {
            let text = e.to_string();
            assert!(text.contains("one process uses one setting"), "{text}");
        }
        Err(e) => panic!("expected IndirectValidationConflict, got {e}"),
        Ok(_) => panic!("a validated context was created in an unvalidated process"),
    }
}
