//! The CopyRows custom-lowering example of the operation-contracts spec on lavapipe, and the
//! lowering-set rules: snapshotting, duplicate types (built-ins included), SimpleGraph's
//! refusal of custom lowerings, decision records, and lowerings that resolve undeclared values.

mod graph_common;

use gpugraph_command::VectorFormat as F;
use gpugraph_program::graph::{
    Bindings, CompileOptions, Graph, GraphCompiler, ProgramError, RunOptions, SimpleGraph,
    ValueSpec,
};
use gpugraph_program::lowering::{Lowering, LoweringSource};
use gpugraph_testing::ctx;
use graph_common::{copy_rows_lowering, read_u32, upload, CopyRows};

#[test]
fn copy_rows_example_runs_with_its_custom_lowering() {
    let ctx = ctx();
    let mut graph = Graph::new("copy-rows-example");
    graph
        .add_input("input", ValueSpec::vector(F::Uint32x2))
        .unwrap();
    graph.add(CopyRows::new("copy", "input", "output")).unwrap();
    let lowerings = [copy_rows_lowering()];
    let mut compiled = graph
        .compile(
            &ctx,
            CompileOptions::outputs(&["output"]).with_lowerings(&lowerings),
        )
        .unwrap();

    // Uneven chunks, an empty one in the middle: boundaries are inherited exactly.
    let data: Vec<[u32; 2]> = (0..23u32).map(|i| [i, 1000 + i]).collect();
    let input = upload(&ctx, F::Uint32x2, &data, &[10, 0, 13]);
    let mut results = compiled
        .run(Bindings::new().vector("input", &input), RunOptions::new())
        .unwrap();
    assert_eq!(results.submissions(), 1);
    let output = results.take("output").unwrap();
    assert_eq!(output.format(), F::Uint32x2);
    assert_eq!(output.chunk_lengths(), vec![10, 0, 13]);
    let words: Vec<u32> = data.iter().flatten().copied().collect();
    assert_eq!(read_u32(&ctx, &output), words);

    // The decision record says what was emitted and why.
    let d = results.lowering().decision("copy").unwrap();
    assert_eq!(d.source, LoweringSource::Custom);
    assert_eq!(d.operation_type, "copy-rows");
    assert_eq!(d.nodes, vec!["copy-0".to_string(), "copy-2".to_string()]);
    assert_eq!(d.node_count, 2);
    let compile_time = compiled.compilation().lowering.decision("copy").unwrap();
    assert_eq!(compile_time.realization, "custom lowering");
    assert!(
        compile_time.reason.contains("copy-rows"),
        "{}",
        compile_time.reason
    );

    // Results are caller-owned: they survive the compiled graph.
    compiled.destroy();
    compiled.destroy();
    assert!(matches!(
        compiled.run(Bindings::new().vector("input", &input), RunOptions::new()),
        Err(ProgramError::Destroyed { .. })
    ));
    drop(compiled);
    assert_eq!(read_u32(&ctx, &output), words);
}

#[test]
fn the_compiler_snapshots_its_lowering_set() {
    let ctx = ctx();
    let mut graph = Graph::new("snapshot");
    graph
        .add_input("input", ValueSpec::vector(F::Uint32x2))
        .unwrap();
    graph.add(CopyRows::new("copy", "input", "output")).unwrap();

    let mut set = vec![copy_rows_lowering()];
    let compiler = GraphCompiler::new(&ctx, &set).unwrap();
    // Later changes to the caller's list do not affect the compiler.
    set.clear();
    set.push(Lowering::new("copy-rows", |_, _| Err("replaced".into())));
    assert!(compiler.lowerings().get("copy-rows").is_some());
    assert_eq!(
        compiler.lowerings().custom_types(),
        vec!["copy-rows".to_string()]
    );
    let compiled = compiler.compile(&graph, Some(&["output"])).unwrap();
    let input = upload(&ctx, F::Uint32x2, &[[1u32, 2], [3, 4]], &[2]);
    let out = compiled
        .run(Bindings::new().vector("input", &input), RunOptions::new())
        .unwrap();
    assert_eq!(read_u32(&ctx, out.get("output").unwrap()), vec![1, 2, 3, 4]);

    // A compiler built from the replaced list uses the replacement, whose error is named.
    let other = GraphCompiler::new(&ctx, &set).unwrap();
    let err = other
        .compile(&graph, None)
        .unwrap()
        .run(Bindings::new().vector("input", &input), RunOptions::new())
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::Lowering { operation, operation_type, .. } if operation == "copy" && operation_type == "copy-rows"),
        "{err}"
    );
    assert!(err.to_string().contains("replaced"), "{err}");
}

