//! Vector output shapes (like / length / chunked / omitted) on lavapipe, output targets
//! (valid ones are written in place and returned; invalid ones are named errors), and the
//! run-time binding rules (kinds, formats, declared lengths and partitions).

mod graph_common;

use gpugraph_command::{GpuContext, VectorFormat as F};
use gpugraph_program::expr::{ScalarType, ScalarValue};
use gpugraph_program::graph::{
    Bindings, CompileOptions, CompiledGraph, Graph, ProgramError, Role, RunOptions, ValueSpec,
};
use gpugraph_program::operation::{ScalarLiteral, Shape, VectorMadd};
use gpugraph_tables::{GpuData, GpuVector};
use gpugraph_testing::{ctx, POISON};
use graph_common::{
    borrowed, fill_lowering, fill_pattern, poisoned, read_f32, read_u32, upload, upload1, Fill,
};

fn u32v() -> ValueSpec {
    ValueSpec::vector(F::Uint32)
}

fn compile(ctx: &GpuContext, g: &Graph) -> CompiledGraph {
    g.compile(
        ctx,
        CompileOptions::default().with_lowerings(&[fill_lowering()]),
    )
    .unwrap()
}

fn run_ok(
    c: &CompiledGraph,
    b: Bindings<'_>,
    o: RunOptions<'_>,
) -> gpugraph_program::graph::RunResults {
    c.run(b, o).unwrap()
}

#[test]
fn like_inherits_rows_and_exact_chunk_boundaries() {
    let ctx = ctx();
    let mut g = Graph::new("like");
    g.add_input("x", ValueSpec::vector(F::Float32x3)).unwrap();
    g.add(Fill::like("fill", "out", "x")).unwrap();
    let c = compile(&ctx, &g);
    for chunks in [vec![3usize, 0, 5], vec![0], vec![], vec![700, 1, 0, 0, 2]] {
        let n: usize = chunks.iter().sum();
        let x = upload(&ctx, F::Float32x3, &vec![0.5f32; n * 3], &chunks);
        let r = run_ok(&c, Bindings::new().vector("x", &x), RunOptions::new());
        let out = r.get("out").unwrap();
        let want: Vec<u64> = chunks.iter().map(|&c| c as u64).collect();
        assert_eq!(out.chunk_lengths(), want);
        assert_eq!(
            out.format(),
            F::Uint32,
            "the output declaration supplies the format"
        );
        assert_eq!(read_u32(&ctx, out), fill_pattern(&want));
    }
}

#[test]
fn fixed_lengths_and_partitions() {
    let ctx = ctx();
    let mut g = Graph::new("fixed");
    g.add(Fill::new("plain", "plain", Some(Shape::Length(9)), &[]))
        .unwrap();
    // A declared partition is retained by a length shape.
    g.declare("kept", u32v().with_chunk_lengths(vec![2, 0, 3]))
        .unwrap();
    g.add(Fill::new("kept", "kept", Some(Shape::Length(5)), &[]))
        .unwrap();
    g.add(Fill::new(
        "chunked",
        "chunked",
        Some(Shape::Chunked {
            length: 5,
            chunk_lengths: vec![4, 0, 1],
        }),
        &[],
    ))
    .unwrap();
    let c = compile(&ctx, &g);
    let r = run_ok(&c, Bindings::new(), RunOptions::new());
    for (name, chunks) in [
        ("plain", vec![9u64]),
        ("kept", vec![2, 0, 3]),
        ("chunked", vec![4, 0, 1]),
    ] {
        let v = r.get(name).unwrap();
        assert_eq!(v.chunk_lengths(), chunks, "{name}");
        assert_eq!(read_u32(&ctx, v), fill_pattern(&chunks), "{name}");
    }
}

