//! Program trees on the GPU against the CPU interpreter of the same tree: loops exiting at
//! iteration 0, 1, mid-way (the predicate flipping), at the bound and never; nested
//! conditionals inside a gated loop; unrolled loops inside gated regions; what a gate refuses
//! (copies); the one-submission run; and the decision report. The word primitives are exact,
//! so GPU and CPU must agree bit for bit.

mod program_common;

use gpugraph_command::{CommandGraph, DataView};
use gpugraph_program::lowering::BackendCapabilities;
use gpugraph_program::program::ops::words::{Compare, CounterStep, Mix};
use gpugraph_program::program::{
    Choice, CpuMemory, PrimitiveNode, Program, ProgramPrimitive, ProgramTreeError,
    WgpuProgramCompiler,
};
use program_common::{ctx, run_both, Setup, POISON};
use rand::{Rng, SeedableRng};

fn random_words(seed: u64, n: usize) -> Vec<u32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.random()).collect()
}

/// A loop of `CounterStep(limit)` + `Mix` over 3000 rows (several workgroups).
fn counting_loop(s: &mut Setup, pred0: u32, limit: u32, max: u32) -> (Program, Vec<DataView>) {
    let counter = s.u32s("counter", &[0]);
    let pred = s.u32s("pred", &[pred0]);
    let target = s.u32s("target", &random_words(limit as u64 + 7, 3000));
    let body = Program::composite(
        "body",
        vec![
            Program::operation(CounterStep {
                id: "step".into(),
                counter,
                predicate: pred,
                limit,
            }),
            Program::operation(Mix {
                id: "mix".into(),
                target,
                word: counter,
                constant: 7,
            }),
        ],
    );
    (
        Program::repeat("loop", body, max, Some(pred)),
        vec![counter, pred, target],
    )
}

#[test]
fn gated_loops_exit_at_0_1_mid_max_and_never() {
    let ctx = ctx();
    // (initial predicate, limit, bound, expected iterations)
    for (pred0, limit, max, expected) in [
        (0, 5, 6, 0),        // exits before the first iteration
        (1, 1, 6, 1),        // after one
        (1, 3, 8, 3),        // mid-way: the predicate flips from 1 to 0
        (1, 6, 6, 6),        // exactly at the bound
        (1, u32::MAX, 5, 5), // never: the bound stops it
        (1, 4, 0, 0),        // a zero bound emits nothing
    ] {
        let mut s = Setup::new(&ctx);
        let (p, watched) = counting_loop(&mut s, pred0, limit, max);
        let both = run_both(&ctx, s, &p, &watched);
        let case = format!("pred0 {pred0} limit {limit} max {max}");
        assert_eq!(both.gpu, both.cpu, "GPU vs interpreter, {case}");
        assert_eq!(both.cpu[0], vec![expected], "counter, {case}");
        assert_eq!(
            both.interpretation.iterations.get("loop"),
            Some(&expected),
            "interpreter iterations, {case}"
        );
        if max > 0 {
            assert_eq!(
                both.gpu_iterations,
                vec![("loop".to_string(), expected)],
                "{case}"
            );
            let r = both.compiled.region("loop").unwrap();
            assert_eq!((r.gates, r.dispatches), (max as usize, 2), "{case}");
        }
        assert_eq!(both.log.submits(), 1);
        assert_eq!(both.log.maps_in_flight(), 0);
    }
}

