//! Recursive-descent parser of the expression grammar:
//!
//! ```text
//! expression := term (('+' | '-') term)*
//! term       := unary (('*' | '/') unary)*
//! unary      := '-' unary | postfix
//! postfix    := primary ('.' identifier | '(' arguments? ')')*
//! primary    := number | identifier | '(' expression ')'
//! arguments  := expression (',' expression)*
//! ```
//!
//! JavaScript forms outside the language (comparison, logical, ternary, assignment, indexing,
//! unary `+`, `!`, `~`, `%`, `**`, bitwise, strings, array/object literals, keywords) are
//! recognized and rejected here with a message naming the supported replacement. Calls and
//! member accesses parse generally; the type checker decides which callees and selectors are
//! supported, so a hand-built AST gets the same diagnostics as text.

use crate::expr::ast::{BinaryOp, Expr, ExprKind, Span};
use crate::expr::error::{ExprError, ExprErrorKind};
use crate::expr::lexer::{tokenize, Tok, Token};
use crate::expr::policy::MAX_DEPTH;

/// Parses `text` into an AST (usable in place of the string). Trees or nesting deeper than
/// [`MAX_DEPTH`] levels are rejected (Unsupported) before they are built.
pub fn parse(text: &str) -> Result<Expr, ExprError> {
    let tokens = tokenize(text)?;
    let mut p = Parser {
        text,
        tokens,
        pos: 0,
        nesting: 0,
    };
    if p.peek().tok == Tok::Eof {
        return Err(ExprError::at(
            ExprErrorKind::Syntax,
            Span::new(0, text.len()),
            "empty expression",
        ));
    }
    let e = p.expression()?;
    let t = p.peek().clone();
    match t.tok {
        Tok::Eof => Ok(e),
        Tok::RParen => Err(syntax(
            t.span,
            format!("unmatched ')' at offset {}", t.span.start),
        )),
        _ => Err(p.after_operand(&e, &t)),
    }
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    /// Active `unary` calls: every recursion (parentheses, negation, call arguments) passes
    /// through `unary`, so bounding this bounds the parser's stack.
    nesting: usize,
}

fn syntax(span: Span, msg: impl Into<String>) -> ExprError {
    ExprError::at(ExprErrorKind::Syntax, span, msg)
}

fn unsupported(span: Span, msg: impl Into<String>) -> ExprError {
    ExprError::at(ExprErrorKind::Unsupported, span, msg)
}

const SELECT_HINT: &str = "use select(condition, whenTrue, whenFalse)";

/// Keywords that cannot be identifiers in JavaScript.
const KEYWORDS: [&str; 24] = [
    "new",
    "typeof",
    "void",
    "delete",
    "function",
    "this",
    "class",
    "var",
    "let",
    "const",
    "return",
    "if",
    "else",
    "for",
    "while",
    "do",
    "switch",
    "case",
    "in",
    "instanceof",
    "yield",
    "await",
    "super",
    "import",
];

