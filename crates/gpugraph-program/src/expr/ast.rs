//! The expression AST: what [`crate::expr::parse`] returns and what callers may build by hand
//! in place of a string. Every node carries the byte span of its source text (empty spans for
//! hand-built nodes). The AST can hold forms the compiler rejects (`Math.sqrt(x)`,
//! `positions.rgba`, non-finite numbers): support is decided by the type checker, so a
//! string and a hand-built AST get the same diagnostics.

use std::fmt;

/// A half-open byte range `start..end` of the expression text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The range `start..end`.
    pub fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// One expression node and its source span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What the node is.
    pub kind: ExprKind,
    /// Where it came from in the text.
    pub span: Span,
}

/// Binary arithmetic operators (the only binary operators of the language).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
}

impl BinaryOp {
    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
        }
    }
    fn precedence(self) -> u8 {
        match self {
            BinaryOp::Add | BinaryOp::Sub => 1,
            BinaryOp::Mul | BinaryOp::Div => 2,
        }
    }
}

/// The node kinds.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A declared input or scalar name.
    Identifier(String),
    /// A numeric literal as written (a JavaScript number); the checker requires it to be a
    /// finite float32 after rounding.
    Number(f64),
    /// Unary negation `-operand`.
    Neg(Box<Expr>),
    /// `left op right`.
    Binary {
        /// Operator.
        op: BinaryOp,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
    },
    /// `callee(args...)`; only bare intrinsic names are supported callees.
    Call {
        /// The called expression (an identifier for supported calls).
        callee: Box<Expr>,
        /// Arguments in order.
        args: Vec<Expr>,
    },
    /// `object.property`; only `.xyzw` selectors of one to four components are supported.
    Member {
        /// The selected expression.
        object: Box<Expr>,
        /// The property name as written.
        property: String,
    },
}

impl Expr {
    /// Levels of the tree (a leaf is 1), measured without recursion so that any tree,
    /// however deep, can be checked against [`crate::expr::policy::MAX_DEPTH`].
    pub(crate) fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 1usize)];
        while let Some((e, d)) = stack.pop() {
            deepest = deepest.max(d);
            match &e.kind {
                ExprKind::Identifier(_) | ExprKind::Number(_) => {}
                ExprKind::Neg(x) | ExprKind::Member { object: x, .. } => stack.push((x, d + 1)),
                ExprKind::Binary { left, right, .. } => {
                    stack.push((left, d + 1));
                    stack.push((right, d + 1));
                }
                ExprKind::Call { callee, args } => {
                    stack.push((callee, d + 1));
                    stack.extend(args.iter().map(|a| (a, d + 1)));
                }
            }
        }
        deepest
    }

    /// A node with an empty span (for hand-built ASTs).
    pub fn new(kind: ExprKind) -> Self {
        Self {
            kind,
            span: Span::default(),
        }
    }
    /// An identifier node.
    pub fn ident(name: &str) -> Self {
        Self::new(ExprKind::Identifier(name.to_string()))
    }
    /// A number node.
    pub fn number(value: f64) -> Self {
        Self::new(ExprKind::Number(value))
    }
    /// A negation node.
    pub fn negate(operand: Expr) -> Self {
        Self::new(ExprKind::Neg(Box::new(operand)))
    }
    /// A binary node.
    pub fn binary(op: BinaryOp, left: Expr, right: Expr) -> Self {
        Self::new(ExprKind::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
        })
    }
    /// A call of the bare function `name`.
    pub fn call(name: &str, args: Vec<Expr>) -> Self {
        Self::new(ExprKind::Call {
            callee: Box::new(Self::ident(name)),
            args,
        })
    }
    /// A member (selector) node.
    pub fn member(object: Expr, property: &str) -> Self {
        Self::new(ExprKind::Member {
            object: Box::new(object),
            property: property.to_string(),
        })
    }

    /// Whether two trees are equal ignoring spans.
    pub fn same_shape(&self, other: &Expr) -> bool {
        match (&self.kind, &other.kind) {
            (ExprKind::Identifier(a), ExprKind::Identifier(b)) => a == b,
            (ExprKind::Number(a), ExprKind::Number(b)) => a.to_bits() == b.to_bits(),
            (ExprKind::Neg(a), ExprKind::Neg(b)) => a.same_shape(b),
            (
                ExprKind::Binary { op, left, right },
                ExprKind::Binary {
                    op: op2,
                    left: l2,
                    right: r2,
                },
            ) => op == op2 && left.same_shape(l2) && right.same_shape(r2),
            (
                ExprKind::Call { callee, args },
                ExprKind::Call {
                    callee: c2,
                    args: a2,
                },
            ) => {
                callee.same_shape(c2)
                    && args.len() == a2.len()
                    && args.iter().zip(a2).all(|(a, b)| a.same_shape(b))
            }
            (
                ExprKind::Member { object, property },
                ExprKind::Member {
                    object: o2,
                    property: p2,
                },
            ) => property == p2 && object.same_shape(o2),
            _ => false,
        }
    }

    fn precedence(&self) -> u8 {
        match &self.kind {
            ExprKind::Binary { op, .. } => op.precedence(),
            ExprKind::Neg(_) => 3,
            // Negative literals print with a sign, so they bind like negation.
            ExprKind::Number(v) if v.is_sign_negative() => 3,
            _ => 4,
        }
    }
}

/// Formats a literal the way JavaScript would print a short number (`1`, `0.25`, `1e-7`).
pub(crate) fn number_text(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let a = v.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Canonical source text with only the parentheses precedence needs; error messages use it
/// to name subexpressions.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wrap = |f: &mut fmt::Formatter<'_>, e: &Expr, min: u8| -> fmt::Result {
            if e.precedence() < min {
                write!(f, "({e})")
            } else {
                write!(f, "{e}")
            }
        };
        match &self.kind {
            ExprKind::Identifier(n) => f.write_str(n),
            ExprKind::Number(v) => f.write_str(&number_text(*v)),
            ExprKind::Neg(e) => {
                f.write_str("-")?;
                // `--x` would lex as the decrement operator: a nested sign (negation or a
                // negative literal, both precedence 3) gets parentheses.
                wrap(f, e, 4)
            }
            ExprKind::Binary { op, left, right } => {
                let p = op.precedence();
                wrap(f, left, p)?;
                write!(f, " {} ", op.symbol())?;
                // Left-associative: an equal-precedence right operand needs parentheses.
                wrap(f, right, p + 1)
            }
            ExprKind::Call { callee, args } => {
                wrap(f, callee, 4)?;
                f.write_str("(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
            ExprKind::Member { object, property } => {
                // `1.x` would lex as the number `1.` followed by `x`.
                let min = if matches!(object.kind, ExprKind::Number(_)) {
                    5
                } else {
                    4
                };
                wrap(f, object, min)?;
                write!(f, ".{property}")
            }
        }
    }
}