#[test]
fn nested_conditionals_inside_a_gated_loop_follow_the_interpreter() {
    let ctx = ctx();
    let mut s = Setup::new(&ctx);
    let counter = s.u32s("counter", &[0]);
    let pred = s.u32s("pred", &[1]);
    let a = s.u32s("a", &[POISON]);
    let b = s.u32s("b", &[POISON]);
    let target = s.u32s("target", &random_words(3, 700));
    let mix = |id: &str, c: u32| {
        Program::operation(Mix {
            id: id.into(),
            target,
            word: counter,
            constant: c,
        })
    };
    let inner = Program::conditional("inner", b, mix("m2", 2), Some(mix("m3", 3)));
    let then = Program::composite(
        "then",
        vec![
            mix("m1", 1),
            Program::operation(Compare {
                id: "ge4".into(),
                input: counter,
                threshold: 4,
                output: b,
            }),
            inner,
        ],
    );
    let body = Program::composite(
        "body",
        vec![
            Program::operation(CounterStep {
                id: "step".into(),
                counter,
                predicate: pred,
                limit: 6,
            }),
            Program::operation(Compare {
                id: "ge3".into(),
                input: counter,
                threshold: 3,
                output: a,
            }),
            Program::conditional("outer", a, then, Some(mix("m4", 4))),
        ],
    );
    let p = Program::repeat("loop", body, 9, Some(pred));
    let both = run_both(&ctx, s, &p, &[counter, a, b, target]);
    assert_eq!(both.gpu, both.cpu);
    assert_eq!(both.cpu[0], vec![6]);
    // Iterations 1-2 take m4, 3 takes m1+m3, 4-6 take m1+m2: the target differs from any
    // other branch history, and the interpreter agrees bit for bit.
    assert_eq!(
        both.gpu_iterations
            .iter()
            .find(|(p, _)| p == "loop")
            .map(|x| x.1),
        Some(6)
    );
    let report = &both.compiled.report;
    assert_eq!(
        report.decision("loop/body/outer").unwrap().realization,
        "gpu-gated branches"
    );
    assert_eq!(
        report
            .decision("loop/body/outer/then/inner")
            .unwrap()
            .realization,
        "gpu-gated branches"
    );
}

