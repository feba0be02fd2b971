//! Semantic program operations lowered through the lowering set: the realization (and its
//! reason) is the set's choice from the operation's shape and the capabilities, custom
//! program lowerings join the same set, forced and unknown realizations, missing types;
//! PCG as semantic operations: three gated dispatches per iteration, the α/β folds at
//! several tilings against a CPU PCG (iterations ± 1); a gated grid above the device limit
//! is refused (the gate would otherwise clamp it).

mod program_common;

use gpugraph_command::{
    Binding, CommandGraph, DispatchNode, GraphError, Grid, ShaderSource, VectorFormat,
};
use gpugraph_gpgpu::sparse::{cpu, CsrMatrix, CsrViews, PcgVectors, FOLD_PARTIALS};
use gpugraph_program::lowering::{
    Attribute, BackendCapabilities, LoweringSet, LoweringSource, ProgramLowering, ProgramOp, FORCED,
};
use gpugraph_program::program::ops::sparse::{dot, spmv};
use gpugraph_program::program::pcg::{solve_pcg, PcgError, PcgOptions, LOOP_PATH};
use gpugraph_program::program::{
    Choice, CpuMemory, PrimitiveNode, Program, ProgramPrimitive, ProgramTreeError,
    WgpuProgramCompiler,
};
use program_common::{ctx, run_both_with, Setup, POISON};

#[test]
fn the_dot_realization_follows_n() {
    let ctx = ctx();
    let caps = BackendCapabilities::of(&ctx);
    for (n, want, nodes) in [
        (1024usize, "single-workgroup", 1),
        (1025, "hierarchical", 2),
    ] {
        let mut s = Setup::new(&ctx);
        let a = s.f32s("a", &vec![1.0; n]);
        let out = s.f32s("out", &[0.0]);
        let c = WgpuProgramCompiler::new(caps.clone())
            .compile(&Program::semantic(dot("dot", a, a, out)), &mut s.graph)
            .unwrap();
        let d = c.report.decision("dot").unwrap();
        assert_eq!((d.realization.as_str(), d.node_count), (want, nodes));
        assert_eq!(d.operation_type, "dot");
        assert_eq!(d.source, LoweringSource::BuiltIn);
        if n > 1024 {
            assert!(
                d.reason.contains("exceeds") && d.reason.contains("not single-workgroup"),
                "{}",
                d.reason
            );
        }
    }
}

#[test]
fn the_spmv_realization_follows_the_capabilities_and_a_forced_one_wins() {
    let ctx = ctx();
    let a = CsrMatrix::poisson2d(8).unwrap();
    let mut caps = BackendCapabilities::of(&ctx);
    caps.device.subgroups = true;
    caps.device.subgroup_min_size = 16;
    let decide = |caps: &BackendCapabilities, forced: Option<&str>| {
        let mut s = Setup::new(&ctx);
        let (csr, _keep) = CsrViews::upload(&mut s.graph, "a", &a).unwrap();
        let x = s.f32s("x", &[0.0; 64]);
        let y = s.f32s("y", &[0.0; 64]);
        let mut op = spmv("spmv", &csr, a.mean_row_length(), x, y, None);
        if let Some(f) = forced {
            op = op.attr(FORCED, Attribute::Text(f.into()));
        }
        WgpuProgramCompiler::new(caps.clone())
            .compile(&Program::semantic(op), &mut s.graph)
            .map(|c| c.report.decision("spmv").unwrap().clone())
    };
    let d = decide(&caps, None).unwrap();
    assert_eq!(d.realization, "subgroup-row", "{}", d.reason);
    caps.device.subgroups = false;
    let d = decide(&caps, None).unwrap();
    assert_eq!(d.realization, "thread-row");
    assert!(
        d.reason.contains("not subgroup-row") && d.reason.contains("no subgroup"),
        "{}",
        d.reason
    );
    let d = decide(&caps, Some("thread-row")).unwrap();
    assert!(d.reason.contains("forced"), "{}", d.reason);
    match decide(&caps, Some("warp-row")) {
        Err(ProgramTreeError::NoRealization { reasons, .. }) => {
            assert!(reasons.contains("warp-row"), "{reasons}")
        }
        other => panic!("expected NoRealization, got {other:?}"),
    }
}

