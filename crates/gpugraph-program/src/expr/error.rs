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
                "expression nests more than {MAX_DEPTH} levels deep (the limit keeps checking and \
                 code generation within a thread's stack; each operator, call, selector, negation \
                 and parenthesis adds a level, so a chain a + b + c + ... of {} terms is too \
                 deep): split it into several expression operations, or group long chains, \
                 e.g. (a + b + c) + (d + e + f)",
                MAX_DEPTH + 1
            ),
        )
    }

    /// The diagnostic followed by `source` (the expression text the span refers to) and a
    /// caret line under the offending span, e.g.
    ///
    /// ```text
    /// output-expression: undeclared identifier nope
    ///   positions + nope
    ///               ^^^^
    /// ```
    ///
    /// Just the diagnostic when there is no span (hand-built trees) or it does not fit
    /// `source`. Tabs and newlines in the text print as spaces so the caret lines up.
    pub fn render(&self, source: &str) -> String {
        let head = self.to_string();
        let Some(span) = self
            .span
            .filter(|s| s.start <= s.end && s.end <= source.len())
        else {
            return head;
        };
        if !source.is_char_boundary(span.start) || !source.is_char_boundary(span.end) {
            return head;
        }
        let line: String = source
            .chars()
            .map(|c| if c.is_whitespace() { ' ' } else { c })
            .collect();
        let pad = source[..span.start].chars().count();
        let width = source[span.start..span.end].chars().count().max(1);
        format!(
            "{head}\n  {line}\n  {}{}",
            " ".repeat(pad),
            "^".repeat(width)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_puts_a_caret_under_the_span() {
        let e = ExprError::at(
            ExprErrorKind::Undeclared,
            Span::new(12, 16),
            "undeclared identifier nope",
        )
        .with_operation("op");
        assert_eq!(
            e.render("positions + nope"),
            "op: undeclared identifier nope\n  positions + nope\n              ^^^^"
        );
        // End of text: one caret after the last character; no span: the message alone.
        let end = ExprError::at(ExprErrorKind::Syntax, Span::new(4, 4), "unexpected end");
        assert_eq!(end.render("(a +"), "unexpected end\n  (a +\n      ^");
        let none = ExprError::new(ExprErrorKind::Type, "t", None);
        assert_eq!(none.render("a"), "t");
        // Multi-byte text: columns count characters.
        let uni = ExprError::at(ExprErrorKind::Syntax, Span::new(5, 6), "x");
        assert_eq!(uni.render("é + #"), "x\n  é + #\n      ^");
    }
}
