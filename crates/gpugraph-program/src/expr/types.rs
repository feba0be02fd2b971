//! Type checking: resolves names against the declarations and gives every node a component
//! type (float32, sint32, uint32) and a row width (1 to 4).
//!
//! Rules (expression-operation spec):
//! - Numeric literals are float32 (rounded from the JavaScript double, finite after rounding).
//! - `+ - * /`, unary `-`, `abs sqrt sin cos tan exp log pow` need float32 operands; widths
//!   must match or one side has one component, which broadcasts. Integers never reach
//!   arithmetic, so there is no integer division or overflow in the language.
//! - `float32(x) sint32(x) uint32(x)` keep the width; float→integer casts truncate or round to
//!   nearest (ties away from zero) per the operation's [`IntegerRounding`], then saturate;
//!   integer→integer casts saturate; NaN becomes 0 (see `eval.rs` for the exact semantics).
//! - `.xyzw` selectors of 1 to 4 letters must fit the width. `vecN(x)` with one one-component
//!   argument replicates; otherwise argument widths must add up to N, with equal types.
//! - `dot(x, y)` float32, equal widths, one float32 per row; `length(x)` float32, one float32.
//! - `equalAll(x, y)` equal types and widths, one uint32 0/1 per row.
//! - `select(c, t, f)`: branch types equal; a one-component branch broadcasts to the other's
//!   width; the condition (any type) has one component or the branch width.
//! - Extensions (`functions.rs`): `lessThan` ... `notEqual` (equal types, broadcast widths,
//!   uint32 0/1 per component) and `and`/`or`/`not` on uint32 masks.
//!
//! Calls are typed through the table in `signatures.rs` (arity and rule per function).

use gpugraph_command::VectorFormat;

use crate::expr::ast::{Expr, ExprKind, Span};
use crate::expr::error::{ExprError, ExprErrorKind};
use crate::expr::signatures::{self, Arity, Call};

pub use crate::expr::functions::{MathFn, FUNCTIONS};
pub use crate::expr::scalar::{IntegerRounding, ScalarType, ValueType};
pub use crate::expr::typed::{Node, TypedExpr};

/// The names an expression may use: vector inputs and scalars with their types.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Declarations {
    /// Vector inputs (row-varying) in binding order.
    pub inputs: Vec<(String, ValueType)>,
    /// Scalars (one value broadcast to every row) in binding order.
    pub scalars: Vec<(String, ScalarType)>,
}

impl Declarations {
    /// Declarations from storage formats; rejects formats outside the subset, duplicate
    /// names and names reserved for intrinsic functions.
    pub fn new(
        inputs: &[(&str, VectorFormat)],
        scalars: &[(&str, ScalarType)],
    ) -> Result<Self, ExprError> {
        let mut d = Declarations::default();
        let decl = |msg: String| ExprError::new(ExprErrorKind::Declaration, msg, None);
        let mut seen: Vec<&str> = Vec::new();
        let names = inputs
            .iter()
            .map(|(n, _)| *n)
            .chain(scalars.iter().map(|(n, _)| *n));
        for name in names {
            if seen.contains(&name) {
                return Err(decl(format!("duplicate declaration {name}")));
            }
            if FUNCTIONS.contains(&name) {
                return Err(decl(format!(
                    "declaration {name} collides with the intrinsic function {name}; rename it"
                )));
            }
            seen.push(name);
        }
        for (name, format) in inputs {
            let ty = ValueType::from_format(*format).ok_or_else(|| {
                decl(format!(
                    "input {name} has format {format}, outside the expression subset (float32, sint32 and uint32 with 1 to 4 components)"
                ))
            })?;
            d.inputs.push((name.to_string(), ty));
        }
        d.scalars = scalars.iter().map(|(n, t)| (n.to_string(), *t)).collect();
        Ok(d)
    }
}

fn err(kind: ExprErrorKind, span: Span, msg: impl Into<String>) -> ExprError {
    ExprError::at(kind, span, msg)
}

fn width_err(span: Span, msg: impl Into<String>) -> ExprError {
    err(ExprErrorKind::Width, span, msg)
}

fn type_err(span: Span, msg: impl Into<String>) -> ExprError {
    err(ExprErrorKind::Type, span, msg)
}

/// Type-checks `expr` against `decls`; float→integer casts use `rounding`.
pub fn check(
    expr: &Expr,
    decls: &Declarations,
    rounding: IntegerRounding,
) -> Result<TypedExpr, ExprError> {
    // Hand-built trees bypass the parser's bound; checking recurses per level.
    if expr.depth() > crate::expr::policy::MAX_DEPTH {
        return Err(ExprError::too_deep(expr.span));
    }
    Checker { decls, rounding }.check(expr)
}