/// `out[i] = in[i] + 1` (uint32) realized by a kernel of the test's own, or refused when
/// the attribute `ok` is 0: a custom program lowering in the one set.
fn add_one() -> ProgramLowering {
    ProgramLowering::new("add-one", |op, m: &mut CpuMemory| {
        let w: Vec<u32> = m
            .read(&op.id, &op.view("in")?)?
            .into_iter()
            .map(|v| v.wrapping_add(1))
            .collect();
        m.write(&op.id, &op.view("out")?, &w)
    })
    .realization(
        "never",
        |_, _| Err("this realization never fits".into()),
        |_, _, _| unreachable!("never selected"),
    )
    .realization(
        "per-row kernel",
        |op, _| match op.u32_attr("ok") {
            Ok(1) => Ok("the test kernel".into()),
            _ => Err("ok must be 1".into()),
        },
        |op, _, _| {
            let (src, dst) = (op.view("in")?, op.view("out")?);
            Ok(vec![PrimitiveNode::Dispatch(DispatchNode::new(
                "add",
                ShaderSource::new(
                    "test/add-one",
                    "@group(0) @binding(0) var<storage, read> src: array<u32>;
                     @group(0) @binding(1) var<storage, read_write> dst: array<u32>;
                     @compute @workgroup_size(64)
                     fn main(@builtin(global_invocation_id) g: vec3<u32>) {
                         if (g.x < arrayLength(&dst)) { dst[g.x] = src[g.x] + 1u; }
                     }",
                ),
                "main",
                vec![Binding::read(0, src), Binding::read_write(1, dst)],
                Grid::Rows {
                    rows: dst.len(),
                    rows_per_workgroup: 64,
                },
            ))])
        },
    )
}

#[test]
fn custom_program_lowerings_join_the_one_set() {
    let ctx = ctx();
    let caps = BackendCapabilities::of(&ctx);
    let set = LoweringSet::builtins()
        .with_program_lowerings(&[add_one()])
        .unwrap();
    assert!(set.program_types().contains(&"add-one".to_string()));
    assert!(set.program_types().contains(&"spmv".to_string()));
    assert!(matches!(
        set.with_program_lowerings(&[add_one()]),
        Err(gpugraph_program::graph::ProgramError::DuplicateLowering { builtin: false, .. })
    ));
    assert!(matches!(
        LoweringSet::builtins()
            .with_program_lowerings(&[ProgramLowering::new("dot", |_, _| Ok(()))]),
        Err(gpugraph_program::graph::ProgramError::DuplicateLowering { builtin: true, .. })
    ));
    let mut s = Setup::new(&ctx);
    let input: Vec<u32> = (0..100).collect();
    let src = s.u32s("in", &input);
    let dst = s.u32s("out", &[POISON; 100]);
    let op = ProgramOp::new("inc", "add-one")
        .input("in", src)
        .output("out", dst)
        .attr("ok", Attribute::U32(1));
    let p = Program::semantic(op.clone());
    // The built-in set has no such type: a named error, not a panic.
    assert!(matches!(
        WgpuProgramCompiler::new(caps.clone()).compile(&p, &mut Setup::new(&ctx).graph),
        Err(ProgramTreeError::NoLowering { .. })
    ));
    let c = WgpuProgramCompiler::with_lowerings(caps.clone(), set.clone());
    let mut graph = s.graph;
    let compiled = c.compile(&p, &mut graph).unwrap();
    let d = compiled.report.decision("inc").unwrap();
    assert_eq!(d.realization, "per-row kernel");
    assert_eq!(d.source, LoweringSource::Custom);
    assert!(d.reason.contains("not never"), "{}", d.reason);
    let mut g = graph.compile().unwrap();
    let buf = &s.buffers[1].1;
    let (bytes, _) =
        gpugraph_program::program::run_once(&ctx.device, &ctx.queue, &mut g, &[(buf, 400)])
            .unwrap();
    let got: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes[0]);
    let mut memory = s.memory;
    gpugraph_program::program::interpret_with(&p, &mut memory, &set).unwrap();
    let want: Vec<u32> = input.iter().map(|v| v + 1).collect();
    assert_eq!(got, want);
    assert_eq!(memory.read("t", &dst).unwrap(), want);
    // With ok = 0 no realization fits: the reasons of both are named.
    let refused = Program::semantic(op.attr("ok", Attribute::U32(0)));
    match c.compile(&refused, &mut Setup::new(&ctx).graph) {
        Err(ProgramTreeError::NoRealization { reasons, .. }) => {
            assert!(
                reasons.contains("never fits") && reasons.contains("ok must be 1"),
                "{reasons}"
            )
        }
        other => panic!("expected NoRealization, got {other:?}"),
    }
    let _ = VectorFormat::Uint32;
}