#[test]
fn unrolled_loops_and_composites_inside_gated_regions() {
    let ctx = ctx();
    let mut s = Setup::new(&ctx);
    let counter = s.u32s("counter", &[0]);
    let flag = s.u32s("flag", &[1]);
    let never = s.u32s("never", &[0]);
    let target = s.u32s("target", &random_words(9, 100));
    let mix = |id: &str, c: u32| {
        Program::operation(Mix {
            id: id.into(),
            target,
            word: counter,
            constant: c,
        })
    };
    let unrolled = Program::repeat(
        "twice",
        Program::composite(
            "inc",
            vec![
                Program::operation(CounterStep {
                    id: "step".into(),
                    counter,
                    predicate: never,
                    limit: 0,
                }),
                mix("m", 5),
            ],
        ),
        2,
        None,
    );
    // flag = 1: the unrolled loop runs inside the taken branch; the else branch never runs.
    let p = Program::composite(
        "root",
        vec![Program::conditional(
            "if",
            flag,
            unrolled,
            Some(mix("skipped", 99)),
        )],
    );
    let both = run_both(&ctx, s, &p, &[counter, target]);
    assert_eq!(both.gpu, both.cpu);
    assert_eq!(both.cpu[0], vec![2]);
    let r = &both.compiled.report;
    assert_eq!(r.decision("root").unwrap().realization, "flattened");
    assert_eq!(
        r.decision("root/if/twice").unwrap().realization,
        "bounded unrolling"
    );
    assert_eq!(
        r.decision("root/if/twice/inc/step").unwrap().realization,
        "explicit-command-nodes"
    );
    assert_eq!(r.decision("root/if/twice/inc/step").unwrap().node_count, 2);
    // The gate writes the counts of 4 dispatches in the taken branch and 1 in the other.
    assert_eq!(both.compiled.region("root/if").unwrap().dispatches, 5);
    let text = r.to_string();
    assert!(text.contains("twice (loop, ≤ 2 iterations)"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(
        json["tree"]["children"][0]["lowering"],
        "gpu-gated branches"
    );
}

/// A primitive that copies one view into another (a copy node, which no gate can skip).
#[derive(Debug)]
struct CopyOp {
    src: DataView,
    dst: DataView,
}

impl ProgramPrimitive for CopyOp {
    fn id(&self) -> &str {
        "copy"
    }
    fn operation_type(&self) -> &str {
        "copy"
    }
    fn choices(&self, _: &BackendCapabilities) -> Vec<Choice> {
        Vec::new()
    }
    fn command_nodes(
        &self,
        _: &CommandGraph,
        _: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
        Ok(vec![PrimitiveNode::Copy {
            id: "copy".into(),
            src: self.src,
            dst: self.dst,
        }])
    }
    fn interpret(&self, m: &mut CpuMemory) -> Result<(), ProgramTreeError> {
        let w = m.read("copy", &self.src)?;
        m.write("copy", &self.dst, &w)
    }
}

#[test]
fn copies_run_ungated_and_are_refused_inside_gated_regions() {
    let ctx = ctx();
    let mut s = Setup::new(&ctx);
    let src = s.u32s("src", &random_words(1, 64));
    let dst = s.u32s("dst", &[POISON; 64]);
    let p = Program::repeat("loop", Program::operation(CopyOp { src, dst }), 2, None);
    let both = run_both(&ctx, s, &p, &[dst]);
    assert_eq!(both.gpu, both.cpu);
    assert_eq!(both.cpu[0], random_words(1, 64));

    for gated in [true, false] {
        let mut s = Setup::new(&ctx);
        let src = s.u32s("src", &[1; 4]);
        let dst = s.u32s("dst", &[0; 4]);
        let pred = s.u32s("pred", &[1]);
        let copy = Program::operation(CopyOp { src, dst });
        let p = if gated {
            Program::repeat("loop", copy, 3, Some(pred))
        } else {
            Program::conditional("if", pred, copy, None)
        };
        let caps = BackendCapabilities::of(&ctx);
        let err = WgpuProgramCompiler::new(caps)
            .compile(&p, &mut s.graph)
            .unwrap_err();
        match err {
            ProgramTreeError::Ungatable { kind, region, .. } => {
                assert_eq!(kind, "copy");
                assert_eq!(region, if gated { "loop" } else { "if" });
            }
            other => panic!("expected Ungatable, got {other}"),
        }
    }
}

#[test]
fn runtime_predicates_need_indirect_execution_and_a_uint32_word() {
    let ctx = ctx();
    let mut s = Setup::new(&ctx);
    let pred = s.u32s("pred", &[1]);
    let wide = s.u32s("wide", &[1, 1]);
    let float = s.f32s("float", &[1.0]);
    let counter = s.u32s("counter", &[0]);
    let body = |predicate| {
        Program::operation(CounterStep {
            id: "step".into(),
            counter,
            predicate,
            limit: 3,
        })
    };
    let mut caps = BackendCapabilities::of(&ctx);
    assert!(
        caps.gpu_resident_conditionals,
        "lavapipe executes indirect dispatches"
    );
    caps.gpu_resident_conditionals = false;
    let p = Program::repeat("loop", body(pred), 3, Some(pred));
    assert!(matches!(
        WgpuProgramCompiler::new(caps.clone()).compile(&p, &mut s.graph),
        Err(ProgramTreeError::RuntimePredicateUnsupported { .. })
    ));
    // Without a predicate the same loop unrolls on that backend.
    let p = Program::repeat("loop", body(pred), 3, None);
    WgpuProgramCompiler::new(caps)
        .compile(&p, &mut s.graph)
        .unwrap();
    let caps = BackendCapabilities::of(&ctx);
    for bad in [wide, float] {
        let mut s2 = Setup::new(&ctx);
        let _ = s2.u32s("x", &[0]);
        let p = Program::repeat("l2", body(pred), 3, Some(bad));
        assert!(matches!(
            WgpuProgramCompiler::new(caps.clone()).compile(&p, &mut s.graph),
            Err(ProgramTreeError::Predicate { .. })
        ));
    }
    let dup = Program::composite("c", vec![body(pred), body(pred)]);
    assert!(matches!(
        WgpuProgramCompiler::new(caps).compile(&dup, &mut s.graph),
        Err(ProgramTreeError::DuplicateId { .. })
    ));
}
