//! The typing rule of every callable name, as a table ([`SIGNATURES`], one row per name of
//! [`FUNCTIONS`], in the same order): how many arguments it takes and the rule that types a
//! call whose arguments are already checked. The checker ([`super::types`]) resolves the
//! callee, checks the count, checks the arguments in order, then applies the row's rule, so a
//! new function is one row here and one in [`crate::expr::functions::FUNCTION_TABLE`].

use crate::expr::ast::{Expr, Span};
use crate::expr::error::{ExprError, ExprErrorKind};
use crate::expr::functions::{CompareFn, LogicFn};
use crate::expr::functions::{MathFn, FUNCTIONS};
use crate::expr::scalar::{IntegerRounding, ScalarType, ValueType};
use crate::expr::typed::{Node, TypedExpr};

/// How many arguments a function takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arity {
    /// Exactly this many.
    Exactly(usize),
    /// Any number (the `vecN` constructors check their component total instead).
    Any,
}

/// A call being typed: the callee's name, the arguments as written (for diagnostics) and
/// checked, the call's span and the operation's float→integer rounding.
pub(crate) struct Call<'a> {
    pub name: &'a str,
    pub args: &'a [Expr],
    pub typed: Vec<TypedExpr>,
    pub span: Span,
    pub rounding: IntegerRounding,
}

/// Types a call whose arguments are checked and counted.
pub(crate) type Rule = fn(Call<'_>) -> Result<TypedExpr, ExprError>;

/// One row of the table.
pub(crate) struct Signature {
    pub name: &'static str,
    pub arity: Arity,
    pub rule: Rule,
}

const fn sig(name: &'static str, arity: Arity, rule: Rule) -> Signature {
    Signature { name, arity, rule }
}

use Arity::{Any, Exactly};

/// Every callable name with its arity and rule, in [`FUNCTIONS`] order.
pub(crate) const SIGNATURES: [Signature; FUNCTIONS.len()] = [
    sig("abs", Exactly(1), math),
    sig("sqrt", Exactly(1), math),
    sig("sin", Exactly(1), math),
    sig("cos", Exactly(1), math),
    sig("tan", Exactly(1), math),
    sig("exp", Exactly(1), math),
    sig("log", Exactly(1), math),
    sig("pow", Exactly(2), pow),
    sig("float32", Exactly(1), cast),
    sig("sint32", Exactly(1), cast),
    sig("uint32", Exactly(1), cast),
    sig("vec2", Any, vector),
    sig("vec3", Any, vector),
    sig("vec4", Any, vector),
    sig("dot", Exactly(2), dot),
    sig("length", Exactly(1), length),
    sig("equalAll", Exactly(2), equal_all),
    sig("select", Exactly(3), select),
    sig("lessThan", Exactly(2), compare),
    sig("lessThanEqual", Exactly(2), compare),
    sig("greaterThan", Exactly(2), compare),
    sig("greaterThanEqual", Exactly(2), compare),
    sig("equal", Exactly(2), compare),
    sig("notEqual", Exactly(2), compare),
    sig("and", Exactly(2), logic),
    sig("or", Exactly(2), logic),
    sig("not", Exactly(1), logic),
];

/// The row of `name`, if it is a function.
pub(crate) fn signature(name: &str) -> Option<&'static Signature> {
    SIGNATURES.iter().find(|s| s.name == name)
}

/// The count error of `name` called with `got` arguments when it takes `n`.
pub(crate) fn arity_error(name: &str, n: usize, got: usize, span: Span) -> ExprError {
    ExprError::at(
        ExprErrorKind::Unsupported,
        span,
        format!(
            "{name} expects {n} argument{}; got {got}",
            if n == 1 { "" } else { "s" }
        ),
    )
}

fn typed(node: Node, ty: ValueType, row_varying: bool, span: Span) -> TypedExpr {
    TypedExpr {
        node,
        ty,
        row_varying,
        span,
    }
}

fn type_err(span: Span, msg: impl Into<String>) -> ExprError {
    ExprError::at(ExprErrorKind::Type, span, msg)
}

fn width_err(span: Span, msg: impl Into<String>) -> ExprError {
    ExprError::at(ExprErrorKind::Width, span, msg)
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

fn f32w(w: u8) -> ValueType {
    ValueType::new(ScalarType::Float32, w)
}

impl Call<'_> {
    /// Argument `i` must be float32.
    fn float_only(&self, i: usize) -> Result<(), ExprError> {
        let a = &self.typed[i];
        if a.ty.scalar == ScalarType::Float32 {
            Ok(())
        } else {
            Err(type_err(
                self.span,
                format!(
                    "{} requires float32 operands; {} is {}",
                    self.name, self.args[i], a.ty.scalar
                ),
            ))
        }
    }

    fn shown(&self) -> Vec<String> {
        self.args.iter().map(|a| a.to_string()).collect()
    }

    fn two(self) -> (TypedExpr, TypedExpr) {
        let mut it = self.typed.into_iter();
        match (it.next(), it.next()) {
            (Some(a), Some(b)) => (a, b),
            _ => unreachable!("the arity was checked"),
        }
    }

    fn one(self) -> TypedExpr {
        match self.typed.into_iter().next() {
            Some(a) => a,
            None => unreachable!("the arity was checked"),
        }
    }
}