#[test]
fn pcg_is_three_gated_dispatches_per_iteration_at_every_tiling() {
    let ctx = ctx();
    let a = CsrMatrix::poisson2d(64).unwrap();
    let b = vec![1.0f32; a.rows() as usize];
    let oracle = cpu::pcg(&a, &b, 1e-5, 10_000);
    // 4096 unknowns: 4, 2, 1 tiles of the α/β folds (1024 is the automatic choice).
    for rows in [None, Some(2048u32), Some(8192)] {
        let options = PcgOptions {
            tol: 1e-5,
            max_iterations: oracle.iterations + 20,
            jacobi: true,
            spmv: None,
            rows_per_wg: rows,
        };
        let s = solve_pcg(&ctx, &a, &b, &options).unwrap();
        assert!(
            s.iterations.abs_diff(oracle.iterations) <= 1 && s.converged,
            "rows {rows:?}: GPU {} iterations, CPU {}",
            s.iterations,
            oracle.iterations
        );
        let d = s.report.decision(LOOP_PATH).unwrap();
        assert!(
            d.reason
                .contains("3 indirect dispatches per iteration + 1 gate"),
            "{}",
            d.reason
        );
        let u = s.report.decision("pcg/iterate/step/update").unwrap();
        assert_eq!(u.realization, "α-folded update");
        let dir = s.report.decision("pcg/iterate/step/direction").unwrap();
        assert_eq!(dir.realization, "β-folded direction");
        let tiles = 4096 / rows.unwrap_or(1024).min(4096);
        assert!(
            dir.reason.contains(&format!("from {tiles} partials")),
            "{}",
            dir.reason
        );
    }
    let bad = PcgOptions {
        tol: 1e-5,
        max_iterations: 3,
        jacobi: true,
        spmv: None,
        rows_per_wg: Some(512),
    };
    assert!(matches!(
        solve_pcg(&ctx, &a, &b, &bad),
        Err(PcgError::RowsPerWorkgroup {
            rows: 512,
            minimum: 1024
        })
    ));
}

#[test]
fn the_fold_tiling_keeps_partials_within_the_bound() {
    for (n, rows) in [
        (0u64, 1024u32),
        (1 << 20, 1024),
        ((1 << 20) + 1, 2048),
        (2048 * 2048, 4096),
        (1 << 26, 65536),
    ] {
        let (r, why) = PcgVectors::rows_per_workgroup(n);
        assert_eq!(r, rows, "n = {n}");
        assert!(n.div_ceil(u64::from(r)) <= FOLD_PARTIALS, "n = {n}");
        assert!(why.contains(&format!("{rows} rows per workgroup")), "{why}");
    }
    // Past the largest tile the partials exceed the bound (still correct, just a larger fold).
    assert_eq!(PcgVectors::rows_per_workgroup((1 << 26) + 1).0, 65536);
}

/// A dispatch with a fixed grid of `x` workgroups.
#[derive(Debug)]
struct Wide {
    x: u32,
    word: gpugraph_command::DataView,
}

impl ProgramPrimitive for Wide {
    fn id(&self) -> &str {
        "wide"
    }
    fn operation_type(&self) -> &str {
        "wide"
    }
    fn choices(&self, _: &BackendCapabilities) -> Vec<Choice> {
        Vec::new()
    }
    fn command_nodes(
        &self,
        _: &CommandGraph,
        _: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
        Ok(vec![PrimitiveNode::Dispatch(DispatchNode::new(
            "wide",
            ShaderSource::new(
                "test/wide",
                "@group(0) @binding(0) var<storage, read_write> w: array<u32>;
                 @compute @workgroup_size(1) fn main() { w[0] = 1u; }",
            ),
            "main",
            vec![Binding::read_write(0, self.word)],
            Grid::Workgroups([self.x, 1, 1]),
        ))])
    }
    fn interpret(&self, m: &mut CpuMemory) -> Result<(), ProgramTreeError> {
        m.write("wide", &self.word, &[1])
    }
}

#[test]
fn a_gated_grid_above_the_device_limit_is_refused() {
    let base = ctx();
    let ctx = base
        .with_adjusted_limits(|l| l.max_compute_workgroups_per_dimension = 8)
        .unwrap();
    let caps = BackendCapabilities::of(&ctx);
    for (x, ok) in [(8u32, true), (9, false)] {
        let mut s = Setup::new(&ctx);
        let word = s.u32s("word", &[0]);
        let pred = s.u32s("pred", &[1]);
        let p = Program::repeat("loop", Program::operation(Wide { x, word }), 2, Some(pred));
        match WgpuProgramCompiler::new(caps.clone()).compile(&p, &mut s.graph) {
            Ok(_) => assert!(ok, "{x} workgroups were accepted above the limit 8"),
            Err(ProgramTreeError::Graph(GraphError::InvalidDispatch { reason, .. })) => {
                assert!(!ok && reason.contains("limit 8"), "{reason}")
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    // At the limit it runs and matches the interpreter.
    let mut s = Setup::new(&ctx);
    let word = s.u32s("word", &[0]);
    let pred = s.u32s("pred", &[1]);
    let p = Program::repeat(
        "loop",
        Program::operation(Wide { x: 8, word }),
        2,
        Some(pred),
    );
    let both = run_both_with(&ctx, s, &p, &[word], caps);
    assert_eq!(both.gpu, both.cpu);
    assert_eq!(both.gpu[0], vec![1]);
}
