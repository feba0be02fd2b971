//! Every compile-time rule of declarations and operation contracts returns a typed error
//! naming the operation id and the value: producer order, one writer per result, results that
//! are not inputs or state, read/write/read-write accesses, typed references, shapes,
//! textures, features, lowerings and output selection.

mod graph_common;

use gpugraph_command::{wgpu, GpuContext, VectorFormat as F};
use gpugraph_program::expr::{ExprError, ScalarType, ScalarValue};
use gpugraph_program::graph::{
    CompileOptions, Graph, ProgramError, Role, SimpleGraph, ValueKind, ValueRef, ValueSpec,
};
use gpugraph_program::operation::{
    DotProduct, ExpressionOperation, OperationContract, ScalarLiteral, Shape, VectorMadd,
};
use gpugraph_testing::ctx;
use graph_common::{fill_lowering, Fill};

fn u32v() -> ValueSpec {
    ValueSpec::vector(F::Uint32)
}

fn compile(ctx: &GpuContext, g: &Graph, outputs: Option<&[&str]>) -> ProgramError {
    let mut options = CompileOptions::default().with_lowerings(&[fill_lowering()]);
    options.outputs = outputs.map(|o| o.iter().map(|s| s.to_string()).collect());
    match g.compile(ctx, options) {
        Ok(_) => panic!("compilation should fail"),
        Err(e) => e,
    }
}

/// A Fill with `contract` (its output is `out` unless the contract says otherwise).
fn op(id: &str, contract: OperationContract) -> Fill {
    Fill::with_contract(id, "out", contract)
}

fn produce(id: &str, name: &str) -> Fill {
    Fill::new(id, name, Some(Shape::Length(4)), &[])
}

#[test]
fn declarations_are_checked_when_added() {
    let mut g = Graph::new("g");
    g.add_input("x", u32v()).unwrap();
    let err = g.add_state("x", u32v()).unwrap_err();
    assert!(
        matches!(&err, ProgramError::DuplicateDeclaration { name, existing: Role::Input, .. } if name == "x"),
        "{err}"
    );
    let err = g
        .add_input("c", u32v().with_length(5).with_chunk_lengths(vec![2, 2]))
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::InvalidDeclaration { name, .. } if name == "c"),
        "{err}"
    );
    let err = g.add_input("", u32v()).unwrap_err();
    assert!(matches!(err, ProgramError::InvalidDeclaration { .. }));
    let err = g
        .add_state("s", ValueSpec::scalar(ScalarType::Float32))
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::StateNotVector { name, kind: ValueKind::Scalar, .. } if name == "s"),
        "{err}"
    );
    g.add(produce("p", "a")).unwrap();
    let err = g.add(produce("p", "b")).unwrap_err();
    assert!(
        matches!(&err, ProgramError::DuplicateOperation { operation, .. } if operation == "p"),
        "{err}"
    );
    // The returned reference is typed.
    let r = g
        .add_input("typed", ValueSpec::vector(F::Float32x3))
        .unwrap();
    assert_eq!(r.name(), "typed");
    assert_eq!(r.spec(), Some(&ValueSpec::vector(F::Float32x3)));
}

#[test]
fn producers_come_before_consumers() {
    let ctx = ctx();
    // A static contract that reads a result produced by a later operation.
    let mut g = Graph::new("g");
    g.add(Fill::new(
        "consumer",
        "out",
        Some(Shape::Length(1)),
        &["later"],
    ))
    .unwrap();
    g.add(produce("producer", "later")).unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::ProducerOrder { operation, value, producer } if operation == "consumer" && value == "later" && producer == "producer"),
        "{err}"
    );
    // An expression reading a later result: its contract cannot see it, same error.
    let mut g = Graph::new("g");
    g.add_input("x", ValueSpec::vector(F::Float32)).unwrap();
    g.add(ExpressionOperation::new("y", "x + z")).unwrap();
    g.add(ExpressionOperation::new("z", "x * 2")).unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::ProducerOrder { operation, value, producer } if operation == "y-expression" && value == "z" && producer == "z-expression"),
        "{err}"
    );
    // A built-in whose contract needs a later value's format.
    let mut g = Graph::new("g");
    g.add_input("x", ValueSpec::vector(F::Float32)).unwrap();
    g.add(DotProduct::new("dot", "x", "later", "d")).unwrap();
    g.add(ExpressionOperation::new("later", "x * 2")).unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::ProducerOrder { operation, value, .. } if operation == "dot" && value == "later"),
        "{err}"
    );
    // An explicit declaration read before its writer.
    let mut g = Graph::new("g");
    g.declare("v", u32v()).unwrap();
    g.add(Fill::new("reader", "out", Some(Shape::Length(1)), &["v"]))
        .unwrap();
    g.add(op(
        "writer",
        OperationContract::new().write("v", Some(Shape::Length(1))),
    ))
    .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::ProducerOrder { operation, value, producer } if operation == "reader" && value == "v" && producer == "writer"),
        "{err}"
    );
    // Nothing produces it at all.
    let mut g = Graph::new("g");
    g.add(Fill::new(
        "reader",
        "out",
        Some(Shape::Length(1)),
        &["nowhere"],
    ))
    .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::UnknownValue { operation, value } if operation == "reader" && value == "nowhere"),
        "{err}"
    );
}