#[test]
fn duplicate_lowering_types_are_rejected_including_built_ins() {
    let ctx = ctx();
    let err = GraphCompiler::new(&ctx, &[copy_rows_lowering(), copy_rows_lowering()]).unwrap_err();
    assert!(
        matches!(&err, ProgramError::DuplicateLowering { operation_type, builtin: false } if operation_type == "copy-rows"),
        "{err}"
    );
    for builtin in [
        "dot-product",
        "vector-madd",
        "expression",
        "upload",
        "copy",
        "spmv",
    ] {
        let err = GraphCompiler::new(&ctx, &[Lowering::new(builtin, |_, _| Ok(()))]).unwrap_err();
        assert!(
            matches!(&err, ProgramError::DuplicateLowering { operation_type, builtin: true } if operation_type == builtin),
            "{err}"
        );
        assert!(err.to_string().contains("built-in"), "{err}");
    }
}

#[test]
fn simple_graph_rejects_custom_lowerings_by_name() {
    let ctx = ctx();
    let mut graph = SimpleGraph::new("simple");
    graph
        .add_input("input", ValueSpec::vector(F::Uint32x2))
        .unwrap();
    graph.add(CopyRows::new("copy", "input", "output")).unwrap();
    let err = graph
        .compile(
            &ctx,
            CompileOptions::default().with_lowerings(&[copy_rows_lowering()]),
        )
        .err()
        .unwrap();
    assert!(
        matches!(&err, ProgramError::CustomLoweringsUnsupported { graph, types } if graph == "simple" && types == &["copy-rows"]),
        "{err}"
    );
    // Without the lowering, the custom type is unknown to SimpleGraph.
    let err = graph
        .compile(&ctx, CompileOptions::default())
        .err()
        .unwrap();
    assert!(
        matches!(&err, ProgramError::UnknownLowering { operation, operation_type, .. } if operation == "copy" && operation_type == "copy-rows"),
        "{err}"
    );
}

#[test]
fn a_lowering_may_only_resolve_what_its_contract_lists_and_with_the_declared_type() {
    let ctx = ctx();
    let mut graph = Graph::new("undeclared");
    graph
        .add_input("input", ValueSpec::vector(F::Uint32x2))
        .unwrap();
    graph
        .add_input("other", ValueSpec::vector(F::Uint32x2))
        .unwrap();
    graph.add(CopyRows::new("copy", "input", "output")).unwrap();
    let input = upload(&ctx, F::Uint32x2, &[[1u32, 2]], &[1]);
    let bindings = || {
        Bindings::new()
            .vector("input", &input)
            .vector("other", &input)
    };

    let sneaky = Lowering::typed::<CopyRows>("copy-rows", |_, cx| {
        cx.resolve_vector("other")?;
        Ok(())
    });
    let err = graph
        .compile(&ctx, CompileOptions::default().with_lowerings(&[sneaky]))
        .unwrap()
        .run(bindings(), RunOptions::new())
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::UndeclaredUse { operation, value } if operation == "copy" && value == "other"),
        "{err}"
    );

    // Typed references resolve through the same namespace and must match kind and format.
    let typed = Lowering::typed::<CopyRows>("copy-rows", |_, cx| {
        cx.resolve_vector(gpugraph_program::graph::ValueRef::typed(
            "input",
            ValueSpec::vector(F::Float32),
        ))?;
        Ok(())
    });
    let err = graph
        .compile(&ctx, CompileOptions::default().with_lowerings(&[typed]))
        .unwrap()
        .run(bindings(), RunOptions::new())
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::ReferenceMismatch { operation, value, .. } if operation == "copy" && value == "input"),
        "{err}"
    );
    // A scalar view of a vector is refused by name.
    let scalar = Lowering::typed::<CopyRows>("copy-rows", |_, cx| {
        cx.resolve_scalar("input")?;
        Ok(())
    });
    let err = graph
        .compile(&ctx, CompileOptions::default().with_lowerings(&[scalar]))
        .unwrap()
        .run(bindings(), RunOptions::new())
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::ResolveMismatch { operation, value, .. } if operation == "copy" && value == "input"),
        "{err}"
    );
}