#[test]
fn omitted_shapes_use_the_declaration_or_the_target() {
    let ctx = ctx();
    let mut g = Graph::new("omitted");
    g.declare("by_length", u32v().with_length(6)).unwrap();
    g.declare("by_chunks", u32v().with_chunk_lengths(vec![1, 4]))
        .unwrap();
    g.add(Fill::new("a", "by_length", None, &[])).unwrap();
    g.add(Fill::new("b", "by_chunks", None, &[])).unwrap();
    g.add(Fill::new("c", "by_target", None, &[])).unwrap();
    let c = compile(&ctx, &g);
    let target = poisoned(&ctx, F::Uint32, &[3, 0, 2]);
    let r = run_ok(
        &c,
        Bindings::new(),
        RunOptions::new().target("by_target", &target),
    );
    assert_eq!(r.get("by_length").unwrap().chunk_lengths(), vec![6]);
    assert_eq!(r.get("by_chunks").unwrap().chunk_lengths(), vec![1, 4]);
    let t = r.get("by_target").unwrap();
    assert!(
        t.chunks()[0].shares_buffer(&target.chunks()[0]),
        "results reference the target"
    );
    assert_eq!(read_u32(&ctx, &target), fill_pattern(&[3, 0, 2]));
    // Without a target nothing determines its rows.
    let err = c.run(Bindings::new(), RunOptions::new()).unwrap_err();
    assert!(
        matches!(&err, ProgramError::ShapeUndetermined { operation, value } if operation == "c" && value == "by_target"),
        "{err}"
    );
}

#[test]
fn valid_output_targets_are_written_in_place_and_survive() {
    let ctx = ctx();
    let mut g = Graph::new("targets");
    g.add_input("x", u32v()).unwrap();
    g.add(Fill::like("fill", "out", "x")).unwrap();
    g.add(Fill::new("other", "other", Some(Shape::Length(4)), &[]))
        .unwrap();
    let c = compile(&ctx, &g);
    let x = upload(&ctx, F::Uint32, &[7u32; 6], &[2, 0, 4]);
    // Two targets in one buffer, disjoint ranges (chunks need not be packed together).
    let owner = upload(&ctx, F::Uint32, &[POISON; 16], &[16]);
    let base = &owner.chunks()[0];
    let out_target = GpuVector::from_chunks(
        F::Uint32,
        vec![
            base.sibling(0, 2, F::Uint32, 4).unwrap(),
            base.sibling(8, 0, F::Uint32, 4).unwrap(),
            base.sibling(16, 4, F::Uint32, 4).unwrap(),
        ],
    )
    .unwrap();
    let other_target =
        GpuVector::from_chunks(F::Uint32, vec![base.sibling(40, 4, F::Uint32, 4).unwrap()])
            .unwrap();
    let r = run_ok(
        &c,
        Bindings::new().vector("x", &x),
        RunOptions::new()
            .target("out", &out_target)
            .target("other", &other_target),
    );
    let raw = read_u32(&ctx, &owner);
    let p = POISON;
    assert_eq!(
        raw,
        vec![
            0,
            1,
            p,
            p,
            2 << 20,
            (2 << 20) + 1,
            (2 << 20) + 2,
            (2 << 20) + 3,
            p,
            p,
            0,
            1,
            2,
            3,
            p,
            p
        ]
    );
    drop(c);
    assert_eq!(read_u32(&ctx, r.get("other").unwrap()), vec![0, 1, 2, 3]);
}