struct Checker<'a> {
    decls: &'a Declarations,
    rounding: IntegerRounding,
}

fn typed(node: Node, ty: ValueType, row_varying: bool, span: Span) -> TypedExpr {
    TypedExpr {
        node,
        ty,
        row_varying,
        span,
    }
}

/// The broadcast width of two widths, if compatible.
fn broadcast(a: u8, b: u8) -> Option<u8> {
    if a == b || b == 1 {
        Some(a)
    } else if a == 1 {
        Some(b)
    } else {
        None
    }
}

impl Checker<'_> {
    fn check(&self, e: &Expr) -> Result<TypedExpr, ExprError> {
        let span = e.span;
        match &e.kind {
            ExprKind::Identifier(name) => self.identifier(name, span),
            ExprKind::Number(v) => {
                let f = *v as f32;
                if v.is_nan() {
                    return Err(err(
                        ExprErrorKind::Unsupported,
                        span,
                        "numeric literal NaN is not a finite float32 number",
                    ));
                }
                if !f.is_finite() {
                    let text = crate::expr::ast::number_text(*v);
                    return Err(err(
                        ExprErrorKind::Unsupported,
                        span,
                        crate::expr::lexer::out_of_range(&text),
                    ));
                }
                Ok(typed(
                    Node::Literal(f),
                    ValueType::new(ScalarType::Float32, 1),
                    false,
                    span,
                ))
            }
            ExprKind::Neg(a) => {
                let a = self.check(a)?;
                if a.ty.scalar != ScalarType::Float32 {
                    return Err(type_err(span, "Arithmetic requires float32 operands"));
                }
                let (ty, rv) = (a.ty, a.row_varying);
                Ok(typed(Node::Neg(Box::new(a)), ty, rv, span))
            }
            ExprKind::Binary { op, left, right } => {
                let (l, r) = (self.check(left)?, self.check(right)?);
                if l.ty.scalar != ScalarType::Float32 || r.ty.scalar != ScalarType::Float32 {
                    return Err(type_err(span, "Arithmetic requires float32 operands"));
                }
                let width = broadcast(l.ty.width, r.ty.width).ok_or_else(|| {
                    width_err(
                        span,
                        format!(
                            "arithmetic requires matching row widths or one component; {left} has {}, {right} has {}",
                            l.ty.width, r.ty.width
                        ),
                    )
                })?;
                let rv = l.row_varying || r.row_varying;
                Ok(typed(
                    Node::Arith(*op, Box::new(l), Box::new(r)),
                    ValueType::new(ScalarType::Float32, width),
                    rv,
                    span,
                ))
            }
            ExprKind::Member { object, property } => self.member(object, property, span),
            ExprKind::Call { callee, args } => self.call(e, callee, args, span),
        }
    }

    fn identifier(&self, name: &str, span: Span) -> Result<TypedExpr, ExprError> {
        if let Some(i) = self.decls.inputs.iter().position(|(n, _)| n == name) {
            return Ok(typed(Node::Input(i), self.decls.inputs[i].1, true, span));
        }
        if let Some(i) = self.decls.scalars.iter().position(|(n, _)| n == name) {
            let ty = ValueType::new(self.decls.scalars[i].1, 1);
            return Ok(typed(Node::Scalar(i), ty, false, span));
        }
        Err(match name {
            "NaN" | "Infinity" => err(
                ExprErrorKind::Unsupported,
                span,
                format!("non-finite literal {name} is not supported; literals must be finite float32 numbers"),
            ),
            "undefined" => err(
                ExprErrorKind::Unsupported,
                span,
                "undefined is not supported; literals must be finite float32 numbers",
            ),
            f if FUNCTIONS.contains(&f) => err(
                ExprErrorKind::Unsupported,
                span,
                format!("{f} is a function; call it as {f}(...)"),
            ),
            _ => err(
                ExprErrorKind::Undeclared,
                span,
                format!("undeclared identifier {name}"),
            ),
        })
    }

    fn member(&self, object: &Expr, property: &str, span: Span) -> Result<TypedExpr, ExprError> {
        let lanes: Vec<u8> = property
            .chars()
            .map_while(|c| "xyzw".find(c).map(|i| i as u8))
            .collect();
        if lanes.len() != property.chars().count() || lanes.is_empty() {
            let what =
                if property.chars().all(|c| "xyzwrgbastpq".contains(c)) && property.len() <= 4 {
                    "selector"
                } else {
                    "property"
                };
            return Err(err(
                ExprErrorKind::Unsupported,
                span,
                format!("{what} .{property} is not supported; use static .xyzw selectors"),
            ));
        }
        if lanes.len() > 4 {
            return Err(width_err(
                span,
                format!(".{property} selects {} components; at most 4", lanes.len()),
            ));
        }
        let arg = self.check(object)?;
        let need = lanes.iter().max().map_or(1, |m| m + 1);
        if need > arg.ty.width {
            return Err(width_err(
                span,
                format!(
                    ".{property} needs {need} components; {object} has {}",
                    arg.ty.width
                ),
            ));
        }
        let ty = ValueType::new(arg.ty.scalar, lanes.len() as u8);
        let rv = arg.row_varying;
        Ok(typed(Node::Swizzle(Box::new(arg), lanes), ty, rv, span))
    }

    fn call(
        &self,
        whole: &Expr,
        callee: &Expr,
        args: &[Expr],
        span: Span,
    ) -> Result<TypedExpr, ExprError> {
        let name = match &callee.kind {
            ExprKind::Identifier(n) => n.as_str(),
            ExprKind::Member { object, property } if matches!(&object.kind, ExprKind::Identifier(o) if o == "Math") =>
            {
                let msg = if FUNCTIONS.contains(&property.as_str()) {
                    let bare = Expr::new(ExprKind::Call {
                        callee: Box::new(Expr::ident(property)),
                        args: args.to_vec(),
                    });
                    format!("{whole} is not supported; use the bare function {bare}")
                } else {
                    format!(
                        "{whole} is not supported; supported functions are {}",
                        FUNCTIONS.join(", ")
                    )
                };
                return Err(err(ExprErrorKind::Unsupported, span, msg));
            }
            _ => {
                return Err(err(
                    ExprErrorKind::Unsupported,
                    span,
                    format!(
                        "{whole} is not supported; only the bare functions {} can be called",
                        FUNCTIONS.join(", ")
                    ),
                ))
            }
        };
        if !FUNCTIONS.contains(&name) {
            let declared = self.decls.inputs.iter().any(|(n, _)| n == name)
                || self.decls.scalars.iter().any(|(n, _)| n == name);
            let msg = if declared {
                format!(
                    "{name} is a declared value, not a function; supported functions are {}",
                    FUNCTIONS.join(", ")
                )
            } else {
                format!(
                    "unsupported function {name}; supported functions are {}",
                    FUNCTIONS.join(", ")
                )
            };
            return Err(err(ExprErrorKind::Unsupported, span, msg));
        }
        let sig = signatures::signature(name)
            .unwrap_or_else(|| unreachable!("every name in FUNCTIONS has a signature"));
        if let Arity::Exactly(n) = sig.arity {
            if args.len() != n {
                return Err(signatures::arity_error(name, n, args.len(), span));
            }
        }
        let typed = args
            .iter()
            .map(|a| self.check(a))
            .collect::<Result<Vec<_>, _>>()?;
        (sig.rule)(Call {
            name,
            args,
            typed,
            span,
            rounding: self.rounding,
        })
    }
}

