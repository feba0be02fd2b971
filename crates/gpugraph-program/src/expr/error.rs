//! [`ExprError`]: every rejection of the expression language, with the spec's concise texts.
//! Compilation prefixes the operation id (`transformed-expression: ...`); a bare
//! [`crate::expr::parse`] error has no id yet.

use std::fmt;

use crate::expr::ast::Span;
use crate::expr::policy::MAX_DEPTH;

/// What class of problem an [`ExprError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExprErrorKind {
    /// The text is not an expression (unexpected token, unbalanced parenthesis, ...).
    Syntax,
    /// A JavaScript form the language does not support (`x == y`, `Math.sqrt(x)`, `a[0]`, ...).
    Unsupported,
    /// An identifier that names no declared input or scalar.
    Undeclared,
    /// Component types do not fit (integer arithmetic, mismatched branch types, ...).
    Type,
    /// Row widths do not fit (selector beyond the width, constructor component count, ...).
    Width,
    /// The declarations or options themselves are invalid (format outside the subset,
    /// duplicate name, declared output format differs from the inferred one).
    Declaration,
    /// CPU-evaluation bindings do not match the declarations (type, width, row count).
    Binding,
}

/// A rejected expression: the operation id (when known), the kind, the message and where in
/// the source it applies. `Display` is `"<operation>: <message>"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    /// The operation id the message is prefixed with (`None` for a bare parse).
    pub operation: Option<String>,
    /// What class of problem.
    pub kind: ExprErrorKind,
    /// The concise diagnostic, without the operation prefix.
    pub message: String,
    /// The offending node's span, when it came from text.
    pub span: Option<Span>,
}

impl ExprError {
    pub(crate) fn new(kind: ExprErrorKind, message: impl Into<String>, span: Option<Span>) -> Self {
        Self {
            operation: None,
            kind,
            message: message.into(),
            span,
        }
    }

    pub(crate) fn at(kind: ExprErrorKind, span: Span, message: impl Into<String>) -> Self {
        Self::new(kind, message, Some(span))
    }

    /// The rejection of a tree (or nesting) deeper than [`MAX_DEPTH`].
    pub(crate) fn too_deep(span: Span) -> Self {
        Self::at(
            ExprErrorKind::Unsupported,
            span,
            format!(
                "expression nests more than {MAX_DEPTH} levels deep; split it into several expression operations"
            ),
        )
    }

    /// The same error attributed to operation `id`.
    pub fn with_operation(mut self, id: &str) -> Self {
        self.operation = Some(id.to_string());
        self
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.operation {
            Some(op) => write!(f, "{op}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ExprError {}