#[test]
fn invalid_output_targets_are_named() {
    let ctx = ctx();
    let mut g = Graph::new("bad-targets");
    g.add_input("x", u32v()).unwrap();
    g.add_state("st", u32v()).unwrap();
    g.add(Fill::like("fill", "out", "x")).unwrap();
    g.add(Fill::new("fill2", "out2", Some(Shape::Length(2)), &[]))
        .unwrap();
    g.add(ScalarLiteral::new("lit", "k", ScalarValue::Uint32(5)))
        .unwrap();
    let c = compile(&ctx, &g);
    let x = upload(&ctx, F::Uint32, &[1u32; 5], &[2, 3]);
    let st = upload1(&ctx, F::Uint32, &[0u32; 4]);
    let bind = || Bindings::new().vector("x", &x).vector("st", &st);
    let check = |target: &str, vector: &GpuVector, op: &str, needle: &str| {
        let err = c
            .run(bind(), RunOptions::new().target(target, vector))
            .unwrap_err();
        assert!(
            matches!(&err, ProgramError::InvalidTarget { operation, value, .. } if operation == op && value == target),
            "{target}: {err}"
        );
        assert!(err.to_string().contains(needle), "{target}: {err}");
    };
    let good = poisoned(&ctx, F::Uint32, &[2, 3]);
    check("nothing", &good, "bindings", "names no declared value");
    check("x", &good, "bindings", "cannot replace input");
    check("st", &good, "bindings", "cannot replace state");
    check(
        "out",
        &poisoned(&ctx, F::Float32, &[2, 3]),
        "fill",
        "fixed-width uint32",
    );
    check(
        "out",
        &poisoned(&ctx, F::Uint32, &[5]),
        "fill",
        "never repacked",
    );
    check(
        "out",
        &poisoned(&ctx, F::Uint32, &[2, 3, 0]),
        "fill",
        "never repacked",
    );
    check(
        "k",
        &poisoned(&ctx, F::Uint32, &[2]),
        "lit",
        "one chunk of one row",
    );
    // Overlapping writable chunks within one target.
    let base = &good.chunks()[0];
    let overlapping = GpuVector::from_chunks(
        F::Uint32,
        vec![base.clone(), base.sibling(4, 3, F::Uint32, 4).unwrap()],
    )
    .unwrap();
    check(
        "out",
        &overlapping,
        "fill",
        "overlapping writable chunks 0 and 1",
    );
    // Aliasing an input or state.
    check("out", &borrowed(&x), "fill", "aliases input 'x'");
    let on_state = GpuVector::from_chunks(
        F::Uint32,
        vec![
            st.chunks()[0].slice(0..2).unwrap(),
            GpuData::borrowed_packed(
                good.chunks()[1].buffer(),
                good.chunks()[1].byte_offset(),
                3,
                F::Uint32,
            )
            .unwrap(),
        ],
    )
    .unwrap();
    check("out", &on_state, "fill", "aliases state 'st'");
    // Aliasing another target.
    let err = c
        .run(
            bind(),
            RunOptions::new().target("out", &good).target(
                "out2",
                &GpuVector::from_chunks(F::Uint32, vec![good.chunks()[1].slice(1..3).unwrap()])
                    .unwrap(),
            ),
        )
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::InvalidTarget { operation, value, .. } if operation == "fill2" && value == "out2"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("aliases the output target of 'out'"),
        "{err}"
    );
    let err = c
        .run(
            bind(),
            RunOptions::new().target("out", &good).target("out", &good),
        )
        .unwrap_err();
    assert!(err.to_string().contains("supplied twice"), "{err}");
    // A valid scalar target: one row of the scalar's format.
    let k = poisoned(&ctx, F::Uint32, &[1]);
    let r = c.run(bind(), RunOptions::new().target("k", &k)).unwrap();
    assert_eq!(read_u32(&ctx, r.get("k").unwrap()), vec![5]);
    assert_eq!(read_u32(&ctx, &k), vec![5]);
}