fn math(c: Call<'_>) -> Result<TypedExpr, ExprError> {
    c.float_only(0)?;
    let f = MathFn::from_name(c.name).unwrap_or_else(|| unreachable!("a math row"));
    let span = c.span;
    let a = c.one();
    let (ty, rv) = (a.ty, a.row_varying);
    Ok(typed(Node::Math(f, Box::new(a)), ty, rv, span))
}

fn cast(c: Call<'_>) -> Result<TypedExpr, ExprError> {
    let to = match c.name {
        "float32" => ScalarType::Float32,
        "sint32" => ScalarType::Sint32,
        _ => ScalarType::Uint32,
    };
    let (span, rounding) = (c.span, c.rounding);
    let a = c.one();
    let ty = ValueType::new(to, a.ty.width);
    let rv = a.row_varying;
    let node = Node::Cast {
        to,
        rounding,
        arg: Box::new(a),
    };
    Ok(typed(node, ty, rv, span))
}

fn compare(c: Call<'_>) -> Result<TypedExpr, ExprError> {
    let f = CompareFn::from_name(c.name).unwrap_or_else(|| unreachable!("a comparison row"));
    let span = c.span;
    let shown = [c.args[0].to_string(), c.args[1].to_string()];
    let (x, y) = c.two();
    check_compare(f, x, y, shown, span)
}

fn logic(c: Call<'_>) -> Result<TypedExpr, ExprError> {
    let f = LogicFn::from_name(c.name).unwrap_or_else(|| unreachable!("a logic row"));
    let shown = c.shown();
    check_logic(f, c.typed, &shown, c.span)
}

fn pow(c: Call<'_>) -> Result<TypedExpr, ExprError> {
    c.float_only(0)?;
    c.float_only(1)?;
    let (span, shown) = (c.span, c.shown());
    let (x, y) = c.two();
    let w = broadcast(x.ty.width, y.ty.width).ok_or_else(|| {
        width_err(
            span,
            format!(
                "pow requires matching row widths or one component; {} has {}, {} has {}",
                shown[0], x.ty.width, shown[1], y.ty.width
            ),
        )
    })?;
    let rv = x.row_varying || y.row_varying;
    Ok(typed(
        Node::Pow(Box::new(x), Box::new(y)),
        f32w(w),
        rv,
        span,
    ))
}

fn vector(c: Call<'_>) -> Result<TypedExpr, ExprError> {
    let (name, span) = (c.name, c.span);
    let n = name.as_bytes()[3] - b'0';
    let parts = c.typed;
    let rv = parts.iter().any(|p| p.row_varying);
    if let Some(first) = parts.first() {
        if let Some(other) = parts.iter().find(|p| p.ty.scalar != first.ty.scalar) {
            return Err(type_err(
                span,
                format!(
                    "{name} requires matching component types; got {} and {}",
                    first.ty.scalar, other.ty.scalar
                ),
            ));
        }
    }
    if parts.len() == 1 && parts[0].ty.width == 1 && n > 1 {
        let ty = ValueType::new(parts[0].ty.scalar, n);
        let arg = parts.into_iter().next().map(Box::new);
        return Ok(typed(Node::Splat(arg.expect("one part")), ty, rv, span));
    }
    let total: u32 = parts.iter().map(|p| p.ty.width as u32).sum();
    if total != n as u32 {
        return Err(width_err(
            span,
            format!("{name} needs {n} components; arguments have {total}"),
        ));
    }
    let ty = ValueType::new(parts[0].ty.scalar, n);
    Ok(typed(Node::Concat(parts), ty, rv, span))
}

fn dot(c: Call<'_>) -> Result<TypedExpr, ExprError> {
    c.float_only(0)?;
    c.float_only(1)?;
    let span = c.span;
    let (x, y) = c.two();
    if x.ty.width != y.ty.width {
        return Err(width_err(span, "dot requires matching row widths"));
    }
    let rv = x.row_varying || y.row_varying;
    Ok(typed(
        Node::Dot(Box::new(x), Box::new(y)),
        f32w(1),
        rv,
        span,
    ))
}

fn length(c: Call<'_>) -> Result<TypedExpr, ExprError> {
    c.float_only(0)?;
    let span = c.span;
    let x = c.one();
    let rv = x.row_varying;
    Ok(typed(Node::Length(Box::new(x)), f32w(1), rv, span))
}

