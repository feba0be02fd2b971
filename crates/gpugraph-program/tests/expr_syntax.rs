//! The grammar: the spec's syntax table, spans, canonical printing, and every unsupported
//! form (parse-time and compile-time) with its diagnostic.

use gpugraph_command::VectorFormat as F;
use gpugraph_program::expr::{
    compile_expression, parse, BinaryOp, Expr, ExprErrorKind, ExprKind, ExpressionOptions,
    ScalarType, Span,
};

fn ast(text: &str) -> Expr {
    parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn syntax_table_rows_parse_to_the_expected_trees() {
    use Expr as E;
    let b = |op, l, r| E::binary(op, l, r);
    let id = E::ident;
    let rows: Vec<(&str, Expr)> = vec![
        ("positions", id("positions")),
        ("scale", id("scale")),
        ("1", E::number(1.0)),
        ("0.25", E::number(0.25)),
        ("1e-3", E::number(1e-3)),
        (".5", E::number(0.5)),
        ("5.", E::number(5.0)),
        ("2E+2", E::number(200.0)),
        (
            "(positions + offset) * scale",
            b(
                BinaryOp::Mul,
                b(BinaryOp::Add, id("positions"), id("offset")),
                id("scale"),
            ),
        ),
        (
            "positions + offset * scale",
            b(
                BinaryOp::Add,
                id("positions"),
                b(BinaryOp::Mul, id("offset"), id("scale")),
            ),
        ),
        (
            "a - b - c",
            b(BinaryOp::Sub, b(BinaryOp::Sub, id("a"), id("b")), id("c")),
        ),
        (
            "a / b / c",
            b(BinaryOp::Div, b(BinaryOp::Div, id("a"), id("b")), id("c")),
        ),
        ("-x", E::negate(id("x"))),
        ("- -x", E::negate(E::negate(id("x")))),
        ("-a * b", b(BinaryOp::Mul, E::negate(id("a")), id("b"))),
        ("-a.x", E::negate(E::member(id("a"), "x"))),
        (
            "positions * scale",
            b(BinaryOp::Mul, id("positions"), id("scale")),
        ),
        (
            "sqrt(abs(values))",
            E::call("sqrt", vec![E::call("abs", vec![id("values")])]),
        ),
        (
            "pow(values, 2)",
            E::call("pow", vec![id("values"), E::number(2.0)]),
        ),
        (
            "sint32(positions)",
            E::call("sint32", vec![id("positions")]),
        ),
        ("positions.zyx", E::member(id("positions"), "zyx")),
        ("positions.xx", E::member(id("positions"), "xx")),
        (
            "positions.zyx.x",
            E::member(E::member(id("positions"), "zyx"), "x"),
        ),
        (
            "(a + b).y",
            E::member(b(BinaryOp::Add, id("a"), id("b")), "y"),
        ),
        (
            "vec4(positions, 1)",
            E::call("vec4", vec![id("positions"), E::number(1.0)]),
        ),
        (
            "dot(positions, directions)",
            E::call("dot", vec![id("positions"), id("directions")]),
        ),
        (
            "length(positions)",
            E::call("length", vec![id("positions")]),
        ),
        (
            "equalAll(ids, targetIds)",
            E::call("equalAll", vec![id("ids"), id("targetIds")]),
        ),
        (
            "select(mask, colors, vec4(0))",
            E::call(
                "select",
                vec![
                    id("mask"),
                    id("colors"),
                    E::call("vec4", vec![E::number(0.0)]),
                ],
            ),
        ),
        ("vec3()", E::call("vec3", vec![])),
        ("  a\n*\tb ", b(BinaryOp::Mul, id("a"), id("b"))),
        ("$a_1", id("$a_1")),
        // Parse-only: the checker rejects these with the spec's messages.
        (
            "Math.sqrt(x)",
            E::new(ExprKind::Call {
                callee: Box::new(E::member(id("Math"), "sqrt")),
                args: vec![id("x")],
            }),
        ),
        ("positions.rgba", E::member(id("positions"), "rgba")),
        ("1e39", E::number(1e39)),
    ];
    for (text, want) in rows {
        let got = ast(text);
        assert!(got.same_shape(&want), "{text}: got {got:?}");
    }
}

#[test]
fn every_node_carries_its_source_span() {
    let text = "sqrt(a.x) + -(b * 2)";
    let e = ast(text);
    let slice = |s: Span| &text[s.start..s.end];
    assert_eq!(slice(e.span), text);
    let ExprKind::Binary { left, right, .. } = &e.kind else {
        panic!()
    };
    assert_eq!(slice(left.span), "sqrt(a.x)");
    assert_eq!(slice(right.span), "-(b * 2)");
    let ExprKind::Call { callee, args } = &left.kind else {
        panic!()
    };
    assert_eq!(slice(callee.span), "sqrt");
    assert_eq!(slice(args[0].span), "a.x");
    let ExprKind::Neg(inner) = &right.kind else {
        panic!()
    };
    assert_eq!(
        slice(inner.span),
        "(b * 2)",
        "parenthesized nodes cover their parentheses"
    );
}

#[test]
fn printing_is_canonical_and_reparses_to_the_same_tree() {
    for (text, canonical) in [
        ("(positions+offset)*scale", "(positions + offset) * scale"),
        ("a-(b-c)", "a - (b - c)"),
        ("(a-b)-c", "a - b - c"),
        ("a/(b*c)", "a / (b * c)"),
        ("-(a+b)", "-(a + b)"),
        ("-a*b", "-a * b"),
        ("-(-a)", "-(-a)"),
        ("-(-(a))", "-(-a)"),
        ("(a+b).zyx", "(a + b).zyx"),
        ("(1).x", "(1).x"),
        ("vec4(p,1e-7)", "vec4(p, 1e-7)"),
        ("select(m,a,b)", "select(m, a, b)"),
        ("1e21", "1e21"),
        ("0.000001", "0.000001"),
    ] {
        let e = ast(text);
        assert_eq!(e.to_string(), canonical, "{text}");
        assert!(ast(canonical).same_shape(&e), "{canonical} reparses");
    }
}

/// Compiles with a generous set of declarations, returning the error text.
fn compile_err(text: &str) -> (ExprErrorKind, String) {
    let inputs = [
        ("positions", F::Float32x3),
        ("x", F::Float32),
        ("y", F::Float32),
        ("a", F::Float32),
        ("b", F::Float32),
        ("condition", F::Float32),
    ];
    let err = compile_expression(
        Some("op"),
        text,
        &inputs,
        &[("scale", ScalarType::Float32)],
        &ExpressionOptions::default(),
    )
    .expect_err(text);
    assert_eq!(err.operation.as_deref(), Some("op"));
    let s = err.to_string();
    assert!(s.starts_with("op: "), "{s}");
    (err.kind, s["op: ".len()..].to_string())
}

#[test]
fn unsupported_forms_of_the_error_table_name_their_replacement() {
    use ExprErrorKind::*;
    let rows: &[(&str, ExprErrorKind, &str)] = &[
        (
            "Math.sqrt(x)",
            Unsupported,
            "Math.sqrt(x) is not supported; use the bare function sqrt(x)",
        ),
        (
            "Math.sin(x)",
            Unsupported,
            "Math.sin(x) is not supported; use the bare function sin(x)",
        ),
        (
            "positions[0]",
            Unsupported,
            "computed indexing positions[0] is not supported; use static .xyzw selectors",
        ),
        (
            "positions.rgba",
            Unsupported,
            "selector .rgba is not supported; use static .xyzw selectors",
        ),
        (
            "x == y",
            Unsupported,
            "comparison x == ... is not supported; use equalAll(x, y)",
        ),
        (
            "x === y",
            Unsupported,
            "comparison x === ... is not supported; use equalAll(x, y)",
        ),
        (
            "x != y",
            Unsupported,
            "comparison x != ... is not supported; use equalAll(x, y)",
        ),
        (
            "condition ? a : b",
            Unsupported,
            "conditional operator ?: is not supported; use select(condition, whenTrue, whenFalse)",
        ),
    ];
    for (text, kind, want) in rows {
        assert_eq!(compile_err(text), (*kind, want.to_string()), "{text}");
    }
}

#[test]
fn other_javascript_forms_are_rejected_with_named_errors() {
    use ExprErrorKind::*;
    // (text, kind, expected substring)
    let rows: &[(&str, ExprErrorKind, &str)] = &[
        // assignments
        ("x = 1", Unsupported, "assignment = is not supported"),
        ("x += 1", Unsupported, "assignment += is not supported"),
        ("x++", Unsupported, "increment operator ++ is not supported"),
        // JavaScript lexes `--x` as a decrement, not a double negation (write `- -x`).
        ("--x", Unsupported, "decrement operator -- is not supported"),
        ("------a", Unsupported, "decrement operator -- is not supported (expressions cannot assign); to negate a negation or subtract one, separate the signs: -(-a), a - -b"),
        ("a--b", Unsupported, "decrement operator -- is not supported"),
        ("x + ++y", Unsupported, "increment operator ++ is not supported"),
        // comparison and logical
        ("x < y", Unsupported, "comparison operator < is not supported"),
        ("x >= y", Unsupported, "comparison operator >= is not supported"),
        ("x && y", Unsupported, "logical operator && is not supported; use select"),
        ("x || y", Unsupported, "logical operator || is not supported"),
        ("x ?? y", Unsupported, "logical operator ?? is not supported"),
        ("!x", Unsupported, "logical operator ! is not supported"),
        // other operators
        ("x % y", Unsupported, "operator % is not supported"),
        ("x ** 2", Unsupported, "operator ** is not supported; supported operators are +, -, * and / (use pow(x, exponent) for powers)"),
        ("x ^ y", Unsupported, "operator ^ is not supported"),
        ("x & y", Unsupported, "operator & is not supported"),
        ("x << 1", Unsupported, "operator << is not supported"),
        ("~x", Unsupported, "operator ~ is not supported"),
        ("+x", Unsupported, "unary + is not supported"),
        ("x in y", Unsupported, "operator in is not supported"),
        // computed indexing, properties, optional chaining
        ("positions[i + 1].x", Unsupported, "computed indexing positions[i + 1] is not supported"),
        ("(positions)[0]", Unsupported, "computed indexing (positions)[0] is not supported"),
        ("positions.length", Unsupported, "property .length is not supported; use static .xyzw selectors"),
        ("positions.xyzwx", Width, ".xyzwx selects 5 components; at most 4"),
        ("positions.xr", Unsupported, "selector .xr is not supported"),
        ("positions?.x", Unsupported, "optional chaining ?. is not supported"),
        ("positions.", Syntax, "expected a selector name after '.', found end of expression"),
        ("positions.0", Syntax, "unexpected number 0"),
        // calls
        ("floor(x)", Unsupported, "unsupported function floor; supported functions are abs, sqrt, sin, cos, tan, exp, log, pow, float32, sint32, uint32, vec2, vec3, vec4, dot, length, equalAll, select"),
        ("Math.floor(x)", Unsupported, "Math.floor(x) is not supported; supported functions are abs"),
        ("x(1)", Unsupported, "x is a declared value, not a function"),
        ("positions.x(1)", Unsupported, "positions.x(1) is not supported; only the bare functions"),
        ("sqrt(x)(y)", Unsupported, "sqrt(x)(y) is not supported; only the bare functions"),
        ("sqrt", Unsupported, "sqrt is a function; call it as sqrt(...)"),
        ("sqrt(x, y)", Unsupported, "sqrt expects 1 argument; got 2"),
        ("sqrt()", Unsupported, "sqrt expects 1 argument; got 0"),
        ("pow(x)", Unsupported, "pow expects 2 arguments; got 1"),
        ("dot(x)", Unsupported, "dot expects 2 arguments; got 1"),
        ("length(x, y)", Unsupported, "length expects 1 argument; got 2"),
        ("equalAll(x)", Unsupported, "equalAll expects 2 arguments; got 1"),
        ("select(x, y)", Unsupported, "select expects 3 arguments; got 2"),
        ("uint32(x, y)", Unsupported, "uint32 expects 1 argument; got 2"),
        // literals and objects
        ("'a'", Unsupported, "string literals are not supported"),
        ("\"a\" + x", Unsupported, "string literals are not supported"),
        ("[1, 2]", Unsupported, "array literals are not supported; use vec2, vec3 or vec4"),
        ("{a: 1}", Unsupported, "object literals are not supported"),
        ("true", Unsupported, "boolean literal true is not supported"),
        ("null", Unsupported, "null is not supported"),
        ("undefined", Unsupported, "undefined is not supported"),
        ("Infinity", Unsupported, "non-finite literal Infinity is not supported"),
        ("-Infinity", Unsupported, "non-finite literal Infinity is not supported"),
        ("NaN", Unsupported, "non-finite literal NaN is not supported"),
        ("1e39", Unsupported, "numeric literal 1e39 is out of range for float32 (largest finite magnitude 3.4028235e38)"),
        ("3.5e38", Unsupported, "numeric literal 3.5e38 is out of range for float32"),
        ("1e400", Unsupported, "numeric literal 1e400 is out of range for float32"),
        ("0x10", Unsupported, "unsupported numeric literal 0x10"),
        ("1n", Unsupported, "unsupported numeric literal 1n"),
        ("1_000", Unsupported, "unsupported numeric literal 1_000"),
        ("010", Unsupported, "unsupported numeric literal 010"),
        // keywords, statements, functions
        ("new x()", Unsupported, "keyword new is not supported"),
        ("typeof x", Unsupported, "keyword typeof is not supported"),
        ("this.x", Unsupported, "keyword this is not supported"),
        ("x => x", Unsupported, "arrow functions are not supported"),
        ("x; y", Unsupported, "statements are not supported"),
        ("x, y", Unsupported, "comma expressions are not supported"),
        ("...x", Unsupported, "spread syntax is not supported"),
        // plain syntax errors
        ("", Syntax, "empty expression"),
        ("   ", Syntax, "empty expression"),
        ("(x", Syntax, "expected ')' to close '(' at offset 0"),
        ("sqrt(x", Syntax, "expected ')' to close '(' at offset 4"),
        ("x)", Syntax, "unmatched ')' at offset 1"),
        ("x +", Syntax, "unexpected end of expression"),
        ("x y", Syntax, "unexpected identifier y at offset 2"),
        ("x 1", Syntax, "unexpected number 1 at offset 2"),
        ("* x", Syntax, "unexpected '*' at offset 0"),
        ("x # y", Syntax, "unexpected character '#' at offset 2"),
        ("sqrt(x,)", Syntax, "unexpected ')' at offset 7"),
        ("é", Syntax, "unexpected character 'é' at offset 0"),
        // names
        ("missing + 1", Undeclared, "undeclared identifier missing"),
        ("Math", Undeclared, "undeclared identifier Math"),
    ];
    for (text, kind, want) in rows {
        let (k, msg) = compile_err(text);
        assert!(
            msg.starts_with(want),
            "{text}: got {msg:?}, want prefix {want:?}"
        );
        assert_eq!(k, *kind, "{text}: {msg}");
    }
}

#[test]
fn parse_errors_have_spans_and_no_operation_prefix() {
    let err = parse("positions[0] + 1").unwrap_err();
    assert_eq!(err.operation, None);
    assert_eq!(err.span, Some(Span::new(0, 12)));
    assert!(err.to_string().starts_with("computed indexing"));
    let err = parse("a + (b == c)").unwrap_err();
    assert_eq!(err.span, Some(Span::new(7, 9)));
}

#[test]
fn default_operation_id_is_output_dash_expression() {
    let err = compile_expression(
        None,
        "x == y",
        &[],
        &[],
        &ExpressionOptions::output("transformed"),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("transformed-expression: comparison"),
        "{err}"
    );
}

#[test]
fn nesting_deeper_than_the_policy_is_an_error_not_a_stack_overflow() {
    use gpugraph_program::expr::policy::MAX_DEPTH;
    let deep =
        |open: &str, close: &str, n: usize| format!("{}w{}", open.repeat(n), close.repeat(n));
    let compile = |text: &str| {
        compile_expression(
            None,
            text,
            &[("w", F::Float32)],
            &[],
            &ExpressionOptions::default(),
        )
    };
    // At the limit everything compiles (the innermost operand is the last level).
    for text in [
        deep("(", ")", MAX_DEPTH - 1),
        deep("-(", ")", MAX_DEPTH / 2 - 1),
        deep("abs(", ")", MAX_DEPTH - 1),
        format!("w{}", "+w".repeat(MAX_DEPTH - 1)),
        format!("w{}", ".x".repeat(MAX_DEPTH - 1)),
    ] {
        compile(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    // Far past it (a small thread stack overflows long before 100,000 levels).
    for text in [
        deep("(", ")", 100_000),
        deep("- ", "", 100_000),
        deep("abs(", ")", 100_000),
        format!("w{}", "+w".repeat(100_000)),
        format!("w{}", "*w".repeat(100_000)),
        format!("w{}", ".x".repeat(100_000)),
        format!("abs{}", "(w)".repeat(100_000)),
        deep("(", ")", MAX_DEPTH),
        format!("w{}", "+w".repeat(MAX_DEPTH)),
    ] {
        let err = parse(&text).unwrap_err();
        assert_eq!(err.kind, ExprErrorKind::Unsupported, "{err}");
        assert!(
            err.message
                .starts_with(&format!("expression nests more than {MAX_DEPTH} levels")),
            "{err}"
        );
        assert_eq!(compile(&text).unwrap_err().message, err.message);
    }
    // The 66-term sum of issue 12 says what the limit is, why, and what to do.
    let err = parse(&format!("a{}", "+a".repeat(65))).unwrap_err();
    for part in [
        "more than 64 levels deep",
        "thread's stack",
        "a chain a + b + c + ... of 65 terms",
        "split it into several expression operations",
        "(a + b + c) + (d + e + f)",
    ] {
        assert!(err.message.contains(part), "{part}: {err}");
    }
    // A 5,000-digit literal is out of float32's range, shown shortened.
    let err = parse(&format!("1{}", "0".repeat(4999))).unwrap_err();
    assert_eq!(
        err.message,
        "numeric literal 100000000000... (5000 characters) is out of range for float32 (largest finite magnitude 3.4028235e38)"
    );
    assert_eq!(err.span, Some(gpugraph_program::expr::Span::new(0, 5000)));
    // Hand-built trees get the same bound from the checker.
    let mut e = Expr::ident("w");
    for _ in 0..MAX_DEPTH {
        e = Expr::negate(e);
    }
    let err = compile_expression(
        None,
        &e,
        &[("w", F::Float32)],
        &[],
        &ExpressionOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, ExprErrorKind::Unsupported, "{err}");
}