#[test]
fn bindings_must_match_their_declarations() {
    let ctx = ctx();
    let mut g = Graph::new("bindings");
    g.add_input(
        "x",
        ValueSpec::vector(F::Float32).with_chunk_lengths(vec![2, 2]),
    )
    .unwrap();
    g.add_input("n", ValueSpec::vector(F::Float32).with_length(4))
        .unwrap();
    g.add_input("s", ValueSpec::scalar(ScalarType::Float32))
        .unwrap();
    g.add_state("st", ValueSpec::vector(F::Float32)).unwrap();
    g.add(VectorMadd::new("madd", "x", "s", "n", "y")).unwrap();
    g.add(VectorMadd::in_place("acc", "y", "s", "st")).unwrap();
    let c = compile(&ctx, &g);
    let x = upload(&ctx, F::Float32, &[1.0f32, 2.0, 3.0, 4.0], &[2, 2]);
    let n = upload(&ctx, F::Float32, &[10.0f32, 20.0, 30.0, 40.0], &[2, 2]);
    let st = upload(&ctx, F::Float32, &[0.0f32; 4], &[2, 2]);
    let s_gpu = upload1(&ctx, F::Float32, &[3.0f32]);
    // A scalar input can be a one-row GPU vector.
    let r = c
        .run(
            Bindings::new()
                .vector("x", &x)
                .vector("n", &n)
                .vector("s", &s_gpu)
                .vector("st", &st),
            RunOptions::new(),
        )
        .unwrap();
    assert_eq!(
        read_f32(&ctx, r.get("y").unwrap()),
        vec![13.0, 26.0, 39.0, 52.0]
    );
    assert_eq!(read_f32(&ctx, &st), vec![39.0, 78.0, 117.0, 156.0]);

    let wrong_format = upload1(&ctx, F::Uint32, &[1u32; 4]);
    let unsplit = upload1(&ctx, F::Float32, &[1.0f32; 4]);
    let short = upload(&ctx, F::Float32, &[1.0f32; 3], &[2, 1]);
    let two_rows = upload1(&ctx, F::Float32, &[1.0f32, 2.0]);
    type Case<'a> = (&'a str, Bindings<'a>);
    let cases: Vec<Case<'_>> = vec![
        (
            "missing",
            Bindings::new()
                .vector("x", &x)
                .vector("n", &n)
                .float32("s", 1.0),
        ),
        (
            "undeclared",
            Bindings::new()
                .vector("x", &x)
                .vector("n", &n)
                .float32("s", 1.0)
                .vector("st", &st)
                .float32("zz", 1.0),
        ),
        (
            "result",
            Bindings::new()
                .vector("x", &x)
                .vector("n", &n)
                .float32("s", 1.0)
                .vector("st", &st)
                .vector("y", &x),
        ),
        (
            "twice",
            Bindings::new()
                .vector("x", &x)
                .vector("x", &x)
                .vector("n", &n)
                .float32("s", 1.0)
                .vector("st", &st),
        ),
        (
            "format",
            Bindings::new()
                .vector("x", &wrong_format)
                .vector("n", &n)
                .float32("s", 1.0)
                .vector("st", &st),
        ),
        (
            "chunks",
            Bindings::new()
                .vector("x", &unsplit)
                .vector("n", &n)
                .float32("s", 1.0)
                .vector("st", &st),
        ),
        (
            "length",
            Bindings::new()
                .vector("x", &x)
                .vector("n", &short)
                .float32("s", 1.0)
                .vector("st", &st),
        ),
        (
            "scalar-type",
            Bindings::new()
                .vector("x", &x)
                .vector("n", &n)
                .uint32("s", 1)
                .vector("st", &st),
        ),
        (
            "scalar-rows",
            Bindings::new()
                .vector("x", &x)
                .vector("n", &n)
                .vector("s", &two_rows)
                .vector("st", &st),
        ),
        (
            "vector-as-scalar",
            Bindings::new()
                .float32("x", 1.0)
                .vector("n", &n)
                .float32("s", 1.0)
                .vector("st", &st),
        ),
        (
            "state-scalar",
            Bindings::new()
                .vector("x", &x)
                .vector("n", &n)
                .float32("s", 1.0)
                .float32("st", 1.0),
        ),
    ];
    for (case, b) in cases {
        let err = c.run(b, RunOptions::new()).unwrap_err();
        let ok = match case {
            "missing" => {
                matches!(&err, ProgramError::MissingBinding { value, role: Role::State, .. } if value == "st")
            }
            "undeclared" => {
                matches!(&err, ProgramError::UnexpectedBinding { value, .. } if value == "zz")
            }
            "result" => {
                matches!(&err, ProgramError::UnexpectedBinding { value, reason, .. } if value == "y" && reason.contains("madd"))
            }
            "twice" => {
                matches!(&err, ProgramError::UnexpectedBinding { value, reason, .. } if value == "x" && reason.contains("twice"))
            }
            "format" | "vector-as-scalar" => {
                matches!(&err, ProgramError::BindingMismatch { value, .. } if value == "x")
            }
            "chunks" => {
                matches!(&err, ProgramError::LengthMismatch { operation, value, .. } if operation == "bindings" && value == "x")
            }
            "length" => matches!(&err, ProgramError::LengthMismatch { value, .. } if value == "n"),
            "scalar-type" | "scalar-rows" => {
                matches!(&err, ProgramError::BindingMismatch { value, .. } if value == "s")
            }
            "state-scalar" => {
                matches!(&err, ProgramError::BindingMismatch { value, .. } if value == "st")
            }
            _ => unreachable!(),
        };
        assert!(ok, "{case}: {err}");
    }
    // The state's bound topology must match what the in-place update writes.
    let st3 = upload1(&ctx, F::Float32, &[0.0f32; 4]);
    let err = c
        .run(
            Bindings::new()
                .vector("x", &x)
                .vector("n", &n)
                .float32("s", 1.0)
                .vector("st", &st3),
            RunOptions::new(),
        )
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::Lowering { operation, .. } if operation == "acc"),
        "{err}"
    );
}