#[test]
fn results_have_one_writer_and_are_not_inputs_or_state() {
    let ctx = ctx();
    let mut g = Graph::new("g");
    g.add(produce("first", "r")).unwrap();
    g.add(produce("second", "r")).unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::MultipleWriters { operation, value, writer } if operation == "second" && value == "r" && writer == "first"),
        "{err}"
    );

    // A plain write of another operation's result.
    let mut g = Graph::new("g");
    g.add(produce("first", "r")).unwrap();
    g.add(op("second", OperationContract::new().write("r", None)))
        .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::MultipleWriters { operation, value, .. } if operation == "second" && value == "r"),
        "{err}"
    );

    for role in [Role::Input, Role::State] {
        let mut g = Graph::new("g");
        match role {
            Role::Input => g.add_input("x", u32v()).unwrap(),
            _ => g.add_state("x", u32v()).unwrap(),
        };
        g.add(produce("p", "x")).unwrap();
        let err = compile(&ctx, &g, None);
        assert!(
            matches!(&err, ProgramError::ResultIsDeclared { operation, value, role: r } if operation == "p" && value == "x" && *r == role),
            "{err}"
        );
    }
}

#[test]
fn accesses_follow_the_roles() {
    let ctx = ctx();
    let mut g = Graph::new("g");
    g.add_input("x", u32v()).unwrap();
    g.add(op("w", OperationContract::new().write("x", None)))
        .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::WriteToInput { operation, value } if operation == "w" && value == "x"),
        "{err}"
    );

    let mut g = Graph::new("g");
    g.add_input("x", u32v()).unwrap();
    g.add(op("rw", OperationContract::new().read_write("x")))
        .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::WriteToInput { operation, value } if operation == "rw" && value == "x"),
        "{err}"
    );

    // Read-write needs state: not a result, not an explicit declaration.
    let mut g = Graph::new("g");
    g.add(produce("p", "r")).unwrap();
    g.add(op("rw", OperationContract::new().read_write("r")))
        .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::ReadWriteNeedsState { operation, value, .. } if operation == "rw" && value == "r"),
        "{err}"
    );
    let mut g = Graph::new("g");
    g.declare("d", u32v()).unwrap();
    g.add(op("rw", OperationContract::new().read_write("d")))
        .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::ReadWriteNeedsState { operation, value, .. } if operation == "rw" && value == "d"),
        "{err}"
    );
    // MADD in place on an input is a write to an input.
    let mut g = Graph::new("g");
    g.add_input("x", ValueSpec::vector(F::Float32)).unwrap();
    g.add_input("y", ValueSpec::vector(F::Float32)).unwrap();
    g.add_input("s", ValueSpec::scalar(ScalarType::Float32))
        .unwrap();
    g.add(VectorMadd::in_place("axpy", "x", "s", "y")).unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::WriteToInput { operation, value } if operation == "axpy" && value == "y"),
        "{err}"
    );

    let mut g = Graph::new("g");
    g.add_input("x", u32v()).unwrap();
    g.add(op("dup", OperationContract::new().read("x").read("x")))
        .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::DuplicateUse { operation, value } if operation == "dup" && value == "x"),
        "{err}"
    );
}