fn describe(t: &Tok) -> String {
    match t {
        Tok::Num(v) => format!("number {}", crate::expr::ast::number_text(*v)),
        Tok::Ident(s) => format!("identifier {s}"),
        Tok::LParen => "'('".into(),
        Tok::RParen => "')'".into(),
        Tok::Comma => "','".into(),
        Tok::Dot => "'.'".into(),
        Tok::Plus => "'+'".into(),
        Tok::Minus => "'-'".into(),
        Tok::Star => "'*'".into(),
        Tok::Slash => "'/'".into(),
        Tok::Other(p) => format!("'{p}'"),
        Tok::Eof => "end of expression".into(),
    }
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos]
    }

    fn next(&mut self) -> Token {
        let t = self.tokens[self.pos].clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn expression(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.term()?;
        loop {
            let op = match self.peek().tok {
                Tok::Plus => BinaryOp::Add,
                Tok::Minus => BinaryOp::Sub,
                _ => return Ok(left),
            };
            self.next();
            let right = self.term()?;
            left = bounded(binary(op, left, right))?;
        }
    }

    fn term(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek().tok {
                Tok::Star => BinaryOp::Mul,
                Tok::Slash => BinaryOp::Div,
                _ => return Ok(left),
            };
            self.next();
            let right = self.unary()?;
            left = bounded(binary(op, left, right))?;
        }
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        self.nesting += 1;
        if self.nesting > MAX_DEPTH {
            return Err(ExprError::too_deep(self.peek().span));
        }
        let e = self.unary_inner();
        self.nesting -= 1;
        e
    }

    fn unary_inner(&mut self) -> Result<Expr, ExprError> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Minus => {
                self.next();
                let operand = self.unary()?;
                let span = t.span.to(operand.span);
                bounded(Expr {
                    kind: ExprKind::Neg(Box::new(operand)),
                    span,
                })
            }
            Tok::Plus => Err(unsupported(
                t.span,
                "unary + is not supported; only negation (-x) is a unary operator",
            )),
            Tok::Other("!") => Err(unsupported(
                t.span,
                format!("logical operator ! is not supported; {SELECT_HINT}"),
            )),
            Tok::Other("~") => Err(unsupported(
                t.span,
                "operator ~ is not supported; supported operators are +, -, * and /",
            )),
            Tok::Other("++" | "--") => Err(assignment(t.span, &t.tok)),
            _ => self.postfix(),
        }
    }

    fn postfix(&mut self) -> Result<Expr, ExprError> {
        let mut e = self.primary()?;
        loop {
            let t = self.peek().clone();
            match t.tok {
                Tok::Dot => {
                    self.next();
                    let name = self.next();
                    let Tok::Ident(property) = name.tok else {
                        return Err(syntax(
                            name.span,
                            format!(
                                "expected a selector name after '.', found {}",
                                describe(&name.tok)
                            ),
                        ));
                    };
                    let span = e.span.to(name.span);
                    e = bounded(Expr {
                        kind: ExprKind::Member {
                            object: Box::new(e),
                            property,
                        },
                        span,
                    })?;
                }
                Tok::LParen => {
                    self.next();
                    let (args, close) = self.arguments(t.span)?;
                    let span = e.span.to(close);
                    e = bounded(Expr {
                        kind: ExprKind::Call {
                            callee: Box::new(e),
                            args,
                        },
                        span,
                    })?;
                }
                Tok::Other("[") => {
                    let end = self.matching_bracket().unwrap_or(self.text.len());
                    let shown = &self.text[e.span.start..end];
                    return Err(unsupported(
                        Span::new(e.span.start, end),
                        format!(
                            "computed indexing {shown} is not supported; use static .xyzw selectors"
                        ),
                    ));
                }
                Tok::Other("?.") => {
                    return Err(unsupported(
                        t.span,
                        "optional chaining ?. is not supported; use static .xyzw selectors",
                    ))
                }
                _ => return Ok(e),
            }
        }
    }

    /// The end offset of the `]` matching the `[` at the current token.
    fn matching_bracket(&self) -> Option<usize> {
        let mut depth = 0usize;
        for t in &self.tokens[self.pos..] {
            match t.tok {
                Tok::Other("[") => depth += 1,
                Tok::Other("]") => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(t.span.end);
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn arguments(&mut self, open: Span) -> Result<(Vec<Expr>, Span), ExprError> {
        let mut args = Vec::new();
        if self.peek().tok == Tok::RParen {
            return Ok((args, self.next().span));
        }
        loop {
            let a = self.expression()?;
            args.push(a);
            let t = self.next();
            match t.tok {
                Tok::Comma => continue,
                Tok::RParen => return Ok((args, t.span)),
                Tok::Eof => {
                    return Err(syntax(
                        t.span,
                        format!("expected ')' to close '(' at offset {}", open.start),
                    ))
                }
                _ => {
                    let last = args.last().cloned().unwrap_or_else(|| Expr::number(0.0));
                    return Err(self.after_operand(&last, &t));
                }
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, ExprError> {
        let t = self.next();
        match t.tok {
            Tok::Num(v) => Ok(Expr {
                kind: ExprKind::Number(v),
                span: t.span,
            }),
            Tok::Ident(name) => match name.as_str() {
                "true" | "false" => Err(unsupported(
                    t.span,
                    format!("boolean literal {name} is not supported; use 1 or 0"),
                )),
                "null" => Err(unsupported(
                    t.span,
                    "null is not supported; literals must be finite float32 numbers",
                )),
                k if KEYWORDS.contains(&k) => Err(unsupported(
                    t.span,
                    format!("keyword {k} is not supported in expressions"),
                )),
                _ => Ok(Expr {
                    kind: ExprKind::Identifier(name),
                    span: t.span,
                }),
            },
            Tok::LParen => {
                let inner = self.expression()?;
                let close = self.next();
                match close.tok {
                    // The node's span covers its parentheses.
                    Tok::RParen => Ok(Expr {
                        span: t.span.to(close.span),
                        ..inner
                    }),
                    Tok::Eof => Err(syntax(
                        close.span,
                        format!("expected ')' to close '(' at offset {}", t.span.start),
                    )),
                    _ => Err(self.after_operand(&inner, &close)),
                }
            }
            Tok::Other("[") => Err(unsupported(
                t.span,
                "array literals are not supported; use vec2, vec3 or vec4",
            )),
            Tok::Other("{") => Err(unsupported(t.span, "object literals are not supported")),
            Tok::Other("...") => Err(unsupported(t.span, "spread syntax is not supported")),
            Tok::Eof => Err(syntax(t.span, "unexpected end of expression")),
            other => Err(syntax(
                t.span,
                format!("unexpected {} at offset {}", describe(&other), t.span.start),
            )),
        }
    }

    /// The error for token `t` following a complete operand `left`: an unsupported binary
    /// operator gets its replacement; anything else is a syntax error.
    fn after_operand(&self, left: &Expr, t: &Token) -> ExprError {
        let span = t.span;
        match &t.tok {
            Tok::Other(op @ ("==" | "===" | "!=" | "!==")) => unsupported(
                span,
                format!(
                    "comparison {} {op} ... is not supported; use equalAll(x, y)",
                    self.source(left)
                ),
            ),
            Tok::Other(op @ ("<" | ">" | "<=" | ">=")) => unsupported(
                span,
                format!(
                    "comparison operator {op} is not supported; use equalAll(x, y) for equality and select(condition, whenTrue, whenFalse) for choices"
                ),
            ),
            Tok::Other(op @ ("&&" | "||" | "??")) => unsupported(
                span,
                format!("logical operator {op} is not supported; {SELECT_HINT}"),
            ),
            Tok::Other("?") => unsupported(
                span,
                format!("conditional operator ?: is not supported; {SELECT_HINT}"),
            ),
            Tok::Other(
                op @ ("=" | "+=" | "-=" | "*=" | "/=" | "%=" | "**=" | "<<=" | ">>=" | ">>>="
                | "&=" | "|=" | "^=" | "&&=" | "||=" | "??=" | "++" | "--"),
            ) => assignment(span, &Tok::Other(op)),
            Tok::Other(op @ ("%" | "**" | "&" | "|" | "^" | "<<" | ">>" | ">>>")) => unsupported(
                span,
                format!(
                    "operator {op} is not supported; supported operators are +, -, * and / (use pow(x, exponent) for powers)"
                ),
            ),
            Tok::Other("=>") => unsupported(span, "arrow functions are not supported"),
            Tok::Other(";") => unsupported(
                span,
                "statements are not supported; write a single expression",
            ),
            Tok::Comma => unsupported(
                span,
                "comma expressions are not supported; write a single expression",
            ),
            Tok::Ident(k) if k == "in" || k == "instanceof" => unsupported(
                span,
                format!("operator {k} is not supported"),
            ),
            other => syntax(
                span,
                format!("unexpected {} at offset {}", describe(other), span.start),
            ),
        }
    }

    fn source(&self, e: &Expr) -> String {
        self.text
            .get(e.span.start..e.span.end)
            .map_or_else(|| e.to_string(), str::to_string)
    }
}

fn assignment(span: Span, op: &Tok) -> ExprError {
    let msg = match op {
        // JavaScript lexes `--` as one token, so `------a` or `a--b` are decrements.
        Tok::Other("--") => "decrement operator -- is not supported (expressions cannot \
                             assign); to negate a negation or subtract one, separate the signs: \
                             -(-a), a - -b"
            .to_string(),
        Tok::Other("++") => {
            "increment operator ++ is not supported (expressions cannot assign)".to_string()
        }
        _ => format!(
            "assignment {} is not supported; expressions cannot assign",
            describe(op).trim_matches('\'')
        ),
    };
    unsupported(span, msg)
}

/// `e` unless it is deeper than [`MAX_DEPTH`]. Operator and postfix chains are built in
/// loops, so depth is checked where nodes are made; each node is measured once per ancestor,
/// at most `MAX_DEPTH` times.
fn bounded(e: Expr) -> Result<Expr, ExprError> {
    if e.depth() > MAX_DEPTH {
        return Err(ExprError::too_deep(e.span));
    }
    Ok(e)
}

fn binary(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    let span = left.span.to(right.span);
    Expr {
        kind: ExprKind::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
        },
        span,
    }
}