#[test]
fn declared_result_lengths_are_enforced_at_run_time() {
    let ctx = ctx();
    let mut g = Graph::new("declared");
    g.add_input("x", u32v()).unwrap();
    g.declare("out", u32v().with_length(4)).unwrap();
    g.add(Fill::like("fill", "out", "x")).unwrap();
    let c = compile(&ctx, &g);
    let ok = upload1(&ctx, F::Uint32, &[0u32; 4]);
    assert_eq!(
        c.run(Bindings::new().vector("x", &ok), RunOptions::new())
            .unwrap()
            .get("out")
            .unwrap()
            .len(),
        4
    );
    let long = upload1(&ctx, F::Uint32, &[0u32; 5]);
    let err = c
        .run(Bindings::new().vector("x", &long), RunOptions::new())
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::LengthMismatch { operation, value, .. } if operation == "fill" && value == "out"),
        "{err}"
    );
}

#[test]
fn oversized_results_and_intermediates_are_named_errors() {
    let ctx = ctx();
    let huge = ctx.device.limits().max_buffer_size / 4 + 1;
    let mut g = Graph::new("huge");
    g.add(Fill::new("big", "big", Some(Shape::Length(huge)), &[]))
        .unwrap();
    g.add(Fill::new("small", "small", Some(Shape::Length(1)), &[]))
        .unwrap();
    // Selected: a caller-owned result that cannot be allocated.
    let c = g
        .compile(
            &ctx,
            CompileOptions::outputs(&["big"]).with_lowerings(&[fill_lowering()]),
        )
        .unwrap();
    let err = c.run(Bindings::new(), RunOptions::new()).unwrap_err();
    assert!(
        matches!(&err, ProgramError::Allocation { operation, value, format: F::Uint32, .. } if operation == "big" && value == "big"),
        "{err}"
    );
    // Unselected: a command-graph transient the graph rejects before any encoding.
    let c = g
        .compile(
            &ctx,
            CompileOptions::outputs(&["small"]).with_lowerings(&[fill_lowering()]),
        )
        .unwrap();
    let err = c.run(Bindings::new(), RunOptions::new()).unwrap_err();
    assert!(
        matches!(&err, ProgramError::CommandGraph { context, .. } if context.contains("'big'")),
        "{err}"
    );
}