impl TypedExpr {
    /// Visits every node, children first.
    pub fn visit(&self, f: &mut impl FnMut(&TypedExpr)) {
        for c in self.children() {
            c.visit(f);
        }
        f(self);
    }

    /// The direct operands in evaluation order.
    pub fn children(&self) -> Vec<&TypedExpr> {
        match &self.node {
            Node::Input(_) | Node::Scalar(_) | Node::Literal(_) => vec![],
            Node::Neg(a)
            | Node::Math(_, a)
            | Node::Cast { arg: a, .. }
            | Node::Swizzle(a, _)
            | Node::Splat(a)
            | Node::Length(a) => vec![a],
            Node::Arith(_, a, b)
            | Node::Pow(a, b)
            | Node::Dot(a, b)
            | Node::EqualAll(a, b)
            | Node::Compare(_, a, b) => {
                vec![a, b]
            }
            Node::Concat(parts) | Node::Logic(_, parts) => parts.iter().collect(),
            Node::Select {
                cond,
                when_true,
                when_false,
            } => vec![cond, when_true, when_false],
        }
    }

    /// Indices of the vector inputs the expression reads, ascending.
    pub fn referenced_inputs(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.visit(&mut |n| {
            if let Node::Input(i) = n.node {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
        });
        out.sort_unstable();
        out
    }

    /// Indices of the scalars the expression reads, ascending.
    pub fn referenced_scalars(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.visit(&mut |n| {
            if let Node::Scalar(i) = n.node {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
        });
        out.sort_unstable();
        out
    }
}