#[test]
fn outputs_must_be_written_once_and_not_read_by_their_producer() {
    let ctx = ctx();
    let mut g = Graph::new("g");
    g.add(op(
        "unwritten",
        OperationContract::new().output("o", u32v()),
    ))
    .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::InvalidOutput { operation, value, .. } if operation == "unwritten" && value == "o"),
        "{err}"
    );
    let mut g = Graph::new("g");
    g.add(op(
        "twice",
        OperationContract::new()
            .output("o", u32v())
            .output("o", u32v())
            .write("o", Some(Shape::Length(1))),
    ))
    .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::InvalidOutput { operation, value, .. } if operation == "twice" && value == "o"),
        "{err}"
    );
    let mut g = Graph::new("g");
    g.add(op(
        "self",
        OperationContract::new().output("o", u32v()).read("o"),
    ))
    .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::InvalidOutput { operation, value, .. } if operation == "self" && value == "o"),
        "{err}"
    );
    let mut g = Graph::new("g");
    g.add(op(
        "bad-decl",
        OperationContract::new()
            .output("o", u32v().with_length(3).with_chunk_lengths(vec![1]))
            .write("o", None),
    ))
    .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::InvalidOutput { operation, value, .. } if operation == "bad-decl" && value == "o"),
        "{err}"
    );
}

#[test]
fn typed_references_must_match_kind_and_format() {
    let ctx = ctx();
    let mut g = Graph::new("g");
    g.add_input("x", u32v()).unwrap();
    g.add(Fill::with_contract(
        "typed",
        "out",
        OperationContract::new()
            .read(ValueRef::typed("x", ValueSpec::vector(F::Float32)))
            .output("out", u32v())
            .write("out", Some(Shape::Length(1))),
    ))
    .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::ReferenceMismatch { operation, value, .. } if operation == "typed" && value == "x"),
        "{err}"
    );
    // Built-ins look references up in their scope: a scalar where a vector is needed.
    let mut g = Graph::new("g");
    g.add_input("v", ValueSpec::vector(F::Float32)).unwrap();
    g.add_input("s", ValueSpec::scalar(ScalarType::Float32))
        .unwrap();
    g.add(DotProduct::new("dot", "v", "s", "d")).unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::ReferenceMismatch { operation, value, .. } if operation == "dot" && value == "s"),
        "{err}"
    );
    // An explicit output declaration must agree with the contract's output format.
    let mut g = Graph::new("g");
    g.declare("out", ValueSpec::vector(F::Float32)).unwrap();
    g.add(produce("p", "out")).unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::ReferenceMismatch { operation, value, .. } if operation == "p" && value == "out"),
        "{err}"
    );
    // Operation-specific validation stays with the operation: MADD over uint32.
    let mut g = Graph::new("g");
    g.add_input("u", u32v()).unwrap();
    g.add_input("s", ValueSpec::scalar(ScalarType::Float32))
        .unwrap();
    g.add(VectorMadd::new("madd", "u", "s", "u", "y")).unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::Contract { operation, .. } if operation == "madd"),
        "{err}"
    );
    assert!(err.to_string().contains("float32"), "{err}");
    // Expression diagnostics keep their own type and the operation id prefix (once).
    let mut g = Graph::new("g");
    g.add_input("positions", ValueSpec::vector(F::Float32x3))
        .unwrap();
    g.add(ExpressionOperation::new("reordered", "positions.w").with_id("swizzle"))
        .unwrap();
    let err = compile(&ctx, &g, None);
    let text = err.to_string();
    assert!(
        text.starts_with("swizzle: ") && !text.starts_with("swizzle: swizzle"),
        "{text}"
    );
    assert!(
        text.ends_with(".w needs 4 components; positions has 3"),
        "{text}"
    );
    let ProgramError::Contract { source, .. } = &err else {
        panic!("{err}")
    };
    assert!(source.downcast_ref::<ExprError>().is_some());
    // The spec's example text exactly, with its id and with the default id.
    for (id, want) in [
        (
            Some("reorder"),
            "reorder: .w needs 4 components; positions has 3",
        ),
        (
            None,
            "reordered-expression: .w needs 4 components; positions has 3",
        ),
    ] {
        let mut g = Graph::new("g");
        g.add_input("positions", ValueSpec::vector(F::Float32x3))
            .unwrap();
        let mut op = ExpressionOperation::new("reordered", "positions.w");
        if let Some(id) = id {
            op = op.with_id(id);
        }
        g.add(op).unwrap();
        assert_eq!(compile(&ctx, &g, None).to_string(), want);
    }
}