fn equal_all(c: Call<'_>) -> Result<TypedExpr, ExprError> {
    let span = c.span;
    let (x, y) = c.two();
    if x.ty != y.ty {
        let kind = if x.ty.scalar != y.ty.scalar {
            ExprErrorKind::Type
        } else {
            ExprErrorKind::Width
        };
        return Err(ExprError::at(
            kind,
            span,
            "equalAll requires matching types and row widths",
        ));
    }
    let rv = x.row_varying || y.row_varying;
    Ok(typed(
        Node::EqualAll(Box::new(x), Box::new(y)),
        ValueType::new(ScalarType::Uint32, 1),
        rv,
        span,
    ))
}

fn select(c: Call<'_>) -> Result<TypedExpr, ExprError> {
    let (span, shown) = (c.span, c.shown());
    let mut it = c.typed.into_iter();
    let (Some(cond), Some(t), Some(f)) = (it.next(), it.next(), it.next()) else {
        unreachable!("the arity was checked")
    };
    if t.ty.scalar != f.ty.scalar {
        return Err(type_err(
            span,
            "select branches require matching component types",
        ));
    }
    let w = broadcast(t.ty.width, f.ty.width).ok_or_else(|| {
        width_err(
            span,
            format!(
                "select branches require matching row widths or one component; {} has {}, {} has {}",
                shown[1], t.ty.width, shown[2], f.ty.width
            ),
        )
    })?;
    if cond.ty.width != 1 && cond.ty.width != w {
        return Err(width_err(
            span,
            "select widths must match its branches or be one component",
        ));
    }
    let ty = ValueType::new(t.ty.scalar, w);
    let rv = cond.row_varying || t.row_varying || f.row_varying;
    Ok(typed(
        Node::Select {
            cond: Box::new(cond),
            when_true: Box::new(t),
            when_false: Box::new(f),
        },
        ty,
        rv,
        span,
    ))
}

// The rules of the comparison and mask functions (functions.rs holds their semantics).

/// Types a comparison whose operands are checked: same component type, broadcastable widths.
fn check_compare(
    f: CompareFn,
    x: TypedExpr,
    y: TypedExpr,
    shown: [String; 2],
    span: Span,
) -> Result<TypedExpr, ExprError> {
    let name = f.name();
    if x.ty.scalar != y.ty.scalar {
        return Err(ExprError::at(
            ExprErrorKind::Type,
            span,
            format!(
                "{name} requires matching component types; {} is {}, {} is {} (cast one side, e.g. float32(...))",
                shown[0], x.ty.scalar, shown[1], y.ty.scalar
            ),
        ));
    }
    let width = broadcast(x.ty.width, y.ty.width).ok_or_else(|| {
        ExprError::at(
            ExprErrorKind::Width,
            span,
            format!(
                "{name} requires matching row widths or one component; {} has {}, {} has {}",
                shown[0], x.ty.width, shown[1], y.ty.width
            ),
        )
    })?;
    let row_varying = x.row_varying || y.row_varying;
    Ok(TypedExpr {
        node: Node::Compare(f, Box::new(x), Box::new(y)),
        ty: ValueType::new(ScalarType::Uint32, width),
        row_varying,
        span,
    })
}

/// Types `and`/`or`/`not` whose operands are checked: uint32 masks, broadcastable widths.
fn check_logic(
    f: LogicFn,
    args: Vec<TypedExpr>,
    shown: &[String],
    span: Span,
) -> Result<TypedExpr, ExprError> {
    let name = f.name();
    if let Some((a, s)) = args
        .iter()
        .zip(shown)
        .find(|(a, _)| a.ty.scalar != ScalarType::Uint32)
    {
        return Err(ExprError::at(
            ExprErrorKind::Type,
            span,
            format!(
                "{name} requires uint32 masks; {s} is {} (make a mask with a comparison, e.g. notEqual({s}, 0))",
                a.ty.scalar
            ),
        ));
    }
    let mut width = args[0].ty.width;
    if let [a, b] = args.as_slice() {
        width = broadcast(a.ty.width, b.ty.width).ok_or_else(|| {
            ExprError::at(
                ExprErrorKind::Width,
                span,
                format!(
                    "{name} requires matching row widths or one component; {} has {}, {} has {}",
                    shown[0], a.ty.width, shown[1], b.ty.width
                ),
            )
        })?;
    }
    let row_varying = args.iter().any(|a| a.row_varying);
    Ok(TypedExpr {
        node: Node::Logic(f, args),
        ty: ValueType::new(ScalarType::Uint32, width),
        row_varying,
        span,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_one_row_per_function_in_order() {
        let names: Vec<&str> = SIGNATURES.iter().map(|s| s.name).collect();
        assert_eq!(names, FUNCTIONS);
        assert!(SIGNATURES
            .iter()
            .filter(|s| LogicFn::from_name(s.name).is_some())
            .all(|s| s.arity == Exactly(LogicFn::from_name(s.name).unwrap().arity())));
    }
}