#[test]
fn shapes_apply_to_written_vectors_and_must_be_consistent() {
    let ctx = ctx();
    let cases: Vec<(&str, OperationContract)> = vec![
        (
            "on-read",
            OperationContract::new()
                .output("out", u32v())
                .write("out", None)
                .read("x"),
        ),
        (
            "like-unread",
            OperationContract::new()
                .output("out", u32v())
                .write("out", Some(Shape::Like("y".into()))),
        ),
        (
            "like-scalar",
            OperationContract::new()
                .read("s")
                .output("out", u32v())
                .write("out", Some(Shape::Like("s".into()))),
        ),
        (
            "chunk-sum",
            OperationContract::new().output("out", u32v()).write(
                "out",
                Some(Shape::Chunked {
                    length: 5,
                    chunk_lengths: vec![1, 2],
                }),
            ),
        ),
        (
            "declared-length",
            OperationContract::new()
                .output("out", u32v().with_length(7))
                .write("out", Some(Shape::Length(8))),
        ),
        (
            "declared-chunks",
            OperationContract::new()
                .output("out", u32v().with_chunk_lengths(vec![3, 4]))
                .write(
                    "out",
                    Some(Shape::Chunked {
                        length: 7,
                        chunk_lengths: vec![4, 3],
                    }),
                ),
        ),
        (
            "scalar-shape",
            OperationContract::new()
                .output("out", ValueSpec::scalar(ScalarType::Uint32))
                .write("out", Some(Shape::Length(1))),
        ),
    ];
    for (id, mut contract) in cases {
        if id == "on-read" {
            contract.values[1].shape = Some(Shape::Length(3));
        }
        let mut g = Graph::new("g");
        g.add_input("x", u32v()).unwrap();
        g.add_input("y", u32v()).unwrap();
        g.add_input("s", ValueSpec::scalar(ScalarType::Uint32))
            .unwrap();
        g.add(op(id, contract)).unwrap();
        let err = compile(&ctx, &g, None);
        let expected_value = if id == "on-read" { "x" } else { "out" };
        assert!(
            matches!(&err, ProgramError::InvalidShape { operation, value, .. } if operation == id && value == expected_value),
            "{id}: {err}"
        );
    }
}

#[test]
fn textures_features_lowerings_and_outputs_are_named() {
    let ctx = ctx();
    let mut g = Graph::new("g");
    g.add_input("t", ValueSpec::texture(wgpu::TextureFormat::Rgba8Unorm))
        .unwrap();
    g.add(Fill::new("sampler", "out", Some(Shape::Length(1)), &["t"]))
        .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::TexturesUnsupported { operation, value } if operation == "sampler" && value == "t"),
        "{err}"
    );

    let mut g = Graph::new("g");
    g.add(op(
        "f64",
        OperationContract::new()
            .output("out", u32v())
            .write("out", Some(Shape::Length(1)))
            .requires(wgpu::Features::SHADER_F64),
    ))
    .unwrap();
    let err = compile(&ctx, &g, None);
    assert!(
        matches!(&err, ProgramError::MissingFeature { operation, feature } if operation == "f64" && feature.contains("SHADER_F64")),
        "{err}"
    );

    let mut g = Graph::new("g");
    g.add(produce("p", "r")).unwrap();
    let err = g.compile(&ctx, CompileOptions::default()).err().unwrap();
    assert!(
        matches!(&err, ProgramError::UnknownLowering { operation, operation_type, known } if operation == "p" && operation_type == "test-fill" && known.contains(&"dot-product".to_string())),
        "{err}"
    );

    let mut g = Graph::new("g");
    g.add_input("x", u32v()).unwrap();
    g.add(produce("p", "r")).unwrap();
    let err = compile(&ctx, &g, Some(&["missing"]));
    assert!(
        matches!(&err, ProgramError::UnknownOutput { value, .. } if value == "missing"),
        "{err}"
    );
    let err = compile(&ctx, &g, Some(&["x"]));
    assert!(
        matches!(&err, ProgramError::NotAResult { value, role: Role::Input, .. } if value == "x"),
        "{err}"
    );
    // Outputs default to every operation-defined result.
    let compiled = g
        .compile(
            &ctx,
            CompileOptions::default().with_lowerings(&[fill_lowering()]),
        )
        .unwrap();
    assert_eq!(compiled.compilation().outputs, vec!["r".to_string()]);
    assert!(!compiled.compilation().capabilities.native_loops);
    assert!(
        compiled
            .compilation()
            .capabilities
            .gpu_resident_conditionals
    );
}

#[test]
fn simple_graph_applies_the_same_rules() {
    let ctx = ctx();
    let mut g = SimpleGraph::new("s");
    g.add_input("x", ValueSpec::vector(F::Float32)).unwrap();
    g.add(ScalarLiteral::new("one", "x", ScalarValue::Float32(1.0)))
        .unwrap();
    let err = g.compile(&ctx, CompileOptions::default()).err().unwrap();
    assert!(
        matches!(&err, ProgramError::ResultIsDeclared { operation, value, .. } if operation == "one" && value == "x"),
        "{err}"
    );
}
